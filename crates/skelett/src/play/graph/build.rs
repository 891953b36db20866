//! Checking a [`GraphDef`] and resolving it into a [`Graph`]: names become indices, blend
//! motions become [`TreeShape`]s, masks become [`JointMask`]s, and every problem found is a
//! [`GraphError`] naming the path of the element that has it, in the JSON file's terms
//! (`layers[1].states["Run"].transitions[0].conditions[2]`).
//!
//! Checked here: the format version; unique parameter, layer-local state and machine names;
//! defaults, condition literals and blend parameters of the right type; known clips, joints,
//! parameters and states; motions of the skeleton's clips; finite numbers in range; states
//! that no transition reaches; and cycles of transitions that could all fire in one update
//! (zero duration, no exit time), which would otherwise loop without end.

use std::fmt;
use std::sync::Arc;

use glam::Vec2;

use super::def::Short;
use super::def::*;
use crate::animator::{BlendMode, Curve, TreeNode, TreeShape, TreeValue, Wrap};
use crate::pose::JointMask;
use crate::{Clip, Skeleton};

/// A problem in a graph definition, with where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphError {
    /// The element's path, as in the JSON file: `layers[0].states["Idle"].transitions[1].to`.
    pub path: String,
    /// What is wrong.
    pub problem: GraphProblem,
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.problem)
    }
}

impl std::error::Error for GraphError {}

/// What is wrong with an element of a graph definition.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GraphProblem {
    /// The format version is not one this build reads.
    #[error("format version {0} is not supported (this build reads version {GRAPH_VERSION})")]
    Version(u32),
    /// A name used twice where names must be unique.
    #[error("the name {0:?} is used twice")]
    Duplicate(String),
    /// No clip of that name.
    #[error("no clip {name:?}; the clips are: {known}")]
    UnknownClip {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: String,
    },
    /// No parameter of that name.
    #[error("no parameter {0:?}")]
    UnknownParameter(String),
    /// No state of that name in the machine.
    #[error("no state {name:?} in this machine; its states are: {known}")]
    UnknownState {
        /// The name asked for.
        name: String,
        /// The machine's states.
        known: String,
    },
    /// No joint of that name.
    #[error("no joint {0:?} in the skeleton")]
    UnknownJoint(String),
    /// No morph channel of that name.
    #[error("no morph channel {0:?} in the skeleton")]
    UnknownMorphChannel(String),
    /// A parameter used where another type is needed.
    #[error("parameter {name:?} is a {found}, but {expected} is needed here")]
    Type {
        /// The parameter.
        name: String,
        /// Its type.
        found: ParameterKind,
        /// What fits here.
        expected: &'static str,
    },
    /// A literal of the wrong type or out of range.
    #[error("{0}")]
    Value(String),
    /// A state has both a motion and a machine.
    #[error("a state has at most one of \"motion\" and \"machine\"")]
    MotionOrMachine,
    /// No transition or entry reaches the state.
    #[error("no transition reaches state {0:?}")]
    Unreachable(String),
    /// Transitions that could fire one after another forever in one update.
    #[error("these states form a cycle of transitions with no duration, no exit time and no trigger, which could loop forever in one update: {}", cycle_text(.0))]
    ZeroDurationCycle(Vec<String>),
    /// A motion that cannot be played (a blend space without children, clips of another
    /// skeleton, ...).
    #[error("{0}")]
    Motion(String),
}

/// How deep state machines may nest (a layer's machine is depth 0).
pub const MAX_DEPTH: usize = 15;

/// A cycle's states for a message: all of a short one, the ends of a long one.
fn cycle_text(states: &[String]) -> String {
    if states.len() <= 12 {
        states.join(" -> ")
    } else {
        format!(
            "{} -> ... ({} states) ... -> {}",
            states[..5].join(" -> "),
            states.len() - 10,
            states[states.len() - 5..].join(" -> ")
        )
    }
}

/// A parameter of a built graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    /// Its name.
    pub name: String,
    /// Its type.
    pub kind: ParameterKind,
    /// Its starting value as a float (bools and triggers 0 or 1).
    pub default: f32,
}

/// Index of a parameter in its graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParameterId(pub u32);

/// Index of a state in its graph (states of every layer and machine, numbered together).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateId(pub u32);

/// A resolved condition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cond {
    Compare(usize, CompareOp, f32),
    Is(usize),
    All(Vec<Cond>),
    Any(Vec<Cond>),
    Not(Box<Cond>),
}

impl Cond {
    pub(crate) fn holds(&self, v: &[f32]) -> bool {
        match self {
            Cond::Compare(p, op, x) => {
                let a = v[*p];
                match op {
                    CompareOp::Greater => a > *x,
                    CompareOp::GreaterOrEqual => a >= *x,
                    CompareOp::Less => a < *x,
                    CompareOp::LessOrEqual => a <= *x,
                    CompareOp::Equal => a == *x,
                    CompareOp::NotEqual => a != *x,
                }
            }
            Cond::Is(p) => v[*p] != 0.0,
            Cond::All(c) => c.iter().all(|c| c.holds(v)),
            Cond::Any(c) => c.iter().any(|c| c.holds(v)),
            Cond::Not(c) => !c.holds(v),
        }
    }

    /// Clears the triggers this condition reads (a transition firing on it consumes them).
    pub(crate) fn consume(&self, params: &[Parameter], values: &mut [f32]) {
        match self {
            Cond::Is(p) if params[*p].kind == ParameterKind::Trigger => values[*p] = 0.0,
            Cond::All(c) | Cond::Any(c) => c.iter().for_each(|c| c.consume(params, values)),
            Cond::Not(c) => c.consume(params, values),
            _ => {}
        }
    }
}

/// Where a transition goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Target {
    State(StateId),
    Exit,
}

/// A resolved transition.
#[derive(Clone, Debug)]
pub(crate) struct Trans {
    pub target: Target,
    pub conds: Vec<Cond>,
    pub exit_time: Option<f32>,
    pub duration: f32,
    pub curve: Curve,
    pub kind: TransitionKind,
    pub interruption: Interruption,
    pub ordered: bool,
    pub to_self: bool,
    pub after_exit: bool,
    /// Its path (for tools and messages).
    pub path: Arc<str>,
}

impl Trans {
    pub(crate) fn conditions_hold(&self, v: &[f32]) -> bool {
        self.conds.iter().all(|c| c.holds(v))
    }
}

/// What a state plays.
#[derive(Clone, Debug)]
pub(crate) enum StateMotion {
    Clip(Arc<Clip>),
    Tree(Arc<TreeShape>),
    Machine(usize),
    /// Nothing: the layer fades out.
    Empty,
}

/// A resolved state.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub name: String,
    /// `Outer/Inner` for states of nested machines.
    pub full_name: String,
    pub path: String,
    pub machine: usize,
    pub depth: usize,
    pub motion: StateMotion,
    pub speed: f32,
    pub speed_parameter: Option<usize>,
    pub wrap: Wrap,
    pub sync: Option<u32>,
    pub on_enter: Vec<Arc<str>>,
    pub on_exit: Vec<Arc<str>>,
    pub transitions: Vec<Trans>,
}

/// A resolved machine.
#[derive(Clone, Debug)]
pub(crate) struct Machine {
    /// The state that holds it (none for a layer's machine).
    pub parent: Option<StateId>,
    pub entry: StateId,
    pub entry_transitions: Vec<(Vec<Cond>, StateId)>,
    pub any: Vec<Trans>,
}

/// A resolved layer.
#[derive(Clone, Debug)]
pub(crate) struct GraphLayer {
    pub name: String,
    pub mode: BlendMode,
    pub weight: f32,
    pub weight_parameter: Option<usize>,
    pub mask: Option<JointMask>,
    pub machine: usize,
    /// How many states the layer's machines hold (for the spare sources).
    pub states: usize,
}

/// A checked, resolved animation graph: immutable, shared by every character that uses it
/// (behind an `Arc`, as clips are). Made by [`Graph::build`]; played by
/// [`GraphInstance`](super::GraphInstance).
#[derive(Clone, Debug)]
pub struct Graph {
    pub(crate) skeleton: Arc<Skeleton>,
    pub(crate) parameters: Vec<Parameter>,
    pub(crate) layers: Vec<GraphLayer>,
    pub(crate) machines: Vec<Machine>,
    pub(crate) states: Vec<State>,
}

impl Graph {
    /// Checks `def` and resolves it against `skeleton` and `clips` (found by name).
    ///
    /// # Errors
    /// The first problem found, with its path (see the [module docs](crate::graph)).
    pub fn build(
        def: &GraphDef,
        skeleton: Arc<Skeleton>,
        clips: &[Arc<Clip>],
    ) -> Result<Graph, GraphError> {
        let mut b = Builder {
            skeleton: &skeleton,
            clips,
            parameters: Vec::new(),
            machines: Vec::new(),
            states: Vec::new(),
        };
        if def.version != GRAPH_VERSION {
            return Err(err("version", GraphProblem::Version(def.version)));
        }
        for (i, p) in def.parameters.iter().enumerate() {
            let path = format!("parameters[{i}]");
            if b.parameters.iter().any(|q| q.name == p.name) {
                return Err(err(&path, GraphProblem::Duplicate(p.name.clone())));
            }
            let default = match (p.kind, p.default) {
                (_, None) => 0.0,
                (ParameterKind::Float, Some(Value::Number(x))) => finite(&path, "default", x)?,
                (ParameterKind::Int, Some(Value::Number(x))) => int(&path, "default", x)?,
                (ParameterKind::Bool | ParameterKind::Trigger, Some(Value::Bool(x))) => {
                    f32::from(u8::from(x))
                }
                (k, Some(v)) => {
                    return Err(err(
                        &format!("{path}.default"),
                        GraphProblem::Value(format!("{v} is not a {k}")),
                    ))
                }
            };
            b.parameters.push(Parameter {
                name: p.name.clone(),
                kind: p.kind,
                default,
            });
        }
        if def.layers.is_empty() {
            return Err(err(
                "layers",
                GraphProblem::Value("a graph needs at least one layer".into()),
            ));
        }
        let mut layers = Vec::new();
        for (i, l) in def.layers.iter().enumerate() {
            let path = format!("layers[{i}]");
            if def.layers[..i].iter().any(|m| m.name == l.name) {
                return Err(err(&path, GraphProblem::Duplicate(l.name.clone())));
            }
            if i == 0 && l.blend != BlendMode::Override {
                return Err(err(
                    &format!("{path}.blend"),
                    GraphProblem::Value(
                        "the first layer must override (there is nothing under it to add to)"
                            .into(),
                    ),
                ));
            }
            let lo = if l.blend == BlendMode::Additive {
                -1.0
            } else {
                0.0
            };
            if !(l.weight.is_finite() && (lo..=1.0).contains(&l.weight)) {
                return Err(err(
                    &format!("{path}.weight"),
                    GraphProblem::Value(format!("weight {} is outside {lo}..1", l.weight)),
                ));
            }
            let weight_parameter = l
                .weight_parameter
                .as_ref()
                .map(|n| b.number_parameter(&format!("{path}.weight_parameter"), n))
                .transpose()?;
            let mask = l
                .mask
                .as_ref()
                .map(|m| b.mask(&format!("{path}.mask"), m))
                .transpose()?;
            let first_state = b.states.len();
            let machine = b.machine(&path, &l.machine, None, 0, "")?;
            layers.push(GraphLayer {
                name: l.name.clone(),
                mode: l.blend,
                weight: l.weight,
                weight_parameter,
                mask,
                machine,
                states: b.states.len() - first_state,
            });
        }
        let Builder {
            parameters,
            machines,
            states,
            ..
        } = b;
        let g = Graph {
            skeleton,
            parameters,
            layers,
            machines,
            states,
        };
        g.check_reachable()?;
        g.check_cycles()?;
        Ok(g)
    }

    /// The skeleton the graph plays on.
    pub fn skeleton(&self) -> &Arc<Skeleton> {
        &self.skeleton
    }

    /// The parameters.
    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }

    /// The parameter called `name`.
    pub fn parameter(&self, name: &str) -> Option<ParameterId> {
        self.parameters
            .iter()
            .position(|p| p.name == name)
            .map(|i| ParameterId(i as u32))
    }

    /// The number of layers.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// A layer's name.
    pub fn layer_name(&self, layer: usize) -> Option<&str> {
        self.layers.get(layer).map(|l| l.name.as_str())
    }

    /// A state's name within its machine.
    pub fn state_name(&self, state: StateId) -> &str {
        &self.states[state.0 as usize].name
    }

    /// A state's name with its enclosing states' (`Air/Fall`).
    pub fn state_full_name(&self, state: StateId) -> &str {
        &self.states[state.0 as usize].full_name
    }

    /// The state of layer `layer` whose full name is `name`.
    pub fn state(&self, layer: usize, name: &str) -> Option<StateId> {
        let l = self.layers.get(layer)?;
        self.states
            .iter()
            .enumerate()
            .find(|(_, s)| s.full_name == name && self.layer_of_machine(s.machine) == l.machine)
            .map(|(i, _)| StateId(i as u32))
    }

    /// The top machine of the layer that machine `m` belongs to.
    fn layer_of_machine(&self, mut m: usize) -> usize {
        while let Some(p) = self.machines[m].parent {
            m = self.states[p.0 as usize].machine;
        }
        m
    }

    /// Every state is a machine's entry, an entry transition's or any transition's target.
    fn check_reachable(&self) -> Result<(), GraphError> {
        let mut reached = vec![false; self.states.len()];
        for m in &self.machines {
            reached[m.entry.0 as usize] = true;
            for (_, s) in &m.entry_transitions {
                reached[s.0 as usize] = true;
            }
            for t in &m.any {
                if let Target::State(s) = t.target {
                    reached[s.0 as usize] = true;
                }
            }
        }
        for s in &self.states {
            for t in &s.transitions {
                if let Target::State(to) = t.target {
                    reached[to.0 as usize] = true;
                }
            }
        }
        match reached.iter().position(|r| !r) {
            Some(i) => Err(err(
                &self.states[i].path,
                GraphProblem::Unreachable(self.states[i].name.clone()),
            )),
            None => Ok(()),
        }
    }

    /// No cycle of instant transitions (zero duration, no exit time past 0, no trigger
    /// needed) within a machine, counting any-state transitions from every state and an
    /// exit as a jump to the machine's entries. Conditions are not solved: a cycle whose
    /// conditions exclude each other is refused too (give one transition a duration, an
    /// exit time or a trigger).
    fn check_cycles(&self) -> Result<(), GraphError> {
        // A transition that needs a trigger fires at most once per setting of it, so it
        // cannot be part of an endless loop.
        let params = &self.parameters;
        let needs_trigger = |t: &Trans| {
            t.conds.iter().any(|c| match c {
                Cond::Is(p) => params[*p].kind == ParameterKind::Trigger,
                Cond::All(cs) => cs
                    .iter()
                    .any(|c| matches!(c, Cond::Is(p) if params[*p].kind == ParameterKind::Trigger)),
                _ => false,
            })
        };
        let instant = |t: &Trans| {
            t.duration <= 0.0 && t.exit_time.is_none_or(|e| e <= 0.0) && !needs_trigger(t)
        };
        let n = self.states.len();
        // Edges between states of the same machine.
        let mut edges: Vec<Vec<(usize, String)>> = vec![Vec::new(); n];
        for (i, s) in self.states.iter().enumerate() {
            let m = &self.machines[s.machine];
            let any = m
                .any
                .iter()
                .filter(|t| t.target != Target::State(StateId(i as u32)) || t.to_self);
            for t in s.transitions.iter().chain(any).filter(|t| instant(t)) {
                match t.target {
                    Target::State(to) => edges[i].push((to.0 as usize, t.path.to_string())),
                    Target::Exit if m.parent.is_none() => {
                        edges[i].push((m.entry.0 as usize, t.path.to_string()));
                        for (_, e) in &m.entry_transitions {
                            edges[i].push((e.0 as usize, t.path.to_string()));
                        }
                    }
                    Target::Exit => {}
                }
            }
        }
        // Depth-first search for a back edge.
        let mut color = vec![0u8; n];
        let mut stack: Vec<usize> = Vec::new();
        fn visit(
            v: usize,
            edges: &[Vec<(usize, String)>],
            color: &mut [u8],
            stack: &mut Vec<usize>,
        ) -> Option<(Vec<usize>, String)> {
            color[v] = 1;
            stack.push(v);
            for (w, path) in &edges[v] {
                if color[*w] == 1 {
                    let from = stack.iter().position(|x| x == w).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(*w);
                    return Some((cycle, path.clone()));
                }
                if color[*w] == 0 {
                    if let Some(c) = visit(*w, edges, color, stack) {
                        return Some(c);
                    }
                }
            }
            stack.pop();
            color[v] = 2;
            None
        }
        for v in 0..n {
            if color[v] == 0 {
                if let Some((cycle, path)) = visit(v, &edges, &mut color, &mut stack) {
                    let names = cycle
                        .iter()
                        .map(|&s| self.states[s].full_name.clone())
                        .collect();
                    return Err(err(&path, GraphProblem::ZeroDurationCycle(names)));
                }
            }
        }
        Ok(())
    }
}

fn err(path: &str, problem: GraphProblem) -> GraphError {
    GraphError {
        path: path.to_owned(),
        problem,
    }
}

fn finite(path: &str, what: &str, x: f64) -> Result<f32, GraphError> {
    let v = x as f32;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(err(
            &format!("{path}.{what}"),
            GraphProblem::Value(format!("{} is not a finite 32-bit number", Short(x))),
        ))
    }
}

fn int(path: &str, what: &str, x: f64) -> Result<f32, GraphError> {
    if x.fract() == 0.0 && x.abs() <= 16_777_216.0 {
        Ok(x as f32)
    } else {
        Err(err(
            &format!("{path}.{what}"),
            GraphProblem::Value(format!(
                "{} is not a whole number within ±16777216 (an int parameter)",
                Short(x)
            )),
        ))
    }
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

struct Builder<'a> {
    skeleton: &'a Arc<Skeleton>,
    clips: &'a [Arc<Clip>],
    parameters: Vec<Parameter>,
    machines: Vec<Machine>,
    states: Vec<State>,
}

impl Builder<'_> {
    fn parameter(&self, path: &str, name: &str) -> Result<usize, GraphError> {
        self.parameters
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| err(path, GraphProblem::UnknownParameter(name.into())))
    }

    /// A float or int parameter.
    fn number_parameter(&self, path: &str, name: &str) -> Result<usize, GraphError> {
        let i = self.parameter(path, name)?;
        match self.parameters[i].kind {
            ParameterKind::Float | ParameterKind::Int => Ok(i),
            k => Err(err(
                path,
                GraphProblem::Type {
                    name: name.into(),
                    found: k,
                    expected: "a float or an int",
                },
            )),
        }
    }

    fn mask(&self, path: &str, m: &MaskDef) -> Result<JointMask, GraphError> {
        let named = !(m.subtree.is_empty() && m.joints.is_empty() && m.exclude.is_empty());
        if m.animated_by.is_some() && named {
            return Err(err(
                &format!("{path}.animated_by"),
                GraphProblem::Value("stands alone: no subtree, joints or exclude beside it".into()),
            ));
        }
        let mut mask = JointMask::from_names(self.skeleton, &m.subtree, &m.joints, &m.exclude)
            .map_err(|(list, i)| {
                let names = match list {
                    "subtree" => &m.subtree,
                    "joints" => &m.joints,
                    _ => &m.exclude,
                };
                err(
                    &format!("{path}.{list}[{i}]"),
                    GraphProblem::UnknownJoint(names[i].clone()),
                )
            })?;
        if let Some(name) = &m.animated_by {
            let clip = self.clip(&format!("{path}.animated_by"), name)?;
            mask = JointMask::animated_by(self.skeleton, &clip).map_err(|e| {
                err(
                    &format!("{path}.animated_by"),
                    GraphProblem::Value(e.to_string()),
                )
            })?;
        }
        if let Some(i) = m
            .morph
            .iter()
            .position(|n| self.skeleton.find_morph_channel(n).is_none())
        {
            return Err(err(
                &format!("{path}.morph[{i}]"),
                GraphProblem::UnknownMorphChannel(m.morph[i].clone()),
            ));
        }
        if !m.morph.is_empty() {
            mask.set_morph_channels(self.skeleton, &m.morph, 1.0);
        }
        Ok(mask)
    }

    fn clip(&self, path: &str, name: &str) -> Result<Arc<Clip>, GraphError> {
        let c = self
            .clips
            .iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                let known: Vec<String> = self.clips.iter().map(|c| quote(c.name())).collect();
                err(
                    path,
                    GraphProblem::UnknownClip {
                        name: name.into(),
                        known: known.join(", "),
                    },
                )
            })?;
        if !c.fits(self.skeleton) {
            return Err(err(
                path,
                GraphProblem::Motion(format!(
                    "clip {name:?} was built for another skeleton ({} joints; this one has {})",
                    c.joint_count(),
                    self.skeleton.len()
                )),
            ));
        }
        Ok(c.clone())
    }

    fn weight(&self, path: &str, w: &WeightDef) -> Result<TreeValue, GraphError> {
        match w {
            WeightDef::Const(c) if c.is_finite() => Ok(TreeValue::Const(*c)),
            WeightDef::Const(c) => Err(err(
                path,
                GraphProblem::Value(format!("weight {c} is not finite")),
            )),
            WeightDef::Parameter(n) => Ok(TreeValue::Parameter(self.number_parameter(path, n)?)),
        }
    }

    /// Appends the tree nodes of `m` (children first) and returns its node's index.
    fn node(&self, path: &str, m: &Motion, nodes: &mut Vec<TreeNode>) -> Result<usize, GraphError> {
        let node = match m {
            Motion::Clip(name) => TreeNode::Clip(self.clip(path, name)?),
            Motion::Blend1d(b) => {
                let p = format!("{path}.blend_1d");
                let parameter = self.number_parameter(&format!("{p}.parameter"), &b.parameter)?;
                if b.children.is_empty() {
                    return Err(err(
                        &format!("{p}.children"),
                        GraphProblem::Motion("a blend space needs at least one child".into()),
                    ));
                }
                let mut children = Vec::new();
                for (k, c) in b.children.iter().enumerate() {
                    let cp = format!("{p}.children[{k}]");
                    if !c.at.is_finite() {
                        return Err(err(
                            &format!("{cp}.at"),
                            GraphProblem::Value(format!("{} is not finite", c.at)),
                        ));
                    }
                    if b.children[..k].iter().any(|d| d.at == c.at) {
                        return Err(err(
                            &format!("{cp}.at"),
                            GraphProblem::Value(format!("another child is at {} already", c.at)),
                        ));
                    }
                    children.push((c.at, self.node(&format!("{cp}.motion"), &c.motion, nodes)?));
                }
                TreeNode::Space1D {
                    parameter,
                    children,
                }
            }
            Motion::Blend2d(b) => {
                let p = format!("{path}.blend_2d");
                let x = self.number_parameter(&format!("{p}.x"), &b.x)?;
                let y = self.number_parameter(&format!("{p}.y"), &b.y)?;
                if b.children.is_empty() {
                    return Err(err(
                        &format!("{p}.children"),
                        GraphProblem::Motion("a blend space needs at least one child".into()),
                    ));
                }
                let mut children = Vec::new();
                for (k, c) in b.children.iter().enumerate() {
                    let cp = format!("{p}.children[{k}]");
                    let at = Vec2::from(c.at);
                    if !at.is_finite() {
                        return Err(err(
                            &format!("{cp}.at"),
                            GraphProblem::Value(format!("{:?} is not finite", c.at)),
                        ));
                    }
                    if b.children[..k].iter().any(|d| d.at == c.at) {
                        return Err(err(
                            &format!("{cp}.at"),
                            GraphProblem::Value(format!("another child is at {:?} already", c.at)),
                        ));
                    }
                    children.push((at, self.node(&format!("{cp}.motion"), &c.motion, nodes)?));
                }
                TreeNode::Space2D {
                    x,
                    y,
                    mode: b.mode,
                    children,
                }
            }
            Motion::Lerp(l) => {
                let p = format!("{path}.lerp");
                let a = self.node(&format!("{p}.a"), &l.a, nodes)?;
                let b = self.node(&format!("{p}.b"), &l.b, nodes)?;
                TreeNode::Lerp {
                    a,
                    b,
                    weight: self.weight(&format!("{p}.weight"), &l.weight)?,
                }
            }
            Motion::Additive(l) => {
                let p = format!("{path}.additive");
                let base = self.node(&format!("{p}.base"), &l.base, nodes)?;
                let add = self.node(&format!("{p}.add"), &l.add, nodes)?;
                TreeNode::Additive {
                    base,
                    add,
                    weight: self.weight(&format!("{p}.weight"), &l.weight)?,
                }
            }
            Motion::Layered(l) => {
                let p = format!("{path}.layered");
                let base = self.node(&format!("{p}.base"), &l.base, nodes)?;
                let overlay = self.node(&format!("{p}.overlay"), &l.overlay, nodes)?;
                let mask = l
                    .mask
                    .as_ref()
                    .map(|m| self.mask(&format!("{p}.mask"), m))
                    .transpose()?;
                TreeNode::Layered {
                    base,
                    overlay,
                    mask,
                    weight: self.weight(&format!("{p}.weight"), &l.weight)?,
                }
            }
        };
        nodes.push(node);
        Ok(nodes.len() - 1)
    }

    fn condition(&self, path: &str, c: &Condition) -> Result<Cond, GraphError> {
        let list = |what: &str, cs: &[Condition]| -> Result<Vec<Cond>, GraphError> {
            cs.iter()
                .enumerate()
                .map(|(k, c)| self.condition(&format!("{path}.{what}[{k}]"), c))
                .collect()
        };
        Ok(match c {
            Condition::Compare { param, op, value } => {
                let p = self.parameter(path, param)?;
                let kind = self.parameters[p].kind;
                let x = match (kind, value) {
                    (ParameterKind::Float, Value::Number(x)) => finite(path, "value", *x)?,
                    (ParameterKind::Int, Value::Number(x)) => int(path, "value", *x)?,
                    (ParameterKind::Bool, Value::Bool(b))
                        if matches!(op, CompareOp::Equal | CompareOp::NotEqual) =>
                    {
                        f32::from(u8::from(*b))
                    }
                    (ParameterKind::Bool, _) => {
                        return Err(err(
                            path,
                            GraphProblem::Type {
                                name: param.clone(),
                                found: kind,
                                expected: "a float or an int (a bool compares with == or != and true or false)",
                            },
                        ))
                    }
                    (ParameterKind::Trigger, _) => {
                        return Err(err(
                            path,
                            GraphProblem::Type {
                                name: param.clone(),
                                found: kind,
                                expected: "a float, an int or a bool (a trigger is tested with {\"param\": name} alone)",
                            },
                        ))
                    }
                    (k, v) => {
                        return Err(err(
                            &format!("{path}.value"),
                            GraphProblem::Value(format!("{v} does not compare with a {k}")),
                        ))
                    }
                };
                Cond::Compare(p, *op, x)
            }
            Condition::Is { param } => {
                let p = self.parameter(path, param)?;
                match self.parameters[p].kind {
                    ParameterKind::Bool | ParameterKind::Trigger => Cond::Is(p),
                    k => {
                        return Err(err(
                            path,
                            GraphProblem::Type {
                                name: param.clone(),
                                found: k,
                                expected: "a bool or a trigger (numbers need \"op\" and \"value\")",
                            },
                        ))
                    }
                }
            }
            Condition::All { all } => Cond::All(list("all", all)?),
            Condition::Any { any } => Cond::Any(list("any", any)?),
            Condition::Not { not } => {
                Cond::Not(Box::new(self.condition(&format!("{path}.not"), not)?))
            }
        })
    }

    fn conditions(&self, path: &str, cs: &[Condition]) -> Result<Vec<Cond>, GraphError> {
        cs.iter()
            .enumerate()
            .map(|(k, c)| self.condition(&format!("{path}.conditions[{k}]"), c))
            .collect()
    }

    /// Resolves a transition whose target is among `names` (state ids in order).
    fn transition(
        &self,
        path: &str,
        t: &TransitionDef,
        names: &[(String, StateId)],
    ) -> Result<Trans, GraphError> {
        let target = if t.to == "exit" {
            Target::Exit
        } else {
            Target::State(
                names
                    .iter()
                    .find(|n| n.0 == t.to)
                    .map(|n| n.1)
                    .ok_or_else(|| {
                        err(
                            &format!("{path}.to"),
                            GraphProblem::UnknownState {
                                name: t.to.clone(),
                                known: names
                                    .iter()
                                    .map(|n| quote(&n.0))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                            },
                        )
                    })?,
            )
        };
        if let Some(e) = t.exit_time {
            if !(e.is_finite() && e >= 0.0) {
                return Err(err(
                    &format!("{path}.exit_time"),
                    GraphProblem::Value(format!("exit time {e} must be a finite number ≥ 0")),
                ));
            }
        }
        if !(t.duration.is_finite() && t.duration >= 0.0) {
            return Err(err(
                &format!("{path}.duration"),
                GraphProblem::Value(format!(
                    "duration {} must be a finite number of seconds ≥ 0",
                    t.duration
                )),
            ));
        }
        Ok(Trans {
            target,
            conds: self.conditions(path, &t.conditions)?,
            exit_time: t.exit_time,
            duration: t.duration,
            curve: t.curve,
            kind: t.kind,
            interruption: t.interruption,
            ordered: t.ordered,
            to_self: t.to_self,
            after_exit: t.after_exit,
            path: path.into(),
        })
    }

    /// Resolves a machine at `path` (a layer's or a state's), its states first.
    fn machine(
        &mut self,
        path: &str,
        m: &MachineDef,
        parent: Option<StateId>,
        depth: usize,
        prefix: &str,
    ) -> Result<usize, GraphError> {
        if depth > MAX_DEPTH {
            return Err(err(
                path,
                GraphProblem::Value(format!("machines nest more than {MAX_DEPTH} deep")),
            ));
        }
        let id = self.machines.len();
        self.machines.push(Machine {
            parent,
            entry: StateId(0),
            entry_transitions: Vec::new(),
            any: Vec::new(),
        });
        // Number the states first, so transitions can name any of them.
        let mut names: Vec<(String, StateId)> = Vec::new();
        for s in &m.states {
            let sp = format!("{path}.states[{}]", quote(&s.name));
            if s.name.is_empty() || s.name == "exit" || s.name.contains('/') {
                return Err(err(
                    &sp,
                    GraphProblem::Value(
                        "a state's name must not be empty, \"exit\" or contain '/'".into(),
                    ),
                ));
            }
            if names.iter().any(|n| n.0 == s.name) {
                return Err(err(&sp, GraphProblem::Duplicate(s.name.clone())));
            }
            let sid = StateId(self.states.len() as u32);
            names.push((s.name.clone(), sid));
            self.states.push(State {
                name: s.name.clone(),
                full_name: format!("{prefix}{}", s.name),
                path: sp,
                machine: id,
                depth,
                motion: StateMotion::Machine(usize::MAX),
                speed: s.speed,
                speed_parameter: None,
                wrap: s.wrap,
                sync: s.sync,
                on_enter: s.on_enter.iter().map(|e| Arc::from(e.as_str())).collect(),
                on_exit: s.on_exit.iter().map(|e| Arc::from(e.as_str())).collect(),
                transitions: Vec::new(),
            });
        }
        if m.states.is_empty() {
            return Err(err(
                &format!("{path}.states"),
                GraphProblem::Value("a machine needs at least one state".into()),
            ));
        }
        let find = |p: &str, name: &str| {
            names
                .iter()
                .find(|n| n.0 == name)
                .map(|n| n.1)
                .ok_or_else(|| {
                    err(
                        p,
                        GraphProblem::UnknownState {
                            name: name.into(),
                            known: names
                                .iter()
                                .map(|n| quote(&n.0))
                                .collect::<Vec<_>>()
                                .join(", "),
                        },
                    )
                })
        };
        let entry = find(&format!("{path}.entry"), &m.entry)?;
        let mut entry_transitions = Vec::new();
        for (k, e) in m.entry_transitions.iter().enumerate() {
            let ep = format!("{path}.entry_transitions[{k}]");
            entry_transitions.push((
                self.conditions(&ep, &e.conditions)?,
                find(&format!("{ep}.to"), &e.to)?,
            ));
        }
        let mut any = Vec::new();
        for (k, t) in m.any_state.iter().enumerate() {
            any.push(self.transition(&format!("{path}.any_state[{k}]"), t, &names)?);
        }
        for (s, &(_, sid)) in m.states.iter().zip(&names) {
            let sp = self.states[sid.0 as usize].path.clone();
            if !s.speed.is_finite() {
                return Err(err(
                    &format!("{sp}.speed"),
                    GraphProblem::Value(format!("speed {} is not finite", s.speed)),
                ));
            }
            let speed_parameter = s
                .speed_parameter
                .as_ref()
                .map(|n| self.number_parameter(&format!("{sp}.speed_parameter"), n))
                .transpose()?;
            let motion = match (&s.motion, &s.machine) {
                (Some(Motion::Clip(name)), None) => {
                    StateMotion::Clip(self.clip(&format!("{sp}.motion"), name)?)
                }
                (Some(motion), None) => {
                    let mut nodes = Vec::new();
                    self.node(&format!("{sp}.motion"), motion, &mut nodes)?;
                    let shape = TreeShape::new(nodes, self.parameters.len()).map_err(|e| {
                        err(&format!("{sp}.motion"), GraphProblem::Motion(e.to_string()))
                    })?;
                    StateMotion::Tree(Arc::new(shape))
                }
                (None, Some(inner)) => {
                    let full = format!("{prefix}{}/", s.name);
                    StateMotion::Machine(self.machine(&sp, inner, Some(sid), depth + 1, &full)?)
                }
                (None, None) => StateMotion::Empty,
                (Some(_), Some(_)) => return Err(err(&sp, GraphProblem::MotionOrMachine)),
            };
            let mut transitions = Vec::new();
            for (k, t) in s.transitions.iter().enumerate() {
                let tp = format!("{sp}.transitions[{k}]");
                if t.after_exit && s.machine.is_none() {
                    return Err(err(
                        &format!("{tp}.after_exit"),
                        GraphProblem::Value(
                            "only a state that holds a machine has transitions after its exit"
                                .into(),
                        ),
                    ));
                }
                transitions.push(self.transition(&tp, t, &names)?);
            }
            let st = &mut self.states[sid.0 as usize];
            st.motion = motion;
            st.speed_parameter = speed_parameter;
            st.transitions = transitions;
        }
        let mm = &mut self.machines[id];
        mm.entry = entry;
        mm.entry_transitions = entry_transitions;
        mm.any = any;
        Ok(id)
    }
}

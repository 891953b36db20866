//! A character's run of a [`Graph`]: parameter values, each layer's current state and
//! transition, and the [`Animator`] that plays the states' motions.
//!
//! [`GraphInstance::update`] does, in order:
//!
//! 1. **transitions**, per layer, against the parameters as set since the last update and
//!    the states' times reached by it: any-state transitions (outer machine first), then the
//!    current state's, in their order; the first whose conditions hold and whose exit time
//!    has passed fires and consumes the triggers it read. An instant transition (duration 0)
//!    lets the new state's transitions be checked in the same update; a timed one ends the
//!    search. While a transition runs, only any-state transitions and those its
//!    [`Interruption`] names are checked.
//! 2. **steering**: layer weights, state speeds and blend-tree parameters from the
//!    parameters;
//! 3. **the animator's update**: advance, sync groups, clip events, root motion, sampling
//!    and blending.
//!
//! A state's motion is a tagged source on its layer; a source that leaves the layer is
//! kept and reused the next time the state is entered, and one is made for every state
//! when the instance is made, so updates allocate nothing (a state re-entered while its
//! last run still fades out gets a second source once; a thread's first update of a
//! skeleton larger than any before makes the animator's per-thread slot blocks).

use std::sync::Arc;

use super::build::{Graph, ParameterId, StateId, StateMotion, Target, Trans, MAX_DEPTH};
use super::def::{Interruption, ParameterKind, TransitionKind, Value};
use crate::animator::{
    Animator, BlendTree, FiredEvent, PlayOptions, Player, RootMotion, Source, Transition,
};
use crate::{Error, Transform};

/// Whether a state was entered or left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateEventKind {
    /// Entered.
    Enter,
    /// Left.
    Exit,
}

/// A state's `on_enter` or `on_exit` event.
#[derive(Clone, Debug, PartialEq)]
pub struct StateEvent {
    /// The layer.
    pub layer: usize,
    /// The state entered or left.
    pub state: StateId,
    /// Entered or left.
    pub kind: StateEventKind,
    /// The event's name from the graph.
    pub name: Arc<str>,
}

/// A transition taken during an update.
#[derive(Clone, Debug, PartialEq)]
pub struct TakenTransition {
    /// The layer.
    pub layer: usize,
    /// The state it left (the innermost).
    pub from: StateId,
    /// The state it entered (the innermost).
    pub to: StateId,
    /// Its path in the graph (`layers[0].states["Idle"].transitions[1]`).
    pub path: Arc<str>,
    /// It interrupted a transition under way.
    pub interrupted: bool,
}

/// A transition under way.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransitionProgress {
    /// The state it comes from.
    pub from: StateId,
    /// The state it goes to.
    pub to: StateId,
    /// Seconds since it started.
    pub elapsed: f32,
    /// Its duration.
    pub duration: f32,
}

/// What an update produced.
#[derive(Debug)]
pub struct GraphUpdate<'a> {
    /// Clip events crossed, in the order crossed (as [`Animator::update`] reports them).
    pub events: &'a [FiredEvent],
    /// States entered and left, in order.
    pub state_events: &'a [StateEvent],
    /// Transitions taken, in order.
    pub transitions: &'a [TakenTransition],
    /// The root's motion (see [`GraphInstance::animator_mut`] to turn it on).
    pub root_motion: RootMotion,
}

#[derive(Clone, Copy, Debug)]
enum TransRef {
    State(StateId, usize),
    Any(usize, usize),
}

#[derive(Clone, Copy, Debug)]
struct Running {
    tr: TransRef,
    from: StateId,
    from_entered: f64,
    /// The state the transition targeted (may hold the leaf).
    to: StateId,
    elapsed: f32,
    duration: f32,
}

#[derive(Clone, Copy, Debug)]
struct LayerRun {
    leaf: StateId,
    entered: f64,
    running: Option<Running>,
}

/// The most transitions one layer takes in one update (a bound on instant transitions
/// across nested machines, where validation cannot see every cycle).
pub const MAX_TRANSITIONS_PER_UPDATE: usize = 64;

/// One character playing a [`Graph`]. See the [module docs](crate::graph).
///
/// ```
/// use std::sync::Arc;
/// use skelett::*;
/// use skelett::graph::*;
/// # use glam::Vec3;
/// # let skeleton = Arc::new(RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap());
/// # let make = |name: &str, x: f32| Arc::new(RawClip { name: name.into(), start: 0.0, duration: 1.0,
/// #     channels: vec![RawChannel { joint: "root".into(), target: Target::Translation,
/// #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
/// #     values: RawValues::Vec3(vec![Vec3::X * x, Vec3::X * x]) }] }.build(&skeleton).unwrap());
/// let clips = [make("idle", 0.0), make("jump", 1.0)];
/// let mut idle = StateDef::new("Idle", Motion::Clip("idle".into()));
/// idle.transitions.push(TransitionDef {
///     conditions: vec![Condition::Is { param: "jump".into() }],
///     ..TransitionDef::to("Jump")
/// });
/// let def = GraphDef {
///     version: GRAPH_VERSION,
///     parameters: vec![ParameterDef { name: "jump".into(), kind: ParameterKind::Trigger, default: None }],
///     layers: vec![LayerDef {
///         name: "base".into(), blend: animator::BlendMode::Override, weight: 1.0,
///         weight_parameter: None, mask: None,
///         machine: MachineDef { entry: "Idle".into(), entry_transitions: vec![], any_state: vec![],
///             states: vec![idle, StateDef::new("Jump", Motion::Clip("jump".into()))] },
///     }],
/// };
/// let graph = Arc::new(Graph::build(&def, skeleton, &clips).map_err(|e| e.to_string()).unwrap());
/// let mut character = GraphInstance::new(graph.clone());
/// let jump = graph.parameter("jump").unwrap();
/// character.set_trigger(jump)?;
/// let r = character.update(0.1);
/// assert_eq!(r.transitions.len(), 1);
/// assert_eq!(graph.state_name(character.current_state(0)), "Jump");
/// assert_eq!(character.value(jump), 0.0); // consumed
/// assert_eq!(character.pose()[0].translation.x, 1.0);
/// # Ok::<(), skelett::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct GraphInstance {
    graph: Arc<Graph>,
    animator: Animator,
    values: Vec<f32>,
    layers: Vec<LayerRun>,
    state_events: Vec<StateEvent>,
    transitions: Vec<TakenTransition>,
    /// The state events of the last update were handed out.
    stale: bool,
    /// Sources built after set-up (re-entries of states still fading out).
    built: usize,
}

impl GraphInstance {
    /// A character at the graph's entry states with the parameters' defaults; its animator
    /// has one layer per graph layer and a source ready for every state.
    pub fn new(graph: Arc<Graph>) -> Self {
        Self::with_animator(graph, false)
    }

    /// [`GraphInstance::new`] on a lean animator ([`Animator::new_lean`]): the buffers of
    /// paths in rows (layers blended onto others, fades, inertial transitions, rows read),
    /// model matrices for modifiers and event buffers are made the first time an update
    /// needs them, so an update may allocate then; for crowds, whose characters then hold
    /// less memory between the blocks their updates touch. The same poses and events.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skelett::*;
    /// # use skelett::graph::*;
    /// # let skeleton = Arc::new(RawSkeleton { joints: (0..10).map(|i| RawJoint { name: format!("j{i}"),
    /// #     parent: (i > 0).then(|| i - 1), rest: Transform::IDENTITY }).collect(), ..Default::default() }.build().unwrap());
    /// # let idle = Arc::new(RawClip { name: "idle".into(), start: 0.0, duration: 1.0,
    /// #     channels: vec![RawChannel { joint: "j3".into(), target: Target::Translation,
    /// #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
    /// #     values: RawValues::Vec3(vec![glam::Vec3::ZERO, glam::Vec3::X]) }] }.build(&skeleton).unwrap());
    /// # let def = GraphDef {
    /// #     version: GRAPH_VERSION,
    /// #     parameters: vec![],
    /// #     layers: vec![LayerDef {
    /// #         name: "base".into(), blend: animator::BlendMode::Override, weight: 1.0,
    /// #         weight_parameter: None, mask: None,
    /// #         machine: MachineDef { entry: "Idle".into(), entry_transitions: vec![], any_state: vec![],
    /// #             states: vec![StateDef::new("Idle", Motion::Clip("idle".into()))] },
    /// #     }],
    /// # };
    /// # let graph = Arc::new(Graph::build(&def, skeleton.clone(), &[idle]).map_err(|e| e.to_string()).unwrap());
    /// let mut crowd: Vec<GraphInstance> =
    ///     (0..100).map(|_| GraphInstance::new_lean(graph.clone())).collect();
    /// let mut full = GraphInstance::new(graph.clone());
    /// for c in crowd.iter_mut().chain([&mut full]) {
    ///     c.update(0.25);
    /// }
    /// assert_eq!(crowd[3].pose(), full.pose());
    /// ```
    pub fn new_lean(graph: Arc<Graph>) -> Self {
        Self::with_animator(graph, true)
    }

    /// [`GraphInstance::new`], with `lean` on [`Animator::new_lean`].
    fn with_animator(graph: Arc<Graph>, lean: bool) -> Self {
        let mut animator = if lean {
            Animator::new_lean(graph.skeleton.clone())
        } else {
            Animator::new(graph.skeleton.clone())
        };
        for (i, l) in graph.layers.iter().enumerate() {
            // Masks were checked against the skeleton when the graph was built.
            let _ = if i == 0 {
                animator
                    .set_layer_weight(0, l.weight)
                    .and_then(|_| animator.set_layer_mask(0, l.mask.clone()))
            } else {
                animator
                    .add_layer(l.mode, l.weight, l.mask.clone())
                    .map(|_| ())
            };
            let _ = animator.reserve_spare(i, 2 * l.states + crate::animator::MAX_SLOTS);
        }
        // One source per state, ready in its layer's spares.
        for (si, s) in graph.states.iter().enumerate() {
            if let Some(source) = make_source(&s.motion) {
                let layer = graph.layer_of_state(StateId(si as u32));
                animator.add_spare(layer, si as u32, source);
            }
        }
        let values = graph.parameters.iter().map(|p| p.default).collect();
        let mut g = Self {
            layers: Vec::with_capacity(graph.layers.len()),
            animator,
            values,
            state_events: Vec::with_capacity(64),
            transitions: Vec::with_capacity(16),
            stale: false,
            built: 0,
            graph,
        };
        for li in 0..g.graph.layers.len() {
            let m = g.graph.layers[li].machine;
            let leaf = g.enter_machine(m);
            let mut chain = [StateId(0); MAX_DEPTH + 1];
            let n = g.graph.chain(leaf, &mut chain);
            for &s in &chain[..n] {
                g.push_events(li, s, StateEventKind::Enter);
            }
            g.layers.push(LayerRun {
                leaf,
                entered: 0.0,
                running: None,
            });
            g.start_state(li, leaf, Transition::Immediate);
        }
        g
    }

    /// The graph.
    pub fn graph(&self) -> &Arc<Graph> {
        &self.graph
    }

    /// The animator playing the states: for root motion, the event policy and IK modifiers.
    /// Starting clips on its layers directly is possible but the graph does not know of it.
    pub fn animator_mut(&mut self) -> &mut Animator {
        &mut self.animator
    }

    /// The animator.
    pub fn animator(&self) -> &Animator {
        &self.animator
    }

    /// Asks the CPU to load what this character's next update reads and writes (its
    /// parameters, layers' states and its animator's blocks: [`Animator::prefetch`]); call
    /// it on the next character while updating the current one
    /// ([`crate::crowd::for_each_prefetched`]). Changes nothing else.
    pub fn prefetch(&self) {
        crate::crowd::prefetch(std::slice::from_ref(self));
        crate::crowd::prefetch(&self.values);
        crate::crowd::prefetch(&self.layers);
        self.animator.prefetch();
    }

    /// The pose of the last update (local transforms).
    pub fn pose(&self) -> &[Transform] {
        self.animator.pose()
    }

    /// The model matrices of the last update's pose into `model`, from the animator's
    /// blocks where it left the pose there (no rows made; see
    /// [`crate::animator::Animator::local_to_model`]): the same bits as
    /// [`crate::local_to_model`] on [`GraphInstance::pose`], faster.
    ///
    /// # Errors
    /// [`Error::Length`] if `model` is shorter than the skeleton; nothing is written.
    pub fn local_to_model(&self, model: &mut [glam::Mat4]) -> Result<(), Error> {
        self.animator.local_to_model(model)
    }

    /// A parameter's value as a float (bools and triggers 0 or 1).
    pub fn value(&self, p: ParameterId) -> f32 {
        self.values.get(p.0 as usize).copied().unwrap_or(0.0)
    }

    /// Every parameter's value, in the graph's order.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    fn check(&self, p: ParameterId, kinds: &[ParameterKind]) -> Result<usize, Error> {
        let i = p.0 as usize;
        let param = self
            .graph
            .parameters
            .get(i)
            .ok_or_else(|| Error::Parameter {
                name: format!("#{i}"),
                problem: format!("the graph has {} parameters", self.graph.parameters.len()),
            })?;
        if kinds.contains(&param.kind) {
            Ok(i)
        } else {
            Err(Error::Parameter {
                name: param.name.clone(),
                problem: format!("is a {}, not a {}", param.kind, kinds[0]),
            })
        }
    }

    /// Sets a float parameter (non-finite values are refused).
    ///
    /// # Errors
    /// [`Error::Parameter`] for a parameter of another type or a non-finite value.
    pub fn set_float(&mut self, p: ParameterId, v: f32) -> Result<(), Error> {
        let i = self.check(p, &[ParameterKind::Float])?;
        if !v.is_finite() {
            return Err(Error::Parameter {
                name: self.graph.parameters[i].name.clone(),
                problem: format!("{v} is not finite"),
            });
        }
        self.values[i] = v;
        Ok(())
    }

    /// Sets an int parameter.
    ///
    /// # Errors
    /// [`Error::Parameter`] for a parameter of another type or a value beyond ±16777216.
    pub fn set_int(&mut self, p: ParameterId, v: i32) -> Result<(), Error> {
        let i = self.check(p, &[ParameterKind::Int])?;
        if v.unsigned_abs() > 16_777_216 {
            return Err(Error::Parameter {
                name: self.graph.parameters[i].name.clone(),
                problem: format!("{v} is beyond ±16777216"),
            });
        }
        self.values[i] = v as f32;
        Ok(())
    }

    /// Sets a bool parameter.
    ///
    /// # Errors
    /// [`Error::Parameter`] for a parameter of another type.
    pub fn set_bool(&mut self, p: ParameterId, v: bool) -> Result<(), Error> {
        let i = self.check(p, &[ParameterKind::Bool])?;
        self.values[i] = f32::from(u8::from(v));
        Ok(())
    }

    /// Sets a trigger: it stays set until a transition fires on it.
    ///
    /// # Errors
    /// [`Error::Parameter`] for a parameter of another type.
    pub fn set_trigger(&mut self, p: ParameterId) -> Result<(), Error> {
        let i = self.check(p, &[ParameterKind::Trigger])?;
        self.values[i] = 1.0;
        Ok(())
    }

    /// Clears a trigger that no transition consumed.
    ///
    /// # Errors
    /// [`Error::Parameter`] for a parameter of another type.
    pub fn reset_trigger(&mut self, p: ParameterId) -> Result<(), Error> {
        let i = self.check(p, &[ParameterKind::Trigger])?;
        self.values[i] = 0.0;
        Ok(())
    }

    /// Sets any parameter from a [`Value`] of its type (a trigger: `true` sets, `false`
    /// resets).
    ///
    /// # Errors
    /// [`Error::Parameter`] for a value of another type, a fraction for an int, or a
    /// non-finite number.
    pub fn set(&mut self, p: ParameterId, v: Value) -> Result<(), Error> {
        let kind = self
            .graph
            .parameters
            .get(p.0 as usize)
            .map(|q| q.kind)
            .ok_or_else(|| Error::Parameter {
                name: format!("#{}", p.0),
                problem: format!("the graph has {} parameters", self.graph.parameters.len()),
            })?;
        let name = || self.graph.parameters[p.0 as usize].name.clone();
        match (kind, v) {
            (ParameterKind::Float, Value::Number(x)) => self.set_float(p, x as f32),
            (ParameterKind::Int, Value::Number(x))
                if x.fract() == 0.0 && x.abs() <= 16_777_216.0 =>
            {
                self.set_int(p, x as i32)
            }
            (ParameterKind::Bool, Value::Bool(b)) => self.set_bool(p, b),
            (ParameterKind::Trigger, Value::Bool(true)) => self.set_trigger(p),
            (ParameterKind::Trigger, Value::Bool(false)) => self.reset_trigger(p),
            (k, v) => Err(Error::Parameter {
                name: name(),
                problem: format!("{v} is not a value for a {k}"),
            }),
        }
    }

    /// The current (innermost) state of `layer` (the target of a transition under way).
    pub fn current_state(&self, layer: usize) -> StateId {
        self.layers.get(layer).map_or(StateId(0), |l| l.leaf)
    }

    /// The transition under way on `layer`, if any.
    pub fn transition(&self, layer: usize) -> Option<TransitionProgress> {
        let l = self.layers.get(layer)?;
        l.running.map(|r| TransitionProgress {
            from: r.from,
            to: l.leaf,
            elapsed: r.elapsed,
            duration: r.duration,
        })
    }

    /// Cycles the current state of `layer` has played since it was entered.
    pub fn state_time(&self, layer: usize) -> f64 {
        self.layers
            .get(layer)
            .map_or(0.0, |l| self.time_of(layer, l.leaf, l.entered))
    }

    /// The state events of the last update (also in its [`GraphUpdate`]).
    pub fn state_events(&self) -> &[StateEvent] {
        &self.state_events
    }

    /// The transitions the last update took (also in its [`GraphUpdate`]).
    pub fn transitions_taken(&self) -> &[TakenTransition] {
        &self.transitions
    }

    /// How many sources were built after set-up (a state re-entered while its previous run
    /// still faded out); each is built once and reused after.
    pub fn sources_built(&self) -> usize {
        self.built
    }

    /// Advances by `dt` seconds: transitions, steering, then the animator (see the
    /// [module docs](crate::graph)).
    pub fn update(&mut self, dt: f32) -> GraphUpdate<'_> {
        if std::mem::replace(&mut self.stale, true) {
            self.state_events.clear();
        }
        self.transitions.clear();
        let dt = if dt.is_finite() { dt.max(0.0) } else { 0.0 };
        for li in 0..self.layers.len() {
            self.run_transitions(li);
        }
        self.steer();
        let r = self.animator.update(dt);
        for l in &mut self.layers {
            if let Some(run) = &mut l.running {
                run.elapsed += dt;
                if run.elapsed >= run.duration {
                    l.running = None;
                }
            }
        }
        GraphUpdate {
            events: r.events,
            state_events: &self.state_events,
            transitions: &self.transitions,
            root_motion: r.root_motion,
        }
    }

    /// Layer weights, state speeds and tree parameters from the parameters.
    fn steer(&mut self) {
        let graph = &*self.graph;
        for (li, l) in graph.layers.iter().enumerate() {
            if let Some(p) = l.weight_parameter {
                let _ = self.animator.set_layer_weight(li, self.values[p]);
            }
            for slot in self.animator.slots_mut(li) {
                let Some(tag) = slot.tag else { continue };
                let s = &graph.states[tag as usize];
                let speed = s.speed * s.speed_parameter.map_or(1.0, |p| self.values[p]);
                match &mut slot.source {
                    Source::Clip(p) => p.set_speed(speed),
                    Source::Tree(t) => {
                        t.set_speed(speed);
                        t.set_parameters(&self.values);
                    }
                    Source::Space(_) => {}
                }
            }
        }
    }

    /// Normalised cycles state `s` has played on `layer` since `entered`.
    fn time_of(&self, layer: usize, s: StateId, entered: f64) -> f64 {
        self.animator
            .slots(layer)
            .iter()
            .rev()
            .find(|slot| slot.tag == Some(s.0))
            .and_then(|slot| slot.source.normalized_position())
            .map_or(0.0, |p| p - entered)
    }

    fn trans(&self, r: TransRef) -> &Trans {
        match r {
            TransRef::State(s, k) => &self.graph.states[s.0 as usize].transitions[k],
            TransRef::Any(m, k) => &self.graph.machines[m].any[k],
        }
    }

    fn holds(&self, t: &Trans, time: f64) -> bool {
        t.exit_time.is_none_or(|e| time >= e as f64) && t.conditions_hold(&self.values)
    }

    /// The first transition of `layer` that may fire now.
    fn find(&self, li: usize) -> Option<TransRef> {
        let l = self.layers[li];
        let graph = &*self.graph;
        let leaf_time = self.time_of(li, l.leaf, l.entered);
        let mut chain = [StateId(0); MAX_DEPTH + 1];
        let n = graph.chain(l.leaf, &mut chain);
        // Level by level, outer first: the machine's any-state transitions, then (above the
        // leaf, and with no transition under way) the enclosing state's own.
        for (d, &s) in chain[..n].iter().enumerate() {
            let m = graph.states[s.0 as usize].machine;
            for (k, t) in graph.machines[m].any.iter().enumerate() {
                if let Target::State(to) = t.target {
                    let current = chain[..n].contains(&to) || l.running.is_some_and(|r| r.to == to);
                    if current && !t.to_self {
                        continue;
                    }
                }
                if self.holds(t, leaf_time) {
                    return Some(TransRef::Any(m, k));
                }
            }
            if d + 1 < n && l.running.is_none() {
                let own = &graph.states[s.0 as usize].transitions;
                if let Some(k) = own
                    .iter()
                    .position(|t| !t.after_exit && self.holds(t, leaf_time))
                {
                    return Some(TransRef::State(s, k));
                }
            }
        }
        let own = |s: StateId, limit: usize, time: f64| {
            graph.states[s.0 as usize]
                .transitions
                .iter()
                .enumerate()
                .take(limit)
                .find(|(_, t)| self.holds(t, time))
                .map(|(k, _)| TransRef::State(s, k))
        };
        let Some(run) = l.running else {
            return own(l.leaf, usize::MAX, leaf_time);
        };
        let tr = self.trans(run.tr);
        let source = || {
            let limit = match run.tr {
                TransRef::State(s, k) if tr.ordered && s == run.from => k,
                _ => usize::MAX,
            };
            own(
                run.from,
                limit,
                self.time_of(li, run.from, run.from_entered),
            )
        };
        let destination = || own(l.leaf, usize::MAX, leaf_time);
        match tr.interruption {
            Interruption::None => None,
            Interruption::Source => source(),
            Interruption::Destination => destination(),
            Interruption::SourceThenDestination => source().or_else(destination),
            Interruption::DestinationThenSource => destination().or_else(source),
        }
    }

    fn run_transitions(&mut self, li: usize) {
        for _ in 0..MAX_TRANSITIONS_PER_UPDATE {
            let Some(r) = self.find(li) else { return };
            if !self.take(li, r) {
                return;
            }
        }
    }

    /// Takes transition `r` on layer `li`; returns whether it was instant (the search goes
    /// on from the new state).
    fn take(&mut self, li: usize, r: TransRef) -> bool {
        let graph = self.graph.clone();
        let mut tr = match r {
            TransRef::State(s, k) => &graph.states[s.0 as usize].transitions[k],
            TransRef::Any(m, k) => &graph.machines[m].any[k],
        };
        for c in &tr.conds {
            c.consume(&graph.parameters, &mut self.values);
        }
        let old = self.layers[li];
        let leaf_time = self.time_of(li, old.leaf, old.entered);
        // The machine the transition belongs to, for exits.
        let mut machine = match r {
            TransRef::State(s, _) => graph.states[s.0 as usize].machine,
            TransRef::Any(m, _) => m,
        };
        // Resolve the target: a state of the machine, or out through exits.
        let (target, level) = loop {
            match tr.target {
                Target::State(s) => break (s, graph.states[s.0 as usize].depth),
                Target::Exit => match graph.machines[machine].parent {
                    None => {
                        let e = self.entry_of(machine);
                        break (e, graph.states[e.0 as usize].depth);
                    }
                    Some(p) => {
                        let ps = &graph.states[p.0 as usize];
                        match ps.transitions.iter().find(|t| self.holds(t, leaf_time)) {
                            Some(t) => {
                                for c in &t.conds {
                                    c.consume(&graph.parameters, &mut self.values);
                                }
                                tr = t;
                                machine = ps.machine;
                            }
                            None => {
                                let e = self.entry_of(machine);
                                break (e, graph.states[e.0 as usize].depth);
                            }
                        }
                    }
                },
            }
        };
        let leaf = self.enter_state(target);
        // Events: states left (inner first), states entered (outer first), from the
        // transition's level down.
        let mut before = [StateId(0); MAX_DEPTH + 1];
        let nb = graph.chain(old.leaf, &mut before);
        let mut after = [StateId(0); MAX_DEPTH + 1];
        let na = graph.chain(leaf, &mut after);
        for &s in before[..nb].iter().rev() {
            if graph.states[s.0 as usize].depth >= level {
                self.push_events(li, s, StateEventKind::Exit);
            }
        }
        for &s in &after[..na] {
            if graph.states[s.0 as usize].depth >= level {
                self.push_events(li, s, StateEventKind::Enter);
            }
        }
        let instant = tr.duration <= 0.0;
        let transition = if instant {
            Transition::Immediate
        } else {
            match tr.kind {
                TransitionKind::Crossfade => Transition::Crossfade(tr.duration, tr.curve),
                TransitionKind::Inertial => Transition::Inertial(tr.duration),
            }
        };
        self.transitions.push(TakenTransition {
            layer: li,
            from: old.leaf,
            to: leaf,
            path: tr.path.clone(),
            interrupted: old.running.is_some(),
        });
        let duration = tr.duration;
        self.layers[li].leaf = leaf;
        self.layers[li].running = (!instant).then_some(Running {
            tr: r,
            from: old.leaf,
            from_entered: old.entered,
            to: target,
            elapsed: 0.0,
            duration,
        });
        self.start_state(li, leaf, transition);
        instant
    }

    /// Plays state `s`'s motion on layer `li` with `transition`, and notes where it starts.
    fn start_state(&mut self, li: usize, s: StateId, transition: Transition) {
        let st = &self.graph.states[s.0 as usize];
        let speed = st.speed * st.speed_parameter.map_or(1.0, |p| self.values[p]);
        let options = PlayOptions {
            speed,
            wrap: st.wrap,
            sync_group: st.sync,
            start: 0.0,
            ..Default::default()
        };
        let motion = &st.motion;
        if matches!(motion, StateMotion::Empty) {
            let _ = self.animator.fade_out(li, transition);
            self.layers[li].entered = 0.0;
            return;
        }
        if let Ok(true) =
            self.animator
                .start_tagged(li, s.0, || make_source(motion), transition, &options)
        {
            self.built += 1;
        }
        let entered = self
            .animator
            .slots(li)
            .last()
            .and_then(|slot| slot.source.normalized_position())
            .unwrap_or(0.0);
        self.layers[li].entered = entered;
    }

    /// The innermost state entering `s` leads to (through nested machines' entries).
    fn enter_state(&mut self, mut s: StateId) -> StateId {
        for _ in 0..=MAX_DEPTH {
            match self.graph.states[s.0 as usize].motion {
                StateMotion::Machine(m) => s = self.entry_of(m),
                _ => return s,
            }
        }
        s
    }

    /// The innermost state entering machine `m` leads to.
    fn enter_machine(&mut self, m: usize) -> StateId {
        let e = self.entry_of(m);
        self.enter_state(e)
    }

    /// Machine `m`'s entry state: the first entry transition that holds, or its entry.
    fn entry_of(&mut self, m: usize) -> StateId {
        let graph = self.graph.clone();
        let machine = &graph.machines[m];
        for (conds, to) in &machine.entry_transitions {
            if conds.iter().all(|c| c.holds(&self.values)) {
                for c in conds {
                    c.consume(&graph.parameters, &mut self.values);
                }
                return *to;
            }
        }
        machine.entry
    }

    fn push_events(&mut self, layer: usize, s: StateId, kind: StateEventKind) {
        let st = &self.graph.states[s.0 as usize];
        let names = match kind {
            StateEventKind::Enter => &st.on_enter,
            StateEventKind::Exit => &st.on_exit,
        };
        for n in names {
            self.state_events.push(StateEvent {
                layer,
                state: s,
                kind,
                name: n.clone(),
            });
        }
    }
}

/// A fresh source for a leaf state's motion (none for a nested machine).
fn make_source(motion: &StateMotion) -> Option<Source> {
    match motion {
        StateMotion::Clip(c) => Some(Source::Clip(Player::new(c.clone()))),
        StateMotion::Tree(t) => Some(Source::Tree(Box::new(BlendTree::new(t.clone())))),
        StateMotion::Machine(_) | StateMotion::Empty => None,
    }
}

impl Graph {
    /// The states from the layer's top machine down to `leaf`, outer first; returns how
    /// many.
    pub(crate) fn chain(&self, leaf: StateId, out: &mut [StateId; MAX_DEPTH + 1]) -> usize {
        let mut n = 0;
        let mut s = Some(leaf);
        while let Some(st) = s {
            if n == out.len() {
                break;
            }
            out[n] = st;
            n += 1;
            s = self.machines[self.states[st.0 as usize].machine].parent;
        }
        out[..n].reverse();
        n
    }

    /// The layer state `s` belongs to.
    pub(crate) fn layer_of_state(&self, s: StateId) -> usize {
        let mut chain = [StateId(0); MAX_DEPTH + 1];
        let n = self.chain(s, &mut chain);
        let top = self.states[chain[..n][0].0 as usize].machine;
        self.layers
            .iter()
            .position(|l| l.machine == top)
            .unwrap_or(0)
    }
}

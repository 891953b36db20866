//! The graph definition: plain data, written by hand in JSON (the `serde` feature derives the
//! format; skelett-io reads files) or built in code, then checked and resolved by
//! [`Graph::build`](super::Graph::build). Names, not indices: clips, parameters, states and
//! joints are found by name when the graph is built, and every problem is reported with the
//! path of the element that has it.
//!
//! The JSON format (version 1) is these types as they are, field for field; the README's
//! "Animation graphs" section documents it with an example.

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::animator::{BlendMode, Curve, Space2D, Wrap};

/// The format version this build reads and writes.
pub const GRAPH_VERSION: u32 = 1;

/// A whole graph: parameters and layers.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct GraphDef {
    /// The format version ([`GRAPH_VERSION`]).
    pub version: u32,
    /// The parameters the game sets and the conditions and blend spaces read.
    #[cfg_attr(feature = "serde", serde(default))]
    pub parameters: Vec<ParameterDef>,
    /// Layers, bottom first; each runs its own state machine.
    pub layers: Vec<LayerDef>,
}

/// A parameter: its name, type and starting value.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct ParameterDef {
    /// Unique among the graph's parameters.
    pub name: String,
    /// Its type.
    #[cfg_attr(feature = "serde", serde(rename = "type"))]
    pub kind: ParameterKind,
    /// The starting value (default 0, false, unset); its type must match.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub default: Option<Value>,
}

/// A parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum ParameterKind {
    /// A number (blend space positions, speeds, comparisons).
    Float,
    /// A whole number (exact up to ±16 777 216).
    Int,
    /// True or false.
    Bool,
    /// Set by the game, cleared by the first transition that fires on it.
    Trigger,
}

impl std::fmt::Display for ParameterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ParameterKind::Float => "float",
            ParameterKind::Int => "int",
            ParameterKind::Bool => "bool",
            ParameterKind::Trigger => "trigger",
        })
    }
}

/// A literal in a parameter's default or a condition.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(untagged))]
pub enum Value {
    /// `true` / `false`.
    Bool(bool),
    /// A number (an int parameter needs a whole one).
    Number(f64),
}

/// A layer: how it blends over the layers below, and its state machine.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct LayerDef {
    /// The layer's name (for messages and tools).
    pub name: String,
    /// Override (default) or additive; the first layer must override.
    #[cfg_attr(feature = "serde", serde(default))]
    pub blend: BlendMode,
    /// The layer's weight (default 1).
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub weight: f32,
    /// A float parameter that sets the weight every update instead (optional).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub weight_parameter: Option<String>,
    /// The joints the layer affects (none: all).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub mask: Option<MaskDef>,
    /// The layer's state machine.
    pub machine: MachineDef,
}

#[cfg(feature = "serde")]
fn one() -> f32 {
    1.0
}

impl std::fmt::Display for Value {
    /// As written in JSON; numbers beyond a billion in scientific notation, so that a
    /// message stays short.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(x) => write!(f, "{}", Short(*x)),
        }
    }
}

/// A number for a message: plain, or in scientific notation beyond a billion.
pub(crate) struct Short(pub f64);

impl std::fmt::Display for Short {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_finite() && self.0.abs() < 1e9 {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}

/// A joint mask by names: whole sub-trees, single joints, and sub-trees taken out again.
#[derive(Clone, Debug, PartialEq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct MaskDef {
    /// Joints whose whole sub-tree is in the mask.
    #[cfg_attr(feature = "serde", serde(default))]
    pub subtree: Vec<String>,
    /// Single joints in the mask.
    #[cfg_attr(feature = "serde", serde(default))]
    pub joints: Vec<String>,
    /// Sub-trees taken out again.
    #[cfg_attr(feature = "serde", serde(default))]
    pub exclude: Vec<String>,
    /// Morph channels in the mask ([`crate::Skeleton::morph_channel_names`]); a mask covers
    /// no morph channel it does not name, so a body layer leaves the face to the layers below.
    #[cfg_attr(feature = "serde", serde(default))]
    pub morph: Vec<String>,
    /// A dominant layer: the joints (and morph channels) this clip animates, and no others
    /// ([`crate::JointMask::animated_by`]); with it, `subtree`, `joints` and `exclude` stay
    /// empty (`morph` may add channels).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub animated_by: Option<String>,
}

/// A state machine: states, where it starts, and transitions from any state.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct MachineDef {
    /// The state entered when the machine starts (unless an entry transition holds).
    pub entry: String,
    /// Checked in order on entering the machine: the first whose conditions hold picks the
    /// state instead of `entry`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub entry_transitions: Vec<EntryDef>,
    /// Transitions from whatever state is current, checked before the state's own.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub any_state: Vec<TransitionDef>,
    /// The states; names unique within the machine.
    pub states: Vec<StateDef>,
}

/// A conditional entry of a machine.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct EntryDef {
    /// The state entered.
    pub to: String,
    /// All must hold.
    #[cfg_attr(feature = "serde", serde(default))]
    pub conditions: Vec<Condition>,
}

/// A state: what it plays (a motion, or a nested machine), how, and where it can go.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct StateDef {
    /// Unique within its machine.
    pub name: String,
    /// What the state plays (at most one of `motion` and `machine`; with neither the state
    /// is empty: the layer fades out and contributes nothing, as an upper-body layer between
    /// gestures).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub motion: Option<Motion>,
    /// A nested state machine (at most one of `motion` and `machine`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub machine: Option<Box<MachineDef>>,
    /// Playback speed (default 1; negative plays backwards).
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub speed: f32,
    /// A float parameter the speed is multiplied by, every update (optional).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub speed_parameter: Option<String>,
    /// What happens at the motion's end (default: loop).
    #[cfg_attr(feature = "serde", serde(default))]
    pub wrap: Wrap,
    /// A sync group: states in one group keep their phase across transitions (a walk
    /// entered from a run starts where the run's feet are).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub sync: Option<u32>,
    /// Event names fired when the state is entered.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub on_enter: Vec<String>,
    /// Event names fired when the state is left.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub on_exit: Vec<String>,
    /// Transitions out, in priority order (the first that holds fires).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub transitions: Vec<TransitionDef>,
}

impl StateDef {
    /// A state playing `motion` at speed 1, looping, with no transitions.
    pub fn new(name: &str, motion: Motion) -> Self {
        Self {
            name: name.into(),
            motion: Some(motion),
            machine: None,
            speed: 1.0,
            speed_parameter: None,
            wrap: Wrap::Loop,
            sync: None,
            on_enter: Vec::new(),
            on_exit: Vec::new(),
            transitions: Vec::new(),
        }
    }
}

/// What a state or a blend node plays.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case", deny_unknown_fields)
)]
pub enum Motion {
    /// A clip, by name.
    Clip(String),
    /// A 1D blend space.
    #[cfg_attr(feature = "serde", serde(rename = "blend_1d"))]
    Blend1d(Blend1dDef),
    /// A 2D blend space.
    #[cfg_attr(feature = "serde", serde(rename = "blend_2d"))]
    Blend2d(Blend2dDef),
    /// Two motions blended by a weight.
    Lerp(Box<LerpDef>),
    /// A delta on top of a base.
    Additive(Box<AdditiveDef>),
    /// A motion over another on a joint mask.
    Layered(Box<LayeredDef>),
}

/// A 1D blend space: motions placed on one parameter.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct Blend1dDef {
    /// A float or int parameter.
    pub parameter: String,
    /// The motions and their positions (distinct).
    pub children: Vec<Child1d>,
}

/// A motion at a position of a 1D blend space.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct Child1d {
    /// Its position.
    pub at: f32,
    /// The motion.
    pub motion: Motion,
}

/// A 2D blend space: motions placed on a plane of two parameters (velocity x and z for
/// directional locomotion).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct Blend2dDef {
    /// The float or int parameter giving x.
    pub x: String,
    /// The float or int parameter giving y.
    pub y: String,
    /// Directional (default) or cartesian gradient bands.
    #[cfg_attr(feature = "serde", serde(default))]
    pub mode: Space2D,
    /// The motions and their points (distinct).
    pub children: Vec<Child2d>,
}

/// A motion at a point of a 2D blend space.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct Child2d {
    /// Its point.
    pub at: [f32; 2],
    /// The motion.
    pub motion: Motion,
}

/// A weight: a constant, or a float parameter by name.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(untagged))]
pub enum WeightDef {
    /// A fixed weight.
    Const(f32),
    /// A float parameter's name.
    Parameter(String),
}

#[cfg(feature = "serde")]
fn full() -> WeightDef {
    WeightDef::Const(1.0)
}

/// `a` and `b` blended by `weight` (0 is `a`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct LerpDef {
    /// At weight 0.
    pub a: Motion,
    /// At weight 1.
    pub b: Motion,
    /// 0..=1.
    pub weight: WeightDef,
}

/// `add` (an additive clip: a delta from its first frame, see [`crate::make_additive`])
/// on top of `base` by `weight`.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct AdditiveDef {
    /// The pose underneath.
    pub base: Motion,
    /// The delta.
    pub add: Motion,
    /// -1..=1 (default 1).
    #[cfg_attr(feature = "serde", serde(default = "full"))]
    pub weight: WeightDef,
}

/// `overlay` over `base` on the joints of `mask`, by `weight`.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct LayeredDef {
    /// The pose underneath.
    pub base: Motion,
    /// The pose on top.
    pub overlay: Motion,
    /// Where the overlay applies (none: everywhere).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub mask: Option<MaskDef>,
    /// 0..=1 (default 1).
    #[cfg_attr(feature = "serde", serde(default = "full"))]
    pub weight: WeightDef,
}

/// How a transition blends from the old state to the new.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum TransitionKind {
    /// Both play while the weights cross over `duration` with `curve`.
    #[default]
    Crossfade,
    /// The new state plays alone at once; the pose difference decays over `duration`.
    Inertial,
}

/// Which transitions may interrupt a transition under way (Unity's "interruption source").
/// Any-state transitions may always interrupt, except towards the running transition's
/// own target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Interruption {
    /// None: the transition runs to its end.
    #[default]
    None,
    /// The transitions of the state it comes from.
    Source,
    /// The transitions of the state it goes to.
    Destination,
    /// The source's, then the destination's.
    SourceThenDestination,
    /// The destination's, then the source's.
    DestinationThenSource,
}

/// A transition to another state of the same machine (or `"exit"`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields)
)]
pub struct TransitionDef {
    /// A state of the same machine, or `"exit"`: leave the machine (a nested machine hands
    /// over to its parent state's transitions; the top machine starts again at its entry).
    pub to: String,
    /// All must hold (none: always).
    #[cfg_attr(feature = "serde", serde(default))]
    pub conditions: Vec<Condition>,
    /// Cycles of the state played since it was entered (0.75: three quarters of the first
    /// cycle; 2: two cycles) before the transition may fire; none: at any time.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub exit_time: Option<f32>,
    /// Seconds (0: at once).
    #[cfg_attr(feature = "serde", serde(default))]
    pub duration: f32,
    /// The cross-fade's shape (default smoothstep).
    #[cfg_attr(feature = "serde", serde(default))]
    pub curve: Curve,
    /// Cross-fade (default) or inertial.
    #[cfg_attr(feature = "serde", serde(default))]
    pub kind: TransitionKind,
    /// Which transitions may interrupt this one while it runs.
    #[cfg_attr(feature = "serde", serde(default))]
    pub interruption: Interruption,
    /// With a source interruption, only the source's transitions listed before this one
    /// may interrupt it (default true, as Unity's "ordered interruption").
    #[cfg_attr(feature = "serde", serde(default = "yes"))]
    pub ordered: bool,
    /// For any-state transitions: may fire while already in the target state, restarting
    /// it (default false).
    #[cfg_attr(feature = "serde", serde(default))]
    pub to_self: bool,
    /// For transitions of a state that holds a machine: checked only when that machine
    /// takes a transition to `"exit"` (Unity's sub-state machines), not every update
    /// (default false: checked every update too, before the inner states' own, as Unreal's
    /// nested machines).
    #[cfg_attr(feature = "serde", serde(default))]
    pub after_exit: bool,
}

#[cfg(feature = "serde")]
fn yes() -> bool {
    true
}

impl TransitionDef {
    /// A transition to `to` with no conditions, exit time or duration.
    pub fn to(to: &str) -> Self {
        Self {
            to: to.into(),
            conditions: Vec::new(),
            exit_time: None,
            duration: 0.0,
            curve: Curve::SmoothStep,
            kind: TransitionKind::Crossfade,
            interruption: Interruption::None,
            ordered: true,
            to_self: false,
            after_exit: false,
        }
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum CompareOp {
    /// `>`
    #[cfg_attr(feature = "serde", serde(rename = ">"))]
    Greater,
    /// `>=`
    #[cfg_attr(feature = "serde", serde(rename = ">="))]
    GreaterOrEqual,
    /// `<`
    #[cfg_attr(feature = "serde", serde(rename = "<"))]
    Less,
    /// `<=`
    #[cfg_attr(feature = "serde", serde(rename = "<="))]
    LessOrEqual,
    /// `==`
    #[cfg_attr(feature = "serde", serde(rename = "=="))]
    Equal,
    /// `!=`
    #[cfg_attr(feature = "serde", serde(rename = "!="))]
    NotEqual,
}

/// A condition on parameters. In JSON: `{"param": "speed", "op": ">", "value": 1.5}`,
/// `{"param": "jump"}` (a trigger that is set, or a bool that is true), `{"all": [..]}`,
/// `{"any": [..]}`, `{"not": {..}}`.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(untagged, deny_unknown_fields)
)]
pub enum Condition {
    /// A float or int parameter compared with a number, or a bool with `==`/`!=` and a bool.
    Compare {
        /// The parameter's name.
        param: String,
        /// The comparison.
        op: CompareOp,
        /// The literal.
        value: Value,
    },
    /// A trigger that is set, or a bool that is true.
    Is {
        /// The parameter's name.
        param: String,
    },
    /// Every one holds.
    All {
        /// The conditions.
        all: Vec<Condition>,
    },
    /// At least one holds.
    Any {
        /// The conditions.
        any: Vec<Condition>,
    },
    /// It does not hold.
    Not {
        /// The condition.
        not: Box<Condition>,
    },
}

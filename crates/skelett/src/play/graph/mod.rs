//! Animation graphs: the logic of a character's animation described as data (Unity's
//! Animator Controller, Unreal's state machines and blend spaces, Godot's AnimationTree)
//! instead of `play`/`crossfade` calls in game code.
//!
//! ```text
//! GraphDef (JSON, or code) ──Graph::build(skeleton, clips)──▶ Graph (Arc, shared, checked)
//!                                                                │
//! per character:  GraphInstance::new(graph) ─ set_float / set_bool / set_trigger ─▶ update(dt)
//!   transitions (conditions, exit times, interruptions) ─▶ Animator (layers, cross-fades,
//!   sync groups, clip events, root motion) ─▶ pose, events, state events, transitions taken
//! ```
//!
//! | file | what |
//! |---|---|
//! | `def.rs` | the definition: parameters, layers, machines, states, motions, transitions, conditions; the JSON format through the `serde` feature |
//! | `build.rs` | validation with JSON paths ([`GraphError`]), resolution into a [`Graph`] |
//! | `instance.rs` | one character's run: parameters, current states, transitions under way ([`GraphInstance`]) |
//!
//! Blend spaces and trees are played by the animator's [`BlendTree`](crate::animator::BlendTree)
//! (`play/animator/tree.rs`); clips by its players. The graph adds the state machines on
//! top, and nothing per frame that allocates.
//!
//! # Semantics
//! - **Parameters**: float, int, bool, trigger. A trigger stays set until a transition
//!   fires on it (or [`GraphInstance::reset_trigger`]).
//! - **Transitions** are checked at the start of each update, against the parameters as
//!   set and the states' times reached by the last update, level by level from the layer's
//!   machine down: each machine's any-state transitions (never to the current state unless
//!   `to_self`), then the enclosing state's own (those not marked `after_exit`), and last the
//!   current state's, each list in the order written; the first whose conditions all hold and whose exit time (cycles
//!   played in the state since it was entered) has passed fires and consumes the triggers
//!   its conditions read. An instant transition (duration 0) lets the new state's
//!   transitions be checked in the same update (at most
//!   [`MAX_TRANSITIONS_PER_UPDATE`] per layer; cycles of instant transitions in a machine
//!   are refused when the graph is built).
//! - **Interruption**: while a transition runs, only any-state transitions (not to its own
//!   target) and those its [`Interruption`] names may fire: the source state's (with
//!   `ordered`, only those listed before the running one), the destination's, or both in
//!   either order. The new transition fades everything playing on the layer out from its
//!   current weight, so nothing pops.
//! - **Nested machines**: entering a state that holds a machine enters that machine's entry
//!   (or the first entry transition that holds). The enclosing state's transitions are
//!   checked every update (as Unreal's nested machines), except those marked `after_exit`.
//!   A transition to `"exit"` leaves the machine: the enclosing state's transitions, all of
//!   them, are checked (the first that holds fires), or else the machine starts again at its
//!   entry (as Unity's sub-state machines); a layer's machine starts again at its entry.
//!   Exit times of enclosing states' transitions count the current inner state's cycles.
//! - **Events**: a state's `on_enter` and `on_exit` names fire as [`StateEvent`]s (states
//!   left inner first, then states entered outer first); clip events fire exactly once as
//!   the animator fires them.
//! - **Determinism**: an update depends only on the graph, the parameters and `dt`; the
//!   same inputs give bit-identical poses.

mod build;
mod def;
mod instance;

pub use build::{Graph, GraphError, GraphProblem, Parameter, ParameterId, StateId, MAX_DEPTH};
pub use def::*;
pub use instance::{
    GraphInstance, GraphUpdate, StateEvent, StateEventKind, TakenTransition, TransitionProgress,
    MAX_TRANSITIONS_PER_UPDATE,
};

//! Playing assets, per character and per frame, with no allocation: sampling clips into
//! local poses (every key interpolation: `sampling/`), blending poses (`pose.rs`), the
//! animator that drives both (`animator/`), local-to-model and skinning palettes
//! (`hierarchy.rs`), inverse kinematics on the blended pose (`ik/`), and CPU skinning
//! (`skin/`).
//!
//! ```text
//! Animator::update ─▶ sample (keyed.rs | compact.rs) ─▶ blend / override / additive
//!   ─▶ local_to_model ─▶ ik (two_bone, aim) ─▶ local_to_model ─▶ skinning_palette ─▶ skin
//! ```
//!
//! `crowd.rs` prefetches the next character's memory while a crowd is updated in turn.
//! `graph/` puts data-driven state machines on top of the animator; `morph/` applies morph
//! targets (blend shapes) to the bind pose before skinning, weighted by the morph-weight
//! tracks that sampling and the animator carry beside the joints.

pub mod animator;
pub mod crowd;
pub mod graph;
pub mod hierarchy;
pub mod ik;
pub mod morph;
pub mod pose;
pub mod sampling;
mod simd;
pub mod skin;

//! # skelett: a skeletal animation runtime
//!
//! The runtime core: skeletons, clips, sampling, hierarchy and skinning data. No file I/O
//! (see `skelett-io`), no GPU. Everything per-frame is a stateless function over borrowed
//! slices; assets are immutable and shared with `Arc` by any number of characters.
//!
//! ```text
//! importer ──▶ RawSkeleton ──build()──▶ Skeleton ─────────────┐ (Arc, shared)
//!          ──▶ RawClip ─────build(&skeleton)──▶ Clip ──────────┤
//!                                                              ▼
//! per character, per frame:   sample(&clip, t, &mut SamplingCache, &mut Pose)   local SRT
//!                             local_to_model(&skeleton, &pose, 0, &mut model)   model matrices
//!                             skinning_palette(&skin, &model, &mut palette)     skinning
//! ```
//!
//! ## Where things live
//!
//! The source folders follow the data flow, in the manner of ozz-animation's `offline/` and
//! `runtime/`; the public paths are the modules re-exported at the crate root
//! (`skelett::compress`, `skelett::sampling`, ...), whichever folder they live in.
//!
//! | folder | what | modules |
//! |---|---|---|
//! | `src/` | the assets both sides share, and the math | [`skeleton`], [`clip`] (with its compact storage format), [`mesh`], [`parts`], [`transform`], [`error`] |
//! | `src/build/` | building assets, offline, once per asset | raw clips and [`RawClip::build`] (validation, binding by name), lossless key reduction, [`compress`], [`contacts`] |
//! | `src/play/` | playing assets, per character, per frame, no allocation | [`sampling`] (every key interpolation: keyed and compact), [`pose`] (blending), [`animator`], [`crowd`] (prefetching in crowds), [`graph`], [`hierarchy`], [`ik`], [`morph`] (morph targets), [`skin`](mod@skin) |
//!
//! New capabilities go beside the step they extend: `retarget` in `build/`; `graph` and
//! `morph` in `play/`.
//!
//! ```
//! use skelett::*;
//! use glam::{Mat4, Quat, Vec3};
//!
//! let skeleton = RawSkeleton {
//!     joints: vec![
//!         RawJoint { name: "hip".into(), parent: None, rest: Transform::IDENTITY },
//!         RawJoint { name: "knee".into(), parent: Some(0),
//!                    rest: Transform::new(Vec3::new(0.0, -1.0, 0.0), Quat::IDENTITY, Vec3::ONE) },
//!     ],
//!     ..Default::default()
//! }.build()?;
//! let clip = RawClip {
//!     name: "kick".into(), start: 0.0, duration: 1.0,
//!     channels: vec![RawChannel {
//!         joint: "hip".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
//!         times: vec![0.0, 1.0],
//!         values: RawValues::Quat(vec![Quat::IDENTITY, Quat::from_rotation_x(1.0)]),
//!     }],
//! }.build(&skeleton)?;
//!
//! let mut cache = SamplingCache::for_clip(&clip);
//! let mut pose = Pose::rest(&skeleton);
//! let mut model = vec![Mat4::IDENTITY; skeleton.len()];
//! sample(&clip, 0.5, &mut cache, &mut pose)?;
//! local_to_model(&skeleton, &pose, 0, &mut model)?;
//! let knee = model[1].w_axis.truncate();
//! assert!((knee - Vec3::new(0.0, -0.5f32.cos(), -0.5f32.sin())).length() < 1e-5);
//! # Ok::<(), skelett::Error>(())
//! ```

#![warn(missing_docs)]

mod build;
pub mod clip;
pub mod error;
pub mod mesh;
pub mod parts;
mod play;
pub mod skeleton;
pub mod transform;

pub use build::{compress, contacts, retarget, DEFAULT_CLOSING_INTERVAL};
pub use play::{animator, crowd, graph, hierarchy, ik, morph, pose, sampling, skin};

pub use clip::{
    BuildOptions, BuildReport, ChannelCounts, ChannelValues, ChannelView, Clip, ClipEvent,
    Interpolation, MorphTrackView, RawChannel, RawClip, RawMorphTrack, RawValues, Target,
    UnboundChannels,
};
pub use error::Error;
pub use hierarchy::{
    inverse_bind_matrices, local_to_model, local_to_model_soa, skinning_palette, Skin,
};
pub use mesh::{EncodedImage, MeshPrimitive, MorphTarget, SkinnedMesh};
pub use parts::{ClipParts, CompactParts, TrackPart};
pub use pose::{
    additive_delta, apply_additive, blend, blend_override, blend_soa, make_additive, BlendInput,
    JointMask, Pose, SoaBlendInput, SoaBlock, SoaPose, SOA_LANES,
};
pub use sampling::{
    sample, sample_joint, sample_morph_weights, sample_soa, sample_uncached, RotationInterpolation,
    SamplingCache,
};
pub use skeleton::{
    JointIndex, MorphChannel, RawJoint, RawSkeleton, Skeleton, SkeletonId, MAX_JOINTS,
};
pub use skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
pub use transform::Transform;

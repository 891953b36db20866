//! Building assets, offline and once per asset: what turns imported data into the immutable
//! runtime assets, and analyses of them. Nothing here runs per frame.
//!
//! ```text
//! importer ─▶ RawClip ──raw_clip: validate, bind by name, reduce.rs: lossless key removal──▶ Clip
//!                                   compress: error-bounded compact clip (ACL's metric) ──▶ Clip
//!             contacts: footstep events from the feet's heights (analysis of a built clip)
//! ```
//!
//! Planned here: `retarget` (a clip for another skeleton). The raw skeleton's builder is in
//! `skeleton.rs` beside the [`crate::Skeleton`] it builds.

pub mod compress;
pub mod contacts;
mod derived;
pub use derived::DEFAULT_CLOSING_INTERVAL;
pub(crate) mod raw_clip;
pub(crate) mod reduce;
pub mod retarget;

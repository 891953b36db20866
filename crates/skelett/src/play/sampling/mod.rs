//! Sampling: a clip at a time, into a pose of local joint transforms.
//!
//! ```text
//! Clip (shared) ──┐
//! time ───────────┼─▶ sample() ──▶ &mut [Transform] (one per joint, local SRT)
//! SamplingCache ──┘      (per character: one key cursor per timeline of the clip)
//! ```
//!
//! [`sample`] first copies the clip's base pose (rest pose plus constant channels) for the
//! joints some component of which no channel animates, then
//! evaluates every animated channel, one tight loop per kind of channel (LINEAR rotations four
//! at a time with SIMD slerp weights, LINEAR translations, LINEAR scales, then STEP and
//! CUBICSPLINE). Finding the two keys around the time is amortised O(1) per channel: the
//! [`SamplingCache`] keeps each channel's current segment with its time range and reciprocal
//! length, so a sample inside it needs neither a search nor a division; playback forwards or
//! backwards moves it by a step or two, and a jump further than a few keys falls back to a
//! binary search. Before a channel's first key its first value holds, after its last key its
//! last value.
//!
//! Morph-target weights, the scalar tracks a clip may animate beside its joints, are sampled
//! by [`sample_morph_weights`] (`morph.rs`).
//!
//! On x86-64 CPUs with AVX (without the `scalar` feature) a keyed clip's LINEAR tracks are
//! sampled eight at a time from its lanes (`lanes.rs`; the layout is `clip/lanes.rs`): every
//! LINEAR track on the union of their key times, so one cursor finds the segment for all of
//! them; the results agree with the per-track loops here to rounding.
//!
//! Where the parts live: the cursors, the LINEAR loops and the one place where keyed and
//! compact clips part ways (`dispatch`) here; STEP and cubic keys and slerp (`keyed.rs`);
//! the decoder of compact clips (`compact.rs`, the bit format it reads is in
//! `clip/compact.rs`) and its eight-track interpolation (`compact_avx.rs`); the seekable
//! layout's stateless reader (`compact_seek.rs`).

pub(crate) mod compact;
mod compact_avx;
pub(crate) mod compact_lanes;
pub(crate) mod compact_seek;
mod compact_seek_avx;
mod keyed;
mod lanes;
mod morph;

pub use morph::sample_morph_weights;

use glam::{Quat, Vec4};

use crate::clip::compact::CompactLayout;
use crate::clip::{Keys, Storage, Track};
use crate::error::check_len;
use crate::pose::SoaPose;
use crate::{Clip, Error, Transform};

/// Where a timeline (the key times shared by one or more channels) was last sampled: its key
/// segment and the times over which that applies, so that the next sample inside it needs
/// neither a search nor a division.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    /// The segment applies for `lo <= t < hi` (open-ended before the first and after the
    /// last key). A fresh cursor has `lo > hi`: it applies nowhere.
    lo: f32,
    hi: f32,
    /// Times of the segment's keys, and the reciprocal of its length.
    t0: f32,
    t1: f32,
    inv_dt: f32,
    /// The segment's first key.
    k: u32,
}

impl Default for Cursor {
    fn default() -> Self {
        Self {
            lo: f32::INFINITY,
            hi: f32::NEG_INFINITY,
            t0: 0.0,
            t1: 0.0,
            inv_dt: 0.0,
            k: 0,
        }
    }
}

impl Cursor {
    /// Moves to the segment of `times` holding `t` (searching from the current one only when
    /// `t` left it) and returns (segment, position 0..=1 within it).
    #[inline(always)]
    fn locate(&mut self, times: &[f32], t: f32) -> (u32, f32) {
        if !(t >= self.lo && t < self.hi) {
            let k = find_segment(times, self.k as usize, t);
            self.set(times, k);
        }
        (self.k, unit(t, self.t0, self.t1, self.inv_dt))
    }

    #[inline(always)]
    fn set(&mut self, times: &[f32], k: usize) {
        let last = times.len() - 2;
        self.k = k as u32;
        self.t0 = times[k];
        self.t1 = times[k + 1];
        self.inv_dt = (1.0 / (times[k + 1] - times[k])).min(f32::MAX);
        self.lo = if k == 0 { f32::NEG_INFINITY } else { times[k] };
        self.hi = if k == last {
            f32::INFINITY
        } else {
            times[k + 1]
        };
    }
}

/// A NaN time samples as before the first key (every path the same way).
#[inline(always)]
fn not_nan(t: f32) -> f32 {
    if t.is_nan() {
        f32::NEG_INFINITY
    } else {
        t
    }
}

/// Position within a segment, clamped to 0..=1 (a NaN time gives 0, which `clamp` would
/// not); exactly 1 at and after the segment's second key, whose time times the reciprocal
/// length can round to just below 1 (so that sampling at the last key's time, say a clip's
/// end, gives what holding it gives).
#[inline(always)]
#[allow(clippy::manual_clamp)]
fn unit(t: f32, t0: f32, t1: f32, inv_dt: f32) -> f32 {
    if t >= t1 {
        1.0
    } else {
        ((t - t0) * inv_dt).max(0.0).min(1.0)
    }
}

/// How [`sample`] interpolates LINEAR rotation keys of keyed clips: the per-player choice of
/// speed against accuracy, kept in the player's [`SamplingCache`].
///
/// | | cost | largest error against slerp, keys α apart |
/// |---|---|---|
/// | [`Slerp`](Self::Slerp) | a sine polynomial per key pair | none: constant angular speed |
/// | [`Nlerp`](Self::Nlerp) | a lerp and a normalisation | 0.0012° at α = 10°, 0.033° at 30°, 0.27° at 60°, 0.92° at 90°, 8.1° at 180° |
///
/// The errors are exact (the largest over the segment of the angle between the two results;
/// a test checks sampled clips against them), the speeds in the README's "Slerp or nlerp"
/// paragraph (`cargo bench -p skelett --bench runtime -- sample_forward`: `sample_forward_60hz` and
/// `sample_forward_60hz_nlerp` in one run).
///
/// Nlerp follows the same shortest path and hits every key exactly; between keys it runs
/// slightly ahead of slerp's constant speed, then behind. Keys sampled from motion capture or
/// baked at 30 fps or more are rarely more than a few degrees apart, where the two differ by
/// less than a thousandth of a degree; ozz-animation nlerps always. Compact (compressed)
/// clips ignore the choice: their encoder already picked nlerp per track wherever the
/// measured error allowed it ([`crate::compress`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RotationInterpolation {
    /// Spherical linear interpolation: constant angular speed between keys (glTF's LINEAR,
    /// what three.js, Blender and assimp evaluate). The default.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "slerp"))]
    Slerp,
    /// Normalised linear interpolation: cheaper, the same path, slightly uneven speed.
    #[cfg_attr(feature = "serde", serde(rename = "nlerp"))]
    Nlerp,
}

impl std::str::FromStr for RotationInterpolation {
    type Err = String;

    /// `"slerp"` or `"nlerp"`, as play scripts and the Python package name them.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "slerp" => Ok(Self::Slerp),
            "nlerp" => Ok(Self::Nlerp),
            other => Err(format!("unknown rotation {other:?} (slerp, nlerp)")),
        }
    }
}

/// Per-character sampling state: where each timeline of a clip was last sampled, and how
/// this player interpolates rotations ([`RotationInterpolation`]).
///
/// A cache follows one clip at a time: used with another clip, it resets itself (and grows
/// if that clip has more timelines, the only allocation sampling ever makes). Keep one cache
/// per playing clip to keep every cursor warm.
#[derive(Clone, Debug, Default)]
pub struct SamplingCache {
    clip: u64,
    rotation: RotationInterpolation,
    cursors: Vec<Cursor>,
    /// The cursor on a keyed clip's union timeline (its lanes: `clip/lanes.rs`).
    union: Cursor,
    /// This sample's (segment, position) per timeline.
    at: Vec<(u32, f32)>,
    /// For compact clips: decoded keys and decoders per track.
    compact: compact::CompactCache,
    /// For compact clips in the lanes layout: the key the last sample read from.
    lanes_key: u32,
}

impl SamplingCache {
    /// A cache sized for `clip`, so that sampling it never allocates.
    pub fn for_clip(clip: &Clip) -> Self {
        let mut c = Self::default();
        c.bind(clip);
        c
    }

    /// Notes the heap blocks a sample reads and writes (for [`crate::crowd`]'s prefetching):
    /// the per-timeline cursors where the clip has any ([`SamplingCache::rebind`] keeps none
    /// for a clip sampled on its lanes alone).
    #[inline(always)]
    pub(crate) fn note_blocks(&self, r: &mut crate::play::crowd::Regions) {
        r.push(&self.cursors);
        r.push(&self.at);
        // Streamed compact clips only (`bind` empties their cursors for other clips).
        if !self.compact.cursors.is_empty() {
            self.compact.note_blocks(r);
        }
    }

    /// The address of the per-timeline positions (tests of the prefetch lists).
    #[cfg(test)]
    pub(crate) fn heap_for_test(&self) -> usize {
        self.at.as_ptr() as usize
    }

    /// Forgets all cursors (the next sample searches from the start). The rotation
    /// interpolation stays.
    pub fn invalidate(&mut self) {
        self.clip = 0;
    }

    /// The same cache, sampling rotations with `rotation` from now on.
    ///
    /// ```
    /// # use skelett::*;
    /// # use glam::{Quat, Vec3};
    /// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
    /// # let clip = RawClip { name: "turn".into(), start: 0.0, duration: 1.0, channels: vec![RawChannel {
    /// #     joint: "j".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
    /// #     times: vec![0.0, 1.0],
    /// #     values: RawValues::Quat(vec![Quat::IDENTITY, Quat::from_rotation_y(0.5)]) }] }
    /// #     .build(&skeleton).unwrap();
    /// let mut fast = SamplingCache::for_clip(&clip).with_rotation_interpolation(RotationInterpolation::Nlerp);
    /// let mut pose = Pose::rest(&skeleton);
    /// sample(&clip, 0.25, &mut fast, &mut pose)?;
    /// // Keys 0.5 rad apart: at a quarter of the way nlerp is 4.9e-4 rad from slerp's 0.125.
    /// assert!(pose[0].rotation.angle_between(Quat::from_rotation_y(0.125)) < 1e-3);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn with_rotation_interpolation(mut self, rotation: RotationInterpolation) -> Self {
        self.rotation = rotation;
        self
    }

    /// Sets how this cache's samples interpolate rotations, as
    /// [`SamplingCache::with_rotation_interpolation`] does.
    pub fn set_rotation_interpolation(&mut self, rotation: RotationInterpolation) {
        self.rotation = rotation;
    }

    /// How this cache's samples interpolate rotations.
    pub fn rotation_interpolation(&self) -> RotationInterpolation {
        self.rotation
    }

    /// Makes the cache follow `clip`: as it was where it followed it already (a player's
    /// every sample), reset otherwise ([`SamplingCache::rebind`], out of line).
    #[inline(always)]
    fn bind(&mut self, clip: &Clip) {
        if self.clip != clip.id() {
            self.rebind(clip);
        }
    }

    /// [`SamplingCache::bind`] to a clip the cache did not follow: cursors and keys reset.
    #[cold]
    #[inline(never)]
    fn rebind(&mut self, clip: &Clip) {
        self.clip = clip.id();
        let timelines = match &clip.storage {
            Storage::Keyed(keys) => {
                self.compact.cursors.clear();
                // A sample on the lanes alone reads the union cursor, no per-timeline one:
                // none kept (on CesiumMan 28 cursors and positions, 0.9 KB per cache, that
                // sat unread between the blocks a crowd's update touches).
                if lanes_alone(clip) {
                    0
                } else {
                    keys.timelines.len()
                }
            }
            Storage::Compact(c) => {
                // The seekable layout keeps no state between samples.
                if c.layout == CompactLayout::Stream {
                    self.compact.reset(c);
                } else {
                    self.compact.cursors.clear();
                }
                0
            }
        };
        self.cursors.clear();
        self.cursors.resize(timelines, Cursor::default());
        self.union = Cursor::default();
        self.lanes_key = 0;
        self.at.clear();
        self.at.resize(timelines, (0, 0.0));
    }
}

/// Keys a cursor steps over linearly before it falls back to a binary search.
const LINEAR_STEPS: usize = 3;

/// Finds `k` in `0..n-1` with `times[k] <= t < times[k+1]`, starting from `cursor`; clamps to
/// the first or last segment outside the keys. `times.len() >= 2`.
#[inline(always)]
fn find_segment(times: &[f32], cursor: usize, t: f32) -> usize {
    let last = times.len() - 2;
    let mut k = cursor.min(last);
    if t >= times[k + 1] {
        // Forward.
        let mut steps = 0;
        while k < last && t >= times[k + 1] {
            k += 1;
            steps += 1;
            if steps == LINEAR_STEPS {
                // partition_point over the remaining keys: the first key after t.
                let rest = &times[k + 1..];
                let p = rest.partition_point(|&x| x <= t);
                return (k + p).min(last);
            }
        }
        k
    } else if t < times[k] {
        // Backward.
        let mut steps = 0;
        while k > 0 && t < times[k] {
            k -= 1;
            steps += 1;
            if steps == LINEAR_STEPS {
                let p = times[..=k].partition_point(|&x| x <= t);
                return p.saturating_sub(1);
            }
        }
        k
    } else {
        k
    }
}

/// Samples `clip` at `time` (seconds, in the clip's time base: [`Clip::start`] is its first
/// frame) into `pose`, one local transform per joint.
///
/// Joints without channels get the rest pose; before a channel's first key the first key
/// holds, after its last key the last. Does not allocate once `cache` is sized for the clip
/// ([`SamplingCache::for_clip`]).
///
/// ```
/// # use skelett::*;
/// # use glam::{Quat, Vec3};
/// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
/// # let clip = RawClip { name: "turn".into(), start: 0.0, duration: 1.0, channels: vec![RawChannel {
/// #     joint: "j".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
/// #     times: vec![0.0, 1.0],
/// #     values: RawValues::Quat(vec![Quat::IDENTITY, Quat::from_rotation_y(1.0)]) }] }
/// #     .build(&skeleton).unwrap();
/// let mut cache = SamplingCache::for_clip(&clip);
/// let mut pose = Pose::rest(&skeleton);
/// sample(&clip, 0.5, &mut cache, &mut pose)?;
/// assert!(pose[0].rotation.angle_between(Quat::from_rotation_y(0.5)) < 1e-3);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if `pose` has fewer entries than the clip's skeleton has joints; nothing
/// is written then.
pub fn sample(
    clip: &Clip,
    time: f32,
    cache: &mut SamplingCache,
    pose: &mut [Transform],
) -> Result<(), Error> {
    check_len("pose", clip.joint_count(), pose.len())?;
    let time = not_nan(time);
    cache.bind(clip);
    dispatch(clip, time, Search::Cached(cache), pose);
    Ok(())
}

/// [`sample`] into a pose that holds what an earlier [`sample`] of the same clip wrote (and
/// nothing else has written since): compact clips in the streamed layout write their tracks
/// only, leaving the joints' base values that the earlier sample copied where they are (the
/// compressor's measurement samples each of its poses at thousands of times, and copying
/// the base pose was 1.5 % of a compression); other clips as [`sample`]. The same pose as
/// [`sample`] gives.
pub(crate) fn sample_again(
    clip: &Clip,
    time: f32,
    cache: &mut SamplingCache,
    pose: &mut [Transform],
) -> Result<(), Error> {
    check_len("pose", clip.joint_count(), pose.len())?;
    let time = not_nan(time);
    cache.bind(clip);
    match &clip.storage {
        Storage::Compact(c) if c.layout == CompactLayout::Stream => {
            compact::sample_tracks(c, time - clip.start, &mut cache.compact, pose);
        }
        _ => dispatch(clip, time, Search::Cached(cache), pose),
    }
    Ok(())
}

/// Samples `clip` at `time` without a cache (every channel searches its keys from scratch).
/// Gives exactly the values [`sample`] gives; use it for one-off evaluations.
///
/// # Errors
/// As [`sample`].
pub fn sample_uncached(clip: &Clip, time: f32, pose: &mut [Transform]) -> Result<(), Error> {
    check_len("pose", clip.joint_count(), pose.len())?;
    dispatch(clip, not_nan(time), Search::Fresh, pose);
    Ok(())
}

/// Samples one joint of `clip` at `time` (a binary search per channel of that joint): what
/// [`sample`] would write for it. Root-motion extraction uses it to read the root at loop
/// ends without sampling the whole skeleton.
///
/// # Panics
/// If `joint` is not a joint of the clip's skeleton.
pub fn sample_joint(clip: &Clip, joint: crate::JointIndex, time: f32) -> Transform {
    let mut out = clip.base[joint as usize];
    let pose = std::slice::from_mut(&mut out);
    dispatch(clip, not_nan(time), Search::Joint(joint), pose);
    out
}

/// How a sample finds the keys around its time.
enum Search<'a> {
    /// Through the cursors of a cache bound to the clip; every joint.
    Cached(&'a mut SamplingCache),
    /// By binary search; every joint.
    Fresh,
    /// By binary search, only this joint's channels, into a one-entry `pose`.
    Joint(crate::JointIndex),
}

/// The one place sampling parts ways by how the clip stores its keys: keyed tracks run the
/// grouped loops below, compact tracks the decoder in `compact.rs` (streamed layout) or the
/// stateless reader in `compact_seek.rs` (seekable layout). `time` is not NaN; `pose`
/// is long enough (one entry for [`Search::Joint`]).
#[inline(always)]
fn dispatch(clip: &Clip, time: f32, search: Search<'_>, pose: &mut [Transform]) {
    match (&clip.storage, search) {
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        (Storage::Keyed(keys), search) if !keys.lanes.is_empty() && crate::clip::lanes::used() => {
            // SAFETY: AVX was just detected; the lanes were built from these keys (every
            // constructor and every change of keys rebuilds them); `pose` holds the clip's
            // joints (checked by the public functions) or is the one entry of `Search::Joint`;
            // every segment comes from a cursor or a search over its own timeline.
            // `lanes_follow_the_per_track_path` runs all three searches.
            unsafe { sample_lanes(clip, keys, time, search, pose) };
        }
        (Storage::Keyed(keys), Search::Cached(cache)) => {
            let n = keys.timelines.len();
            for (i, (cursor, at)) in cache.cursors[..n]
                .iter_mut()
                .zip(&mut cache.at[..n])
                .enumerate()
            {
                *at = cursor.locate(keys.timeline_times(i), time);
            }
            let at = &cache.at[..n];
            match cache.rotation {
                RotationInterpolation::Slerp => {
                    sample_with::<false>(clip, keys, time, pose, |tr| at[tr.timeline as usize]);
                }
                RotationInterpolation::Nlerp => {
                    sample_with::<true>(clip, keys, time, pose, |tr| at[tr.timeline as usize]);
                }
            }
        }
        (Storage::Keyed(keys), Search::Fresh) => {
            sample_with::<false>(clip, keys, time, pose, |tr| {
                locate_fresh(keys.track_times(tr), time)
            });
        }
        (Storage::Keyed(keys), Search::Joint(joint)) => {
            for tr in keys.tracks.iter().filter(|t| t.joint == joint) {
                let (k, u) = locate_fresh(keys.track_times(tr), time);
                keys.eval_track(tr, k as usize, u, time, &mut pose[0]);
            }
        }
        (Storage::Compact(c), search) if c.layout == CompactLayout::Lanes => {
            let (only, hint) = match search {
                Search::Joint(joint) => (Some(joint), None),
                Search::Cached(cache) => {
                    copy_static(clip, pose);
                    (None, Some(&mut cache.lanes_key))
                }
                Search::Fresh => {
                    copy_static(clip, pose);
                    (None, None)
                }
            };
            compact_lanes::sample_tracks(c, time - clip.start, only, hint, pose);
        }
        (Storage::Compact(c), search) if c.layout == CompactLayout::Seek => {
            let only = match search {
                Search::Joint(joint) => Some(joint),
                _ => {
                    copy_static(clip, pose);
                    None
                }
            };
            compact_seek::sample_tracks(c, time - clip.start, only, pose);
        }
        (Storage::Compact(c), Search::Cached(cache)) => {
            copy_static(clip, pose);
            compact::sample_tracks(c, time - clip.start, &mut cache.compact, pose);
        }
        (Storage::Compact(c), Search::Fresh) => {
            copy_static(clip, pose);
            compact::sample_tracks_uncached(c, time - clip.start, None, pose);
        }
        (Storage::Compact(c), Search::Joint(joint)) => {
            compact::sample_tracks_uncached(c, time - clip.start, Some(joint), pose);
        }
    }
}

/// [`dispatch`] for a keyed clip with lanes (`lanes.rs`).
///
/// # Safety
/// As `lanes::sample`: AVX, lanes built from `keys`, `pose` long enough.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[inline(always)]
unsafe fn sample_lanes(
    clip: &Clip,
    keys: &Keys,
    time: f32,
    search: Search<'_>,
    pose: &mut [Transform],
) {
    let lanes = &keys.lanes;
    let fresh_block = |b: &crate::clip::lanes::Block| {
        if b.timeline == crate::clip::lanes::UNION {
            locate_fresh(&lanes.times, time)
        } else {
            locate_fresh(keys.timeline_times(b.timeline as usize), time)
        }
    };
    let fresh_track = |tr: &Track| locate_fresh(keys.track_times(tr), time);
    match search {
        Search::Cached(cache) => sample_lanes_cached(clip, keys, time, cache, pose),
        Search::Fresh => {
            lanes::sample::<false, _>(clip, keys, time, fresh_block, fresh_track, pose);
        }
        Search::Joint(joint) => {
            lanes::sample_joint(keys, joint, time, fresh_block, fresh_track, &mut pose[0]);
        }
    }
}

/// [`sample_lanes`] through a cache's cursors, into a slice or a structure-of-arrays pose.
///
/// # Safety
/// As `lanes::sample`: AVX, lanes built from `keys`, `pose` holding the clip's joints.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[inline(always)]
unsafe fn sample_lanes_cached<P: lanes::Out + ?Sized>(
    clip: &Clip,
    keys: &Keys,
    time: f32,
    cache: &mut SamplingCache,
    pose: &mut P,
) {
    let lanes = &keys.lanes;
    // Only the timelines something still follows one at a time, and the union.
    for &i in lanes.timelines.iter() {
        let i = i as usize;
        cache.at[i] = cache.cursors[i].locate(keys.timeline_times(i), time);
    }
    let union = if lanes.times.is_empty() {
        (0, 0.0)
    } else {
        cache.union.locate(&lanes.times, time)
    };
    // One position per timeline, or none for a clip on its lanes alone (`lanes_alone`), whose
    // blocks are all on the union timeline and which has no track outside them.
    let at = &cache.at[..];
    let block_at = |b: &crate::clip::lanes::Block| {
        if b.timeline == crate::clip::lanes::UNION {
            union
        } else {
            at[b.timeline as usize]
        }
    };
    let track_at = |tr: &Track| at[tr.timeline as usize];
    match cache.rotation {
        RotationInterpolation::Slerp => {
            lanes::sample::<false, _>(clip, keys, time, block_at, track_at, pose)
        }
        RotationInterpolation::Nlerp => {
            lanes::sample::<true, _>(clip, keys, time, block_at, track_at, pose)
        }
    }
}

/// [`sample`] into a structure-of-arrays pose ([`SoaPose`], for [`crate::blend_soa`]): the
/// same values, bit for bit, through the same cache.
///
/// A keyed clip on a CPU with AVX writes its blocks of eight tracks straight into the pose's
/// blocks (four or three aligned stores, or masked blends, where a block of tracks is
/// aligned with a block of joints, as dense tracks are; lane by lane otherwise), and a pose
/// sampled again from the same clip keeps the clip's static joints (its base pose where no
/// track writes) instead of writing them again; other clips (compact ones, the `scalar`
/// build) are sampled into a buffer the pose keeps (allocated on its first such sample) and
/// copied over.
///
/// ```
/// # use skelett::*;
/// # let asset_skeleton = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
/// # let clip = RawClip { name: "turn".into(), start: 0.0, duration: 1.0, channels: vec![RawChannel {
/// #     joint: "j".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
/// #     times: vec![0.0, 1.0], values: RawValues::Quat(vec![glam::Quat::IDENTITY,
/// #     glam::Quat::from_rotation_y(0.5)]) }] }.build(&asset_skeleton).unwrap();
/// let mut cache = SamplingCache::for_clip(&clip);
/// let mut soa = SoaPose::rest(&asset_skeleton);
/// sample_soa(&clip, 0.5, &mut cache, &mut soa)?;
/// let mut pose = Pose::rest(&asset_skeleton);
/// sample(&clip, 0.5, &mut cache, &mut pose)?;
/// assert_eq!(soa.get(0), pose[0]);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if `pose` has fewer joints than the clip's skeleton; nothing is
/// written then.
pub fn sample_soa(
    clip: &Clip,
    time: f32,
    cache: &mut SamplingCache,
    pose: &mut SoaPose,
) -> Result<(), Error> {
    check_len("pose", clip.joint_count(), pose.len())?;
    let time = not_nan(time);
    cache.bind(clip);
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if let (true, Storage::Keyed(keys)) = (writes_blocks(clip), &clip.storage) {
        let (blocks, statics) = pose.blocks_for(clip.id);
        let out = &mut lanes::SoaOut { blocks, statics };
        // SAFETY: as in `dispatch`: AVX was detected (`writes_blocks`), the lanes were built
        // from these keys, and the pose's blocks hold the clip's joints (checked above).
        // `soa_samples_are_the_slice_samples` runs it.
        unsafe { sample_lanes_cached(clip, keys, time, cache, out) };
        return Ok(());
    }
    let mut staging = pose.take_staging(clip.joint_count());
    dispatch(clip, time, Search::Cached(cache), &mut staging);
    crate::play::pose::fill_blocks(pose.blocks_for(clip.id).0, &staging);
    pose.put_staging(staging);
    Ok(())
}

/// Whether a sample of `clip` runs on its lanes alone: a keyed clip whose tracks all lie in
/// blocks on the union timeline (no timeline followed one track at a time: no leftover,
/// STEP or CUBICSPLINE track, no block on a timeline of its own), on a CPU whose samples
/// take the lanes. Such a sample reads the cache's union cursor, not its per-timeline ones
/// (most glTF clips: CesiumMan's, Fox's).
#[inline(always)]
fn lanes_alone(clip: &Clip) -> bool {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if let Storage::Keyed(keys) = &clip.storage {
        return !keys.lanes.is_empty()
            && keys.lanes.timelines.is_empty()
            && crate::clip::lanes::used();
    }
    let _ = clip;
    false
}

/// Whether [`sample_soa`] writes `clip` straight into a pose's blocks (a keyed clip on a CPU
/// with AVX), not through the pose's staging buffer: the animator samples other clips as
/// rows itself, into a buffer it already has.
pub(crate) fn writes_blocks(clip: &Clip) -> bool {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if let Storage::Keyed(keys) = &clip.storage {
        return !keys.lanes.is_empty() && crate::clip::lanes::used();
    }
    let _ = clip;
    false
}

/// The segment of `times` holding `time` and the position in it, by binary search (what a
/// cursor arriving there computes, bit for bit).
#[inline(always)]
fn locate_fresh(times: &[f32], time: f32) -> (u32, f32) {
    let k = times
        .partition_point(|&x| x <= time)
        .saturating_sub(1)
        .min(times.len() - 2);
    let mut c = Cursor::default();
    c.set(times, k);
    (c.k, unit(time, c.t0, c.t1, c.inv_dt))
}

/// Copies the base pose into the joints some component of which no track writes.
#[inline(always)]
fn copy_static(clip: &Clip, pose: &mut [Transform]) {
    let pose = &mut pose[..clip.joint_count()];
    if clip.static_joints.len() == pose.len() {
        pose.copy_from_slice(&clip.base);
    } else {
        // Joints every component of which a track writes need no base.
        for &j in clip.static_joints.iter() {
            pose[j as usize] = clip.base[j as usize];
        }
    }
}

/// The sampling loops, one per track group; `at(track)` gives the track's key segment and
/// position in it. `NLERP` picks [`RotationInterpolation::Nlerp`] for LINEAR rotations (a
/// constant, so each choice compiles to its own loop without a branch per key).
#[inline(always)]
fn sample_with<const NLERP: bool>(
    clip: &Clip,
    keys: &Keys,
    time: f32,
    pose: &mut [Transform],
    at: impl Fn(&Track) -> (u32, f32),
) {
    copy_static(clip, pose);
    let pose = &mut pose[..clip.joint_count()];
    let [rot_end, trans_end, scale_end] = keys.groups;
    let tracks = &keys.tracks[..];

    let rot = &tracks[..rot_end];
    if NLERP {
        // LINEAR rotations by nlerp, four at a time: the four lengths in one SIMD pass. Keys
        // of a segment are stored in the same hemisphere.
        let mut chunks = rot.chunks_exact(4);
        for chunk in &mut chunks {
            let mut q = [Vec4::ZERO; 4];
            let mut len2 = [0f32; 4];
            for lane in 0..4 {
                let tr = &chunk[lane];
                let (k, u) = at(tr);
                let v = tr.value_start as usize + k as usize;
                q[lane] = Vec4::from(keys.quats[v]).lerp(Vec4::from(keys.quats[v + 1]), u);
                len2[lane] = (q[lane] * NLERP_SCALE).length_squared();
            }
            let inv = Vec4::splat(NLERP_SCALE) / Vec4::from_array(len2.map(f32::sqrt));
            for lane in 0..4 {
                pose[chunk[lane].joint as usize].rotation = Quat::from_vec4(q[lane] * inv[lane]);
            }
        }
        for tr in chunks.remainder() {
            let (k, u) = at(tr);
            let v = tr.value_start as usize + k as usize;
            pose[tr.joint as usize].rotation = nlerp_aligned(keys.quats[v], keys.quats[v + 1], u);
        }
    }
    // LINEAR rotations, four at a time: the slerp weights of four tracks in one SIMD pass.
    let rot = if NLERP { &rot[..0] } else { rot };
    let mut chunks = rot.chunks_exact(4);
    for chunk in &mut chunks {
        let mut v = [0usize; 4];
        let mut u = [0f32; 4];
        let mut angle = [0f32; 4];
        let mut inv_sin = [0f32; 4];
        for lane in 0..4 {
            let tr = &chunk[lane];
            let (k, ul) = at(tr);
            v[lane] = tr.value_start as usize + k as usize;
            let seg = keys.slerp[v[lane]];
            u[lane] = ul;
            angle[lane] = seg.angle;
            inv_sin[lane] = seg.inv_sin;
        }
        let u = Vec4::from_array(u);
        let angle = Vec4::from_array(angle);
        let inv_sin = Vec4::from_array(inv_sin);
        let w0 = sin4((Vec4::ONE - u) * angle) * inv_sin;
        let w1 = sin4(u * angle) * inv_sin;
        for lane in 0..4 {
            let a = Vec4::from(keys.quats[v[lane]]);
            let b = Vec4::from(keys.quats[v[lane] + 1]);
            pose[chunk[lane].joint as usize].rotation =
                Quat::from_vec4(a * w0[lane] + b * w1[lane]);
        }
    }
    for tr in chunks.remainder() {
        let (k, u) = at(tr);
        let v = tr.value_start as usize + k as usize;
        pose[tr.joint as usize].rotation =
            keyed::slerp_weights_apply(keys.quats[v], keys.quats[v + 1], keys.slerp[v], u);
    }
    // LINEAR translations and scales.
    for tr in &tracks[rot_end..trans_end] {
        let (k, u) = at(tr);
        let v = tr.value_start as usize + k as usize;
        pose[tr.joint as usize].translation = keys.vec3s[v].lerp(keys.vec3s[v + 1], u).into();
    }
    for tr in &tracks[trans_end..scale_end] {
        let (k, u) = at(tr);
        let v = tr.value_start as usize + k as usize;
        pose[tr.joint as usize].scale = keys.vec3s[v].lerp(keys.vec3s[v + 1], u).into();
    }
    // STEP and CUBICSPLINE tracks of any target.
    for tr in &tracks[scale_end..] {
        let (k, u) = at(tr);
        keys.eval_track(tr, k as usize, u, time, &mut pose[tr.joint as usize]);
    }
}

/// Nlerp's length is taken of the quaternion scaled by 2^60: components of 1e-20, which
/// exporters write for zero, would square to subnormal floats that cost the CPU a hundred
/// cycles each (Fox's Run clip sampled 2.2 times slower than with slerp). Scaled, they square
/// to about 1e-4, and unit components to at most 2^122, far from overflow. Scaling by a power
/// of two is exact, so the result equals the unscaled formula's bit for bit.
const NLERP_SCALE: f32 = (1u64 << 60) as f32;

/// Nlerp between keys already in the same hemisphere (a built clip stores them so).
#[inline(always)]
pub(crate) fn nlerp_aligned(a: Quat, b: Quat, u: f32) -> Quat {
    let v = Vec4::from(a).lerp(Vec4::from(b), u);
    Quat::from_vec4(v * (NLERP_SCALE / (v * NLERP_SCALE).length_squared().sqrt()))
}

/// [`crate::transform::sin_0_half_pi`] on four lanes: the same operations in the same order,
/// so each lane equals the scalar result bit for bit.
#[inline(always)]
fn sin4(x: Vec4) -> Vec4 {
    use crate::transform::SIN_COEF as C;
    let x2 = x * x;
    let one = Vec4::ONE;
    x * (one
        - x2 * C[0] * (one - x2 * C[1] * (one - x2 * C[2] * (one - x2 * C[3] * (one - x2 * C[4])))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn four_lane_sine_equals_the_scalar_one_bit_for_bit() {
        for i in 0..=4000 {
            let x = i as f32 / 4000.0 * std::f32::consts::FRAC_PI_2;
            let v = sin4(Vec4::new(x, x * 0.5, x * 0.25, x * 0.75));
            for (lane, k) in [1.0f32, 0.5, 0.25, 0.75].iter().enumerate() {
                assert_eq!(
                    v[lane].to_bits(),
                    crate::transform::sin_0_half_pi(x * k).to_bits()
                );
            }
        }
    }

    #[test]
    fn find_segment_matches_binary_search() {
        let times: Vec<f32> = (0..50).map(|i| i as f32 * 0.5).collect();
        let truth = |t: f32| {
            times
                .partition_point(|&x| x <= t)
                .saturating_sub(1)
                .min(times.len() - 2)
        };
        for cursor in [0, 1, 5, 24, 47, 48, 100] {
            for i in -10..120 {
                let t = i as f32 * 0.23;
                assert_eq!(
                    find_segment(&times, cursor, t),
                    truth(t),
                    "cursor {cursor}, t {t}"
                );
            }
        }
    }

    /// A one-joint clip turning by `angle` radians about `axis` from `from` over one second.
    fn turn(from: Quat, axis: glam::Vec3, angle: f32) -> (crate::Skeleton, Clip) {
        use crate::{Interpolation, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues};
        let skeleton = RawSkeleton {
            joints: vec![RawJoint {
                name: "j".into(),
                parent: None,
                rest: Transform::IDENTITY,
            }],
            ..Default::default()
        }
        .build()
        .unwrap();
        let to = Quat::from_axis_angle(axis, angle) * from;
        let clip = RawClip {
            name: "turn".into(),
            start: 0.0,
            duration: 1.0,
            channels: vec![RawChannel {
                joint: "j".into(),
                target: crate::Target::Rotation,
                interpolation: Interpolation::Linear,
                times: vec![0.0, 1.0],
                values: RawValues::Quat(vec![from, to]),
            }],
        }
        .build(&skeleton)
        .unwrap();
        (skeleton, clip)
    }

    proptest! {
        /// Nlerp is where the formula for a normalised chord puts it: the angle from the first
        /// key is `2 atan2(u sin Ω, 1 - u + u cos Ω)` (Ω half the turn), in f64; so its gap to
        /// slerp is exactly the error the docs' table gives. Keys hit exactly, unit length.
        #[test]
        fn nlerp_follows_the_chord_formula(
            (ax, ay, az) in (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0),
            angle in 0.01f32..3.1,
            u in 0.0f32..=1.0,
            from_angle in 0.0f32..6.0,
        ) {
            let axis = glam::Vec3::new(ax, ay, az);
            prop_assume!(axis.length() > 0.1);
            let axis = axis.normalize();
            let from = Quat::from_rotation_x(from_angle);
            let (skeleton, clip) = turn(from, axis, angle);
            let mut nl = SamplingCache::for_clip(&clip)
                .with_rotation_interpolation(RotationInterpolation::Nlerp);
            let mut sl = SamplingCache::for_clip(&clip);
            let mut pn = crate::Pose::rest(&skeleton);
            let mut ps = crate::Pose::rest(&skeleton);
            sample(&clip, u, &mut nl, &mut pn).unwrap();
            sample(&clip, u, &mut sl, &mut ps).unwrap();
            let q = pn[0].rotation;
            prop_assert!((q.length() - 1.0).abs() < 1e-5);
            let half = angle as f64 / 2.0;
            let u64 = u as f64;
            let expect = 2.0 * (u64 * half.sin()).atan2(1.0 - u64 + u64 * half.cos());
            let got = from.angle_between(q) as f64;
            prop_assert!((got - expect).abs() < 2e-3, "{got} vs {expect}");
            // Slerp's gap to nlerp is the formula's gap to u * angle.
            let gap = ps[0].rotation.angle_between(q) as f64;
            prop_assert!((gap - (expect - u64 * angle as f64).abs()).abs() < 2e-3);
        }
    }

    #[test]
    fn nlerp_is_exact_at_keys_and_differs_between_them() {
        let (skeleton, clip) = turn(Quat::IDENTITY, glam::Vec3::Y, 1.5);
        let mut nl =
            SamplingCache::default().with_rotation_interpolation(RotationInterpolation::Nlerp);
        let mut sl = SamplingCache::default();
        let mut a = crate::Pose::rest(&skeleton);
        let mut b = crate::Pose::rest(&skeleton);
        for t in [0.0, 1.0] {
            sample(&clip, t, &mut nl, &mut a).unwrap();
            sample(&clip, t, &mut sl, &mut b).unwrap();
            assert!(a[0].rotation.angle_between(b[0].rotation) < 1e-4);
        }
        sample(&clip, 0.25, &mut nl, &mut a).unwrap();
        sample(&clip, 0.25, &mut sl, &mut b).unwrap();
        // 86 degrees apart: nlerp trails slerp by 0.78 degrees at u = 0.25.
        let gap = a[0].rotation.angle_between(b[0].rotation).to_degrees();
        assert!(gap > 0.5 && gap < 0.9, "{gap}");
        // The choice survives invalidation.
        nl.invalidate();
        assert_eq!(nl.rotation_interpolation(), RotationInterpolation::Nlerp);
    }

    proptest! {
        #[test]
        fn find_segment_any_cursor_any_time(
            mut times in proptest::collection::vec(-100.0f32..100.0, 2..40),
            cursor in 0usize..50,
            t in -150.0f32..150.0,
        ) {
            times.sort_by(f32::total_cmp);
            times.dedup();
            prop_assume!(times.len() >= 2);
            let truth = times.partition_point(|&x| x <= t).saturating_sub(1).min(times.len() - 2);
            prop_assert_eq!(find_segment(&times, cursor, t), truth);
        }
    }
}

//! Animation clips: editable [`RawClip`]s from importers, immutable [`Clip`]s for playback.
//!
//! A clip animates joints through *channels*: the translation, rotation or scale of one joint,
//! each with its own key times and interpolation ([`Interpolation::Step`], [`Interpolation::Linear`]
//! or glTF's [`Interpolation::CubicSpline`] with in/out tangents). Importers produce a
//! [`RawClip`] whose channels name their joint; [`RawClip::build`] validates it, binds every
//! channel to a joint of a [`Skeleton`] by name, removes redundant keys losslessly and lays the
//! keys out for [`crate::sample`]:
//!
//! ```text
//! RawClip { channels: [joint name, target, interpolation, times, values] }
//!    │ build(&skeleton): finite, strictly increasing times; value counts match;
//!    │                   names bound (every miss reported); redundant keys dropped;
//!    │                   one-key channels folded into the clip's base pose
//!    ▼
//! Clip { base pose, tracks grouped by kind (LINEAR rotations, translations, scales, then the
//!        rest), flat time / value / slerp-angle arrays }
//! ```
//!
//! Times are seconds in the source's own time base: a clip may start at 0.0417 s, and
//! [`Clip::start`] and [`Clip::duration`] keep that.
//!
//! A built clip holds its keys in one of two storages: keyed (the arrays above, as imported
//! after lossless reduction) or compact (quantized keys on a uniform grid, from
//! [`crate::compress`]). Everything else (name, time range, base pose, events) is the same
//! for both, and sampling chooses between the two in one place.
//!
//! Where the parts live: the [`Clip`] asset and its accessors here; what a channel animates
//! and how (`channel.rs`); the raw types importers fill (`raw.rs`); the compact storage
//! format (`compact.rs`); the keyed form's playback layout, eight tracks side by side
//! (`lanes.rs`). [`RawClip::build`] and derived clips (additive, scaled,
//! decompressed) are on the building side (`build/raw_clip.rs`, `build/reduce.rs`,
//! `build/derived.rs`); key evaluation on the playing side (`play/sampling`).

pub(crate) mod channel;
pub(crate) mod compact;
pub(crate) mod compact_lanes;
pub(crate) mod lanes;
pub(crate) mod morph;
mod raw;

pub use channel::{Interpolation, Target};
pub use morph::{MorphTrackView, RawMorphTrack};
pub use raw::{BuildOptions, BuildReport, RawChannel, RawClip, RawValues, UnboundChannels};

use std::sync::atomic::{AtomicU64, Ordering};

use glam::{Quat, Vec3A};

use crate::transform::SlerpSegment;
use crate::{Error, JointIndex, Skeleton, SkeletonId, Transform};

/// One animated channel of a [`Clip`], borrowed (see [`Clip::channel`]).
#[derive(Clone, Copy, Debug)]
pub struct ChannelView<'a> {
    /// The joint it animates.
    pub joint: JointIndex,
    /// What it animates.
    pub target: Target,
    /// How values between keys are computed.
    pub interpolation: Interpolation,
    /// Key times (at least two).
    pub times: &'a [f32],
    /// Key values.
    pub values: ChannelValues<'a>,
}

/// The values of a [`ChannelView`].
#[derive(Clone, Copy, Debug)]
pub enum ChannelValues<'a> {
    /// Translations or scales.
    Vec3(&'a [Vec3A]),
    /// Rotations.
    Quat(&'a [Quat]),
}

/// A named moment of a clip (a footstep, a sound cue), fired by the
/// [`crate::animator::Animator`] when playback crosses it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipEvent {
    /// Time in the clip's time base (between [`Clip::start`] and [`Clip::end`]).
    pub time: f32,
    /// The event's name.
    pub name: String,
    /// Optional data for the receiver.
    pub payload: Option<String>,
}

/// One animated channel of a built [`Clip`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Track {
    pub joint: JointIndex,
    pub target: Target,
    pub interpolation: Interpolation,
    /// Index of the track's timeline (its key times, shared with every track keyed at the
    /// same times) in `Keys::timelines`.
    pub timeline: u32,
    /// First key's index in `Keys::times` (its timeline's).
    pub time_start: u32,
    /// Number of keys (at least 2).
    pub key_count: u32,
    /// First value's index in the vec3 or quat value array (3 entries per key for cubic).
    pub value_start: u32,
}

/// An immutable, validated clip bound to a skeleton, ready for [`crate::sample`].
///
/// Clips are `Send + Sync`; share one between characters with an `Arc`. Two clips compare
/// equal when their content is equal (each built clip also has an identity, which sampling
/// caches follow, that equality ignores).
#[derive(Clone, Debug)]
pub struct Clip {
    pub(crate) id: u64,
    /// The layout of the skeleton the clip was built for ([`Skeleton::id`]).
    pub(crate) skeleton: SkeletonId,
    pub(crate) name: String,
    pub(crate) start: f32,
    pub(crate) duration: f32,
    /// Rest pose with every constant channel applied: what a joint is where no track moves it.
    pub(crate) base: Box<[Transform]>,
    /// Joints with at least one component no track writes: only these need the base pose
    /// copied in before the tracks run.
    pub(crate) static_joints: Box<[JointIndex]>,
    /// Events sorted by time.
    pub(crate) events: Box<[ClipEvent]>,
    /// The animated channels' keys, in one of two forms.
    pub(crate) storage: Storage,
    /// Morph-target weights: base and tracks, the same for both storages.
    pub(crate) morph: morph::MorphWeights,
    /// The frame rate of the source, where the file says or its key times show it
    /// ([`Clip::frame_rate`]); metadata, not part of equality.
    pub(crate) frame_rate: Option<f32>,
}

/// How a [`Clip`] stores its animated channels. Sampling (`play/sampling`) dispatches on it
/// once per call; everything else about a clip (base pose, events, time range) is shared.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Storage {
    /// Keys as imported, after lossless reduction ([`RawClip::build`], [`Clip::from_parts`]).
    Keyed(Keys),
    /// The compact form ([`crate::compress`]): quantized keys on a uniform grid, as bits.
    Compact(Box<compact::Compact>),
}

/// The keys of a keyed clip, laid out for sampling.
#[derive(Clone, Debug, Default)]
pub(crate) struct Keys {
    /// Tracks in groups: `..groups[0]` LINEAR rotations, `..groups[1]` LINEAR translations,
    /// `..groups[2]` LINEAR scales, then STEP and CUBICSPLINE tracks of any target. Within a
    /// group, by joint. Sampling runs one tight loop per group.
    pub(crate) tracks: Box<[Track]>,
    pub(crate) groups: [usize; 3],
    /// Distinct key-time arrays as (first index in `times`, key count). Exporters usually key
    /// every channel of a clip at the same times, so sampling finds the keys around a time
    /// once per timeline rather than once per channel.
    pub(crate) timelines: Box<[(u32, u32)]>,
    pub(crate) times: Box<[f32]>,
    /// Translation and scale values, 16-byte aligned so that interpolation is one SIMD op.
    pub(crate) vec3s: Box<[Vec3A]>,
    pub(crate) quats: Box<[Quat]>,
    /// One per LINEAR rotation key, at the key's value index: the angle to the next key.
    pub(crate) slerp: Box<[SlerpSegment]>,
    pub(crate) counts: ChannelCounts,
    /// The LINEAR tracks again, eight side by side for sampling (derived from the arrays
    /// above by [`Keys::lay_out`]; empty where the sampler does not use it).
    pub(crate) lanes: Box<lanes::Lanes>,
}

impl PartialEq for Keys {
    /// Equal keys; the slerp angles, counts and lanes are derived from them and not compared.
    fn eq(&self, o: &Self) -> bool {
        self.tracks == o.tracks
            && self.groups == o.groups
            && self.timelines == o.timelines
            && self.times == o.times
            && self.vec3s == o.vec3s
            && self.quats == o.quats
    }
}

impl Keys {
    /// The keys with their [`lanes::Lanes`] built: call after the arrays are final, and
    /// again after changing any value.
    pub(crate) fn lay_out(mut self) -> Self {
        self.refresh_lanes();
        self
    }

    /// Rebuilds the [`lanes::Lanes`] from the arrays (after changing any key value).
    pub(crate) fn refresh_lanes(&mut self) {
        self.lanes = lanes::Lanes::build(self);
    }

    /// The key times of a track.
    #[inline(always)]
    pub(crate) fn track_times(&self, track: &Track) -> &[f32] {
        let ts = track.time_start as usize;
        &self.times[ts..ts + track.key_count as usize]
    }

    /// The key times of timeline `i`.
    #[inline(always)]
    pub(crate) fn timeline_times(&self, i: usize) -> &[f32] {
        let (start, n) = self.timelines[i];
        &self.times[start as usize..(start + n) as usize]
    }
}

/// Channel and key counts of a built clip, by interpolation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ChannelCounts {
    /// Animated (multi-key) channels per interpolation: step, linear, cubic.
    pub tracks: [usize; 3],
    /// Keys of animated channels per interpolation: step, linear, cubic.
    pub keys: [usize; 3],
    /// Channels that hold one value for the whole clip (part of the base pose).
    pub constant: usize,
}

impl PartialEq for Clip {
    fn eq(&self, o: &Self) -> bool {
        self.name == o.name
            && self.start == o.start
            && self.duration == o.duration
            && self.base == o.base
            && self.events == o.events
            && self.storage == o.storage
            && self.morph == o.morph
    }
}

static NEXT_CLIP_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh clip identity (sampling caches follow clips by it).
pub(crate) fn next_clip_id() -> u64 {
    NEXT_CLIP_ID.fetch_add(1, Ordering::Relaxed)
}

pub(crate) fn interp_slot(i: Interpolation) -> usize {
    match i {
        Interpolation::Step => 0,
        Interpolation::Linear => 1,
        Interpolation::CubicSpline => 2,
    }
}

impl Clip {
    /// The clip's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Time of the first frame, in the source's time base (seconds).
    #[inline]
    pub fn start(&self) -> f32 {
        self.start
    }

    /// Length in seconds.
    #[inline]
    pub fn duration(&self) -> f32 {
        self.duration
    }

    /// `start + duration`.
    #[inline]
    pub fn end(&self) -> f32 {
        self.start + self.duration
    }

    /// Number of joints of the skeleton the clip was built for.
    #[inline]
    pub fn joint_count(&self) -> usize {
        self.base.len()
    }

    /// The identity of the skeleton the clip was built for ([`Skeleton::id`]): its joint
    /// names and parents. The animator plays a clip only on a skeleton with this id.
    #[inline]
    pub fn skeleton_id(&self) -> SkeletonId {
        self.skeleton
    }

    /// `true` when the clip was built for `skeleton`'s joint layout (same names and parents
    /// in the same order), so that its joint indices mean the same joints.
    #[inline]
    pub fn fits(&self, skeleton: &Skeleton) -> bool {
        self.skeleton == skeleton.id() && self.base.len() == skeleton.len()
    }

    /// Number of animated (multi-key) channels.
    #[inline]
    pub fn track_count(&self) -> usize {
        match &self.storage {
            Storage::Compact(c) => c.tracks.len(),
            Storage::Keyed(k) => k.tracks.len(),
        }
    }

    /// Channel and key counts by interpolation (for a compact clip: its stored keys, STEP or
    /// LINEAR).
    pub fn counts(&self) -> ChannelCounts {
        match &self.storage {
            Storage::Compact(c) => {
                let mut counts = ChannelCounts {
                    constant: c.constants.len(),
                    ..Default::default()
                };
                for (t, &k) in c.tracks.iter().zip(c.keys.iter()) {
                    let slot = if t.step { 0 } else { 1 };
                    counts.tracks[slot] += 1;
                    counts.keys[slot] += k as usize;
                }
                counts
            }
            Storage::Keyed(k) => k.counts,
        }
    }

    /// `true` for a clip made by [`crate::compress::compress`] (or loaded as one).
    pub fn is_compact(&self) -> bool {
        matches!(self.storage, Storage::Compact(_))
    }

    /// For a compact clip: the layout of its keys.
    pub fn compact_layout(&self) -> Option<compact::CompactLayout> {
        match &self.storage {
            Storage::Compact(c) => Some(c.layout),
            Storage::Keyed(_) => None,
        }
    }

    /// A compact clip with its keys in `layout` (see [`crate::compress::CompactLayout`]):
    /// between the streamed and seekable layouts the same keys, sampled to the same bits; to
    /// the lanes layout the keys rounded to 16 bits (not measured again: compress with
    /// [`crate::compress::CompressOptions::layout`] for a report of the clip as it plays).
    /// A new clip (its own id, for the [`crate::SamplingCache`]s); [`Clip::size_bytes`]
    /// gives its size. `None` for a clip with keys, from the lanes layout to another (its
    /// values are rounded), or where the data would pass what a compact clip indexes.
    ///
    /// ```
    /// # use skelett::*;
    /// # use glam::{Quat, Vec3};
    /// # let skeleton = RawSkeleton { joints: vec![
    /// #     RawJoint { name: "hips".into(), parent: None, rest: Transform::IDENTITY },
    /// #     RawJoint { name: "knee".into(), parent: Some(0),
    /// #                rest: Transform::new(Vec3::new(0.0, -45.0, 0.0), Quat::IDENTITY, Vec3::ONE) },
    /// # ], ..Default::default() }.build()?;
    /// # let times: Vec<f32> = (0..=60).map(|i| i as f32 / 30.0).collect();
    /// # let swing: Vec<Quat> = times.iter().map(|t| Quat::from_rotation_x((t * 3.0).sin())).collect();
    /// # let clip = RawClip { name: "swing".into(), start: 0.0, duration: 2.0, channels: vec![RawChannel {
    /// #     joint: "hips".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
    /// #     times, values: RawValues::Quat(swing) }] }.build(&skeleton)?;
    /// use skelett::compress::{compress, CompactLayout, CompressOptions};
    /// let options = CompressOptions { cm_per_unit: Some(1.0), ..Default::default() };
    /// let (small, _) = compress(&skeleton, &clip, &options)?;
    /// let seekable = small.with_compact_layout(CompactLayout::Seek).unwrap();
    /// let (mut a, mut b) = (Pose::rest(&skeleton), Pose::rest(&skeleton));
    /// sample_uncached(&small, 1.37, &mut a)?;
    /// sample_uncached(&seekable, 1.37, &mut b)?;
    /// assert_eq!(a, b);
    /// // Fast playback: 16-bit keys, eight tracks side by side; not back to the others.
    /// let lanes = small.with_compact_layout(CompactLayout::Lanes).unwrap();
    /// sample_uncached(&lanes, 1.37, &mut b)?;
    /// assert!(a[0].rotation.dot(b[0].rotation).abs() > 1.0 - 1e-6);
    /// assert!(lanes.with_compact_layout(CompactLayout::Stream).is_none());
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn with_compact_layout(&self, layout: compact::CompactLayout) -> Option<Clip> {
        let Storage::Compact(c) = &self.storage else {
            return None;
        };
        let c = crate::build::compress::seek::relayout(c, layout)?;
        let mut clip = Clip::from_compact(
            self.skeleton,
            self.name.clone(),
            self.start,
            self.duration,
            self.base.to_vec(),
            self.static_joints.to_vec(),
            c,
            self.events.to_vec(),
        );
        clip.morph = self.morph.clone();
        clip.frame_rate = self.frame_rate;
        Some(clip)
    }

    /// For a compact clip: its grid's frames per second and number of frames.
    pub fn compact_grid(&self) -> Option<(f32, usize)> {
        match &self.storage {
            Storage::Compact(c) => Some((c.rate, c.frames as usize)),
            Storage::Keyed(_) => None,
        }
    }

    /// The pose of joints no track moves: the rest pose with every constant channel applied.
    pub fn base_pose(&self) -> &[Transform] {
        &self.base
    }

    /// Bytes of key data (times, values, precomputed slerp angles, track headers, base pose,
    /// and where built, the LINEAR tracks again in playback order: `clip/lanes.rs`); for a
    /// compact clip, what it stores (see [`crate::compress`]).
    pub fn size_bytes(&self) -> usize {
        use std::mem::size_of;
        // Morph-weight tracks are stored the same way in both storages.
        let morph = self.morph.base.len() * 4
            + self
                .morph
                .tracks
                .iter()
                .map(|t| (t.times.len() + t.values.len()) * 4 + 8)
                .sum::<usize>();
        let k = match &self.storage {
            Storage::Compact(c) => return c.byte_size() + morph,
            Storage::Keyed(k) => k,
        };
        k.tracks.len() * size_of::<Track>()
            + k.timelines.len() * 8
            + k.times.len() * 4
            + k.vec3s.len() * size_of::<Vec3A>()
            + k.quats.len() * size_of::<Quat>()
            + k.slerp.len() * size_of::<SlerpSegment>()
            + k.lanes.byte_size()
            + self.base.len() * size_of::<Transform>()
            + self.static_joints.len() * size_of::<JointIndex>()
            + morph
    }

    /// The animated channels as (joint, target, interpolation, key count), grouped by kind
    /// (for a compact clip, in its storage order).
    pub fn channels(
        &self,
    ) -> impl Iterator<Item = (JointIndex, Target, Interpolation, usize)> + '_ {
        let (keyed, compact) = match &self.storage {
            Storage::Keyed(k) => (&k.tracks[..], None),
            Storage::Compact(c) => (&[][..], Some(c)),
        };
        let keyed = keyed
            .iter()
            .map(|t| (t.joint, t.target, t.interpolation, t.key_count as usize));
        let compact = compact.into_iter().flat_map(|c| {
            c.tracks.iter().zip(c.keys.iter()).map(|(t, &k)| {
                let interp = if t.step {
                    Interpolation::Step
                } else {
                    Interpolation::Linear
                };
                (t.joint, t.target, interp, k as usize)
            })
        });
        keyed.chain(compact)
    }

    /// The key times of animated channel `i` (in [`Clip::channels`] order); empty for a
    /// compact clip (use [`Clip::decompressed`]).
    ///
    /// # Panics
    /// If `i >= self.track_count()`.
    pub fn channel_times(&self, i: usize) -> &[f32] {
        match &self.storage {
            Storage::Keyed(k) => k.track_times(&k.tracks[i]),
            Storage::Compact(c) => {
                assert!(i < c.tracks.len(), "channel {i} out of range");
                &[]
            }
        }
    }

    /// The keys of a keyed clip; `None` for a compact one.
    #[inline(always)]
    pub(crate) fn keys(&self) -> Option<&Keys> {
        match &self.storage {
            Storage::Keyed(k) => Some(k),
            Storage::Compact(_) => None,
        }
    }

    /// Animated channel `i` (in [`Clip::channels`] order) with its keys, for exporters and
    /// tools: times, and values (three per key for cubic channels: in-tangent, value,
    /// out-tangent). `None` past the last channel, and for compact clips (whose keys are
    /// bits: [`Clip::decompressed`] gives them as a clip with keys).
    pub fn channel(&self, i: usize) -> Option<ChannelView<'_>> {
        let k = self.keys()?;
        let t = k.tracks.get(i)?;
        let per = if t.interpolation == Interpolation::CubicSpline {
            3
        } else {
            1
        };
        let n = t.key_count as usize * per;
        let vs = t.value_start as usize;
        Some(ChannelView {
            joint: t.joint,
            target: t.target,
            interpolation: t.interpolation,
            times: k.track_times(t),
            values: match t.target {
                Target::Rotation => ChannelValues::Quat(&k.quats[vs..vs + n]),
                _ => ChannelValues::Vec3(&k.vec3s[vs..vs + n]),
            },
        })
    }

    /// The clip's events, sorted by time.
    pub fn events(&self) -> &[ClipEvent] {
        &self.events
    }

    /// Returns the clip with `events` added (imported ones kept), sorted by time.
    ///
    /// ```
    /// # use skelett::*;
    /// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
    /// # let clip = RawClip { name: "walk".into(), start: 0.0, duration: 1.0, channels: vec![] }
    /// #     .build(&skeleton).unwrap();
    /// let clip = clip.with_events(vec![
    ///     ClipEvent { time: 0.5, name: "right_foot".into(), payload: None },
    ///     ClipEvent { time: 0.0, name: "left_foot".into(), payload: None },
    /// ])?;
    /// assert_eq!(clip.events()[0].name, "left_foot");
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ClipRange`] if an event's time is not finite or lies outside the clip.
    pub fn with_events(mut self, events: Vec<ClipEvent>) -> Result<Self, Error> {
        let mut all: Vec<ClipEvent> = self.events.to_vec();
        for e in events {
            if !(e.time >= self.start && e.time <= self.end()) {
                return Err(Error::ClipRange {
                    clip: self.name.clone(),
                    problem: format!(
                        "event {:?} at {} s lies outside the clip ({} to {} s)",
                        e.name,
                        e.time,
                        self.start,
                        self.end()
                    ),
                });
            }
            all.push(e);
        }
        all.sort_by(|a, b| a.time.total_cmp(&b.time));
        self.events = all.into();
        Ok(self)
    }

    /// The frame rate the clip was made at, in frames per second: from the file (BVH's
    /// `Frame Time`, FBX's time mode, RAA's `fps`) or, where the file has none, inferred from
    /// its key times (glTF, `.x`: the common rates 24 to 240 whose frames every key falls
    /// on). `None` when neither tells. It sets the closing interval of [`Clip::closed_loop`].
    pub fn frame_rate(&self) -> Option<f32> {
        self.frame_rate
    }

    /// The same clip with its frame rate set (`None`, or a rate that is not finite and
    /// positive, clears it). Importers call this; it is metadata and does not change how the
    /// clip samples or compares.
    ///
    /// ```
    /// # use skelett::*;
    /// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build()?;
    /// let clip = RawClip { name: "idle".into(), start: 0.0, duration: 1.0, channels: vec![] }
    ///     .build(&skeleton)?
    ///     .with_frame_rate(Some(30.0));
    /// assert_eq!(clip.frame_rate(), Some(30.0));
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn with_frame_rate(mut self, rate: Option<f32>) -> Self {
        self.set_frame_rate(rate);
        self
    }

    /// Sets the frame rate in place, as [`Clip::with_frame_rate`] does.
    pub fn set_frame_rate(&mut self, rate: Option<f32>) {
        self.frame_rate = rate.filter(|r| r.is_finite() && *r > 0.0);
    }

    /// Number of distinct key-time arrays (channels keyed at the same times share one).
    pub fn timeline_count(&self) -> usize {
        self.keys().map_or(0, |k| k.timelines.len())
    }

    #[inline(always)]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// A clip around compact data (from [`crate::compress`] or a file).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_compact(
        skeleton: SkeletonId,
        name: String,
        start: f32,
        duration: f32,
        base: Vec<Transform>,
        static_joints: Vec<JointIndex>,
        compact: compact::Compact,
        events: Vec<ClipEvent>,
    ) -> Clip {
        Clip {
            id: NEXT_CLIP_ID.fetch_add(1, Ordering::Relaxed),
            skeleton,
            name,
            start,
            duration,
            base: base.into(),
            static_joints: static_joints.into(),
            events: events.into(),
            storage: Storage::Compact(Box::new(compact)),
            morph: morph::MorphWeights::default(),
            frame_rate: None,
        }
    }
}

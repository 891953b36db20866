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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use glam::{Quat, Vec3, Vec3A, Vec4};

use crate::transform::{align_sign, SlerpSegment};
use crate::{Error, JointIndex, Skeleton, Transform};

/// What a channel animates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// The joint's local translation.
    Translation,
    /// The joint's local rotation.
    Rotation,
    /// The joint's local scale.
    Scale,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Target::Translation => "translation",
            Target::Rotation => "rotation",
            Target::Scale => "scale",
        })
    }
}

/// How values between two keys are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Interpolation {
    /// The value of the key at or before the time.
    Step,
    /// Linear for translations and scales, shortest-path slerp for rotations.
    Linear,
    /// Cubic Hermite spline with an in- and an out-tangent per key, as glTF's CUBICSPLINE;
    /// rotations are re-normalised after interpolation.
    CubicSpline,
}

impl std::fmt::Display for Interpolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Interpolation::Step => "step",
            Interpolation::Linear => "linear",
            Interpolation::CubicSpline => "cubic",
        })
    }
}

/// Key values of a raw channel.
///
/// For [`Interpolation::CubicSpline`] every key has three entries, in glTF's order: in-tangent,
/// value, out-tangent. Tangents are per second.
#[derive(Clone, Debug, PartialEq)]
pub enum RawValues {
    /// Translation or scale values.
    Vec3(Vec<Vec3>),
    /// Rotation values (normalised when the clip is built).
    Quat(Vec<Quat>),
}

impl RawValues {
    /// Number of entries (3 per key for cubic channels).
    pub fn len(&self) -> usize {
        match self {
            RawValues::Vec3(v) => v.len(),
            RawValues::Quat(v) => v.len(),
        }
    }

    /// `true` without entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One channel of a [`RawClip`].
#[derive(Clone, Debug, PartialEq)]
pub struct RawChannel {
    /// The name of the joint it animates.
    pub joint: String,
    /// What it animates; must agree with [`RawValues`]'s kind.
    pub target: Target,
    /// How values between keys are computed.
    pub interpolation: Interpolation,
    /// Key times in seconds, strictly increasing.
    pub times: Vec<f32>,
    /// Key values: one per key, or three for cubic splines.
    pub values: RawValues,
}

/// An editable clip, as importers produce it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RawClip {
    /// The clip's name.
    pub name: String,
    /// Time of the clip's first frame, in seconds (the source's time base).
    pub start: f32,
    /// Length in seconds.
    pub duration: f32,
    /// The channels, in any order.
    pub channels: Vec<RawChannel>,
}

/// What [`RawClip::build_with`] does with channels whose joint the skeleton lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UnboundChannels {
    /// Fail with [`Error::UnboundChannels`], naming every such joint.
    #[default]
    Error,
    /// Leave them out and list them in [`BuildReport::unbound`].
    Skip,
}

/// Options of [`RawClip::build_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BuildOptions {
    /// What to do with channels that target joints the skeleton lacks.
    pub unbound: UnboundChannels,
    /// Keep every key, even those the lossless reduction would remove (for comparing a
    /// reduced clip with the full one).
    pub keep_redundant_keys: bool,
}

/// What building a clip did, beyond the clip itself.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct BuildReport {
    /// Joint names whose channels were skipped (with [`UnboundChannels::Skip`]).
    pub unbound: Vec<String>,
    /// Keys in the raw clip.
    pub keys_in: usize,
    /// Keys kept (including the one key of each constant channel).
    pub keys_out: usize,
    /// Channels that were constant and became part of the clip's base pose.
    pub constant_channels: usize,
    /// Channels equal to the rest pose that were dropped altogether.
    pub rest_channels: usize,
}

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
    /// same times) in [`Clip::timelines`].
    pub timeline: u32,
    /// First key's index in [`Clip::times`] (its timeline's).
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
    pub(crate) name: String,
    pub(crate) start: f32,
    pub(crate) duration: f32,
    /// Rest pose with every constant channel applied: what a joint is where no track moves it.
    pub(crate) base: Box<[Transform]>,
    /// Tracks in groups: `..groups[0]` LINEAR rotations, `..groups[1]` LINEAR translations,
    /// `..groups[2]` LINEAR scales, then STEP and CUBICSPLINE tracks of any target. Within a
    /// group, by joint. Sampling runs one tight loop per group.
    pub(crate) tracks: Box<[Track]>,
    pub(crate) groups: [usize; 3],
    /// Distinct key-time arrays as (first index in `times`, key count). Exporters usually key
    /// every channel of a clip at the same times, so sampling finds the keys around a time
    /// once per timeline rather than once per channel.
    pub(crate) timelines: Box<[(u32, u32)]>,
    /// Joints with at least one component no track writes: only these need the base pose
    /// copied in before the tracks run.
    pub(crate) static_joints: Box<[JointIndex]>,
    pub(crate) times: Box<[f32]>,
    /// Translation and scale values, 16-byte aligned so that interpolation is one SIMD op.
    pub(crate) vec3s: Box<[Vec3A]>,
    pub(crate) quats: Box<[Quat]>,
    /// One per LINEAR rotation key, at the key's value index: the angle to the next key.
    pub(crate) slerp: Box<[SlerpSegment]>,
    pub(crate) counts: ChannelCounts,
    /// Events sorted by time.
    pub(crate) events: Box<[ClipEvent]>,
    /// The compact form ([`crate::compress`]): when present, the key arrays above are empty
    /// and sampling decodes this instead.
    pub(crate) compact: Option<Box<crate::compress::Compact>>,
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
            && self.tracks == o.tracks
            && self.groups == o.groups
            && self.timelines == o.timelines
            && self.times == o.times
            && self.vec3s == o.vec3s
            && self.quats == o.quats
            && self.events == o.events
            && self.compact == o.compact
    }
}

static NEXT_CLIP_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh clip identity (sampling caches follow clips by it).
pub(crate) fn next_clip_id() -> u64 {
    NEXT_CLIP_ID.fetch_add(1, Ordering::Relaxed)
}

fn interp_slot(i: Interpolation) -> usize {
    match i {
        Interpolation::Step => 0,
        Interpolation::Linear => 1,
        Interpolation::CubicSpline => 2,
    }
}

impl RawClip {
    /// Sets [`RawClip::start`] and [`RawClip::duration`] to span every channel's keys
    /// (start 0, duration 0 for a clip without keys).
    pub fn fit_range_to_keys(&mut self) {
        let mut lo = f32::INFINITY;
        let mut hi = f32::NEG_INFINITY;
        for c in &self.channels {
            if let (Some(&a), Some(&b)) = (c.times.first(), c.times.last()) {
                lo = lo.min(a);
                hi = hi.max(b);
            }
        }
        if lo.is_finite() && hi.is_finite() {
            self.start = lo;
            self.duration = hi - lo;
        } else {
            self.start = 0.0;
            self.duration = 0.0;
        }
    }

    /// Builds the clip for `skeleton`, failing if any channel names a joint it lacks.
    ///
    /// ```
    /// use skelett::{RawSkeleton, RawJoint, RawClip, RawChannel, RawValues, Target, Interpolation,
    ///               Transform, SamplingCache, Pose, sample};
    /// use glam::Vec3;
    /// let skeleton = RawSkeleton {
    ///     joints: vec![RawJoint { name: "root".into(), parent: None, rest: Transform::IDENTITY }],
    ///     ..Default::default()
    /// }.build().unwrap();
    /// let mut raw = RawClip { name: "slide".into(), channels: vec![RawChannel {
    ///     joint: "root".into(), target: Target::Translation, interpolation: Interpolation::Linear,
    ///     times: vec![0.0, 1.0], values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::X]),
    /// }], ..Default::default() };
    /// raw.fit_range_to_keys();
    /// let clip = raw.build(&skeleton).unwrap();
    /// let mut pose = Pose::rest(&skeleton);
    /// sample(&clip, 0.25, &mut SamplingCache::default(), &mut pose).unwrap();
    /// assert_eq!(pose[0].translation, Vec3::new(0.25, 0.0, 0.0));
    /// ```
    ///
    /// # Errors
    /// See [`RawClip::build_with`].
    pub fn build(&self, skeleton: &Skeleton) -> Result<Clip, Error> {
        self.build_with(skeleton, &BuildOptions::default())
            .map(|(c, _)| c)
    }

    /// Builds the clip for `skeleton` with explicit options, and reports what was done.
    ///
    /// # Errors
    /// - [`Error::ClipRange`] if start or duration is not finite, or the duration is negative.
    /// - [`Error::Channel`] for a channel with no keys, non-finite or not strictly increasing
    ///   times, a value count that does not match its key count (times 3 for cubic), values
    ///   of the wrong kind for its target, non-finite values, a zero rotation, or a second
    ///   channel for the same joint and target.
    /// - [`Error::UnboundChannels`] naming every joint the skeleton lacks (unless skipped).
    pub fn build_with(
        &self,
        skeleton: &Skeleton,
        options: &BuildOptions,
    ) -> Result<(Clip, BuildReport), Error> {
        let range_err = |problem: String| Error::ClipRange {
            clip: self.name.clone(),
            problem,
        };
        if !self.start.is_finite() {
            return Err(range_err(format!("start {} is not finite", self.start)));
        }
        if !self.duration.is_finite() || self.duration < 0.0 {
            return Err(range_err(format!(
                "duration {} is not a finite, non-negative number",
                self.duration
            )));
        }

        let mut report = BuildReport::default();
        let mut unbound: Vec<String> = Vec::new();
        let mut bound = Vec::with_capacity(self.channels.len());
        let mut seen = std::collections::HashSet::new();
        for (ci, ch) in self.channels.iter().enumerate() {
            validate_channel(&self.name, ci, ch)?;
            report.keys_in += ch.times.len();
            match skeleton.find(&ch.joint) {
                Some(j) => {
                    if !seen.insert((j, ch.target)) {
                        return Err(channel_err(
                            &self.name,
                            ci,
                            ch,
                            "a second channel for the same joint and target".into(),
                        ));
                    }
                    bound.push((j, ci));
                }
                None => {
                    if !unbound.contains(&ch.joint) {
                        unbound.push(ch.joint.clone());
                    }
                }
            }
        }
        if !unbound.is_empty() && options.unbound == UnboundChannels::Error {
            return Err(Error::UnboundChannels {
                clip: self.name.clone(),
                joints: unbound,
            });
        }
        report.unbound = unbound;
        bound.sort_by_key(|&(j, ci)| (j, self.channels[ci].target));

        let mut clip = Clip {
            id: NEXT_CLIP_ID.fetch_add(1, Ordering::Relaxed),
            name: self.name.clone(),
            start: self.start,
            duration: self.duration,
            base: skeleton.rest_pose().into(),
            tracks: Box::new([]),
            groups: [0; 3],
            timelines: Box::new([]),
            static_joints: Box::new([]),
            times: Box::new([]),
            vec3s: Box::new([]),
            quats: Box::new([]),
            slerp: Box::new([]),
            counts: ChannelCounts::default(),
            events: Box::new([]),
            compact: None,
        };
        let mut tracks = Vec::new();
        let mut times = Vec::new();
        let mut vec3s = Vec::new();
        let mut quats = Vec::new();
        let mut slerp = Vec::new();
        let mut timelines: Vec<(u32, u32)> = Vec::new();
        let mut timeline_of: HashMap<Vec<u32>, u32> = HashMap::new();
        for (j, ci) in bound {
            let ch = &self.channels[ci];
            let keys = reduce_channel(ch, options.keep_redundant_keys);
            let rest = &skeleton.rest_pose()[j as usize];
            if keys.times.len() == 1 {
                let base = &mut clip.base[j as usize];
                let same_as_rest = match (&keys.values, ch.target) {
                    (KeyValues::Vec3(v), Target::Translation) => {
                        let same = v[0] == rest.translation;
                        base.translation = v[0];
                        same
                    }
                    (KeyValues::Vec3(v), _) => {
                        let same = v[0] == rest.scale;
                        base.scale = v[0];
                        same
                    }
                    (KeyValues::Quat(q), _) => {
                        let same = q[0] == rest.rotation || q[0] == -rest.rotation;
                        base.rotation = q[0];
                        same
                    }
                };
                report.keys_out += usize::from(!same_as_rest);
                if same_as_rest {
                    report.rest_channels += 1;
                } else {
                    report.constant_channels += 1;
                    clip.counts.constant += 1;
                }
                continue;
            }
            let n = keys.times.len();
            report.keys_out += n;
            clip.counts.tracks[interp_slot(ch.interpolation)] += 1;
            clip.counts.keys[interp_slot(ch.interpolation)] += n;
            let value_start = match &keys.values {
                KeyValues::Vec3(v) => {
                    let s = vec3s.len();
                    vec3s.extend(v.iter().map(|&v| Vec3A::from(v)));
                    s
                }
                KeyValues::Quat(q) => {
                    let s = quats.len();
                    quats.extend_from_slice(q);
                    if ch.interpolation == Interpolation::Linear {
                        slerp.resize(quats.len(), SlerpSegment::default());
                        for k in 0..n - 1 {
                            slerp[s + k] = SlerpSegment::new(q[k], q[k + 1]);
                        }
                    }
                    s
                }
            };
            let bits: Vec<u32> = keys.times.iter().map(|t| t.to_bits()).collect();
            let timeline = *timeline_of.entry(bits).or_insert_with(|| {
                timelines.push((times.len() as u32, n as u32));
                times.extend_from_slice(&keys.times);
                timelines.len() as u32 - 1
            });
            tracks.push(Track {
                joint: j,
                target: ch.target,
                interpolation: ch.interpolation,
                timeline,
                time_start: timelines[timeline as usize].0,
                key_count: n as u32,
                value_start: value_start as u32,
            });
        }
        clip.timelines = timelines.into();
        let mut animated = vec![0u8; skeleton.len()];
        for t in &tracks {
            animated[t.joint as usize] |= match t.target {
                Target::Translation => 1,
                Target::Rotation => 2,
                Target::Scale => 4,
            };
        }
        clip.static_joints = (0..skeleton.len())
            .filter(|&j| animated[j] != 7)
            .map(|j| j as JointIndex)
            .collect();
        slerp.resize(quats.len(), SlerpSegment::default());
        if [times.len(), vec3s.len(), quats.len()]
            .iter()
            .any(|&n| n > u32::MAX as usize)
        {
            return Err(range_err(format!(
                "{} key times, {} vector and {} rotation values: more than a clip can index",
                times.len(),
                vec3s.len(),
                quats.len()
            )));
        }
        let group = |t: &Track| match (t.interpolation, t.target) {
            (Interpolation::Linear, Target::Rotation) => 0,
            (Interpolation::Linear, Target::Translation) => 1,
            (Interpolation::Linear, Target::Scale) => 2,
            _ => 3,
        };
        tracks.sort_by_key(|t| (group(t), t.joint, t.target));
        for g in 0..3 {
            clip.groups[g] = tracks.partition_point(|t| group(t) <= g);
        }
        clip.tracks = tracks.into();
        clip.times = times.into();
        clip.vec3s = vec3s.into();
        clip.quats = quats.into();
        clip.slerp = slerp.into();
        Ok((clip, report))
    }
}

fn channel_err(clip: &str, ci: usize, ch: &RawChannel, problem: String) -> Error {
    Error::Channel {
        clip: clip.to_string(),
        channel: ci,
        joint: ch.joint.clone(),
        target: ch.target,
        problem,
    }
}

fn validate_channel(clip: &str, ci: usize, ch: &RawChannel) -> Result<(), Error> {
    let err = |p: String| Err(channel_err(clip, ci, ch, p));
    if ch.times.is_empty() {
        return err("has no keys".into());
    }
    if ch.times.len() > u32::MAX as usize / 4 {
        return err(format!("has {} keys, too many", ch.times.len()));
    }
    for (k, t) in ch.times.iter().enumerate() {
        if !t.is_finite() {
            return err(format!("key {k} has time {t}, not finite"));
        }
        if k > 0 && *t <= ch.times[k - 1] {
            return err(format!(
                "key {k} at {t} s does not come after key {} at {} s (times must increase strictly)",
                k - 1,
                ch.times[k - 1]
            ));
        }
    }
    let per_key = if ch.interpolation == Interpolation::CubicSpline {
        3
    } else {
        1
    };
    if ch.values.len() != ch.times.len() * per_key {
        return err(format!(
            "{} keys need {} values ({} per key), found {}",
            ch.times.len(),
            ch.times.len() * per_key,
            per_key,
            ch.values.len()
        ));
    }
    match (&ch.values, ch.target) {
        (RawValues::Quat(q), Target::Rotation) => {
            for (i, v) in q.iter().enumerate() {
                if !v.is_finite() {
                    return err(format!("value {i} is not finite: {v}"));
                }
                let is_tangent = per_key == 3 && i % 3 != 1;
                if !is_tangent && v.length_squared() < 1e-12 {
                    return err(format!("value {i} is a zero quaternion"));
                }
            }
        }
        (RawValues::Vec3(v), Target::Translation | Target::Scale) => {
            if let Some(i) = v.iter().position(|v| !v.is_finite()) {
                return err(format!("value {i} is not finite: {}", v[i]));
            }
        }
        (RawValues::Quat(_), _) => return err("has rotation values but is not a rotation".into()),
        (RawValues::Vec3(_), _) => return err("a rotation needs quaternion values".into()),
    }
    Ok(())
}

enum KeyValues {
    Vec3(Vec<Vec3>),
    Quat(Vec<Quat>),
}

struct Keys {
    times: Vec<f32>,
    values: KeyValues,
}

/// Removes the keys that change no sampled value, and normalises rotations.
///
/// - STEP: a key equal to the one before it.
/// - LINEAR: an interior key that the interpolation between the keys kept around it
///   reproduces to f32 precision (see [`reduce_linear`]): repeats, and keys on a straight line
///   or a great arc, such as a linear curve an exporter baked at every frame; a first or last
///   key equal to its one neighbour (the hold before the first and after the last key gives
///   the same value).
/// - CUBIC: a key whose value equals both neighbours' and whose tangents and the neighbours'
///   facing tangents are zero; the whole channel collapses when every value is equal and
///   every tangent zero.
///
/// LINEAR rotation keys are also put on the hemisphere of the key before, so that sampling
/// needs no sign test (`q` and `-q` are the same rotation).
fn reduce_channel(ch: &RawChannel, keep_all: bool) -> Keys {
    match &ch.values {
        RawValues::Vec3(v) => {
            let (times, values) = if ch.interpolation == Interpolation::Linear {
                reduce_linear(&ch.times, v, keep_all, vec3_on_line)
            } else {
                let eq = |a: &Vec3, b: &Vec3| !keep_all && a == b;
                reduce(&ch.times, v, ch.interpolation, eq, Vec3::ZERO)
            };
            Keys {
                times,
                values: KeyValues::Vec3(values),
            }
        }
        RawValues::Quat(q) => {
            let mut q: Vec<Quat> = if ch.interpolation == Interpolation::CubicSpline {
                // Values are re-normalised after interpolation; tangents stay as given.
                q.clone()
            } else {
                q.iter().map(|q| q.normalize()).collect()
            };
            if ch.interpolation == Interpolation::Linear {
                for k in 1..q.len() {
                    q[k] = align_sign(q[k - 1], q[k]);
                }
            }
            let (times, mut values) = if ch.interpolation == Interpolation::Linear {
                let (t, mut v) = reduce_linear(&ch.times, &q, keep_all, quat_on_arc);
                // Keys that were not neighbours before may now be on opposite hemispheres.
                for k in 1..v.len() {
                    v[k] = align_sign(v[k - 1], v[k]);
                }
                (t, v)
            } else {
                let same = |a: &Quat, b: &Quat| !keep_all && a == b;
                reduce(
                    &ch.times,
                    &q,
                    ch.interpolation,
                    same,
                    Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
                )
            };
            if ch.interpolation == Interpolation::CubicSpline && times.len() == 1 {
                values[0] = values[0].normalize();
            }
            Keys {
                times,
                values: KeyValues::Quat(values),
            }
        }
    }
}

fn reduce<T: Copy>(
    times: &[f32],
    values: &[T],
    interp: Interpolation,
    eq: impl Fn(&T, &T) -> bool,
    zero: T,
) -> (Vec<f32>, Vec<T>) {
    let n = times.len();
    let mut out_t = Vec::with_capacity(n);
    let mut out_v = Vec::with_capacity(values.len());
    match interp {
        Interpolation::Step => {
            for k in 0..n {
                if k == 0 || !eq(&values[k], &values[k - 1]) {
                    out_t.push(times[k]);
                    out_v.push(values[k]);
                }
            }
        }
        // LINEAR channels go through `reduce_linear`.
        Interpolation::Linear => {
            out_t.extend_from_slice(times);
            out_v.extend_from_slice(values);
        }
        Interpolation::CubicSpline => {
            let flat = |k: usize| eq(&values[3 * k], &zero) && eq(&values[3 * k + 2], &zero);
            let val = |k: usize| &values[3 * k + 1];
            for k in 0..n {
                let same_prev = k > 0 && eq(val(k), val(k - 1)) && flat(k - 1);
                let same_next = k + 1 < n && eq(val(k), val(k + 1)) && flat(k + 1);
                let redundant =
                    n > 1 && flat(k) && (same_prev || k == 0) && (same_next || k + 1 == n);
                if !redundant {
                    out_t.push(times[k]);
                    out_v.extend_from_slice(&values[3 * k..3 * k + 3]);
                }
            }
            if out_t.is_empty() {
                out_t.push(times[0]);
                out_v.extend_from_slice(&values[0..3]);
            }
            if out_t.len() == 1 {
                // A constant: keep only the value.
                out_v = vec![out_v[1]];
            }
        }
    }
    (out_t, out_v)
}

/// The longest run of keys one LINEAR segment may replace: bounds the reduction's work at
/// O(keys x MAX_RUN) whatever the data.
const MAX_RUN: usize = 512;

/// Relative f32 precision within which a removed key must be reproduced: four units in the
/// last place of the largest value involved (interpolating in f32 rounds about as much).
const ON_LINE_TOLERANCE: f64 = 4.0 * f32::EPSILON as f64;

/// How far `u` may be off because the key times themselves are f32: a key baked at an exact
/// frame time sits on the line only within the rounding of its stored time.
fn time_slack(t0: f64, t1: f64) -> f64 {
    ON_LINE_TOLERANCE * t0.abs().max(t1.abs()) / (t1 - t0)
}

/// `v` is `a + (b - a) * u` to f32 precision (of the values, and of the times through
/// `du`), component by component.
fn vec3_on_line(a: &Vec3, b: &Vec3, u: f64, du: f64, v: &Vec3) -> bool {
    let (a, b, v) = (a.as_dvec3(), b.as_dvec3(), v.as_dvec3());
    let line = a + (b - a) * u;
    let scale = a.abs().max(b.abs()).max(v.abs()).max_element();
    let slack = ON_LINE_TOLERANCE * scale + (b - a).abs() * du;
    (line - v).abs().cmple(slack).all()
}

/// `q` is the shortest-path slerp from `a` to `b` at `u` to f32 precision (as 4-vectors, on
/// the same hemisphere, with the time slack `du`), evaluated in f64.
fn quat_on_arc(a: &Quat, b: &Quat, u: f64, du: f64, q: &Quat) -> bool {
    let a = glam::DQuat::from_xyzw(a.x as f64, a.y as f64, a.z as f64, a.w as f64);
    let mut b = glam::DQuat::from_xyzw(b.x as f64, b.y as f64, b.z as f64, b.w as f64);
    let q = glam::DQuat::from_xyzw(q.x as f64, q.y as f64, q.z as f64, q.w as f64);
    if a.dot(b) < 0.0 {
        b = -b;
    }
    let s = a.slerp(b, u);
    let d = if s.dot(q) < 0.0 { s + q } else { s - q };
    d.length() <= ON_LINE_TOLERANCE + (b - a).length() * du
}

/// Lossless key removal for a LINEAR channel: keeps the first key, then extends each segment
/// over as many keys as `on_line(start, end, u, du, key)` accepts for *every* key it would
/// replace (so removals never add up), up to [`MAX_RUN`] keys; a first or last key equal to
/// its neighbour goes too, and an all-equal channel keeps one key. `keep_all` keeps every key.
fn reduce_linear<T: Copy + PartialEq>(
    times: &[f32],
    values: &[T],
    keep_all: bool,
    on_line: impl Fn(&T, &T, f64, f64, &T) -> bool,
) -> (Vec<f32>, Vec<T>) {
    let n = times.len();
    if keep_all || n < 2 {
        return (times.to_vec(), values.to_vec());
    }
    let same = |a: usize, b: usize| on_line(&values[a], &values[a], 0.0, 0.0, &values[b]);
    let mut kept = vec![0usize];
    let mut start = 0;
    for end in 2..n {
        let t0 = f64::from(times[start]);
        let t1 = f64::from(times[end]);
        let du = time_slack(t0, t1);
        let fits = end - start <= MAX_RUN
            && (start + 1..end).all(|k| {
                let u = (f64::from(times[k]) - t0) / (t1 - t0);
                on_line(&values[start], &values[end], u, du, &values[k])
            });
        if !fits {
            start = end - 1;
            kept.push(start);
        }
    }
    kept.push(n - 1);
    // Holds before the first and after the last key.
    while kept.len() > 1 && same(kept[0], kept[1]) {
        kept.remove(0);
    }
    while kept.len() > 1 && same(kept[kept.len() - 1], kept[kept.len() - 2]) {
        kept.pop();
    }
    (
        kept.iter().map(|&k| times[k]).collect(),
        kept.iter().map(|&k| values[k]).collect(),
    )
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

    /// Number of animated (multi-key) channels.
    #[inline]
    pub fn track_count(&self) -> usize {
        match &self.compact {
            Some(c) => c.tracks.len(),
            None => self.tracks.len(),
        }
    }

    /// Channel and key counts by interpolation (for a compact clip: its stored keys, STEP or
    /// LINEAR).
    pub fn counts(&self) -> ChannelCounts {
        match &self.compact {
            Some(c) => {
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
            None => self.counts,
        }
    }

    /// `true` for a clip made by [`crate::compress::compress`] (or loaded as one).
    pub fn is_compact(&self) -> bool {
        self.compact.is_some()
    }

    /// For a compact clip: its grid's frames per second and number of frames.
    pub fn compact_grid(&self) -> Option<(f32, usize)> {
        self.compact.as_ref().map(|c| (c.rate, c.frames as usize))
    }

    /// The pose of joints no track moves: the rest pose with every constant channel applied.
    pub fn base_pose(&self) -> &[Transform] {
        &self.base
    }

    /// Bytes of key data (times, values, precomputed slerp angles, track headers, base pose);
    /// for a compact clip, what it stores (see [`crate::compress`]).
    pub fn size_bytes(&self) -> usize {
        use std::mem::size_of;
        if let Some(c) = &self.compact {
            return c.byte_size();
        }
        self.tracks.len() * size_of::<Track>()
            + self.timelines.len() * 8
            + self.times.len() * 4
            + self.vec3s.len() * size_of::<Vec3A>()
            + self.quats.len() * size_of::<Quat>()
            + self.slerp.len() * size_of::<SlerpSegment>()
            + self.base.len() * size_of::<Transform>()
            + self.static_joints.len() * size_of::<JointIndex>()
    }

    /// The animated channels as (joint, target, interpolation, key count), grouped by kind
    /// (for a compact clip, in its storage order).
    pub fn channels(
        &self,
    ) -> impl Iterator<Item = (JointIndex, Target, Interpolation, usize)> + '_ {
        let keyed = self
            .tracks
            .iter()
            .map(|t| (t.joint, t.target, t.interpolation, t.key_count as usize));
        let compact = self.compact.iter().flat_map(|c| {
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
        if self.compact.is_some() {
            assert!(i < self.track_count(), "channel {i} out of range");
            return &[];
        }
        let t = &self.tracks[i];
        &self.times[t.time_start as usize..(t.time_start + t.key_count) as usize]
    }

    /// Evaluates a STEP or CUBICSPLINE channel (or any channel, slowly) in segment `k`
    /// (keys `k` and `k + 1`) at `u` in 0..=1 through the segment, which is time `t`.
    #[inline]
    pub(crate) fn eval_track(&self, track: &Track, k: usize, u: f32, t: f32, out: &mut Transform) {
        let ts = track.time_start as usize;
        let vs = track.value_start as usize;
        let t1 = self.times[ts + k + 1];
        let dt = t1 - self.times[ts + k];
        // STEP switches exactly at the next key's time (u may round to just below 1 there).
        let step_key = if t >= t1 { k + 1 } else { k };
        match (track.target, track.interpolation) {
            (Target::Rotation, Interpolation::Linear) => {
                let seg = self.slerp[vs + k];
                out.rotation =
                    slerp_weights_apply(self.quats[vs + k], self.quats[vs + k + 1], seg, u);
            }
            (Target::Rotation, Interpolation::Step) => {
                out.rotation = self.quats[vs + step_key];
            }
            (Target::Rotation, Interpolation::CubicSpline) => {
                let q = |i: usize| Vec4::from(self.quats[vs + i]);
                let v = hermite(
                    q(3 * k + 1),
                    q(3 * k + 2),
                    q(3 * k + 3),
                    q(3 * k + 4),
                    dt,
                    u,
                );
                out.rotation = Quat::from_vec4(v.normalize_or(Vec4::W));
            }
            (target, interp) => {
                let v = match interp {
                    Interpolation::Linear => {
                        self.vec3s[vs + k].lerp(self.vec3s[vs + k + 1], u).into()
                    }
                    Interpolation::Step => self.vec3s[vs + step_key].into(),
                    Interpolation::CubicSpline => {
                        let p = |i: usize| self.vec3s[vs + i].extend(0.0);
                        hermite(
                            p(3 * k + 1),
                            p(3 * k + 2),
                            p(3 * k + 3),
                            p(3 * k + 4),
                            dt,
                            u,
                        )
                        .truncate()
                    }
                };
                if target == Target::Translation {
                    out.translation = v;
                } else {
                    out.scale = v;
                }
            }
        }
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

    /// Animated channel `i` (in [`Clip::channels`] order) with its keys, for exporters and
    /// tools: times, and values (three per key for cubic channels: in-tangent, value,
    /// out-tangent). `None` past the last channel, and for compact clips (whose keys are
    /// bits: [`Clip::decompressed`] gives them as a clip with keys).
    pub fn channel(&self, i: usize) -> Option<ChannelView<'_>> {
        let t = self.tracks.get(i)?;
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
            times: self.track_times(t),
            values: match t.target {
                Target::Rotation => ChannelValues::Quat(&self.quats[vs..vs + n]),
                _ => ChannelValues::Vec3(&self.vec3s[vs..vs + n]),
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

    /// The additive version of this clip relative to `reference` (one local transform per
    /// joint): every key becomes its delta from the reference, as
    /// [`crate::additive_delta`] defines it (translation minus, rotation `ref⁻¹ · q` in the
    /// joint's frame, scale divided), so that applying the additive clip with weight 1 on top
    /// of `reference` gives this clip back. Joints without channels become the delta of their
    /// base pose. Use the clip's own first frame as the reference for "what changes over the
    /// clip" ([`Clip::to_additive_from_first_frame`]). A compact clip gives a clip with keys
    /// (its decoded keys' deltas).
    ///
    /// The deltas are exact for every interpolation: they are affine in the keys (tangents
    /// are transformed alike), and left-multiplying rotation keys by a fixed unit quaternion
    /// keeps the angles between them, so slerps between delta keys are the deltas of slerps.
    ///
    /// # Errors
    /// [`Error::Length`] if `reference` has fewer entries than the clip has joints.
    pub fn to_additive(&self, reference: &[Transform]) -> Result<Clip, Error> {
        crate::error::check_len("additive reference", self.joint_count(), reference.len())?;
        if self.compact.is_some() {
            // Deltas of quantised values are not quantised: work on the decoded keys.
            return self.decompressed().to_additive(reference);
        }
        let mut out = self.clone();
        out.id = NEXT_CLIP_ID.fetch_add(1, Ordering::Relaxed);
        for (j, b) in out.base.iter_mut().enumerate() {
            *b = crate::pose::additive_delta(b, &reference[j]);
        }
        let safe = |v: f32| if v.abs() > f32::MIN_POSITIVE { v } else { 1.0 };
        for tr in self.tracks.iter() {
            let r = &reference[tr.joint as usize];
            let per = if tr.interpolation == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            let n = tr.key_count as usize * per;
            let vs = tr.value_start as usize;
            match tr.target {
                Target::Translation => {
                    for (i, v) in out.vec3s[vs..vs + n].iter_mut().enumerate() {
                        // Tangents (in, out of cubic keys) are differences: unchanged.
                        if per == 1 || i % 3 == 1 {
                            *v -= Vec3A::from(r.translation);
                        }
                    }
                }
                Target::Scale => {
                    let inv =
                        Vec3A::ONE / Vec3A::new(safe(r.scale.x), safe(r.scale.y), safe(r.scale.z));
                    for v in &mut out.vec3s[vs..vs + n] {
                        *v *= inv;
                    }
                }
                Target::Rotation => {
                    let inv = r.rotation.conjugate();
                    for q in &mut out.quats[vs..vs + n] {
                        *q = inv * *q;
                    }
                }
            }
        }
        Ok(out)
    }

    /// The same clip with every translation (keys, tangents and base pose) multiplied by
    /// `factor`, for unit conversion; a new clip as far as sampling caches are concerned.
    pub fn scaled(&self, factor: f32) -> Clip {
        let mut out = self.clone();
        out.id = NEXT_CLIP_ID.fetch_add(1, Ordering::Relaxed);
        for b in out.base.iter_mut() {
            b.translation *= factor;
        }
        if let Some(c) = &mut out.compact {
            c.scale_translations(factor);
        }
        for tr in self
            .tracks
            .iter()
            .filter(|t| t.target == Target::Translation)
        {
            let per = if tr.interpolation == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            let vs = tr.value_start as usize;
            for v in &mut out.vec3s[vs..vs + tr.key_count as usize * per] {
                *v *= factor;
            }
        }
        out
    }

    /// The clip with its keys as arrays: for a compact clip, every stored key decoded (LINEAR
    /// or STEP channels at the grid's frame times, with a key added in the middle of any
    /// rotation pair more than 180 degrees apart so the path stays the same; this samples like
    /// the compact clip up to the slerp/nlerp difference between keys), for exporters and
    /// edits; any other clip is returned as it is. Never a compact clip.
    pub fn decompressed(&self) -> std::borrow::Cow<'_, Clip> {
        let Some(c) = &self.compact else {
            return std::borrow::Cow::Borrowed(self);
        };
        let mut channels: Vec<RawChannel> = c.decoded_channels(self.start, self.duration);
        for &(j, target, v) in c.constants.iter() {
            channels.push(RawChannel {
                joint: j.to_string(),
                target,
                interpolation: Interpolation::Linear,
                times: vec![self.start],
                values: match target {
                    Target::Rotation => RawValues::Quat(vec![Quat::from_vec4(v)]),
                    _ => RawValues::Vec3(vec![v.truncate()]),
                },
            });
        }
        // Joint names are not known here: channels name joints by index, bound to a
        // skeleton of numbered joints with the clip's base pose as rest pose.
        let raw = RawClip {
            name: self.name.clone(),
            start: self.start,
            duration: self.duration,
            channels,
        };
        let built = crate::skeleton::numbered(&self.base).and_then(|s| raw.build(&s));
        let built = built.map(|mut k| {
            k.events = self.events.clone();
            k.base = self.base.clone();
            k
        });
        std::borrow::Cow::Owned(built.unwrap_or_else(|_| {
            // Unreachable for a validated compact clip (finite, increasing times and finite
            // values); the clip's pose alone keeps this total, never the compact clip again.
            Clip::from_compact(
                self.name.clone(),
                self.start,
                self.duration,
                self.base.to_vec(),
                (0..self.base.len() as JointIndex).collect(),
                crate::compress::Compact::new(
                    1.0,
                    1,
                    1.0,
                    Vec::new(),
                    Vec::new(),
                    vec![0],
                    vec![0; 8],
                ),
                self.events.to_vec(),
            )
            .without_compact()
        }))
    }

    /// The clip with its compact data dropped: its base pose alone.
    fn without_compact(mut self) -> Clip {
        self.compact = None;
        self
    }

    /// [`Clip::to_additive`] relative to this clip's own first frame.
    pub fn to_additive_from_first_frame(&self) -> Clip {
        let mut first = vec![Transform::IDENTITY; self.joint_count()];
        // The pose has exactly the clip's joint count.
        let _ = crate::sample_uncached(self, self.start, &mut first);
        match self.to_additive(&first) {
            Ok(c) => c,
            // Unreachable: `first` has one entry per joint.
            Err(_) => self.clone(),
        }
    }

    /// Number of distinct key-time arrays (channels keyed at the same times share one).
    pub fn timeline_count(&self) -> usize {
        self.timelines.len()
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// A clip around compact data (from [`crate::compress`] or a file).
    pub(crate) fn from_compact(
        name: String,
        start: f32,
        duration: f32,
        base: Vec<Transform>,
        static_joints: Vec<JointIndex>,
        compact: crate::compress::Compact,
        events: Vec<ClipEvent>,
    ) -> Clip {
        Clip {
            id: NEXT_CLIP_ID.fetch_add(1, Ordering::Relaxed),
            name,
            start,
            duration,
            base: base.into(),
            tracks: Box::new([]),
            groups: [0; 3],
            timelines: Box::new([]),
            static_joints: static_joints.into(),
            times: Box::new([]),
            vec3s: Box::new([]),
            quats: Box::new([]),
            slerp: Box::new([]),
            counts: ChannelCounts::default(),
            events: events.into(),
            compact: Some(Box::new(compact)),
        }
    }
}

/// Slerp from `a` to `b` (same hemisphere) with the segment's precomputed angle.
#[inline(always)]
pub(crate) fn slerp_weights_apply(a: Quat, b: Quat, seg: SlerpSegment, u: f32) -> Quat {
    let w0 = crate::transform::sin_0_half_pi((1.0 - u) * seg.angle) * seg.inv_sin;
    let w1 = crate::transform::sin_0_half_pi(u * seg.angle) * seg.inv_sin;
    Quat::from_vec4(Vec4::from(a) * w0 + Vec4::from(b) * w1)
}

/// glTF's cubic Hermite spline between value `v0` (out-tangent `b0`) and value `v1`
/// (in-tangent `a1`), tangents per second, over a segment `dt` seconds long, at `u` in 0..1.
#[inline(always)]
fn hermite(v0: Vec4, b0: Vec4, a1: Vec4, v1: Vec4, dt: f32, u: f32) -> Vec4 {
    let u2 = u * u;
    let u3 = u2 * u;
    v0 * (2.0 * u3 - 3.0 * u2 + 1.0)
        + b0 * (dt * (u3 - 2.0 * u2 + u))
        + v1 * (-2.0 * u3 + 3.0 * u2)
        + a1 * (dt * (u3 - u2))
}

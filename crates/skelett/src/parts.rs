//! A built clip's internal arrays, for serializers: [`Clip::to_parts`] hands them out and
//! [`Clip::from_parts`] takes them back after checking every invariant sampling relies on,
//! in one linear pass with no rebuild (no key reduction, no hashing, no trigonometry), so
//! that a native asset file loads at the speed of reading its bytes.

use glam::{Quat, Vec3A};

use crate::clip::{ChannelCounts, Track};
use crate::transform::SlerpSegment;
use crate::{Clip, ClipEvent, Error, Interpolation, JointIndex, Target, Transform};

/// One channel of [`ClipParts`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackPart {
    /// The joint it animates.
    pub joint: JointIndex,
    /// What it animates.
    pub target: Target,
    /// How values between keys are computed.
    pub interpolation: Interpolation,
    /// Index of its timeline in [`ClipParts::timelines`].
    pub timeline: u32,
    /// First value's index in [`ClipParts::vec3s`] or [`ClipParts::quats`].
    pub value_start: u32,
}

/// Everything a built [`Clip`] holds, as plain arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipParts {
    /// Name.
    pub name: String,
    /// First frame's time.
    pub start: f32,
    /// Length in seconds.
    pub duration: f32,
    /// Pose of joints no channel moves (one per joint).
    pub base: Vec<Transform>,
    /// Channels, grouped: LINEAR rotations, LINEAR translations, LINEAR scales, the rest.
    pub tracks: Vec<TrackPart>,
    /// Key-time arrays as (first index in `times`, key count).
    pub timelines: Vec<(u32, u32)>,
    /// Key times.
    pub times: Vec<f32>,
    /// Translation and scale values.
    pub vec3s: Vec<Vec3A>,
    /// Rotation values.
    pub quats: Vec<Quat>,
    /// Per rotation value: the angle to the next key and its reciprocal sine.
    pub slerp: Vec<SlerpSegment>,
    /// Events, sorted by time.
    pub events: Vec<ClipEvent>,
    /// How many channels were constant when the clip was built (for reports).
    pub constant_channels: usize,
}

fn group(interp: Interpolation, target: Target) -> usize {
    match (interp, target) {
        (Interpolation::Linear, Target::Rotation) => 0,
        (Interpolation::Linear, Target::Translation) => 1,
        (Interpolation::Linear, Target::Scale) => 2,
        _ => 3,
    }
}

impl Clip {
    /// The clip's arrays (see [`ClipParts`]).
    pub fn to_parts(&self) -> ClipParts {
        ClipParts {
            name: self.name.clone(),
            start: self.start,
            duration: self.duration,
            base: self.base.to_vec(),
            tracks: self
                .tracks
                .iter()
                .map(|t| TrackPart {
                    joint: t.joint,
                    target: t.target,
                    interpolation: t.interpolation,
                    timeline: t.timeline,
                    value_start: t.value_start,
                })
                .collect(),
            timelines: self.timelines.to_vec(),
            times: self.times.to_vec(),
            vec3s: self.vec3s.to_vec(),
            quats: self.quats.to_vec(),
            slerp: self.slerp.to_vec(),
            events: self.events.to_vec(),
            constant_channels: self.counts.constant,
        }
    }

    /// A clip from its arrays, after checking them: joints, timelines and value ranges in
    /// bounds, times finite and strictly increasing, values finite, tracks grouped, LINEAR
    /// rotation keys on one hemisphere with sane slerp angles, events inside the clip.
    ///
    /// ```
    /// # use skelett::*;
    /// # let s = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
    /// # let clip = RawClip { name: "c".into(), start: 0.0, duration: 1.0, channels: vec![RawChannel {
    /// #     joint: "j".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
    /// #     times: vec![0.0, 1.0], values: RawValues::Quat(vec![glam::Quat::IDENTITY,
    /// #     glam::Quat::from_rotation_x(1.0)]) }] }.build(&s).unwrap();
    /// let again = Clip::from_parts(clip.to_parts())?;
    /// assert_eq!(again, clip);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ClipRange`] naming the first broken invariant.
    pub fn from_parts(p: ClipParts) -> Result<Clip, Error> {
        let bad = |problem: String| Error::ClipRange {
            clip: p.name.clone(),
            problem,
        };
        let n = p.base.len();
        if n > crate::MAX_JOINTS {
            return Err(bad(format!("{n} joints")));
        }
        if !(p.start.is_finite() && p.duration.is_finite() && p.duration >= 0.0) {
            return Err(bad("start or duration not finite".into()));
        }
        if p.base.iter().any(|t| !t.is_finite()) {
            return Err(bad("base pose not finite".into()));
        }
        if p.times.len() > u32::MAX as usize
            || p.vec3s.len() > u32::MAX as usize
            || p.quats.len() > u32::MAX as usize
        {
            return Err(bad("too many keys".into()));
        }
        for (i, &(s, k)) in p.timelines.iter().enumerate() {
            let (s, k) = (s as usize, k as usize);
            if k < 2 || s.checked_add(k).is_none_or(|e| e > p.times.len()) {
                return Err(bad(format!("timeline {i} is out of range")));
            }
            let t = &p.times[s..s + k];
            // Branch-free folds (they vectorise): finite and strictly increasing.
            let finite = t.iter().fold(true, |ok, x| ok & (x.abs() <= f32::MAX));
            let increasing = t.windows(2).fold(true, |ok, w| ok & (w[1] > w[0]));
            if !(finite && increasing) {
                return Err(bad(format!(
                    "timeline {i}: times not finite and strictly increasing"
                )));
            }
        }
        let finite3 = p
            .vec3s
            .iter()
            .fold(true, |ok, v| ok & (v.abs().max_element() <= f32::MAX));
        let finite4 = p.quats.iter().fold(true, |ok, q| {
            ok & (q.x.abs().max(q.y.abs()).max(q.z.abs()).max(q.w.abs()) <= f32::MAX)
        });
        if !(finite3 && finite4) {
            return Err(bad("values not finite".into()));
        }
        if p.slerp.len() != p.quats.len() {
            return Err(bad("one slerp angle per rotation value needed".into()));
        }
        let mut tracks = Vec::with_capacity(p.tracks.len());
        let mut last_group = 0;
        let mut counts = ChannelCounts {
            constant: p.constant_channels,
            ..Default::default()
        };
        let mut animated = vec![0u8; n];
        for (i, t) in p.tracks.iter().enumerate() {
            let err = |what: &str| bad(format!("track {i}: {what}"));
            if t.joint as usize >= n {
                return Err(err("joint out of range"));
            }
            let &(time_start, key_count) = p
                .timelines
                .get(t.timeline as usize)
                .ok_or_else(|| err("timeline out of range"))?;
            let g = group(t.interpolation, t.target);
            if g < last_group {
                return Err(err("tracks not grouped by kind"));
            }
            last_group = g;
            let per = if t.interpolation == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            let vs = t.value_start as usize;
            let len = key_count as usize * per;
            let values = if t.target == Target::Rotation {
                p.quats.len()
            } else {
                p.vec3s.len()
            };
            if vs.checked_add(len).is_none_or(|e| e > values) {
                return Err(err("values out of range"));
            }
            if t.target == Target::Rotation && t.interpolation == Interpolation::Linear {
                let angles = p.slerp[vs..vs + len].iter().fold(
                    true,
                    |ok,
                     &SlerpSegment {
                         angle: a,
                         inv_sin: s,
                     }| {
                        ok & (0.0..=1.6).contains(&a) & (s.abs() <= f32::MAX)
                    },
                );
                if !angles {
                    return Err(err("slerp angle out of range"));
                }
                let keys = &p.quats[vs..vs + len];
                if !keys
                    .windows(2)
                    .fold(true, |ok, w| ok & (w[0].dot(w[1]) >= 0.0))
                {
                    return Err(err("rotation keys not on one hemisphere"));
                }
            }
            let slot = match t.interpolation {
                Interpolation::Step => 0,
                Interpolation::Linear => 1,
                Interpolation::CubicSpline => 2,
            };
            counts.tracks[slot] += 1;
            counts.keys[slot] += key_count as usize;
            animated[t.joint as usize] |= match t.target {
                Target::Translation => 1,
                Target::Rotation => 2,
                Target::Scale => 4,
            };
            tracks.push(Track {
                joint: t.joint,
                target: t.target,
                interpolation: t.interpolation,
                timeline: t.timeline,
                time_start,
                key_count,
                value_start: t.value_start,
            });
        }
        let mut groups = [0usize; 3];
        for (g, slot) in groups.iter_mut().enumerate() {
            *slot = tracks.partition_point(|t| group(t.interpolation, t.target) <= g);
        }
        let clip = Clip {
            id: crate::clip::next_clip_id(),
            name: p.name.clone(),
            start: p.start,
            duration: p.duration,
            base: p.base.into(),
            tracks: tracks.into(),
            groups,
            timelines: p.timelines.into(),
            static_joints: (0..n)
                .filter(|&j| animated[j] != 7)
                .map(|j| j as JointIndex)
                .collect(),
            times: p.times.into(),
            vec3s: p.vec3s.into(),
            quats: p.quats.into(),
            slerp: p.slerp.into(),
            counts,
            events: Box::new([]),
        };
        clip.with_events(p.events)
    }
}

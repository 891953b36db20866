//! A built clip's internal arrays, for serializers: [`Clip::to_parts`] hands them out and
//! [`Clip::from_parts`] takes them back after checking every invariant sampling relies on,
//! in one linear pass with no rebuild (no key reduction, no hashing, no trigonometry), so
//! that a native asset file loads at the speed of reading its bytes.

use glam::{Quat, Vec3A};

use crate::clip::{ChannelCounts, Keys, Storage, Track};
use crate::compress::{Compact, CompactLayout, CompactTrack, MAX_BITS, SEG_LEN};
use crate::transform::SlerpSegment;
use crate::{Clip, ClipEvent, Error, Interpolation, JointIndex, Target, Transform};
use glam::Quat as GQuat;

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
    /// The identity of the skeleton the clip is for ([`crate::Skeleton::id`]).
    pub skeleton: crate::SkeletonId,
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
    /// The clip's arrays (see [`ClipParts`]); for a compact clip, those of
    /// [`Clip::decompressed`] (use [`Clip::compact_parts`] to keep it compact).
    pub fn to_parts(&self) -> ClipParts {
        let Storage::Keyed(keys) = &self.storage else {
            return self.decompressed().to_parts();
        };
        ClipParts {
            skeleton: self.skeleton,
            name: self.name.clone(),
            start: self.start,
            duration: self.duration,
            base: self.base.to_vec(),
            tracks: keys
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
            timelines: keys.timelines.to_vec(),
            times: keys.times.to_vec(),
            vec3s: keys.vec3s.to_vec(),
            quats: keys.quats.to_vec(),
            slerp: keys.slerp.to_vec(),
            events: self.events.to_vec(),
            constant_channels: keys.counts.constant,
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
            skeleton: p.skeleton,
            name: p.name.clone(),
            start: p.start,
            duration: p.duration,
            base: p.base.into(),
            static_joints: (0..n)
                .filter(|&j| animated[j] != 7)
                .map(|j| j as JointIndex)
                .collect(),
            events: Box::new([]),
            morph: Default::default(),
            frame_rate: None,
            storage: Storage::Keyed(
                Keys {
                    tracks: tracks.into(),
                    groups,
                    timelines: p.timelines.into(),
                    times: p.times.into(),
                    vec3s: p.vec3s.into(),
                    quats: p.quats.into(),
                    slerp: p.slerp.into(),
                    counts,
                    lanes: Default::default(),
                }
                .lay_out(),
            ),
        };
        clip.with_events(p.events)
    }
}

/// A compact clip ([`crate::compress`]) as plain arrays, for serializers:
/// [`Clip::compact_parts`] hands them out and [`Clip::from_compact_parts`] takes them back
/// after checking every invariant its decoder relies on.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactParts {
    /// Name.
    pub name: String,
    /// First frame's time.
    pub start: f32,
    /// Length in seconds.
    pub duration: f32,
    /// Frames per second of the grid.
    pub rate: f32,
    /// Frames on the grid.
    pub frames: u32,
    /// Length of the last frame interval, in frames (0, 1].
    pub last_span: f32,
    /// The animated channels.
    pub tracks: Vec<CompactTrack>,
    /// Channels with one value (x, y, z, w for rotations; w unused for vectors).
    pub constants: Vec<(JointIndex, Target, [f32; 4])>,
    /// Bit offset of each segment in `data`.
    pub segments: Vec<u32>,
    /// How `data` lays out each segment's keys.
    pub layout: CompactLayout,
    /// The bit streams (no padding).
    pub data: Vec<u8>,
    /// Events, sorted by time.
    pub events: Vec<ClipEvent>,
}

impl Clip {
    /// A compact clip's arrays; `None` for a clip with keys.
    pub fn compact_parts(&self) -> Option<CompactParts> {
        let Storage::Compact(c) = &self.storage else {
            return None;
        };
        Some(CompactParts {
            name: self.name.clone(),
            start: self.start,
            duration: self.duration,
            rate: c.rate,
            frames: c.frames,
            last_span: c.last_span,
            tracks: c.tracks.to_vec(),
            constants: c
                .constants
                .iter()
                .map(|&(j, t, v)| (j, t, v.to_array()))
                .collect(),
            segments: c.segments.to_vec(),
            layout: c.layout,
            data: match &c.lanes {
                Some(lanes) => lanes.to_bytes(),
                None => c.data[..c.data.len().saturating_sub(8)].to_vec(),
            },
            events: self.events.to_vec(),
        })
    }

    /// A compact clip from its arrays, for `skeleton` (the rest pose fills joints no channel
    /// moves; the clip records the skeleton's id), after
    /// checking them: joints in range, one channel per joint and target, finite values,
    /// quantisation widths, a grid that segments cover exactly, and every segment's bit
    /// stream (headers, masks, widths, lengths) ending where the next begins.
    ///
    /// # Errors
    /// [`Error::ClipRange`] naming the first broken invariant.
    pub fn from_compact_parts(skeleton: &crate::Skeleton, p: CompactParts) -> Result<Clip, Error> {
        let rest = skeleton.rest_pose();
        let bad = |problem: String| Error::ClipRange {
            clip: p.name.clone(),
            problem,
        };
        let n = rest.len();
        if n > crate::MAX_JOINTS {
            return Err(bad(format!("{n} joints")));
        }
        if !p.start.is_finite()
            || !p.duration.is_finite()
            || p.duration < 0.0
            || !(p.start + p.duration).is_finite()
        {
            return Err(bad(format!("time range {} + {}", p.start, p.duration)));
        }
        if !(p.rate.is_finite() && p.rate > 0.0 && p.rate <= 10_000.0) {
            return Err(bad(format!("grid rate {}", p.rate)));
        }
        // The grid the compressor makes: the frames that cover the duration (whole frames,
        // plus one for a shorter last interval), so that decoded times increase.
        let x = f64::from(p.duration) * f64::from(p.rate);
        let lo = if p.duration > 0.0 {
            x.floor().max(1.0) + 1.0
        } else {
            1.0
        };
        if (f64::from(p.frames) < lo - 1.0) || f64::from(p.frames) > x.floor() + 2.0 {
            return Err(bad(format!(
                "{} grid frames for {} s at {} fps",
                p.frames, p.duration, p.rate
            )));
        }
        if p.frames == 0 || (!p.tracks.is_empty() && p.frames < 2) || p.frames > 1 << 26 {
            return Err(bad(format!(
                "{} grid frames for {} tracks",
                p.frames,
                p.tracks.len()
            )));
        }
        if !(p.last_span > 0.0 && p.last_span <= 1.0) {
            return Err(bad(format!("last frame span {}", p.last_span)));
        }
        // The seekable and lanes readers find keys by frame index, the streamed one by
        // position: they agree while every frame is an exact f32, as on every grid the
        // compressor makes.
        // The lanes layout's table is sized by its keys, and it too finds keys by frame.
        if p.layout != CompactLayout::Stream && p.frames > crate::compress::MAX_FRAMES {
            return Err(bad(format!(
                "{} grid frames in the {:?} layout (at most {})",
                p.frames,
                p.layout,
                crate::compress::MAX_FRAMES
            )));
        }
        let segs = if p.layout == CompactLayout::Lanes {
            0
        } else {
            p.frames.div_ceil(SEG_LEN) as usize
        };
        if p.segments.len() != segs {
            return Err(bad(format!(
                "{} segments for {} frames (need {segs})",
                p.segments.len(),
                p.frames
            )));
        }
        let mut seen = std::collections::HashSet::new();
        let mut base = rest.to_vec();
        let mut animated = vec![0u8; n];
        for (i, t) in p.tracks.iter().enumerate() {
            if t.joint as usize >= n || !seen.insert((t.joint, t.target)) {
                return Err(bad(format!(
                    "track {i}: joint {} {} out of range or repeated",
                    t.joint, t.target
                )));
            }
            // Every value the integers can give must be finite.
            let top =
                |c: usize| t.min[c] + ((1u32 << t.bits[c].min(MAX_BITS)) - 1) as f32 * t.scale[c];
            if t.bits.iter().any(|&b| b > MAX_BITS)
                || (t.target != Target::Rotation && t.bits[3] != 0)
                || t.min.iter().chain(&t.scale).any(|v| !v.is_finite())
                || (0..4).any(|c| !top(c).is_finite())
                || !t.nlerp_dot.is_finite()
            {
                return Err(bad(format!("track {i}: bad quantisation {t:?}")));
            }
            animated[t.joint as usize] |= 1 << (t.target as u8);
        }
        let mut constants = Vec::with_capacity(p.constants.len());
        for (i, &(j, target, v)) in p.constants.iter().enumerate() {
            let v = glam::Vec4::from_array(v);
            let zero_rotation = target == Target::Rotation && v.length_squared() < 1e-12;
            if j as usize >= n || !seen.insert((j, target)) || !v.is_finite() || zero_rotation {
                return Err(bad(format!("constant {i}: joint {j} {target} = {v}")));
            }
            let b = &mut base[j as usize];
            match target {
                Target::Translation => b.translation = v.truncate(),
                Target::Rotation => b.rotation = GQuat::from_vec4(v).normalize(),
                Target::Scale => b.scale = v.truncate(),
            }
            constants.push((j, target, v));
        }
        if p.data.len() > (u32::MAX as usize - 64) / 8 {
            return Err(bad(format!("{} bytes of key data", p.data.len())));
        }
        let compact = if p.layout == CompactLayout::Lanes {
            let keys: Vec<_> = p
                .tracks
                .iter()
                .map(|t| (t.joint, t.target, t.step))
                .collect();
            let lanes = crate::clip::compact_lanes::PackedLanes::from_bytes(
                &p.data,
                &keys,
                p.frames,
                p.last_span,
            )
            .map_err(bad)?;
            let streams = Compact {
                rate: p.rate,
                frames: p.frames,
                last_span: p.last_span,
                tracks: p.tracks.clone().into(),
                segments: Box::new([]),
                data: Box::new([0u8; 8]),
                constants: constants.into(),
                keys: Box::new([]),
                layout: CompactLayout::Stream,
                lanes: None,
            };
            Compact::with_lanes(&streams, lanes)
        } else {
            Self::streams(&p, constants, bad)?
        };
        let static_joints = (0..n)
            .filter(|&j| animated[j] != 7)
            .map(|j| j as JointIndex)
            .collect();
        Clip::from_compact(
            skeleton.id(),
            p.name,
            p.start,
            p.duration,
            base,
            static_joints,
            compact,
            Vec::new(),
        )
        .with_events(p.events)
    }

    /// The streamed or seekable layout's data of `p`, checked.
    fn streams(
        p: &CompactParts,
        constants: Vec<(JointIndex, Target, glam::Vec4)>,
        bad: impl Fn(String) -> Error,
    ) -> Result<Compact, Error> {
        let mut data = p.data.clone();
        data.extend_from_slice(&[0u8; 8]);
        let compact = Compact {
            rate: p.rate,
            frames: p.frames,
            last_span: p.last_span,
            tracks: p.tracks.clone().into(),
            segments: p.segments.clone().into(),
            data: data.into(),
            constants: Box::new([]),
            keys: Box::new([]),
            layout: p.layout,
            lanes: None,
        };
        check_streams(&compact, p.data.len() as u64 * 8).map_err(bad)?;
        Ok(Compact::new(
            p.layout,
            p.rate,
            p.frames,
            p.last_span,
            p.tracks.clone(),
            constants,
            p.segments.clone(),
            compact.data.to_vec(),
        ))
    }
}

/// Walks every segment's streams: each segment starts where the one before ends, every
/// header and mask is readable, widths are in range, an order-2 segment has two keys, the
/// clip's last frame is a key, and the last stream ends in the last byte.
fn check_streams(c: &Compact, total_bits: u64) -> Result<(), String> {
    use crate::clip::compact::{SegHeader, MAX_WIDTH};
    let mut pos = 0u64;
    for s in 0..c.segment_count() {
        if u64::from(c.segments[s as usize]) != pos {
            return Err(format!(
                "segment {s} starts at bit {}, the one before ends at {pos}",
                c.segments[s as usize]
            ));
        }
        let len = c.segment_len(s);
        let last_segment = s + 1 == c.segment_count();
        for (i, tr) in c.tracks.iter().enumerate() {
            let rot = tr.target == Target::Rotation;
            if pos + 23 + u64::from(SEG_LEN) > total_bits + 64 {
                return Err(format!("segment {s}, track {i}: stream past the data"));
            }
            let (h, hb) = SegHeader::read(&c.data, pos as u32, rot);
            if h.widths.iter().any(|&w| u32::from(w) > MAX_WIDTH) {
                return Err(format!("segment {s}, track {i}: widths {:?}", h.widths));
            }
            let keys = if h.sparse {
                let m = crate::clip::compact::read_bits(&c.data, pos as u32 + hb, len - 1);
                if last_segment && len > 1 && m & (1 << (len - 2)) == 0 {
                    return Err(format!("track {i}: the clip's last frame is not a key"));
                }
                1 + m.count_ones()
            } else {
                len
            };
            if c.layout == CompactLayout::Seek {
                // No prediction; a key's offsets from the base fit the component's bits.
                let (lanes, n) = crate::clip::compact::stored(h.drop);
                if h.order2 || (0..n).any(|k| h.widths[k] > tr.bits[lanes[k]]) {
                    return Err(format!(
                        "segment {s}, track {i}: seekable header {h:?} for bits {:?}",
                        tr.bits
                    ));
                }
            }
            if h.order2 && keys < 2 {
                return Err(format!(
                    "segment {s}, track {i}: order-2 prediction over one key"
                ));
            }
            pos += u64::from(c.track_bits(tr, s, pos as u32));
            if pos > total_bits {
                return Err(format!("segment {s}, track {i}: stream past the data"));
            }
        }
    }
    if pos.div_ceil(8) != total_bits / 8 {
        return Err(format!(
            "streams end at bit {pos}, the data holds {total_bits}"
        ));
    }
    Ok(())
}

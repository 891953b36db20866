//! Raw clips, as importers make them, and [`RawClip::build`]: validation (finite, strictly
//! increasing times; value counts that match the interpolation), binding every channel to a
//! joint of the skeleton by name (every miss reported), lossless key reduction
//! (`reduce.rs`), and the layout sampling reads (tracks grouped by kind, shared timelines,
//! precomputed slerp angles).

use std::collections::HashMap;

use glam::Vec3A;

use super::reduce::{reduce_channel, KeyValues};
use crate::clip::{
    interp_slot, next_clip_id, BuildOptions, BuildReport, ChannelCounts, Clip, Interpolation, Keys,
    RawChannel, RawClip, RawValues, Storage, Target, Track, UnboundChannels,
};
use crate::transform::SlerpSegment;
use crate::{Error, JointIndex, Skeleton};

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
            id: next_clip_id(),
            skeleton: skeleton.id(),
            name: self.name.clone(),
            start: self.start,
            duration: self.duration,
            base: skeleton.rest_pose().into(),
            static_joints: Box::new([]),
            events: Box::new([]),
            storage: Storage::Keyed(Keys::default()),
            morph: crate::clip::morph::MorphWeights {
                base: skeleton.morph_rest().into(),
                tracks: Box::new([]),
            },
            frame_rate: None,
        };
        let mut counts = ChannelCounts::default();
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
                    counts.constant += 1;
                }
                continue;
            }
            let n = keys.times.len();
            report.keys_out += n;
            counts.tracks[interp_slot(ch.interpolation)] += 1;
            counts.keys[interp_slot(ch.interpolation)] += n;
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
        let mut groups = [0; 3];
        for (g, end) in groups.iter_mut().enumerate() {
            *end = tracks.partition_point(|t| group(t) <= g);
        }
        clip.storage = Storage::Keyed(
            Keys {
                tracks: tracks.into(),
                groups,
                timelines: timelines.into(),
                times: times.into(),
                vec3s: vec3s.into(),
                quats: quats.into(),
                slerp: slerp.into(),
                counts,
                lanes: Default::default(),
            }
            .lay_out(),
        );
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

//! Clips made from clips: additive deltas ([`Clip::to_additive`]), uniformly scaled
//! translations ([`Clip::scaled`]) and compact clips decoded back to keys
//! ([`Clip::decompressed`]). Each returns a new clip with its own identity.

use glam::{Quat, Vec3, Vec3A};

use crate::clip::{Clip, Interpolation, Keys, RawChannel, RawClip, RawValues, Storage, Target};
use crate::{Error, JointIndex, Transform};

impl Clip {
    /// The additive version of this clip relative to `reference` (one local transform per
    /// joint): every key becomes its delta from the reference, as
    /// [`crate::additive_delta`] defines it (translation minus, rotation `ref⁻¹ · q` in the
    /// joint's frame, scale divided), so that applying the additive clip with weight 1 on top
    /// of `reference` gives this clip back. Joints without channels become the delta of their
    /// base pose. Use the clip's own first frame as the reference for "what changes over the
    /// clip" ([`Clip::to_additive_from_first_frame`]). A compact clip gives a clip with keys
    /// (its decoded keys' deltas).
    ///
    /// Morph weights are deltas already (from weight 0, which an additive layer adds), so
    /// they are kept as they are; [`Clip::to_additive_from_first_frame`] subtracts the first
    /// frame's weights as well.
    ///
    /// The deltas are exact for every interpolation: they are affine in the keys (tangents
    /// are transformed alike), and left-multiplying rotation keys by a fixed unit quaternion
    /// keeps the angles between them, so slerps between delta keys are the deltas of slerps.
    ///
    /// # Errors
    /// [`Error::Length`] if `reference` has fewer entries than the clip has joints.
    pub fn to_additive(&self, reference: &[Transform]) -> Result<Clip, Error> {
        crate::error::check_len("additive reference", self.joint_count(), reference.len())?;
        let Storage::Keyed(keys) = &self.storage else {
            // Deltas of quantised values are not quantised: work on the decoded keys.
            return self.decompressed().to_additive(reference);
        };
        let mut out = self.clone();
        out.id = crate::clip::next_clip_id();
        for (j, b) in out.base.iter_mut().enumerate() {
            *b = crate::pose::additive_delta(b, &reference[j]);
        }
        let Storage::Keyed(out_keys) = &mut out.storage else {
            unreachable!("a clone of a keyed clip is keyed")
        };
        let safe = |v: f32| if v.abs() > f32::MIN_POSITIVE { v } else { 1.0 };
        for tr in keys.tracks.iter() {
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
                    for (i, v) in out_keys.vec3s[vs..vs + n].iter_mut().enumerate() {
                        // Tangents (in, out of cubic keys) are differences: unchanged.
                        if per == 1 || i % 3 == 1 {
                            *v -= Vec3A::from(r.translation);
                        }
                    }
                }
                Target::Scale => {
                    let inv =
                        Vec3A::ONE / Vec3A::new(safe(r.scale.x), safe(r.scale.y), safe(r.scale.z));
                    for v in &mut out_keys.vec3s[vs..vs + n] {
                        *v *= inv;
                    }
                }
                Target::Rotation => {
                    let inv = r.rotation.conjugate();
                    for q in &mut out_keys.quats[vs..vs + n] {
                        *q = inv * *q;
                    }
                }
            }
        }
        out_keys.refresh_lanes();
        Ok(out)
    }

    /// The same clip with every translation (keys, tangents and base pose) multiplied by
    /// `factor`, for unit conversion; a new clip as far as sampling caches are concerned.
    pub fn scaled(&self, factor: f32) -> Clip {
        let mut out = self.clone();
        out.id = crate::clip::next_clip_id();
        for b in out.base.iter_mut() {
            b.translation *= factor;
        }
        match &mut out.storage {
            Storage::Compact(c) => c.scale_translations(factor),
            Storage::Keyed(keys) => {
                for tr in keys
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
                    for v in &mut keys.vec3s[vs..vs + tr.key_count as usize * per] {
                        *v *= factor;
                    }
                }
                keys.refresh_lanes();
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
        let Storage::Compact(c) = &self.storage else {
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
            k.morph = self.morph.clone();
            k.base = self.base.clone();
            k.skeleton = self.skeleton;
            k.frame_rate = self.frame_rate;
            k
        });
        std::borrow::Cow::Owned(built.unwrap_or_else(|_| {
            // Unreachable for a validated compact clip (finite, increasing times and finite
            // values); the clip's pose alone keeps this total, never the compact clip again.
            Clip {
                id: crate::clip::next_clip_id(),
                skeleton: self.skeleton,
                name: self.name.clone(),
                start: self.start,
                duration: self.duration,
                base: self.base.clone(),
                static_joints: (0..self.base.len() as JointIndex).collect(),
                events: self.events.clone(),
                storage: Storage::Keyed(Keys::default()),
                morph: self.morph.clone(),
                frame_rate: self.frame_rate,
            }
        }))
    }

    /// [`Clip::to_additive`] relative to this clip's own first frame.
    pub fn to_additive_from_first_frame(&self) -> Clip {
        let mut first = vec![Transform::IDENTITY; self.joint_count()];
        // The pose has exactly the clip's joint count.
        let _ = crate::sample_uncached(self, self.start, &mut first);
        let mut out = match self.to_additive(&first) {
            Ok(c) => c,
            // Unreachable: `first` has one entry per joint.
            Err(_) => self.clone(),
        };
        let mut weights = vec![0.0; self.morph_channel_count()];
        let _ = crate::sample_morph_weights(self, self.start, &mut weights);
        // Channels without a track hold their base: relative to the first frame, 0. An
        // animated channel's base is never sampled; it stays what `with_morph_tracks` gives
        // it (the rest weight), so that the clip reads back from a file equal to itself.
        let mut animated = vec![false; weights.len()];
        for t in out.morph.tracks.iter() {
            animated[t.channel as usize] = true;
        }
        for ((b, w), _) in out
            .morph
            .base
            .iter_mut()
            .zip(&weights)
            .zip(&animated)
            .filter(|(_, &a)| !a)
        {
            *b -= w;
        }
        for t in out.morph.tracks.iter_mut() {
            let w = weights[t.channel as usize];
            let cubic = t.interpolation == Interpolation::CubicSpline;
            for (i, v) in t.values.iter_mut().enumerate() {
                // Tangents are differences: unchanged.
                if !cubic || i % 3 == 1 {
                    *v -= w;
                }
            }
        }
        out
    }
}

/// The closing interval [`Clip::closed_loop`] uses for a clip without a frame rate: one
/// frame at 30 frames per second.
pub const DEFAULT_CLOSING_INTERVAL: f32 = 1.0 / 30.0;

impl Clip {
    /// The clip as a *closed cycle* (RiTE's and the FBX article's looping): one frame
    /// interval longer (`1 / frame_rate`, or [`DEFAULT_CLOSING_INTERVAL`]), every channel
    /// (joints and morph weights) going from its last key back to its first over that
    /// interval, so a clip whose last key differs from its first loops without a jump at the
    /// seam. A channel that already ends where it starts only holds a little longer; a
    /// constant one is unchanged, and a clip without tracks (a pose) is returned as it is.
    /// A compressed clip comes back with keys (compress it again). Events, the frame rate
    /// and the name are kept. Root motion
    /// over a closed cycle comes back to where it started: close in-place cycles, not
    /// clips that travel.
    ///
    /// ```
    /// # use skelett::*;
    /// # use glam::Vec3;
    /// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build()?;
    /// let sway = RawClip { name: "sway".into(), start: 0.0, duration: 0.9, channels: vec![RawChannel {
    ///     joint: "root".into(), target: Target::Translation, interpolation: Interpolation::Linear,
    ///     times: vec![0.0, 0.9], values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::X * 0.9]) }] }
    ///     .build(&skeleton)?
    ///     .with_frame_rate(Some(10.0));
    /// let closed = sway.closed_loop(&skeleton)?;
    /// assert!((closed.duration() - 1.0).abs() < 1e-6); // one frame at 10 fps longer
    /// let mut pose = vec![Transform::IDENTITY; 1];
    /// sample_uncached(&closed, 0.95, &mut pose)?; // half way back from 0.9 to 0
    /// assert!((pose[0].translation.x - 0.45).abs() < 1e-5);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::SkeletonMismatch`] if the clip was not built for `skeleton`; the builders'
    /// errors otherwise (none for a clip that built once).
    pub fn closed_loop(&self, skeleton: &crate::Skeleton) -> Result<Clip, Error> {
        if !self.fits(skeleton) {
            return Err(Error::SkeletonMismatch {
                clip: self.joint_count(),
                skeleton: skeleton.len(),
            });
        }
        if self.track_count() == 0 && !self.animates_morph_weights() {
            // A pose: nothing to close.
            return Ok(self.clone());
        }
        let keyed = self.decompressed();
        let interval = self
            .frame_rate
            .map_or(DEFAULT_CLOSING_INTERVAL, |r| 1.0 / r);
        let end = self.end() + interval;
        let mut animated = vec![[false; 3]; skeleton.len()];
        let mut channels = Vec::new();
        let mut i = 0;
        while let Some(ch) = keyed.channel(i) {
            i += 1;
            let slot = match ch.target {
                Target::Translation => 0,
                Target::Rotation => 1,
                Target::Scale => 2,
            };
            animated[ch.joint as usize][slot] = true;
            let cubic = ch.interpolation == Interpolation::CubicSpline;
            let mut times = ch.times.to_vec();
            let values = match ch.values {
                crate::ChannelValues::Vec3(v) => {
                    let mut v: Vec<Vec3> = v.iter().map(|&x| Vec3::from(x)).collect();
                    close_keys(&mut times, &mut v, cubic, self.end(), end, Vec3::ZERO);
                    RawValues::Vec3(v)
                }
                crate::ChannelValues::Quat(q) => {
                    let mut q = q.to_vec();
                    let zero = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0);
                    close_keys(&mut times, &mut q, cubic, self.end(), end, zero);
                    RawValues::Quat(q)
                }
            };
            channels.push(RawChannel {
                joint: skeleton.name(ch.joint).to_string(),
                target: ch.target,
                interpolation: ch.interpolation,
                times,
                values,
            });
        }
        // What no track moves: the clip's base pose, as one-key channels.
        for (j, (base, moved)) in keyed.base.iter().zip(&animated).enumerate() {
            let joint = skeleton.name(j as JointIndex).to_string();
            for (slot, target) in [Target::Translation, Target::Rotation, Target::Scale]
                .into_iter()
                .enumerate()
            {
                if moved[slot] {
                    continue;
                }
                channels.push(RawChannel {
                    joint: joint.clone(),
                    target,
                    interpolation: Interpolation::Linear,
                    times: vec![self.start],
                    values: match target {
                        Target::Rotation => RawValues::Quat(vec![base.rotation]),
                        Target::Translation => RawValues::Vec3(vec![base.translation]),
                        Target::Scale => RawValues::Vec3(vec![base.scale]),
                    },
                });
            }
        }
        let raw = RawClip {
            name: self.name.clone(),
            start: self.start,
            duration: self.duration + interval,
            channels,
        };
        let names = skeleton.morph_channel_names();
        let mut tracks: Vec<crate::RawMorphTrack> = Vec::new();
        let mut moved = vec![false; names.len()];
        for t in keyed.morph_tracks() {
            moved[t.channel] = true;
            let cubic = t.interpolation == Interpolation::CubicSpline;
            let mut times = t.times.to_vec();
            let mut values = t.values.to_vec();
            close_keys(&mut times, &mut values, cubic, self.end(), end, 0.0);
            tracks.push(crate::RawMorphTrack {
                channel: names[t.channel].clone(),
                interpolation: t.interpolation,
                times,
                values,
            });
        }
        for (c, (&w, _)) in keyed
            .morph_base()
            .iter()
            .zip(&moved)
            .enumerate()
            .filter(|(_, (_, &m))| !m)
        {
            tracks.push(crate::RawMorphTrack {
                channel: names[c].clone(),
                interpolation: Interpolation::Linear,
                times: vec![self.start],
                values: vec![w],
            });
        }
        let mut clip = raw.build(skeleton)?;
        if !tracks.is_empty() {
            clip = clip.with_morph_tracks(skeleton, tracks)?;
        }
        clip.events = self.events.clone();
        clip.frame_rate = self.frame_rate;
        Ok(clip)
    }
}

/// Closes one channel's keys for [`Clip::closed_loop`]: a channel whose keys stop before
/// `clip_end` first holds its last value there (so the closing interval is the clip's last
/// frame, not the whole gap), then a key at `end` takes its first value back. Cubic keys are
/// (in-tangent, value, out-tangent) triples; added ones are flat (`zero` tangents).
fn close_keys<T: Copy>(
    times: &mut Vec<f32>,
    values: &mut Vec<T>,
    cubic: bool,
    clip_end: f32,
    end: f32,
    zero: T,
) {
    let (first, last) = if cubic {
        (values[1], values[values.len() - 2])
    } else {
        (values[0], values[values.len() - 1])
    };
    let hold = times.last().is_some_and(|&t| t < clip_end);
    let mut add = |time: f32, v: T| {
        times.push(time);
        if cubic {
            values.extend([zero, v, zero]);
        } else {
            values.push(v);
        }
    };
    if hold {
        add(clip_end, last);
    }
    add(end, first);
}

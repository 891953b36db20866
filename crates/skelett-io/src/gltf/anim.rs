//! glTF animations to clips: each animation's samplers (STEP, LINEAR, CUBICSPLINE) on the
//! translation, rotation and scale of joint nodes become a [`RawClip`]'s channels, built for
//! the skeleton; `weights` channels on nodes whose mesh has morph targets become the clip's
//! morph-weight tracks, one per target ([`skelett::Clip::with_morph_tracks`]); events and
//! other skelett data come from the animation's `extras.skelett`.

use std::sync::Arc;

use glam::{Quat, Vec3};
use gltf::accessor::DataType;
use skelett::{Interpolation, JointIndex, RawChannel, RawClip, RawMorphTrack, RawValues, Target};

use super::accessor::Accept;
use super::Importer;
use crate::Error;

impl Importer<'_, '_> {
    pub(super) fn clips(
        &mut self,
        joint_of_node: &dyn Fn(usize) -> Option<JointIndex>,
        skeleton: &skelett::Skeleton,
    ) -> Result<Vec<Arc<skelett::Clip>>, Error> {
        let mut clips = Vec::new();
        for anim in self.doc.animations() {
            let location = format!("animations[{}]", anim.index());
            let name = anim
                .name()
                .map_or_else(|| format!("animation_{}", anim.index()), str::to_string);
            let mut raw = RawClip {
                name: name.clone(),
                ..Default::default()
            };
            let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
            let mut morph_tracks: Vec<RawMorphTrack> = Vec::new();
            let mut animated = std::collections::HashSet::new();
            for ch in anim.channels() {
                let cl = format!("{location}.channels[{}]", ch.index());
                let sampler = ch.sampler();
                let input = sampler.input();
                let il = format!("{cl} input (accessors[{}])", input.index());
                let times = self.reader.read_f32(&input, &il, &[1], Accept::Float)?;
                if let (Some(&a), Some(&b)) = (times.first(), times.last()) {
                    if a.is_finite() && b.is_finite() {
                        lo = lo.min(a);
                        hi = hi.max(b);
                    }
                }
                let node = ch.target().node().index();
                let interpolation = match sampler.interpolation() {
                    gltf::animation::Interpolation::Step => Interpolation::Step,
                    gltf::animation::Interpolation::Linear => Interpolation::Linear,
                    gltf::animation::Interpolation::CubicSpline => Interpolation::CubicSpline,
                };
                let target = match ch.target().property() {
                    gltf::animation::Property::Translation => Target::Translation,
                    gltf::animation::Property::Rotation => Target::Rotation,
                    gltf::animation::Property::Scale => Target::Scale,
                    gltf::animation::Property::MorphTargetWeights => {
                        let Some(bound) = self.morph.get(&node).cloned() else {
                            self.warnings.push(format!(
                                "{cl}: animates the morph weights of nodes[{node}] ({:?}), which \
                                 has no imported mesh with morph targets; skipped",
                                ch.target().node().name().unwrap_or("")
                            ));
                            continue;
                        };
                        let output = sampler.output();
                        let ol = format!("{cl} output (accessors[{}])", output.index());
                        const NORM: &[DataType] =
                            &[DataType::I8, DataType::U8, DataType::I16, DataType::U16];
                        let values = self.reader.read_f32(
                            &output,
                            &ol,
                            &[1],
                            Accept::FloatOrNormalized(NORM),
                        )?;
                        let count = bound.len();
                        let per = if interpolation == Interpolation::CubicSpline {
                            3
                        } else {
                            1
                        };
                        if values.len() != times.len() * per * count {
                            return Err(self.invalid(
                                ol,
                                format!(
                                    "has {} values; {} keys of {count} morph weights need {}",
                                    values.len(),
                                    times.len(),
                                    times.len() * per * count
                                ),
                            ));
                        }
                        // Key-major: key k holds (for cubic: in-tangents, values, out-tangents
                        // of) every target in turn.
                        for (t, &c) in bound.iter().enumerate() {
                            // A channel shared by several meshes is animated once.
                            if !animated.insert(c) {
                                continue;
                            }
                            let channel = &skeleton.morph_channel_names()[c];
                            morph_tracks.push(RawMorphTrack {
                                channel: channel.clone(),
                                interpolation,
                                times: times.clone(),
                                values: (0..times.len() * per)
                                    .map(|i| values[i * count + t])
                                    .collect(),
                            });
                        }
                        continue;
                    }
                };
                let Some(joint) = joint_of_node(node) else {
                    self.warnings.push(format!(
                        "{cl}: animates the {target} of nodes[{node}] ({:?}), which is not part of \
                         the skeleton; skipped",
                        ch.target().node().name().unwrap_or("")
                    ));
                    continue;
                };
                let output = sampler.output();
                let ol = format!("{cl} output (accessors[{}])", output.index());
                const SNORM: &[DataType] =
                    &[DataType::I8, DataType::U8, DataType::I16, DataType::U16];
                let values = match target {
                    Target::Rotation => RawValues::Quat(
                        self.reader
                            .read_f32(&output, &ol, &[4], Accept::FloatOrNormalized(SNORM))?
                            .chunks_exact(4)
                            .map(|q| Quat::from_xyzw(q[0], q[1], q[2], q[3]))
                            .collect(),
                    ),
                    _ => RawValues::Vec3(
                        self.reader
                            .read_f32(&output, &ol, &[3], Accept::Float)?
                            .chunks_exact(3)
                            .map(Vec3::from_slice)
                            .collect(),
                    ),
                };
                raw.channels.push(RawChannel {
                    joint: skeleton.name(joint).to_string(),
                    target,
                    interpolation,
                    times,
                    values,
                });
            }
            if lo <= hi {
                raw.start = lo;
                raw.duration = hi - lo;
            }
            // skelett's own exports keep the clip's range and events in the extras.
            let extras = skelett_extras(&anim);
            if let Some((start, duration)) = extras
                .as_ref()
                .and_then(|x| Some((x["start"].as_f64()?, x["duration"].as_f64()?)))
            {
                if start.is_finite() && duration.is_finite() && duration >= 0.0 {
                    raw.start = start as f32;
                    raw.duration = duration as f32;
                }
            }
            let clip = raw
                .build(skeleton)
                .and_then(|c| {
                    if morph_tracks.is_empty() {
                        Ok(c)
                    } else {
                        c.with_morph_tracks(skeleton, morph_tracks)
                    }
                })
                .map_err(|source| {
                    Error::build(
                        self.file.to_path_buf(),
                        format!("{location} ({name:?})"),
                        source,
                    )
                })?;
            let events: Vec<skelett::ClipEvent> = extras
                .as_ref()
                .and_then(|x| x["events"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|e| {
                    Some(skelett::ClipEvent {
                        time: e["time"].as_f64()? as f32,
                        name: e["name"].as_str()?.to_string(),
                        payload: e["payload"].as_str().map(str::to_string),
                    })
                })
                .collect();
            let clip = if events.is_empty() {
                clip
            } else {
                clip.with_events(events).map_err(|source| {
                    Error::build(
                        self.file.to_path_buf(),
                        format!("{location} ({name:?}) extras"),
                        source,
                    )
                })?
            };
            // skelett's own exports say the rate; other files show it by their key times.
            let rate = extras
                .as_ref()
                .and_then(|x| x["frame_rate"].as_f64())
                .map(|r| r as f32)
                .or_else(|| crate::infer_frame_rate(&clip));
            clips.push(Arc::new(clip.with_frame_rate(rate)));
        }
        Ok(clips)
    }
}

/// The `extras.skelett` object of an animation, if it has one.
fn skelett_extras(anim: &gltf::Animation) -> Option<serde_json::Value> {
    let raw = anim.extras().as_ref()?;
    let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    v.get("skelett").cloned()
}

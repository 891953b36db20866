//! Baking: a whole source clip retargeted into a clip of the target skeleton, frame by
//! frame at the source's own key times (or a rate), then built like an imported clip
//! (lossless key reduction, constant channels folded into the base pose). The result is an
//! ordinary [`Clip`]: compress it, save it, play it.

use crate::clip::{BuildOptions, UnboundChannels};
use crate::sampling::{sample, SamplingCache};
use crate::{
    Clip, Error, Interpolation, JointIndex, Pose, RawChannel, RawClip, RawValues, Skeleton, Target,
    Transform,
};

use super::feet::FootPass;
use super::Retargeter;

/// Options of [`Retargeter::bake`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BakeOptions {
    /// Sample the source at this many frames per second; at the union of its channels' key
    /// times when `None` (every frame of a capture; a compact clip's grid).
    pub rate: Option<f32>,
    /// The baked clip's name; the source clip's when `None`.
    pub name: Option<String>,
    /// Hold the target's feet where they land through the source's foot contacts (two-bone
    /// IK on the target's legs; see [`super::foot_contacts`]), so that a character of other
    /// proportions does not slide its planted feet. Legs the map does not drive from the
    /// source's thigh, shin and foot are left as retargeted.
    pub plant_feet: bool,
}

/// The most frames a bake samples (a day at 120 fps is far beyond any clip).
const MAX_FRAMES: usize = 10_000_000;

pub(super) fn bake(
    r: &Retargeter,
    clip: &Clip,
    source: &Skeleton,
    target: &Skeleton,
    options: &BakeOptions,
) -> Result<Clip, Error> {
    let expected = [
        (source, r.source, r.source_parents.len(), "source"),
        (target, r.target, r.target_parents.len(), "target"),
    ];
    for (sk, id, joints, what) in expected {
        if sk.id() != id || sk.len() != joints {
            return Err(Error::OtherSkeleton {
                clip: format!("<retargeter's {what} skeleton>"),
                built_for: id,
                clip_joints: joints,
                skeleton: sk.id(),
                skeleton_joints: sk.len(),
            });
        }
    }
    if !clip.fits(source) {
        return Err(Error::OtherSkeleton {
            clip: clip.name().to_owned(),
            built_for: clip.skeleton_id(),
            clip_joints: clip.joint_count(),
            skeleton: source.id(),
            skeleton_joints: source.len(),
        });
    }
    let times = frame_times(clip, options.rate)?;
    let (ns, nt) = (source.len(), target.len());
    let mut cache = SamplingCache::for_clip(clip);
    let mut pose = Pose::rest(source);
    let mut scratch = r.scratch();
    let frames = times.len();
    let feet = options
        .plant_feet
        .then(|| FootPass::new(source, target, &r.map))
        .flatten();
    let legs = feet.as_ref().map_or(0, |f| f.source_feet().count());
    let mut source_paths = vec![Vec::with_capacity(frames); legs];
    let mut target_paths = vec![Vec::with_capacity(frames); legs];
    let mut poses = vec![Transform::IDENTITY; frames * nt];
    for (f, &t) in times.iter().enumerate() {
        sample(clip, t, &mut cache, &mut pose)?;
        r.retarget(
            &pose.0[..ns],
            &mut poses[f * nt..(f + 1) * nt],
            &mut scratch,
        )?;
        if let Some(feet) = &feet {
            for (i, (s, t)) in feet.source_feet().zip(feet.target_feet()).enumerate() {
                source_paths[i].push(scratch.source[s as usize].position);
                target_paths[i].push(scratch.target[t as usize].position);
            }
        }
    }
    if let Some(feet) = &feet {
        feet.run(
            target,
            &times,
            &source_paths,
            &target_paths,
            r.scale,
            &mut poses,
        )?;
    }
    let mut channels = Vec::with_capacity(nt * 3);
    for k in 0..nt {
        let joint = target.name(k as JointIndex).to_owned();
        let track = poses[k..].iter().step_by(nt);
        let mut rotations: Vec<glam::Quat> = Vec::with_capacity(frames);
        for p in track.clone() {
            // Keep consecutive keys on one hemisphere, so each step takes the short way.
            let q = match rotations.last() {
                Some(prev) if prev.dot(p.rotation) < 0.0 => -p.rotation,
                _ => p.rotation,
            };
            rotations.push(q);
        }
        let one = |target, values| RawChannel {
            joint: joint.clone(),
            target,
            interpolation: Interpolation::Linear,
            times: times.clone(),
            values,
        };
        channels.push(one(
            Target::Translation,
            RawValues::Vec3(track.clone().map(|p| p.translation).collect()),
        ));
        channels.push(one(Target::Rotation, RawValues::Quat(rotations)));
        channels.push(one(
            Target::Scale,
            RawValues::Vec3(track.map(|p| p.scale).collect()),
        ));
    }
    let raw = RawClip {
        name: options
            .name
            .clone()
            .unwrap_or_else(|| clip.name().to_owned()),
        start: clip.start(),
        duration: clip.duration(),
        channels,
    };
    let (baked, _) = raw.build_with(
        target,
        &BuildOptions {
            unbound: UnboundChannels::Error,
            ..Default::default()
        },
    )?;
    baked.with_events(clip.events().to_vec())
}

/// The times a bake samples: the union of the clip's key times, or a uniform grid.
pub(super) fn frame_times(clip: &Clip, rate: Option<f32>) -> Result<Vec<f32>, Error> {
    let (start, end) = (clip.start(), clip.end());
    let grid = |rate: f32| -> Result<Vec<f32>, Error> {
        let n = (f64::from(clip.duration()) * f64::from(rate)).ceil();
        let fits = rate.is_finite() && rate > 0.0 && n < MAX_FRAMES as f64;
        if !fits {
            return Err(Error::ClipRange {
                clip: clip.name().to_owned(),
                problem: format!(
                    "cannot bake {} s at {rate} frames per second",
                    clip.duration()
                ),
            });
        }
        let n = n as usize;
        let mut t: Vec<f32> = (0..n)
            .map(|i| start + i as f32 / rate)
            .filter(|&t| t < end)
            .collect();
        t.push(end);
        Ok(t)
    };
    if let Some(rate) = rate {
        return grid(rate);
    }
    if let Some((rate, _)) = clip.compact_grid() {
        return grid(rate);
    }
    let mut times: Vec<f32> = Vec::new();
    for i in 0..clip.track_count() {
        times.extend_from_slice(clip.channel_times(i));
        if times.len() > MAX_FRAMES {
            return grid(120.0);
        }
    }
    times.push(start);
    times.push(end);
    times.retain(|t| *t >= start && *t <= end);
    times.sort_by(f32::total_cmp);
    times.dedup();
    Ok(times)
}

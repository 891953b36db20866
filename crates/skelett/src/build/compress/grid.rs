//! The sampling grid a clip is compressed on (frames at `start + f / rate`, the last at the
//! clip's end) and the reference clip resampled on it, with the size limits that keep the
//! compressor's memory bounded.

use crate::{
    sample_uncached, Clip, Error, Interpolation, JointIndex, RawChannel, RawClip, RawValues,
    Skeleton, Target, Transform,
};

/// Frames a compact clip may have, and joint-frames (joints times frames) a clip may have to
/// be compressed: the compressor keeps a few hundred bytes per joint-frame (values between
/// frames, sensitivities), about 2 GB at this limit; split longer clips.
pub const MAX_FRAMES: u32 = 1 << 24;
pub(super) const MAX_JOINT_FRAMES: u64 = 1 << 23;

/// The sampling grid: `frames` samples at `start + f / rate`, the last at the clip's end.
#[derive(Clone, Copy, Debug)]
pub(super) struct Grid {
    pub(super) start: f32,
    pub(super) duration: f32,
    pub(super) rate: f32,
    pub(super) frames: u32,
    pub(super) last_span: f32,
}

impl Grid {
    /// The grid over `duration` at `rate`: whole frames, and one more where the last
    /// interval is shorter than a frame (at least a start and an end for any positive
    /// duration); `None` past [`MAX_FRAMES`].
    pub(super) fn new(start: f32, duration: f32, rate: f32) -> Option<Grid> {
        let x = f64::from(duration) * f64::from(rate);
        if x.is_nan() || x >= f64::from(MAX_FRAMES) {
            return None;
        }
        let whole = (x + 1e-3).floor();
        let rem = x - whole;
        let (frames, last_span) = if duration <= 0.0 {
            (1, 1.0)
        } else if whole < 1.0 {
            // Shorter than a frame: its start and its end.
            (2, (x as f32).max(1e-6))
        } else if rem > 1e-3 {
            (whole as u32 + 2, rem as f32)
        } else {
            (whole as u32 + 1, 1.0)
        };
        Some(Grid {
            start,
            duration,
            rate,
            frames,
            last_span,
        })
    }

    pub(super) fn time(&self, f: u32) -> f32 {
        if f + 1 >= self.frames {
            self.start + self.duration
        } else {
            self.start + f as f32 / self.rate
        }
    }

    pub(super) fn pos(&self, f: u32) -> f32 {
        if f + 1 >= self.frames {
            self.frames.saturating_sub(2) as f32 + self.last_span
        } else {
            f as f32
        }
    }

    /// The frame times, and `per` evenly spaced times in every frame interval.
    pub(super) fn times(&self, per: u32) -> Vec<f32> {
        let mut out = Vec::with_capacity((self.frames * per) as usize);
        for f in 0..self.frames {
            let t = self.time(f);
            out.push(t);
            if f + 1 < self.frames {
                let t1 = self.time(f + 1);
                for k in 1..per {
                    out.push(t + (t1 - t) * k as f32 / per as f32);
                }
            }
        }
        out
    }
}

/// The clip resampled at `rate`: LINEAR keys at every frame of the grid (ACL's input when
/// it is given a rate).
pub(super) fn resample(skeleton: &Skeleton, clip: &Clip, grid: Grid) -> Result<Clip, Error> {
    let times: Vec<f32> = (0..grid.frames).map(|f| grid.time(f)).collect();
    let n = skeleton.len();
    let mut pose = vec![Transform::IDENTITY; n];
    let mut t = vec![Vec::with_capacity(times.len()); n];
    let mut r = vec![Vec::with_capacity(times.len()); n];
    let mut s = vec![Vec::with_capacity(times.len()); n];
    for &time in &times {
        sample_uncached(clip, time, &mut pose)?;
        for j in 0..n {
            t[j].push(pose[j].translation);
            r[j].push(pose[j].rotation);
            s[j].push(pose[j].scale);
        }
    }
    let mut channels = Vec::with_capacity(3 * n);
    for j in 0..n {
        let joint = skeleton.name(j as JointIndex).to_string();
        let ch = |target, values| RawChannel {
            joint: joint.clone(),
            target,
            interpolation: Interpolation::Linear,
            times: times.clone(),
            values,
        };
        channels.push(ch(
            Target::Translation,
            RawValues::Vec3(std::mem::take(&mut t[j])),
        ));
        channels.push(ch(
            Target::Rotation,
            RawValues::Quat(std::mem::take(&mut r[j])),
        ));
        channels.push(ch(
            Target::Scale,
            RawValues::Vec3(std::mem::take(&mut s[j])),
        ));
    }
    RawClip {
        name: clip.name.clone(),
        start: clip.start,
        duration: clip.duration,
        channels,
    }
    .build(skeleton)
}

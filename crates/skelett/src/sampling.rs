//! Sampling: a clip at a time, into a pose of local joint transforms.
//!
//! ```text
//! Clip (shared) ──┐
//! time ───────────┼─▶ sample() ──▶ &mut [Transform] (one per joint, local SRT)
//! SamplingCache ──┘      (per character: one key cursor per animated channel)
//! ```
//!
//! [`sample`] first copies the clip's base pose (rest pose plus constant channels), then
//! evaluates every animated channel. Finding the two keys around the time is amortised O(1)
//! per channel: the [`SamplingCache`] remembers each channel's last key segment, and playback
//! forwards or backwards moves it by a step or two; a jump further than a few keys falls back
//! to a binary search. Before a channel's first key its first value holds, after its last key
//! its last value.

use crate::clip::Track;
use crate::error::check_len;
use crate::{Clip, Error, Transform};

/// Per-character sampling state: the key segment each channel of a clip was last sampled in.
///
/// A cache follows one clip at a time: used with another clip, it resets itself (and grows
/// if that clip has more channels, the only allocation sampling ever makes). Keep one cache
/// per playing clip to keep every cursor warm.
#[derive(Clone, Debug, Default)]
pub struct SamplingCache {
    clip: u64,
    cursors: Vec<u32>,
}

impl SamplingCache {
    /// A cache sized for `clip`, so that sampling it never allocates.
    pub fn for_clip(clip: &Clip) -> Self {
        let mut c = Self::default();
        c.bind(clip);
        c
    }

    /// Forgets all cursors (the next sample searches from the start).
    pub fn invalidate(&mut self) {
        self.clip = 0;
    }

    #[inline]
    fn bind(&mut self, clip: &Clip) {
        if self.clip != clip.id() {
            self.clip = clip.id();
            self.cursors.clear();
            self.cursors.resize(clip.tracks.len(), 0);
        }
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
    let n = clip.joint_count();
    check_len("pose", n, pose.len())?;
    cache.bind(clip);
    let pose = &mut pose[..n];
    pose.copy_from_slice(&clip.base);
    let cursors = &mut cache.cursors[..clip.tracks.len()];
    for (track, cursor) in clip.tracks.iter().zip(cursors.iter_mut()) {
        sample_track(clip, track, cursor, time, pose);
    }
    Ok(())
}

#[inline(always)]
fn sample_track(clip: &Clip, track: &Track, cursor: &mut u32, time: f32, pose: &mut [Transform]) {
    let ts = track.time_start as usize;
    let times = &clip.times[ts..ts + track.key_count as usize];
    let k = find_segment(times, *cursor as usize, time);
    *cursor = k as u32;
    clip.eval_track(track, k, time, &mut pose[track.joint as usize]);
}

/// Samples `clip` at `time` without a cache (every channel searches its keys from scratch).
/// Gives exactly the values [`sample`] gives; use it for one-off evaluations.
///
/// # Errors
/// As [`sample`].
pub fn sample_uncached(clip: &Clip, time: f32, pose: &mut [Transform]) -> Result<(), Error> {
    let n = clip.joint_count();
    check_len("pose", n, pose.len())?;
    let pose = &mut pose[..n];
    pose.copy_from_slice(&clip.base);
    for track in clip.tracks.iter() {
        let ts = track.time_start as usize;
        let times = &clip.times[ts..ts + track.key_count as usize];
        let k = times
            .partition_point(|&x| x <= time)
            .saturating_sub(1)
            .min(times.len() - 2);
        clip.eval_track(track, k, time, &mut pose[track.joint as usize]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

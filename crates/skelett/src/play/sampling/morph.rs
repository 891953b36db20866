//! Sampling morph-weight tracks: a clip at a time, into one weight per morph channel.
//!
//! The clip's base weights (the skeleton's rest weights with constant tracks folded in) are
//! copied, then every track is evaluated: a binary search for the keys around the time
//! (weight tracks are few, a few dozen for a face, so no cursor cache is kept), then STEP,
//! LINEAR or glTF's cubic Hermite spline. Before the first key the first value holds, after
//! the last key the last value; weights outside 0..=1 pass through, as glTF allows.

use crate::clip::morph::MorphTrack;
use crate::clip::Interpolation;
use crate::error::check_len;
use crate::{Clip, Error};

/// Samples `clip`'s morph weights at `time` (seconds, the clip's time base) into `weights`,
/// one per morph channel of its skeleton ([`Clip::morph_channel_count`]).
///
/// ```
/// use skelett::*;
/// let skeleton = RawSkeleton { joints: vec![RawJoint { name: "head".into(), parent: None,
///     rest: Transform::IDENTITY }], ..Default::default() }.build()?
///     .with_morph_channels(vec![MorphChannel { name: "blink".into(), rest: 0.0 },
///                               MorphChannel { name: "smile".into(), rest: 0.5 }])?;
/// let clip = RawClip { name: "blink".into(), duration: 0.2, ..Default::default() }
///     .build(&skeleton)?
///     .with_morph_tracks(&skeleton, vec![RawMorphTrack {
///         channel: "blink".into(), interpolation: Interpolation::Step,
///         times: vec![0.0, 0.1], values: vec![1.0, 0.0] }])?;
/// let mut w = [0.0; 2];
/// sample_morph_weights(&clip, 0.05, &mut w)?;
/// assert_eq!(w, [1.0, 0.5]); // "smile" keeps its rest weight
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if `weights` is shorter than the channel count; nothing is written then.
pub fn sample_morph_weights(clip: &Clip, time: f32, weights: &mut [f32]) -> Result<(), Error> {
    let base = &clip.morph.base;
    check_len("weights", base.len(), weights.len())?;
    weights[..base.len()].copy_from_slice(base);
    let time = if time.is_nan() { clip.start } else { time };
    for t in clip.morph.tracks.iter() {
        weights[t.channel as usize] = eval(t, time);
    }
    Ok(())
}

/// One track at `time`.
pub(crate) fn eval(t: &MorphTrack, time: f32) -> f32 {
    let times = &t.times;
    let n = times.len();
    let cubic = t.interpolation == Interpolation::CubicSpline;
    let value = |k: usize| {
        if cubic {
            t.values[3 * k + 1]
        } else {
            t.values[k]
        }
    };
    if time <= times[0] {
        return value(0);
    }
    if time >= times[n - 1] {
        return value(n - 1);
    }
    // The segment k..k+1 with times[k] <= time < times[k + 1].
    let k = times.partition_point(|&x| x <= time) - 1;
    let (t0, t1) = (times[k], times[k + 1]);
    let dt = t1 - t0;
    let s = (time - t0) / dt;
    match t.interpolation {
        Interpolation::Step => value(k),
        Interpolation::Linear => {
            let (a, b) = (value(k), value(k + 1));
            a + (b - a) * s
        }
        Interpolation::CubicSpline => {
            // glTF 2.0, Appendix C: p(s) = (2s³ - 3s² + 1) v_k + dt (s³ - 2s² + s) b_k
            //                            + (-2s³ + 3s²) v_k+1 + dt (s³ - s²) a_k+1,
            // b_k the out-tangent of key k, a_k+1 the in-tangent of key k + 1.
            let (s2, s3) = (s * s, s * s * s);
            let v0 = t.values[3 * k + 1];
            let b0 = t.values[3 * k + 2];
            let a1 = t.values[3 * (k + 1)];
            let v1 = t.values[3 * (k + 1) + 1];
            (2.0 * s3 - 3.0 * s2 + 1.0) * v0
                + dt * (s3 - 2.0 * s2 + s) * b0
                + (-2.0 * s3 + 3.0 * s2) * v1
                + dt * (s3 - s2) * a1
        }
    }
}

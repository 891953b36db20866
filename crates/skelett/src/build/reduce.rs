//! Lossless key reduction: the keys a channel's interpolation reproduces to f32 precision
//! are dropped when a clip is built (STEP repeats, LINEAR keys on a line or a great arc,
//! flat CUBICSPLINE keys), and LINEAR rotations are put on one hemisphere so sampling needs
//! no sign test.

use glam::{Quat, Vec3};

use crate::clip::{Interpolation, RawChannel, RawValues};
use crate::transform::align_sign;

pub(crate) enum KeyValues {
    Vec3(Vec<Vec3>),
    Quat(Vec<Quat>),
}

pub(crate) struct Keys {
    pub(crate) times: Vec<f32>,
    pub(crate) values: KeyValues,
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
pub(crate) fn reduce_channel(ch: &RawChannel, keep_all: bool) -> Keys {
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
    // Where each run of identical values ends: a segment within one lies on its line without
    // checking every key again (constant stretches, common in captures, made this quadratic
    // in the run length: 57 ms for CMU 01_01's 2752 frames, most of it on still joints).
    let mut equal_until = vec![n - 1; n];
    for k in (0..n - 1).rev() {
        equal_until[k] = if values[k] == values[k + 1] {
            equal_until[k + 1]
        } else {
            k
        };
    }
    let mut kept = vec![0usize];
    let mut start = 0;
    for end in 2..n {
        let t0 = f64::from(times[start]);
        let t1 = f64::from(times[end]);
        let du = time_slack(t0, t1);
        let fits = end - start <= MAX_RUN
            && (equal_until[start] >= end
                || (start + 1..end).all(|k| {
                    let u = (f64::from(times[k]) - t0) / (t1 - t0);
                    on_line(&values[start], &values[end], u, du, &values[k])
                }));
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

//! Weight-track compression: drops the keys of a clip's morph-weight tracks that the
//! neighbouring keys reproduce within an error budget on the vertex displacement they cause.
//!
//! ```text
//! meshes' targets ──morph_reach──▶ per morph channel: the farthest a weight of 1 moves a vertex
//! clip + reach + error budget ──compress_morph_weights──▶ clip with fewer weight keys + report
//! ```
//!
//! A weight error `e` on channel `c` moves a vertex by at most `|e| · reach[c]` (the reach
//! counting that several channels may move one vertex, see [`morph_reach`]), so the
//! channel's weight tolerance is the budget divided by its reach: a channel that moves a
//! nose tip by 2 cm is kept twenty times tighter than one that moves it by 1 mm, and a
//! channel no mesh reads costs nothing. Linear tracks lose every key whose value the line
//! between the kept neighbours reproduces within the tolerance (checked at every dropped key,
//! where the error of two piecewise-linear curves peaks, so the bound is exact); step tracks
//! lose keys that change the value by no more than the tolerance. Cubic tracks are kept as
//! they are (glTF's cubic weights are rare; their tangents would need refitting). Values stay
//! f32: weight tracks are a few floats per key next to a joint track's ten, so dropping keys
//! is where the size goes. Called after [`crate::compress::compress`], which keeps weight
//! tracks exact, or on any clip.

use crate::clip::morph::{MorphTrack, MorphWeights};
use crate::{Clip, Error, Interpolation, SkinnedMesh};

/// For each of a skeleton's `channel_count` morph channels, its *reach*: the largest
/// distance a weight error of 1 on it may move any vertex of `meshes`, in the meshes' units.
/// That is the longest position offset of the targets it weighs, times the most targets that
/// move any one vertex it moves (errors on several channels add up at a vertex they share;
/// splitting the budget between them keeps the sum within it). A target among in-between
/// shapes ([`crate::SkinnedMesh::morph_full_weights`]) counts with the steepest slope of its
/// weight on the channel's: 1 over the shortest gap to a neighbouring full weight (or to 0).
/// Channels no target reads get 0.
///
/// ```
/// use glam::Vec3;
/// use skelett::{MeshPrimitive, MorphTarget, SkinnedMesh};
/// let target = |d: Vec3| MorphTarget { positions: Some(vec![Vec3::ZERO, d]), ..Default::default() };
/// let mesh = SkinnedMesh {
///     name: "face".into(), skin: 0, morph_channels: vec![1, 2], morph_full_weights: vec![],
///     primitives: vec![MeshPrimitive {
///         positions: vec![Vec3::ZERO; 2],
///         // Two targets move vertex 1: each channel gets half the budget.
///         morph_targets: vec![target(Vec3::new(0.0, 0.02, 0.0)), target(Vec3::new(0.01, 0.0, 0.0))],
///         ..Default::default()
///     }],
/// };
/// assert_eq!(skelett::compress::morph_reach(&[mesh], 3), vec![0.0, 0.04, 0.02]);
/// ```
pub fn morph_reach(meshes: &[SkinnedMesh], channel_count: usize) -> Vec<f32> {
    morph_reach_scaled(meshes, &[], channel_count)
}

/// [`morph_reach`] in the space the budget is measured in: each mesh's offsets are in its
/// bind space, and skinning scales them by up to `scales[i]` for mesh `i` (missing entries
/// count as 1). [`skinning_scale`] gives that factor for a pose; the Khronos morph samples,
/// for one, bind their ±0.01 meshes to a node scaled by 100.
///
/// ```
/// use glam::Vec3;
/// use skelett::{MeshPrimitive, MorphTarget, SkinnedMesh};
/// let mesh = SkinnedMesh {
///     name: "blob".into(), skin: 0, morph_channels: vec![0], morph_full_weights: vec![],
///     primitives: vec![MeshPrimitive {
///         positions: vec![Vec3::ZERO],
///         morph_targets: vec![MorphTarget { positions: Some(vec![Vec3::new(0.01, 0.0, 0.0)]),
///                                           ..Default::default() }],
///         ..Default::default()
///     }],
/// };
/// let reach = skelett::compress::morph_reach_scaled(&[mesh], &[100.0], 1);
/// assert!((reach[0] - 1.0).abs() < 1e-6);
/// ```
pub fn morph_reach_scaled(
    meshes: &[SkinnedMesh],
    scales: &[f32],
    channel_count: usize,
) -> Vec<f32> {
    let mut reach = vec![0.0f32; channel_count];
    for (mi, m) in meshes.iter().enumerate() {
        let scale = scales
            .get(mi)
            .copied()
            .filter(|s| s.is_finite())
            .unwrap_or(1.0);
        let full = |k: usize| m.morph_full_weights.get(k).copied().unwrap_or(1.0);
        // Each target's steepest weight per unit of channel weight.
        let slope: Vec<f32> = (0..m.morph_channels.len())
            .map(|k| {
                let (c, f) = (m.morph_channels[k], full(k));
                let gap = std::iter::once(0.0)
                    .chain(
                        (0..m.morph_channels.len())
                            .filter(|&j| j != k && m.morph_channels[j] == c)
                            .map(full),
                    )
                    .map(|o| (f - o).abs())
                    .filter(|g| *g > 0.0)
                    .fold(f32::INFINITY, f32::min);
                if gap.is_finite() {
                    1.0 / gap
                } else {
                    1.0
                }
            })
            .collect();
        for p in &m.primitives {
            let moved = |t: &crate::MorphTarget, v: usize| {
                t.positions
                    .as_ref()
                    .and_then(|a| a.get(v))
                    .is_some_and(|d| *d != glam::Vec3::ZERO)
            };
            // How many targets move each vertex.
            let mut count = vec![0u32; p.positions.len()];
            for t in &p.morph_targets {
                for (v, c) in count.iter_mut().enumerate() {
                    *c += u32::from(moved(t, v));
                }
            }
            for (k, (t, &c)) in p.morph_targets.iter().zip(&m.morph_channels).enumerate() {
                let Some(r) = reach.get_mut(c as usize) else {
                    continue;
                };
                let longest = t
                    .positions
                    .iter()
                    .flatten()
                    .map(|d| d.length())
                    .filter(|l| l.is_finite())
                    .fold(0.0, f32::max);
                let shared = (0..count.len())
                    .filter(|&v| moved(t, v))
                    .map(|v| count[v])
                    .max()
                    .unwrap_or(1);
                *r = r.max(longest * shared as f32 * slope[k] * scale);
            }
        }
    }
    reach
}

/// The most skinning with `skin` in the pose `model` (model-space joint matrices) scales
/// any direction of the bind space: the largest column length of its palette matrices
/// (`model[joint] · inverse_bind`). Multiplies a mesh's [`morph_reach`] into model space.
///
/// ```
/// use glam::{Mat4, Vec3};
/// let skin = skelett::Skin::new("s", vec![0], vec![Mat4::IDENTITY])?;
/// let model = [Mat4::from_scale(Vec3::new(1.0, 100.0, 2.0))];
/// assert_eq!(skelett::compress::skinning_scale(&skin, &model), 100.0);
/// # Ok::<(), skelett::Error>(())
/// ```
pub fn skinning_scale(skin: &crate::Skin, model: &[glam::Mat4]) -> f32 {
    skin.joints()
        .iter()
        .zip(skin.inverse_bind())
        .filter_map(|(&j, ibm)| model.get(j as usize).map(|m| *m * *ibm))
        .map(|p| {
            p.x_axis
                .truncate()
                .length()
                .max(p.y_axis.truncate().length())
                .max(p.z_axis.truncate().length())
        })
        .filter(|s| s.is_finite())
        .fold(0.0, f32::max)
}

/// What [`compress_morph_weights`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MorphReport {
    /// Weight keys before (cubic keys count once).
    pub keys_before: usize,
    /// Weight keys after.
    pub keys_after: usize,
    /// The largest weight error times the channel's reach, in the meshes' units, measured at
    /// every dropped key: a bound on how far the dropped keys move any vertex.
    pub max_displacement: f32,
    /// Tracks kept exact because they are cubic.
    pub cubic_tracks_kept: usize,
}

/// Drops the weight keys of `clip` that its other keys reproduce within `max_displacement`
/// (in the meshes' units) of vertex movement, given each channel's `reach`
/// ([`morph_reach`]). Joint data is untouched.
///
/// ```
/// use skelett::*;
/// let skeleton = RawSkeleton { joints: vec![RawJoint { name: "head".into(), parent: None,
///     rest: Transform::IDENTITY }], ..Default::default() }.build()?
///     .with_morph_channels(vec![MorphChannel { name: "smile".into(), rest: 0.0 }])?;
/// // A straight ramp keyed at 11 times: two keys say the same.
/// let times: Vec<f32> = (0..=10).map(|i| i as f32 / 10.0).collect();
/// let clip = RawClip { name: "grin".into(), duration: 1.0, ..Default::default() }
///     .build(&skeleton)?
///     .with_morph_tracks(&skeleton, vec![RawMorphTrack { channel: "smile".into(),
///         interpolation: Interpolation::Linear, values: times.clone(), times }])?;
/// // The smile moves a vertex at most 0.02 units; allow 0.0001.
/// let (small, report) = compress::compress_morph_weights(&clip, &[0.02], 1e-4)?;
/// assert_eq!((report.keys_before, report.keys_after), (11, 2));
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Morph`] if `max_displacement` is negative or not finite, or `reach` does not have
/// one entry per morph channel of the clip.
pub fn compress_morph_weights(
    clip: &Clip,
    reach: &[f32],
    max_displacement: f32,
) -> Result<(Clip, MorphReport), Error> {
    let err = |problem: String| Error::Morph {
        what: format!("clip {:?}, weight compression", clip.name),
        problem,
    };
    if !(max_displacement.is_finite() && max_displacement >= 0.0) {
        return Err(err(format!(
            "the displacement budget {max_displacement} is not a non-negative number"
        )));
    }
    if reach.len() != clip.morph_channel_count() {
        return Err(err(format!(
            "{} reach values for {} morph channels",
            reach.len(),
            clip.morph_channel_count()
        )));
    }
    let mut report = MorphReport::default();
    let mut tracks = Vec::with_capacity(clip.morph.tracks.len());
    for t in clip.morph.tracks.iter() {
        let n = t.times.len();
        report.keys_before += n;
        let r = reach[t.channel as usize];
        // Weight tolerance; infinite for a channel that moves nothing.
        let tol = if r > 0.0 && r.is_finite() {
            max_displacement / r
        } else {
            f32::INFINITY
        };
        let keep: Vec<usize> = match t.interpolation {
            Interpolation::CubicSpline => {
                report.cubic_tracks_kept += 1;
                (0..n).collect()
            }
            Interpolation::Step => step_keys(&t.values, tol),
            Interpolation::Linear => linear_keys(&t.times, &t.values, tol),
        };
        let per = if t.interpolation == Interpolation::CubicSpline {
            3
        } else {
            1
        };
        let out = MorphTrack {
            channel: t.channel,
            interpolation: t.interpolation,
            times: keep.iter().map(|&k| t.times[k]).collect(),
            values: keep
                .iter()
                .flat_map(|&k| t.values[k * per..(k + 1) * per].iter().copied())
                .collect(),
        };
        let worst = max_error(t, &out);
        report.max_displacement = report.max_displacement.max(worst * r.max(0.0));
        report.keys_after += out.times.len();
        tracks.push(out);
    }
    let mut out = clip.clone();
    out.morph = MorphWeights {
        base: clip.morph.base.clone(),
        tracks: tracks.into(),
    };
    Ok((out, report))
}

/// Step keys: a key stays where it changes the held value by more than `tol`.
fn step_keys(values: &[f32], tol: f32) -> Vec<usize> {
    let mut keep = vec![0];
    for (k, &v) in values.iter().enumerate().skip(1) {
        if (v - values[*keep.last().unwrap_or(&0)]).abs() > tol {
            keep.push(k);
        }
    }
    // The last key sets the clip's final value: kept so the track spans the same times.
    if values.len() > 1 && keep.last() != Some(&(values.len() - 1)) {
        keep.push(values.len() - 1);
    }
    keep
}

/// Linear keys: from each kept key, the farthest next key such that the line to it
/// reproduces every key between within `tol`. The window is bounded (256 keys), so the cost
/// stays linear in the key count.
fn linear_keys(times: &[f32], values: &[f32], tol: f32) -> Vec<usize> {
    const WINDOW: usize = 256;
    let n = times.len();
    let mut keep = vec![0];
    let mut i = 0;
    while i + 1 < n {
        let mut best = i + 1;
        for j in (i + 2)..n.min(i + WINDOW + 1) {
            let fits = (i + 1..j).all(|k| {
                let s = (times[k] - times[i]) / (times[j] - times[i]);
                let v = values[i] + (values[j] - values[i]) * s;
                (v - values[k]).abs() <= tol
            });
            if !fits {
                break;
            }
            best = j;
        }
        keep.push(best);
        i = best;
    }
    keep
}

/// The largest weight difference between `a` and its reduction `b` at `a`'s key times.
fn max_error(a: &MorphTrack, b: &MorphTrack) -> f32 {
    if a.interpolation == Interpolation::CubicSpline {
        return 0.0;
    }
    a.times
        .iter()
        .zip(a.values.iter())
        .map(|(&t, &v)| (eval(b, t) - v).abs())
        .fold(0.0, f32::max)
}

/// A linear or step track's value at `t` (clamped at its ends).
fn eval(t: &MorphTrack, at: f32) -> f32 {
    let k = t.times.partition_point(|&x| x <= at);
    if k == 0 {
        return t.values[0];
    }
    if k >= t.times.len() || t.interpolation == Interpolation::Step {
        return t.values[k - 1];
    }
    let (t0, t1) = (t.times[k - 1], t.times[k]);
    let s = (at - t0) / (t1 - t0);
    t.values[k - 1] + (t.values[k] - t.values[k - 1]) * s
}

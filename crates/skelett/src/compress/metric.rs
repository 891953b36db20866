//! The error metric, as ACL defines it: virtual vertices at a fixed distance (the shell) from
//! every joint, on its three local axes, taken to model space through the whole hierarchy;
//! the error of a clip against another at a time is the largest distance between a vertex
//! under one and under the other. A parent's error reaches every vertex below it.
//!
//! ```text
//! reference clip ──sample, model space (f64)──▶ vertices per (time, joint) ─┐
//! candidate clip ──sample, model space (f64)──▶ vertices per (time, joint) ─┴▶ distances ──▶ max, p99
//! ```
//!
//! For the encoder, [`Sensitivity`] bounds how far a local error of a joint's channel can
//! move any vertex at or below that joint (first order: a rotation error times the distance
//! to the farthest vertex below, a translation error times the parent's scale), so that a
//! share of the error budget becomes a tolerance per channel and frame.

use glam::{DMat4, DVec3, Mat4, Vec3};

use crate::{sample, sample_uncached, Clip, Error, Pose, SamplingCache, Skeleton};

/// Maximum and 99th-percentile error, in skeleton units, over every (time, joint) pair.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorStats {
    /// The largest vertex distance.
    pub max: f32,
    /// The 99th percentile of the per-(time, joint) maxima.
    pub p99: f32,
    /// Where the largest one is: the joint and the time.
    pub worst_joint: crate::JointIndex,
    /// See `worst_joint`.
    pub worst_time: f32,
    /// (time, joint) pairs measured.
    pub samples: usize,
}

/// The three virtual vertices of every joint at `times`, in model space: `out[t * joints + j]`.
///
/// The hierarchy is composed in f64: at a budget of 0.01 cm on a skeleton a few metres in
/// size (or one that declares a unit that makes it large), f32's own rounding is a tenth of
/// the budget, too much for the measurement the guarantee rests on.
pub(crate) fn vertices(
    skeleton: &Skeleton,
    clip: &Clip,
    shell: f32,
    times: &[f32],
    cached: bool,
) -> Result<Vec<[DVec3; 3]>, Error> {
    let n = skeleton.len();
    let mut pose = Pose::rest(skeleton);
    let mut model = vec![DMat4::IDENTITY; n];
    let mut cache = SamplingCache::for_clip(clip);
    let mut out = Vec::with_capacity(times.len() * n);
    let shell = f64::from(shell);
    let parents = skeleton.parents();
    for &t in times {
        if cached {
            sample(clip, t, &mut cache, &mut pose)?;
        } else {
            sample_uncached(clip, t, &mut pose)?;
        }
        for j in 0..n {
            let l = &pose[j];
            let local = DMat4::from_scale_rotation_translation(
                l.scale.as_dvec3(),
                l.rotation.as_dquat().normalize(),
                l.translation.as_dvec3(),
            );
            let p = parents[j];
            model[j] = if p == crate::JointIndex::MAX {
                local
            } else {
                model[p as usize] * local
            };
        }
        out.extend(model.iter().map(|m| {
            let o = m.w_axis.truncate();
            [
                o + m.x_axis.truncate() * shell,
                o + m.y_axis.truncate() * shell,
                o + m.z_axis.truncate() * shell,
            ]
        }));
    }
    Ok(out)
}

/// Per-(time, joint) errors between two vertex sets from [`vertices`].
pub(crate) fn errors(a: &[[DVec3; 3]], b: &[[DVec3; 3]]) -> Vec<f32> {
    a.iter()
        .zip(b)
        .map(|(a, b)| {
            (a[0] - b[0])
                .length()
                .max((a[1] - b[1]).length())
                .max((a[2] - b[2]).length()) as f32
        })
        .collect()
}

/// Statistics of per-(time, joint) errors (`joints` per time).
pub(crate) fn stats(errors: &[f32], joints: usize, times: &[f32]) -> ErrorStats {
    let mut s = ErrorStats {
        samples: errors.len(),
        ..Default::default()
    };
    for (i, &e) in errors.iter().enumerate() {
        if e > s.max || e.is_nan() {
            s.max = if e.is_nan() { f32::INFINITY } else { e };
            s.worst_joint = (i % joints.max(1)) as crate::JointIndex;
            s.worst_time = times.get(i / joints.max(1)).copied().unwrap_or(0.0);
        }
    }
    if !errors.is_empty() {
        let mut sorted = errors.to_vec();
        let k = ((sorted.len() as f64 * 0.99).ceil() as usize).clamp(1, sorted.len()) - 1;
        let (_, p, _) = sorted.select_nth_unstable_by(k, f32::total_cmp);
        s.p99 = *p;
    }
    s
}

/// Measures how far `candidate` strays from `reference`: the largest distance, over `times`
/// and every joint, between virtual vertices `shell` units from the joint on its local axes,
/// in model space (skeleton units).
///
/// Both clips are sampled as the runtime samples them: `candidate` through a
/// [`SamplingCache`] in the order of `times`, `reference` without one.
///
/// ```
/// # use skelett::*;
/// # use skelett::compress::measure_error;
/// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
/// # let clip = RawClip { name: "turn".into(), start: 0.0, duration: 1.0, channels: vec![RawChannel {
/// #     joint: "j".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
/// #     times: vec![0.0, 1.0],
/// #     values: RawValues::Quat(vec![glam::Quat::IDENTITY, glam::Quat::from_rotation_y(1.0)]) }] }
/// #     .build(&skeleton).unwrap();
/// let stats = measure_error(&skeleton, &clip, &clip, 0.03, &[0.0, 0.5, 1.0])?;
/// assert_eq!(stats.max, 0.0);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::SkeletonMismatch`] if either clip was built for another joint count.
pub fn measure_error(
    skeleton: &Skeleton,
    reference: &Clip,
    candidate: &Clip,
    shell: f32,
    times: &[f32],
) -> Result<ErrorStats, Error> {
    for c in [reference, candidate] {
        if c.joint_count() != skeleton.len() {
            return Err(Error::SkeletonMismatch {
                clip: c.joint_count(),
                skeleton: skeleton.len(),
            });
        }
    }
    let a = vertices(skeleton, reference, shell, times, false)?;
    let b = vertices(skeleton, candidate, shell, times, true)?;
    Ok(stats(&errors(&a, &b), skeleton.len(), times))
}

/// How far a local error of each joint's channels can move vertices, per frame.
pub(crate) struct Sensitivity {
    pub joints: usize,
    /// Distance from the joint to the farthest virtual vertex at or below it.
    pub reach: Vec<f32>,
    /// A bound of the parent's model-space scale (1 for roots).
    pub parent_scale: Vec<f32>,
    /// The joint's smallest local scale (for scale errors).
    pub min_scale: Vec<f32>,
}

impl Sensitivity {
    /// From model matrices per frame (`model[f * joints + j]`) and local scales.
    pub fn new(
        skeleton: &Skeleton,
        model: &[Mat4],
        local_scale: &[Vec3],
        shell: f32,
    ) -> Sensitivity {
        let n = skeleton.len();
        let frames = model.len() / n.max(1);
        let parents = skeleton.parents();
        let mut reach = vec![0.0f32; model.len()];
        let mut parent_scale = vec![1.0f32; model.len()];
        let mut min_scale = vec![1.0f32; model.len()];
        let frob = |m: &Mat4| {
            (m.x_axis.truncate().length_squared()
                + m.y_axis.truncate().length_squared()
                + m.z_axis.truncate().length_squared())
            .sqrt()
        };
        for f in 0..frames {
            let m = &model[f * n..(f + 1) * n];
            let r = &mut reach[f * n..(f + 1) * n];
            for j in 0..n {
                let axes = m[j].x_axis.truncate().length().max(
                    m[j].y_axis
                        .truncate()
                        .length()
                        .max(m[j].z_axis.truncate().length()),
                );
                r[j] = shell * axes;
                let p = parents[j];
                if p != crate::JointIndex::MAX {
                    parent_scale[f * n + j] = frob(&m[p as usize]);
                }
                let s = local_scale[f * n + j].abs().min_element();
                min_scale[f * n + j] = s.max(1e-6);
            }
            // Children after parents: fold reaches up from the leaves.
            for j in (0..n).rev() {
                let p = parents[j];
                if p != crate::JointIndex::MAX {
                    let d = (m[j].w_axis - m[p as usize].w_axis).truncate().length();
                    let up = d + r[j];
                    if up > r[p as usize] {
                        r[p as usize] = up;
                    }
                }
            }
        }
        Sensitivity {
            joints: n,
            reach,
            parent_scale,
            min_scale,
        }
    }
}

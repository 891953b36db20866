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

use glam::Mat4;

use super::compose4::{self, Affine4, LANES};
use crate::play::sampling::sample_again;
use crate::{sample, Clip, Error, Pose, SamplingCache, Skeleton, Transform};

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

/// Times measured per task: each task samples its times in order through its own caches,
/// so that a measurement splits over threads (feature `rayon`) with the same result.
pub(super) const CHUNK: usize = 128;
const _: () = assert!(CHUNK % LANES == 0, "chunks hold whole groups of times");
/// Errors held at once before they are reported in order (at least two tasks' worth, so
/// that both cores have work): 4 MiB.
const BATCH_ERRORS: usize = 1 << 20;

/// A clip's model space at a fixed list of times, composed once: the reference's, since the
/// budget search measures a dozen candidates and the loosening dozens more against it at the
/// same times, and composing it was half of every measurement.
pub(crate) struct ModelFrames {
    times: Vec<f32>,
    joints: usize,
    /// Per chunk of [`CHUNK`] times, as [`measure_chunk`] measures them: per group of
    /// [`LANES`] times (the last padded with its last time) and joint, group-major.
    model: Vec<Vec<Affine4>>,
}

/// At most this many (time, joint) pairs are kept in a [`ModelFrames`] (96 bytes each:
/// 96 MiB); longer clips compose their reference at every measurement.
pub(crate) const MODEL_FRAMES_MAX: usize = 1 << 20;

impl ModelFrames {
    /// `clip` composed at `times`; `None` if that is more than [`MODEL_FRAMES_MAX`] pairs.
    pub fn new(skeleton: &Skeleton, clip: &Clip, times: &[f32]) -> Result<Option<Self>, Error> {
        let n = skeleton.len();
        if times.len().saturating_mul(n) > MODEL_FRAMES_MAX {
            return Ok(None);
        }
        let chunks: Vec<&[f32]> = times.chunks(CHUNK).collect();
        let parts = super::par_map(&chunks, |&chunk| -> Result<Vec<Affine4>, Error> {
            let mut poses: [Pose; LANES] = std::array::from_fn(|_| Pose::rest(skeleton));
            let mut model = vec![Affine4::IDENTITY; n];
            let mut cache = SamplingCache::for_clip(clip);
            let mut out = Vec::with_capacity(chunk.len().div_ceil(LANES) * n);
            for group in chunk.chunks(LANES) {
                for (l, pose) in poses.iter_mut().enumerate() {
                    sample(clip, group[l.min(group.len() - 1)], &mut cache, pose)?;
                }
                let refs = [&poses[0][..], &poses[1][..], &poses[2][..], &poses[3][..]];
                compose4::compose(skeleton.parents(), refs, &mut model, None);
                out.extend_from_slice(&model);
            }
            Ok(out)
        });
        let all = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Self {
            times: times.to_vec(),
            joints: n,
            model: all,
        }))
    }
}

/// What a candidate is measured against: a clip, sampled and composed at each time, or its
/// frames composed once for these very times.
#[derive(Clone, Copy)]
pub(crate) enum Reference<'a> {
    Clip(&'a Clip),
    Frames(&'a ModelFrames),
}

/// Both clips sampled at each of `times` (or the reference's frames composed once for them),
/// their model space composed in f64, and `on_error(time index, joint, error)` called with the
/// largest distance between the joint's three virtual vertices under each, in the order of
/// `times` and joints. The times are measured in chunks of [`CHUNK`], each sampled in order
/// through its own sampling caches (which give the same poses whatever their state), four
/// times at once. Memory is four poses and a model per clip and task, and up to
/// [`BATCH_ERRORS`] errors (or two chunks' worth) waiting to be reported.
pub(crate) fn measure(
    skeleton: &Skeleton,
    reference: Reference<'_>,
    candidate: &Clip,
    shell: f32,
    times: &[f32],
    on_error: impl FnMut(usize, usize, f32),
) -> Result<(), Error> {
    measure_joints(
        skeleton, reference, candidate, shell, times, None, None, None, on_error,
    )?;
    Ok(())
}

/// Chunks of times in the first batch of a measurement that may stop early; each batch after
/// it is twice the one before, up to the batch of a measurement that does not stop. A
/// failing measurement stops after few chunks, a passing one soon runs as many chunks at
/// once as the pool has threads; the batches depend on the number of chunks only, so where
/// it stops does not depend on the threads.
const STOP_BATCH: usize = 2;

/// [`measure`] for some joints: with `only` = (needed, measured), only the `needed` joints are
/// composed (they must include every ancestor of a measured joint) and `on_error` is called
/// for the `measured` ones. A trial that changes a few joints' channels moves only their
/// subtrees: measuring just those (composing the chains above them) is what keeps the
/// encoder's joint-by-joint loosening linear, not quadratic, in the joint count.
///
/// With `stop_above`, the measurement stops after the batch of times in which an error above
/// it (or NaN) is reported, and returns `false`; `true` when every time was measured. Where
/// it stops depends on the errors only, not on the threads ([`STOP_BATCH`]).
///
/// The times are split into tasks of [`CHUNK`] (over rayon's pool with feature `rayon`);
/// `on_error` is called in the order of `times` and joints whatever the split, or with
/// `order` (a permutation of the chunks' indices) chunk by chunk in that order: where an
/// error over `stop_above` is likely somewhere, measuring there first stops sooner.
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure_joints(
    skeleton: &Skeleton,
    reference: Reference<'_>,
    candidate: &Clip,
    shell: f32,
    times: &[f32],
    only: Option<(&[bool], &[bool])>,
    order: Option<&[usize]>,
    stop_above: Option<f32>,
    mut on_error: impl FnMut(usize, usize, f32),
) -> Result<bool, Error> {
    let n = skeleton.len();
    if let Reference::Frames(frames) = reference {
        assert!(
            frames.joints == n && frames.times == times,
            "reference frames composed for other times"
        );
    }
    let measured: Vec<usize> = (0..n).filter(|&j| only.is_none_or(|(_, m)| m[j])).collect();
    let needed = only.map(|o| o.0);
    let mut chunks: Vec<(usize, &[f32])> = times
        .chunks(CHUNK)
        .enumerate()
        .map(|(k, c)| (k * CHUNK, c))
        .collect();
    if let Some(order) = order {
        assert_eq!(
            order.len(),
            chunks.len(),
            "an order of every chunk of times"
        );
        chunks = order.iter().map(|&c| chunks[c]).collect();
    }
    let full = (BATCH_ERRORS / (CHUNK * measured.len().max(1))).max(2);
    let mut size = match stop_above {
        Some(_) => STOP_BATCH.min(full),
        None => full,
    };
    let over = |e: f32| stop_above.is_some_and(|s| e.is_nan() || e > s);
    let mut rest = &chunks[..];
    while !rest.is_empty() {
        let (batch, after) = rest.split_at(size.min(rest.len()));
        rest = after;
        size = (size * 2).min(full);
        let mut stop = false;
        let errors = super::par_map(batch, |&(first, chunk)| {
            measure_chunk(
                skeleton, reference, candidate, shell, first, chunk, needed, &measured,
            )
        });
        for (&(first, chunk), errors) in batch.iter().zip(errors) {
            let errors = errors?;
            for (i, row) in errors
                .chunks(measured.len().max(1))
                .enumerate()
                .take(chunk.len())
            {
                for (&j, &e) in measured.iter().zip(row) {
                    on_error(first + i, j, e);
                    stop |= over(e);
                }
            }
        }
        if stop {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The errors of the `measured` joints at `times` (the `first`th time on), time-major.
#[allow(clippy::too_many_arguments)]
fn measure_chunk(
    skeleton: &Skeleton,
    reference: Reference<'_>,
    candidate: &Clip,
    shell: f32,
    first: usize,
    times: &[f32],
    needed: Option<&[bool]>,
    measured: &[usize],
) -> Result<Vec<f32>, Error> {
    let n = skeleton.len();
    let parents = skeleton.parents();
    // Four times at once (the last group padded with its last time).
    let mut pb: [Pose; LANES] = std::array::from_fn(|_| Pose::rest(skeleton));
    let mut pa: [Pose; LANES] = std::array::from_fn(|_| Pose::rest(skeleton));
    let (mut mb, mut ma) = (vec![Affine4::IDENTITY; n], vec![Affine4::IDENTITY; n]);
    let mut cb = CANDIDATE_CACHE
        .with(|c| c.borrow_mut().take())
        .unwrap_or_else(|| SamplingCache::for_clip(candidate));
    let mut ca = match reference {
        Reference::Clip(clip) => Some(SamplingCache::for_clip(clip)),
        Reference::Frames(_) => None,
    };
    let shell = f64::from(shell);
    let mut out = Vec::with_capacity(times.len() * measured.len());
    let mut errors = vec![[0f32; LANES]; measured.len()];
    for (g, group) in times.chunks(LANES).enumerate() {
        let at = |l: usize| group[l.min(group.len() - 1)];
        for (l, pose) in pb.iter_mut().enumerate() {
            // The first group's samples put the base pose in place for the others.
            match g {
                0 => sample(candidate, at(l), &mut cb, pose)?,
                _ => sample_again(candidate, at(l), &mut cb, pose)?,
            }
        }
        compose4::compose(parents, pb.each_ref().map(|p| &p[..]), &mut mb, needed);
        let against: &[Affine4] = match (reference, ca.as_mut()) {
            (Reference::Clip(clip), Some(ca)) => {
                for (l, pose) in pa.iter_mut().enumerate() {
                    sample(clip, at(l), ca, pose)?;
                }
                compose4::compose(parents, pa.each_ref().map(|p| &p[..]), &mut ma, needed);
                &ma
            }
            (Reference::Frames(frames), _) => {
                let at = g * n;
                &frames.model[first / CHUNK][at..at + n]
            }
            (Reference::Clip(_), None) => unreachable!("a clip reference has its cache"),
        };
        compose4::errors(&mb, against, measured, shell, &mut errors);
        for l in 0..group.len() {
            out.extend(errors.iter().map(|e| e[l]));
        }
    }
    CANDIDATE_CACHE.with(|c| *c.borrow_mut() = Some(cb));
    Ok(out)
}

thread_local! {
    /// Each thread's sampling cache for the candidates [`measure_chunk`] measures, kept from
    /// one chunk of times to the next. A fresh cache's first sample of a compact clip seeks:
    /// every track decodes its segment from the start up to the time (on Boxing_Toes those
    /// seeks were 2.9% of a compression's instructions, one per chunk). The chunks of a
    /// measurement mostly come in the order of time (in order on one thread; rayon gives each
    /// thread runs of neighbouring chunks), so that the first sample of the next chunk moves
    /// the cache on from the last one's. A cache gives the same poses whatever its state, and
    /// rebinds itself to another clip by the clip's id (unique per clip made). It stays on
    /// the thread after the compression (a few hundred bytes per track of the last clip
    /// measured), to be rebound by the next.
    static CANDIDATE_CACHE: std::cell::RefCell<Option<SamplingCache>> =
        const { std::cell::RefCell::new(None) };
}

/// Statistics of per-(time, joint) errors collected in order (`joints` per time).
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

/// Errors in bins of 1/200 of a budget up to twice the budget (the last bin: beyond): what
/// a 99th percentile needs, in constant memory, and mergeable over clips with one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorHistogram {
    /// The width of a bin, in the unit the errors were given in.
    pub step: f32,
    /// Counts per bin; `counts[k]` holds errors in `[k * step, (k + 1) * step)`, the last one
    /// everything above.
    pub counts: Vec<u64>,
}

impl ErrorHistogram {
    /// Bins for errors of a budget `budget`.
    pub fn new(budget: f32) -> Self {
        Self {
            step: budget / 200.0,
            counts: vec![0; 401],
        }
    }

    /// Counts `e`.
    pub fn add(&mut self, e: f32) {
        let k = if e.is_finite() {
            ((e / self.step) as usize).min(400)
        } else {
            400
        };
        self.counts[k] += 1;
    }

    /// Adds another histogram of the same bins.
    pub fn merge(&mut self, other: &ErrorHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// The `q` quantile (0..=1) as the upper edge of its bin (`max` for the last bin).
    pub fn quantile(&self, q: f64, max: f32) -> f32 {
        let total: u64 = self.counts.iter().sum();
        let want = (total as f64 * q).ceil() as u64;
        let mut seen = 0;
        for (k, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want && c > 0 {
                return if k == 400 {
                    max
                } else {
                    ((k + 1) as f32 * self.step).min(max)
                };
            }
        }
        max
    }
}

/// Measures how far `candidate` strays from `reference`: the largest distance, over `times`
/// and every joint, between virtual vertices `shell` units from the joint on its local axes,
/// in model space (skeleton units).
///
/// Both clips are sampled as the runtime samples them, through a [`SamplingCache`] in the
/// order of `times`; model space is composed in f64.
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
    let mut errors = Vec::with_capacity(times.len() * skeleton.len());
    measure(
        skeleton,
        Reference::Clip(reference),
        candidate,
        shell,
        times,
        |_, _, e| errors.push(e),
    )?;
    Ok(stats(&errors, skeleton.len(), times))
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
    /// Room for `frames` frames of `joints` joints, to [`Sensitivity::push`] them into.
    pub fn with_capacity(joints: usize, frames: usize) -> Sensitivity {
        Sensitivity {
            joints,
            reach: Vec::with_capacity(joints * frames),
            parent_scale: Vec::with_capacity(joints * frames),
            min_scale: Vec::with_capacity(joints * frames),
        }
    }

    /// The next frame, from its model matrices and its local pose (the frames are pushed in
    /// order; each frame's values depend on that frame alone, so the frames can be pushed
    /// in parts, each part into its own `Sensitivity`, then [`Sensitivity::append`]ed in
    /// order).
    pub fn push(&mut self, skeleton: &Skeleton, model: &[Mat4], local: &[Transform], shell: f32) {
        let n = self.joints;
        let parents = skeleton.parents();
        let frob = |m: &Mat4| {
            (m.x_axis.truncate().length_squared()
                + m.y_axis.truncate().length_squared()
                + m.z_axis.truncate().length_squared())
            .sqrt()
        };
        let at = self.reach.len();
        for j in 0..n {
            let axes = model[j].x_axis.truncate().length().max(
                model[j]
                    .y_axis
                    .truncate()
                    .length()
                    .max(model[j].z_axis.truncate().length()),
            );
            self.reach.push(shell * axes);
            let p = parents[j];
            self.parent_scale.push(match p {
                crate::JointIndex::MAX => 1.0,
                p => frob(&model[p as usize]),
            });
            let s = local[j].scale.abs().min_element();
            self.min_scale.push(s.max(1e-6));
        }
        // Children after parents: fold reaches up from the leaves.
        let r = &mut self.reach[at..];
        for j in (0..n).rev() {
            let p = parents[j];
            if p != crate::JointIndex::MAX {
                let d = (model[j].w_axis - model[p as usize].w_axis)
                    .truncate()
                    .length();
                let up = d + r[j];
                if up > r[p as usize] {
                    r[p as usize] = up;
                }
            }
        }
    }

    /// `other`'s frames after these.
    pub fn append(&mut self, other: Sensitivity) {
        self.reach.extend(other.reach);
        self.parent_scale.extend(other.parent_scale);
        self.min_scale.extend(other.min_scale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Interpolation, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues, Target, Transform,
    };
    use glam::{Quat, Vec3};

    /// A four-joint chain and a clip of it, its rotations offset by `wobble`.
    fn chain(wobble: f32) -> (Skeleton, Clip) {
        let joints = (0..4)
            .map(|j| RawJoint {
                name: format!("j{j}"),
                parent: (j > 0).then(|| j - 1),
                rest: Transform::new(Vec3::new(0.0, 20.0, 1.0), Quat::IDENTITY, Vec3::ONE),
            })
            .collect();
        let skeleton = RawSkeleton {
            joints,
            ..Default::default()
        }
        .build()
        .unwrap();
        let times: Vec<f32> = (0..=90).map(|i| i as f32 / 30.0).collect();
        let channels = (0..4)
            .map(|j| RawChannel {
                joint: format!("j{j}"),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                values: RawValues::Quat(
                    times
                        .iter()
                        .map(|t| {
                            Quat::from_rotation_z((t * (1.0 + j as f32) + wobble * t * t).sin())
                        })
                        .collect(),
                ),
                times: times.clone(),
            })
            .collect();
        let clip = RawClip {
            name: "c".into(),
            start: 0.0,
            duration: 3.0,
            channels,
        }
        .build(&skeleton)
        .unwrap();
        (skeleton, clip)
    }

    fn errors(
        skeleton: &Skeleton,
        reference: Reference<'_>,
        candidate: &Clip,
        times: &[f32],
    ) -> Vec<(usize, usize, u32)> {
        let mut out = Vec::new();
        measure(skeleton, reference, candidate, 3.0, times, |i, j, e| {
            out.push((i, j, e.to_bits()))
        })
        .unwrap();
        out
    }

    /// A measurement that may stop reports a prefix of the full one's errors, in order and
    /// bit for bit, ending after the batch where an error first exceeds the bound; it stops
    /// exactly when one does, and at the same place on one thread or rayon's pool.
    #[test]
    fn a_measurement_stops_after_the_first_error_over_its_bound() {
        let (skeleton, reference) = chain(0.0);
        let (_, candidate) = chain(0.01);
        // Long enough for several batches of chunks.
        let times: Vec<f32> = (0..3001).map(|i| i as f32 * 3.0 / 3000.0).collect();
        let frames = ModelFrames::new(&skeleton, &reference, &times)
            .unwrap()
            .unwrap();
        let full = errors(&skeleton, Reference::Frames(&frames), &candidate, &times);
        let max = full.iter().map(|e| f32::from_bits(e.2)).fold(0.0, f32::max);
        // The chunks in `order` (in time without), stopped above `bound` (not without).
        let measured = |order: Option<&[usize]>, bound: Option<f32>| {
            let mut out = Vec::new();
            let complete = measure_joints(
                &skeleton,
                Reference::Frames(&frames),
                &candidate,
                3.0,
                &times,
                None,
                order,
                bound,
                |i, j, e| out.push((i, j, e.to_bits())),
            )
            .unwrap();
            (complete, out)
        };
        let stopped = |bound: f32| measured(None, Some(bound));
        assert_eq!(stopped(max), (true, full.clone()));
        // Just under the largest error of the first chunk of times: the measurement stops
        // after its first batch.
        let bound = 0.999
            * full[..CHUNK * 4]
                .iter()
                .map(|e| f32::from_bits(e.2))
                .fold(0.0, f32::max);
        assert!(bound > 0.0 && bound < max);
        let first = full
            .iter()
            .position(|e| f32::from_bits(e.2) > bound)
            .unwrap();
        let (complete, part) = stopped(bound);
        assert!(!complete);
        assert!(
            part.len() > first && part.len() < full.len(),
            "{} of {}",
            part.len(),
            full.len()
        );
        assert_eq!(part[..], full[..part.len()]);
        assert_eq!(part.len() % (CHUNK * 4), 0, "whole chunks");
        // In another order of chunks (the last first): chunk by chunk in that order, the
        // same errors; with a bound that the last chunk exceeds, it stops after the first
        // batch.
        let chunks = times.len().div_ceil(CHUNK);
        let reversed: Vec<usize> = (0..chunks).rev().collect();
        let ordered = |bound: Option<f32>| measured(Some(&reversed), bound);
        let (complete, all) = ordered(None);
        assert!(complete);
        let expect: Vec<_> = reversed
            .iter()
            .flat_map(|&c| full[c * CHUNK * 4..((c + 1) * CHUNK * 4).min(full.len())].iter())
            .copied()
            .collect();
        assert_eq!(all, expect);
        let last = (chunks - 1) * CHUNK * 4;
        let last_bound = 0.999
            * full[last..]
                .iter()
                .map(|e| f32::from_bits(e.2))
                .fold(0.0, f32::max);
        let (complete, first) = ordered(Some(last_bound));
        assert!(!complete);
        assert_eq!(first[..], expect[..first.len()]);
        assert!(
            first.len() <= STOP_BATCH * CHUNK * 4,
            "{} reported",
            first.len()
        );
        #[cfg(feature = "rayon")]
        {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| stopped(bound)), (false, part));
            assert_eq!(pool.install(|| ordered(Some(last_bound))), (false, first));
        }
    }

    /// A compact clip sampled again into the poses an earlier sample filled (as a
    /// measurement samples its candidate), forwards, backwards and at random: the poses
    /// `sample` gives, bit for bit; its joints' translations, which no track writes, stay
    /// the base pose's.
    #[test]
    fn compact_clips_sampled_again_give_the_poses_sample_gives() {
        let (skeleton, clip) = chain(0.0);
        let options = crate::compress::CompressOptions {
            cm_per_unit: Some(1.0),
            ..Default::default()
        };
        let (small, _) = crate::compress::compress(&skeleton, &clip, &options).unwrap();
        assert!(matches!(small.storage, crate::clip::Storage::Compact(_)));
        let mut times: Vec<f32> = (0..200).map(|i| i as f32 * 0.0161).collect();
        times.extend((0..100).rev().map(|i| i as f32 * 0.0233));
        times.extend((0..100).map(|i| ((i * 7919) % 301) as f32 * 0.01));
        let mut cache = SamplingCache::for_clip(&small);
        let mut again = Pose::rest(&skeleton);
        sample(&small, times[0], &mut cache, &mut again).unwrap();
        let mut fresh = Pose::rest(&skeleton);
        for &t in &times {
            sample_again(&small, t, &mut cache, &mut again).unwrap();
            sample(&small, t, &mut SamplingCache::for_clip(&small), &mut fresh).unwrap();
            assert_eq!(format!("{:?}", again.0), format!("{:?}", fresh.0), "at {t}");
            assert_eq!(again[3].translation, Vec3::new(0.0, 20.0, 1.0));
        }
    }

    /// Measurements one after another on one thread, which hand each chunk's candidate
    /// cache on to the next: a compact candidate measured, then another, then the first
    /// again (the cache then bound to the other clip, at its end), and each in reverse order
    /// of chunks (every chunk a seek back): each candidate gives its own errors every time,
    /// bit for bit, and the two candidates' errors differ.
    #[test]
    fn measurements_one_after_another_give_the_same_errors() {
        let (skeleton, reference) = chain(0.0);
        let options = crate::compress::CompressOptions {
            cm_per_unit: Some(1.0),
            ..Default::default()
        };
        let compact = |wobble: f32| {
            let (_, clip) = chain(wobble);
            crate::compress::compress(&skeleton, &clip, &options)
                .unwrap()
                .0
        };
        let (a, b) = (compact(0.01), compact(-0.02));
        let times: Vec<f32> = (0..601).map(|i| i as f32 * 3.0 / 600.0).collect();
        let frames = ModelFrames::new(&skeleton, &reference, &times)
            .unwrap()
            .unwrap();
        let run = |clip: &Clip, order: Option<&[usize]>| {
            let mut out = Vec::new();
            measure_joints(
                &skeleton,
                Reference::Frames(&frames),
                clip,
                3.0,
                &times,
                None,
                order,
                None,
                |i, j, e| out.push((i, j, e.to_bits())),
            )
            .unwrap();
            out.sort_unstable();
            out
        };
        let first = run(&a, None);
        assert!(first.iter().filter(|e| e.2 != 0).count() > times.len());
        let other = run(&b, None);
        assert_ne!(other, first);
        assert_eq!(run(&a, None), first);
        let reversed: Vec<usize> = (0..times.len().div_ceil(CHUNK)).rev().collect();
        assert_eq!(run(&a, Some(&reversed)), first);
        assert_eq!(run(&b, Some(&reversed)), other);
    }

    /// Against the reference's frames composed once or the reference sampled each time, over
    /// a time count that is neither a multiple of four nor of a chunk: the same errors, in
    /// order, nonzero; and on one thread or rayon's pool alike.
    #[test]
    fn composed_frames_and_thread_counts_measure_alike() {
        let (skeleton, reference) = chain(0.0);
        let (_, candidate) = chain(0.01);
        let times: Vec<f32> = (0..301).map(|i| i as f32 * 3.0 / 300.0 - 0.01).collect();
        let frames = ModelFrames::new(&skeleton, &reference, &times)
            .unwrap()
            .unwrap();
        let a = errors(&skeleton, Reference::Clip(&reference), &candidate, &times);
        let b = errors(&skeleton, Reference::Frames(&frames), &candidate, &times);
        assert_eq!(a.len(), times.len() * 4);
        assert_eq!(a, b);
        assert!(
            a.iter().filter(|e| e.2 != 0).count() > times.len(),
            "errors are measured"
        );
        let order: Vec<(usize, usize)> = (0..times.len())
            .flat_map(|i| (0..4).map(move |j| (i, j)))
            .collect();
        assert_eq!(a.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(), order);
        #[cfg(feature = "rayon")]
        {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            let one =
                pool.install(|| errors(&skeleton, Reference::Frames(&frames), &candidate, &times));
            assert_eq!(one, a);
        }
    }
}

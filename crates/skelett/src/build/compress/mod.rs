//! Compression: a clip made an order of magnitude smaller, with a guaranteed bound on how far
//! any joint may move, sampled through the same [`crate::sample`] and
//! [`crate::SamplingCache`] as any clip.
//!
//! ```text
//! Clip (any interpolation) ──[resample at a given rate]──▶ reference clip
//!   grid: frames at the clip's key rate; raw local poses and model matrices per frame
//!   error budget (cm, ACL's metric: vertices 3 cm from every joint, in model space)
//!     ──split along the hierarchy (first-order bound: sensitivity of each channel)──▶
//!        a tolerance per channel and frame, times a global multiplier m
//!   per channel (encode): rest / constant / quantised keys, kept where interpolation
//!        leaves the tolerance, coded as prediction residuals per segment
//!   measure (metric): the real model-space error at every frame and between frames;
//!        m as large as the measured error allows
//!   ──▶ Clip with compact data (compact), and a CompressReport
//! ```
//!
//! The guarantee comes from the measurement, not from the bound: the first-order split only
//! decides how the budget is shared; the multiplier is then raised while the error measured
//! in model space, at every frame and three points inside every frame interval, stays within
//! 97% of the budget, and the final clip is measured again at sixteen points per interval.
//! [`CompressReport::max_error_cm`] is that final measurement.
//!
//! Sizes follow ACL's convention: the raw size is every joint's full transform (10 f32) at
//! every sample of the grid; the compressed size is what the clip stores (descriptors,
//! constants, segment offsets and bits), which is what `.skl` writes for it.
//!
//! Written by hand: no crate compresses skeletal animation; ACL (C++) and ozz-animation
//! (C++) showed the metric and the runtime layout (see the README), none of their code is
//! used.

pub(crate) mod encode;
mod metric;

use std::borrow::Cow;

use glam::{Mat4, Quat, Vec3, Vec4};

pub(crate) use crate::clip::compact::Compact;
pub use crate::clip::compact::{CompactTrack, MAX_BITS, SEG_LEN};
/// The bit-stream layer, for the parts validation.
pub use metric::{measure_error, ErrorHistogram, ErrorStats};

use crate::{
    local_to_model, sample_uncached, Clip, Error, Interpolation, JointIndex, RawChannel, RawClip,
    RawValues, Skeleton, Target, Transform,
};

/// How to compress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompressOptions {
    /// The largest distance a virtual vertex may move, in centimetres (ACL's default 0.01).
    pub error_cm: f32,
    /// Distance of the virtual vertices from their joint, in centimetres (ACL's 3).
    pub shell_cm: f32,
    /// Length of one skeleton unit in centimetres, as the caller knows it; `None`: the
    /// source's declared unit if plausible, else detected ([`choose_cm_per_unit`]).
    pub cm_per_unit: Option<f32>,
    /// The unit the source declares (glTF: metres; FBX: its unit), used when `cm_per_unit`
    /// is `None` and it makes the skeleton between 0.3 and 30 m tall.
    pub declared_cm_per_unit: Option<f32>,
    /// Resample the clip at this rate first (samples at `start + i / rate`), as ACL does when
    /// told a rate; `None`: the clip's own key rate.
    pub sample_rate: Option<f32>,
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self {
            error_cm: 0.01,
            shell_cm: 3.0,
            cm_per_unit: None,
            declared_cm_per_unit: None,
            sample_rate: None,
        }
    }
}

/// Where the unit came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnitSource {
    /// The caller said ([`CompressOptions::cm_per_unit`]).
    Given,
    /// The source's declared unit ([`CompressOptions::declared_cm_per_unit`]).
    Declared,
    /// The skeleton's height (largest extent of its rest pose) fits a human in this unit.
    Detected {
        /// The unit's name: "m", "cm", "in" or "mm".
        unit: &'static str,
        /// The height in skeleton units.
        height: f32,
        /// The declared unit, which was not used because it made the skeleton implausibly
        /// tall (below 0.3 m or above 30 m).
        declared: Option<f32>,
    },
    /// No unit fits: the skeleton is taken as 1.75 m tall.
    AssumedHeight {
        /// The height in skeleton units.
        height: f32,
        /// As in `Detected`.
        declared: Option<f32>,
    },
}

/// Centimetres per skeleton unit: `declared` where it makes the skeleton between 0.3 m and
/// 30 m tall, else [`detect_cm_per_unit`] (a file that declares metres but is modelled in
/// centimetres, as Khronos' Fox, would otherwise be a 100 m fox, and a 0.01 cm budget would be
/// a millionth of its size: below f32's precision).
pub fn choose_cm_per_unit(skeleton: &Skeleton, declared: Option<f32>) -> (f32, UnitSource) {
    let (detected, source) = detect_cm_per_unit(skeleton);
    let height = match source {
        UnitSource::Detected { height, .. } | UnitSource::AssumedHeight { height, .. } => height,
        _ => 0.0,
    };
    match declared {
        Some(cm) if (30.0..=3000.0).contains(&(height * cm)) || height == 0.0 => {
            (cm, UnitSource::Declared)
        }
        Some(_) => (
            detected,
            match source {
                UnitSource::Detected { unit, height, .. } => UnitSource::Detected {
                    unit,
                    height,
                    declared,
                },
                _ => UnitSource::AssumedHeight { height, declared },
            },
        ),
        None => (detected, source),
    }
}

/// What [`compress`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressReport {
    /// Samples per second of the source (its key rate, or the rate it was resampled at).
    pub source_rate: f32,
    /// Samples per second of the compact clip's grid: the source's, or finer where the
    /// source's curves between its keys need it (cubic splines).
    pub sample_rate: f32,
    /// Samples of the source (the clip's end included): what the raw size counts.
    pub samples: usize,
    /// `true` if the clip was resampled at [`CompressOptions::sample_rate`] first; errors are
    /// then measured against the resampled clip (as ACL does).
    pub resampled: bool,
    /// Centimetres per skeleton unit, and where that came from.
    pub cm_per_unit: f32,
    /// See `cm_per_unit`.
    pub units: UnitSource,
    /// Joints x source samples x 10 f32 (ACL's raw size).
    pub raw_bytes: usize,
    /// What the compact clip stores ([`Clip::size_bytes`]).
    pub compressed_bytes: usize,
    /// The budget asked for, cm ([`CompressOptions::error_cm`]).
    pub error_cm: f32,
    /// Largest error measured (frames, fifteen points inside every frame interval, and the
    /// source's key times), cm; above `error_cm` only where the budget could not be met
    /// (below f32's precision for the skeleton's size, or a source that jumps between the
    /// finest grid's samples).
    pub max_error_cm: f32,
    /// 99th percentile of the per-(time, joint) errors, cm.
    pub p99_error_cm: f32,
    /// Where the largest error is.
    pub worst_joint: JointIndex,
    /// See `worst_joint`.
    pub worst_time: f32,
    /// The per-(time, joint) errors of the final measurement, in centimetres, binned (for
    /// percentiles over several clips: [`ErrorHistogram::merge`]).
    pub error_histogram: ErrorHistogram,
    /// Channels stored as keys.
    pub animated_channels: usize,
    /// Channels stored as one value.
    pub constant_channels: usize,
    /// Channels equal to the rest pose (not stored).
    pub rest_channels: usize,
    /// Keys stored, over all animated channels.
    pub keys: usize,
    /// Wall time of the compression, seconds.
    pub seconds: f64,
}

impl CompressReport {
    /// `raw_bytes / compressed_bytes`.
    pub fn ratio(&self) -> f64 {
        self.raw_bytes as f64 / self.compressed_bytes.max(1) as f64
    }
}

/// Guesses the skeleton's unit from its height (the largest extent of its rest pose in model
/// space): metres, centimetres, inches or millimetres, whichever makes it between 0.875 and
/// 3.5 m tall and closest to 1.75 m; if none does, the skeleton is taken as 1.75 m tall.
///
/// ```
/// # use skelett::*;
/// # use glam::{Quat, Vec3};
/// let human_in_cm = RawSkeleton { joints: vec![
///     RawJoint { name: "hips".into(), parent: None, rest: Transform::IDENTITY },
///     RawJoint { name: "head".into(), parent: Some(0),
///                rest: Transform::new(Vec3::new(0.0, 80.0, 0.0), Quat::IDENTITY, Vec3::ONE) },
///     RawJoint { name: "foot".into(), parent: Some(0),
///                rest: Transform::new(Vec3::new(0.0, -95.0, 0.0), Quat::IDENTITY, Vec3::ONE) },
/// ], ..Default::default() }.build()?;
/// let (cm, _) = skelett::compress::detect_cm_per_unit(&human_in_cm);
/// assert_eq!(cm, 1.0);
/// # Ok::<(), skelett::Error>(())
/// ```
pub fn detect_cm_per_unit(skeleton: &Skeleton) -> (f32, UnitSource) {
    let mut model = vec![Mat4::IDENTITY; skeleton.len()];
    // The rest pose has one entry per joint: cannot fail.
    let _ = local_to_model(skeleton, skeleton.rest_pose(), 0, &mut model);
    let (lo, hi) = model.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), m| {
            let p = m.w_axis.truncate();
            (lo.min(p), hi.max(p))
        },
    );
    let height = (hi - lo).max_element();
    if !(height.is_finite() && height > 0.0) {
        return (
            1.0,
            UnitSource::AssumedHeight {
                height: 0.0,
                declared: None,
            },
        );
    }
    let best = [("m", 100.0f32), ("cm", 1.0), ("in", 2.54), ("mm", 0.1)]
        .into_iter()
        .filter(|(_, cm)| (87.5..=350.0).contains(&(height * cm)))
        .min_by(|a, b| {
            let d = |cm: f32| (height * cm / 175.0).ln().abs();
            d(a.1).total_cmp(&d(b.1))
        });
    match best {
        Some((unit, cm)) => (
            cm,
            UnitSource::Detected {
                unit,
                height,
                declared: None,
            },
        ),
        None => (
            175.0 / height,
            UnitSource::AssumedHeight {
                height,
                declared: None,
            },
        ),
    }
}

/// Frames per second of the clip's keys: the smallest common frame rate (24, 25, 30, 48, 50,
/// 60, 72, 96, 100, 120, 240) whose frames hold every key time (within a thousandth of a
/// frame); else the rate of a uniform grid through every key (a BVH's 0.0083333 s frames
/// are 120.0005 fps, not 120); else the reciprocal of the closest two key times (at most
/// 240).
pub fn detect_rate(clip: &Clip) -> f32 {
    if let Some(c) = &clip.compact {
        return c.rate;
    }
    let mut times: Vec<f64> = clip
        .times
        .iter()
        .map(|&t| f64::from(t) - f64::from(clip.start))
        .collect();
    times.sort_by(f64::total_cmp);
    times.dedup_by(|a, b| (*a - *b).abs() < 1e-6);
    if times.len() < 2 {
        return 30.0;
    }
    let on_grid = |dt: f64| {
        times.iter().all(|t| {
            let f = t / dt;
            (f - f.round()).abs() <= 1e-3
        })
    };
    for rate in [
        24.0, 25.0, 30.0, 48.0, 50.0, 60.0, 72.0, 96.0, 100.0, 120.0, 240.0,
    ] {
        if on_grid(1.0 / rate) {
            return rate as f32;
        }
    }
    // A uniform grid: every gap a whole number of median gaps, the step fitted end to end.
    let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let d_min = gaps.iter().copied().fold(f64::INFINITY, f64::min);
    let mid = gaps.len() / 2;
    let median = *gaps.select_nth_unstable_by(mid, f64::total_cmp).1;
    let mut steps = 0.0;
    for w in times.windows(2) {
        steps += ((w[1] - w[0]) / median).round().max(1.0);
    }
    let dt = (times[times.len() - 1] - times[0]) / steps;
    if dt > 1e-3 && on_grid(dt) {
        return (1.0 / dt) as f32;
    }
    (1.0 / d_min).clamp(1.0, 240.0) as f32
}

/// Frames a compact clip may have, and joint-frames (joints times frames) a clip may have to
/// be compressed: the compressor keeps a few hundred bytes per joint-frame (values between
/// frames, sensitivities), about 2 GB at this limit; split longer clips.
pub const MAX_FRAMES: u32 = 1 << 24;
const MAX_JOINT_FRAMES: u64 = 1 << 23;

/// The sampling grid: `frames` samples at `start + f / rate`, the last at the clip's end.
#[derive(Clone, Copy, Debug)]
struct Grid {
    start: f32,
    duration: f32,
    rate: f32,
    frames: u32,
    last_span: f32,
}

impl Grid {
    /// The grid over `duration` at `rate`: whole frames, and one more where the last
    /// interval is shorter than a frame (at least a start and an end for any positive
    /// duration); `None` past [`MAX_FRAMES`].
    fn new(start: f32, duration: f32, rate: f32) -> Option<Grid> {
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

    fn time(&self, f: u32) -> f32 {
        if f + 1 >= self.frames {
            self.start + self.duration
        } else {
            self.start + f as f32 / self.rate
        }
    }

    fn pos(&self, f: u32) -> f32 {
        if f + 1 >= self.frames {
            self.frames.saturating_sub(2) as f32 + self.last_span
        } else {
            f as f32
        }
    }

    /// The frame times, and `per` evenly spaced times in every frame interval.
    fn times(&self, per: u32) -> Vec<f32> {
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

/// Compresses `clip` (built for `skeleton`) so that no virtual vertex moves more than
/// `options.error_cm`, measured in model space at every frame and between frames.
///
/// The result is a [`Clip`]: sample it with [`crate::sample`], play it in the animator,
/// save it with `skelett_io::native`. Events, name and time range are kept.
///
/// ```
/// # use skelett::*;
/// # use glam::{Quat, Vec3};
/// let skeleton = RawSkeleton { joints: vec![
///     RawJoint { name: "hips".into(), parent: None, rest: Transform::IDENTITY },
///     RawJoint { name: "knee".into(), parent: Some(0),
///                rest: Transform::new(Vec3::new(0.0, -45.0, 0.0), Quat::IDENTITY, Vec3::ONE) },
/// ], ..Default::default() }.build()?;
/// let times: Vec<f32> = (0..=60).map(|i| i as f32 / 30.0).collect();
/// let swing: Vec<Quat> = times.iter().map(|t| Quat::from_rotation_x((t * 3.0).sin())).collect();
/// let clip = RawClip { name: "swing".into(), start: 0.0, duration: 2.0, channels: vec![RawChannel {
///     joint: "hips".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
///     times, values: RawValues::Quat(swing) }] }.build(&skeleton)?;
///
/// let options = compress::CompressOptions { cm_per_unit: Some(1.0), ..Default::default() };
/// let (small, report) = compress::compress(&skeleton, &clip, &options)?;
/// assert!(report.max_error_cm <= 0.01);
/// assert!(small.size_bytes() < clip.size_bytes());
/// let mut pose = Pose::rest(&skeleton);
/// sample(&small, 1.0, &mut SamplingCache::for_clip(&small), &mut pose)?;
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// - [`Error::SkeletonMismatch`] if the clip was built for another skeleton.
/// - [`Error::ClipRange`] if an option is not a positive, finite number, or the clip is too
///   long to compress at once (more than [`MAX_FRAMES`] frames, or 2^23 joints times frames)
///   or for the format (more than 2^32 bits of keys).
pub fn compress(
    skeleton: &Skeleton,
    clip: &Clip,
    options: &CompressOptions,
) -> Result<(Clip, CompressReport), Error> {
    let started = std::time::Instant::now();
    let bad = |problem: String| Error::ClipRange {
        clip: clip.name.clone(),
        problem,
    };
    let positive = |v: f32| v.is_finite() && v > 0.0;
    if !positive(options.error_cm) || !positive(options.shell_cm) {
        return Err(bad(format!(
            "compression error {} cm and shell {} cm must be positive",
            options.error_cm, options.shell_cm
        )));
    }
    if let Some(c) = [options.cm_per_unit, options.declared_cm_per_unit]
        .into_iter()
        .flatten()
        .find(|&c| !positive(c))
    {
        return Err(bad(format!("{c} cm per unit: a positive number is needed")));
    }
    if let Some(r) = options
        .sample_rate
        .filter(|&r| !(positive(r) && r <= 10_000.0))
    {
        return Err(bad(format!(
            "sample rate {r}: a positive number up to 10000 is needed"
        )));
    }
    if clip.joint_count() != skeleton.len() {
        return Err(Error::SkeletonMismatch {
            clip: clip.joint_count(),
            skeleton: skeleton.len(),
        });
    }
    let (cm_per_unit, units) = match options.cm_per_unit {
        Some(c) => (c, UnitSource::Given),
        None => choose_cm_per_unit(skeleton, options.declared_cm_per_unit),
    };
    let budget = options.error_cm / cm_per_unit;
    let shell = options.shell_cm / cm_per_unit;
    // A grid the format and the compressor's memory allow, or a clear error.
    let grid_at = |rate: f32| -> Result<Grid, Error> {
        Grid::new(clip.start, clip.duration, rate)
            .filter(|g| u64::from(g.frames) * skeleton.len() as u64 <= MAX_JOINT_FRAMES)
            .ok_or_else(|| {
                bad(format!(
                    "{} s at {rate} fps for {} joints is longer than skelett compresses at \
                     once ({MAX_JOINT_FRAMES} joint-frames): split the clip",
                    clip.duration,
                    skeleton.len()
                ))
            })
    };
    let (reference, rate) = match options.sample_rate {
        Some(r) => (Cow::Owned(resample(skeleton, clip, grid_at(r)?)?), r),
        None => (Cow::Borrowed(clip), detect_rate(clip)),
    };
    // ACL's raw size counts the source's samples, whatever grid the compact clip needs.
    let source = grid_at(rate)?;

    // A grid too coarse for the source (cubic curves between sparse keys) cannot meet the
    // budget even keeping every frame: refine it.
    let mut last = source;
    let mut found = None;
    for k in 0..4 {
        let grid = match grid_at(rate * (1 << k) as f32) {
            Ok(g) => g,
            Err(e) if k == 0 => return Err(e),
            Err(_) => break,
        };
        last = grid;
        if let Some(r) = compress_on(skeleton, &reference, grid, budget, shell)? {
            found = Some((grid, r));
            break;
        }
    }
    let (grid, out) = match found {
        Some(f) => f,
        // Keep the finest attempt: the report says how far it is off.
        None => (
            last,
            compress_fallback(skeleton, &reference, last, budget, shell)?,
        ),
    };
    let mut compact = out.clip;
    compact.events = clip.events.clone();
    let report = CompressReport {
        source_rate: source.rate,
        sample_rate: grid.rate,
        samples: source.frames as usize,
        resampled: options.sample_rate.is_some(),
        cm_per_unit,
        units,
        raw_bytes: skeleton.len() * source.frames as usize * 40,
        compressed_bytes: compact.size_bytes(),
        error_cm: options.error_cm,
        max_error_cm: out.dense.stats.max * cm_per_unit,
        p99_error_cm: out.dense.stats.p99 * cm_per_unit,
        worst_joint: out.dense.stats.worst_joint,
        worst_time: out.dense.stats.worst_time,
        error_histogram: ErrorHistogram {
            step: out.dense.histogram.step * cm_per_unit,
            counts: out.dense.histogram.counts.clone(),
        },
        animated_channels: out.animated,
        constant_channels: out.constant,
        rest_channels: out.rest,
        keys: out.keys,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((compact, report))
}

/// The clip resampled at `rate`: LINEAR keys at every frame of the grid (ACL's input when
/// it is given a rate).
fn resample(skeleton: &Skeleton, clip: &Clip, grid: Grid) -> Result<Clip, Error> {
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

/// One compression's result.
struct Outcome {
    clip: Clip,
    plans: Vec<encode::Plan>,
    dense: Checked,
    animated: usize,
    constant: usize,
    rest: usize,
    keys: usize,
}

/// Everything about the reference on one grid that every attempt reuses.
struct Prepared {
    grid: Grid,
    pos: Vec<f32>,
    /// Raw value per channel (joint * 3 + target) per frame, and at a quarter, half and three
    /// quarters of every frame interval.
    raw: Vec<Vec<Vec4>>,
    raw_sub: Vec<Vec<Vec4>>,
    step: Vec<bool>,
    rest: Vec<Vec4>,
    sens: metric::Sensitivity,
    /// Share of the budget of each joint's channels (before the multiplier).
    share: Vec<f32>,
    /// Reference vertices at four points per frame interval, and at sixteen.
    /// Where the search measures (frames and three points between, and the source's own key
    /// times with the f32 before each), and where the final check does (fifteen between).
    check_times: Vec<f32>,
    dense_times: Vec<f32>,
}

const TARGETS: [Target; 3] = [Target::Translation, Target::Rotation, Target::Scale];

fn to_vec4(target: Target, t: &Transform) -> Vec4 {
    match target {
        Target::Translation => t.translation.extend(0.0),
        Target::Rotation => Vec4::from(t.rotation),
        Target::Scale => t.scale.extend(0.0),
    }
}

fn prepare(
    skeleton: &Skeleton,
    reference: &Clip,
    grid: Grid,
    budget: f32,
    shell: f32,
) -> Result<Prepared, Error> {
    let n = skeleton.len();
    let frames = grid.frames as usize;
    let mut local = vec![Transform::IDENTITY; n * frames];
    let mut model = vec![Mat4::IDENTITY; n * frames];
    for f in 0..frames {
        let pose = &mut local[f * n..(f + 1) * n];
        sample_uncached(reference, grid.time(f as u32), pose)?;
        local_to_model(skeleton, pose, 0, &mut model[f * n..(f + 1) * n])?;
    }
    let subs = frames.saturating_sub(1) * encode::SUB;
    let mut mid = vec![Transform::IDENTITY; n * subs];
    for i in 0..subs {
        let (f, k) = ((i / encode::SUB) as u32, i % encode::SUB);
        let (t0, t1) = (grid.time(f), grid.time(f + 1));
        let t = t0 + (t1 - t0) * encode::SUB_AT[k];
        sample_uncached(reference, t, &mut mid[i * n..(i + 1) * n])?;
    }
    let scales: Vec<Vec3> = local.iter().map(|t| t.scale).collect();
    let sens = metric::Sensitivity::new(skeleton, &model, &scales, shell);
    let rest_pose = skeleton.rest_pose();
    let mut raw = Vec::with_capacity(3 * n);
    let mut raw_sub = Vec::with_capacity(3 * n);
    let mut rest = Vec::with_capacity(3 * n);
    let mut step = vec![false; 3 * n];
    for j in 0..n {
        for target in TARGETS {
            raw.push(
                (0..frames)
                    .map(|f| to_vec4(target, &local[f * n + j]))
                    .collect::<Vec<_>>(),
            );
            raw_sub.push(
                (0..subs)
                    .map(|i| to_vec4(target, &mid[i * n + j]))
                    .collect::<Vec<_>>(),
            );
            rest.push(to_vec4(target, &rest_pose[j]));
        }
    }
    for (j, target, interp, _) in reference.channels() {
        if interp == Interpolation::Step {
            step[j as usize * 3 + target as usize] = true;
        }
    }
    // Channels that move (or leave the rest pose) share the budget along every chain: a
    // joint's channels get the budget divided by the most such channels on any path from
    // a root through it to a leaf.
    let moving: Vec<u32> = (0..n)
        .map(|j| {
            (0..3)
                .filter(|&k| {
                    let v = &raw[j * 3 + k];
                    v.iter().any(|x| *x != v[0]) || v[0] != rest[j * 3 + k]
                })
                .count() as u32
        })
        .collect();
    let parents = skeleton.parents();
    let mut path = vec![0u32; n];
    for j in 0..n {
        let p = parents[j];
        path[j] = moving[j]
            + if p == JointIndex::MAX {
                0
            } else {
                path[p as usize]
            };
    }
    let mut chain = path.clone();
    for j in (0..n).rev() {
        let p = parents[j];
        if p != JointIndex::MAX && chain[j] > chain[p as usize] {
            chain[p as usize] = chain[j];
        }
    }
    let share = chain.iter().map(|&c| budget / c.max(1) as f32).collect();
    // The source's key times, and just before each: a STEP key, or a kink, between the
    // grid's points is measured where it happens. "Just before" is twice the tolerance
    // within which a time counts as its grid frame (see `Compact::pos_of`), outside the f32
    // rounding of frame times that a compact STEP key switches at.
    let before = |t: f32| {
        let x = ((t - reference.start) * grid.rate).abs();
        t - (2e-4f32).max(16.0 * f32::EPSILON * x) / grid.rate
    };
    let mut keys: Vec<f32> = reference
        .times
        .iter()
        .filter(|&&t| t >= reference.start && t <= reference.end())
        .flat_map(|&t| [before(t), t])
        .filter(|&t| t >= reference.start)
        .collect();
    keys.sort_by(f32::total_cmp);
    keys.dedup();
    let with_keys = |mut t: Vec<f32>| {
        t.extend_from_slice(&keys);
        t.sort_by(f32::total_cmp);
        t.dedup();
        t
    };
    let check_times = with_keys(grid.times(4));
    let dense_times = with_keys(grid.times(16));
    let _ = shell;
    Ok(Prepared {
        grid,
        pos: (0..grid.frames).map(|f| grid.pos(f)).collect(),
        raw,
        raw_sub,
        step,
        rest,
        sens,
        share,
        check_times,
        dense_times,
    })
}

/// Plans every channel with the budget multiplied by `m`, and each joint's by `scale[j]`.
fn plan_all(p: &Prepared, m: f32, scale: &[f32]) -> Vec<encode::Plan> {
    (0..p.sens.joints)
        .flat_map(|j| plan_joint(p, j, m * scale[j]))
        .collect()
}

/// Plans joint `j`'s three channels with its share of the budget multiplied by `m`.
fn plan_joint(p: &Prepared, j: usize, m: f32) -> [encode::Plan; 3] {
    let n = p.sens.joints;
    let frames = p.grid.frames as usize;
    let mut tol = vec![0f32; frames];
    let e = p.share[j] * m;
    TARGETS.map(|target| {
        let k = target as usize;
        for (f, t) in tol.iter_mut().enumerate() {
            let i = f * n + j;
            *t = match target {
                // Angle e / reach, as the chord between unit quaternions.
                Target::Rotation => 2.0 * (e / p.sens.reach[i] * 0.25).min(1.5).sin(),
                Target::Translation => e / p.sens.parent_scale[i],
                Target::Scale => e * p.sens.min_scale[i] / p.sens.reach[i],
            };
        }
        let input = encode::TrackInput {
            joint: j as JointIndex,
            target,
            step: p.step[j * 3 + k],
            raw: &p.raw[j * 3 + k],
            raw_sub: &p.raw_sub[j * 3 + k],
            tol: &tol,
            rest: p.rest[j * 3 + k],
        };
        encode::plan(&input, &p.pos)
    })
}

/// Bits a plan stores (constants counted as their values).
fn plan_bits(plan: &encode::Plan) -> u64 {
    match plan {
        encode::Plan::Rest => 0,
        encode::Plan::Constant(_) => 128,
        encode::Plan::Animated(e) => e.bits() + 31 * 8,
    }
}

/// Assembles planned channels into a clip.
fn assemble(
    reference: &Clip,
    skeleton: &Skeleton,
    p: &Prepared,
    plans: &[encode::Plan],
) -> Result<Outcome, Error> {
    let n = skeleton.len();
    let mut base: Vec<Transform> = skeleton.rest_pose().to_vec();
    let mut constants = Vec::new();
    let mut tracks = Vec::new();
    let (mut animated, mut constant, mut rest, mut keys) = (0, 0, 0, 0);
    let mut encoded = Vec::new();
    let mut moved = vec![0u8; n];
    for (i, plan) in plans.iter().enumerate() {
        let j = i / 3;
        let target = TARGETS[i % 3];
        match plan {
            encode::Plan::Rest => rest += 1,
            encode::Plan::Constant(v) => {
                constant += 1;
                set(&mut base[j], target, *v);
                constants.push((j as JointIndex, target, *v));
            }
            encode::Plan::Animated(e) => {
                animated += 1;
                keys += e.keys;
                moved[j] |= 1 << (i % 3);
                tracks.push(e.track);
                encoded.push(e);
            }
        }
    }
    let segs = p.grid.frames.div_ceil(SEG_LEN) as usize;
    let mut bits = encode::Bits::default();
    let mut segments = Vec::with_capacity(segs);
    for s in 0..segs {
        segments.push(bits.len as u32);
        for e in &encoded {
            bits.append(&e.segments[s]);
        }
    }
    if bits.len > u64::from(u32::MAX) - 64 {
        return Err(Error::ClipRange {
            clip: reference.name.clone(),
            problem: format!(
                "{} bits of keys: more than a compact clip can index (2^32); split the clip",
                bits.len
            ),
        });
    }
    let compact = Compact::new(
        p.grid.rate,
        p.grid.frames,
        p.grid.last_span,
        tracks,
        constants,
        segments,
        bits.into_padded_bytes(),
    );
    let static_joints = (0..n)
        .filter(|&j| moved[j] != 7)
        .map(|j| j as JointIndex)
        .collect();
    let clip = Clip::from_compact(
        reference.name.clone(),
        reference.start,
        reference.duration,
        base,
        static_joints,
        compact,
        Vec::new(),
    );
    Ok(Outcome {
        clip,
        plans: plans.to_vec(),
        dense: Checked {
            stats: ErrorStats::default(),
            over: Vec::new(),
            histogram: metric::ErrorHistogram::new(1.0),
        },
        animated,
        constant,
        rest,
        keys,
    })
}

fn set(t: &mut Transform, target: Target, v: Vec4) {
    match target {
        Target::Translation => t.translation = v.truncate(),
        Target::Rotation => t.rotation = Quat::from_vec4(v).normalize(),
        Target::Scale => t.scale = v.truncate(),
    }
}

/// What a measurement of an assembled clip found.
struct Checked {
    stats: ErrorStats,
    /// Joints with an error above the budget somewhere.
    over: Vec<bool>,
    histogram: metric::ErrorHistogram,
}

/// Measures an assembled clip against the reference at the check times (four per frame
/// interval and the source's keys) or the dense ones (sixteen).
fn check(
    skeleton: &Skeleton,
    p: &Prepared,
    reference: &Clip,
    clip: &Clip,
    shell: f32,
    budget: f32,
    dense: bool,
) -> Result<Checked, Error> {
    let times = if dense {
        &p.dense_times
    } else {
        &p.check_times
    };
    let mut stats = ErrorStats::default();
    let mut over = vec![false; skeleton.len()];
    let mut histogram = metric::ErrorHistogram::new(budget);
    metric::measure(skeleton, reference, clip, shell, times, |i, j, e| {
        stats.samples += 1;
        if e > stats.max || e.is_nan() {
            stats.max = if e.is_nan() { f32::INFINITY } else { e };
            stats.worst_joint = j as JointIndex;
            stats.worst_time = times[i];
        }
        over[j] |= e.is_nan() || e > budget;
        histogram.add(e);
    })?;
    stats.p99 = histogram.quantile(0.99, stats.max);
    Ok(Checked {
        stats,
        over,
        histogram,
    })
}

/// The largest budget multiplier whose clip measures within the budget; `None` if even the
/// smallest does not (the grid is too coarse).
fn compress_on(
    skeleton: &Skeleton,
    reference: &Clip,
    grid: Grid,
    budget: f32,
    shell: f32,
) -> Result<Option<Outcome>, Error> {
    let p = prepare(skeleton, reference, grid, budget, shell)?;
    let target = 0.97 * budget;
    let n = skeleton.len();
    let ones = vec![1.0f32; n];
    let measure =
        |clip: &Clip, dense: bool| check(skeleton, &p, reference, clip, shell, budget, dense);
    let attempt_scaled = |m: f32, scale: &[f32]| -> Result<(Outcome, f32), Error> {
        let out = assemble(reference, skeleton, &p, &plan_all(&p, m, scale))?;
        let max = measure(&out.clip, false)?.stats.max;
        Ok((out, max))
    };
    let attempt = |m: f32| attempt_scaled(m, &ones);
    // Grow m from 1 while the error allows, then bisect (geometrically).
    let (mut lo, mut hi): (Option<(f32, Outcome)>, Option<f32>) = (None, None);
    let mut m = 1.0f32;
    for _ in 0..8 {
        let (out, max) = attempt(m)?;
        if max <= target {
            lo = Some((m, out));
            m *= 4.0;
        } else {
            hi = Some(m);
            break;
        }
    }
    if lo.is_none() {
        // Even m = 1 is too much (the first-order split is not a bound for large errors).
        m = 0.5;
        while m > 1.0 / 256.0 {
            let (out, max) = attempt(m)?;
            if max <= target {
                lo = Some((m, out));
                break;
            }
            hi = Some(m);
            m *= 0.5;
        }
    }
    let Some((mut lo_m, mut best)) = lo else {
        return Ok(None);
    };
    if let Some(mut hi_m) = hi {
        for _ in 0..5 {
            let mid = (lo_m * hi_m).sqrt();
            let (out, max) = attempt(mid)?;
            if max <= target {
                lo_m = mid;
                best = out;
            } else {
                hi_m = mid;
            }
        }
    }
    // The final word: sixteen points per frame interval (near a capture glitch the error
    // changes fast inside an interval). Where that finds more, back off locally.
    let mut scale = ones.clone();
    for round in 0..12 {
        let dense = measure(&best.clip, true)?;
        if dense.stats.max <= budget {
            // Spend the slack: the multiplier stopped at the worst joint; give every other
            // joint more budget where the measured error allows.
            let loose = loosen(skeleton, reference, &p, shell, target, lo_m, &scale, &best)?;
            let loose_dense = measure(&loose.clip, true)?;
            if loose_dense.stats.max <= budget && loose.clip.size_bytes() < best.clip.size_bytes() {
                let mut out = loose;
                out.dense = loose_dense;
                return Ok(Some(out));
            }
            best.dense = dense;
            return Ok(Some(best));
        }
        // Tighten only the joints on the way from the root to each joint over the budget.
        let mut chain = vec![false; n];
        for j in (0..n).filter(|&j| dense.over[j]) {
            let mut k = Some(j as JointIndex);
            while let Some(i) = k {
                chain[i as usize] = true;
                k = skeleton.parent(i);
            }
        }
        for (s, &o) in scale.iter_mut().zip(&chain) {
            if o {
                *s *= 0.7;
            }
        }
        // After several local rounds, everything a little (where the first-order split
        // misjudged the hierarchy).
        if round >= 8 {
            lo_m *= 0.8;
        }
        best = attempt_scaled(lo_m, &scale)?.0;
    }
    Ok(None)
}

/// Joint by joint, leaves first, twice: half as much budget again for the joint's channels,
/// kept where it saves bits and the clip still measures within `target`.
#[allow(clippy::too_many_arguments)]
fn loosen(
    skeleton: &Skeleton,
    reference: &Clip,
    p: &Prepared,
    shell: f32,
    target: f32,
    m: f32,
    scale: &[f32],
    best: &Outcome,
) -> Result<Outcome, Error> {
    let budget = target / 0.97;
    let n = skeleton.len();
    let mut scale = scale.to_vec();
    let mut plans = best.plans.clone();
    let mut out = None;
    for _ in 0..2 {
        for j in (0..n).rev() {
            let trial = plan_joint(p, j, m * scale[j] * 1.5);
            let old: u64 = plans[j * 3..j * 3 + 3].iter().map(plan_bits).sum();
            let new: u64 = trial.iter().map(plan_bits).sum();
            if new >= old {
                continue;
            }
            let mut candidate = plans.clone();
            candidate.splice(j * 3..j * 3 + 3, trial);
            let o = assemble(reference, skeleton, p, &candidate)?;
            if check(skeleton, p, reference, &o.clip, shell, budget, false)?
                .stats
                .max
                <= target
            {
                scale[j] *= 1.5;
                plans = candidate;
                out = Some(o);
            }
        }
    }
    match out {
        Some(o) => Ok(o),
        None => assemble(reference, skeleton, p, &plans),
    }
}

/// The tightest attempt on the finest grid, whatever its error (reported honestly).
fn compress_fallback(
    skeleton: &Skeleton,
    reference: &Clip,
    grid: Grid,
    budget: f32,
    shell: f32,
) -> Result<Outcome, Error> {
    let p = prepare(skeleton, reference, grid, budget, shell)?;
    let scale = vec![1.0; skeleton.len()];
    let mut out = assemble(reference, skeleton, &p, &plan_all(&p, 1.0 / 256.0, &scale))?;
    out.dense = check(skeleton, &p, reference, &out.clip, shell, budget, true)?;
    Ok(out)
}

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
//! in model space, at every frame and the midpoint of every frame interval, stays within
//! 97% of the budget, and the final clip is measured again at sixteen points per interval
//! (and tightened where that finds more).
//! [`CompressReport::max_error_cm`] is that final measurement.
//!
//! With the `rayon` feature the joints of every attempt are planned, and the times of every
//! measurement composed, on rayon's pool (`par_map`); each piece is computed as it would be
//! alone and the pieces are combined in order, so the result does not depend on the number
//! of threads. The measurement composes model space four times at once (`compose4`).
//!
//! Sizes follow ACL's convention: the raw size is every joint's full transform (10 f32) at
//! every sample of the grid; the compressed size is what the clip stores (descriptors,
//! constants, segment offsets and bits), which is what `.skl` writes for it.
//!
//! Written by hand: no crate compresses skeletal animation; ACL (C++) and ozz-animation
//! (C++) showed the metric and the runtime layout (see the README), none of their code is
//! used.

mod budget;
mod compose4;
pub(crate) mod encode;
mod grid;
pub(crate) mod lanes;
mod metric;
mod morph;
pub(crate) mod seek;
mod units;

use std::borrow::Cow;

pub(crate) use crate::clip::compact::Compact;
pub use crate::clip::compact::{CompactLayout, CompactTrack, MAX_BITS, SEG_LEN};
/// The bit-stream layer, for the parts validation.
pub use grid::MAX_FRAMES;
pub use metric::{measure_error, ErrorHistogram, ErrorStats};
pub use morph::{
    compress_morph_weights, morph_reach, morph_reach_scaled, skinning_scale, MorphReport,
};
pub use units::{choose_cm_per_unit, detect_cm_per_unit, detect_rate, UnitSource};

use budget::*;
use grid::*;

use crate::{Clip, Error, JointIndex, Skeleton};

/// How to compress. Build it with `..Default::default()` for the fields you do not set:
/// fields are added as the compressor gains options.
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
    /// How the keys are laid out: [`CompactLayout::Stream`] (the default, the smallest),
    /// [`CompactLayout::Seek`] (larger; a random seek reads two keys per track directly;
    /// the same keys, so the same error) or [`CompactLayout::Lanes`] (several times larger;
    /// forward playback and seeks at about the keyed clip's speed; its values are rounded to
    /// 16 bits, and the report measures the clip in this layout).
    pub layout: CompactLayout,
    /// How much time to spend for a smaller clip: [`CompressLevel::Smallest`] (the default)
    /// or [`CompressLevel::Fast`]. Both aim for the same bound and report what they measured
    /// the same way ([`CompressReport::max_error_cm`]).
    pub level: CompressLevel,
}

/// How much time [`compress`] spends for a smaller clip. Both levels keep
/// [`CompressOptions::error_cm`] wherever the budget can be met, as measured at every frame
/// and fifteen points between ([`CompressReport::max_error_cm`]); they differ in how much of
/// the remaining slack they spend.
///
/// ```
/// use skelett::compress::{CompressLevel, CompressOptions};
/// let fast = CompressOptions { level: CompressLevel::Fast, ..Default::default() };
/// assert_eq!(CompressOptions::default().level, CompressLevel::Smallest);
/// # let _ = fast;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompressLevel {
    /// The multiplier search, then joint by joint, leaves first, more budget for every joint
    /// whose clip still measures within it at the check times (the loosening), then the
    /// tightening where the dense measurement needs it. Over the 62 clips of the data-set
    /// test: 17.19:1.
    #[default]
    Smallest,
    /// The multiplier search and the tightening, without the loosening: three fifths to
    /// three quarters of the time on the CMU clips measured (one thread: 01_01 117 against
    /// 194-197 ms, 01_03 300-302 against 392-393, Boxing_Toes 148 against 224-228), 7%
    /// larger over the 62 clips of the data-set test (15.99:1 against 17.19:1).
    Fast,
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self {
            error_cm: 0.01,
            shell_cm: 3.0,
            cm_per_unit: None,
            declared_cm_per_unit: None,
            sample_rate: None,
            layout: CompactLayout::Stream,
            level: CompressLevel::Smallest,
        }
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
    /// Joints x source samples x 10 f32 (ACL's raw size), plus morph channels x source
    /// samples x 1 f32 for a skeleton with morph channels.
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
    // Whether the grid met the budget (else the finest attempt, reported as it measures).
    let attempt = |budget: f32| -> Result<(Grid, budget::Outcome, bool), Error> {
        let mut last = source;
        for k in 0..4 {
            let grid = match grid_at(rate * (1 << k) as f32) {
                Ok(g) => g,
                Err(e) if k == 0 => return Err(e),
                Err(_) => break,
            };
            last = grid;
            if let Some(r) = compress_on(
                skeleton,
                &reference,
                grid,
                budget,
                budget,
                shell,
                options.level,
                options.layout,
            )? {
                return Ok((grid, r, true));
            }
        }
        // Keep the finest attempt: the report says how far it is off.
        let out = compress_fallback(skeleton, &reference, last, budget, shell, options.layout)?;
        Ok((last, out, false))
    };
    let (grid, mut out, met) = attempt(budget)?;
    // The lanes layout rounds the streamed clip's values: where that takes a clip that met
    // the budget over it, the streamed clip is made again on the same grid within 0.85,
    // 0.72, 0.61, ... 0.32 times the budget, keeping the attempt that measures best, until
    // one is within (the rounding has a floor: far below 0.01 cm no budget may get there).
    // The rounding's share does not shrink with the streamed clip's, and it varies from
    // one set of keys to the next: huesitos.fbx (a 4 m reach under an armature scaled by
    // 100) measured 0.01069 to 0.01094 cm down to 0.61 and came within (0.00992) at 0.52.
    let mut shrink = 1.0;
    while met && options.layout == CompactLayout::Lanes && out.dense.stats.max > budget {
        shrink *= 0.85;
        if shrink < 0.3 {
            break;
        }
        let tighter = budget * shrink;
        // Measured in the run's bins (the user's budget), so that every clip's histogram
        // adds up with the others'.
        let Some(o) = compress_on(
            skeleton,
            &reference,
            grid,
            tighter,
            budget,
            shell,
            options.level,
            options.layout,
        )?
        else {
            break;
        };
        if o.dense.stats.max < out.dense.stats.max {
            out = o;
        }
    }
    let mut compact = out.clip;
    compact.events = clip.events.clone();
    let report = CompressReport {
        source_rate: source.rate,
        sample_rate: grid.rate,
        samples: source.frames as usize,
        resampled: options.sample_rate.is_some(),
        cm_per_unit,
        units,
        raw_bytes: (skeleton.len() * 40 + skeleton.morph_channel_count() * 4)
            * source.frames as usize,
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

/// `f` over `items`, in order: on rayon's pool with feature `rayon` (the searches plan every
/// joint's channels and measure hundreds of times independently), else one after another.
/// Results do not depend on the split.
pub(super) fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        items.par_iter().map(f).collect()
    }
    #[cfg(not(feature = "rayon"))]
    {
        items.iter().map(f).collect()
    }
}

/// [`par_map`] over items it may change (each task its own item).
pub(super) fn par_map_mut<T: Send, R: Send>(
    items: &mut [T],
    f: impl Fn(&mut T) -> R + Sync + Send,
) -> Vec<R> {
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        items.par_iter_mut().map(f).collect()
    }
    #[cfg(not(feature = "rayon"))]
    {
        items.iter_mut().map(f).collect()
    }
}

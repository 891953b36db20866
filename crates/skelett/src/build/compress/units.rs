//! The units and rates compression works in: centimetres per unit (declared, or guessed from
//! the skeleton's height, as the error budget is in centimetres) and the clip's key rate (the
//! grid it is compressed on).

use glam::{Mat4, Vec3};

use crate::clip::Storage;
use crate::{local_to_model, Clip, Skeleton};

/// Where the unit came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnitSource {
    /// The caller said ([`CompressOptions::cm_per_unit`](super::CompressOptions::cm_per_unit)).
    Given,
    /// The source's declared unit
    /// ([`CompressOptions::declared_cm_per_unit`](super::CompressOptions::declared_cm_per_unit)).
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
    let keys = match &clip.storage {
        Storage::Compact(c) => return c.rate,
        Storage::Keyed(keys) => keys,
    };
    let mut times: Vec<f64> = keys
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

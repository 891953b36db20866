//! Nlerp against slerp on every keyed clip of `../shared/data` (glTF, FBX, BVH, .x): each
//! joint's gap between the two, sampled at 60 Hz and between frames, stays within the exact
//! error of nlerp for the widest key pair of its rotation channel (the table on
//! `RotationInterpolation`), and keys are hit alike. Prints the data set's largest gap
//! (`cargo test -p skelett-io --test nlerp_data -- --nocapture`).

mod common;

use skelett::{
    sample, ChannelValues, Interpolation, Pose, RotationInterpolation, SamplingCache, Target,
};

/// The largest angle (radians) between nlerp and slerp over a key pair whose rotations are
/// `alpha` radians apart, in f64: `max over u of |2 atan2(u sin Ω, 1 - u + u cos Ω) - u α|`
/// with Ω = α / 2 (found on a fine grid, then refined).
fn nlerp_error(alpha: f64) -> f64 {
    let half = alpha / 2.0;
    let gap = |u: f64| (2.0 * (u * half.sin()).atan2(1.0 - u + u * half.cos()) - u * alpha).abs();
    (0..=2000)
        .map(|i| gap(i as f64 / 2000.0))
        .fold(0.0, f64::max)
}

/// The rotation angle between two quaternions, in f64 and by atan2 (an f32 `acos` of the dot
/// is only good to about 5e-4 rad for near-equal rotations).
fn angle(a: glam::Quat, b: glam::Quat) -> f64 {
    let d = a.as_dquat() * b.as_dquat().conjugate();
    2.0 * d.xyz().length().atan2(d.w.abs())
}

#[test]
fn nlerp_stays_within_its_error_bound_on_every_clip() {
    let mut worst = (0.0f64, String::new());
    let mut checked = 0usize;
    // Joint samples in all, and those more than 0.01 degree from slerp.
    let (mut samples, mut over) = (0usize, 0usize);
    for file in common::animation_files() {
        let asset = skelett_io::load(&file).unwrap_or_else(|e| panic!("{e}"));
        for clip in &asset.clips {
            if clip.is_compact() {
                continue;
            }
            // Per joint: the widest key pair of its LINEAR rotation channel.
            let mut widest = vec![None::<f64>; asset.skeleton.len()];
            for i in 0..clip.track_count() {
                let ch = clip.channel(i).unwrap();
                if ch.target != Target::Rotation || ch.interpolation != Interpolation::Linear {
                    continue;
                }
                let ChannelValues::Quat(q) = ch.values else {
                    panic!("rotation channel without quaternions")
                };
                let a = q
                    .windows(2)
                    .map(|w| w[0].angle_between(w[1]) as f64)
                    .fold(0.0, f64::max);
                widest[ch.joint as usize] = Some(a);
            }
            let mut nl = SamplingCache::for_clip(clip)
                .with_rotation_interpolation(RotationInterpolation::Nlerp);
            let mut sl = SamplingCache::for_clip(clip);
            let mut a = Pose::rest(&asset.skeleton);
            let mut b = Pose::rest(&asset.skeleton);
            let steps = ((clip.duration() * 60.0).ceil() as usize).max(1) * 3;
            for s in 0..=steps {
                let t = clip.start() + clip.duration() * s as f32 / steps as f32;
                sample(clip, t, &mut nl, &mut a).unwrap();
                sample(clip, t, &mut sl, &mut b).unwrap();
                for (j, w) in widest.iter().enumerate() {
                    let gap = angle(a[j].rotation, b[j].rotation);
                    let Some(alpha) = w else {
                        // No LINEAR rotation channel: both paths write the same.
                        assert_eq!(a[j].rotation, b[j].rotation);
                        continue;
                    };
                    // Slack for f32 keys and slerp's sine polynomial (about 1e-6 relative).
                    let bound = nlerp_error(*alpha) + 2e-5;
                    assert!(
                        gap <= bound,
                        "{} {:?} joint {j} at {t}: nlerp {gap} rad from slerp, bound {bound}",
                        file.display(),
                        clip.name()
                    );
                    samples += 1;
                    over += usize::from(gap > 0.01f64.to_radians());
                    if gap > worst.0 {
                        worst = (
                            gap,
                            format!(
                                "{} {:?} joint {j}, widest key pair {:.1} degrees",
                                file.file_name().unwrap().to_string_lossy(),
                                clip.name(),
                                alpha.to_degrees()
                            ),
                        );
                    }
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 30, "only {checked} keyed clips");
    println!(
        "{checked} clips, {samples} joint samples: nlerp's largest gap to slerp {:.4} degrees \
         ({}); {over} samples ({:.3} %) more than 0.01 degree apart",
        worst.0.to_degrees(),
        worst.1,
        100.0 * over as f64 / samples as f64
    );
}

//! Structure-of-arrays poses against the slice path on the real assets of `../shared/data`:
//! `sample_soa` gives `sample`'s bits (keyed clips through their lanes, compact clips of both
//! layouts through the fallback, slerp and nlerp, forward, backward and random times, NaN and
//! infinities), `blend_soa` gives `blend`'s bits on sampled poses, and
//! `local_to_model_soa` gives `local_to_model`'s bits.

use glam::Mat4;
use skelett::compress::{compress, CompactLayout, CompressOptions};
use skelett::*;
use skelett_testdata::data;

/// The times a player asks for: 60 Hz forward over two loops, backward, random jumps and
/// values that are not times.
fn times(clip: &Clip) -> Vec<f32> {
    let (s, d) = (clip.start(), clip.duration().max(1e-3));
    let mut t: Vec<f32> = (0..(d * 120.0) as usize + 2)
        .map(|i| s + (i as f32 / 60.0) % d)
        .collect();
    t.extend((0..40).rev().map(|i| s + d * i as f32 / 40.0));
    let mut x = 0x9e37_79b9u32;
    t.extend((0..60).map(|_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        s - 0.5 + (x % 10_000) as f32 / 10_000.0 * (d + 1.0)
    }));
    t.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, s, s + d]);
    t
}

/// Every sample of `clip` through `sample_soa` equals `sample`'s, bit for bit, with both
/// rotation interpolations and fresh caches on each side.
fn same_samples(skeleton: &Skeleton, clip: &Clip, what: &str) {
    for rotation in [RotationInterpolation::Slerp, RotationInterpolation::Nlerp] {
        let mut slice_cache = SamplingCache::for_clip(clip).with_rotation_interpolation(rotation);
        let mut soa_cache = SamplingCache::for_clip(clip).with_rotation_interpolation(rotation);
        let mut pose = Pose::rest(skeleton);
        let mut soa = SoaPose::identity(skeleton.len());
        for t in times(clip) {
            sample(clip, t, &mut slice_cache, &mut pose).unwrap();
            sample_soa(clip, t, &mut soa_cache, &mut soa).unwrap();
            for (j, want) in pose.iter().enumerate() {
                let got = soa.get(j);
                // Bits, NaN payloads aside (none is expected: a NaN fails the test).
                assert_eq!(
                    (
                        got.rotation.to_array().map(f32::to_bits),
                        got.translation.to_array().map(f32::to_bits),
                        got.scale.to_array().map(f32::to_bits)
                    ),
                    (
                        want.rotation.to_array().map(f32::to_bits),
                        want.translation.to_array().map(f32::to_bits),
                        want.scale.to_array().map(f32::to_bits)
                    ),
                    "{what}, {rotation:?}, t={t}, joint {j}: {got:?} against {want:?}"
                );
            }
        }
    }
}

#[test]
fn soa_samples_are_the_slice_samples() {
    for file in [
        "gltf/robot_quaternius.glb",
        "gltf/Fox.glb",
        "gltf/CesiumMan.glb",
        "bvh/01_01.bvh",
    ] {
        let asset = skelett_io::load(data(file)).expect("shared data beside the repository");
        let skeleton = &asset.skeleton;
        for clip in &asset.clips {
            same_samples(skeleton, clip, &format!("{file} {}", clip.name()));
        }
    }
}

#[test]
fn soa_samples_of_compact_clips_are_the_slice_samples() {
    let asset = skelett_io::load(data("gltf/Fox.glb")).expect("shared data");
    for layout in [CompactLayout::Stream, CompactLayout::Seek] {
        let opts = CompressOptions {
            layout,
            ..Default::default()
        };
        let (c, _) = compress(&asset.skeleton, &asset.clips[0], &opts).unwrap();
        same_samples(&asset.skeleton, &c, &format!("compact {layout:?}"));
    }
}

#[test]
fn short_soa_poses_are_errors() {
    let asset = skelett_io::load(data("gltf/Fox.glb")).expect("shared data");
    let clip = &asset.clips[0];
    let mut cache = SamplingCache::for_clip(clip);
    let mut short = SoaPose::identity(asset.skeleton.len() - 1);
    let e = sample_soa(clip, 0.0, &mut cache, &mut short);
    assert!(matches!(e, Err(Error::Length { .. })), "{e:?}");
    assert_eq!(short, SoaPose::identity(asset.skeleton.len() - 1));
}

/// Sampled poses of real clips blend to the same bits both ways (the property test in
/// `pose/soa.rs` covers random poses and weights).
#[test]
fn soa_blends_of_samples_are_the_slice_blends() {
    for file in [
        "gltf/robot_quaternius.glb",
        "gltf/Fox.glb",
        "gltf/CesiumMan.glb",
    ] {
        let asset = skelett_io::load(data(file)).expect("shared data");
        let sk = &asset.skeleton;
        let clip = &asset.clips[0];
        let poses: Vec<Pose> = [0.1f32, 0.45, 0.8]
            .iter()
            .map(|f| {
                let mut p = Pose::rest(sk);
                sample_uncached(clip, clip.start() + clip.duration() * f, &mut p).unwrap();
                p
            })
            .collect();
        let soa: Vec<SoaPose> = poses.iter().map(|p| SoaPose::from_transforms(p)).collect();
        for weights in [[1.0f32, 1.0, 0.0], [0.3, 0.5, 0.2], [2.0, 0.0, 7.0]] {
            let slices: Vec<BlendInput> = poses
                .iter()
                .zip(weights)
                .map(|(p, weight)| BlendInput {
                    pose: p,
                    weight,
                    mask: None,
                })
                .collect();
            let mut want = Pose::rest(sk);
            blend(&slices, sk.rest_pose(), &mut want).unwrap();
            let inputs: Vec<SoaBlendInput> = soa
                .iter()
                .zip(weights)
                .map(|(p, weight)| SoaBlendInput { pose: p, weight })
                .collect();
            let mut out = SoaPose::identity(sk.len());
            blend_soa(&inputs, &SoaPose::rest(sk), &mut out).unwrap();
            let mut got = Pose::rest(sk);
            out.write_to(&mut got).unwrap();
            assert_eq!(got, want, "{file} {weights:?}");
        }
    }
}

/// Model matrices from a structure-of-arrays pose are those from the same pose as a slice.
#[test]
fn soa_model_matrices_are_the_slice_ones() {
    for file in [
        "gltf/robot_quaternius.glb",
        "gltf/Fox.glb",
        "gltf/CesiumMan.glb",
    ] {
        let asset = skelett_io::load(data(file)).expect("shared data");
        let sk = &asset.skeleton;
        for clip in &asset.clips {
            let mut pose = Pose::rest(sk);
            sample_uncached(clip, clip.start() + 0.37 * clip.duration(), &mut pose).unwrap();
            let soa = SoaPose::from_transforms(&pose);
            for from in [0, sk.len() as JointIndex / 2] {
                let mut want = vec![Mat4::IDENTITY; sk.len()];
                let mut got = vec![Mat4::IDENTITY; sk.len()];
                local_to_model(sk, &pose, from, &mut want).unwrap();
                local_to_model_soa(sk, &soa, from, &mut got).unwrap();
                assert_eq!(got, want, "{file} {} from {from}", clip.name());
            }
        }
    }
}

/// Skeletons of 1 to 20 joints (fewer than a block, a block and a part, several), parents
/// anywhere before their children, poses longer than the skeleton, and every `from`: the
/// same matrices both ways.
#[test]
fn soa_model_matrices_of_small_skeletons_are_the_slice_ones() {
    use glam::{Quat, Vec3};
    let mut x = 0x2545_f491u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for n in 1..=20usize {
        let joints: Vec<RawJoint> = (0..n)
            .map(|j| RawJoint {
                name: format!("j{j}"),
                parent: (j > 0 && next() % 5 != 0).then(|| next() as usize % j),
                rest: Transform::IDENTITY,
            })
            .collect();
        let sk = RawSkeleton {
            joints,
            ..Default::default()
        }
        .build()
        .unwrap();
        let mut f = || (next() % 2000) as f32 / 1000.0 - 1.0;
        let pose: Vec<Transform> = (0..n + 3)
            .map(|_| {
                let q = Quat::from_xyzw(f(), f(), f(), f() + 2.0).normalize();
                Transform::new(
                    Vec3::new(f(), f(), f()),
                    q,
                    Vec3::new(f() + 2.0, 1.5, f() + 2.0),
                )
            })
            .collect();
        let soa = SoaPose::from_transforms(&pose);
        for from in 0..n as JointIndex {
            let mut want = vec![Mat4::IDENTITY; n];
            let mut got = vec![Mat4::IDENTITY; n];
            local_to_model(&sk, &pose, 0, &mut want).unwrap();
            local_to_model(&sk, &pose, from, &mut want).unwrap();
            local_to_model_soa(&sk, &soa, 0, &mut got).unwrap();
            local_to_model_soa(&sk, &soa, from, &mut got).unwrap();
            assert_eq!(got, want, "{n} joints from {from}");
        }
        let short = SoaPose::from_transforms(&pose[..n - 1]);
        let mut model = vec![Mat4::IDENTITY; n];
        assert!(local_to_model_soa(&sk, &short, 0, &mut model).is_err());
        assert!(
            model.iter().all(|m| *m == Mat4::IDENTITY),
            "nothing written"
        );
    }
}

/// A pose longer than the clip's skeleton: the clip's joints are sampled, the rest kept.
#[test]
fn longer_soa_poses_keep_their_extra_joints() {
    let asset = skelett_io::load(data("gltf/Fox.glb")).expect("shared data");
    let clip = &asset.clips[0];
    let n = asset.skeleton.len();
    let marker = Transform::new(
        glam::Vec3::splat(7.0),
        glam::Quat::IDENTITY,
        glam::Vec3::ONE,
    );
    let mut long = vec![marker; n + 9];
    let mut soa = SoaPose::from_transforms(&long);
    let mut cache = SamplingCache::for_clip(clip);
    sample_soa(clip, clip.start() + 0.2, &mut cache, &mut soa).unwrap();
    sample(
        clip,
        clip.start() + 0.2,
        &mut SamplingCache::for_clip(clip),
        &mut long,
    )
    .unwrap();
    let mut got = vec![Transform::IDENTITY; n + 9];
    soa.write_to(&mut got).unwrap();
    assert_eq!(got, long);
    assert!(got[n..].iter().all(|t| *t == marker));
}

/// A pose sampled again from the clip it last took keeps that clip's static joints instead of
/// writing them again: one pose sampled from every clip in turn, and written between samples
/// through each way a user can write it, always equals a fresh pose's sample.
#[test]
fn reused_soa_poses_are_fresh_samples() {
    for file in [
        "gltf/robot_quaternius.glb",
        "gltf/CesiumMan.glb",
        "gltf/Fox.glb",
    ] {
        let asset = skelett_io::load(data(file)).expect("shared data");
        let sk = &asset.skeleton;
        let mut reused = SoaPose::identity(sk.len());
        let junk = vec![
            Transform::new(
                glam::Vec3::splat(7.0),
                glam::Quat::IDENTITY,
                glam::Vec3::ONE
            );
            sk.len()
        ];
        let mut step = 0;
        for round in 0..3 {
            for clip in asset.clips.iter().chain(asset.clips.iter().rev()) {
                for f in [0.1f32, 0.6] {
                    step += 1;
                    match step % 5 {
                        1 => reused.copy_from(&junk).unwrap(),
                        2 => reused.set(sk.len() - 1, &junk[0]),
                        3 => reused.blocks_mut()[0] = SoaBlock::IDENTITY,
                        _ => {}
                    }
                    let t = clip.start() + clip.duration() * f;
                    let mut cache = SamplingCache::for_clip(clip);
                    sample_soa(clip, t, &mut cache, &mut reused).unwrap();
                    let mut fresh = SoaPose::identity(sk.len());
                    sample_soa(clip, t, &mut SamplingCache::for_clip(clip), &mut fresh).unwrap();
                    assert_eq!(
                        reused,
                        fresh,
                        "{file} {} round {round} step {step}",
                        clip.name()
                    );
                }
            }
        }
    }
}

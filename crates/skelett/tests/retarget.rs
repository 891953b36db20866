//! Retargeting: identity, renamed copies, a synthetic T-pose/A-pose pair with closed-form
//! answers, binding by name, bad maps, and real captures (CMU BVH) onto real characters
//! (glTF and FBX) measured by the angle between corresponding limb directions.

use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec3, Vec4};
use skelett::retarget::{BakeOptions, JointMap, Options, Retargeter};
use skelett::*;

fn load(rel: &str) -> skelett_io::Asset {
    skelett_io::load(skelett_testdata::data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Scene-space joint positions of `pose`.
fn world(sk: &Skeleton, pose: &[Transform]) -> Vec<Vec3> {
    let mut m = vec![Mat4::IDENTITY; sk.len()];
    local_to_model(sk, pose, 0, &mut m).unwrap();
    m.iter()
        .map(|m| sk.root_transform().transform_point3(m.w_axis.truncate()))
        .collect()
}

fn sample_at(clip: &Clip, sk: &Skeleton, t: f32) -> Vec<Transform> {
    let mut pose = Pose::rest(sk);
    sample(clip, t, &mut SamplingCache::for_clip(clip), &mut pose).unwrap();
    pose.0
}

fn times(clip: &Clip, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| clip.start() + clip.duration() * i as f32 / (n - 1) as f32)
        .collect()
}

#[test]
fn identity_reproduces_the_clip() {
    for (file, clip_name) in [
        ("bvh/01_01.bvh", "01_01"),
        ("gltf/robot_quaternius.glb", "Robot_Walking"),
        ("gltf/Fox.glb", "Run"),
    ] {
        let a = load(file);
        let clip = a.clip(clip_name).unwrap();
        let sk = &a.skeleton;
        let map = JointMap::auto(sk, sk).unwrap();
        assert_eq!(
            map.pairs.len(),
            sk.len(),
            "{file}: every joint maps onto itself"
        );
        for p in &map.pairs {
            assert_eq!(p.source, p.target, "{file}");
        }
        let r = Retargeter::new(sk, sk, &map, &Options::default()).unwrap();
        assert!((r.root_scale() - 1.0).abs() < 1e-6);
        let baked = r.bake(clip, sk, sk, &BakeOptions::default()).unwrap();
        assert!(baked.fits(sk));
        let mut scratch = r.scratch();
        let mut out = sk.rest_pose().to_vec();
        for t in times(clip, 37) {
            let src = sample_at(clip, sk, t);
            r.retarget(&src, &mut out, &mut scratch).unwrap();
            let via_bake = sample_at(&baked, sk, t);
            let (w0, w1, w2) = (world(sk, &src), world(sk, &out), world(sk, &via_bake));
            let size = 1.0 + w0.iter().map(|p| p.length()).fold(0.0, f32::max);
            for j in 0..sk.len() {
                assert!(
                    (w0[j] - w1[j]).length() < 1e-5 * size,
                    "{file} t={t} joint {}: {} vs {}",
                    sk.name(j as u16),
                    w0[j],
                    w1[j]
                );
                assert!(
                    (w0[j] - w2[j]).length() < 1e-4 * size,
                    "{file} baked t={t} joint {}",
                    sk.name(j as u16)
                );
                let (a, b) = (Vec4::from(out[j].rotation), Vec4::from(src[j].rotation));
                let d = (a - b).length().min((a + b).length());
                assert!(
                    d < 1e-5,
                    "{file} t={t} joint {}: rotation off by {d}",
                    sk.name(j as u16)
                );
            }
        }
    }
}

//! BVH golden tests against three.js's BVHLoader (`../shared/data/reference/*.bvh.json`):
//! every joint's world matrix, End Sites included, at every listed time, within 1e-4
//! relative (positions relative to the skeleton's size, as in `gltf_golden.rs`). The
//! reference lists joints in file order, End Sites named ENDSITE; skelett keeps file order
//! and names them `<parent>_End`.

mod common;

use glam::Mat4;
use skelett::{local_to_model, sample, JointIndex, Pose, SamplingCache};

fn check(file: &str) {
    let asset =
        skelett_io::load(common::data(&format!("bvh/{file}"))).unwrap_or_else(|e| panic!("{e}"));
    let r = common::reference(file);
    let rc = &r["clips"][0];
    let clip = &asset.clips[0];
    assert!(
        (clip.end() - rc["end"].as_f64().unwrap() as f32).abs() < 1e-3,
        "{file}: end {}",
        clip.end()
    );
    let joints_of_first = rc["samples"][0]["joints"].as_array().unwrap();
    assert_eq!(
        joints_of_first.len(),
        asset.skeleton.len(),
        "{file}: joint count"
    );
    for (k, j) in joints_of_first.iter().enumerate() {
        let name = j["name"].as_str().unwrap();
        let ours = asset.skeleton.name(k as JointIndex);
        if name == "ENDSITE" {
            assert!(
                ours.ends_with(skelett_io::bvh::END_SITE_SUFFIX),
                "{file}: joint {k} {ours}"
            );
        } else {
            assert_eq!(ours, name, "{file}: joint {k}");
        }
    }
    let all: Vec<JointIndex> = (0..asset.skeleton.len() as JointIndex).collect();
    let mut pose = Pose::rest(&asset.skeleton);
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    let mut cache = SamplingCache::for_clip(clip);
    let mut worst = 0.0f32;
    for s in rc["samples"].as_array().unwrap() {
        let t = s["t"].as_f64().unwrap() as f32;
        // Past the end the reference holds the last frame, as skelett does.
        sample(clip, t, &mut cache, &mut pose).unwrap();
        local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
        match common::compare_world(&asset, &model, s["joints"].as_array().unwrap(), &all, 1e-4) {
            Ok(e) => worst = worst.max(e),
            Err(m) => panic!("{file} t={t}: {m}"),
        }
    }
    eprintln!("{file}: worst relative error {worst:e}");
}

#[test]
fn cmu_01_01() {
    check("01_01.bvh");
}

#[test]
fn cmu_01_03() {
    check("01_03.bvh");
}

#[test]
fn boxing_toes() {
    check("Boxing_Toes.bvh");
}

//! FBX import against Blender's importer (`../shared/data/reference/*.fbx.json`): joint world
//! positions by bone name, in the file's own units and axes, at absolute FBX times, for every
//! clip of every file in `../shared/data/fbx`. Tolerance: 1e-5 of the skeleton's size (the
//! largest distance between two reference joints at the first sample).

mod common;

use glam::{Mat4, Vec3};
use skelett::{local_to_model, sample_uncached, Pose};

fn check(file: &str) -> f32 {
    let asset = skelett_io::load(common::data(&format!("fbx/{file}")))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    let r = common::reference(file);
    let sk = &asset.skeleton;
    let clips = r["clips"].as_array().unwrap();
    assert_eq!(
        asset.clips.len(),
        clips.len(),
        "{file}: one clip per animation stack"
    );
    let mut pose = Pose::rest(sk);
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let root = sk.root_transform();
    let mut worst = 0.0f32;
    for c in clips {
        let clip = &asset.clips[c["index"].as_u64().unwrap() as usize];
        assert_eq!(
            clip.name(),
            c["name"].as_str().unwrap(),
            "{file}: clip order"
        );
        let samples = c["samples"].as_array().unwrap();
        let pos = |j: &serde_json::Value| {
            let w = j["world"].as_array().unwrap();
            Vec3::new(
                w[12].as_f64().unwrap() as f32,
                w[13].as_f64().unwrap() as f32,
                w[14].as_f64().unwrap() as f32,
            )
        };
        let first: Vec<Vec3> = samples[0]["joints"]
            .as_array()
            .unwrap()
            .iter()
            .map(pos)
            .collect();
        let size = first
            .iter()
            .flat_map(|a| first.iter().map(move |b| (*a - *b).length()))
            .fold(1e-6, f32::max);
        for s in samples {
            let t = s["t"].as_f64().unwrap() as f32;
            sample_uncached(clip, t, &mut pose).unwrap();
            local_to_model(sk, &pose, 0, &mut model).unwrap();
            for j in s["joints"].as_array().unwrap() {
                let name = j["name"].as_str().unwrap();
                let ji = sk
                    .find(name)
                    .unwrap_or_else(|| panic!("{file}: no joint {name:?}"));
                let got = root.transform_point3(model[ji as usize].w_axis.truncate());
                let want = pos(j);
                let err = (got - want).length() / size;
                worst = worst.max(err);
                assert!(
                    err < 1e-5,
                    "{file} clip {} t={t} {name}: got {got}, Blender {want} ({err:e} of size {size})",
                    clip.name()
                );
            }
        }
    }
    eprintln!("{file}: worst {worst:e} of the skeleton's size");
    worst
}

macro_rules! golden {
    ($($test:ident => $file:expr),* $(,)?) => {$(
        #[test]
        fn $test() {
            check($file);
        }
    )*};
}

golden! {
    animation_with_skeleton => "animation_with_skeleton.fbx",
    blender_279_sausage => "blender_279_sausage_7400_binary.fbx",
    blender_293_barbarian => "blender_293_barbarian_7400_binary.fbx",
    huesitos => "huesitos.fbx",
    maya_sausage_ascii => "maya_game_sausage_7500_ascii_wiggle.fbx",
    maya_sausage_binary => "maya_game_sausage_7500_binary_wiggle.fbx",
    ozz_pab_locomotions => "ozz_pab_locomotions.fbx",
    ozz_pab_skeleton => "ozz_pab_skeleton.fbx",
    ozz_robot => "ozz_robot.fbx",
}

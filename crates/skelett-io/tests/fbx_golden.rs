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

/// Segment scale compensation with a scale that is not 1: ufbx adds scale helper nodes, the
/// skin binds to them, and they must carry the file's joint names (not `""` or `#7`).
///
/// The file is made here from Maya's `maya_game_sausage_7500_ascii_wiggle.fbx` (joint2..4
/// use `InheritType` 2, Maya's segment scale compensation) by giving joint1's and joint2's
/// X scale curves a ramp from 1 to 1.95 instead of a constant 1; that is what Maya's
/// `_deform` variants of the same file do, and it makes ufbx add helpers. The oracle for the
/// matrices is ufbx's own scene evaluation (Blender ignores `InheritType`); the property that
/// the compensated joints carry no inherited scale or shear is checked on its own.
#[test]
fn maya_segment_scale_compensation_keeps_joint_names() {
    let file = "maya_game_sausage_7500_ascii_wiggle.fbx";
    let text = std::fs::read_to_string(common::data(&format!("fbx/{file}"))).unwrap();
    let ones = "a: 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1\n";
    let ramp: Vec<String> = (0..20)
        .map(|i| format!("{}", 1.0 + 0.05 * i as f64))
        .collect();
    let ramp = format!("a: {}\n", ramp.join(","));
    let mut patched = text.clone();
    // The X scale curves of joint1 and joint2 (connected to their `AnimCurveNode::S`).
    for curve in [
        "AnimationCurve: 2516914041904,",
        "AnimationCurve: 2516914034224,",
    ] {
        let at = patched
            .find(curve)
            .unwrap_or_else(|| panic!("{file}: no {curve} (the shared file changed?)"));
        let values = at + patched[at..].find("KeyValueFloat").unwrap();
        let ones_at = values + patched[values..].find(ones).unwrap();
        patched.replace_range(ones_at..ones_at + ones.len(), &ramp);
    }
    assert_ne!(patched, text);
    let bytes = patched.as_bytes();
    let asset = skelett_io::fbx::load_bytes(
        bytes,
        std::path::Path::new("ssc.fbx"),
        skelett_io::fbx::Options::default(),
    )
    .unwrap();
    let sk = &asset.skeleton;
    assert!(
        asset.warnings.iter().all(|w| !w.contains("used twice")),
        "{:?}",
        asset.warnings
    );
    // Helpers were made (otherwise this test would check nothing new).
    for helper in ["joint1<unscaled>", "joint2<unscaled>"] {
        assert!(
            sk.find(helper).is_some(),
            "no {helper}: {:?}",
            (0..sk.len() as u16).map(|j| sk.name(j)).collect::<Vec<_>>()
        );
    }
    let mut skin_names: Vec<&str> = asset.skin_joints(0).iter().map(|&j| sk.name(j)).collect();
    skin_names.sort_unstable();
    // The three cluster bones, and the mesh's own node (for vertices without weights).
    assert_eq!(skin_names, ["joint1", "joint2", "joint3", "pCube1"]);

    // World matrices against ufbx's evaluation of the file's nodes (the helper's, where the
    // node has one: it is the node with its scale).
    let scene = ufbx::load_memory(bytes, ufbx::LoadOpts::default()).unwrap();
    let stack = &scene.anim_stacks[0];
    let clip = asset.clip(&stack.element.name).unwrap();
    let mut pose = Pose::rest(sk);
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let root = sk.root_transform();
    let mut worst = 0.0f64;
    // At the file's frames (keys every 1/24 s from frame 1 to 20): between them the cubic
    // curves are resampled (see the `fbx` module docs), which this test is not about.
    for k in 0..20 {
        let t = (k + 1) as f32 / 24.0;
        sample_uncached(clip, t, &mut pose).unwrap();
        local_to_model(sk, &pose, 0, &mut model).unwrap();
        let eval =
            ufbx::evaluate_scene(&scene, &stack.anim, f64::from(t), Default::default()).unwrap();
        for name in ["joint1", "joint2", "joint3", "joint4"] {
            let node = eval
                .nodes
                .iter()
                .find(|n| n.element.name.as_ref() == name && !n.is_scale_helper)
                .unwrap();
            let node = node.scale_helper.as_deref().unwrap_or(node);
            let m = &node.node_to_world;
            let want = glam::DMat4::from_cols_array(&[
                m.m00, m.m10, m.m20, 0.0, m.m01, m.m11, m.m21, 0.0, m.m02, m.m12, m.m22, 0.0,
                m.m03, m.m13, m.m23, 1.0,
            ]);
            let j = sk.find(name).unwrap() as usize;
            let got = (root * model[j]).as_dmat4();
            let err = (got - want)
                .to_cols_array()
                .iter()
                .fold(0.0f64, |a, e| a.max(e.abs()));
            worst = worst.max(err);
            assert!(err < 1e-5, "t={t} {name}: skelett {got} ufbx {want}");
        }
        // joint1 is scaled non-uniformly; the compensated joint3 and joint4 have a scale of
        // their own of 1, so their world axes stay orthonormal (no inherited scale or shear).
        assert!(model[sk.find("joint1").unwrap() as usize].x_axis.length() > 1.0 + 1e-3 || k == 0);
        for name in ["joint3", "joint4"] {
            let m = root * model[sk.find(name).unwrap() as usize];
            let (x, y, z) = (
                m.x_axis.truncate(),
                m.y_axis.truncate(),
                m.z_axis.truncate(),
            );
            for (a, b) in [(x, y), (y, z), (z, x)] {
                assert!(a.dot(b).abs() < 1e-5, "t={t} {name}: shear {}", a.dot(b));
            }
            for a in [x, y, z] {
                assert!(
                    (a.length() - 1.0).abs() < 1e-5,
                    "t={t} {name}: scale {}",
                    a.length()
                );
            }
        }
    }
    eprintln!("segment scale compensation: worst matrix element error {worst:e}");
}

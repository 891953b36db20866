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
/// The rig is made by [`common::maya_ssc`]. The oracle for the matrices is ufbx's own
/// evaluation of the file with its default options, which keep the inherit modes as they are
/// (no helper nodes: an evaluation independent of the helpers' construction); Blender
/// ignores `InheritType`. The property that the compensated joints carry no inherited scale
/// or shear is checked on its own.
fn check_ssc(edits: common::SscEdits) -> (skelett_io::Asset, Vec<String>) {
    let text = common::maya_ssc(edits);
    let bytes = text.as_bytes();
    let asset = skelett_io::fbx::from_bytes(bytes, std::path::Path::new("ssc.fbx")).unwrap();
    let sk = &asset.skeleton;
    let names: Vec<String> = (0..sk.len() as u16)
        .map(|j| sk.name(j).to_string())
        .collect();
    assert!(
        asset.warnings.iter().all(|w| !w.contains("used twice")),
        "{:?}",
        asset.warnings
    );
    assert!(
        names
            .iter()
            .all(|n| !n.is_empty() && !n.starts_with('#') && !n.starts_with('<')),
        "{names:?}"
    );
    let joint3 = if edits.rename_joint3_as_derived {
        "joint1<unscaled>"
    } else {
        "joint3"
    };
    let mut skin_names: Vec<&str> = asset.skin_joints(0).iter().map(|&j| sk.name(j)).collect();
    skin_names.sort_unstable();
    // The three cluster bones, and the mesh's own node (for vertices without weights).
    let mut want = vec!["joint1", "joint2", joint3, "pCube1"];
    want.sort_unstable();
    assert_eq!(skin_names, want);

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
        for name in ["joint1", "joint2", joint3, "joint4"] {
            let node = eval
                .nodes
                .iter()
                .find(|n| n.element.name.as_ref() == name)
                .unwrap();
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
        // joint1 is scaled non-uniformly from frame 2 on; the compensated joint3 and joint4
        // have a scale of their own of 1, so their world axes stay orthonormal.
        if k > 0 {
            let x = model[sk.find("joint1").unwrap() as usize].x_axis.length();
            assert!(x > 1.0 + 1e-3, "t={t}: joint1 scale {x}");
        }
        for name in [joint3, "joint4"] {
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
    eprintln!("segment scale compensation: worst matrix element error {worst:e}; {names:?}");
    (asset, names)
}

#[test]
fn maya_segment_scale_compensation_keeps_joint_names() {
    let (_, names) = check_ssc(common::SscEdits::default());
    // Every joint by its name: the file's four joints and mesh node, and the nodes above the
    // two scale helpers.
    let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "joint1",
            "joint1<unscaled>",
            "joint2",
            "joint2<unscaled>",
            "joint3",
            "joint4",
            "pCube1"
        ]
    );
}

/// A file name equal to a derived one keeps it; the derived name moves aside.
#[test]
fn derived_joint_names_never_displace_file_names() {
    let (asset, names) = check_ssc(common::SscEdits {
        rename_joint3_as_derived: true,
        ..Default::default()
    });
    assert!(names.iter().any(|n| n == "joint1<unscaled>#1"), "{names:?}");
    // The file's joint keeps the name: it is the skin's joint and joint2's grandchild.
    let sk = &asset.skeleton;
    let j = sk.find("joint1<unscaled>").unwrap();
    assert!(asset.skin_joints(0).contains(&j));
}

/// Geometric transforms on joints under scale helpers: the geometry helpers are named after
/// the file's joint, not after the (unnamed) scale helper above them.
#[test]
fn geometry_helpers_under_scale_helpers_are_named_after_their_joint() {
    let (_, names) = check_ssc(common::SscEdits {
        geometric_translation: true,
        ..Default::default()
    });
    for n in ["joint1<geometry>", "joint2<geometry>"] {
        assert!(names.iter().any(|x| x == n), "{n}: {names:?}");
    }
}

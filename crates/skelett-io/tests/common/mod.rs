//! Helpers shared by the integration tests: where the shared data lives, and reading the
//! independent reference files.
#![allow(dead_code)]

use std::path::PathBuf;

use glam::Mat4;
use serde_json::Value;
use skelett::JointIndex;
use skelett_io::Asset;

pub use skelett_testdata::{data, data_dir};

pub fn reference(name: &str) -> serde_json::Value {
    let path = data_dir().join("reference").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (is ../shared beside the repository?)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

/// Compares scene-space matrices of the skin's joints with the reference's; returns the
/// largest relative error, or a message naming the first element out of tolerance.
pub fn compare_world(
    asset: &Asset,
    model: &[Mat4],
    joints: &[Value],
    skin_joints: &[JointIndex],
    rel_tol: f32,
) -> Result<f32, String> {
    assert_eq!(joints.len(), skin_joints.len(), "joint count");
    let root = asset.skeleton.root_transform();
    let want: Vec<Vec<f32>> = joints
        .iter()
        .map(|j| {
            j["world"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect();
    let size = want
        .iter()
        .map(|w| (w[12] * w[12] + w[13] * w[13] + w[14] * w[14]).sqrt())
        .fold(1e-6f32, f32::max);
    let mut worst = 0.0f32;
    for (k, (&j, w)) in skin_joints.iter().zip(&want).enumerate() {
        let name = joints[k]["name"].as_str().unwrap_or("");
        if !name.is_empty() && name != "ENDSITE" {
            // Unnamed nodes get generated names; repeated names a `#node` suffix.
            assert_eq!(
                asset.skeleton.name(j).split('#').next().unwrap(),
                name,
                "joint {k}"
            );
        }
        let got = (root * model[j as usize]).to_cols_array();
        for c in 0..4 {
            let scale = if c < 3 {
                let col = &w[c * 4..c * 4 + 3];
                (col[0] * col[0] + col[1] * col[1] + col[2] * col[2])
                    .sqrt()
                    .max(1.0)
            } else {
                size
            };
            for r in 0..4 {
                let i = c * 4 + r;
                let err = (got[i] - w[i]).abs() / scale;
                worst = worst.max(err);
                if err > rel_tol {
                    return Err(format!(
                        "joint {k} ({name}) element {i}: got {} want {} (relative error {err:e})",
                        got[i], w[i]
                    ));
                }
            }
        }
    }
    Ok(worst)
}

/// Every asset of the shared data set that skelett reads (glTF, BVH, FBX, .x), sorted.
/// Every animation file of the shared data that `skelett_io::load` reads, folder by folder
/// (glTF, BVH, .x, FBX), each folder sorted.
pub fn animation_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["gltf", "bvh", "x", "fbx"] {
        let d = data(dir);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| skelett_io::is_known_extension(p))
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

pub fn all_assets() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in ["gltf", "bvh", "fbx", "x"] {
        for e in std::fs::read_dir(data(dir)).unwrap() {
            v.push(e.unwrap().path());
        }
    }
    v.sort();
    v
}

/// What [`maya_ssc`] changes in Maya's `maya_game_sausage_7500_ascii_wiggle.fbx`.
#[derive(Clone, Copy, Default)]
pub struct SscEdits {
    /// joint3 renamed to `joint1<unscaled>`: the name skelett derives for joint1's node.
    pub rename_joint3_as_derived: bool,
    /// joint1 and joint2 get a geometric translation: ufbx adds geometry helpers.
    pub geometric_translation: bool,
}

/// Maya's sausage rig (joint2..4 use `InheritType` 2, Maya's segment scale compensation)
/// with joint1's and joint2's X scale curves ramped from 1 to 1.95 instead of a constant 1,
/// as Maya's `_deform` variants of the same file do: ufbx then adds scale helpers. Made here
/// from the shared file, not copied.
pub fn maya_ssc(edits: SscEdits) -> String {
    let file = "fbx/maya_game_sausage_7500_ascii_wiggle.fbx";
    let text = std::fs::read_to_string(data(file)).unwrap();
    let ones = "a: 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1\n";
    let ramp: Vec<String> = (0..20)
        .map(|i| format!("{}", 1.0 + 0.05 * i as f64))
        .collect();
    let ramp = format!("a: {}\n", ramp.join(","));
    let mut out = text.clone();
    // The X scale curves of joint1 and joint2 (connected to their `AnimCurveNode::S`).
    for curve in [
        "AnimationCurve: 2516914041904,",
        "AnimationCurve: 2516914034224,",
    ] {
        let at = out
            .find(curve)
            .unwrap_or_else(|| panic!("{file}: no {curve} (the shared file changed?)"));
        let values = at + out[at..].find("KeyValueFloat").unwrap();
        let ones_at = values + out[values..].find(ones).unwrap();
        out.replace_range(ones_at..ones_at + ones.len(), &ramp);
    }
    if edits.geometric_translation {
        for joint in [
            "\"Model::joint1\", \"LimbNode\"",
            "\"Model::joint2\", \"LimbNode\"",
        ] {
            let at = out.find(joint).unwrap();
            let props = at + out[at..].find("Properties70:  {\n").unwrap() + 18;
            out.insert_str(
                props,
                "\t\t\tP: \"GeometricTranslation\", \"Vector3D\", \"Vector\", \"\",0.1,0.2,0\n",
            );
        }
    }
    if edits.rename_joint3_as_derived {
        out = out.replace("Model::joint3", "Model::joint1<unscaled>");
    }
    assert_ne!(out, text);
    out
}

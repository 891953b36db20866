//! Helpers shared by the integration tests: where the shared data lives, and reading the
//! independent reference files.
#![allow(dead_code)]

use std::path::PathBuf;

use glam::Mat4;
use serde_json::Value;
use skelett::JointIndex;
use skelett_io::Asset;

/// `../shared/data` beside the repository.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

pub fn data(rel: &str) -> PathBuf {
    data_dir().join(rel)
}

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

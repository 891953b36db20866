//! FBX skinned vertices against Blender's FBX importer and armature modifier
//! (`tests/reference/fbx_skin`, made by `scripts/reference/blender_fbx_skin.py`): for the first
//! skinned mesh of each file, 256 control points spread over it, every clip of the file's joint
//! reference at its times. Blender shares no code with ufbx, so this checks skelett's whole FBX
//! skinning path independently: skin clusters, their bind matrices, weights, the mesh geometry
//! and the CPU skinning on top.
//!
//! skelett keeps one vertex per face corner, Blender one per control point; the two are
//! matched by the control point's coordinates as the file stores them (the reference's
//! `rest`). Where two control points share coordinates (rare), the corner closest to the
//! reference counts.
//!
//! Tolerance: 1e-5 of the mesh's size (the largest distance of a reference vertex from the
//! origin at that time). The Maya ASCII file, which Blender cannot read, is checked against
//! the reference of its binary twin.

mod common;

use std::path::PathBuf;

use glam::{Mat4, Vec3};
use serde_json::Value;
use skelett::skin::{SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, sample_uncached, Pose};

fn reference(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/fbx_skin")
        .join(format!("{name}.skin.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn vec3(v: &Value) -> Vec3 {
    let a = v.as_array().unwrap();
    Vec3::new(
        a[0].as_f64().unwrap() as f32,
        a[1].as_f64().unwrap() as f32,
        a[2].as_f64().unwrap() as f32,
    )
}

/// Checks `file` against the reference `ref_name`; returns the worst relative error.
fn check(file: &str, ref_name: &str) -> f32 {
    let asset = skelett_io::load(common::data(&format!("fbx/{file}"))).unwrap();
    let r = reference(ref_name);
    let names = [
        r["mesh_data"].as_str().unwrap(),
        r["mesh"].as_str().unwrap(),
    ];
    let mesh = asset
        .meshes
        .iter()
        .find(|m| names.contains(&m.name.as_str()))
        .unwrap_or_else(|| {
            let ours: Vec<&str> = asset.meshes.iter().map(|m| m.name.as_str()).collect();
            panic!("{file}: no mesh called {names:?}; skelett has {ours:?}")
        });
    let prim = &mesh.primitives[0];
    let skin = &asset.skins[mesh.skin];
    let cpu_mesh = SkinningMesh::new(prim, skin.len()).unwrap();
    let mut slot = vec![0usize; prim.vertex_count()];
    for (i, &v) in cpu_mesh.source_vertices().iter().enumerate() {
        slot[v as usize] = i;
    }

    // Corners of each reference control point, by its stored coordinates.
    let rest: Vec<Vec3> = r["rest"].as_array().unwrap().iter().map(vec3).collect();
    let rest_size = rest.iter().map(|p| p.length()).fold(1e-6f32, f32::max);
    let corners: Vec<Vec<usize>> = rest
        .iter()
        .map(|p| {
            (0..prim.vertex_count())
                .filter(|&v| (prim.positions[v] - *p).length() <= 2e-6 * rest_size)
                .collect()
        })
        .collect();
    let weighted = r["weighted"].as_array().unwrap();
    for (k, c) in corners.iter().enumerate() {
        // A control point no face uses has no corner; Blender lists it all the same.
        if c.is_empty() {
            assert!(
                !weighted[k].as_bool().unwrap() || prim.vertex_count() < 4,
                "{file}: control point {} at {} matches no skelett vertex",
                r["vertices"][k],
                rest[k]
            );
        }
    }
    let matched = corners.iter().filter(|c| !c.is_empty()).count();
    assert!(
        matched * 10 >= corners.len() * 9,
        "{file}: only {matched} of {} control points matched",
        corners.len()
    );

    let mut pose = Pose::rest(&asset.skeleton);
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    let mut palette = SkinPalette::new(SkinningMethod::Linear);
    let mut skinned = vec![Vec3::ZERO; prim.vertex_count()];
    let root = asset.skeleton.root_transform();
    let mut worst = 0.0f32;
    let mut samples = 0;
    for c in r["clips"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let clip = asset
            .clip(name)
            .unwrap_or_else(|| panic!("{file}: no clip {name:?}"));
        for s in c["samples"].as_array().unwrap() {
            let t = s["t"].as_f64().unwrap() as f32;
            sample_uncached(clip, t, &mut pose).unwrap();
            local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
            palette.update(skin, &model).unwrap();
            skelett::skin::skin(
                &cpu_mesh,
                &palette,
                SkinOutput {
                    positions: &mut skinned,
                    normals: None,
                    tangents: None,
                },
            )
            .unwrap();
            let want: Vec<Vec3> = s["positions"]
                .as_array()
                .unwrap()
                .iter()
                .map(vec3)
                .collect();
            let size = want.iter().map(|p| p.length()).fold(1e-6f32, f32::max);
            for (k, w) in want.iter().enumerate() {
                let Some(err) = corners[k]
                    .iter()
                    .map(|&v| (root.transform_point3(skinned[slot[v]]) - *w).length() / size)
                    .min_by(f32::total_cmp)
                else {
                    continue;
                };
                assert!(
                    err < 1e-5,
                    "{file} clip {name:?} t={t}: control point {} skinned {:e} of the mesh's \
                     size away from Blender's {w}",
                    r["vertices"][k],
                    err
                );
                worst = worst.max(err);
            }
            samples += 1;
        }
    }
    assert!(samples > 0, "{file}: the reference has no samples");
    eprintln!(
        "{file}: {matched} control points x {samples} samples, worst {worst:e} of the mesh's size"
    );
    worst
}

#[test]
fn blender_293_barbarian() {
    check(
        "blender_293_barbarian_7400_binary.fbx",
        "blender_293_barbarian_7400_binary",
    );
}

#[test]
fn blender_279_sausage_three_stacks() {
    check(
        "blender_279_sausage_7400_binary.fbx",
        "blender_279_sausage_7400_binary",
    );
}

#[test]
fn maya_sausage_binary_and_ascii() {
    let name = "maya_game_sausage_7500_binary_wiggle";
    check("maya_game_sausage_7500_binary_wiggle.fbx", name);
    check("maya_game_sausage_7500_ascii_wiggle.fbx", name);
}

#[test]
fn assimp_animation_with_skeleton() {
    check("animation_with_skeleton.fbx", "animation_with_skeleton");
}

#[test]
fn ozz_pab_skeleton_67_bones() {
    check("ozz_pab_skeleton.fbx", "ozz_pab_skeleton");
}

#[test]
fn huesitos() {
    check("huesitos.fbx", "huesitos");
}

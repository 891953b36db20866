//! DirectX `.x` skinned vertices against assimp + three.js
//! (`tests/reference/x_skin`, made by `scripts/reference/x_skin.sh`): the rest pose and five
//! times of clip 0, about 200 vertices per mesh, skinned by skelett's CPU skinning
//! ([`skelett::skin::skin`]) with `x::Options::right_handed` (assimp mirrors Z, as the joint
//! references do).
//!
//! assimp reorders and regroups vertices, so each reference vertex is matched to the file's
//! vertices by its rest position (within 1e-6 relative) and its bone names and weights
//! (within 1e-5); every reference vertex must find one.

mod common;

use std::collections::HashMap;
use std::path::Path;

use glam::{Mat4, Vec3};
use serde_json::Value;
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, sample_uncached, skinning_palette, Pose};

fn reference(file: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/x_skin")
        .join(format!("{file}.skin.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn vec3(v: &Value) -> Vec3 {
    let a = v.as_array().unwrap();
    Vec3::new(
        a[0].as_f64().unwrap() as f32,
        a[1].as_f64().unwrap() as f32,
        a[2].as_f64().unwrap() as f32,
    )
}

/// Returns the largest error relative to the model's size.
fn check(file: &str) -> f32 {
    let path = common::data(&format!("x/{file}"));
    let options = skelett_io::x::Options {
        right_handed: true,
        ..Default::default()
    };
    let asset = skelett_io::x::load_with(&path, &options).unwrap_or_else(|e| panic!("{e}"));
    let r = reference(file);
    let sk = &asset.skeleton;
    let clip = &asset.clips[r["clip"]["index"].as_u64().unwrap() as usize];
    assert_eq!(clip.name(), r["clip"]["name"].as_str().unwrap());

    // Every primitive's vertices, as (mesh, vertex) by rest position and influences.
    struct Vertex {
        mesh: usize,
        index: usize,
        rest: Vec3,
        influences: HashMap<String, f32>,
    }
    let mut vertices = Vec::new();
    for (mi, m) in asset.meshes.iter().enumerate() {
        let s = &asset.skins[m.skin];
        let p = &m.primitives[0];
        for (i, &rest) in p.positions.iter().enumerate() {
            let mut influences = HashMap::new();
            let n = p.influences;
            let total: f32 = p.weights[i * n..i * n + n].iter().sum();
            for k in 0..n {
                let w = p.weights[i * n + k];
                if w > 0.0 {
                    let joint = s.joints()[p.joints[i * n + k] as usize];
                    *influences.entry(sk.name(joint).to_string()).or_insert(0.0) += w / total;
                }
            }
            vertices.push(Vertex {
                mesh: mi,
                index: i,
                rest,
                influences,
            });
        }
    }

    // Each pose's skinned positions of every mesh, in scene space.
    let poses = r["poses"].as_array().unwrap();
    let mut skinned: Vec<Vec<Vec<Vec3>>> = Vec::new();
    let mut pose = Pose::rest(sk);
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    for p in poses {
        if p["pose"] == "rest" {
            pose.copy_from_slice(sk.rest_pose());
        } else {
            sample_uncached(clip, p["t"].as_f64().unwrap() as f32, &mut pose).unwrap();
        }
        local_to_model(sk, &pose, 0, &mut model).unwrap();
        let mut per_mesh = Vec::new();
        for m in &asset.meshes {
            let s = &asset.skins[m.skin];
            let mut matrices = vec![Mat4::IDENTITY; s.len()];
            skinning_palette(s, &model, &mut matrices).unwrap();
            let mut palette = SkinPalette::new(SkinningMethod::Linear);
            palette.set_matrices(&matrices);
            let prim = &m.primitives[0];
            let mesh = SkinningMesh::new(prim, s.len()).unwrap();
            let mut out = vec![Vec3::ZERO; prim.positions.len()];
            skin(
                &mesh,
                &palette,
                SkinOutput {
                    positions: &mut out,
                    normals: None,
                    tangents: None,
                },
            )
            .unwrap();
            // Back to source order, and to scene space.
            let mut by_source = vec![Vec3::ZERO; out.len()];
            for (k, &src) in mesh.source_vertices().iter().enumerate() {
                by_source[src as usize] = sk.root_transform().transform_point3(out[k]);
            }
            per_mesh.push(by_source);
        }
        skinned.push(per_mesh);
    }

    let mut worst = 0.0f32;
    let mut matched = 0;
    for rm in r["meshes"].as_array().unwrap() {
        let size = rm["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| vec3(&v["rest"]).length())
            .fold(1e-6f32, f32::max);
        for rv in rm["vertices"].as_array().unwrap() {
            let rest = vec3(&rv["rest"]);
            let want: HashMap<&str, f32> = rv["joints"]
                .as_array()
                .unwrap()
                .iter()
                .zip(rv["weights"].as_array().unwrap())
                .map(|(j, w)| (j.as_str().unwrap(), w.as_f64().unwrap() as f32))
                .collect();
            let v = vertices
                .iter()
                .find(|v| {
                    (v.rest - rest).length() <= 1e-6 * size
                        && v.influences.len() == want.len()
                        && want.iter().all(|(j, w)| {
                            v.influences.get(*j).is_some_and(|x| (x - w).abs() < 1e-5)
                        })
                })
                .unwrap_or_else(|| {
                    panic!(
                        "{file} {}: no vertex at {rest} with {want:?}",
                        rm["name"].as_str().unwrap()
                    )
                });
            matched += 1;
            for (k, want) in rv["skinned"].as_array().unwrap().iter().enumerate() {
                let got = skinned[k][v.mesh][v.index];
                let err = (got - vec3(want)).length() / size;
                worst = worst.max(err);
                assert!(
                    err < 2e-5,
                    "{file} {} vertex {} pose {k}: {got} vs {} ({err:e})",
                    rm["name"].as_str().unwrap(),
                    rv["i"],
                    vec3(want)
                );
            }
        }
    }
    assert!(matched > 150, "{file}: {matched} vertices");
    eprintln!("{file}: {matched} vertices, worst error {worst:e} of the model's size");
    worst
}

#[test]
fn bcn_epileptic_skinned_vertices_match_assimp_and_three() {
    check("BCN_Epileptic.X");
}

#[test]
fn testwuson_skinned_vertices_match_assimp_and_three() {
    check("Testwuson.X");
}

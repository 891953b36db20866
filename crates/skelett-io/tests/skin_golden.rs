//! Skinned vertices against three.js (`../shared/data/reference/skin`): the first skinned
//! mesh primitive of each asset, clip 0, at the reference's times, for the 256 listed
//! vertices. This checks what the joint matrices alone cannot: the imported inverse bind
//! matrices, JOINTS/WEIGHTS (u8 and u16 indices, float and normalised weights) and positions.
//! Each sample is skinned twice: by the library's CPU skinning (`skelett::skin`, grouped by
//! influence count, f32) and by plain linear blend skinning written out here in f64 on top of
//! skelett's palette, which isolates import errors from skinning errors.
//!
//! Tolerance: 1e-4 of the mesh's size (the largest distance of a reference vertex from the
//! origin). Past a clip's end the reference holds the last key, as skelett does.

mod common;

use glam::{DVec3, Mat4};
use skelett::skin::{SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, sample_uncached, skinning_palette, Pose};

fn check(file: &str) -> f64 {
    let asset = skelett_io::load(common::data(&format!("gltf/{file}"))).unwrap();
    let r = common::reference(&format!("skin/{file}.skin"));
    let clip = &asset.clips[r["clip"]["index"].as_u64().unwrap() as usize];
    let mesh = &asset.meshes[0];
    let prim = &mesh.primitives[0];
    assert_eq!(
        prim.vertex_count() as u64,
        r["mesh"]["vertexCount"].as_u64().unwrap(),
        "{file}: vertex count"
    );
    let skin = &asset.skins[mesh.skin];
    let vertices: Vec<usize> = r["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let mut pose = Pose::rest(&asset.skeleton);
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    let mut palette = vec![Mat4::IDENTITY; skin.len()];
    let mesh_cpu = SkinningMesh::new(prim, skin.len()).unwrap();
    let mut slot = vec![0usize; prim.vertex_count()];
    for (i, &v) in mesh_cpu.source_vertices().iter().enumerate() {
        slot[v as usize] = i;
    }
    let mut skin_palette = SkinPalette::new(SkinningMethod::Linear);
    let mut skinned = vec![glam::Vec3::ZERO; prim.vertex_count()];
    let mut worst_cpu = 0.0f64;
    let root = asset.skeleton.root_transform().as_dmat4();
    let mut worst = 0.0f64;
    for s in r["samples"].as_array().unwrap() {
        let t = s["t"].as_f64().unwrap() as f32;
        sample_uncached(clip, t, &mut pose).unwrap();
        local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
        skinning_palette(skin, &model, &mut palette).unwrap();
        skin_palette.update(skin, &model).unwrap();
        skelett::skin::skin(
            &mesh_cpu,
            &skin_palette,
            SkinOutput {
                positions: &mut skinned,
                normals: None,
                tangents: None,
            },
        )
        .unwrap();
        let world = s["world"].as_array().unwrap();
        let size = world
            .iter()
            .map(|p| {
                let p = p.as_array().unwrap();
                DVec3::new(
                    p[0].as_f64().unwrap(),
                    p[1].as_f64().unwrap(),
                    p[2].as_f64().unwrap(),
                )
                .length()
            })
            .fold(1e-9, f64::max);
        for (k, &v) in vertices.iter().enumerate() {
            let p = prim.positions[v].as_dvec3();
            let mut out = DVec3::ZERO;
            for i in 0..prim.influences {
                let w = prim.weights[v * prim.influences + i] as f64;
                if w > 0.0 {
                    let m = palette[prim.joints[v * prim.influences + i] as usize].as_dmat4();
                    out += m.transform_point3(p) * w;
                }
            }
            let got = root.transform_point3(out);
            let want = world[k].as_array().unwrap();
            let want = DVec3::new(
                want[0].as_f64().unwrap(),
                want[1].as_f64().unwrap(),
                want[2].as_f64().unwrap(),
            );
            let err = (got - want).length() / size;
            worst = worst.max(err);
            let cpu = root.transform_point3(skinned[slot[v]].as_dvec3());
            let err_cpu = (cpu - want).length() / size;
            worst_cpu = worst_cpu.max(err_cpu);
            assert!(
                err_cpu < 1e-4,
                "{file} t={t} vertex {v}: skelett::skin gives {cpu}, want {want} (relative {err_cpu:e})"
            );
            assert!(
                err < 1e-4,
                "{file} t={t} vertex {v}: got {got} want {want} (relative {err:e})"
            );
        }
    }
    eprintln!("{file}: worst relative vertex error {worst:e} (f64 formula), {worst_cpu:e} (skelett::skin)");
    worst
}

#[test]
fn fox() {
    check("Fox.glb");
}

#[test]
fn cesium_man() {
    check("CesiumMan.glb");
}

#[test]
fn cesium_man_cubic() {
    check("CesiumMan_cubic.glb");
}

#[test]
fn rigged_figure() {
    check("RiggedFigure.glb");
}

#[test]
fn greenman() {
    check("greenman.glb");
}

//! CPU skinning benchmarks (criterion), positions and normals, on real meshes from
//! `../shared/data` posed mid-clip.
//!
//! Throughput is vertices, so ns/vertex = 1000 / (Melem/s). Cases: CesiumMan (3,273
//! vertices, mixed influences), robot_quaternius (its largest primitive), the same robot
//! primitive tiled to about 1M vertices (12 MB of positions and normals in, the same out:
//! far beyond the caches), and CesiumMan with every vertex forced to four influences (the
//! layout of ozz-animation's 4.4 ns/vertex figure). Each runs on one thread (`skin`), and the
//! tiled mesh also on both cores (`skin_par`); `lbs_raw_normals` rows skip renormalising
//! the normals, as ozz-animation's job does. ozz-animation 0.16 on this machine, measured
//! in an earlier session (`../shared/bench/ozz` has no skinning row): 3.0 ns/vertex mixed,
//! 4.4 all four influences; memory bandwidth bounds a large mesh at about
//! 3 ns/vertex for the whole machine.
//!
//! `cargo bench -p skelett --features rayon --bench skinning`.

use skelett_testdata::data;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use glam::{Mat4, Vec3};
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, sample_uncached, MeshPrimitive, Pose};

struct Case {
    label: String,
    mesh: SkinningMesh,
    model: Vec<Mat4>,
    skin: skelett::Skin,
}

fn posed(file: &str) -> (skelett_io::Asset, Vec<Mat4>) {
    let asset = skelett_io::load(data(file)).unwrap();
    let clip = &asset.clips[0];
    let mut pose = Pose::rest(&asset.skeleton);
    sample_uncached(clip, clip.start() + clip.duration() * 0.4, &mut pose).unwrap();
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
    (asset, model)
}

fn largest(asset: &skelett_io::Asset) -> (&MeshPrimitive, usize) {
    asset
        .meshes
        .iter()
        .flat_map(|m| m.primitives.iter().map(move |p| (p, m.skin)))
        .max_by_key(|(p, _)| p.vertex_count())
        .unwrap()
}

fn tiled(p: &MeshPrimitive, target: usize) -> MeshPrimitive {
    let copies = target.div_ceil(p.vertex_count());
    let mut t = p.clone();
    for _ in 1..copies {
        t.positions.extend_from_slice(&p.positions);
        if let (Some(a), Some(b)) = (t.normals.as_mut(), p.normals.as_ref()) {
            a.extend_from_slice(b);
        }
        t.joints.extend_from_slice(&p.joints);
        t.weights.extend_from_slice(&p.weights);
    }
    t.tangents = None;
    t.uvs = None;
    t.indices.clear();
    t
}

/// Every vertex with four non-zero weights (the heaviest kept, the rest made up).
fn four_influences(p: &MeshPrimitive, joints: usize) -> MeshPrimitive {
    let mut t = p.clone();
    for v in 0..p.vertex_count() {
        for i in 0..4 {
            let slot = v * p.influences + i;
            if t.weights[slot] <= 0.0 {
                t.weights[slot] = 0.05;
                t.joints[slot] = ((v + i) % joints) as u16;
            }
        }
    }
    t
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (label, file) in [
        ("cesium_man", "gltf/CesiumMan.glb"),
        ("robot", "gltf/robot_quaternius.glb"),
    ] {
        let (asset, model) = posed(file);
        let (p, s) = largest(&asset);
        let skin = asset.skins[s].clone();
        let mut add = |label: String, p: &MeshPrimitive| {
            out.push(Case {
                label,
                mesh: SkinningMesh::new(p, skin.len()).unwrap(),
                model: model.clone(),
                skin: skin.clone(),
            })
        };
        add(label.into(), p);
        if label == "cesium_man" {
            add("cesium_man_all4".into(), &four_influences(p, skin.len()));
        } else {
            add("robot_1m".into(), &tiled(p, 1 << 20));
        }
    }
    out
}

/// Positions and normals of every vertex, one thread.
fn skin_once(mesh: &SkinningMesh, palette: &SkinPalette, pos: &mut [Vec3], nrm: &mut [Vec3]) {
    skin(
        black_box(mesh),
        palette,
        SkinOutput {
            positions: pos,
            normals: Some(nrm),
            tangents: None,
        },
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("skin");
    for case in cases() {
        let n = case.mesh.vertex_count();
        let groups: Vec<String> = case
            .mesh
            .groups()
            .iter()
            .map(|g| format!("{}x{}", g.len, g.influences))
            .collect();
        eprintln!("{}: {n} vertices, groups {}", case.label, groups.join(" "));
        let mut pos = vec![Vec3::ZERO; n];
        let mut nrm = vec![Vec3::ZERO; n];
        g.throughput(Throughput::Elements(n as u64));
        for method in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
            let mut palette = SkinPalette::new(method);
            palette.update(&case.skin, &case.model).unwrap();
            let tag = match method {
                SkinningMethod::Linear => "lbs",
                SkinningMethod::DualQuaternion => "dqs",
            };
            g.bench_function(format!("{}/{tag}/1thread", case.label), |b| {
                b.iter(|| skin_once(&case.mesh, &palette, &mut pos, &mut nrm))
            });
            if method == SkinningMethod::Linear && n < 100_000 {
                // Without renormalising directions: what ozz-animation's job does.
                palette.set_normalize_directions(false);
                g.bench_function(format!("{}/lbs_raw_normals/1thread", case.label), |b| {
                    b.iter(|| skin_once(&case.mesh, &palette, &mut pos, &mut nrm))
                });
                palette.set_normalize_directions(true);
            }
            #[cfg(feature = "rayon")]
            if n > 100_000 {
                g.bench_function(format!("{}/{tag}/rayon", case.label), |b| {
                    b.iter(|| {
                        skelett::skin::skin_par(
                            black_box(&case.mesh),
                            &palette,
                            SkinOutput {
                                positions: &mut pos,
                                normals: Some(&mut nrm),
                                tangents: None,
                            },
                            16 * 1024,
                        )
                        .unwrap()
                    })
                });
            }
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = skelett_testdata::bench::criterion(20, 3);
    targets = bench
}
criterion_main!(benches);

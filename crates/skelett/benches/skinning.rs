//! CPU skinning benchmarks (criterion), positions and normals, on real meshes from
//! `../shared/data` posed mid-clip.
//!
//! Throughput is vertices, so ns/vertex = 1000 / (Melem/s). Cases: CesiumMan (3,273
//! vertices, mixed influences), robot_quaternius (its largest primitive), the same robot
//! primitive tiled to about 1M vertices (12 MB of positions and normals in, the same out:
//! far beyond the caches), and CesiumMan with every vertex forced to four influences (the
//! layout of ozz-animation's all-four-influences figure). Each runs on one thread (`skin`),
//! and the tiled mesh also on both cores (`skin_par`), beside `stream_copy`: the same bytes
//! (positions, normals, joint indices and weights in; positions and normals out) plainly
//! copied, the memory bandwidth floor. `lbs_raw_normals` rows skip renormalising the
//! normals, as ozz-animation's job does.
//!
//! ozz-animation 0.16's `SkinningJob` on the same meshes, palettes and vertex order
//! (`scripts/bench/ozz_skinning.sh`, which fails unless both give the same vertices), this
//! machine, 2026-11-26, four runs around skelett's, ns/vertex: CesiumMan 2.73-3.06 (SSE2
//! build) and 2.54-2.57 (AVX2 and FMA), all four influences 3.90-4.18 and 3.64-3.67,
//! robot_quaternius (one influence) 1.46-1.50 and 1.75-1.77; in a later session's two runs
//! 2.66-2.70 and 2.51-2.53, 3.81-3.85 and 3.61-3.65, 1.44-1.45 and 1.74-1.75.
//!
//! `cargo bench -p skelett --features rayon --bench skinning`.
//!
//! With `SKELETT_SKIN_CASES=DIR` set, the bench first writes each small case (the mesh in
//! skinning order, its palette and skelett's skinned output) to `DIR/LABEL.bin`, which
//! `scripts/bench/ozz_skinning.sh` feeds to ozz-animation's `SkinningJob` for a side by side
//! comparison on the same data (the format is in `scripts/bench/ozz_skinning.cc`).

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

/// Vertices per chunk of `skin_par` in this bench, and of the streaming copies: chunks this
/// small are copied with ordinary stores (as the kernel writes), not the non-temporal ones
/// the C library may use for one large copy.
const CHUNK: usize = 16 * 1024;

/// The bandwidth floor for skinning `sp.len()` vertices: their input bytes
/// (positions, normals, and `influences`: their joint indices and weights) read once and the
/// output bytes (positions and normals) written once, by plain copies and a fold.
fn copy_chunk(
    (p, q): (&mut [Vec3], &mut [Vec3]),
    (sp, sn): (&[Vec3], &[Vec3]),
    influences: &[u8],
) -> u64 {
    p.copy_from_slice(sp);
    q.copy_from_slice(sn);
    // Eight bytes at a time, so the fold reads at the speed of memory, not of the adds.
    influences
        .chunks_exact(8)
        .fold(0u64, |a, c| a ^ u64::from_le_bytes(c.try_into().unwrap()))
}

/// [`copy_chunk`] over the whole mesh, chunk by chunk, on one thread.
fn stream_copy(mesh: &SkinningMesh, influences: &[u8], pos: &mut [Vec3], nrm: &mut [Vec3]) -> u64 {
    let (sp, sn) = (mesh.positions(), mesh.normals().unwrap());
    let per = influence_chunk(influences.len(), sp.len());
    pos.chunks_mut(CHUNK)
        .zip(nrm.chunks_mut(CHUNK))
        .zip(sp.chunks(CHUNK).zip(sn.chunks(CHUNK)))
        .zip(influences.chunks(per))
        .map(|((out, src), i)| copy_chunk(out, src, i))
        .fold(0, |a, b| a ^ b)
}

/// Influence bytes per chunk of [`CHUNK`] vertices (a multiple of 8).
fn influence_chunk(bytes: usize, vertices: usize) -> usize {
    (bytes / vertices.div_ceil(CHUNK))
        .next_multiple_of(8)
        .max(8)
}

/// Bytes of joint indices and weights `mesh` holds: `k` u16 and `k - 1` f32 per vertex.
fn influence_bytes(mesh: &SkinningMesh) -> usize {
    mesh.groups()
        .iter()
        .map(|g| g.len * (2 * g.influences + 4 * g.influences.saturating_sub(1)))
        .sum()
}

/// Writes `case` for `scripts/bench/ozz_skinning.cc` (all little-endian): u32 joints,
/// vertices, groups; per group u32 length and influences; the palette (16 f32 each, column
/// major); positions and normals (3 f32 each); per group its joint indices (u16, k per
/// vertex) and its first k - 1 weights (f32); skelett's skinned positions and unit normals.
fn dump(case: &Case, dir: &std::path::Path) {
    let mesh = &case.mesh;
    let n = mesh.vertex_count();
    let mut palette = SkinPalette::new(SkinningMethod::Linear);
    palette.update(&case.skin, &case.model).unwrap();
    let (mut pos, mut nrm) = (vec![Vec3::ZERO; n], vec![Vec3::ZERO; n]);
    skin_once(mesh, &palette, &mut pos, &mut nrm);
    let mut b = Vec::<u8>::new();
    let u32s = |b: &mut Vec<u8>, v: usize| b.extend_from_slice(&(v as u32).to_le_bytes());
    let f32s = |b: &mut Vec<u8>, v: &[f32]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
    u32s(&mut b, palette.matrices().len());
    u32s(&mut b, n);
    u32s(&mut b, mesh.groups().len());
    for g in mesh.groups() {
        u32s(&mut b, g.len);
        u32s(&mut b, g.influences);
    }
    for m in palette.matrices() {
        f32s(&mut b, &m.to_cols_array());
    }
    for v in mesh.positions().iter().chain(mesh.normals().unwrap()) {
        f32s(&mut b, &v.to_array());
    }
    for g in mesh.groups() {
        let inf: Vec<Vec<(u16, f32)>> = (g.start..g.start + g.len)
            .map(|v| mesh.influences(v).collect())
            .collect();
        for (j, _) in inf.iter().flatten() {
            b.extend(j.to_le_bytes());
        }
        for v in &inf {
            let w: Vec<f32> = v.iter().map(|x| x.1).collect();
            f32s(&mut b, &w[..w.len().saturating_sub(1)]);
        }
    }
    for v in pos.iter().chain(&nrm) {
        f32s(&mut b, &v.to_array());
    }
    let path = dir.join(format!("{}.bin", case.label));
    std::fs::write(&path, b).unwrap();
    eprintln!("wrote {}", path.display());
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("skin");
    for case in cases() {
        let n = case.mesh.vertex_count();
        if let Some(dir) = std::env::var_os("SKELETT_SKIN_CASES") {
            if n < 100_000 {
                dump(&case, std::path::Path::new(&dir));
            }
        }
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
            if method == SkinningMethod::Linear {
                eprintln!(
                    "{}: normal matrices {}",
                    case.label,
                    palette.uses_normal_matrices()
                );
            }
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
            if method == SkinningMethod::Linear && n > 100_000 {
                // The memory bandwidth floor: the same bytes in and out, plainly copied.
                let infl = vec![1u8; influence_bytes(&case.mesh).next_multiple_of(8)];
                g.bench_function(format!("{}/stream_copy/1thread", case.label), |b| {
                    b.iter(|| stream_copy(black_box(&case.mesh), &infl, &mut pos, &mut nrm))
                });
                #[cfg(feature = "rayon")]
                {
                    use rayon::prelude::*;
                    let (sp, sn) = (case.mesh.positions(), case.mesh.normals().unwrap());
                    let per = influence_chunk(infl.len(), n);
                    g.bench_function(format!("{}/stream_copy/rayon", case.label), |b| {
                        b.iter(|| {
                            pos.par_chunks_mut(CHUNK)
                                .zip(nrm.par_chunks_mut(CHUNK))
                                .zip(sp.par_chunks(CHUNK).zip(sn.par_chunks(CHUNK)))
                                .zip(infl.par_chunks(per))
                                .map(|((out, src), i)| copy_chunk(out, src, i))
                                .reduce(|| 0, |a, b| a ^ b)
                        })
                    });
                }
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
                            CHUNK,
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

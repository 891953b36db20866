//! Morph then skin on the CPU (criterion): CesiumMan (3,273 vertices, posed mid-clip) with
//! synthetic morph targets, positions and normals, one thread. Cases: 0, 4 and 52 active
//! targets (52 is the ARKit face set), each target moving a contiguous tenth of the vertices
//! (a face region), and 4 dense targets moving every vertex (the worst case for sparse
//! storage). `skin/plain` is skinning alone in the same run, the baseline for the ratios.
//!
//! Throughput is vertices, so ns/vertex = 1000 / (Melem/s).
//!
//! `cargo bench -p skelett --bench morph`.

use skelett_testdata::data;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use glam::{Mat4, Vec3};
use skelett::morph::{morph, skin_morphed, Morphed};
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, sample_uncached, MorphTarget, Pose};

fn bench(c: &mut Criterion) {
    let asset = skelett_io::load(data("gltf/CesiumMan.glb")).unwrap();
    let clip = &asset.clips[0];
    let mut pose = Pose::rest(&asset.skeleton);
    sample_uncached(clip, clip.start() + clip.duration() * 0.4, &mut pose).unwrap();
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
    let skin_def = &asset.skins[asset.meshes[0].skin];
    let base = asset.meshes[0].primitives[0].clone();
    let n = base.vertex_count();
    let mut palette = SkinPalette::new(SkinningMethod::Linear);
    palette.update(skin_def, &model).unwrap();
    let mut positions = vec![Vec3::ZERO; n];
    let mut normals = vec![Vec3::ZERO; n];

    // Target k moves vertices [start, start + n/10) with a small offset.
    let regional = |k: usize, count: usize| -> MorphTarget {
        let start = (k * n / count.max(1)) % n;
        let mut p = vec![Vec3::ZERO; n];
        let mut nn = vec![Vec3::ZERO; n];
        for i in 0..n / 10 {
            let v = (start + i) % n;
            p[v] = Vec3::new(0.001 * (k as f32 + 1.0), 0.002, -0.001);
            nn[v] = Vec3::new(0.01, 0.0, 0.0);
        }
        MorphTarget {
            positions: Some(p),
            normals: Some(nn),
            tangents: None,
        }
    };
    let dense = |k: usize| MorphTarget {
        positions: Some(
            (0..n)
                .map(|v| Vec3::splat(0.001 * ((v + k) % 7) as f32 + 0.0001))
                .collect(),
        ),
        normals: Some(vec![Vec3::new(0.0, 0.01, 0.0); n]),
        tangents: None,
    };

    let mut g = c.benchmark_group("morph");
    g.throughput(Throughput::Elements(n as u64));
    let plain = SkinningMesh::new(&base, skin_def.len()).unwrap();
    g.bench_function("skin/plain", |b| {
        b.iter(|| {
            skin(
                black_box(&plain),
                &palette,
                SkinOutput {
                    positions: &mut positions,
                    normals: Some(&mut normals),
                    tangents: None,
                },
            )
            .unwrap()
        })
    });
    let cases: Vec<(String, Vec<MorphTarget>)> = vec![
        (
            "52_targets_0_active".into(),
            (0..52).map(|k| regional(k, 52)).collect(),
        ),
        (
            "4_regional_active".into(),
            (0..4).map(|k| regional(k, 4)).collect(),
        ),
        (
            "52_regional_active".into(),
            (0..52).map(|k| regional(k, 52)).collect(),
        ),
        ("4_dense_active".into(), (0..4).map(dense).collect()),
    ];
    for (label, targets) in cases {
        let mut p = base.clone();
        p.morph_targets = targets;
        let mesh = SkinningMesh::new(&p, skin_def.len()).unwrap();
        let count = p.morph_targets.len();
        let weights: Vec<f32> = if label.contains("0_active") {
            vec![0.0; count]
        } else {
            (0..count).map(|k| 0.2 + 0.01 * k as f32).collect()
        };
        let mut morphed = Morphed::new(&mesh);
        g.bench_function(format!("morph_and_skin/{label}"), |b| {
            b.iter(|| {
                morph(black_box(&mesh), black_box(&weights), &mut morphed).unwrap();
                skin_morphed(
                    &mesh,
                    &palette,
                    &morphed,
                    SkinOutput {
                        positions: &mut positions,
                        normals: Some(&mut normals),
                        tangents: None,
                    },
                )
                .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = skelett_testdata::bench::criterion(30, 3);
    targets = bench
}
criterion_main!(benches);

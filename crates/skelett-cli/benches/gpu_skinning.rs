//! GPU skinning throughput (criterion): one compute dispatch over every vertex of a mesh,
//! submitted and waited for (no readback), positions and normals. Throughput is vertices
//! (ns/vertex = 1000 / Melem/s). On a machine without a GPU this measures Mesa's lavapipe,
//! which runs the shader on the CPU; it is recorded, not a target.
//!
//! `gpu_morph/*`: the same dispatch with morph targets applied first, on CesiumMan tiled to
//! 524,288 vertices with 52 targets (the ARKit face set), each moving a contiguous tenth of
//! the vertices, positions and normals; 0, 4 and 52 of them active (52 targets of a tenth
//! are 85 MB of offsets, within WebGPU's 128 MB binding). `no_targets` is the same mesh
//! without targets, the baseline.
//!
//! `cargo bench -p skelett-cli --bench gpu_skinning`.

use skelett_testdata::data;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use glam::Mat4;
use skelett::skin::{SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, sample_uncached, MeshPrimitive, Pose};
use skelett_render::{Gpu, GpuSkinner};

fn bench(c: &mut Criterion) {
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("no GPU adapter, nothing to measure: {e}");
            return;
        }
    };
    eprintln!("GPU: {}", gpu.describe());
    let asset = skelett_io::load(data("gltf/CesiumMan.glb")).unwrap();
    let clip = &asset.clips[0];
    let mut pose = Pose::rest(&asset.skeleton);
    sample_uncached(clip, clip.start() + clip.duration() * 0.4, &mut pose).unwrap();
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
    let skin = &asset.skins[asset.meshes[0].skin];
    let p = &asset.meshes[0].primitives[0];
    // CesiumMan as it is, and tiled to about 1M vertices.
    let mut big: MeshPrimitive = p.clone();
    while big.vertex_count() < 1 << 20 {
        big.positions.extend_from_slice(&p.positions);
        if let (Some(a), Some(b)) = (big.normals.as_mut(), p.normals.as_ref()) {
            a.extend_from_slice(b);
        }
        big.joints.extend_from_slice(&p.joints);
        big.weights.extend_from_slice(&p.weights);
    }
    big.tangents = None;
    big.uvs = None;
    big.indices.clear();
    let mut g = c.benchmark_group("gpu_skin");
    g.sample_size(10);
    for (label, prim) in [("cesium_man", p), ("cesium_man_1m", &big)] {
        let mesh = SkinningMesh::new(prim, skin.len()).unwrap();
        let mut skinner = GpuSkinner::new(&gpu, &mesh).unwrap();
        for method in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
            let mut palette = SkinPalette::new(method);
            palette.update(skin, &model).unwrap();
            g.throughput(Throughput::Elements(mesh.vertex_count() as u64));
            g.bench_function(format!("{label}/{method:?}"), |b| {
                b.iter(|| dispatch(&gpu, &mut skinner, black_box(&palette)))
            });
        }
    }
    g.finish();

    let n = 1 << 19;
    let mut morphed = big.clone();
    morphed.positions.truncate(n);
    if let Some(nr) = morphed.normals.as_mut() {
        nr.truncate(n);
    }
    morphed.joints.truncate(n * morphed.influences);
    morphed.weights.truncate(n * morphed.influences);
    let mut g = c.benchmark_group("gpu_morph");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n as u64));
    let mut palette = SkinPalette::new(SkinningMethod::Linear);
    palette.update(skin, &model).unwrap();
    {
        let mut plain =
            GpuSkinner::new(&gpu, &SkinningMesh::new(&morphed, skin.len()).unwrap()).unwrap();
        g.bench_function("cesium_man_512k/no_targets", |b| {
            b.iter(|| dispatch(&gpu, &mut plain, black_box(&palette)))
        });
    }
    morphed.morph_targets = (0..52)
        .map(|k| {
            let start = k * n / 52;
            let mut p = vec![glam::Vec3::ZERO; n];
            let mut nn = vec![glam::Vec3::ZERO; n];
            for i in 0..n / 10 {
                let v = (start + i) % n;
                p[v] = glam::Vec3::new(0.001 * (k as f32 + 1.0), 0.002, -0.001);
                nn[v] = glam::Vec3::new(0.01, 0.0, 0.0);
            }
            skelett::MorphTarget {
                positions: Some(p),
                normals: Some(nn),
                tangents: None,
            }
        })
        .collect();
    let mesh = SkinningMesh::new(&morphed, skin.len()).unwrap();
    let mut skinner = GpuSkinner::new(&gpu, &mesh).unwrap();
    for active in [0usize, 4, 52] {
        let weights: Vec<f32> = (0..52)
            .map(|k| {
                if k % 13 < active.div_ceil(4) {
                    0.5
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(weights.iter().filter(|&&w| w != 0.0).count(), active);
        skinner.set_morph_weights(&gpu, &weights).unwrap();
        g.bench_function(format!("cesium_man_512k/52_targets_{active}_active"), |b| {
            b.iter(|| dispatch(&gpu, &mut skinner, black_box(&palette)))
        });
    }
    g.finish();
}

/// One skinning dispatch, submitted and waited for.
fn dispatch(gpu: &Gpu, skinner: &mut GpuSkinner, palette: &SkinPalette) {
    let mut enc = gpu.device.create_command_encoder(&Default::default());
    skinner.encode(gpu, palette, &mut enc).unwrap();
    gpu.queue.submit([enc.finish()]);
    gpu.wait().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Runtime benchmarks on real clips from `../shared/data` (criterion).
//!
//! Each benchmark's throughput is set to the number of joints (matrices for the palette), so
//! criterion's "thrpt" line gives joints per second: ns/joint = 1000 / (Melem/s). The figures
//! compare with ozz-animation 0.16 run on the same files by `../shared/bench/ozz` on this
//! machine (2026-11-26, six runs 0-11 % apart), ns/joint for robot_quaternius / Fox /
//! CesiumMan: forward sampling, mean of all clips, 3.3-3.5 / 5.8-6.1 / 7.1-7.7; random seeks
//! 11.7-12.5 / 18.9-19.8 / 25.8-28.7; two- and three-layer blends 2.13-2.22 / 2.15-2.29 /
//! 2.37-2.60 and 3.11-3.23 / 3.12-3.45 / 3.47-3.73; local-to-model 5.1-5.4 / 5.4-5.7 /
//! 5.4-5.8; palette 3.1-3.3 / 3.1-3.3 / 3.1-3.5 ns/matrix. On another machine (2 cores of an
//! Intel Xeon at 2.1 GHz, 2026-11-27, medians of five runs interleaved with these benches)
//! ozz's blends took 3.15 / 5.46 / 5.24 and 5.10 / 7.15 / 5.86, local-to-model 10.2 / 12.8 /
//! 14.1. The README's "Speed" section has skelett's figures beside them.
//!
//! `blend_2` and `blend_3` blend two and three sampled poses with equal weights (ns/joint as
//! above), ozz's two- and three-layer `BlendingJob`; `blend_soa_2` and `blend_soa_3` the same
//! poses in structure-of-arrays form ([`skelett::SoaPose`]: ozz's blend takes its
//! `SoaTransform` poses), with the same results.
//!
//! `sample_forward_60hz_nlerp` is the forward playback with [`RotationInterpolation::Nlerp`],
//! to compare with slerp's `sample_forward_60hz` in the same run.
//!
//! `cargo bench -p skelett --bench runtime` runs them; `skelett bench FILE` runs the same
//! workloads on any asset without criterion.

use skelett_testdata::bench::{criterion, forward_times, random_times};
use skelett_testdata::data;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use glam::Mat4;
use skelett::{
    blend, blend_soa, local_to_model, sample, skinning_palette, BlendInput, Pose,
    RotationInterpolation, SamplingCache, SoaBlendInput, SoaPose,
};

/// (label, file, clip) triples benchmarked.
const CASES: &[(&str, &str, &str)] = &[
    ("fox_run", "gltf/Fox.glb", "Run"),
    (
        "robot_running",
        "gltf/robot_quaternius.glb",
        "Robot_Running",
    ),
    ("robot_idle", "gltf/robot_quaternius.glb", "Robot_Idle"),
    ("cesium_man", "gltf/CesiumMan.glb", "0"),
];

fn bench_runtime(c: &mut Criterion) {
    for &(label, file, clip_name) in CASES {
        let asset = skelett_io::load(data(file)).expect("shared data beside the repository");
        let skeleton = &asset.skeleton;
        let n = skeleton.len();
        let clip = asset.clip(clip_name).expect("clip");
        let mut group = c.benchmark_group(label);
        group.throughput(Throughput::Elements(n as u64));

        let mut pose = Pose::rest(skeleton);
        let mut cache = SamplingCache::for_clip(clip);
        let times = forward_times(clip.start(), clip.duration(), 60.0);
        let mut i = 0;
        group.bench_function("sample_forward_60hz", |b| {
            b.iter(|| {
                i = if i + 1 < times.len() { i + 1 } else { 0 };
                sample(clip, black_box(times[i]), &mut cache, &mut pose).unwrap();
            })
        });
        // The same forward playback with nlerp rotations (RotationInterpolation): the
        // per-player choice of speed over slerp's accuracy.
        let mut fast =
            SamplingCache::for_clip(clip).with_rotation_interpolation(RotationInterpolation::Nlerp);
        let mut j = 0;
        group.bench_function("sample_forward_60hz_nlerp", |b| {
            b.iter(|| {
                j = if j + 1 < times.len() { j + 1 } else { 0 };
                sample(clip, black_box(times[j]), &mut fast, &mut pose).unwrap();
            })
        });
        let seeks = random_times(clip.start(), clip.duration(), 256);
        let mut k = 0;
        group.bench_function("sample_random_seek", |b| {
            b.iter(|| {
                k = (k + 1) & 255;
                sample(clip, black_box(seeks[k]), &mut cache, &mut pose).unwrap();
            })
        });
        // Blending alone: two and three sampled poses (the clip at other times), equal
        // weights, no masks: ozz's BlendingJob with two and three layers.
        let poses: Vec<Pose> = [0.25f32, 0.5, 0.75]
            .iter()
            .map(|f| {
                let mut p = Pose::rest(skeleton);
                sample(clip, clip.start() + clip.duration() * f, &mut cache, &mut p).unwrap();
                p
            })
            .collect();
        let mut blended = Pose::rest(skeleton);
        for layers in [2usize, 3] {
            let inputs: Vec<BlendInput> = poses[..layers]
                .iter()
                .map(|p| BlendInput {
                    pose: p,
                    weight: 1.0,
                    mask: None,
                })
                .collect();
            group.bench_function(format!("blend_{layers}"), |b| {
                b.iter(|| blend(black_box(&inputs), skeleton.rest_pose(), &mut blended).unwrap())
            });
        }
        // The same blends on structure-of-arrays poses (blocks of eight joints, as ozz's
        // SoaTransform poses are four): same results, no transposes.
        let soa: Vec<SoaPose> = poses.iter().map(|p| SoaPose::from_transforms(p)).collect();
        let soa_rest = SoaPose::rest(skeleton);
        let mut soa_out = SoaPose::rest(skeleton);
        for layers in [2usize, 3] {
            let inputs: Vec<SoaBlendInput> = soa[..layers]
                .iter()
                .map(|p| SoaBlendInput {
                    pose: p,
                    weight: 1.0,
                })
                .collect();
            group.bench_function(format!("blend_soa_{layers}"), |b| {
                b.iter(|| blend_soa(black_box(&inputs), &soa_rest, &mut soa_out).unwrap())
            });
        }
        let mut model = vec![Mat4::IDENTITY; n];
        group.bench_function("local_to_model", |b| {
            b.iter(|| local_to_model(skeleton, black_box(&pose), 0, &mut model).unwrap())
        });
        if let Some(skin) = asset.skins.first() {
            let mut palette = vec![Mat4::IDENTITY; skin.len()];
            group.throughput(Throughput::Elements(skin.len() as u64));
            group.bench_function("skinning_palette", |b| {
                b.iter(|| skinning_palette(skin, black_box(&model), &mut palette).unwrap())
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = criterion(30, 2);
    targets = bench_runtime
}
criterion_main!(benches);

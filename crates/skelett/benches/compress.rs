//! Sampling compact clips, in the streamed (`compact/`), seekable (`seekable/`) and lanes
//! (`lanes/`) layouts, beside the same clips with keys (`keys/`; criterion), on real clips
//! from `../shared/data`, compressed at 0.01 cm (ACL's default metric).
//!
//! Throughput is the skeleton's joint count, so ns/joint = 1000 / (Melem/s). Workloads:
//! - `forward_60hz`: one character playing the clip at 60 Hz (warm caches and cursors);
//! - `random_seek`: a new random time each sample (warm data, cursors restarted);
//! - `cold_seek`: 256 copies of the clip's data, each its own character, sampled in turn at
//!   random times, so the data comes from memory (ACL's "cold" decompression).
//!
//! For comparison: ozz-animation samples its compressed clips at about 6 ns/joint warm on
//! this machine (an earlier session). ACL v2.1.0 built from source here
//! (`scripts/bench/acl_compare.sh`, SSE2 build, two runs in one sitting on 2026-11-27, the
//! third session of that day, at its end) decompresses a whole pose of these CMU clips at
//! random times in 11.6-14.0 ns per joint cold (256 copies), and compresses 01_01 in
//! 169-174 ms, 01_03 in 248-251 ms and Boxing_Toes in 111-115 ms, where skelett takes
//! 194-197, 392-393 and 224-228 ms on one thread (134-139, 239-256 and 128-130 ms on two
//! cores with the `rayon` feature), and at `CompressLevel::Fast` 117, 300-302 and 148 ms
//! (67-72, 176-181 and 87-91 on two cores). On 2026-11-28 three changes that keep every
//! byte took 8.7-10.9% of the instructions off one compression of each (callgrind); that
//! day's noisy sitting put the default level at 1.85x, 2.22x and 3.20x ACL's time on one
//! thread (ACL itself 2x slower than the day before; the README has the figures). Later
//! that day four more changes, the same bytes, took a further 6.7-8.9% off the
//! instructions and 22-27% off the page faults of one compression; in another noisy sitting
//! the default level took 1.37x, 1.72x and 2.10x ACL's time on one thread, timed as ACL's
//! harness times itself (the median of three compressions in one process), and 1.66x,
//! 2.24x and 2.53x for one compression in a fresh process. Later still, two more changes,
//! the same bytes, took 1.7-1.8% off the instructions and 10-11% off the page faults; a
//! third noisy sitting, timed as ACL's harness times itself, put both that day's last
//! binaries at 1.37-1.41x, 1.91-1.92x and 2.36x (ACL 350, 477 and 236 ms there). Late that
//! day fewer search attempts, measuring candidates at two points per frame interval instead
//! of four and a closer final check took 18-26% off the instructions; two noisy sittings,
//! timed as ACL's harness times itself, put the default level at 0.92-1.08x, 1.19-1.37x and
//! 1.51-1.65x ACL's time on one thread (1.22-1.24x, 1.56-1.69x and 1.80-2.04x for one
//! compression in a fresh process).
//!
//! `cargo bench -p skelett --bench compress`
//!
//! With `SKELETT_ACL_CASES=DIR` set, the bench first writes the CMU clips (01_01, 01_03,
//! Boxing_Toes) as raw samples at their own frame rate to `DIR/LABEL.bin` for
//! `scripts/bench/acl_compare.sh`, which compresses and decompresses them with ACL built
//! from source, and prints skelett's compression time, ratio and error for each at both
//! levels (median of three).

use skelett_testdata::bench::{criterion, forward_times, random_times};
use skelett_testdata::data;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use skelett::compress::{compress, CompactLayout, CompressLevel, CompressOptions};
use skelett::{sample, Clip, Pose, SamplingCache};

/// (label, file, clip, centimetres per unit: the for the CMU clips, else the file's).
const CASES: &[(&str, &str, &str, Option<f32>)] = &[
    ("cmu_01_01", "bvh/01_01.bvh", "0", Some(6.822)),
    ("boxing_toes", "bvh/Boxing_Toes.bvh", "0", Some(1.010)),
    (
        "robot_running",
        "gltf/robot_quaternius.glb",
        "Robot_Running",
        Some(100.0),
    ),
    ("fox_run", "gltf/Fox.glb", "Run", Some(1.0)),
    ("cesium_man", "gltf/CesiumMan.glb", "0", Some(100.0)),
];

/// Writes `label` for `scripts/bench/acl_compare.cc` (little-endian): u32 joints, u32
/// frames, f32 frame rate, f32 centimetres per unit; the parents (i32, -1 for roots); then
/// each frame's local transforms (rotation x, y, z, w, translation, scale: 10 f32 per
/// joint), sampled at `start + frame / rate`. Prints skelett's compression time, ratio and
/// error at the default level and at `CompressLevel::Fast`.
fn dump_for_acl(label: &str, file: &str, cm: f32, dir: &std::path::Path) {
    let asset = skelett_io::load(data(file)).expect("shared data beside the repository");
    let (skeleton, clip) = (&asset.skeleton, &asset.clips[0]);
    let rate = clip.frame_rate().expect("a mocap clip has a frame rate");
    let frames = (clip.duration() * rate).round() as usize + 1;
    let mut b = Vec::<u8>::new();
    let f32s = |b: &mut Vec<u8>, v: &[f32]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
    b.extend((skeleton.len() as u32).to_le_bytes());
    b.extend((frames as u32).to_le_bytes());
    f32s(&mut b, &[rate, cm]);
    for &p in skeleton.parents() {
        let p = if p == skelett::JointIndex::MAX {
            -1
        } else {
            p as i32
        };
        b.extend(p.to_le_bytes());
    }
    let mut pose = Pose::rest(skeleton);
    for f in 0..frames {
        let t = (clip.start() + f as f32 / rate).min(clip.start() + clip.duration());
        skelett::sample_uncached(clip, t, &mut pose).unwrap();
        for x in pose.iter() {
            f32s(&mut b, &x.rotation.to_array());
            f32s(&mut b, &x.translation.to_array());
            f32s(&mut b, &x.scale.to_array());
        }
    }
    let path = dir.join(format!("{label}.bin"));
    std::fs::write(&path, b).unwrap();
    let opts = CompressOptions {
        cm_per_unit: Some(cm),
        ..Default::default()
    };
    let median_secs = |opts: &CompressOptions| {
        let mut secs: Vec<f64> = (0..3)
            .map(|_| {
                let t0 = std::time::Instant::now();
                let (_, report) = compress(skeleton, clip, opts).expect("compress");
                black_box(report);
                t0.elapsed().as_secs_f64()
            })
            .collect();
        secs.sort_by(f64::total_cmp);
        secs[1]
    };
    let secs = median_secs(&opts);
    let (small, report) = compress(skeleton, clip, &opts).expect("compress");
    // The fast level (no loosening), likewise.
    let fast = CompressOptions {
        level: CompressLevel::Fast,
        ..opts
    };
    let fast_secs = median_secs(&fast);
    let (_, fast_report) = compress(skeleton, clip, &fast).expect("compress");
    // The compressor splits its work over rayon's pool with the crate's `rayon` feature,
    // and runs on the calling thread without it (as ACL does).
    let threads = if cfg!(feature = "rayon") {
        rayon::current_num_threads()
    } else {
        1
    };
    println!(
        "{{\"case\": \"{label}\", \"joints\": {}, \"frames\": {frames}, \"skelett_threads\": {threads}, \"skelett_compress_ms\": {:.1}, \"skelett_ratio\": {:.2}, \"skelett_max_error_cm\": {:.5}, \"skelett_bytes\": {}, \"skelett_fast_compress_ms\": {:.1}, \"skelett_fast_ratio\": {:.2}, \"skelett_fast_max_error_cm\": {:.5}}}",
        skeleton.len(),
        secs * 1e3,
        report.ratio(),
        report.max_error_cm,
        small.size_bytes(),
        fast_secs * 1e3,
        fast_report.ratio(),
        fast_report.max_error_cm
    );
    eprintln!("wrote {}", path.display());
}

fn bench_compact(c: &mut Criterion) {
    if let Some(dir) = std::env::var_os("SKELETT_ACL_CASES") {
        for (label, file, cm) in [
            ("cmu_01_01", "bvh/01_01.bvh", 6.822),
            ("cmu_01_03", "bvh/01_03.bvh", 6.822),
            ("boxing_toes", "bvh/Boxing_Toes.bvh", 1.010),
        ] {
            dump_for_acl(label, file, cm, std::path::Path::new(&dir));
        }
    }
    for &(label, file, clip_name, cm) in CASES {
        let asset = skelett_io::load(data(file)).expect("shared data beside the repository");
        let skeleton = &asset.skeleton;
        let raw = asset.clip(clip_name).expect("clip").clone();
        let opts = CompressOptions {
            cm_per_unit: cm,
            ..Default::default()
        };
        let (small, report) = compress(skeleton, &raw, &opts).expect("compress");
        eprintln!(
            "{label}: {} joints, {:.2}:1, max {:.5} cm, {} -> {} bytes",
            skeleton.len(),
            report.ratio(),
            report.max_error_cm,
            raw.size_bytes(),
            small.size_bytes()
        );
        let seekable = small
            .with_compact_layout(CompactLayout::Seek)
            .expect("a compact clip");
        eprintln!(
            "{label}: seekable layout {:.2}:1, {} bytes",
            report.raw_bytes as f64 / seekable.size_bytes() as f64,
            seekable.size_bytes()
        );
        let lanes = small
            .with_compact_layout(CompactLayout::Lanes)
            .expect("a compact clip");
        eprintln!(
            "{label}: lanes layout {:.2}:1, {} bytes",
            report.raw_bytes as f64 / lanes.size_bytes() as f64,
            lanes.size_bytes()
        );
        let (small, seekable, lanes) = (Arc::new(small), Arc::new(seekable), Arc::new(lanes));
        let mut group = c.benchmark_group(label);
        group.throughput(Throughput::Elements(skeleton.len() as u64));
        for (kind, clip) in [
            ("keys", &raw),
            ("compact", &small),
            ("seekable", &seekable),
            ("lanes", &lanes),
        ] {
            let mut pose = Pose::rest(skeleton);
            let mut cache = SamplingCache::for_clip(clip);
            // 60 Hz, and a low update rate (or fast playback): 8 frames per sample at 120 fps.
            for hz in [60, 15] {
                let times = forward_times(clip.start(), clip.duration(), hz as f32);
                let mut i = 0;
                group.bench_function(format!("{kind}/forward_{hz}hz"), |b| {
                    b.iter(|| {
                        i = if i + 1 < times.len() { i + 1 } else { 0 };
                        sample(clip, black_box(times[i]), &mut cache, &mut pose).unwrap();
                    })
                });
            }
            let seeks = random_times(clip.start(), clip.duration(), 256);
            let mut k = 0;
            group.bench_function(format!("{kind}/random_seek"), |b| {
                b.iter(|| {
                    k = (k + 1) & 255;
                    sample(clip, black_box(seeks[k]), &mut cache, &mut pose).unwrap();
                })
            });
            // Cold: 256 separate copies of the data (deep clones, each its own allocation).
            let copies: Vec<Clip> = (0..256).map(|_| (**clip).clone()).collect();
            let mut caches: Vec<SamplingCache> =
                copies.iter().map(SamplingCache::for_clip).collect();
            let seeks = random_times(clip.start(), clip.duration(), 1024);
            let mut k = 0;
            group.bench_function(format!("{kind}/cold_seek"), |b| {
                b.iter(|| {
                    k = (k + 1) & 1023;
                    let c = k & 255;
                    sample(&copies[c], black_box(seeks[k]), &mut caches[c], &mut pose).unwrap();
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = criterion(30, 2);
    targets = bench_compact
}
criterion_main!(benches);

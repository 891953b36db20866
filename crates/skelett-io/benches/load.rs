//! Import speed (criterion): each benchmark parses one file from memory into an `Asset`
//! (clips built, keys reduced). Throughput is the source file's size, so criterion's "thrpt"
//! is MB/s of source; `X.skl` rows load the same asset from skelett's native file (issue 4
//! asks for at least 10x faster than the glb).

use skelett_testdata::data;
use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("load");
    for file in ["bvh/01_03.bvh", "bvh/Boxing_Toes.bvh"] {
        let bytes = std::fs::read(data(file)).unwrap();
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(file, |b| {
            b.iter(|| skelett_io::bvh::from_bytes(black_box(&bytes), Path::new(file)).unwrap())
        });
        let asset = skelett_io::bvh::from_bytes(&bytes, Path::new(file)).unwrap();
        skl(&mut g, file, &asset);
    }
    for file in ["x/Testwuson.X", "x/BCN_Epileptic.X"] {
        let bytes = std::fs::read(data(file)).unwrap();
        let opts = skelett_io::x::Options::default();
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(file, |b| {
            b.iter(|| {
                skelett_io::x::from_bytes_with(black_box(&bytes), Path::new(file), &opts).unwrap()
            })
        });
        let asset = skelett_io::x::from_bytes_with(&bytes, Path::new(file), &opts).unwrap();
        skl(&mut g, file, &asset);
    }
    for file in [
        "gltf/robot_quaternius.glb",
        "gltf/Fox.glb",
        "gltf/CesiumMan.glb",
    ] {
        let bytes = std::fs::read(data(file)).unwrap();
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(file, |b| {
            b.iter(|| skelett_io::gltf::from_bytes(black_box(&bytes), Path::new(file)).unwrap())
        });
        let asset = skelett_io::gltf::from_bytes(&bytes, Path::new(file)).unwrap();
        skl(&mut g, file, &asset);
    }
    // FBX (ufbx parse, then skelett's build with baking) beside the glb of the same content.
    for file in [
        "fbx/ozz_pab_locomotions.fbx",
        "fbx/blender_293_barbarian_7400_binary.fbx",
    ] {
        let bytes = std::fs::read(data(file)).unwrap();
        let opts = skelett_io::fbx::Options::default();
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(file, |b| {
            b.iter(|| {
                skelett_io::fbx::from_bytes_with(black_box(&bytes), Path::new(file), &opts).unwrap()
            })
        });
        let asset = skelett_io::fbx::from_bytes_with(&bytes, Path::new(file), &opts).unwrap();
        let glb = skelett_io::gltf::to_bytes(&asset);
        g.throughput(Throughput::Bytes(glb.len() as u64));
        g.bench_function(format!("{file}.glb"), |b| {
            b.iter(|| skelett_io::gltf::from_bytes(black_box(&glb), Path::new("x.glb")).unwrap())
        });
        skl(&mut g, file, &asset);
    }
    g.finish();
}

/// The same asset from `.skl` (throughput still counted in the source file's bytes, so the
/// two rows compare times for the same content).
fn skl(
    g: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>,
    file: &str,
    asset: &skelett_io::Asset,
) {
    let skl = skelett_io::native::to_bytes(asset);
    g.bench_function(format!("{file}.skl"), |b| {
        b.iter(|| skelett_io::native::from_bytes(black_box(&skl), Path::new("x.skl")).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = skelett_testdata::bench::criterion(10, 3);
    targets = bench
}
criterion_main!(benches);

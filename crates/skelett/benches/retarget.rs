//! Retargeting speed: one pose of a CMU capture onto robot_quaternius (43 joints) per call,
//! as a live stream would (ns per target joint = the time / 43), and baking the whole 23 s
//! capture 01_01 (2 751 frames) into a clip for the robot, without and with the foot pass
//! (which finds the capture's foot contacts and pins the robot's feet through them).

use criterion::{criterion_group, criterion_main, Criterion};
use skelett::retarget::{BakeOptions, JointMap, Options, Retargeter};
use skelett::{sample, Pose, SamplingCache};

fn bench(c: &mut Criterion) {
    let capture = skelett_io::load(skelett_testdata::data("bvh/01_01.bvh")).unwrap();
    let robot = skelett_io::load(skelett_testdata::data("gltf/robot_quaternius.glb")).unwrap();
    let (s, t) = (&capture.skeleton, &robot.skeleton);
    let map = JointMap::auto(s, t).unwrap();
    let r = Retargeter::new(s, t, &map, &Options::default()).unwrap();
    let clip = &capture.clips[0];
    let mut pose = Pose::rest(s);
    sample(clip, 5.0, &mut SamplingCache::for_clip(clip), &mut pose).unwrap();
    let mut out = t.rest_pose().to_vec();
    let mut scratch = r.scratch();
    c.bench_function(
        &format!("retarget one pose ({} -> {} joints)", s.len(), t.len()),
        |b| {
            b.iter(|| {
                r.retarget(std::hint::black_box(&pose.0), &mut out, &mut scratch)
                    .unwrap()
            })
        },
    );
    c.bench_function("bake 01_01 (22.9 s, 2751 frames) onto robot", |b| {
        b.iter(|| r.bake(clip, s, t, &BakeOptions::default()).unwrap())
    });
    let planted = BakeOptions {
        plant_feet: true,
        ..Default::default()
    };
    c.bench_function("bake 01_01 onto robot with planted feet", |b| {
        b.iter(|| r.bake(clip, s, t, &planted).unwrap())
    });
    c.bench_function("foot contacts of 01_01", |b| {
        b.iter(|| skelett::retarget::foot_contacts(s, clip).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = skelett_testdata::bench::criterion(30, 3);
    targets = bench
}
criterion_main!(benches);

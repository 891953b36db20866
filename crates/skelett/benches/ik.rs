//! IK solvers (criterion): ns per two-bone solve, per aim, per joint of an aim chain, per
//! FABRIK/CCD iteration and joint, and per character for foot placement.
//!
//! The workload is the one `scripts/bench/ozz_ik_bench.cc` runs through ozz-animation 0.16's
//! `IKTwoBoneJob` and `IKAimJob`, so the two can be compared in one session: a leg with its
//! hip at the origin, knee 0.45 below (2 cm forward), ankle 0.45 below that, solved for 256
//! reachable targets (xorshift, the same sequence in both) with the pole forward (+Z); a head
//! at 1.6 m aiming its +Z axis, eyes 7 cm up and 10 cm forward, at 256 targets ahead of it,
//! up (+Y) toward world up. Each skelett iteration also writes the corrected local rotations
//! and updates the chain's model matrices; the ozz loop multiplies its corrections into the
//! local rotations, as its samples do.
//!
//! `cargo bench -p skelett --bench ik`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use glam::{Mat4, Quat, Vec3};
use skelett::ik::{
    aim, aim_chain, ccd, fabrik, place_feet, two_bone, Aim, Chain, Feet, IkReport, Leg, Limit,
    Placement, Plane, Reach, TwoBone, TwoBoneChain,
};
use skelett::{local_to_model, Pose, RawJoint, RawSkeleton, Skeleton, Transform};
use skelett_testdata::bench::{criterion, random_times};

/// `n` values in 0..1: the xorshift sequence the ozz bench uses too.
fn uniform(n: usize) -> Vec<f32> {
    random_times(0.0, 1.0, n)
}

fn skeleton(joints: &[(&str, Option<usize>, Vec3)]) -> Skeleton {
    RawSkeleton {
        joints: joints
            .iter()
            .map(|&(name, parent, t)| RawJoint {
                name: name.into(),
                parent,
                rest: Transform::new(t, Quat::IDENTITY, Vec3::ONE),
            })
            .collect(),
        ..Default::default()
    }
    .build()
    .unwrap()
}

/// Reachable leg targets: within 0.3..0.88 of the hip, below it, spread sideways and forward.
fn leg_targets() -> Vec<Vec3> {
    let u = uniform(768);
    u.chunks(3)
        .map(|r| {
            let dir = Vec3::new(r[0] - 0.5, -1.0, r[1] - 0.5).normalize();
            dir * (0.3 + 0.58 * r[2])
        })
        .collect()
}

/// Aim targets 1 to 5 m ahead of the head, up to 2 m sideways and 1 m up or down.
fn aim_targets() -> Vec<Vec3> {
    let u = uniform(768);
    u.chunks(3)
        .map(|r| Vec3::new(4.0 * r[0] - 2.0, 1.6 + 2.0 * r[1] - 1.0, 1.0 + 4.0 * r[2]))
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ik");
    g.throughput(Throughput::Elements(1));

    let leg = skeleton(&[
        ("hip", None, Vec3::ZERO),
        ("knee", Some(0), Vec3::new(0.0, -0.45, 0.02)),
        ("ankle", Some(1), Vec3::new(0.0, -0.45, -0.02)),
    ]);
    let chain = TwoBoneChain::new(&leg, [0, 1, 2]).unwrap();
    let rest = Pose::rest(&leg).to_vec();
    let mut model0 = vec![Mat4::IDENTITY; 3];
    local_to_model(&leg, &rest, 0, &mut model0).unwrap();
    let targets = leg_targets();
    let (mut local, mut model) = (rest.clone(), model0.clone());
    let mut k = 0;
    g.bench_function("two_bone", |b| {
        b.iter(|| {
            k = (k + 1) & 255;
            local.copy_from_slice(&rest);
            model.copy_from_slice(&model0);
            let ik = TwoBone::new(black_box(targets[k]), Vec3::Z);
            black_box(two_bone(&chain, &ik, &mut local, &mut model).unwrap());
        })
    });
    let mut k = 0;
    g.bench_function("two_bone_soft_weighted", |b| {
        b.iter(|| {
            k = (k + 1) & 255;
            local.copy_from_slice(&rest);
            model.copy_from_slice(&model0);
            let mut ik = TwoBone::new(black_box(targets[k]), Vec3::Z);
            ik.soften = 0.97;
            ik.weight = 0.8;
            black_box(two_bone(&chain, &ik, &mut local, &mut model).unwrap());
        })
    });

    let body = skeleton(&[
        ("spine", None, Vec3::new(0.0, 1.1, 0.0)),
        ("chest", Some(0), Vec3::new(0.0, 0.25, 0.0)),
        ("neck", Some(1), Vec3::new(0.0, 0.15, 0.0)),
        ("head", Some(2), Vec3::new(0.0, 0.1, 0.0)),
    ]);
    let rest = Pose::rest(&body).to_vec();
    let mut model0 = vec![Mat4::IDENTITY; 4];
    local_to_model(&body, &rest, 0, &mut model0).unwrap();
    let targets = aim_targets();
    let (mut local, mut model) = (rest.clone(), model0.clone());
    let look = |target: Vec3| Aim {
        offset: Vec3::new(0.0, 0.07, 0.1),
        up: Vec3::Y,
        pole: Vec3::Y,
        ..Aim::new(target, Vec3::Z)
    };
    let mut k = 0;
    g.bench_function("aim", |b| {
        b.iter(|| {
            k = (k + 1) & 255;
            local.copy_from_slice(&rest);
            model.copy_from_slice(&model0);
            black_box(
                aim(
                    &body,
                    3,
                    &look(black_box(targets[k])),
                    &mut local,
                    &mut model,
                )
                .unwrap(),
            );
        })
    });
    g.throughput(Throughput::Elements(4));
    let mut k = 0;
    g.bench_function("aim_chain_4_joints", |b| {
        b.iter(|| {
            k = (k + 1) & 255;
            local.copy_from_slice(&rest);
            model.copy_from_slice(&model0);
            let r = aim_chain(
                &body,
                &[0, 1, 2, 3],
                &[0.2, 0.3, 0.5, 1.0],
                &look(black_box(targets[k])),
                &mut local,
                &mut model,
            );
            black_box(r.unwrap());
        })
    });

    // Chains: a tail of 10 joints, 0.1 apart along +Z, reaching 256 targets in front of
    // and around it; one iteration per solve (tolerance 0), so the figure is per iteration
    // and joint; then 8 iterations with a hinge limit on every joint.
    let tail: Vec<(String, Option<usize>, Vec3)> = (0..10usize)
        .map(|i| {
            let t = if i == 0 {
                Vec3::ZERO
            } else {
                Vec3::new(0.0, 0.0, 0.1)
            };
            (format!("t{i}"), i.checked_sub(1), t)
        })
        .collect();
    let tail_joints: Vec<(&str, Option<usize>, Vec3)> =
        tail.iter().map(|(n, p, t)| (n.as_str(), *p, *t)).collect();
    let tail = skeleton(&tail_joints);
    let joints: Vec<u16> = (0..10).collect();
    let free = Chain::new(&tail, &joints).unwrap();
    let mut limited = free.clone();
    for i in 0..10 {
        limited
            .set_limit(
                i,
                Limit::Hinge {
                    axis: Vec3::X,
                    min: -0.6,
                    max: 0.6,
                },
            )
            .unwrap();
    }
    let rest = Pose::rest(&tail).to_vec();
    let mut model0 = vec![Mat4::IDENTITY; 10];
    local_to_model(&tail, &rest, 0, &mut model0).unwrap();
    let u = uniform(768);
    let targets: Vec<Vec3> = u
        .chunks(3)
        .map(|r| Vec3::new(r[0] - 0.5, r[1] - 0.5, 0.3 + 0.5 * r[2]))
        .collect();
    let (mut local, mut model) = (rest.clone(), model0.clone());
    g.throughput(Throughput::Elements(10));
    for (name, solver, chain, iterations) in [
        ("fabrik_1_iteration_10_joints", fabrik as Solver, &free, 1),
        ("ccd_1_iteration_10_joints", ccd as Solver, &free, 1),
        (
            "fabrik_8_iterations_10_hinges",
            fabrik as Solver,
            &limited,
            8,
        ),
        ("ccd_8_iterations_10_hinges", ccd as Solver, &limited, 8),
    ] {
        let mut k = 0;
        g.throughput(Throughput::Elements(10 * iterations as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                k = (k + 1) & 255;
                local.copy_from_slice(&rest);
                model.copy_from_slice(&model0);
                let reach = Reach {
                    iterations,
                    tolerance: 0.0,
                    ..Reach::new(black_box(targets[k]))
                };
                black_box(solver(chain, &reach, &mut local, &mut model).unwrap());
            })
        });
    }

    // Foot placement per character: robot_quaternius walking up a 15 degree slope (two
    // legs, pelvis, contacts from the clip), 64 poses of the cycle in turn; the figure
    // includes the ray casts, both legs' IK and local_to_model from the first moved joint.
    let robot = skelett_io::load(skelett_testdata::data("gltf/robot_quaternius.glb")).unwrap();
    let sk = robot.skeleton.clone();
    let walk = robot.clip("Robot_Walking").unwrap().clone();
    let find = |n: &str| sk.find(n).unwrap();
    let leg = |upper: &str, lower: &str, foot: &str| {
        let chain =
            TwoBoneChain::reaching_joint(&sk, [find(upper), find(lower)], find(foot)).unwrap();
        Leg::from_rest(&sk, chain, find(foot), Vec3::Y)
            .unwrap()
            .with_pole(Vec3::Z)
    };
    let feet = Feet::new(
        &sk,
        vec![
            leg("UpperLeg.L", "LowerLeg.L", "Foot.L"),
            leg("UpperLeg.R", "LowerLeg.R", "Foot.R"),
        ],
        Some(find("Body")),
        Vec3::Y,
    )
    .unwrap();
    let contacts = feet.contacts(&sk, &walk);
    let a = 15f32.to_radians();
    let slope = Plane::new(Vec3::ZERO, Vec3::new(0.0, a.cos(), -a.sin())).unwrap();
    let placement = Placement::new(Mat4::IDENTITY, 1.0);
    let poses: Vec<(Vec<skelett::Transform>, Vec<Mat4>, [f32; 2])> = (0..64)
        .map(|i| {
            let t = walk.start() + walk.duration() * i as f32 / 64.0;
            let mut pose = Pose::rest(&sk);
            skelett::sample_uncached(&walk, t, &mut pose).unwrap();
            let mut model = vec![Mat4::IDENTITY; sk.len()];
            local_to_model(&sk, &pose, 0, &mut model).unwrap();
            let mut c = [0.0; 2];
            contacts.weights_at(t, &mut c);
            (pose.to_vec(), model, c)
        })
        .collect();
    let (mut local, mut model) = (poses[0].0.clone(), poses[0].1.clone());
    let mut k = 0;
    g.throughput(Throughput::Elements(1));
    g.bench_function("place_feet_robot_slope", |b| {
        b.iter(|| {
            k = (k + 1) & 63;
            let (p, m, c) = &poses[k];
            local.copy_from_slice(p);
            model.copy_from_slice(m);
            black_box(
                place_feet(&feet, &placement, c, &slope, &sk, &mut local, &mut model).unwrap(),
            );
        })
    });
    g.finish();
}

type Solver = fn(&Chain, &Reach, &mut [Transform], &mut [Mat4]) -> Result<IkReport, skelett::Error>;

criterion_group! {
    name = benches;
    config = criterion(30, 2);
    targets = bench
}
criterion_main!(benches);

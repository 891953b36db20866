//! IK solvers (criterion): ns per two-bone solve, per aim, and per joint of an aim chain.
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
use skelett::ik::{aim, aim_chain, two_bone, Aim, TwoBone, TwoBoneChain};
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
    g.finish();
}

criterion_group! {
    name = benches;
    config = criterion(30, 2);
    targets = bench
}
criterion_main!(benches);

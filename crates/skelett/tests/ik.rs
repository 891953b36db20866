//! Inverse kinematics: accuracy, bend side, weights, limits and degenerate input, over random
//! chains (proptest) and on a real rig.

mod common;
use common::{model_of, pos, quat, unit};
use glam::{Quat, Vec3};
use proptest::prelude::*;
use skelett::ik::{aim, aim_chain, two_bone, Aim, Bend, TwoBone, TwoBoneChain};
use skelett::*;

/// A chain root -> a -> b -> c under a root joint: `lengths` of a->b and b->c, random rest
/// rotations, and `parent_scale` on the root (non-uniform allowed).
fn chain_skeleton(lengths: [f32; 2], rotations: [Quat; 3], parent_scale: Vec3) -> Skeleton {
    let joint = |name: &str, parent: Option<usize>, t: Vec3, r: Quat| RawJoint {
        name: name.into(),
        parent,
        rest: Transform::new(t, r, Vec3::ONE),
    };
    RawSkeleton {
        joints: vec![
            RawJoint {
                name: "root".into(),
                parent: None,
                rest: Transform::new(Vec3::new(0.3, 1.0, -0.2), Quat::IDENTITY, parent_scale),
            },
            joint("a", Some(0), Vec3::new(0.1, 0.0, 0.0), rotations[0]),
            joint("b", Some(1), Vec3::new(0.0, lengths[0], 0.0), rotations[1]),
            joint("c", Some(2), Vec3::new(0.0, lengths[1], 0.0), rotations[2]),
        ],
        ..Default::default()
    }
    .build()
    .unwrap()
}

const CHAIN: [JointIndex; 3] = [1, 2, 3];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Reachable targets are met within 1e-4 of the chain's length, on the pole's side.
    #[test]
    fn reachable_targets_are_met_on_the_poles_side(
        l1 in 0.1f32..2.0, l2 in 0.1f32..2.0, rots in (quat(), quat(), quat()),
        dir in unit(), reach in 0.05f32..0.95, pole in unit(),
    ) {
        let s = chain_skeleton([l1, l2], [rots.0, rots.1, rots.2], Vec3::splat(1.3));
        let mut pose = Pose::rest(&s).to_vec();
        let mut model = model_of(&s, &pose);
        let a = pos(&model[1]);
        // Scaled by the root: bone lengths in model space are 1.3x.
        let (m1, m2) = (pos(&model[2]).distance(a), pos(&model[3]).distance(pos(&model[2])));
        let (lo, hi) = ((m1 - m2).abs(), m1 + m2);
        let d = lo + (hi - lo) * reach;
        prop_assume!(d > 1e-3);
        let target = a + dir * d;
        prop_assume!(pole.cross(dir).length() > 0.05);
        let chain = TwoBoneChain::new(&s, CHAIN).unwrap();
        let r = two_bone(&chain, &TwoBone::new(target, pole), &mut pose, &mut model).unwrap();
        prop_assert!(r.reached, "{r:?}");
        // The solver's own model matrices and a fresh local_to_model agree.
        let fresh = model_of(&s, &pose);
        for j in 1..4 {
            prop_assert!(pos(&fresh[j]).distance(pos(&model[j])) < 1e-4 * hi);
        }
        prop_assert!(pos(&fresh[3]).distance(target) < 1e-4 * hi,
            "end {} target {}", pos(&fresh[3]), target);
        // Bones keep their lengths; the mid joint is on the pole's side of the line.
        prop_assert!((pos(&fresh[2]).distance(a) - m1).abs() < 1e-4 * hi);
        let side = (pos(&fresh[2]) - a).reject_from(dir);
        if side.length() > 1e-3 * hi {
            prop_assert!(side.dot(pole.reject_from(dir)) > 0.0, "bends away from the pole");
        }
        for t in &pose {
            prop_assert!(t.is_finite());
        }
    }

    /// Unreachable targets leave the chain straight and pointing at them.
    #[test]
    fn unreachable_targets_straighten_the_chain_toward_them(
        l1 in 0.1f32..2.0, l2 in 0.1f32..2.0, rots in (quat(), quat(), quat()),
        dir in unit(), beyond in 1.01f32..100.0, pole in unit(),
    ) {
        let s = chain_skeleton([l1, l2], [rots.0, rots.1, rots.2], Vec3::ONE);
        let mut pose = Pose::rest(&s).to_vec();
        let mut model = model_of(&s, &pose);
        let a = pos(&model[1]);
        let target = a + dir * (l1 + l2) * beyond;
        let chain = TwoBoneChain::new(&s, CHAIN).unwrap();
        let r = two_bone(&chain, &TwoBone::new(target, pole), &mut pose, &mut model).unwrap();
        prop_assert!(!r.reached);
        let fresh = model_of(&s, &pose);
        let end = pos(&fresh[3]);
        prop_assert!((end.distance(a) - (l1 + l2)).abs() < 1e-4 * (l1 + l2), "not straight");
        prop_assert!((end - a).normalize().dot(dir) > 1.0 - 1e-6, "not toward the target");
    }

    /// Weight 0 is the input bit for bit; weights between move the end continuously from the
    /// input to the target.
    #[test]
    fn weights_blend_continuously(
        rots in (quat(), quat(), quat()), dir in unit(), pole in unit(), w in 0.0f32..0.999,
    ) {
        let s = chain_skeleton([1.0, 0.8], [rots.0, rots.1, rots.2], Vec3::ONE);
        let rest = Pose::rest(&s).to_vec();
        let model0 = model_of(&s, &rest);
        let target = pos(&model0[1]) + dir * 1.2;
        let run = |weight: f32| {
            let mut pose = rest.clone();
            let mut model = model0.clone();
            let mut ik = TwoBone::new(target, pole);
            ik.weight = weight;
            two_bone(&TwoBoneChain::new(&s, CHAIN).unwrap(), &ik, &mut pose, &mut model).unwrap();
            pose
        };
        let zero = run(0.0);
        for (a, b) in zero.iter().zip(&rest) {
            prop_assert_eq!(a.rotation.to_array().map(f32::to_bits), b.rotation.to_array().map(f32::to_bits));
            prop_assert_eq!(a.translation.to_array().map(f32::to_bits), b.translation.to_array().map(f32::to_bits));
        }
        let end = |p: &[Transform]| pos(&model_of(&s, p)[3]);
        let (e0, e1) = (end(&run(w)), end(&run(w + 0.001)));
        // Each correction turns by at most a half turn, so a 0.001 weight step moves the end
        // by at most about 2 * 0.001 * pi * 1.8 = 0.011.
        prop_assert!(e0.distance(e1) < 0.02, "a jump of {} for a weight step of 0.001", e0.distance(e1));
        prop_assert!(end(&run(1.0)).distance(target) < 1e-4 * 1.8, "off by {}", end(&run(1.0)).distance(target));
    }

    /// Degenerate chains and targets never produce NaN: zero-length bones, a target on the
    /// chain's root, a pole along the chain, non-uniform parent scale.
    #[test]
    fn degenerate_input_stays_finite(
        l1 in prop_oneof![Just(0.0f32), 0.0f32..1.0], l2 in prop_oneof![Just(0.0f32), 0.0f32..1.0],
        rots in (quat(), quat(), quat()), scale in (0.2f32..3.0, 0.2f32..3.0, 0.2f32..3.0),
        uniform in any::<bool>(), on_root in any::<bool>(), pole_along in any::<bool>(),
        dir in unit(), soften in prop_oneof![Just(1.0f32), 0.0f32..1.0],
    ) {
        let scale = if uniform { Vec3::splat(scale.0) } else { Vec3::new(scale.0, scale.1, scale.2) };
        let s = chain_skeleton([l1, l2], [rots.0, rots.1, rots.2], scale);
        let mut pose = Pose::rest(&s).to_vec();
        let mut model = model_of(&s, &pose);
        let a = pos(&model[1]);
        let target = if on_root { a } else { a + dir * 0.7 };
        let pole = if pole_along { dir } else { Vec3::Z };
        let mut ik = TwoBone::new(target, pole);
        ik.soften = soften;
        let before = pos(&model[3]).distance(target);
        let r = two_bone(&TwoBoneChain::new(&s, CHAIN).unwrap(), &ik, &mut pose, &mut model).unwrap();
        prop_assert!(r.distance.is_finite());
        for t in &pose {
            prop_assert!(t.is_finite(), "{t:?}");
        }
        let after = pos(&model_of(&s, &pose)[3]).distance(target);
        prop_assert!(after.is_finite());
        // Never further from the target than before (within float noise) where bones keep
        // their lengths (no non-uniform scale) and softening does not hold the end back.
        if uniform && soften == 1.0 {
            prop_assert!(after <= before + 1e-4 * (1.0 + before), "{before} -> {after}");
        }
    }

    /// Aim: the ray from the offset along forward passes through the target; the up axis
    /// leans toward the pole.
    #[test]
    fn aim_puts_the_ray_through_the_target(
        rots in (quat(), quat(), quat()), forward in unit(), up in unit(),
        offset in (-0.2f32..0.2, -0.2f32..0.2, -0.2f32..0.2), dir in unit(), dist in 0.5f32..20.0,
        pole in unit(),
    ) {
        prop_assume!(forward.cross(up).length() > 0.1);
        let s = chain_skeleton([0.5, 0.3], [rots.0, rots.1, rots.2], Vec3::ONE);
        let mut pose = Pose::rest(&s).to_vec();
        let mut model = model_of(&s, &pose);
        let target = pos(&model[3]) + dir * dist;
        let mut look = Aim::new(target, forward);
        look.offset = Vec3::new(offset.0, offset.1, offset.2);
        look.up = up;
        look.pole = pole;
        let r = aim(&s, 3, &look, &mut pose, &mut model).unwrap();
        prop_assert!(r.reached, "{r:?}");
        let m = model_of(&s, &pose)[3];
        let origin = m.transform_point3(look.offset);
        let f = m.transform_vector3(forward).normalize();
        let to = target - origin;
        prop_assert!(to.dot(f) > 0.0, "aims away");
        prop_assert!((to - f * to.dot(f)).length() < 1e-3 * (1.0 + dist), "misses by {}", (to - f * to.dot(f)).length());
        // The roll is about the joint-to-target line (which keeps the ray on the target).
        let line = target - pos(&m);
        let u = m.transform_vector3(up).reject_from(line);
        let p = pole.reject_from(line);
        if u.length() > 0.05 && p.length() > 0.05 {
            prop_assert!(u.normalize().dot(p.normalize()) > 0.999, "up does not lean to the pole");
        }
    }

    /// An angle limit holds; a chain's joints share the turn and the last one finishes it.
    #[test]
    fn aim_limits_hold_and_chains_share_the_turn(
        rots in (quat(), quat(), quat()), dir in unit(), limit in 0.05f32..3.0,
    ) {
        let s = chain_skeleton([0.5, 0.3], [rots.0, rots.1, rots.2], Vec3::ONE);
        let rest = Pose::rest(&s).to_vec();
        let model0 = model_of(&s, &rest);
        let target = pos(&model0[3]) + dir * 3.0;
        let mut look = Aim::new(target, Vec3::Z);
        look.max_angle = limit;
        let (mut pose, mut model) = (rest.clone(), model0.clone());
        aim(&s, 3, &look, &mut pose, &mut model).unwrap();
        let turn = (rest[3].rotation.inverse() * pose[3].rotation).normalize();
        prop_assert!(turn.angle_between(Quat::IDENTITY) <= limit + 1e-3);

        look.max_angle = std::f32::consts::PI;
        let (mut pose, mut model) = (rest.clone(), model0.clone());
        let r = aim_chain(&s, &[1, 2, 3], &[0.3, 0.5, 1.0], &look, &mut pose, &mut model).unwrap();
        prop_assert!(r.reached, "{r:?}");
        let m = model_of(&s, &pose)[3];
        let f = m.transform_vector3(Vec3::Z).normalize();
        prop_assert!(f.dot((target - pos(&m)).normalize()) > 1.0 - 1e-5);
        for j in 1..3 {
            prop_assert!(pose[j].rotation != rest[j].rotation || dir.dot(model0[3].transform_vector3(Vec3::Z).normalize()) > 0.9999);
        }
    }
}

#[test]
fn bad_input_is_a_typed_error_and_leaves_the_pose_untouched() {
    let s = chain_skeleton([1.0, 1.0], [Quat::IDENTITY; 3], Vec3::ONE);
    let rest = Pose::rest(&s).to_vec();
    let mut pose = rest.clone();
    let mut model = model_of(&s, &pose);
    let chain = TwoBoneChain::new(&s, CHAIN).unwrap();
    for target in [
        Vec3::NAN,
        Vec3::INFINITY,
        Vec3::new(0.0, f32::NEG_INFINITY, 0.0),
    ] {
        let e = two_bone(
            &chain,
            &TwoBone::new(target, Vec3::Z),
            &mut pose,
            &mut model,
        )
        .unwrap_err();
        assert!(matches!(e, Error::NotFinite { .. }), "{e}");
        let e = aim(&s, 3, &Aim::new(target, Vec3::Z), &mut pose, &mut model).unwrap_err();
        assert!(matches!(e, Error::NotFinite { .. }), "{e}");
    }
    let e = two_bone(
        &chain,
        &TwoBone::new(Vec3::ONE, Vec3::NAN),
        &mut pose,
        &mut model,
    )
    .unwrap_err();
    assert!(matches!(e, Error::NotFinite { .. }), "{e}");
    assert_eq!(pose, rest);
    // Not parent and child, out of range, unknown names.
    assert!(matches!(
        TwoBoneChain::new(&s, [3, 2, 1]),
        Err(Error::NotAChain {
            ancestor: 3,
            child: 2
        })
    ));
    assert!(matches!(
        TwoBoneChain::new(&s, [1, 2, 9]),
        Err(Error::NoSuchJoint { joint: 9, .. })
    ));
    assert!(
        matches!(TwoBoneChain::by_name(&s, ["a", "b", "wrist"]), Err(Error::NoSuchJointName(n)) if n == "wrist")
    );
    let e = aim_chain(
        &s,
        &[3, 1],
        &[1.0, 1.0],
        &Aim::new(Vec3::ONE, Vec3::Z),
        &mut pose,
        &mut model,
    )
    .unwrap_err();
    assert!(matches!(e, Error::NotAChain { .. }), "{e}");
    let e = aim_chain(
        &s,
        &[1, 3],
        &[1.0],
        &Aim::new(Vec3::ONE, Vec3::Z),
        &mut pose,
        &mut model,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Length { .. }), "{e}");
    assert_eq!(pose, rest);
    // Short buffers.
    let e = two_bone(
        &chain,
        &TwoBone::new(Vec3::ONE, Vec3::Z),
        &mut pose[..2],
        &mut model,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Length { .. }), "{e}");
}

/// A hinge instead of a pole: the knee goes where the hinge says.
#[test]
fn hinge_axis_decides_the_bend() {
    let down = Quat::from_rotation_x(std::f32::consts::PI);
    let s = chain_skeleton(
        [1.0, 1.0],
        [down, Quat::IDENTITY, Quat::IDENTITY],
        Vec3::ONE,
    );
    // The chain points straight down (-Y) from joint a; with a hinge along +X in model space the knee
    // goes to +Z, along -X to -Z.
    for (hinge, side) in [(Vec3::X, 1.0), (-Vec3::X, -1.0)] {
        let mut pose = Pose::rest(&s).to_vec();
        let mut model = model_of(&s, &pose);
        let a = pos(&model[1]);
        let target = a + Vec3::new(0.0, -1.5, 0.0);
        // The hinge is given in the mid joint's local space.
        let local_hinge = model[2].inverse().transform_vector3(hinge).normalize();
        let mut ik = TwoBone::new(target, Vec3::ZERO);
        ik.bend = Bend::Hinge(local_hinge);
        let r = two_bone(
            &TwoBoneChain::new(&s, CHAIN).unwrap(),
            &ik,
            &mut pose,
            &mut model,
        )
        .unwrap();
        assert!(r.reached);
        assert!(pos(&model_of(&s, &pose)[2]).z * side > 0.1);
    }
}

/// KayKit's medium rig (`../shared/data/gltf`), standing in its idle: each foot brought up and
/// forward by a fifth of the leg, knees bending forward (+Z, where glTF characters face),
/// every joint but the hip and knee as it was.
#[test]
fn a_real_leg_reaches_and_bends_forward() {
    let asset =
        skelett_io::load(skelett_testdata::data("gltf/KayKit_Rig_Medium_General.glb")).unwrap();
    let (skeleton, clip) = (&*asset.skeleton, asset.clip("Rig_Medium|Idle_A").unwrap());
    let mut pose = Pose::rest(skeleton).to_vec();
    sample_uncached(clip, clip.start() + 0.3 * clip.duration(), &mut pose).unwrap();
    let mut model = model_of(skeleton, &pose);
    for leg in [
        ["upperleg.l", "lowerleg.l", "foot.l"],
        ["upperleg.r", "lowerleg.r", "foot.r"],
    ] {
        let chain = TwoBoneChain::by_name(skeleton, leg).unwrap();
        let [h, k, f] = chain.joints().map(|j| j as usize);
        let (hip, knee, foot) = (pos(&model[h]), pos(&model[k]), pos(&model[f]));
        let length = hip.distance(knee) + knee.distance(foot);
        let target = foot + Vec3::new(0.0, 0.2, 0.2) * length;
        let before = pose.clone();
        let r = two_bone(
            &chain,
            &TwoBone::new(target, Vec3::Z),
            &mut pose,
            &mut model,
        )
        .unwrap();
        assert!(r.reached, "{leg:?}: {r:?}");
        let fresh = model_of(skeleton, &pose);
        assert!(pos(&fresh[f]).distance(target) < 1e-4 * length);
        let bend = (pos(&fresh[k]) - hip).reject_from(target - hip);
        assert!(
            bend.z > 0.05 * length,
            "{leg:?}: the knee bends {bend}, not forward"
        );
        for j in 0..skeleton.len() {
            if j != h && j != k {
                assert_eq!(pose[j], before[j], "joint {j} changed");
            }
        }
        model = fresh;
    }
}

/// Soften holds the end back near full reach; twist turns the bend plane about the
/// start-to-target line by its angle; an end rotation is met at full weight; a mirrored
/// (negatively scaled) parent still gives an exact solve.
#[test]
fn soften_twist_end_rotation_and_mirrored_parents() {
    let s = chain_skeleton([1.0, 1.0], [Quat::IDENTITY; 3], Vec3::ONE);
    let rest = Pose::rest(&s).to_vec();
    let model0 = model_of(&s, &rest);
    let chain = TwoBoneChain::new(&s, CHAIN).unwrap();
    let a = pos(&model0[1]);
    let solve = |ik: &TwoBone| {
        let (mut pose, mut model) = (rest.clone(), model0.clone());
        let r = two_bone(&chain, ik, &mut pose, &mut model).unwrap();
        (r, model_of(&s, &pose))
    };
    // Soften 0.8: a target at 1.95 of a 2.0 chain is not reached; the end stops short, on
    // the line, beyond the softening start (1.6).
    let target = a + Vec3::new(1.95, 0.0, 0.0);
    let mut ik = TwoBone::new(target, Vec3::Z);
    ik.soften = 0.8;
    let (r, m) = solve(&ik);
    let d = pos(&m[3]).distance(a);
    assert!(!r.reached && d > 1.6 && d < 1.95, "{r:?}, end at {d}");
    assert!((pos(&m[3]) - a).normalize().dot(Vec3::X) > 1.0 - 1e-6);
    // Twist by 90 degrees about +X turns the knee from +Z to where Rx(90°) takes +Z.
    let target = a + Vec3::new(1.5, 0.0, 0.0);
    let mut ik = TwoBone::new(target, Vec3::Z);
    ik.twist = std::f32::consts::FRAC_PI_2;
    let (r, m) = solve(&ik);
    assert!(r.reached);
    let knee = (pos(&m[2]) - a).reject_from(Vec3::X).normalize();
    assert!(
        knee.dot(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2) * Vec3::Z) > 0.9999,
        "{knee}"
    );
    // End rotation.
    let want = Quat::from_euler(glam::EulerRot::XYZ, 0.3, -0.7, 1.1);
    ik.twist = 0.0;
    ik.end_rotation = Some(want);
    let (r, m) = solve(&ik);
    assert!(r.reached);
    let (_, got, _) = m[3].to_scale_rotation_translation();
    assert!(got.angle_between(want) < 1e-4, "{got} vs {want}");
    // A mirrored parent (scale -1 on X): reached exactly, on the pole's side.
    let s = chain_skeleton(
        [1.0, 0.7],
        [Quat::from_rotation_z(0.4), Quat::IDENTITY, Quat::IDENTITY],
        Vec3::new(-1.0, 1.0, 1.0),
    );
    let mut pose = Pose::rest(&s).to_vec();
    let mut model = model_of(&s, &pose);
    let a = pos(&model[1]);
    let target = a + Vec3::new(0.5, -1.2, 0.3);
    let r = two_bone(
        &TwoBoneChain::new(&s, CHAIN).unwrap(),
        &TwoBone::new(target, Vec3::Z),
        &mut pose,
        &mut model,
    )
    .unwrap();
    assert!(r.reached);
    let m = model_of(&s, &pose);
    assert!(
        pos(&m[3]).distance(target) < 1e-4 * 1.7,
        "{} vs {target}",
        pos(&m[3])
    );
    assert!((pos(&m[2]) - a).reject_from(target - a).z > 0.0);
}

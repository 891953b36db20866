//! Chains of any length (FABRIK and CCD) with joint limits, and the grounds foot placement
//! casts rays against: random chains, limits and targets (proptest), truths computed here
//! by other means (a straight line, the limit's own definition, brute force over triangles).

mod common;
use common::{model_of, pos, quat, unit};
use glam::{Mat3, Mat4, Quat, Vec3};
use proptest::prelude::*;
use skelett::ik::{ccd, fabrik, Chain, Ground, Heightfield, Limit, Plane, Reach, TriangleMesh};
use skelett::*;

/// A chain of `bones.len() + 1` joints under a root: each bone `bones[i]` long along its
/// parent's +Y, with a random rest rotation.
fn chain_skeleton(bones: &[f32], rests: &[Quat]) -> Skeleton {
    let mut joints = vec![RawJoint {
        name: "root".into(),
        parent: None,
        rest: Transform::new(Vec3::new(0.2, 1.0, -0.3), Quat::IDENTITY, Vec3::ONE),
    }];
    for i in 0..=bones.len() {
        let along = if i == 0 { 0.1 } else { bones[i - 1] };
        joints.push(RawJoint {
            name: format!("j{i}"),
            parent: Some(i),
            rest: Transform::new(Vec3::new(0.0, along, 0.0), rests[i], Vec3::ONE),
        });
    }
    RawSkeleton {
        joints,
        ..Default::default()
    }
    .build()
    .unwrap()
}

/// A limit: free, a hinge or a cone, with random axes and ranges.
fn limit() -> impl Strategy<Value = Limit> {
    prop_oneof![
        Just(Limit::Free),
        (unit(), -3.0f32..3.0, 0.0f32..3.0).prop_map(|(axis, min, span)| Limit::Hinge {
            axis,
            min,
            max: (min + span).min(std::f32::consts::PI),
        }),
        (unit(), 0.0f32..3.0, -3.0f32..3.0, 0.0f32..3.0).prop_map(|(axis, swing, lo, span)| {
            Limit::Cone {
                axis,
                swing,
                twist_min: lo,
                twist_max: (lo + span).min(std::f32::consts::PI),
            }
        }),
    ]
}

/// Whether `rel` (a rotation relative to rest) is inside `limit`, from the definitions and
/// glam's axis-angle, not from `Limit::clamp`.
fn inside(limit: &Limit, rel: Quat, tol: f32) -> bool {
    let wrap = |a: f32| {
        let a = a.rem_euclid(std::f32::consts::TAU);
        if a > std::f32::consts::PI {
            a - std::f32::consts::TAU
        } else {
            a
        }
    };
    // Angles are circular: π and -π are the same turn.
    let in_range = |a: f32, lo: f32, hi: f32| {
        [-std::f32::consts::TAU, 0.0, std::f32::consts::TAU]
            .iter()
            .any(|k| a + k >= lo - tol && a + k <= hi + tol)
    };
    match *limit {
        Limit::Free => true,
        Limit::Hinge { axis, min, max } => {
            let axis = axis.normalize();
            let (a, angle) = rel.to_axis_angle();
            if angle.abs() < tol {
                return in_range(0.0, min, max);
            }
            // The rotation must be about the hinge axis (either direction).
            let along = a.dot(axis);
            (1.0 - along.abs()) < 1e-3 && in_range(wrap(angle * along.signum()), min, max)
        }
        Limit::Cone {
            axis,
            swing,
            twist_min,
            twist_max,
        } => {
            let axis = axis.normalize();
            // Swing: how far the axis is carried from itself.
            let carried = rel * axis;
            let swung = carried.dot(axis).clamp(-1.0, 1.0).acos();
            // Twist: rel with the swing undone is a turn about the axis.
            let undo = Quat::from_rotation_arc(carried, axis);
            let twist = undo * rel;
            let (a, angle) = twist.to_axis_angle();
            let t = if angle.abs() < 1e-5 {
                0.0
            } else {
                wrap(angle * a.dot(axis).signum())
            };
            swung <= swing + tol && in_range(t, twist_min, twist_max)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Reachable targets (a pose of the same chain) are met by FABRIK and CCD without
    /// limits; unreachable ones leave the chain straight toward them.
    #[test]
    fn free_chains_reach_or_straighten(
        bones in prop::collection::vec(0.05f32..1.0, 2..8),
        rests in prop::collection::vec(quat(), 9),
        goal in prop::collection::vec(quat(), 9),
        far in unit(),
        use_ccd in any::<bool>(),
    ) {
        let sk = chain_skeleton(&bones, &rests);
        let joints: Vec<JointIndex> = (1..=bones.len() as JointIndex + 1).collect();
        let chain = Chain::new(&sk, &joints).unwrap();
        let solve = if use_ccd { ccd } else { fabrik };
        let total: f32 = bones.iter().sum();
        // A target the chain can reach: where its end is in another pose.
        let mut other = Pose::rest(&sk);
        for (i, &j) in joints.iter().enumerate() {
            other[j as usize].rotation = goal[i];
        }
        let target = pos(&model_of(&sk, &other)[*joints.last().unwrap() as usize]);
        // Away from the edges of the reachable shell (fully stretched, or folded onto the
        // longest bone), where both methods converge only slowly.
        let root_at = pos(&model_of(&sk, &other)[joints[0] as usize]);
        let longest = bones.iter().cloned().fold(0.0, f32::max);
        let inner = (2.0 * longest - total).max(0.0);
        let d = root_at.distance(target);
        prop_assume!(d > inner + 0.05 * total && d < 0.95 * total);
        let mut pose = Pose::rest(&sk);
        let mut model = model_of(&sk, &pose);
        let mut reach = Reach::new(target);
        reach.iterations = 200;
        let report = solve(&chain, &reach, &mut pose, &mut model).unwrap();
        let fresh = model_of(&sk, &pose);
        let end = pos(&fresh[*joints.last().unwrap() as usize]);
        prop_assert!(fresh.iter().zip(&model).all(|(a, b)| a.abs_diff_eq(*b, 1e-4 * total.max(1.0))),
            "the solver's model matrices are those of the pose it wrote");
        // FABRIK gets within 1 % of the chain's length. CCD may crawl (a short first bone
        // and a target behind the chain: 0.086 to 0.080 in 16 iterations, 0.006 in 1000),
        // but no step of it moves the end away from the target: the distance never grows
        // with more iterations.
        if use_ccd {
            let mut last = f32::INFINITY;
            for iterations in [0, 1, 2, 4, 8, 16] {
                let mut pose = Pose::rest(&sk);
                let mut model = model_of(&sk, &pose);
                let r = ccd(&chain, &Reach { iterations, ..Reach::new(target) }, &mut pose, &mut model).unwrap();
                prop_assert!(r.distance <= last + 1e-5 * total, "{} after {}", r.distance, last);
                last = r.distance;
            }
        } else {
            prop_assert!(end.distance(target) <= 0.01 * total, "{} of {}", end.distance(target), total);
        }
        // The report is about the solver's own matrices, which match the pose to rounding.
        prop_assert!((report.distance - end.distance(target)).abs() <= 1e-4 * total);
        prop_assert!(!report.reached || end.distance(target) <= 2e-4 * total);
        // Unreachable: twice the chain's length away; the chain lies along the line.
        let root = pos(&fresh[joints[0] as usize]);
        let target = root + far * 2.0 * total;
        let mut pose = Pose::rest(&sk);
        let mut model = model_of(&sk, &pose);
        let report = solve(&chain, &reach_to(target), &mut pose, &mut model).unwrap();
        prop_assert!(!report.reached);
        let fresh = model_of(&sk, &pose);
        for &j in &joints {
            let p = pos(&fresh[j as usize]) - root;
            let off_line = (p - far * p.dot(far)).length();
            prop_assert!(off_line <= 2e-3 * total, "joint {j} is {off_line} off the line");
            prop_assert!(p.dot(far) >= -1e-4, "joint {j} behind the root");
        }
    }

    /// With limits, every joint is inside its limit after every solve, whatever the target
    /// and the input pose (even one outside the limits); nothing becomes NaN.
    #[test]
    fn limits_hold_after_every_solve(
        bones in prop::collection::vec(0.0f32..1.0, 1..6),
        rests in prop::collection::vec(quat(), 7),
        input in prop::collection::vec(quat(), 7),
        limits in prop::collection::vec(limit(), 7),
        target in (-3.0f32..3.0, -3.0f32..3.0, -3.0f32..3.0),
        iterations in 0u32..12,
        weight in 0.01f32..1.0,
        use_ccd in any::<bool>(),
    ) {
        let sk = chain_skeleton(&bones, &rests);
        let joints: Vec<JointIndex> = (1..=bones.len() as JointIndex + 1).collect();
        let mut chain = Chain::new(&sk, &joints).unwrap();
        for (i, limit) in limits.iter().take(joints.len()).enumerate() {
            chain.set_limit(i, *limit).unwrap();
        }
        let mut pose = Pose::rest(&sk);
        for (i, &j) in joints.iter().enumerate() {
            pose[j as usize].rotation = input[i];
        }
        let mut model = model_of(&sk, &pose);
        let mut reach = Reach::new(Vec3::from(target));
        reach.iterations = iterations;
        reach.weight = weight;
        let solve = if use_ccd { ccd } else { fabrik };
        let report = solve(&chain, &reach, &mut pose, &mut model).unwrap();
        prop_assert!(report.distance.is_finite());
        for (i, &j) in joints.iter().enumerate() {
            let q = pose[j as usize].rotation;
            prop_assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-4);
            let rel = rests[i].conjugate() * q;
            prop_assert!(inside(&limits[i], rel, 2e-3), "joint {i}: {:?} outside {:?}", rel, limits[i]);
        }
        let fresh = model_of(&sk, &pose);
        prop_assert!(fresh.iter().zip(&model).all(|(a, b)| a.abs_diff_eq(*b, 1e-3)));
    }

    /// A heightfield answers as the plane its heights were taken from, for rays from any
    /// direction that meet it inside the grid; a mesh's hierarchy answers as brute force
    /// over its triangles (solved here by Cramer's rule).
    #[test]
    fn grounds_answer_as_their_geometry(
        tilt in (-0.5f32..0.5, -0.5f32..0.5),
        origin in (-1.0f32..11.0, 0.5f32..5.0, -1.0f32..11.0),
        dir in unit(),
        tris in prop::collection::vec(((-5.0f32..5.0, -1.0f32..1.0, -5.0f32..5.0), unit(), 0.1f32..2.0), 1..60),
    ) {
        let (gx, gz) = tilt;
        let height = |x: f32, z: f32| 0.3 + gx * x + gz * z;
        let (cols, rows, cell) = (11usize, 9usize, 1.0f32);
        let heights = (0..rows).flat_map(|r| (0..cols).map(move |c| (c, r)))
            .map(|(c, r)| height(c as f32 * cell, r as f32 * cell)).collect();
        let field = Heightfield::new(Vec3::ZERO, cell, cols, rows, heights).unwrap();
        let plane = Plane::new(Vec3::new(0.0, 0.3, 0.0), Vec3::new(-gx, 1.0, -gz)).unwrap();
        let o = Vec3::from(origin);
        let o = Vec3::new(o.x, height(o.x, o.z) + o.y, o.z);
        let want = plane.cast(o, dir, 50.0);
        let got = field.cast(o, dir, 50.0);
        let inside = |p: Vec3| p.x >= 0.0 && p.x <= (cols - 1) as f32 && p.z >= 0.0 && p.z <= (rows - 1) as f32;
        match want {
            Some(w) if inside(w.point) && w.point.x > 1e-3 && w.point.z > 1e-3
                && w.point.x < (cols - 1) as f32 - 1e-3 && w.point.z < (rows - 1) as f32 - 1e-3 => {
                let g = got.expect("the heightfield is hit where its plane is");
                prop_assert!(g.point.distance(w.point) < 1e-3, "{:?} {:?}", g.point, w.point);
                prop_assert!(g.normal.dot(w.normal) > 0.9999);
            }
            Some(w) if inside(w.point) => {}
            _ => prop_assert!(got.is_none() || !inside(got.unwrap().point) || want.is_some()),
        }
        // Triangle mesh against brute force.
        let mut positions = Vec::new();
        for (c, n, size) in &tris {
            let c = Vec3::from(*c);
            let (a, b) = n.any_orthonormal_pair();
            positions.extend([c + a * size, c + b * size, c - (a + b) * size]);
        }
        let indices: Vec<u32> = (0..positions.len() as u32).collect();
        let mesh = TriangleMesh::new(&positions, &indices).unwrap();
        let o = Vec3::new(origin.0 - 5.0, origin.1, origin.2 - 5.0);
        // Brute force with the triangles shrunk (strict) and grown (loose) by 1e-4 in
        // barycentric terms: grazing an edge may go either way.
        let brute = |margin: f32| {
            let mut best: Option<(f32, Vec3)> = None;
            for t in positions.chunks_exact(3) {
                // o + s d = t0 + u (t1 - t0) + v (t2 - t0)
                let m = Mat3::from_cols(-dir, t[1] - t[0], t[2] - t[0]);
                if m.determinant().abs() < 1e-9 {
                    continue;
                }
                let x = m.inverse() * (o - t[0]);
                let (s, u, v) = (x.x, x.y, x.z);
                if (0.0..=50.0).contains(&s) && u >= margin && v >= margin && u + v <= 1.0 - margin
                    && best.is_none_or(|b| s < b.0)
                {
                    best = Some((s, (t[1] - t[0]).cross(t[2] - t[0]).normalize()));
                }
            }
            best
        };
        let (strict, loose) = (brute(1e-4), brute(-1e-4));
        let got = mesh.cast(o, dir, 50.0);
        match got {
            None => prop_assert!(strict.is_none(), "missed {:?}", strict),
            Some(g) => {
                let (lo, _) = loose.expect("a hit where brute force finds none");
                let s = (g.point - o).dot(dir);
                prop_assert!((g.point - (o + dir * s)).length() < 1e-3);
                prop_assert!(s >= lo - 1e-3, "{} before the nearest {}", s, lo);
                if let Some((hi, n2)) = strict {
                    prop_assert!(s <= hi + 1e-3, "{} after the nearest {}", s, hi);
                    prop_assert!(g.normal.dot(n2).abs() > 0.999 || (s - lo).abs() < 1e-3);
                }
                prop_assert!(g.normal.dot(dir) <= 1e-6, "the normal faces the ray");
            }
        }
    }
}

fn reach_to(target: Vec3) -> Reach {
    Reach::new(target)
}

/// A ground that answers garbage.
struct Broken(Vec3, Vec3);

impl Ground for Broken {
    fn cast(&self, _: Vec3, _: Vec3, _: f32) -> Option<skelett::ik::GroundHit> {
        Some(skelett::ik::GroundHit {
            point: self.0,
            normal: self.1,
        })
    }
}

#[test]
fn bad_chains_limits_and_grounds_are_typed_errors_and_leave_the_pose_untouched() {
    use skelett::ik::{place_feet, Feet, Leg, Placement, TwoBoneChain};
    let sk = chain_skeleton(&[0.5, 0.5, 0.5], &[Quat::IDENTITY; 4]);
    // Not parent and child: j2 is not below j3.
    assert!(matches!(
        Chain::new(&sk, &[1, 3, 2]),
        Err(Error::NotAChain { .. })
    ));
    assert!(matches!(
        Chain::new(&sk, &[1]),
        Err(Error::ChainTooShort(1))
    ));
    assert!(matches!(
        Chain::new(&sk, &[1, 99]),
        Err(Error::NoSuchJoint { .. })
    ));
    assert!(matches!(
        Chain::by_name(&sk, &["j0", "elbow"]),
        Err(Error::NoSuchJointName(n)) if n == "elbow"
    ));
    let chain = Chain::between(&sk, 1, 4).unwrap();
    assert_eq!(chain.joints(), &[1, 2, 3, 4]);
    for bad in [
        Limit::Hinge {
            axis: Vec3::ZERO,
            min: 0.0,
            max: 1.0,
        },
        Limit::Hinge {
            axis: Vec3::X,
            min: 1.0,
            max: 0.0,
        },
        Limit::Hinge {
            axis: Vec3::X,
            min: f32::NAN,
            max: 0.0,
        },
        Limit::Cone {
            axis: Vec3::Y,
            swing: -0.1,
            twist_min: 0.0,
            twist_max: 0.0,
        },
        Limit::Cone {
            axis: Vec3::Y,
            swing: 1.0,
            twist_min: -4.0,
            twist_max: 0.0,
        },
    ] {
        assert!(
            matches!(
                chain.clone().with_limit(1, bad),
                Err(Error::BadLimit { joint: 2, .. })
            ),
            "{bad:?}"
        );
    }
    assert!(matches!(
        chain.clone().with_limit(9, Limit::Free),
        Err(Error::BadLimit { .. })
    ));
    // NaN and infinite requests: typed errors, nothing written.
    let pose = Pose::rest(&sk);
    let model = model_of(&sk, &pose);
    for reach in [
        Reach::new(Vec3::new(f32::NAN, 0.0, 0.0)),
        Reach {
            weight: f32::INFINITY,
            ..Reach::new(Vec3::ONE)
        },
        Reach {
            tolerance: f32::NAN,
            ..Reach::new(Vec3::ONE)
        },
    ] {
        for solve in [fabrik, ccd] {
            let (mut p, mut m) = (pose.clone(), model.clone());
            assert!(matches!(
                solve(&chain, &reach, &mut p, &mut m),
                Err(Error::NotFinite { .. })
            ));
            assert_eq!(p.to_vec(), pose.to_vec());
            assert_eq!(m, model);
        }
    }
    // Too short a pose.
    let (mut p, mut m) = (pose.clone(), model.clone());
    assert!(matches!(
        fabrik(&chain, &Reach::new(Vec3::ONE), &mut p[..3], &mut m),
        Err(Error::Length { .. })
    ));
    // Weight 0: bit for bit.
    let (mut p, mut m) = (pose.clone(), model.clone());
    fabrik(
        &chain,
        &Reach {
            weight: 0.0,
            ..Reach::new(Vec3::ONE)
        },
        &mut p,
        &mut m,
    )
    .unwrap();
    assert_eq!(p.to_vec(), pose.to_vec());
    // Grounds: malformed ones refused when built, garbage answers refused when asked.
    assert!(matches!(
        Plane::new(Vec3::ZERO, Vec3::ZERO),
        Err(Error::BadGround { .. })
    ));
    assert!(matches!(
        Heightfield::new(Vec3::ZERO, 1.0, 2, 2, vec![0.0; 3]),
        Err(Error::BadGround { .. })
    ));
    assert!(matches!(
        Heightfield::new(Vec3::ZERO, 0.0, 2, 2, vec![0.0; 4]),
        Err(Error::BadGround { .. })
    ));
    assert!(matches!(
        TriangleMesh::new(&[Vec3::ZERO], &[0, 0, 1]),
        Err(Error::BadGround { .. })
    ));
    assert!(matches!(
        TriangleMesh::new(&[Vec3::NAN; 3], &[0, 1, 2]),
        Err(Error::BadGround { .. })
    ));
    // A leg: j1 hip, j2 knee, j3 ankle (the chain hangs along +Y; up is -Y here).
    let leg = Leg::from_rest(&sk, TwoBoneChain::new(&sk, [1, 2, 3]).unwrap(), 3, -Vec3::Y).unwrap();
    let feet = Feet::new(&sk, vec![leg], Some(0), -Vec3::Y).unwrap();
    assert!(matches!(
        Feet::new(&sk, vec![leg], Some(4), -Vec3::Y),
        Err(Error::NotAChain { .. })
    ));
    assert!(matches!(
        Feet::new(&sk, vec![leg; 9], None, -Vec3::Y),
        Err(Error::TooManyLegs(9))
    ));
    for (ground, what) in [
        (Broken(Vec3::NAN, Vec3::Y), "NaN point"),
        (Broken(Vec3::ZERO, Vec3::ZERO), "zero normal"),
        (Broken(Vec3::ZERO, Vec3::INFINITY), "infinite normal"),
    ] {
        let (mut p, mut m) = (pose.clone(), model.clone());
        let r = place_feet(
            &feet,
            &Placement::new(Mat4::IDENTITY, 1.0),
            &[1.0],
            &ground,
            &sk,
            &mut p,
            &mut m,
        );
        assert!(matches!(r, Err(Error::BadGround { .. })), "{what}: {r:?}");
        assert_eq!(p.to_vec(), pose.to_vec(), "{what}");
        assert_eq!(m, model, "{what}");
    }
    let plane = Plane::new(Vec3::ZERO, Vec3::Y).unwrap();
    let (mut p, mut m) = (pose.clone(), model.clone());
    assert!(matches!(
        place_feet(
            &feet,
            &Placement::new(Mat4::IDENTITY, 1.0),
            &[],
            &plane,
            &sk,
            &mut p,
            &mut m
        ),
        Err(Error::Length { .. })
    ));
    assert!(matches!(
        place_feet(
            &feet,
            &Placement::new(Mat4::NAN, 1.0),
            &[1.0],
            &plane,
            &sk,
            &mut p,
            &mut m
        ),
        Err(Error::NotFinite { .. })
    ));
    assert_eq!(p.to_vec(), pose.to_vec());
}

//! Retargeting: identity, renamed copies, a synthetic T-pose/A-pose pair with closed-form
//! answers, binding by name, bad maps, and real captures (CMU BVH) onto real characters
//! (glTF and FBX) measured by the angle between corresponding limb directions.

use std::sync::Arc;

use glam::{Mat4, Quat, Vec3, Vec4};
use skelett::animator::Animator;
use skelett::retarget::{BakeOptions, JointMap, Options, Retargeter};
use skelett::*;

fn load(rel: &str) -> skelett_io::Asset {
    skelett_io::load(skelett_testdata::data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Scene-space joint positions of `pose`.
fn world(sk: &Skeleton, pose: &[Transform]) -> Vec<Vec3> {
    let mut m = vec![Mat4::IDENTITY; sk.len()];
    local_to_model(sk, pose, 0, &mut m).unwrap();
    m.iter()
        .map(|m| sk.root_transform().transform_point3(m.w_axis.truncate()))
        .collect()
}

/// Scene-space +Y axis of every joint of `pose`.
fn y_axes(sk: &Skeleton, pose: &[Transform]) -> Vec<Vec3> {
    let mut m = vec![Mat4::IDENTITY; sk.len()];
    local_to_model(sk, pose, 0, &mut m).unwrap();
    m.iter()
        .map(|m| (sk.root_transform() * *m).y_axis.truncate())
        .collect()
}

fn sample_at(clip: &Clip, sk: &Skeleton, t: f32) -> Vec<Transform> {
    let mut pose = Pose::rest(sk);
    sample(clip, t, &mut SamplingCache::for_clip(clip), &mut pose).unwrap();
    pose.0
}

fn times(clip: &Clip, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| clip.start() + clip.duration() * i as f32 / (n - 1) as f32)
        .collect()
}

#[test]
fn identity_reproduces_the_clip() {
    for (file, clip_name) in [
        ("bvh/01_01.bvh", "01_01"),
        ("gltf/robot_quaternius.glb", "Robot_Walking"),
        ("gltf/Fox.glb", "Run"),
    ] {
        let a = load(file);
        let clip = a.clip(clip_name).unwrap();
        let sk = &a.skeleton;
        let map = JointMap::auto(sk, sk).unwrap();
        assert_eq!(
            map.pairs.len(),
            sk.len(),
            "{file}: every joint maps onto itself"
        );
        for p in &map.pairs {
            assert_eq!(p.source, p.target, "{file}");
        }
        let r = Retargeter::new(sk, sk, &map, &Options::default()).unwrap();
        assert!((r.root_scale() - 1.0).abs() < 1e-6);
        let baked = r.bake(clip, sk, sk, &BakeOptions::default()).unwrap();
        assert!(baked.fits(sk));
        let mut scratch = r.scratch();
        let mut out = sk.rest_pose().to_vec();
        for t in times(clip, 37) {
            let src = sample_at(clip, sk, t);
            r.retarget(&src, &mut out, &mut scratch).unwrap();
            let via_bake = sample_at(&baked, sk, t);
            let (w0, w1, w2) = (world(sk, &src), world(sk, &out), world(sk, &via_bake));
            let size = 1.0 + w0.iter().map(|p| p.length()).fold(0.0, f32::max);
            for j in 0..sk.len() {
                assert!(
                    (w0[j] - w1[j]).length() < 1e-5 * size,
                    "{file} t={t} joint {}: {} vs {}",
                    sk.name(j as u16),
                    w0[j],
                    w1[j]
                );
                assert!(
                    (w0[j] - w2[j]).length() < 1e-4 * size,
                    "{file} baked t={t} joint {}",
                    sk.name(j as u16)
                );
                let (a, b) = (Vec4::from(out[j].rotation), Vec4::from(src[j].rotation));
                let d = (a - b).length().min((a + b).length());
                assert!(
                    d < 1e-5,
                    "{file} t={t} joint {}: rotation off by {d}",
                    sk.name(j as u16)
                );
            }
        }
    }
}

/// Corresponding limbs, named per skeleton by hand (not by the code under test): a limb is
/// the direction from its first joint to its second, in scene space.
fn limbs(file: &str) -> Vec<(&'static str, &'static str, &'static str)> {
    match file {
        "bvh" => vec![
            ("upper arm L", "LeftArm", "LeftForeArm"),
            ("forearm L", "LeftForeArm", "LeftHand"),
            ("upper arm R", "RightArm", "RightForeArm"),
            ("arm L", "LeftArm", "LeftHand"),
            ("arm R", "RightArm", "RightHand"),
            ("forearm R", "RightForeArm", "RightHand"),
            ("thigh L", "LeftUpLeg", "LeftLeg"),
            ("shin L", "LeftLeg", "LeftFoot"),
            ("thigh R", "RightUpLeg", "RightLeg"),
            ("shin R", "RightLeg", "RightFoot"),
            ("spine", "Hips", "Spine1"),
            ("neck", "Neck", "Head"),
        ],
        "robot" => vec![
            ("upper arm L", "UpperArm.L", "LowerArm.L"),
            ("upper arm R", "UpperArm.R", "LowerArm.R"),
            ("thigh L", "UpperLeg.L", "LowerLeg.L"),
            ("shin L", "LowerLeg.L", "Foot.L"),
            ("thigh R", "UpperLeg.R", "LowerLeg.R"),
            ("shin R", "LowerLeg.R", "Foot.R"),
            ("spine", "Body", "Torso"),
            ("neck", "Neck", "Head"),
        ],
        "kaykit" => vec![
            ("upper arm L", "upperarm.l", "lowerarm.l"),
            ("forearm L", "lowerarm.l", "wrist.l"),
            ("upper arm R", "upperarm.r", "lowerarm.r"),
            ("forearm R", "lowerarm.r", "wrist.r"),
            ("thigh L", "upperleg.l", "lowerleg.l"),
            ("shin L", "lowerleg.l", "foot.l"),
            ("thigh R", "upperleg.r", "lowerleg.r"),
            ("shin R", "lowerleg.r", "foot.r"),
            ("spine", "hips", "chest"),
        ],
        // greenman's legs are single bones without a joint at the foot: their direction is
        // the bone's +Y axis (Blender's bone axis), which points down the leg at rest.
        "greenman" => vec![("thigh L", "leg_L", "+Y"), ("thigh R", "leg_R", "+Y")],
        "barbarian" => vec![
            // One bone from shoulder to hand: the whole arm.
            ("arm L", "bras gauche", "main gauche"),
            ("arm R", "bras droit", "main droite"),
            ("thigh L", "jambe gauche", "pied gauche"),
            ("thigh R", "jambe droite", "pied droit"),
            ("spine", "bassin", "torse"),
        ],
        _ => unreachable!(),
    }
}

struct PairResult {
    mapped: usize,
    /// Over every limb but the spine.
    median_deg: f32,
    worst_deg: f32,
    worst_limb: String,
    /// The spine's median and worst.
    spine: (f32, f32),
}

/// Retargets `clip` of `src` onto `dst` and measures the angle between corresponding limbs.
fn measure(
    src: &skelett_io::Asset,
    clip: &Clip,
    dst: &skelett_io::Asset,
    dst_kind: &str,
) -> PairResult {
    let map = JointMap::auto(&src.skeleton, &dst.skeleton).unwrap();
    let options = Options {
        bone_axis: (dst_kind == "greenman").then_some(Vec3::Y),
        ..Default::default()
    };
    let r = Retargeter::new(&src.skeleton, &dst.skeleton, &map, &options).unwrap();
    let baked = r
        .bake(clip, &src.skeleton, &dst.skeleton, &BakeOptions::default())
        .unwrap();
    let ls: Vec<_> = limbs("bvh");
    let lt = limbs(dst_kind);
    let mut angles = Vec::new();
    let mut worst = (0.0f32, String::new());
    let mut per_limb: std::collections::BTreeMap<&str, Vec<f32>> = Default::default();
    for t in times(clip, 400) {
        let ws = world(&src.skeleton, &sample_at(clip, &src.skeleton, t));
        let pose_t = sample_at(&baked, &dst.skeleton, t);
        let wt = world(&dst.skeleton, &pose_t);
        let axes = y_axes(&dst.skeleton, &pose_t);
        if dst_kind == "robot" {
            // The robot's feet are controls at the root: its shins must still point at
            // them as they do at rest (their meshes hang on the shin's bone axis).
            let rest = world(&dst.skeleton, dst.skeleton.rest_pose());
            let rest_axes = y_axes(&dst.skeleton, dst.skeleton.rest_pose());
            for (shin, foot) in [("LowerLeg.L", "Foot.L"), ("LowerLeg.R", "Foot.R")] {
                let (s, f) = (
                    dst.skeleton.find(shin).unwrap() as usize,
                    dst.skeleton.find(foot).unwrap() as usize,
                );
                let at_rest = rest_axes[s].angle_between(rest[f] - rest[s]);
                let now = axes[s].angle_between(wt[f] - wt[s]);
                assert!(
                    (now - at_rest).abs().to_degrees() < 1.0,
                    "{shin} axis {:.1} deg from {foot} at {t:.2} s, {:.1} at rest",
                    now.to_degrees(),
                    at_rest.to_degrees()
                );
            }
        }
        for (name, a, b) in &lt {
            let (_, sa, sb) = ls.iter().find(|l| l.0 == *name).unwrap();
            let f = |sk: &Skeleton, n: &str| sk.find(n).unwrap_or_else(|| panic!("{n}")) as usize;
            let ds = ws[f(&src.skeleton, sb)] - ws[f(&src.skeleton, sa)];
            let dt = if *b == "+Y" {
                axes[f(&dst.skeleton, a)]
            } else {
                wt[f(&dst.skeleton, b)] - wt[f(&dst.skeleton, a)]
            };
            let deg = ds.angle_between(dt).to_degrees();
            per_limb.entry(*name).or_default().push(deg);
            if *name == "spine" {
                continue;
            }
            if deg > worst.0 {
                worst = (deg, format!("{name} at {t:.2} s"));
            }
            angles.push(deg);
        }
    }
    angles.sort_by(f32::total_cmp);
    let mut spine = (0.0, 0.0);
    for (name, mut v) in per_limb {
        v.sort_by(f32::total_cmp);
        println!(
            "    {name}: median {:.2} worst {:.2}",
            v[v.len() / 2],
            v[v.len() - 1]
        );
        if name == "spine" {
            spine = (v[v.len() / 2], v[v.len() - 1]);
        }
    }
    PairResult {
        spine,
        mapped: map.pairs.len(),
        median_deg: angles[angles.len() / 2],
        worst_deg: worst.0,
        worst_limb: worst.1,
    }
}

#[test]
fn cmu_captures_onto_characters_follow_limb_directions() {
    // (file, kind, joints the automatic map must pair at least)
    let targets = [
        ("gltf/robot_quaternius.glb", "robot", 16),
        ("gltf/KayKit_Rig_Medium_General.glb", "kaykit", 16),
        ("gltf/greenman.glb", "greenman", 5),
        ("fbx/blender_293_barbarian_7400_binary.fbx", "barbarian", 11),
    ];
    for capture in ["bvh/01_01.bvh", "bvh/01_03.bvh"] {
        let src = load(capture);
        let clip = src.clips[0].clone();
        for (file, kind, at_least) in targets {
            let dst = load(file);
            let r = measure(&src, &clip, &dst, kind);
            println!(
                "{capture} -> {file}: {} joints mapped of {}; limbs: median {:.2} deg, worst {:.2} deg ({}); spine: median {:.2}, worst {:.2}",
                r.mapped,
                dst.skeleton.len(),
                r.median_deg,
                r.worst_deg,
                r.worst_limb,
                r.spine.0,
                r.spine.1,
            );
            assert!(
                r.mapped >= at_least,
                "{capture} -> {file}: {} mapped",
                r.mapped
            );
            assert!(
                r.median_deg < 3.0 && r.worst_deg < 15.0,
                "{capture} -> {file}"
            );
            // The spine: the bone (or bones) from the hips to the chest against the
            // capture's three; the barbarian has one bone for them, which cannot bend where
            // the capture's spine bends.
            let spine_limit = if kind == "barbarian" { 60.0 } else { 20.0 };
            assert!(
                r.spine.0 < spine_limit / 2.0 && r.spine.1 < spine_limit,
                "{capture} -> {file} spine {:?}",
                r.spine
            );
        }
    }
}

/// A joint list for a synthetic humanoid: hips, spine, arms, legs (parents by index).
fn humanoid(scale: f32, arm_drop: f32, twist: f32) -> Skeleton {
    let t =
        |x: f32, y: f32| Transform::new(Vec3::new(x, y, 0.0) * scale, Quat::IDENTITY, Vec3::ONE);
    let r = |x: f32, y: f32, q: Quat| Transform::new(Vec3::new(x, y, 0.0) * scale, q, Vec3::ONE);
    let joints = [
        ("Hips", None, t(0.0, 1.0)),
        ("Spine", Some(0), t(0.0, 0.5)),
        (
            "LeftArm",
            Some(1),
            r(0.2, 0.0, Quat::from_rotation_z(-arm_drop)),
        ),
        (
            "LeftForeArm",
            Some(2),
            r(0.3, 0.0, Quat::from_rotation_x(twist)),
        ),
        ("LeftHand", Some(3), t(0.25, 0.0)),
        (
            "RightArm",
            Some(1),
            r(-0.2, 0.0, Quat::from_rotation_z(arm_drop)),
        ),
        (
            "RightForeArm",
            Some(5),
            r(-0.3, 0.0, Quat::from_rotation_x(-twist)),
        ),
        ("RightHand", Some(6), t(-0.25, 0.0)),
        ("LeftUpLeg", Some(0), t(0.1, 0.0)),
        ("LeftLeg", Some(8), t(0.0, -0.45)),
        ("LeftFoot", Some(9), t(0.0, -0.45)),
        ("RightUpLeg", Some(0), t(-0.1, 0.0)),
        ("RightLeg", Some(11), t(0.0, -0.45)),
        ("RightFoot", Some(12), t(0.0, -0.45)),
    ];
    RawSkeleton {
        joints: joints
            .iter()
            .map(|(n, p, rest)| RawJoint {
                name: (*n).into(),
                parent: *p,
                rest: *rest,
            })
            .collect(),
        ..Default::default()
    }
    .build()
    .unwrap()
}

#[test]
fn t_pose_onto_a_pose_scaled_has_the_closed_form_answer() {
    // The source stands in T-pose; the target is the same body 1.3 times larger, in A-pose
    // (arms 40 degrees down) with twisted forearm frames. After alignment, the target in any
    // pose is the source scaled by 1.3: every world position exactly 1.3 times the source's.
    let source = humanoid(1.0, 0.0, 0.0);
    let target = humanoid(1.3, 40f32.to_radians(), 0.7);
    let map = JointMap::from_pairs(source.names().iter().map(|n| (n.clone(), n.clone())));
    let r = Retargeter::new(&source, &target, &map, &Options::default()).unwrap();
    assert!((r.root_scale() - 1.3).abs() < 1e-5, "{}", r.root_scale());
    let mut scratch = r.scratch();
    let mut out = target.rest_pose().to_vec();
    let mut rng = 7u32;
    let mut rand = move || {
        rng = rng.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (rng >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    };
    for _ in 0..50 {
        let mut pose = source.rest_pose().to_vec();
        for p in pose.iter_mut() {
            p.rotation = Quat::from_euler(glam::EulerRot::YXZ, rand(), rand(), rand());
        }
        pose[0].translation += Vec3::new(rand(), rand() * 0.2, rand());
        r.retarget(&pose, &mut out, &mut scratch).unwrap();
        let (ws, wt) = (world(&source, &pose), world(&target, &out));
        for j in 0..source.len() {
            assert!(
                (wt[j] - ws[j] * 1.3).length() < 1e-4,
                "{}: {} vs {}",
                source.name(j as u16),
                wt[j],
                ws[j] * 1.3
            );
        }
    }
}

/// The CMU skeleton with every joint renamed in another rig's style.
fn renamed(sk: &Skeleton) -> Skeleton {
    let rename = |n: &str| {
        let side = |rest: &str, s: &str| format!("mixamorig:{}_{s}", rest);
        if let Some(rest) = n.strip_prefix("Left") {
            side(rest, "l")
        } else if let Some(rest) = n.strip_prefix("Right") {
            side(rest, "r")
        } else if n.len() > 1 && n.starts_with('L') && n.as_bytes()[1].is_ascii_uppercase() {
            format!("mixamorig:{}.L", &n[1..])
        } else if n.len() > 1 && n.starts_with('R') && n.as_bytes()[1].is_ascii_uppercase() {
            format!("mixamorig:{}.R", &n[1..])
        } else {
            format!("mixamorig:{n}")
        }
    };
    RawSkeleton {
        joints: (0..sk.len() as u16)
            .map(|j| RawJoint {
                name: rename(sk.name(j)),
                parent: sk.parent(j).map(usize::from),
                rest: sk.rest_pose()[j as usize],
            })
            .collect(),
        root_transform: sk.root_transform(),
    }
    .build()
    .unwrap()
}

#[test]
fn renamed_copy_maps_automatically_and_reproduces_the_clip() {
    let a = load("bvh/01_01.bvh");
    let (sk, clip) = (&a.skeleton, &a.clips[0]);
    let copy = renamed(sk);
    assert!(copy.find("mixamorig:UpLeg_l").is_some());
    let map = JointMap::auto(sk, &copy).unwrap();
    assert_eq!(map.pairs.len(), sk.len(), "{:?}", map.pairs);
    for p in &map.pairs {
        assert_eq!(
            copy.find(&p.target),
            sk.find(&p.source),
            "{} -> {}",
            p.source,
            p.target
        );
    }
    let r = Retargeter::new(sk, &copy, &map, &Options::default()).unwrap();
    let baked = r.bake(clip, sk, &copy, &BakeOptions::default()).unwrap();
    assert!(baked.fits(&copy) && !baked.fits(sk));
    for t in times(clip, 41) {
        let (w0, w1) = (
            world(sk, &sample_at(clip, sk, t)),
            world(&copy, &sample_at(&baked, &copy, t)),
        );
        for j in 0..sk.len() {
            assert!(
                (w0[j] - w1[j]).length() < 1e-4 * (1.0 + w0[j].length()),
                "t={t} {}",
                sk.name(j as u16)
            );
        }
    }
}

#[test]
fn binding_by_name_moves_a_clip_to_another_layout_and_the_animator_checks_layouts() {
    let a = load("gltf/robot_quaternius.glb");
    let sk = &a.skeleton;
    let clip = a.clip("Robot_Walking").unwrap();
    // The same rig as another file might have it: joints in reverse order (parents still
    // first), one joint missing, one extra.
    let order: Vec<u16> = {
        let mut o: Vec<u16> = (0..sk.len() as u16)
            .filter(|&j| sk.name(j) != "PoleTarget.L")
            .collect();
        o.sort_by_key(|&j| (sk.depth(j), std::cmp::Reverse(j)));
        o
    };
    let mut joints: Vec<RawJoint> = order
        .iter()
        .map(|&j| RawJoint {
            name: sk.name(j).to_owned(),
            parent: sk
                .parent(j)
                .map(|p| order.iter().position(|&o| o == p).unwrap()),
            rest: sk.rest_pose()[j as usize],
        })
        .collect();
    joints.push(RawJoint {
        name: "Extra".into(),
        parent: Some(0),
        rest: Transform::IDENTITY,
    });
    let other = RawSkeleton {
        joints,
        root_transform: sk.root_transform(),
    }
    .build()
    .unwrap();
    assert_ne!(other.id(), sk.id());

    // The animator refuses the clip of the other layout, naming it.
    let mut animator = Animator::new(Arc::new(other.clone()));
    let err = animator
        .play(0, clip.clone(), Default::default())
        .unwrap_err();
    assert!(matches!(err, Error::OtherSkeleton { .. }), "{err}");
    assert!(err.to_string().contains("Robot_Walking"), "{err}");

    let (bound, report) = clip.rebind(sk, &other).unwrap();
    assert!(
        report.unbound.is_empty() || report.unbound == ["PoleTarget.L"],
        "{report:?}"
    );
    assert!(report.unanimated.contains(&"Extra".to_owned()));
    animator
        .play(0, Arc::new(bound.clone()), Default::default())
        .unwrap();
    for t in times(clip, 23) {
        let (w0, w1) = (
            world(sk, &sample_at(clip, sk, t)),
            world(&other, &sample_at(&bound, &other, t)),
        );
        for j in 0..other.len() as u16 {
            if let Some(s) = sk.find(other.name(j)) {
                assert!(
                    (w0[s as usize] - w1[j as usize]).length() < 1e-5,
                    "t={t} {}",
                    other.name(j)
                );
            }
        }
    }
    // A clip bound by name to a skeleton with none of its joints: a clear error.
    let stranger = RawSkeleton {
        joints: vec![RawJoint {
            name: "x".into(),
            parent: None,
            rest: Transform::IDENTITY,
        }],
        ..Default::default()
    }
    .build()
    .unwrap();
    assert!(matches!(
        clip.rebind(sk, &stranger),
        Err(Error::NothingBound { .. })
    ));
    assert!(matches!(
        clip.rebind(&other, sk),
        Err(Error::OtherSkeleton { .. })
    ));
}

#[test]
fn bad_maps_are_typed_errors_that_name_the_joints() {
    let a = load("bvh/01_01.bvh");
    let b = load("gltf/KayKit_Rig_Medium_General.glb");
    let (s, t) = (&a.skeleton, &b.skeleton);
    let missing = JointMap::from_pairs([("Hips", "hips"), ("Tail", "hips")]);
    match Retargeter::new(s, t, &missing, &Options::default()) {
        Err(Error::MapUnknownJoint {
            side: "source",
            joint,
        }) => assert_eq!(joint, "Tail"),
        other => panic!("{other:?}"),
    }
    let missing_t = JointMap::from_pairs([("Hips", "pelvis")]);
    assert!(matches!(
        Retargeter::new(s, t, &missing_t, &Options::default()),
        Err(Error::MapUnknownJoint { side: "target", .. })
    ));
    let twice = JointMap::from_pairs([("Hips", "hips"), ("Spine", "hips")]);
    match Retargeter::new(s, t, &twice, &Options::default()) {
        Err(e @ Error::MapDuplicateTarget { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("hips") && m.contains("Hips") && m.contains("Spine"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    let stranger = RawSkeleton {
        joints: vec![
            RawJoint {
                name: "a".into(),
                parent: None,
                rest: Transform::IDENTITY,
            },
            RawJoint {
                name: "b".into(),
                parent: Some(0),
                rest: Transform::IDENTITY,
            },
        ],
        ..Default::default()
    }
    .build()
    .unwrap();
    match JointMap::auto(s, &stranger) {
        Err(e @ Error::NoCommonChain { .. }) => assert!(e.to_string().contains("a, b"), "{e}"),
        other => panic!("{other:?}"),
    }
    let empty = JointMap::default();
    assert!(matches!(
        Retargeter::new(s, t, &empty, &Options::default()),
        Err(Error::NoCommonChain { .. })
    ));
    let bad_scale = Options {
        root_scale: Some(f32::NAN),
        ..Default::default()
    };
    let map = JointMap::auto(s, t).unwrap();
    assert!(Retargeter::new(s, t, &map, &bad_scale).is_err());
    // A pose of the wrong length: an error, not a panic.
    let r = Retargeter::new(s, t, &map, &Options::default()).unwrap();
    let mut out = t.rest_pose().to_vec();
    assert!(matches!(
        r.retarget(&s.rest_pose()[..3], &mut out, &mut r.scratch()),
        Err(Error::Length { .. })
    ));
    // A clip of another skeleton: refused.
    let kay_clip = &b.clips[6];
    assert!(matches!(
        r.bake(kay_clip, s, t, &BakeOptions::default()),
        Err(Error::OtherSkeleton { .. })
    ));
}

/// The foot joints of each character, named by hand: (left, right).
fn feet_of(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "bvh" => ("LeftFoot", "RightFoot"),
        "robot" => ("Foot.L", "Foot.R"),
        "kaykit" => ("foot.l", "foot.r"),
        "barbarian" => ("pied gauche_end", "pied droit_end"),
        _ => unreachable!(),
    }
}

fn hips_of(kind: &str) -> &'static str {
    match kind {
        "robot" => "Body",
        "kaykit" => "hips",
        "barbarian" => "bassin",
        _ => unreachable!(),
    }
}

/// How far a foot slides in a contact: the largest distance across the floor (scene x, z)
/// from where it touched down, over the contact's frames.
fn slide(path: &[Vec3]) -> f32 {
    let flat = |p: Vec3| Vec3::new(p.x, 0.0, p.z);
    path.iter()
        .map(|p| flat(*p).distance(flat(path[0])))
        .fold(0.0, f32::max)
}

fn median_and_worst(mut v: Vec<f32>) -> (f32, f32) {
    v.sort_by(f32::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

#[test]
fn planted_feet_stay_planted_through_the_captures_contacts() {
    let targets = [
        ("gltf/robot_quaternius.glb", "robot"),
        ("gltf/KayKit_Rig_Medium_General.glb", "kaykit"),
        ("fbx/blender_293_barbarian_7400_binary.fbx", "barbarian"),
    ];
    for capture in ["bvh/01_01.bvh", "bvh/01_03.bvh"] {
        let src = load(capture);
        let clip = &src.clips[0];
        let contacts = retarget::foot_contacts(&src.skeleton, clip).unwrap();
        let (sl, sr) = feet_of("bvh");
        let (sl, sr) = (
            src.skeleton.find(sl).unwrap(),
            src.skeleton.find(sr).unwrap(),
        );
        assert!(contacts.iter().all(|c| c.foot == sl || c.foot == sr));
        let per_foot = |f| contacts.iter().filter(|c| c.foot == f).count();
        // The capture walks and jumps: both feet stand many times.
        assert!(per_foot(sl) >= 5 && per_foot(sr) >= 5, "{contacts:?}");
        for (file, kind) in targets {
            let dst = load(file);
            let map = JointMap::auto(&src.skeleton, &dst.skeleton).unwrap();
            let r =
                Retargeter::new(&src.skeleton, &dst.skeleton, &map, &Options::default()).unwrap();
            let bake = |plant_feet| {
                r.bake(
                    clip,
                    &src.skeleton,
                    &dst.skeleton,
                    &BakeOptions {
                        plant_feet,
                        ..Default::default()
                    },
                )
                .unwrap()
            };
            let (free, planted) = (bake(false), bake(true));
            // The pass moves the legs and lowers the hips where a leg cannot reach
            // otherwise; the hips never move across the floor and drop little.
            let hips = dst.skeleton.find(hips_of(kind)).unwrap() as usize;
            let mut most_drop = 0.0f32;
            for t in times(clip, 400) {
                let a = world(&dst.skeleton, &sample_at(&free, &dst.skeleton, t))[hips];
                let b = world(&dst.skeleton, &sample_at(&planted, &dst.skeleton, t))[hips];
                assert!(b.is_finite());
                assert!(
                    Vec3::new(a.x - b.x, 0.0, a.z - b.z).length() < 1e-3 * r.root_scale(),
                    "{file} t={t}: {a} {b}"
                );
                most_drop = most_drop.max(a.y - b.y);
            }
            let (tl, tr) = feet_of(kind);
            let (tl, tr) = (
                dst.skeleton.find(tl).unwrap() as usize,
                dst.skeleton.find(tr).unwrap() as usize,
            );
            let mut slides = [Vec::new(), Vec::new(), Vec::new()];
            // Ankle heights over the contacts' frames, above where the ankle is when the
            // character stands (the capture: its median over its contacts; the target: its
            // rest pose, which stands on the floor).
            let mut lifts = [Vec::new(), Vec::new(), Vec::new()];
            let standing_target = world(&dst.skeleton, dst.skeleton.rest_pose());
            for c in &contacts {
                let tf = if c.foot == sl { tl } else { tr };
                let n = ((c.end - c.start) * 120.0).round().max(1.0) as usize;
                let ts: Vec<f32> = (0..=n)
                    .map(|i| c.start + (c.end - c.start) * i as f32 / n as f32)
                    .collect();
                let path = |clip: &Clip, sk: &Skeleton, j: usize, scale: f32| -> Vec<Vec3> {
                    ts.iter()
                        .map(|&t| world(sk, &sample_at(clip, sk, t))[j] * scale)
                        .collect()
                };
                // Scene units to cm: glTF is in metres (the barbarian FBX's units are
                // taken as metres too); the capture is scaled as the retargeter scales
                // it onto the target.
                let cm = 100.0;
                let scale = r.root_scale() * cm;
                let paths = [
                    path(clip, &src.skeleton, c.foot as usize, scale),
                    path(&free, &dst.skeleton, tf, cm),
                    path(&planted, &dst.skeleton, tf, cm),
                ];
                for (k, p) in paths.iter().enumerate() {
                    slides[k].push(slide(p));
                    let stand = if k == 0 {
                        0.0
                    } else {
                        standing_target[tf].y * cm
                    };
                    lifts[k].extend(p.iter().map(|q| q.y - stand));
                }
            }
            let [s, f, p] = slides.map(median_and_worst);
            // The capture's ankle above its own standing height.
            let mut sorted = lifts[0].clone();
            sorted.sort_by(f32::total_cmp);
            let stand = sorted[sorted.len() / 2];
            lifts[0].iter_mut().for_each(|v| *v -= stand);
            let [ls, lf, lp] = lifts.map(|v| {
                let (m, _) = median_and_worst(v.iter().map(|x| x.abs()).collect());
                m
            });
            println!(
                "    ankle above standing in contacts, median |cm|: capture scaled {ls:.2}, retargeted {lf:.2}, with the foot pass {lp:.2}"
            );
            assert!(
                (lp - ls).abs() < 0.5 && lp < lf,
                "{capture} -> {file}: {lp} {ls} {lf}"
            );
            println!(
                "{capture} -> {file}: {} contacts; slide per contact, median / worst (target cm): capture scaled {:.2} / {:.2}, retargeted {:.2} / {:.2}, with the foot pass {:.3} / {:.3}; hips lowered at most {:.2} cm",
                contacts.len(),
                s.0, s.1, f.0, f.1, p.0, p.1, most_drop * 100.0
            );
            assert!(p.0 < 0.05 && p.1 < 0.5, "{capture} -> {file}: {p:?}");
            assert!(p.1 < f.1 && p.0 < f.0, "{capture} -> {file}");
        }
    }
}

/// `retarget::t_pose` on real skeletons: arms out to the sides and level, legs straight
/// down (limbs named by hand in `limbs`); retargeting with both skeletons' built T-poses as
/// the reference keeps limbs following the capture as closely as with the rest poses.
#[test]
fn built_t_poses_stand_straight_and_retarget_like_the_rest_pose() {
    let files = [
        ("bvh/01_01.bvh", "bvh"),
        ("gltf/robot_quaternius.glb", "robot"),
        ("gltf/KayKit_Rig_Medium_General.glb", "kaykit"),
        ("fbx/blender_293_barbarian_7400_binary.fbx", "barbarian"),
    ];
    for (file, kind) in files {
        let asset = load(file);
        let sk = &asset.skeleton;
        let pose = retarget::t_pose(sk).unwrap();
        let w = world(sk, &pose);
        let at = |n: &str| w[sk.find(n).unwrap_or_else(|| panic!("{n}")) as usize];
        let limbs = limbs(kind);
        let named = |limb: &str| limbs.iter().find(|l| l.0 == limb).copied();
        let (_, left_arm, _) = named("upper arm L").or(named("arm L")).unwrap();
        let (_, right_arm, _) = named("upper arm R").or(named("arm R")).unwrap();
        let left = (at(left_arm) - at(right_arm)) * Vec3::new(1.0, 0.0, 1.0);
        let left = left.normalize();
        for (limb, a, b) in &limbs {
            if *b == "+Y" || limb.starts_with("spine") || limb.starts_with("neck") {
                continue;
            }
            let d = (at(b) - at(a)).normalize();
            let want = if limb.starts_with("thigh") || limb.starts_with("shin") {
                -Vec3::Y
            } else if limb.ends_with('L') {
                left
            } else {
                -left
            };
            let deg = d.angle_between(want).to_degrees();
            println!("{file}: {limb} {deg:.3} deg from its T-pose direction");
            assert!(deg < 1.0, "{file}: {limb} {deg} deg off");
        }
    }
    let src = load("bvh/01_01.bvh");
    let clip = &src.clips[0];
    for (file, kind) in &files[1..] {
        let dst = load(file);
        let map = JointMap::auto(&src.skeleton, &dst.skeleton).unwrap();
        let options = Options {
            source_reference: Some(retarget::t_pose(&src.skeleton).unwrap()),
            target_reference: Some(retarget::t_pose(&dst.skeleton).unwrap()),
            ..Default::default()
        };
        let r = Retargeter::new(&src.skeleton, &dst.skeleton, &map, &options).unwrap();
        let baked = r
            .bake(clip, &src.skeleton, &dst.skeleton, &BakeOptions::default())
            .unwrap();
        let ls = limbs("bvh");
        let mut angles = Vec::new();
        for t in times(clip, 100) {
            let ws = world(&src.skeleton, &sample_at(clip, &src.skeleton, t));
            let wt = world(&dst.skeleton, &sample_at(&baked, &dst.skeleton, t));
            for (name, a, b) in limbs(kind) {
                if name == "spine" {
                    continue;
                }
                let (_, sa, sb) = ls.iter().find(|l| l.0 == name).unwrap();
                let f = |sk: &Skeleton, n: &str| sk.find(n).unwrap() as usize;
                let ds = ws[f(&src.skeleton, sb)] - ws[f(&src.skeleton, sa)];
                let dt = wt[f(&dst.skeleton, b)] - wt[f(&dst.skeleton, a)];
                angles.push(ds.angle_between(dt).to_degrees());
            }
        }
        let (median, worst) = median_and_worst(angles);
        println!("01_01 -> {file} through built T-poses: limbs median {median:.2} deg, worst {worst:.2} deg");
        assert!(median < 3.0 && worst < 15.0, "{file}");
    }
}

/// BVH files that name the upper arm `LeftShoulder` below a `LeftCollar` (Boxing_Toes):
/// the upper arm is mapped, and the boxer's arms follow (a sceptical user saw them left in
/// the T-pose).
#[test]
fn collar_and_shoulder_names_map_the_upper_arm() {
    let src = load("bvh/Boxing_Toes.bvh");
    let dst = load("gltf/KayKit_Rig_Medium_General.glb");
    let map = JointMap::auto(&src.skeleton, &dst.skeleton).unwrap();
    for (s, t) in [
        ("LeftShoulder", "upperarm.l"),
        ("LeftElbow", "lowerarm.l"),
        ("RightShoulder", "upperarm.r"),
        ("RightElbow", "lowerarm.r"),
    ] {
        assert_eq!(map.source_of(t), Some(s), "{t}: {:?}", map.pairs);
    }
    let r = Retargeter::new(&src.skeleton, &dst.skeleton, &map, &Options::default()).unwrap();
    let clip = &src.clips[0];
    let baked = r
        .bake(clip, &src.skeleton, &dst.skeleton, &BakeOptions::default())
        .unwrap();
    let f = |sk: &Skeleton, n: &str| sk.find(n).unwrap() as usize;
    for t in times(clip, 50) {
        let ws = world(&src.skeleton, &sample_at(clip, &src.skeleton, t));
        let wt = world(&dst.skeleton, &sample_at(&baked, &dst.skeleton, t));
        let s = ws[f(&src.skeleton, "LeftElbow")] - ws[f(&src.skeleton, "LeftShoulder")];
        let d = wt[f(&dst.skeleton, "lowerarm.l")] - wt[f(&dst.skeleton, "upperarm.l")];
        assert!(s.angle_between(d).to_degrees() < 1.0, "t={t}");
    }
}

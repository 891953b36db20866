//! Foot placement on real rigs (`../shared/data/gltf`): robot_quaternius walking and KayKit
//! standing on a 15 degree slope and a stair step, the Fox walking on the slope on four paws.

use glam::{Mat4, Vec3};
use skelett::contacts::Contacts;
use skelett::ik::*;
use skelett::*;

struct Rig {
    skeleton: Skeleton,
    clip: Clip,
    feet: Feet,
    contacts: Contacts,
    /// The side each knee should bend to, along Z.
    poles: Vec<f32>,
}

fn load(file: &str, clip: &str) -> (Skeleton, Clip) {
    let asset = skelett_io::load(skelett_testdata::data(file)).unwrap();
    let clip = (**asset.clip(clip).unwrap()).clone();
    ((*asset.skeleton).clone(), clip)
}

fn rig(file: &str, clip: &str, legs: &[[&str; 4]], pelvis: &str) -> Rig {
    let (skeleton, clip) = load(file, clip);
    let find = |n: &str| skeleton.find(n).unwrap_or_else(|| panic!("{n}"));
    let mut poles = Vec::new();
    let legs = legs
        .iter()
        .map(|[s, m, e, f]| {
            let chain = if e.is_empty() {
                // The foot is a separate joint: the chain ends at the lower leg's tip, where
                // the foot is at rest.
                TwoBoneChain::reaching_joint(&skeleton, [find(s), find(m)], find(f)).unwrap()
            } else {
                TwoBoneChain::by_name(&skeleton, [s, m, e]).unwrap()
            };
            // Knees forward; a quadruped's elbows (legs named "arm") backward.
            let pole = if s.contains("Arm") { -Vec3::Z } else { Vec3::Z };
            poles.push(pole.z);
            Leg::from_rest(&skeleton, chain, find(f), Vec3::Y)
                .unwrap()
                .with_pole(pole)
        })
        .collect();
    let feet = Feet::new(&skeleton, legs, Some(find(pelvis)), Vec3::Y).unwrap();
    let contacts = feet.contacts(&skeleton, &clip);
    Rig {
        skeleton,
        clip,
        feet,
        contacts,
        poles,
    }
}

/// Height of each sole above the ground below it (ground space, Y up).
fn soles(rig: &Rig, model: &[Mat4], to_ground: Mat4, ground: &dyn Ground) -> Vec<f32> {
    rig.feet
        .legs()
        .iter()
        .map(|leg| {
            let s =
                to_ground.transform_point3(model[leg.foot() as usize].transform_point3(leg.sole()));
            let hit = ground.cast(s + Vec3::Y * 1e3, -Vec3::Y, 1e4).unwrap();
            s.y - hit.point.y
        })
        .collect()
}

/// How far each knee sits on the character's forward side of its hip-to-end line.
fn knees(rig: &Rig, model: &[Mat4], forward: Vec3) -> Vec<f32> {
    rig.feet
        .legs()
        .iter()
        .map(|leg| {
            let [h, k, e] = leg
                .chain()
                .joints()
                .map(|j| model[j as usize].w_axis.truncate());
            let end = match leg.chain().tip() {
                Some(tip) => model[leg.chain().joints()[1] as usize].transform_point3(tip),
                None => e,
            };
            (k - (h + end) * 0.5).dot(forward)
        })
        .collect()
}

/// What placing the feet over one cycle did.
struct Outcome {
    /// Per foot, the largest |sole height| over its contact frames, before and after.
    before: Vec<f32>,
    after: Vec<f32>,
    /// The lowest any sole got below the ground in any frame, after.
    deepest: f32,
    /// Frames where a knee that the animation bends forward (backward: a quadruped's
    /// elbow) by more than 5 % of the leg bends the other way (straighter legs bend to their
    /// pole, forward for knees).
    knees_backward: usize,
    contact_frames: Vec<usize>,
    /// Joints neither in a leg, nor the pelvis, nor below them whose model matrix changed.
    others_moved: usize,
}

fn run(rig: &Rig, ground: &dyn Ground, to_ground: Mat4, drop: f32) -> Outcome {
    let sk = &rig.skeleton;
    let n = rig.feet.legs().len();
    let mut pose = Pose::rest(sk);
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let mut out = Outcome {
        before: vec![0.0; n],
        after: vec![0.0; n],
        deepest: 0.0,
        knees_backward: 0,
        contact_frames: vec![0; n],
        others_moved: 0,
    };
    // Joints foot placement may move: the pelvis, the legs, the feet and what is below.
    let movable: Vec<bool> = (0..sk.len() as JointIndex)
        .map(|j| {
            let mut k = Some(j);
            while let Some(x) = k {
                if rig.feet.legs().iter().any(|l| l.foot() == x)
                    || Some(x) == sk.find("Body").or(sk.find("hips")).or(sk.find("b_Hip_01"))
                {
                    return true;
                }
                k = sk.parent(x);
            }
            false
        })
        .collect();
    let mut contacts = vec![0.0; n];
    let frames = 96;
    for f in 0..frames {
        let t = rig.clip.start() + rig.clip.duration() * f as f32 / frames as f32;
        sample_uncached(&rig.clip, t, &mut pose).unwrap();
        local_to_model(sk, &pose, 0, &mut model).unwrap();
        let animated = model.clone();
        rig.contacts.weights_at(t, &mut contacts);
        let before = soles(rig, &model, to_ground, ground);
        let knees_before = knees(rig, &model, Vec3::Z);
        let report = place_feet(
            &rig.feet,
            &Placement::new(to_ground, drop),
            &contacts,
            &ground,
            sk,
            &mut pose,
            &mut model,
        )
        .unwrap();
        assert_eq!(report.grounded, n);
        assert!(model.iter().all(|m| m.is_finite()));
        let after = soles(rig, &model, to_ground, ground);
        let knees_after = knees(rig, &model, Vec3::Z);
        for i in 0..n {
            if contacts[i] >= 0.99 {
                out.contact_frames[i] += 1;
                out.before[i] = out.before[i].max(before[i].abs());
                out.after[i] = out.after[i].max(after[i].abs());
            }
            out.deepest = out.deepest.min(after[i]);
            let length = rig.feet.legs()[i].chain().joints();
            let l = animated[length[0] as usize]
                .w_axis
                .distance(animated[length[1] as usize].w_axis);
            if knees_after[i] * rig.poles[i] < 0.0 && knees_before[i].abs() <= 0.05 * l {
                out.knees_backward += 1;
            }
            if knees_before[i].abs() > 0.05 * l && knees_before[i] * knees_after[i] < 0.0 {
                out.knees_backward += 1;
            }
        }
        out.others_moved += (0..sk.len())
            .filter(|&j| !movable[j] && model[j] != animated[j])
            .count();
    }
    out
}

fn slope(degrees: f32) -> Plane {
    // Rising along +Z, where glTF characters face: walking uphill.
    let a = degrees.to_radians();
    Plane::new(Vec3::ZERO, Vec3::new(0.0, a.cos(), -a.sin())).unwrap()
}

fn report(what: &str, o: &Outcome, unit: f32) {
    eprintln!(
        "{what}: worst sole height at contact frames (cm), before {:?}, after {:?}; contact frames {:?}; deepest after {:.3} cm",
        o.before.iter().map(|x| x * unit).collect::<Vec<_>>(),
        o.after.iter().map(|x| x * unit).collect::<Vec<_>>(),
        o.contact_frames,
        o.deepest * unit
    );
}

/// The rigs' units: glTF is in metres; robot_quaternius is about 3.1 m tall as exported
/// (taken as is), the Fox about 0.6 m high at the head in centimetre units.
const METRES: f32 = 100.0;
const CENTIMETRES: f32 = 1.0;

fn check(what: &str, o: &Outcome, unit: f32) {
    report(what, o, unit);
    for (i, &after) in o.after.iter().enumerate() {
        assert!(
            o.contact_frames[i] > 0,
            "{what}: foot {i} is never in contact"
        );
        assert!(
            after * unit < 0.5,
            "{what}: foot {i} is {} cm off the ground",
            after * unit
        );
    }
    assert!(
        o.deepest * unit > -0.5,
        "{what}: a sole sinks {} cm",
        -o.deepest * unit
    );
    assert_eq!(o.knees_backward, 0, "{what}: knees bent the other way");
    assert_eq!(o.others_moved, 0, "{what}: joints outside the legs moved");
}

fn robot() -> Rig {
    rig(
        "gltf/robot_quaternius.glb",
        "Robot_Walking",
        &[
            ["UpperLeg.L", "LowerLeg.L", "", "Foot.L"],
            ["UpperLeg.R", "LowerLeg.R", "", "Foot.R"],
        ],
        "Body",
    )
}

fn kaykit() -> Rig {
    rig(
        "gltf/KayKit_Rig_Medium_General.glb",
        "Rig_Medium|Idle_A",
        &[
            ["upperleg.l", "lowerleg.l", "foot.l", "foot.l"],
            ["upperleg.r", "lowerleg.r", "foot.r", "foot.r"],
        ],
        "hips",
    )
}

#[test]
fn robot_walks_up_a_slope_and_a_stair() {
    let robot = robot();
    let root = robot.skeleton.root_transform();
    let o = run(&robot, &slope(15.0), root, 1.0);
    check("robot_quaternius walking up a 15 degree slope", &o, METRES);
    assert!(
        o.before.iter().any(|b| b * METRES > 10.0),
        "the slope matters"
    );
    // A 25 cm step across the path, 10 cm ahead of the character's origin: facing +X
    // (turned a quarter about Y) onto stairs that rise along +X.
    let turn = Mat4::from_rotation_y(std::f32::consts::FRAC_PI_2);
    let step = TriangleMesh::stairs(1, 0.25, 0.3, 4.0);
    let to_ground = Mat4::from_translation(Vec3::new(-0.1, 0.0, 0.0)) * turn * root;
    let o = run(&robot, &step, to_ground, 1.0);
    check("robot_quaternius walking onto a 25 cm step", &o, METRES);
}

#[test]
fn kaykit_stands_on_a_slope_and_across_a_stair() {
    let kay = kaykit();
    let root = kay.skeleton.root_transform();
    let o = run(&kay, &slope(15.0), root, 0.5);
    check("KayKit idle on a 15 degree slope", &o, METRES);
    // Feet apart along X: the left foot (+X) on a 15 cm step, the right below it.
    let step = TriangleMesh::stairs(1, 0.15, 0.3, 4.0);
    let o = run(&kay, &step, root, 0.5);
    check("KayKit idle across a 15 cm step", &o, METRES);
    assert!(
        o.before[0] * METRES > 10.0,
        "the left foot starts inside the step"
    );
}

#[test]
fn the_fox_walks_up_a_slope_on_four_paws() {
    let fox = rig(
        "gltf/Fox.glb",
        "Walk",
        &[
            [
                "b_LeftLeg01_015",
                "b_LeftLeg02_016",
                "b_LeftFoot01_017",
                "b_LeftFoot01_017",
            ],
            [
                "b_RightLeg01_019",
                "b_RightLeg02_020",
                "b_RightFoot01_021",
                "b_RightFoot01_021",
            ],
            [
                "b_LeftUpperArm_09",
                "b_LeftForeArm_010",
                "b_LeftHand_011",
                "b_LeftHand_011",
            ],
            [
                "b_RightUpperArm_06",
                "b_RightForeArm_07",
                "b_RightHand_08",
                "b_RightHand_08",
            ],
        ],
        "b_Hip_01",
    );
    let o = run(&fox, &slope(15.0), fox.skeleton.root_transform(), 30.0);
    check("Fox walking up a 15 degree slope", &o, CENTIMETRES);
}

/// Legs found from names and the rest pose: the Fox's four (elbows of the front legs bending
/// backward), KayKit's two, and a clear error for robot_quaternius, whose feet are control
/// joints at the root.
#[test]
fn feet_are_guessed_from_names_and_the_rest_pose() {
    let names = |sk: &Skeleton, feet: &Feet| -> Vec<[String; 3]> {
        feet.legs()
            .iter()
            .map(|l| l.chain().joints().map(|j| sk.name(j).to_string()))
            .collect()
    };
    let (fox, _) = load("gltf/Fox.glb", "Walk");
    let feet = Feet::guess(&fox).unwrap();
    let mut legs = names(&fox, &feet);
    legs.sort();
    let expect = [
        ["b_LeftLeg01_015", "b_LeftLeg02_016", "b_LeftFoot01_017"],
        ["b_LeftUpperArm_09", "b_LeftForeArm_010", "b_LeftHand_011"],
        ["b_RightLeg01_019", "b_RightLeg02_020", "b_RightFoot01_021"],
        ["b_RightUpperArm_06", "b_RightForeArm_07", "b_RightHand_08"],
    ];
    assert_eq!(legs, expect.map(|l| l.map(String::from)));
    let pelvis = feet.pelvis().expect("a pelvis above all four legs");
    for leg in feet.legs() {
        let mut j = leg.chain().joints()[0];
        while j != pelvis {
            j = fox.parent(j).expect("every hip is below the pelvis");
        }
    }
    let (kay, _) = load("gltf/KayKit_Rig_Medium_General.glb", "Rig_Medium|Idle_A");
    let feet = Feet::guess(&kay).unwrap();
    let mut legs = names(&kay, &feet);
    legs.sort();
    assert_eq!(
        legs,
        [
            ["upperleg.l", "lowerleg.l", "foot.l"],
            ["upperleg.r", "lowerleg.r", "foot.r"]
        ]
        .map(|l| l.map(String::from))
    );
    assert_eq!(feet.pelvis().map(|p| kay.name(p)), Some("hips"));
    let (robot, _) = load("gltf/robot_quaternius.glb", "Robot_Walking");
    assert!(matches!(Feet::guess(&robot), Err(skelett::Error::NoLegs)));
}

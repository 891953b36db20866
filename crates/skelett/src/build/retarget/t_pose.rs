//! A T-pose built for any humanoid skeleton: the common reference pose when neither the
//! source's rest pose nor any of its frames is one (a capture whose rest pose is the first
//! frame, a character modelled in an A-pose or with bent knees).
//!
//! From the skeleton's rest pose, with its parts found as the automatic joint map finds them
//! ([`super::JointMap::auto`]): the spine, neck and head bones turn to point straight up,
//! the thighs and shins straight down, the upper arms and forearms straight out to each
//! side, horizontally. Each bone turns by the shortest arc from its rest direction (the
//! direction to the next joint of its limb), so twist about the bone, the clavicles, hands,
//! fingers and feet keep their rest rotation relative to their parent. Up is scene +Y; the
//! side direction is the horizontal line from the right upper arm to the left one.

use glam::{Quat, Vec3};

use super::{rig, world_pose, WorldJoint};
use crate::{Error, JointIndex, Skeleton, Transform};

/// A T-pose of `skeleton` (local transforms, one per joint): see the module docs.
///
/// ```
/// # use skelett::*;
/// # use glam::{Quat, Vec3};
/// // A-pose arms: the upper arms hang 45 degrees down.
/// let j = |name: &str, parent, t: Vec3, q: Quat| RawJoint { name: name.into(), parent,
///     rest: Transform::new(t, q, Vec3::ONE) };
/// let down = Quat::from_rotation_z(-std::f32::consts::FRAC_PI_4);
/// let skeleton = RawSkeleton { joints: vec![
///     j("Hips", None, Vec3::new(0.0, 1.0, 0.0), Quat::IDENTITY),
///     j("Spine", Some(0), Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY),
///     j("LeftArm", Some(1), Vec3::new(0.2, 0.0, 0.0), down),
///     j("LeftForeArm", Some(2), Vec3::new(0.3, 0.0, 0.0), Quat::IDENTITY),
///     j("LeftHand", Some(3), Vec3::new(0.3, 0.0, 0.0), Quat::IDENTITY),
///     j("RightArm", Some(1), Vec3::new(-0.2, 0.0, 0.0), down.inverse()),
///     j("RightForeArm", Some(5), Vec3::new(-0.3, 0.0, 0.0), Quat::IDENTITY),
///     j("RightHand", Some(6), Vec3::new(-0.3, 0.0, 0.0), Quat::IDENTITY),
///     j("LeftUpLeg", Some(0), Vec3::new(0.1, 0.0, 0.0), Quat::IDENTITY),
///     j("LeftLeg", Some(8), Vec3::new(0.0, -0.45, 0.0), Quat::IDENTITY),
///     j("LeftFoot", Some(9), Vec3::new(0.0, -0.45, 0.0), Quat::IDENTITY),
///     j("RightUpLeg", Some(0), Vec3::new(-0.1, 0.0, 0.0), Quat::IDENTITY),
///     j("RightLeg", Some(11), Vec3::new(0.0, -0.45, 0.0), Quat::IDENTITY),
///     j("RightFoot", Some(12), Vec3::new(0.0, -0.45, 0.0), Quat::IDENTITY),
/// ], ..Default::default() }.build()?;
/// let pose = skelett::retarget::t_pose(&skeleton)?;
/// let mut model = vec![glam::Mat4::IDENTITY; skeleton.len()];
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// let at = |j: usize| model[j].w_axis.truncate();
/// assert!((at(4) - at(2)).normalize().distance(Vec3::X) < 1e-5); // the left arm points out
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::NotHumanoid`] when the skeleton has no two legs by name or layout.
pub fn t_pose(skeleton: &Skeleton) -> Result<Vec<Transform>, Error> {
    let rest = super::rest_world_positions(skeleton);
    let rig = rig::guess(skeleton, &rest).ok_or_else(|| Error::NotHumanoid {
        problem: "no two legs (by name or by the rest pose's layout) to build a T-pose on".into(),
    })?;
    // Which way is left: from the right upper arm (or thigh) to the left one.
    let across = |limbs: &[rig::Limb; 2]| {
        let (l, r) = (limbs[0].upper?, limbs[1].upper?);
        let d = rest[l as usize] - rest[r as usize];
        Vec3::new(d.x, 0.0, d.z).try_normalize()
    };
    let left = across(&rig.arms)
        .or_else(|| across(&rig.legs))
        .ok_or_else(|| Error::NotHumanoid {
            problem: "the left and right limbs stand at the same place".into(),
        })?;
    // The chains to straighten, each with the direction its bones should point, from the
    // body outward, so that each turn starts from its parent's final place.
    let mut chains: Vec<(Vec<JointIndex>, Vec3)> = Vec::new();
    let mut up_chain: Vec<JointIndex> = rig.spine.clone();
    up_chain.extend(&rig.neck);
    up_chain.extend(rig.head);
    chains.push((up_chain, Vec3::Y));
    for (limbs, outward) in [
        (&rig.legs, [-Vec3::Y, -Vec3::Y]),
        (&rig.arms, [left, -left]),
    ] {
        for (limb, dir) in limbs.iter().zip(outward) {
            let joints = [limb.upper, limb.lower, limb.end].into_iter().flatten();
            chains.push((joints.collect(), dir));
        }
    }
    let mut pose = skeleton.rest_pose().to_vec();
    let mut world = vec![WorldJoint::IDENTITY; skeleton.len()];
    let root = WorldJoint::of_root(skeleton);
    let parent_of = |world: &[WorldJoint], j: JointIndex| match skeleton.parent(j) {
        Some(p) => world[p as usize],
        None => root,
    };
    for (chain, want) in chains {
        for (i, &joint) in chain.iter().enumerate().take(chain.len().saturating_sub(1)) {
            world_pose(skeleton, &root, &pose, &mut world);
            let at = world[joint as usize].position;
            let have = world[chain[i + 1] as usize].position - at;
            let Some(have) = have.try_normalize() else {
                continue;
            };
            let turn = Quat::from_rotation_arc(have, want);
            let parent = parent_of(&world, joint);
            let rotation =
                (parent.rotation.inverse() * turn * world[joint as usize].rotation).normalize();
            if !rotation.is_finite() {
                continue;
            }
            pose[joint as usize].rotation = rotation;
            // Joints of the limb that hang elsewhere (robot_quaternius's foot controls at the
            // root) turn with it, rigidly.
            for &k in &chain[i + 1..] {
                if skeleton.is_below(k, joint) {
                    continue;
                }
                let parent = parent_of(&world, k);
                if let Some(local) =
                    world[k as usize].turned_about(at, turn, &parent, pose[k as usize].scale)
                {
                    pose[k as usize] = local;
                }
            }
        }
    }
    Ok(pose)
}

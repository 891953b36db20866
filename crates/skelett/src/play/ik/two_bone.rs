//! Two-bone IK: an arm (shoulder, elbow, wrist) or a leg (hip, knee, ankle) brought to a
//! target, analytically.
//!
//! The law of cosines gives where the mid joint must be for the end to land on the target;
//! the bend direction (from a pole vector or the mid joint's hinge axis) picks which of the
//! circle of such places; the start joint is then turned by the shortest arc that carries the
//! mid joint there, and the mid joint by the shortest arc that carries the end onto the
//! target. Shortest arcs keep as much of the animated pose (the twist along each bone) as the
//! constraint allows.

use glam::{Mat3, Mat4, Quat, Vec3};

use super::{
    arc, arc_scaled, check_descendant, finite, finite_vec, rotation_of, turn_local, turn_model,
    turn_model_by, weighted, IkReport, EPS,
};
use crate::error::check_len;
use crate::{Error, JointIndex, Skeleton, Transform};

/// Three joints of a skeleton, checked once: `start` above `mid` above `end` (each a
/// descendant of the one before; joints between them, such as twist joints, stay as they
/// are).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoBoneChain {
    start: JointIndex,
    mid: JointIndex,
    end: JointIndex,
    /// The end is this point of the mid joint's local space instead of the `end` joint
    /// (which is then `mid`).
    tip: Option<Vec3>,
    /// One more than the largest index: the pose and model lengths the solver needs.
    len: usize,
}

impl TwoBoneChain {
    /// The chain `[start, mid, end]` of `skeleton`.
    ///
    /// # Errors
    /// [`Error::NoSuchJoint`] for an index past the skeleton, [`Error::NotAChain`] if `mid`
    /// is not below `start` or `end` not below `mid`.
    pub fn new(skeleton: &Skeleton, [start, mid, end]: [JointIndex; 3]) -> Result<Self, Error> {
        check_descendant(skeleton, start, mid)?;
        check_descendant(skeleton, mid, end)?;
        Ok(TwoBoneChain {
            start,
            mid,
            end,
            tip: None,
            len: 1 + start.max(mid).max(end) as usize,
        })
    }

    /// A chain whose end is not a joint but a point of the mid joint's local space (`tip`):
    /// the far end of a lower leg in rigs whose foot is a separate control joint, such as
    /// Blender IK rigs exported with their foot bones at the root. [`TwoBone::end_rotation`]
    /// has nothing to turn then.
    ///
    /// # Errors
    /// As [`TwoBoneChain::new`]; [`Error::NotFinite`] for a NaN or infinite tip.
    pub fn with_tip(
        skeleton: &Skeleton,
        [start, mid]: [JointIndex; 2],
        tip: Vec3,
    ) -> Result<Self, Error> {
        check_descendant(skeleton, start, mid)?;
        finite_vec("two-bone tip", tip)?;
        Ok(TwoBoneChain {
            start,
            mid,
            end: mid,
            tip: Some(tip),
            len: 1 + start.max(mid) as usize,
        })
    }

    /// A chain with a tip (see [`TwoBoneChain::with_tip`]) at the place `joint` has in the
    /// mid joint's frame in the skeleton's rest pose: for rigs whose foot is a control joint
    /// outside the leg (robot_quaternius's `Foot.L` at the root), the lower leg's end is where
    /// the foot is at rest.
    ///
    /// # Errors
    /// As [`TwoBoneChain::with_tip`]; [`Error::NoSuchJoint`] for `joint`; [`Error::NotFinite`]
    /// if the rest pose gives no finite tip (a zero-scaled mid joint).
    pub fn reaching_joint(
        skeleton: &Skeleton,
        [start, mid]: [JointIndex; 2],
        joint: JointIndex,
    ) -> Result<Self, Error> {
        super::in_range(skeleton, joint)?;
        super::in_range(skeleton, mid)?;
        let mut model = vec![Mat4::IDENTITY; skeleton.len()];
        crate::local_to_model(skeleton, skeleton.rest_pose(), 0, &mut model)?;
        let tip = model[mid as usize]
            .inverse()
            .transform_point3(model[joint as usize].w_axis.truncate());
        Self::with_tip(skeleton, [start, mid], tip)
    }

    /// The end point in the mid joint's space, for a chain built by [`TwoBoneChain::with_tip`].
    pub fn tip(&self) -> Option<Vec3> {
        self.tip
    }

    /// The chain of the joints named `names` (start, mid, end).
    ///
    /// # Errors
    /// [`Error::NoSuchJointName`] for a name the skeleton lacks; otherwise as
    /// [`TwoBoneChain::new`].
    pub fn by_name(skeleton: &Skeleton, names: [&str; 3]) -> Result<Self, Error> {
        let find = |n: &str| {
            skeleton
                .find(n)
                .ok_or_else(|| Error::NoSuchJointName(n.to_string()))
        };
        Self::new(
            skeleton,
            [find(names[0])?, find(names[1])?, find(names[2])?],
        )
    }

    /// The joints, start to end (the end is the mid joint for a chain with a tip).
    pub fn joints(&self) -> [JointIndex; 3] {
        [self.start, self.mid, self.end]
    }
}

/// Which side the mid joint (elbow, knee) bends toward.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bend {
    /// A model-space direction the mid joint points toward (the part of it perpendicular to
    /// the start-to-target line). When it lies along that line, the chain keeps the side it
    /// bends to in the input pose.
    Pole(Vec3),
    /// The mid joint's hinge axis, in its local space. It picks the bend plane (the plane
    /// perpendicular to it) and side: the mid joint moves toward `(target - start) × hinge`
    /// (hinge in model space), so a leg pointing down (-Y) whose knee should go forward (+Z)
    /// has a hinge along +X in model space. The joints then turn by shortest arcs, as with a
    /// pole: the knee is not constrained to turn about its hinge.
    Hinge(Vec3),
}

/// A two-bone IK request: where the end joint should go and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoBone {
    /// Model-space position for the end joint.
    pub target: Vec3,
    /// Which side the chain bends toward.
    pub bend: Bend,
    /// 0 leaves the pose as it is (bit for bit), 1 meets the target; values between move
    /// continuously. Clamped to 0..=1.
    pub weight: f32,
    /// Soft IK: the fraction of the chain's full length from which the end eases toward
    /// full extension instead of snapping straight (1: no softening; 0.9 is typical). The
    /// end then stays short of targets near or beyond full reach.
    pub soften: f32,
    /// Turn of the whole chain about the start-to-target line, in radians, after bending.
    pub twist: f32,
    /// A model-space rotation for the end joint (a hand holding a handle, a foot flat on the
    /// ground), blended in by `weight`; `None` keeps the end's animated rotation relative to
    /// the mid joint.
    pub end_rotation: Option<Quat>,
}

impl TwoBone {
    /// Reach `target`, bending toward `pole`, at full weight, without softening or twist.
    pub fn new(target: Vec3, pole: Vec3) -> Self {
        TwoBone {
            target,
            bend: Bend::Pole(pole),
            weight: 1.0,
            soften: 1.0,
            twist: 0.0,
            end_rotation: None,
        }
    }
}

/// Solves two-bone IK on `chain`: turns the start and mid joints of `local` (and the end
/// joint, with [`TwoBone::end_rotation`]) so that the end reaches `ik.target`, and updates
/// the three joints' `model` matrices to match. `model` must hold the model-space matrices
/// of `local` (from [`crate::local_to_model`]) for the chain's joints.
///
/// Unreachable targets leave the chain straight and pointing at them; targets closer than
/// the bones allow fold it as far as it goes.
///
/// ```
/// # use skelett::*;
/// # use skelett::ik::*;
/// # use glam::{Mat4, Quat, Vec3};
/// // A leg: hip at the origin, knee 1 below, ankle 1 below that.
/// let down = |name: &str, parent| RawJoint { name: name.into(), parent,
///     rest: Transform::new(Vec3::new(0.0, -1.0, 0.0), Quat::IDENTITY, Vec3::ONE) };
/// let skeleton = RawSkeleton { joints: vec![
///     RawJoint { name: "hip".into(), parent: None, rest: Transform::IDENTITY },
///     down("knee", Some(0)), down("ankle", Some(1)),
/// ], ..Default::default() }.build()?;
/// let chain = TwoBoneChain::by_name(&skeleton, ["hip", "knee", "ankle"])?;
/// let mut pose = Pose::rest(&skeleton);
/// let mut model = vec![Mat4::IDENTITY; 3];
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// // Raise the foot to 1.5 below the hip, knee forward (+Z).
/// let target = Vec3::new(0.0, -1.5, 0.0);
/// let report = two_bone(&chain, &TwoBone::new(target, Vec3::Z), &mut pose, &mut model)?;
/// assert!(report.reached);
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// assert!(model[2].w_axis.truncate().distance(target) < 1e-5);
/// assert!(model[1].w_axis.z > 0.0, "the knee bends forward");
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::NotFinite`] for a NaN or infinite target, pole, weight, soften or twist (nothing
/// is written then); [`Error::Length`] if `local` or `model` does not reach the chain's
/// joints.
pub fn two_bone(
    chain: &TwoBoneChain,
    ik: &TwoBone,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<IkReport, Error> {
    check_len("local", chain.len, local.len())?;
    check_len("model", chain.len, model.len())?;
    finite_vec("two-bone target", ik.target)?;
    match ik.bend {
        Bend::Pole(p) => finite_vec("two-bone pole", p)?,
        Bend::Hinge(h) => finite_vec("two-bone hinge", h)?,
    }
    finite("two-bone weight", ik.weight)?;
    finite("two-bone soften", ik.soften)?;
    finite("two-bone twist", ik.twist)?;
    if let Some(q) = ik.end_rotation {
        if !q.is_finite() {
            return Err(Error::NotFinite {
                what: "two-bone end rotation",
            });
        }
    }
    let (s, m, e) = (chain.start as usize, chain.mid as usize, chain.end as usize);
    let (ms, mm) = (model[s], model[m]);
    let me = match chain.tip {
        Some(tip) => mm * Mat4::from_translation(tip),
        None => model[e],
    };
    if !(ms.is_finite() && mm.is_finite() && me.is_finite()) {
        return Err(Error::NotFinite {
            what: "two-bone chain's model matrices",
        });
    }
    let solved = solve(ik, &ms, &mm, &me);
    let weight = ik.weight.clamp(0.0, 1.0);
    if weight == 0.0 {
        return Ok(solved.report);
    }
    let a = ms.w_axis.truncate();
    // The start joint, and with it everything below.
    let c1 = weighted(solved.start, weight);
    turn_local(&mut local[s], &ms, c1);
    let r1 = Mat3::from_quat(c1);
    model[s] = turn_model_by(&ms, a, &r1);
    let mm = turn_model_by(&mm, a, &r1);
    let me = turn_model_by(&me, a, &r1);
    // The mid joint, about its new position.
    let c2 = weighted(solved.mid, weight);
    let b = mm.w_axis.truncate();
    turn_local(&mut local[m], &mm, c2);
    let r2 = Mat3::from_quat(c2);
    model[m] = turn_model_by(&mm, b, &r2);
    let mut me = turn_model_by(&me, b, &r2);
    if chain.tip.is_some() {
        return Ok(solved.report);
    }
    if let Some(want) = ik.end_rotation {
        let c3 = weighted(want.normalize() * rotation_of(&me).conjugate(), weight);
        turn_local(&mut local[e], &me, c3);
        me = turn_model(&me, me.w_axis.truncate(), c3);
    }
    model[e] = me;
    Ok(solved.report)
}

/// The full-weight corrections (model space) and what they achieve.
struct Solved {
    start: Quat,
    mid: Quat,
    report: IkReport,
}

fn solve(ik: &TwoBone, ms: &Mat4, mm: &Mat4, me: &Mat4) -> Solved {
    let (a, b, c) = (
        ms.w_axis.truncate(),
        mm.w_axis.truncate(),
        me.w_axis.truncate(),
    );
    let (ab, bc) = (b - a, c - b);
    let (l1, l2) = (ab.length(), bc.length());
    let to_target = ik.target - a;
    let dt = to_target.length();
    let full = l1 + l2;
    // The line the end is put on: toward the target, or where the end is when the target
    // sits on the start joint.
    let u = if dt > EPS * full.max(1.0) {
        to_target / dt
    } else {
        (c - a).try_normalize().unwrap_or(Vec3::Y)
    };
    if l1 <= EPS || l2 <= EPS {
        // A zero-length bone: the chain is one rigid segment; turn it toward the target.
        let ac = c - a;
        let start = match ac.try_normalize() {
            Some(d) => arc(d, u),
            None => Quat::IDENTITY,
        };
        let end = a + start * ac;
        let distance = end.distance(ik.target);
        return Solved {
            start,
            mid: Quat::IDENTITY,
            report: IkReport {
                reached: distance <= 1e-4 * full.max(EPS),
                distance,
            },
        };
    }
    // Bend direction, perpendicular to u: the pole's or the hinge's, else the input's.
    let wanted = match ik.bend {
        Bend::Pole(p) => p,
        Bend::Hinge(h) => u.cross(rotation_of(mm) * h),
    };
    let perpendicular = |v: Vec3| v - u * v.dot(u);
    let mut n = perpendicular(wanted);
    if n.length_squared() <= EPS * EPS * wanted.length_squared().max(1.0) {
        n = perpendicular(ab);
    }
    let n = n
        .try_normalize()
        .unwrap_or_else(|| u.any_orthonormal_vector());
    let n = if ik.twist != 0.0 {
        Quat::from_axis_angle(u, ik.twist) * n
    } else {
        n
    };
    // How far the end goes along u: the target's distance, softened near full reach, within
    // what the bones allow.
    let mut d = dt;
    let soften = ik.soften.clamp(0.0, 1.0);
    let da = soften * full;
    let ds = full - da;
    if ds > 0.0 && d > da {
        d = da + ds * (1.0 - (-(d - da) / ds).exp());
    }
    let d = d.clamp((l1 - l2).abs().max(EPS * full), full);
    let cos_a = ((l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d)).clamp(-1.0, 1.0);
    let sin_a = (1.0 - cos_a * cos_a).max(0.0).sqrt();
    let b_new = a + (u * cos_a + n * sin_a) * l1;
    let c_new = a + u * d;
    // Both arcs turn a bone onto the place the law of cosines put it.
    let start = arc_scaled(ab, b_new - a);
    let c1 = a + start * (c - a);
    let mid = arc_scaled(c1 - b_new, c_new - b_new);
    let distance = c_new.distance(ik.target);
    Solved {
        start,
        mid,
        report: IkReport {
            reached: distance <= 1e-4 * full,
            distance,
        },
    }
}

//! Aim (look-at): a joint turned so that a ray it carries passes through a target, for one
//! joint or spread over a chain (spine, neck, head).
//!
//! The ray starts at an offset from the joint (eyes are ahead of and above the head joint)
//! and runs along a forward axis, both in the aiming joint's local space. The turn that makes
//! it pass through the target is found on the sphere through the target around the pivot, so
//! the offset is honoured exactly; then the joint is turned about the pivot-to-target line so
//! that its up axis leans toward a pole, and by an optional twist.

use glam::{Mat4, Quat, Vec3};

use super::{
    arc_scaled, check_descendant, finite, finite_vec, in_range, limited, turn_local, turn_model,
    weighted, IkReport, EPS,
};
use crate::error::check_len;
use crate::{Error, JointIndex, Skeleton, Transform};

/// An aim request: which ray of the aiming joint to turn toward which point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aim {
    /// Model-space point to aim at.
    pub target: Vec3,
    /// The aiming joint's forward axis, in its local space (normalized here; a zero axis
    /// aims +Z).
    pub forward: Vec3,
    /// Where the ray starts, in the aiming joint's local space (the eyes' position relative
    /// to the head joint); zero for the joint itself.
    pub offset: Vec3,
    /// The aiming joint's up axis, in its local space: turned toward [`Aim::pole`].
    pub up: Vec3,
    /// Model-space direction the up axis leans toward after aiming (world up, usually); zero
    /// keeps the roll the shortest turn gives.
    pub pole: Vec3,
    /// Roll about the aiming line, in radians, after the pole.
    pub twist: f32,
    /// 0 leaves the pose bit for bit, 1 aims fully; clamped to 0..=1.
    pub weight: f32,
    /// The largest turn a joint may make, in radians (π or more: no limit). A joint asked
    /// to turn further turns this far toward the target.
    pub max_angle: f32,
}

impl Aim {
    /// Aim the joint's `forward` axis at `target`, no offset, no pole, full weight, no limit.
    pub fn new(target: Vec3, forward: Vec3) -> Self {
        Aim {
            target,
            forward,
            offset: Vec3::ZERO,
            up: Vec3::Y,
            pole: Vec3::ZERO,
            twist: 0.0,
            weight: 1.0,
            max_angle: std::f32::consts::PI,
        }
    }

    fn check(&self) -> Result<(), Error> {
        finite_vec("aim target", self.target)?;
        finite_vec("aim forward axis", self.forward)?;
        finite_vec("aim offset", self.offset)?;
        finite_vec("aim up axis", self.up)?;
        finite_vec("aim pole", self.pole)?;
        finite("aim twist", self.twist)?;
        finite("aim weight", self.weight)?;
        if self.max_angle.is_nan() {
            return Err(Error::NotFinite {
                what: "aim angle limit",
            });
        }
        Ok(())
    }
}

/// Turns `joint` of `local` so that the ray of `aim` passes through its target, and updates
/// `model[joint]`. `model` holds the model-space matrices of `local` (from
/// [`crate::local_to_model`]).
///
/// ```
/// # use skelett::*;
/// # use skelett::ik::*;
/// # use glam::{Mat4, Quat, Vec3};
/// let skeleton = RawSkeleton { joints: vec![
///     RawJoint { name: "head".into(), parent: None,
///                rest: Transform::new(Vec3::new(0.0, 1.7, 0.0), Quat::IDENTITY, Vec3::ONE) },
/// ], ..Default::default() }.build()?;
/// let mut pose = Pose::rest(&skeleton);
/// let mut model = vec![Mat4::IDENTITY; 1];
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// // Look (+Z is forward) at a point to the left, eyes 10 cm ahead of the head joint.
/// let mut look = Aim::new(Vec3::new(2.0, 1.7, 0.0), Vec3::Z);
/// look.offset = Vec3::new(0.0, 0.0, 0.1);
/// let report = aim(&skeleton, 0, &look, &mut pose, &mut model)?;
/// assert!(report.reached);
/// let forward = model[0].transform_vector3(Vec3::Z);
/// assert!(forward.x > 0.99);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::NotFinite`] for a NaN or infinite input (nothing is written then);
/// [`Error::NoSuchJoint`]; [`Error::Length`] if `local` or `model` is shorter than the
/// skeleton.
pub fn aim(
    skeleton: &Skeleton,
    joint: JointIndex,
    aim: &Aim,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<IkReport, Error> {
    aim_chain(skeleton, &[joint], &[1.0], aim, local, model)
}

/// Spreads an aim over a chain (an empty chain does nothing and reports `reached: false`
/// with an infinite distance): `chain` lists joints from the top (a spine joint) to the
/// aiming joint (the head), each below the one before; `aim`'s ray (forward, offset, up) is
/// the last joint's. Each joint in turn takes `weights[i]` of the turn that is still needed
/// (after the joints above it turned): weights such as `[0.3, 0.5, 1.0]` let the spine and
/// neck share the look and the head finish it. [`Aim::weight`] scales the whole and
/// [`Aim::max_angle`] limits each joint.
///
/// # Errors
/// As [`aim`]; [`Error::NotAChain`] if a joint is not below the one before;
/// [`Error::Length`] if `weights` is shorter than `chain`.
pub fn aim_chain(
    skeleton: &Skeleton,
    chain: &[JointIndex],
    weights: &[f32],
    aim: &Aim,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<IkReport, Error> {
    let n = skeleton.len();
    check_len("local", n, local.len())?;
    check_len("model", n, model.len())?;
    check_len("aim chain weights", chain.len(), weights.len())?;
    aim.check()?;
    for w in &weights[..chain.len()] {
        finite("aim chain weight", *w)?;
    }
    let Some(&tip) = chain.last() else {
        return Ok(IkReport {
            reached: false,
            distance: f32::INFINITY,
        });
    };
    in_range(skeleton, chain[0])?;
    for pair in chain.windows(2) {
        check_descendant(skeleton, pair[0], pair[1])?;
    }
    for &j in chain {
        if !model[j as usize].is_finite() {
            return Err(Error::NotFinite {
                what: "aim chain's model matrices",
            });
        }
    }
    let forward = aim.forward.try_normalize().unwrap_or(Vec3::Z);
    let weight = aim.weight.clamp(0.0, 1.0);
    if weight == 0.0 {
        return Ok(report(aim, &model[tip as usize], forward, false));
    }
    let mut limited_any = false;
    for (i, &j) in chain.iter().enumerate() {
        let share = (weights[i].clamp(0.0, 1.0)) * weight;
        if share == 0.0 {
            continue;
        }
        let pivot = model[j as usize].w_axis.truncate();
        let (c, hit_limit) = limited(
            turn_toward(aim, &model[tip as usize], forward, pivot),
            aim.max_angle,
        );
        limited_any |= hit_limit && share >= 1.0;
        let c = weighted(c, share);
        let mj = model[j as usize];
        turn_local(&mut local[j as usize], &mj, c);
        for &k in &chain[i..] {
            model[k as usize] = turn_model(&model[k as usize], pivot, c);
        }
    }
    Ok(report(aim, &model[tip as usize], forward, limited_any))
}

/// The model-space turn about `pivot` that brings the tip's ray onto the target, with the up
/// axis leaning toward the pole and the twist applied.
fn turn_toward(aim: &Aim, tip: &Mat4, forward: Vec3, pivot: Vec3) -> Quat {
    let t = aim.target - pivot;
    let dt2 = t.length_squared();
    if dt2 <= EPS * EPS {
        return Quat::IDENTITY; // target on the pivot: every direction is as good
    }
    let dt = dt2.sqrt();
    let t_dir = t * dt.recip();
    let o = tip.transform_point3(aim.offset) - pivot;
    // The forward axis in model space, not normalized: its length is the joint's scale.
    let f = tip.transform_vector3(forward);
    let ff = f.length_squared();
    let (f, ff) = if ff > 0.0 && ff.is_finite() {
        (f, ff)
    } else {
        (forward, 1.0)
    };
    // The point o + s f at the target's distance from the pivot (s >= 0, the far one), so
    // that turning it onto t puts the ray through the target: |o + s f|² = dt², a quadratic
    // in s. Inside the offset's sphere no such point exists and the forward axis itself is
    // aimed.
    let of = o.dot(f);
    let disc = of * of - ff * (o.length_squared() - dt2);
    let s = (-of + disc.max(0.0).sqrt()) / ff;
    let mut c = if disc >= 0.0 && s >= 0.0 {
        arc_scaled(o + f * s, t)
    } else {
        arc_scaled(f, t)
    };
    // Roll about the aiming line: the up axis toward the pole. Both flattened across the
    // line, the arc between them is a turn about the line itself (its axis taken exactly
    // along t_dir, whatever rounding left in them): half-angle sine and cosine from the
    // cross and dot products, one square root for their lengths, one to normalize.
    if aim.pole != Vec3::ZERO {
        let up = c * tip.transform_vector3(aim.up);
        let flat = |x: Vec3| x - t_dir * x.dot(t_dir);
        let (u, p) = (flat(up), flat(aim.pole));
        let lengths2 = u.length_squared() * p.length_squared();
        if lengths2 > EPS * EPS * EPS * EPS && lengths2.is_finite() {
            let sin = u.cross(p).dot(t_dir);
            let cos = lengths2.sqrt() + u.dot(p);
            let n2 = sin * sin + cos * cos;
            let roll = if n2 > 1e-12 * lengths2 {
                let r = n2.sqrt().recip();
                let axis = t_dir * (sin * r);
                Quat::from_xyzw(axis.x, axis.y, axis.z, cos * r)
            } else {
                // Up and pole opposite: a half turn about the line.
                Quat::from_xyzw(t_dir.x, t_dir.y, t_dir.z, 0.0)
            };
            c = roll * c;
        }
    }
    if aim.twist != 0.0 {
        c = Quat::from_axis_angle(t_dir, aim.twist) * c;
    }
    c
}

/// How far the tip's ray passes from the target.
fn report(aim: &Aim, tip: &Mat4, forward: Vec3, limited: bool) -> IkReport {
    let o = tip.transform_point3(aim.offset);
    let f = tip.transform_vector3(forward).normalize_or(forward);
    let to = aim.target - o;
    let along = to.dot(f).max(0.0);
    let distance = (to - f * along).length();
    IkReport {
        reached: !limited && distance <= 1e-4 * to.length().max(1e-3),
        distance,
    }
}

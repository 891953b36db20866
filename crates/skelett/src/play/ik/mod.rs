//! Inverse kinematics: bending a sampled and blended pose to the world.
//!
//! ```text
//! pose (local SRT) ──local_to_model──▶ model matrices ──┐
//!                                                        ├─▶ two_bone / aim / aim_chain
//! targets (model space, from game code) ─────────────────┘        │
//!        corrected local rotations of the chain's joints ◀────────┘
//!        + the chain's own model matrices, updated
//! ```
//!
//! Every solver is a stateless function in the style of the rest of `play/`: the skeleton
//! and the targets are borrowed, the pose and the model matrices are the caller's, nothing is
//! allocated. A solver reads the model-space matrices of its joints (what
//! [`crate::local_to_model`] wrote), computes model-space rotations that bring the chain to
//! the target, and writes them back as corrections of the joints' **local** rotations, so
//! that blending, further modifiers and [`crate::local_to_model`] compose with them. It also
//! updates the model matrices of the joints it moved (and of the chain joints below them), so
//! that the next modifier can run at once; joints below the chain that are not part of it
//! (fingers under a wrist) are refreshed by running [`crate::local_to_model`] from the
//! chain's first joint afterwards.
//!
//! | solver | moves | what for |
//! |---|---|---|
//! | [`two_bone`] | start and mid joints (and optionally the end's rotation) | an arm reaching, a leg planted |
//! | [`aim`] | one joint | a head, an eye, a gun turned toward a point |
//! | [`aim_chain`] | several joints, each a share of the turn | spine, neck and head looking at a point |
//! | [`place_feet`] | pelvis, legs and feet of a character ([`Feet`]) | feet on a slope, a stair, terrain ([`Ground`]) |
//! | [`pin_feet`] | legs and feet of a character ([`Feet`]) | a planted foot held where it landed (retargeting), a foot on a pedal |
//! | [`fabrik`], [`ccd`] | every joint of a [`Chain`] of any length, each within its [`Limit`] | a tail, a tentacle, a finger, a crane arm |
//!
//! Robustness: a NaN or infinite input is an [`Error::NotFinite`] and the pose is left
//! untouched; joints that do not form a chain are [`Error::NotAChain`]; degenerate geometry
//! (zero-length bones, a target on the chain's root, a pole along the chain) has a defined,
//! finite answer; weight 0 returns the pose bit for bit.
//!
//! Scale: corrections are exact for rigid, uniformly scaled and mirrored (negatively scaled)
//! joints, what animation rigs use. Under a non-uniformly scaled parent no rotation keeps
//! bone lengths; the solvers then compute the correction as if the scale were uniform, and
//! the result is approximate (finite always; property-tested).

mod aim;
mod chain;
mod foot;
mod ground;
mod limit;
mod two_bone;

pub use aim::{aim, aim_chain, Aim};
pub use chain::{ccd, fabrik, Chain, Reach};
pub(crate) use foot::{drop_to_reach, end_point};
pub use foot::{pin_feet, place_feet, Feet, FeetReport, Leg, Pin, Placement, MAX_LEGS};
pub use ground::{Ground, GroundHit, Heightfield, Plane, TriangleMesh};
pub use limit::Limit;
pub use two_bone::{two_bone, Bend, TwoBone, TwoBoneChain};

use glam::{Mat4, Quat, Vec3};

use crate::{Error, JointIndex, Skeleton, Transform};

/// What a solver achieved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkReport {
    /// The target was met: for [`two_bone`], by the full-weight solution (within 1e-4 of
    /// the chain's length; with a weight below 1 the pose only moves part of the way); for
    /// [`aim`] and [`aim_chain`], by the pose as written (the ray passes within 1e-4 of the
    /// distance through the target, and no angle limit held the aim back).
    pub reached: bool,
    /// For [`two_bone`], how far the full-weight solution leaves the end from the target;
    /// for aims, how far the written pose's ray passes from it (model-space units).
    pub distance: f32,
}

/// Below this, a length or a direction is treated as zero.
const EPS: f32 = 1e-6;

/// Checks that `v` is finite.
fn finite_vec(what: &'static str, v: Vec3) -> Result<(), Error> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(Error::NotFinite { what })
    }
}

/// Checks that `x` is finite.
fn finite(what: &'static str, x: f32) -> Result<(), Error> {
    if x.is_finite() {
        Ok(())
    } else {
        Err(Error::NotFinite { what })
    }
}

/// Checks that `joint` is a joint of `skeleton`.
fn in_range(skeleton: &Skeleton, joint: JointIndex) -> Result<(), Error> {
    if (joint as usize) < skeleton.len() {
        Ok(())
    } else {
        Err(Error::NoSuchJoint {
            joint,
            joints: skeleton.len(),
        })
    }
}

/// Checks that `child` lies below `ancestor` in `skeleton` (both in range, not equal).
fn check_descendant(
    skeleton: &Skeleton,
    ancestor: JointIndex,
    child: JointIndex,
) -> Result<(), Error> {
    in_range(skeleton, ancestor)?;
    in_range(skeleton, child)?;
    if skeleton.is_below(child, ancestor) {
        Ok(())
    } else {
        Err(Error::NotAChain { ancestor, child })
    }
}

/// The rotation of a model matrix (its scale divided out).
#[inline]
fn rotation_of(m: &Mat4) -> Quat {
    let (_, r, _) = m.to_scale_rotation_translation();
    if r.is_finite() {
        r.normalize()
    } else {
        Quat::IDENTITY
    }
}

/// Turns joint `local` by the model-space rotation `c` about its own origin: the local
/// correction `M⁻¹ c M`, with `M` the joint's model frame (`model`). A rotation's vector
/// part is its axis: `R⁻¹ c R` has the same angle about `R⁻¹` times the axis, and for a
/// rotation-and-uniform-scale matrix `R⁻¹ v` is `Mᵀ v` rescaled to `v`'s length, which
/// spares extracting `R` as a quaternion.
#[inline(always)]
fn turn_local(local: &mut Transform, model: &Mat4, c: Quat) {
    let v = Vec3::new(c.x, c.y, c.z);
    let len2 = v.length_squared();
    if len2 == 0.0 {
        return;
    }
    let m = glam::Mat3::from_mat4(*model);
    // A mirrored frame (M = R D, D a reflection): conjugating by D turns the axis n into
    // det(D) D n = -D n, and Mᵀ v is D Rᵀ v, so the axis is -Mᵀ v.
    let back = if m.determinant() < 0.0 {
        -(m.transpose() * v)
    } else {
        m.transpose() * v
    };
    let back_len2 = back.length_squared();
    let axis = if back_len2 > 0.0 && back_len2.is_finite() {
        back * (len2 / back_len2).sqrt()
    } else {
        v
    };
    let q = Quat::from_xyzw(axis.x, axis.y, axis.z, c.w);
    local.rotation = (local.rotation * q).normalize();
}

/// `model` turned by `c` about the model-space point `pivot`.
#[inline(always)]
fn turn_model(model: &Mat4, pivot: Vec3, c: Quat) -> Mat4 {
    turn_model_by(model, pivot, &glam::Mat3::from_quat(c))
}

/// `model` turned by the rotation matrix `r` about the model-space point `pivot` (one
/// matrix for several joints turned alike).
#[inline(always)]
fn turn_model_by(model: &Mat4, pivot: Vec3, r: &glam::Mat3) -> Mat4 {
    let r = *r;
    let t = model.w_axis.truncate();
    Mat4::from_cols(
        (r * model.x_axis.truncate()).extend(0.0),
        (r * model.y_axis.truncate()).extend(0.0),
        (r * model.z_axis.truncate()).extend(0.0),
        (r * (t - pivot) + pivot).extend(1.0),
    )
}

/// The rotation taking unit `from` to unit `to` (the shortest arc; a half turn about some
/// perpendicular axis when they are opposite).
#[inline]
fn arc(from: Vec3, to: Vec3) -> Quat {
    Quat::from_rotation_arc(from, to)
}

/// The shortest arc from `from` to `to`, neither of them unit: `(from × to, |from||to| +
/// from · to)` normalized. Opposite vectors give a half turn about a perpendicular axis; a
/// zero vector, the identity.
///
/// Computed in double precision: near a half turn `|from||to| + from · to` cancels, and in
/// single precision the few bits left set the arc's axis (a 1e-7 difference in the inputs,
/// such as FMA rounding in the model matrices, moved a two-bone chain's end by 1e-4 of its
/// length). Products of two floats are exact in doubles, so the cancellation leaves about
/// the inputs' own precision.
#[inline]
fn arc_scaled(from: Vec3, to: Vec3) -> Quat {
    let (f, t) = (from.as_dvec3(), to.as_dvec3());
    let lengths = (f.length_squared() * t.length_squared()).sqrt();
    let c = f.cross(t);
    let w = lengths + f.dot(t);
    let n2 = c.length_squared() + w * w;
    // Below this the two are (nearly) opposite, or one is zero: the arc's axis is lost in
    // rounding.
    if n2 > 1e-24 * lengths * lengths && n2.is_finite() {
        let r = n2.sqrt().recip();
        Quat::from_xyzw(
            (c.x * r) as f32,
            (c.y * r) as f32,
            (c.z * r) as f32,
            (w * r) as f32,
        )
    } else {
        match from.try_normalize() {
            Some(f) if to.length_squared() > 0.0 => {
                let a = f.any_orthonormal_vector();
                Quat::from_xyzw(a.x, a.y, a.z, 0.0)
            }
            _ => Quat::IDENTITY,
        }
    }
}

/// `c` scaled by `weight` in 0..=1 (slerp from the identity).
#[inline]
fn weighted(c: Quat, weight: f32) -> Quat {
    if weight >= 1.0 {
        c
    } else {
        Quat::IDENTITY.slerp(c, weight.max(0.0)).normalize()
    }
}

/// `c` with its angle limited to `max_angle` radians (and whether it was). No limit costs
/// nothing: the angle is only computed when `max_angle` is below a half turn and the
/// rotation's `w` says it may be exceeded.
#[inline]
fn limited(c: Quat, max_angle: f32) -> (Quat, bool) {
    if max_angle >= std::f32::consts::PI {
        return (c, false);
    }
    let c = if c.w < 0.0 { -c } else { c };
    // angle > max  <=>  cos(angle / 2) < cos(max / 2)
    if c.w >= (0.5 * max_angle.max(0.0)).cos() {
        return (c, false);
    }
    let angle = 2.0 * c.w.clamp(-1.0, 1.0).acos();
    (Quat::IDENTITY.slerp(c, max_angle.max(0.0) / angle), true)
}

//! Joint limits: how far a joint of an IK chain may turn from its rest rotation.
//!
//! A limit is stated in the joint's **rest frame**: the rotation it limits is
//! `rest.rotation⁻¹ · local.rotation`, the turn the pose makes away from the skeleton's rest
//! pose, with axes in the joint's own local axes at rest (a knee's hinge is usually its local
//! X). This is what Unity's and Godot's joint limits measure, and it keeps a limit valid
//! whatever the rest orientation a file chose for its bones.
//!
//! The solvers of [`super::chain`] call [`Limit::clamp`] on every joint they turn, after
//! every step, so the pose they leave is inside every limit.

use glam::{Quat, Vec3};

use crate::Error;

/// How far one joint may turn from its rest rotation.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Limit {
    /// Any rotation.
    #[default]
    Free,
    /// A hinge (a knee, an elbow, a finger joint): only turns about `axis` (rest frame), by
    /// an angle between `min` and `max` radians from rest (`-π ≤ min ≤ max ≤ π`).
    Hinge {
        /// The hinge axis in the joint's rest frame (normalized when the chain is built).
        axis: Vec3,
        /// Smallest angle, radians.
        min: f32,
        /// Largest angle, radians.
        max: f32,
    },
    /// A ball joint (a shoulder, a hip, a spine joint): the twist axis (usually the bone's
    /// direction, in the rest frame) swings at most `swing` radians away from where it is at
    /// rest, and the joint twists about it between `twist_min` and `twist_max` radians.
    Cone {
        /// The twist axis in the joint's rest frame (normalized when the chain is built).
        axis: Vec3,
        /// Largest swing, radians, 0..=π.
        swing: f32,
        /// Smallest twist, radians.
        twist_min: f32,
        /// Largest twist, radians.
        twist_max: f32,
    },
}

impl Limit {
    /// Checks the limit's numbers and normalizes its axis.
    pub(crate) fn checked(self) -> Result<Limit, &'static str> {
        use std::f32::consts::PI;
        let range = |lo: f32, hi: f32| {
            if !(lo.is_finite() && hi.is_finite()) {
                Err("its angles must be finite")
            } else if lo > hi {
                Err("its smallest angle is above its largest")
            } else if lo < -PI - 1e-6 || hi > PI + 1e-6 {
                Err("its angles must lie within -π..=π")
            } else {
                Ok(())
            }
        };
        let axis = |a: Vec3| {
            if !a.is_finite() {
                Err("its axis must be finite")
            } else {
                a.try_normalize().ok_or("its axis is zero")
            }
        };
        Ok(match self {
            Limit::Free => Limit::Free,
            Limit::Hinge { axis: a, min, max } => {
                range(min, max)?;
                Limit::Hinge {
                    axis: axis(a)?,
                    min,
                    max,
                }
            }
            Limit::Cone {
                axis: a,
                swing,
                twist_min,
                twist_max,
            } => {
                range(twist_min, twist_max)?;
                if !(0.0..=PI + 1e-6).contains(&swing) {
                    return Err("its swing must lie within 0..=π");
                }
                Limit::Cone {
                    axis: axis(a)?,
                    swing,
                    twist_min,
                    twist_max,
                }
            }
        })
    }

    /// The rotation (relative to rest, as above) nearest to `rel` that the limit allows:
    /// `rel` itself when it is inside. For a hinge, the part of `rel` about the axis with its
    /// angle clamped (the rest dropped); for a cone, the swing and the twist each clamped.
    ///
    /// ```
    /// # use skelett::ik::Limit;
    /// # use glam::{Quat, Vec3};
    /// let knee = Limit::Hinge { axis: Vec3::X, min: 0.0, max: 2.5 };
    /// // Bent backward by 0.3 rad: back to straight.
    /// let q = knee.clamp(Quat::from_rotation_x(-0.3));
    /// assert!(q.angle_between(Quat::IDENTITY) < 1e-6);
    /// // A turn about another axis keeps only its part about the hinge.
    /// let q = knee.clamp(Quat::from_rotation_x(1.0) * Quat::from_rotation_y(0.4));
    /// assert!((q.to_axis_angle().0 - Vec3::X).length() < 1e-5);
    /// ```
    pub fn clamp(&self, rel: Quat) -> Quat {
        match *self {
            Limit::Free => rel,
            Limit::Hinge { axis, min, max } => {
                let (_, twist) = twist_angle(rel, axis);
                Quat::from_axis_angle(axis, clamp_angle(twist, min, max))
            }
            Limit::Cone {
                axis,
                swing,
                twist_min,
                twist_max,
            } => {
                let (twist_q, twist) = twist_angle(rel, axis);
                let mut s = rel * twist_q.conjugate();
                if s.w < 0.0 {
                    s = -s;
                }
                let v = Vec3::new(s.x, s.y, s.z);
                let angle = 2.0 * v.length().atan2(s.w);
                if angle > swing {
                    s = match v.try_normalize() {
                        Some(a) => Quat::from_axis_angle(a, swing),
                        None => Quat::IDENTITY,
                    };
                }
                let t = clamp_angle(twist, twist_min, twist_max);
                if t == twist && angle <= swing {
                    rel
                } else {
                    (s * Quat::from_axis_angle(axis, t)).normalize()
                }
            }
        }
    }

    /// Whether `rel` (relative to rest) is within the limit, allowing `tolerance` radians.
    pub fn contains(&self, rel: Quat, tolerance: f32) -> bool {
        self.clamp(rel).angle_between(rel) <= tolerance
    }
}

/// The twist of `q` about unit `axis` (swing-twist decomposition, `q = swing · twist`), as a
/// quaternion and as an angle in -π..=π.
fn twist_angle(q: Quat, axis: Vec3) -> (Quat, f32) {
    let q = if q.w < 0.0 { -q } else { q };
    let along = Vec3::new(q.x, q.y, q.z).dot(axis);
    let t = Quat::from_xyzw(axis.x * along, axis.y * along, axis.z * along, q.w);
    let len = t.length();
    if len <= 1e-9 {
        // A half-turn swing: no defined twist; call it none.
        return (Quat::IDENTITY, 0.0);
    }
    (t / len, 2.0 * along.atan2(q.w))
}

/// `a` clamped to `min..=max` (radians, within -π..=π), going to the nearer end around the
/// circle when it is outside.
fn clamp_angle(a: f32, min: f32, max: f32) -> f32 {
    use std::f32::consts::TAU;
    if (min..=max).contains(&a) {
        return a;
    }
    let around = |x: f32| {
        let d = x.rem_euclid(TAU);
        d.min(TAU - d)
    };
    if around(a - min) <= around(a - max) {
        min
    } else {
        max
    }
}

/// An invalid limit given for a chain's joint.
pub(crate) fn bad_limit(joint: crate::JointIndex, why: &'static str) -> Error {
    Error::BadLimit { joint, why }
}

//! Joint transforms and quaternion interpolation.
//!
//! A joint's local transform is a [`Transform`]: scale, then rotation, then translation
//! (SRT), kept as separate components so that sampling and blending work on them directly and
//! matrices are built as late as possible ([`Transform::to_mat4`]). The interpolation helpers
//! here are what sampling and blending use for rotations:
//!
//! - [`nlerp`]: normalised linear interpolation on the shortest path; cheap, constant
//!   velocity only approximately. Blending uses it (weights, not time, drive it).
//! - [`slerp`]: spherical linear interpolation on the shortest path, the glTF definition of
//!   LINEAR rotation channels; stable for nearly parallel quaternions.
//! - [`SlerpSegment`] + [`slerp_fast`]: the same slerp with the angle between the two keys
//!   computed once when a clip is built, so that sampling needs only two polynomial sines.

use glam::{Mat4, Quat, Vec3, Vec4};

/// A local joint transform: scale, then rotation, then translation.
///
/// ```
/// use skelett::Transform;
/// use glam::{Quat, Vec3};
/// let t = Transform::new(Vec3::new(1.0, 0.0, 0.0), Quat::from_rotation_z(1.0), Vec3::splat(2.0));
/// let p = t.to_mat4().transform_point3(Vec3::X);
/// assert!((p - t.transform_point(Vec3::X)).length() < 1e-6);
/// ```
///
/// The layout is fixed (`repr(C)`): the rotation's four floats, then the translation's three
/// and the scale's three, ten consecutive `f32` (padded to 48 bytes where glam aligns
/// quaternions to 16), on which the SIMD paths rely: the blend (`play/pose/avx.rs`) sums
/// eight transforms' rows as they lie in memory and loads a single one as one 256-bit row
/// and one 64-bit pair; local-to-model (`play/hierarchy/avx.rs`) loads floats 0..4 (the
/// rotation), 3..7 (the rotation's w and the translation) and 6..10 (the translation's z and
/// the scale) as 16-byte rows.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Transform {
    /// Rotation (unit quaternion), applied after scale.
    pub rotation: Quat,
    /// Translation, applied last.
    pub translation: Vec3,
    /// Scale along the joint's local axes, applied first.
    pub scale: Vec3,
}

impl Default for Transform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl Transform {
    /// The identity transform.
    pub const IDENTITY: Self = Self {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
        scale: Vec3::ONE,
    };

    /// Makes a transform from its three components.
    pub const fn new(translation: Vec3, rotation: Quat, scale: Vec3) -> Self {
        Self {
            translation,
            rotation,
            scale,
        }
    }

    /// The matrix `T * R * S` (column vectors).
    #[inline]
    pub fn to_mat4(&self) -> Mat4 {
        Mat4::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }

    /// Splits an affine matrix into scale, rotation and translation.
    ///
    /// Matrices with shear cannot be represented exactly; the result is then the closest SRT
    /// that glam's decomposition finds. Negative determinants put the reflection in the scale.
    /// A matrix that collapses an axis (zero scale) keeps its translation and scales, with the
    /// rotation of its remaining axes where they define one, identity otherwise.
    ///
    /// ```
    /// # use skelett::Transform;
    /// # use glam::{Mat4, Vec3};
    /// let t = Transform::from_mat4(&Mat4::from_scale(Vec3::new(0.0, 2.0, 1.0)));
    /// assert!(t.is_finite());
    /// assert_eq!(t.scale, Vec3::new(0.0, 2.0, 1.0));
    /// ```
    pub fn from_mat4(m: &Mat4) -> Self {
        let (scale, rotation, translation) = m.to_scale_rotation_translation();
        if scale.is_finite() && rotation.is_finite() && scale.min_element().abs() > 1e-12 {
            return Self {
                translation,
                rotation: rotation.normalize(),
                scale,
            };
        }
        // Degenerate: rebuild a frame from the axes that are left.
        let axes = [
            m.x_axis.truncate(),
            m.y_axis.truncate(),
            m.z_axis.truncate(),
        ];
        let scale = Vec3::new(axes[0].length(), axes[1].length(), axes[2].length());
        let unit = |v: Vec3| v.try_normalize();
        let rotation = match (unit(axes[0]), unit(axes[1]), unit(axes[2])) {
            (Some(x), Some(y), _) => {
                let z = x.cross(y).normalize_or_zero();
                glam::Quat::from_mat3(&glam::Mat3::from_cols(x, z.cross(x), z))
            }
            (Some(x), None, Some(z)) => {
                let y = z.cross(x).normalize_or_zero();
                glam::Quat::from_mat3(&glam::Mat3::from_cols(x, y, x.cross(y)))
            }
            (None, Some(y), Some(z)) => {
                let x = y.cross(z).normalize_or_zero();
                glam::Quat::from_mat3(&glam::Mat3::from_cols(x, y, x.cross(y)))
            }
            _ => Quat::IDENTITY,
        };
        let rotation = if rotation.is_finite() {
            rotation.normalize()
        } else {
            Quat::IDENTITY
        };
        Self {
            translation: m.w_axis.truncate(),
            rotation,
            scale,
        }
    }

    /// Applies the transform to a point.
    #[inline]
    pub fn transform_point(&self, p: Vec3) -> Vec3 {
        self.translation + self.rotation * (self.scale * p)
    }

    /// `true` when every component is finite.
    pub fn is_finite(&self) -> bool {
        self.translation.is_finite() && self.rotation.is_finite() && self.scale.is_finite()
    }
}

/// Returns `b` or `-b`, whichever lies on the same hemisphere as `a` (same rotation).
#[inline]
pub fn align_sign(a: Quat, b: Quat) -> Quat {
    if a.dot(b) < 0.0 {
        -b
    } else {
        b
    }
}

/// Normalised linear interpolation on the shortest path from `a` (at `t = 0`) to `b` (`t = 1`).
///
/// Never returns NaN for unit inputs: the shortest-path flip keeps the interpolated
/// quaternion's length at least `sqrt(0.5)`.
///
/// ```
/// use skelett::transform::nlerp;
/// use glam::Quat;
/// let a = Quat::from_rotation_y(0.2);
/// let b = -Quat::from_rotation_y(0.6); // the same rotation as +, on the far hemisphere
/// let m = nlerp(a, b, 0.5);
/// assert!(m.angle_between(Quat::from_rotation_y(0.4)) < 1e-3);
/// ```
#[inline]
pub fn nlerp(a: Quat, b: Quat, t: f32) -> Quat {
    let b = align_sign(a, b);
    let v = Vec4::from(a).lerp(Vec4::from(b), t);
    Quat::from_vec4(v * v.length_recip())
}

/// Spherical linear interpolation on the shortest path from `a` (at `t = 0`) to `b` (`t = 1`).
///
/// Unit inputs give unit outputs (to about 1e-7). For nearly parallel inputs the angle is
/// taken as at least [`SlerpSegment::MIN_ANGLE`], which keeps the weights finite and within
/// 2e-7 of the exact ones, so the result is never NaN.
///
/// ```
/// use skelett::transform::slerp;
/// use glam::Quat;
/// let a = Quat::IDENTITY;
/// let b = Quat::from_rotation_x(1.0);
/// assert!(slerp(a, b, 0.25).angle_between(Quat::from_rotation_x(0.25)) < 1e-5);
/// ```
#[inline]
pub fn slerp(a: Quat, b: Quat, t: f32) -> Quat {
    let seg = SlerpSegment::new(a, b);
    slerp_fast(a, align_sign(a, b), seg, t)
}

/// The angle between two consecutive rotation keys, precomputed when a clip is built so that
/// [`slerp_fast`] evaluates a slerp with two polynomial sines and no `acos`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SlerpSegment {
    /// Half the rotation angle between the keys, in `[MIN_ANGLE, pi/2]`.
    pub angle: f32,
    /// `1 / sin(angle)`.
    pub inv_sin: f32,
}

impl SlerpSegment {
    /// Angles below this are treated as this: the slerp weights then differ from the exact ones
    /// by less than 2e-7 relative, and a division by a vanishing sine is avoided.
    pub const MIN_ANGLE: f32 = 1e-3;

    /// The segment from `a` to `b` on the shortest path (`b`'s sign does not matter).
    pub fn new(a: Quat, b: Quat) -> Self {
        let d = a.dot(b).abs().min(1.0);
        // atan2 keeps precision near d = 1 where acos does not.
        let angle = (1.0 - d * d).max(0.0).sqrt().atan2(d).max(Self::MIN_ANGLE);
        Self {
            angle,
            inv_sin: 1.0 / angle.sin(),
        }
    }
}

/// The nested Taylor factors of [`sin_0_half_pi`]: 1/(2·3), 1/(4·5), 1/(6·7), 1/(8·9),
/// 1/(10·11), as reciprocals so that evaluating needs no division.
pub(crate) const SIN_COEF: [f32; 5] = [1.0 / 6.0, 1.0 / 20.0, 1.0 / 42.0, 1.0 / 72.0, 1.0 / 110.0];

/// `sin(x)` for `x` in `[0, pi/2]`, to about 2e-7 absolute: a Taylor polynomial to `x^11`.
/// Sampling's four-lane version performs the same operations in the same order.
#[inline(always)]
pub(crate) fn sin_0_half_pi(x: f32) -> f32 {
    let c = SIN_COEF;
    let x2 = x * x;
    x * (1.0
        - x2 * c[0] * (1.0 - x2 * c[1] * (1.0 - x2 * c[2] * (1.0 - x2 * c[3] * (1.0 - x2 * c[4])))))
}

/// `1 / sqrt(x)` for finite `x > 0`: the SSE estimate refined by one Newton-Raphson step
/// (relative error about 5e-7 instead of 2e-4), a third of the latency of a square root
/// followed by a division.
///
/// The estimate is implementation-defined: Intel and AMD CPUs return different bits, so
/// results that pass through here may differ in the last bits between machines (never by
/// more than the 5e-7 above). With the `scalar` feature this is `1 / sqrt(x)` in IEEE
/// arithmetic, the same on every CPU.
#[inline(always)]
pub(crate) fn inv_sqrt(x: f32) -> f32 {
    #[cfg(all(
        target_arch = "x86_64",
        target_feature = "sse",
        not(feature = "scalar")
    ))]
    {
        use std::arch::x86_64::{_mm_cvtss_f32, _mm_rsqrt_ss, _mm_set_ss};
        // SAFETY: these intrinsics only require the `sse` target feature, which this block is
        // compiled for (the cfg above; it is part of every x86_64 target's baseline). They
        // take and return values in registers: no memory is accessed. `inv_sqrt_is_accurate`
        // exercises this path.
        let y = unsafe { _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(x))) };
        y * (1.5 - 0.5 * x * y * y)
    }
    #[cfg(not(all(
        target_arch = "x86_64",
        target_feature = "sse",
        not(feature = "scalar")
    )))]
    {
        x.sqrt().recip()
    }
}

/// Slerp from `a` to `b` with the angle precomputed in `seg`; `b` must already be on `a`'s
/// hemisphere (`a.dot(b) >= 0`), which [`crate::Clip`] guarantees for its LINEAR rotation keys.
#[inline(always)]
pub fn slerp_fast(a: Quat, b: Quat, seg: SlerpSegment, t: f32) -> Quat {
    let w0 = sin_0_half_pi((1.0 - t) * seg.angle) * seg.inv_sin;
    let w1 = sin_0_half_pi(t * seg.angle) * seg.inv_sin;
    Quat::from_vec4(Vec4::from(a) * w0 + Vec4::from(b) * w1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inv_sqrt_is_accurate() {
        let mut x = 1e-30f32;
        while x < 1e30 {
            for f in [1.0, 1.37, 2.0, 3.99] {
                let v = x * f;
                let want = 1.0 / (v as f64).sqrt();
                let err = ((inv_sqrt(v) as f64 - want) / want).abs();
                assert!(err < 2e-6, "1/sqrt({v}): relative error {err:e}");
            }
            x *= 10.0;
        }
    }

    /// With `scalar`, `inv_sqrt` is IEEE `1 / sqrt(x)`: bit-identical on every CPU.
    #[cfg(feature = "scalar")]
    #[test]
    fn scalar_inv_sqrt_is_ieee() {
        for v in [1e-30f32, 0.3, 1.0, 2.0, 7.5, 1e30] {
            assert_eq!(inv_sqrt(v).to_bits(), (1.0 / v.sqrt()).to_bits(), "{v}");
        }
    }

    use proptest::prelude::*;

    /// Rotation angle between two quaternions, precise near zero (glam's `angle_between`
    /// uses `acos`, which loses about 1e-3 rad there in f32).
    fn angle(a: Quat, b: Quat) -> f32 {
        let r = a.conjugate() * b;
        2.0 * r.xyz().length().atan2(r.w.abs())
    }

    fn quat() -> impl Strategy<Value = Quat> {
        (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0)
            .prop_filter("non-degenerate", |(x, y, z, w)| {
                x * x + y * y + z * z + w * w > 0.01
            })
            .prop_map(|(x, y, z, w)| Quat::from_xyzw(x, y, z, w).normalize())
    }

    /// The slerp of the textbook formula, in f64, as an independent truth.
    fn slerp_f64(a: Quat, b: Quat, t: f64) -> [f64; 4] {
        let a: [f64; 4] = Vec4::from(a).to_array().map(f64::from);
        let mut b: [f64; 4] = Vec4::from(b).to_array().map(f64::from);
        let mut d: f64 = (0..4).map(|i| a[i] * b[i]).sum();
        if d < 0.0 {
            b = b.map(|x| -x);
            d = -d;
        }
        let th = d.min(1.0).acos();
        if th < 1e-9 {
            return a;
        }
        let (w0, w1) = (((1.0 - t) * th).sin() / th.sin(), (t * th).sin() / th.sin());
        [0, 1, 2, 3].map(|i| a[i] * w0 + b[i] * w1)
    }

    fn same_rotation(a: Quat, b: [f64; 4], tol: f64) -> bool {
        let a = Vec4::from(a).to_array().map(f64::from);
        let d: f64 = (0..4).map(|i| a[i] * b[i]).sum();
        let s = d.signum();
        (0..4).all(|i| (a[i] - s * b[i]).abs() < tol)
    }

    #[test]
    fn sin_polynomial_is_accurate_on_its_domain() {
        for i in 0..=1000 {
            let x = i as f32 / 1000.0 * std::f32::consts::FRAC_PI_2;
            assert!(
                (sin_0_half_pi(x) as f64 - (x as f64).sin()).abs() < 2e-7,
                "{x}"
            );
        }
    }

    #[test]
    fn transform_matrix_roundtrip() {
        let t = Transform::new(
            Vec3::new(1.0, -2.0, 3.0),
            Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.2, 2.0),
            Vec3::new(0.5, 2.0, 1.5),
        );
        let back = Transform::from_mat4(&t.to_mat4());
        assert!((back.translation - t.translation).length() < 1e-5);
        assert!(angle(back.rotation, t.rotation) < 1e-5);
        assert!((back.scale - t.scale).length() < 1e-5);
    }

    proptest! {
        #[test]
        fn slerp_endpoints_and_shortest_path(a in quat(), b in quat()) {
            let s0 = slerp(a, b, 0.0);
            let s1 = slerp(a, b, 1.0);
            prop_assert!(angle(s0, a) < 1e-5, "{s0} vs {a}");
            prop_assert!(angle(s1, b) < 1e-5, "{s1} vs {b}");
            // Shortest path: the midpoint is no further from either end than half the angle.
            let mid = slerp(a, b, 0.5);
            let half = angle(a, b) / 2.0;
            prop_assert!(angle(mid, a) <= half + 1e-5);
            prop_assert!(angle(mid, b) <= half + 1e-5);
        }

        #[test]
        fn slerp_matches_f64_formula(a in quat(), b in quat(), t in 0.0f32..=1.0) {
            let s = slerp(a, b, t);
            prop_assert!((s.length() - 1.0).abs() < 1e-5);
            prop_assert!(same_rotation(s, slerp_f64(a, b, t as f64), 2e-5), "{s} vs {:?}", slerp_f64(a, b, t as f64));
        }

        #[test]
        fn slerp_nearly_parallel_is_finite(a in quat(), eps in 0.0f32..1e-4, t in 0.0f32..=1.0) {
            let b = (a * Quat::from_rotation_x(eps)).normalize();
            let s = slerp(a, b, t);
            prop_assert!(s.is_finite());
            prop_assert!((s.length() - 1.0).abs() < 1e-5);
            prop_assert!(angle(s, a) <= eps + 1e-5);
        }

        #[test]
        fn nlerp_endpoints_shortest_path_and_unit(a in quat(), b in quat(), t in 0.0f32..=1.0) {
            prop_assert!(angle(nlerp(a, b, 0.0), a) < 1e-5);
            prop_assert!(angle(nlerp(a, b, 1.0), b) < 1e-5);
            let n = nlerp(a, b, t);
            prop_assert!(n.is_finite() && (n.length() - 1.0).abs() < 1e-5);
            prop_assert!(angle(n, a) <= angle(a, b) + 1e-5);
        }
    }
}

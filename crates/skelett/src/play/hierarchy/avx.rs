//! Matrix products of the hierarchy with AVX and FMA: two columns per 256-bit register.
//!
//! A column-major product `a * b` takes, for each column of `b`, the columns of `a` weighted
//! by that column's four entries. With both halves of a 256-bit register holding `a`'s
//! column (one broadcast load) and an in-lane shuffle spreading one entry of two of `b`'s
//! columns across each half, two output columns cost four fused multiply-adds: half the
//! instructions of four-wide SSE, which spends one shuffle and one multiply or add per entry.
//! Used by [`super::skinning_palette`] after run-time detection; the baseline build (and
//! the `scalar` feature) multiplies with glam.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use glam::Mat4;

use crate::{JointIndex, Transform};

const _: () = assert!(std::mem::size_of::<Mat4>() == 64);

/// Whether this CPU has AVX and FMA (checked once by std, then a cached load).
#[inline]
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("fma")
}

/// `a * b`, column-major, written to `out`.
#[inline(always)]
unsafe fn mul(a: &Mat4, b: &Mat4, out: &mut Mat4) {
    // SAFETY: `Mat4` is four `Vec4` columns of four f32, 16 consecutive f32 (the size is
    // asserted below; glam's SSE2 build aligns them to 16 bytes, its scalar build to 4, so
    // every access here is an unaligned one); the references are valid for reading (`a`,
    // `b`) and writing (`out`) all of them.
    let pa = a as *const Mat4 as *const f32;
    let pb = b as *const Mat4 as *const f32;
    let po = out as *mut Mat4 as *mut f32;
    let (ax, ay, az, aw) = (both(pa), both(pa.add(4)), both(pa.add(8)), both(pa.add(12)));
    let a = [ax, ay, az, aw];
    _mm256_storeu_ps(po, col2(&a, _mm256_loadu_ps(pb)));
    _mm256_storeu_ps(po.add(8), col2(&a, _mm256_loadu_ps(pb.add(8))));
}

/// The four f32 at `p` in both halves of a 256-bit register (an unaligned load).
#[inline(always)]
unsafe fn both(p: *const f32) -> __m256 {
    let c = _mm_loadu_ps(p);
    _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(c), c)
}

/// Two columns of `a * b`: `a`'s columns each in both halves, two columns of `b` in `b2`.
#[inline(always)]
unsafe fn col2(a: &[__m256; 4], b2: __m256) -> __m256 {
    let r = _mm256_mul_ps(a[0], _mm256_permute_ps::<0x00>(b2));
    let r = _mm256_fmadd_ps(a[1], _mm256_permute_ps::<0x55>(b2), r);
    let r = _mm256_fmadd_ps(a[2], _mm256_permute_ps::<0xAA>(b2), r);
    _mm256_fmadd_ps(a[3], _mm256_permute_ps::<0xFF>(b2), r)
}

/// [`super::local_to_model`]'s loop: `model[j] = model[parent] * local[j]` for joints
/// `from..`, roots taking their local matrix (the callers have checked the lengths; parents
/// precede their children).
///
/// # Safety
/// The CPU must support AVX and FMA.
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn local_to_model(
    parents: &[JointIndex],
    local: &[Transform],
    from: usize,
    model: &mut [Mat4],
) {
    for j in from..model.len() {
        let p = parents[j];
        let l = local[j].to_mat4();
        let (done, rest) = model.split_at_mut(j);
        if p == JointIndex::MAX {
            rest[0] = l;
        } else {
            mul(&done[p as usize], &l, &mut rest[0]);
        }
    }
}

/// `out[i] = model[joints[i]] * inverse_bind[i]` for every `i` (the callers have checked
/// the lengths and the joints' range; indexing checks them again).
///
/// # Safety
/// The CPU must support AVX and FMA.
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn palette(
    joints: &[JointIndex],
    inverse_bind: &[Mat4],
    model: &[Mat4],
    out: &mut [Mat4],
) {
    for ((o, &j), ibm) in out.iter_mut().zip(joints).zip(inverse_bind) {
        mul(&model[j as usize], ibm, o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};

    #[test]
    fn product_matches_glam() {
        if !available() {
            return;
        }
        let a = Mat4::from_scale_rotation_translation(
            Vec3::new(1.0, 2.0, 0.5),
            Quat::from_rotation_y(0.7),
            Vec3::new(1.0, -2.0, 3.0),
        );
        let mut b = Mat4::from_rotation_x(1.1) * Mat4::from_translation(Vec3::new(0.5, 0.25, -4.0));
        b.x_axis.w = 0.3; // not affine: the fourth row counts too
        let mut out = Mat4::ZERO;
        // SAFETY: AVX and FMA were just detected.
        unsafe { mul(&a, &b, &mut out) };
        assert!(out.abs_diff_eq(a * b, 1e-5), "{out} {}", a * b);
    }
}

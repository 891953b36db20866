//! The seekable layout's second phase on eight lanes (AVX): located key pairs
//! (`compact_seek.rs`) dequantised, interpolated and written, eight tracks at a time.
//!
//! Each lane performs the one-track functions' operations in their order, without fused
//! multiply-adds, so the results are the one-lane path's bits (the tests compare them bit
//! for bit):
//! - dequantisation as `CompactTrack::dequantize`: `(min + q * scale) * keep`, then for
//!   rotations the dropped component `sqrt(max(1 - |v|², 0))` with its sign added on its
//!   axis (`|v|²` summed as glam's four-wide dot product, `(x² + z²) + (y² + w²)`), or, with
//!   all four stored, glam's `normalize_or` (`v * (1 / sqrt(|v|²))` where that is finite
//!   and positive, else the identity);
//! - `compact::pair_slerp`: the dot product, the nlerp threshold, the clamp, the `acos`
//!   polynomial and `1 / max(sin(angle), 1e-6)`;
//! - `compact::interpolate` and `compact::write` as `compact_avx.rs` performs them.
//!
//! Input: a [`Located`] batch and the clip's track descriptors; output: the tracks'
//! components of the pose.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use glam::{Quat, Vec3};

use super::compact::ACOS_COEF;
use super::compact_avx::{normalize8, sin_0_pi8};
use super::compact_seek::{Located, BATCH};
use crate::clip::compact::Compact;
use crate::{Target, Transform};

/// Per-lane constants of the batch's tracks, in rows.
#[repr(C, align(32))]
struct Tracks {
    min: [[f32; BATCH]; 4],
    scale: [[f32; BATCH]; 4],
    /// All bits set for rotations.
    rotation: [f32; BATCH],
    /// All bits set where `pair_slerp` never slerps (STEP tracks, translations, scales).
    linear: [f32; BATCH],
    nlerp_dot: [f32; BATCH],
}

/// All bits set for `true`, as a float lane.
fn lane_mask(b: bool) -> f32 {
    f32::from_bits(if b { !0 } else { 0 })
}

/// Dequantises, interpolates and writes the first `n` lanes of `at` into `pose`.
///
/// # Safety
/// The CPU must support AVX; `at`'s first `n` lanes hold tracks of `c` located at `x`, and
/// `pose` holds their joints.
#[target_feature(enable = "avx")]
pub(super) unsafe fn finish(c: &Compact, at: &Located, n: usize, x: f32, pose: &mut [Transform]) {
    let mut t = Tracks {
        min: [[0.0; BATCH]; 4],
        scale: [[0.0; BATCH]; 4],
        rotation: [0.0; BATCH],
        linear: [lane_mask(true); BATCH],
        nlerp_dot: [0.0; BATCH],
    };
    for lane in 0..n {
        let tr = &c.tracks[at.track[lane] as usize];
        for k in 0..4 {
            t.min[k][lane] = tr.min[k];
            t.scale[k][lane] = tr.scale[k];
        }
        let rotation = tr.target == Target::Rotation;
        t.rotation[lane] = lane_mask(rotation);
        t.linear[lane] = lane_mask(tr.step || !rotation);
        t.nlerp_dot[lane] = tr.nlerp_dot;
    }
    let rotation = load(&t.rotation);
    let v0 = dequantize8(&at.q0, load(&at.drop0), load(&at.sign0), &t, rotation);
    let v1 = dequantize8(&at.q1, load(&at.drop1), load(&at.sign1), &t, rotation);
    let (angle, inv_sin) = pair_slerp8(v0, v1, &t);

    // `compact::unit_span(x - x0, reciprocal(x1 - x0))`: the table of `reciprocal` holds
    // the correctly rounded `1 / k`, the division's own result.
    let one = _mm256_set1_ps(1.0);
    let x0 = load(&at.x0);
    let inv = _mm256_div_ps(one, _mm256_sub_ps(load(&at.x1), x0));
    let u = _mm256_mul_ps(_mm256_sub_ps(_mm256_set1_ps(x), x0), inv);
    let u = _mm256_min_ps(_mm256_max_ps(u, _mm256_setzero_ps()), one);
    // `compact::interpolate`: slerp between the normalised keys, or the lerp.
    let slerp = _mm256_cmp_ps::<_CMP_GT_OQ>(angle, _mm256_setzero_ps());
    let mut v = [_mm256_setzero_ps(); 4];
    for k in 0..4 {
        v[k] = _mm256_add_ps(v0[k], _mm256_mul_ps(_mm256_sub_ps(v1[k], v0[k]), u));
    }
    if _mm256_movemask_ps(slerp) != 0 {
        let a = normalize_or_w(v0);
        let b = normalize_or_w(v1);
        let w0 = _mm256_mul_ps(
            sin_0_pi8(_mm256_mul_ps(_mm256_sub_ps(one, u), angle)),
            inv_sin,
        );
        let w1 = _mm256_mul_ps(sin_0_pi8(_mm256_mul_ps(u, angle)), inv_sin);
        for k in 0..4 {
            let arc = _mm256_add_ps(_mm256_mul_ps(a[k], w0), _mm256_mul_ps(b[k], w1));
            v[k] = _mm256_blendv_ps(v[k], arc, slerp);
        }
    }
    let hold = load(&at.hold);
    let hold0 = _mm256_cmp_ps::<_CMP_EQ_OQ>(hold, one);
    let hold1 = _mm256_cmp_ps::<_CMP_EQ_OQ>(hold, _mm256_set1_ps(2.0));
    for k in 0..4 {
        v[k] = _mm256_blendv_ps(_mm256_blendv_ps(v[k], v0[k], hold0), v1[k], hold1);
    }
    // `compact::write`: rotations normalised, vectors as they are.
    let q = normalize8(v);
    let mut rows = [[0f32; BATCH]; 4];
    let mut quats = [[0f32; BATCH]; 4];
    for k in 0..4 {
        _mm256_storeu_ps(rows[k].as_mut_ptr(), v[k]);
        _mm256_storeu_ps(quats[k].as_mut_ptr(), q[k]);
    }
    for lane in 0..n {
        let tr = &c.tracks[at.track[lane] as usize];
        let out = &mut pose[tr.joint as usize];
        match tr.target {
            Target::Rotation => {
                out.rotation = Quat::from_xyzw(
                    quats[0][lane],
                    quats[1][lane],
                    quats[2][lane],
                    quats[3][lane],
                )
            }
            Target::Translation => {
                out.translation = Vec3::new(rows[0][lane], rows[1][lane], rows[2][lane])
            }
            Target::Scale => out.scale = Vec3::new(rows[0][lane], rows[1][lane], rows[2][lane]),
        }
    }
}

/// A row of eight (aligned: `Located` and `Tracks` are, with rows of 32 bytes).
#[inline(always)]
unsafe fn load(r: &[f32; BATCH]) -> __m256 {
    // SAFETY: eight f32 at a 32-byte aligned row (the structs' alignment and row sizes).
    _mm256_load_ps(r.as_ptr())
}

/// glam's `Vec4::dot` on eight lanes: `(x·x' + z·z') + (y·y' + w·w')`.
#[inline(always)]
pub(super) unsafe fn dot8(a: [__m256; 4], b: [__m256; 4]) -> __m256 {
    _mm256_add_ps(
        _mm256_add_ps(_mm256_mul_ps(a[0], b[0]), _mm256_mul_ps(a[2], b[2])),
        _mm256_add_ps(_mm256_mul_ps(a[1], b[1]), _mm256_mul_ps(a[3], b[3])),
    )
}

/// glam's `Vec4::normalize_or(Vec4::W)` on eight lanes.
#[inline(always)]
pub(super) unsafe fn normalize_or_w(v: [__m256; 4]) -> [__m256; 4] {
    let rcp = _mm256_div_ps(_mm256_set1_ps(1.0), _mm256_sqrt_ps(dot8(v, v)));
    // Finite and positive (NaN compares false).
    let ok = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_GT_OQ>(rcp, _mm256_setzero_ps()),
        _mm256_cmp_ps::<_CMP_LT_OQ>(rcp, _mm256_set1_ps(f32::INFINITY)),
    );
    let zero = _mm256_setzero_ps();
    [
        _mm256_blendv_ps(zero, _mm256_mul_ps(v[0], rcp), ok),
        _mm256_blendv_ps(zero, _mm256_mul_ps(v[1], rcp), ok),
        _mm256_blendv_ps(zero, _mm256_mul_ps(v[2], rcp), ok),
        _mm256_blendv_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(v[3], rcp), ok),
    ]
}

/// `CompactTrack::dequantize` on eight lanes (`drop` as floats, `sign` -0.0 where the
/// dropped component is negative).
#[inline(always)]
unsafe fn dequantize8(
    q: &[[i32; BATCH]; 4],
    drop: __m256,
    sign: __m256,
    t: &Tracks,
    rotation: __m256,
) -> [__m256; 4] {
    let one = _mm256_set1_ps(1.0);
    let mut v = [_mm256_setzero_ps(); 4];
    for k in 0..4 {
        // SAFETY: a row of eight i32, 32-byte aligned as `Located` is.
        let qk = _mm256_cvtepi32_ps(_mm256_load_si256(q[k].as_ptr() as *const __m256i));
        let kept = _mm256_cmp_ps::<_CMP_NEQ_UQ>(drop, _mm256_set1_ps(k as f32));
        let value = _mm256_add_ps(load(&t.min[k]), _mm256_mul_ps(qk, load(&t.scale[k])));
        v[k] = _mm256_mul_ps(value, _mm256_and_ps(kept, one));
    }
    // Three stored: the dropped component rebuilt on its axis.
    let l = dot8(v, v);
    let r = _mm256_sqrt_ps(_mm256_max_ps(_mm256_sub_ps(one, l), _mm256_setzero_ps()));
    let signed = _mm256_xor_ps(r, sign);
    let mut rebuilt = [_mm256_setzero_ps(); 4];
    for k in 0..4 {
        let axis = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_EQ_OQ>(drop, _mm256_set1_ps(k as f32)),
            one,
        );
        rebuilt[k] = _mm256_add_ps(v[k], _mm256_mul_ps(axis, signed));
    }
    // All four stored (rare: a segment in which every component crosses zero): normalised.
    let four = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_EQ_OQ>(drop, _mm256_set1_ps(4.0)),
        rotation,
    );
    if _mm256_movemask_ps(four) != 0 {
        let normalised = normalize_or_w(v);
        for (r, n) in rebuilt.iter_mut().zip(normalised) {
            *r = _mm256_blendv_ps(*r, n, four);
        }
    }
    for k in 0..4 {
        v[k] = _mm256_blendv_ps(v[k], rebuilt[k], rotation);
    }
    v
}

/// `compact::pair_slerp` on eight lanes: slerp's angle and `1 / sin(angle)`, zeros for nlerp
/// and lerp.
#[inline(always)]
unsafe fn pair_slerp8(a: [__m256; 4], b: [__m256; 4], t: &Tracks) -> (__m256, __m256) {
    let zero = _mm256_setzero_ps();
    let d = dot8(a, b);
    // Slerp where the track may and `d >= nlerp_dot` fails (NaN included).
    let nlerp = _mm256_or_ps(
        load(&t.linear),
        _mm256_cmp_ps::<_CMP_GE_OQ>(d, load(&t.nlerp_dot)),
    );
    if _mm256_movemask_ps(nlerp) == 0xff {
        // No lane slerps (nearly always between the close keys of dense motion capture).
        return (zero, zero);
    }
    let (angle, inv_sin) = angle8(d);
    (
        _mm256_blendv_ps(angle, zero, nlerp),
        _mm256_blendv_ps(inv_sin, zero, nlerp),
    )
}

/// `compact::pair_slerp` past its nlerp test, on eight lanes: slerp's angle for the dot
/// product `d` of two unit 4-vectors, and `1 / sin(angle)` (shared with the lanes layout's
/// sampler, `compact_lanes.rs`).
#[inline(always)]
pub(super) unsafe fn angle8(d: __m256) -> (__m256, __m256) {
    let zero = _mm256_setzero_ps();
    let one = _mm256_set1_ps(1.0);
    // `f32::clamp(-1, 1)`: NaN stays NaN.
    let minus_one = _mm256_set1_ps(-1.0);
    let d = _mm256_blendv_ps(d, minus_one, _mm256_cmp_ps::<_CMP_LT_OQ>(d, minus_one));
    let d = _mm256_blendv_ps(d, one, _mm256_cmp_ps::<_CMP_GT_OQ>(d, one));
    let positive = _mm256_cmp_ps::<_CMP_GE_OQ>(d, zero);
    let e = _mm256_blendv_ps(_mm256_xor_ps(d, _mm256_set1_ps(-0.0)), d, positive);
    // `acos_0_1(e)`.
    let mut p = _mm256_set1_ps(ACOS_COEF[7]);
    for &c in ACOS_COEF[..7].iter().rev() {
        p = _mm256_add_ps(_mm256_mul_ps(p, e), _mm256_set1_ps(c));
    }
    let acos = _mm256_mul_ps(
        _mm256_sqrt_ps(_mm256_max_ps(_mm256_sub_ps(one, e), zero)),
        p,
    );
    let angle = _mm256_blendv_ps(
        _mm256_sub_ps(_mm256_set1_ps(std::f32::consts::PI), acos),
        acos,
        positive,
    );
    let angle = _mm256_max_ps(angle, _mm256_set1_ps(1e-3));
    let s = _mm256_max_ps(sin_0_pi8(angle), _mm256_set1_ps(1e-6));
    (angle, _mm256_div_ps(one, s))
}

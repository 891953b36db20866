//! The unmasked blend with AVX and FMA, eight joints at a time.
//!
//! A [`Transform`] is ten consecutive floats (`repr(C)`: rotation, translation, scale; two
//! more of padding where glam aligns `Quat`). Translations and scales are weighted sums, so
//! eight transforms are summed as they lie in memory, one fused multiply-add per 256-bit
//! row and input. Only the rotations, whose side tests (dot products with the first input's
//! rotations) and normalisation work across a quaternion's floats, are transposed into one
//! register per component (a four-by-four transpose in each half), summed, normalised with
//! one square root and one division for eight, transposed back and stored over the rows'
//! rotation lanes. A last, partial block is the last eight joints, overlapping the block
//! before; poses of fewer than eight joints take one joint at a time: one 256-bit load for
//! its rotation, translation and the scale's x, one 64-bit load for the scale's y and z.
//! The same 2^60 scale as the portable path keeps tiny components' products out of
//! subnormal numbers. Results equal the portable path's to rounding (fused products; a
//! property test bounds the difference), and are the same bits on every call: no result
//! depends on the thread.
//! Chosen by [`super::blend`] at run time; the `scalar` feature keeps the portable path.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use super::SCALE;
use crate::play::simd::{joint, pair, transpose4};
use crate::Transform;

// The layout the loads rely on (ten consecutive floats from the rotation's first) is
// asserted with `TRANSFORM_STRIDE` in `play/simd.rs`.

pub(super) use crate::play::simd::avx_fma as available;

/// `out[j]` = the weighted sum of `poses[k][j]` with weights `w[k]` (normalised, positive;
/// rotations on the first input's side, then normalised, identity where they cancel), as
/// the portable `blend_unmasked` computes it.
///
/// # Safety
/// The CPU must support AVX and FMA. `poses` and `w` have the same length, 1 to 8, and every
/// pose at least `out.len()` entries (indexing checks it again).
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn blend_unmasked(poses: &[&[Transform]], w: &[f32], out: &mut [Transform]) {
    let m = poses.len().min(w.len());
    let scale = _mm_set1_ps(SCALE);
    // The rotation's lanes of the 256-bit half: only they flip sign or normalise.
    let low = _mm256_castsi256_ps(_mm256_setr_epi32(-1, -1, -1, -1, 0, 0, 0, 0));
    let sign = _mm256_and_ps(low, _mm256_set1_ps(-0.0));
    let identity = _mm_setr_ps(0.0, 0.0, 0.0, 1.0);
    // Eight joints at a time (a partial last block overlapping the one before); poses
    // shorter than eight one joint at a time.
    let n = out.len();
    let blocks = n / 8;
    for b in 0..blocks {
        blend8(poses, w, b * 8, &mut out[b * 8..b * 8 + 8]);
    }
    if blocks > 0 && n % 8 != 0 {
        // The last eight joints, overlapping the block before: lanes are independent, so the
        // joints blended twice get the same bits twice (and the inputs are not the output).
        blend8(poses, w, n - 8, &mut out[n - 8..]);
        return;
    }
    for (j, o) in out.iter_mut().enumerate().skip(blocks * 8) {
        let first = &poses[0][j];
        let head0 = head(first);
        let reference = _mm_mul_ps(_mm256_castps256_ps128(head0), scale);
        let w0 = _mm256_set1_ps(w[0]);
        let mut sum = _mm256_mul_ps(head0, w0);
        let mut sum_tail = _mm_mul_ps(tail(first), _mm256_castps256_ps128(w0));
        for k in 1..m {
            let x = &poses[k][j];
            let h = head(x);
            // Flip the rotation unless its dot with the reference is >= 0 (NaN flips, as
            // `same_side` says).
            let d = _mm_dp_ps::<0xFF>(_mm256_castps256_ps128(h), reference);
            let keep = _mm_cmp_ps::<_CMP_GE_OQ>(d, _mm_setzero_ps());
            let flip = _mm256_andnot_ps(
                _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(keep), keep),
                sign,
            );
            let wk = _mm256_set1_ps(w[k]);
            sum = _mm256_fmadd_ps(_mm256_xor_ps(h, flip), wk, sum);
            sum_tail = _mm_fmadd_ps(tail(x), _mm256_castps256_ps128(wk), sum_tail);
        }
        // Normalise the rotation: SCALE / |r * SCALE|, identity where that is not a positive
        // finite number.
        let r = _mm256_castps256_ps128(sum);
        let scaled = _mm_mul_ps(r, scale);
        let len = _mm_sqrt_ps(_mm_dp_ps::<0xFF>(scaled, scaled));
        let rcp = _mm_div_ps(scale, len);
        let finite = _mm_cmp_ps::<_CMP_LT_OQ>(rcp, _mm_set1_ps(f32::INFINITY));
        let positive = _mm_cmp_ps::<_CMP_GT_OQ>(rcp, _mm_setzero_ps());
        let ok = _mm_and_ps(finite, positive);
        let rotation = _mm_blendv_ps(identity, _mm_mul_ps(r, rcp), ok);
        let head_out = _mm256_blendv_ps(sum, _mm256_castps128_ps256(rotation), low);
        store(o, head_out, sum_tail);
    }
}

/// f32 from one `Transform` to the next (ten fields, then padding if any).
const STRIDE: usize = crate::play::simd::TRANSFORM_STRIDE;
/// 256-bit rows in eight transforms.
const ROWS: usize = STRIDE;

/// Per row of eight transforms' floats, the lanes that are fields (all ones) and padding
/// (zero): padding is never read, so no uninitialised byte enters a register.
const FIELDS: [[i32; 8]; ROWS] = {
    let mut m = [[0; 8]; ROWS];
    let mut f = 0;
    while f < 8 * STRIDE {
        if f % STRIDE < 10 {
            m[f / 8][f % 8] = -1;
        }
        f += 1;
    }
    m
};

/// `$body` for each row `$r` of eight transforms, written out one by one: a loop over the
/// rows was not unrolled, kept them on the stack and tested the masks at run time.
macro_rules! each_row {
    ($r:ident => $body:block) => {
        each_row!(@ $r $body 0 1 2 3 4 5 6 7 8 9 10 11)
    };
    (@ $r:ident $body:block $($n:literal)*) => {
        $({
            const _: () = assert!(ROWS <= 12);
            let $r: usize = $n;
            if $r < ROWS $body
        })*
    };
}

/// Row `r` of the eight transforms from `p`: a plain load where the row holds only fields,
/// a masked one (padding lanes zero) where it holds padding.
#[inline(always)]
unsafe fn load_row(p: *const f32, r: usize) -> __m256 {
    // SAFETY: the caller's: `p` starts eight transforms, `8 * STRIDE` f32, and row `r`
    // lies within them; masked lanes are not read.
    if FIELDS[r] == [-1; 8] {
        _mm256_loadu_ps(p.add(8 * r))
    } else {
        _mm256_maskload_ps(
            p.add(8 * r),
            _mm256_loadu_si256(FIELDS[r].as_ptr() as *const __m256i),
        )
    }
}

/// [`blend_unmasked`] for the eight joints `from..from + 8` (into `out`, eight entries).
///
/// Translations and scales are weighted sums, which need no transposing: the eight
/// transforms are summed as they lie in memory, `STRIDE` rows of eight floats, one fused
/// multiply-add per row and input. Only the rotations, whose side test and normalisation
/// work across a quaternion's four floats, are transposed into one register per component
/// and back, and stored over the rotations' lanes of the rows (which summed them unflipped).
/// This does about a third of the shuffles of transposing every field (measured: 3-12 %
/// faster with two and three inputs).
#[inline(always)]
unsafe fn blend8(poses: &[&[Transform]], w: &[f32], from: usize, out: &mut [Transform]) {
    let scale = _mm256_set1_ps(SCALE);
    let first = &poses[0][from..from + 8];
    // SAFETY (of the loads): `first` and each `poses[k][from..from + 8]` are eight
    // transforms, read through shared slices; `load_row` reads their fields only.
    let p0 = first.as_ptr() as *const f32;
    let w0 = _mm256_set1_ps(w[0]);
    let mut rows = [_mm256_setzero_ps(); ROWS];
    each_row!(r => { rows[r] = _mm256_mul_ps(load_row(p0, r), w0); });
    let q0 = load_rotations8(first);
    let reference = [
        _mm256_mul_ps(q0[0], scale),
        _mm256_mul_ps(q0[1], scale),
        _mm256_mul_ps(q0[2], scale),
        _mm256_mul_ps(q0[3], scale),
    ];
    let mut sum = q0;
    for c in &mut sum {
        *c = _mm256_mul_ps(*c, w0);
    }
    for k in 1..poses.len().min(w.len()) {
        let pose = &poses[k][from..from + 8];
        let pk = pose.as_ptr() as *const f32;
        let wk = _mm256_set1_ps(w[k]);
        each_row!(r => { rows[r] = _mm256_fmadd_ps(load_row(pk, r), wk, rows[r]); });
        add_on_side(&mut sum, &reference, load_rotations8(pose), wk);
    }
    let sum = normalise8(sum);

    let out = &mut out[..8];
    let po = out.as_mut_ptr() as *mut f32;
    // SAFETY (of the stores): `out` is eight transforms, `8 * STRIDE` f32, through a unique
    // slice. The rows' stores also write the padding where there is some (bytes of `out`'s
    // own memory; nothing reads them as values), the rotations' stores floats 0..4 of each.
    each_row!(r => { _mm256_storeu_ps(po.add(8 * r), rows[r]); });
    let q = transpose4(sum[0], sum[1], sum[2], sum[3]);
    for lane in 0..8 {
        _mm_storeu_ps(po.add(lane * STRIDE), joint(&q, lane));
    }
}

/// `sum += ±q * wk` on eight lanes: each rotation of `q` flipped unless its dot with the
/// reference (the first input's rotation times 2^60) is >= 0 (NaN flips). Shared with the
/// structure-of-arrays blend (`soa_avx.rs`), so both give the same bits.
#[inline(always)]
pub(super) unsafe fn add_on_side(
    sum: &mut [__m256; 4],
    reference: &[__m256; 4],
    q: [__m256; 4],
    wk: __m256,
) {
    // Two chains summed (a tree, not one chain of four): the side test and the
    // normalisation are the blend's longest dependency path.
    let d = _mm256_add_ps(
        _mm256_fmadd_ps(q[1], reference[1], _mm256_mul_ps(q[0], reference[0])),
        _mm256_fmadd_ps(q[3], reference[3], _mm256_mul_ps(q[2], reference[2])),
    );
    let keep = _mm256_cmp_ps::<_CMP_GE_OQ>(d, _mm256_setzero_ps());
    let flip = _mm256_andnot_ps(keep, _mm256_set1_ps(-0.0));
    // The weight's sign flipped, not the four components: `c * -w` is `-c * w`, bit for bit.
    let wk = _mm256_xor_ps(wk, flip);
    for (acc, c) in sum.iter_mut().zip(q) {
        *acc = _mm256_fmadd_ps(c, wk, *acc);
    }
}

/// Eight summed rotations normalised: `SCALE / |r * SCALE|`, the identity where that is not a
/// positive finite number (x, y and z masked to +0 by an AND, one instruction where a blend
/// is two or three). Shared with the structure-of-arrays blend.
#[inline(always)]
pub(super) unsafe fn normalise8(sum: [__m256; 4]) -> [__m256; 4] {
    let scale = _mm256_set1_ps(SCALE);
    let s = [
        _mm256_mul_ps(sum[0], scale),
        _mm256_mul_ps(sum[1], scale),
        _mm256_mul_ps(sum[2], scale),
        _mm256_mul_ps(sum[3], scale),
    ];
    let len2 = _mm256_add_ps(
        _mm256_fmadd_ps(s[1], s[1], _mm256_mul_ps(s[0], s[0])),
        _mm256_fmadd_ps(s[3], s[3], _mm256_mul_ps(s[2], s[2])),
    );
    let rcp = _mm256_div_ps(scale, _mm256_sqrt_ps(len2));
    let ok = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_LT_OQ>(rcp, _mm256_set1_ps(f32::INFINITY)),
        _mm256_cmp_ps::<_CMP_GT_OQ>(rcp, _mm256_setzero_ps()),
    );
    [
        _mm256_and_ps(ok, _mm256_mul_ps(sum[0], rcp)),
        _mm256_and_ps(ok, _mm256_mul_ps(sum[1], rcp)),
        _mm256_and_ps(ok, _mm256_mul_ps(sum[2], rcp)),
        _mm256_blendv_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(sum[3], rcp), ok),
    ]
}

/// The rotations of eight transforms, one register per component (x, y, z, w): each
/// rotation loaded with the one four on, then a four-by-four transpose in each half.
#[inline(always)]
unsafe fn load_rotations8(t: &[Transform]) -> [__m256; 4] {
    let t = &t[..8];
    let f = |i: usize| t[i..].as_ptr() as *const f32;
    // SAFETY: floats 0..4 of a `Transform` are its rotation (asserted above), read through
    // the shared slice.
    let rows = [
        rows2(f(0), f(4)),
        rows2(f(1), f(5)),
        rows2(f(2), f(6)),
        rows2(f(3), f(7)),
    ];
    transpose4(rows[0], rows[1], rows[2], rows[3])
}

/// The four floats at `a` and at `b` in the two halves of a register: two broadcast loads
/// and a blend where transforms are 16-byte aligned (no shuffle), else a load and an insert.
#[inline(always)]
unsafe fn rows2(a: *const f32, b: *const f32) -> __m256 {
    if std::mem::align_of::<Transform>() >= 16 {
        // SAFETY: `a` and `b` are floats 0 or 4 of a `Transform`, 16-byte aligned (checked
        // just above, a constant) and followed by four of its floats.
        _mm256_blend_ps::<0xF0>(
            _mm256_broadcast_ps(&*(a as *const __m128)),
            _mm256_broadcast_ps(&*(b as *const __m128)),
        )
    } else {
        pair(_mm_loadu_ps(a), _mm_loadu_ps(b))
    }
}

/// Rotation, translation and the scale's x of `t`.
#[inline(always)]
unsafe fn head(t: &Transform) -> __m256 {
    // SAFETY: the first ten floats of a `Transform` are its fields (asserted above); these
    // are the first eight, read through a shared reference.
    _mm256_loadu_ps(t as *const Transform as *const f32)
}

/// The scale's y and z of `t` (two lanes; the others zero).
#[inline(always)]
unsafe fn tail(t: &Transform) -> __m128 {
    // SAFETY: floats 8 and 9 of a `Transform` are `scale.y` and `scale.z` (asserted above).
    crate::play::simd::load2((t as *const Transform as *const f32).add(8))
}

/// Writes the ten floats of a transform.
#[inline(always)]
unsafe fn store(t: &mut Transform, head: __m256, tail: __m128) {
    // SAFETY: as in `head` and `tail`, through a unique reference: nothing past the scale.
    let p = t as *mut Transform as *mut f32;
    _mm256_storeu_ps(p, head);
    crate::play::simd::store2(p.add(8), tail);
}

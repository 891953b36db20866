//! [`super::blend_soa`] with AVX and FMA: a block of eight joints is ten aligned 256-bit
//! loads per input, the blend's arithmetic on them, and ten stores.
//!
//! The operations, per component and lane, are those of the slice blend's eight-joint blocks
//! (`avx.rs`'s `blend8`) in the same order: translations and scales `x0 * w0`, then one fused
//! multiply-add per further input; rotations summed the same way after the side test (the
//! fused dot product with the first input's rotation times 2^60), then normalised by
//! `2^60 / sqrt(|r * 2^60|²)`, the identity where that is not a positive finite number. So
//! both blends give the same bits; the slice blend only adds the transposes this one does
//! not need.
//! Chosen by [`super::blend_soa`] at run time; the `scalar` feature keeps the portable path.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use super::avx::{add_on_side, normalise8};
use super::soa::{Sink, SoaBlock};
use super::SCALE;
use crate::play::simd::{load2, store2, transpose4};
use crate::Transform;

const _: () = assert!(std::mem::size_of::<SoaBlock>() == 320);
const _: () = assert!(std::mem::align_of::<SoaBlock>() == 32);

/// Block `b` of `out` = the weighted blend of `poses[k][b]` with weights `w[k]`
/// (normalised, positive), for every block `b` of `out`.
///
/// The translations and scales of all inputs are summed first, then the rotations: six
/// and eight accumulators and their operands fit the sixteen registers, where both at once
/// went to the stack.
///
/// # Safety
/// The CPU must support AVX and FMA. `poses` and `w` have the same length, at least 1, and
/// every pose at least `out.blocks()` blocks (indexing checks it again).
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn blend(poses: &[&[SoaBlock]], w: &[f32], out: &mut (impl Sink + ?Sized)) {
    // Two to four inputs (the animator's cross-fades, ozz's layer counts) with their count
    // known: the loops over inputs unroll, the weights stay in registers and the blocks'
    // bounds are checked once.
    match (poses, w) {
        ([a, b], [wa, wb]) => blend_fixed([a, b], [*wa, *wb], out),
        ([a, b, c], [wa, wb, wc]) => blend_fixed([a, b, c], [*wa, *wb, *wc], out),
        ([a, b, c, d], [wa, wb, wc, wd]) => blend_fixed([a, b, c, d], [*wa, *wb, *wc, *wd], out),
        _ => blend_any(poses, w, out),
    }
}

/// [`blend`] of `M` inputs, each block's operations those of [`blend_any`] in its order.
#[inline(always)]
// `b` indexes every input's blocks and the sink's, `k` the inputs and their weights.
#[allow(clippy::needless_range_loop)]
unsafe fn blend_fixed<const M: usize>(
    poses: [&&[SoaBlock]; M],
    w: [f32; M],
    out: &mut (impl Sink + ?Sized),
) {
    let n = out.blocks();
    // Plain loops, not closures: a closure would not run with this function's target features.
    let mut inputs: [&[SoaBlock]; M] = [&[]; M];
    let mut wv = [_mm256_setzero_ps(); M];
    for k in 0..M {
        inputs[k] = &poses[k][..n];
        wv[k] = _mm256_set1_ps(w[k]);
    }
    let poses = inputs;
    let scale = _mm256_set1_ps(SCALE);
    for b in 0..n {
        let o = out.block(b);
        let x0 = &poses[0][b];
        let mut vectors = vectors(x0);
        for c in &mut vectors {
            *c = _mm256_mul_ps(*c, wv[0]);
        }
        for k in 1..M {
            let v = self::vectors(&poses[k][b]);
            for (acc, c) in vectors.iter_mut().zip(v) {
                *acc = _mm256_fmadd_ps(c, wv[k], *acc);
            }
        }
        // SAFETY: as in `blend_any`.
        for (dst, v) in o
            .translation
            .iter_mut()
            .chain(o.scale.iter_mut())
            .zip(vectors)
        {
            _mm256_store_ps(dst.as_mut_ptr(), v);
        }
        let q0 = rotation(x0);
        let reference = [
            _mm256_mul_ps(q0[0], scale),
            _mm256_mul_ps(q0[1], scale),
            _mm256_mul_ps(q0[2], scale),
            _mm256_mul_ps(q0[3], scale),
        ];
        let mut sum = q0;
        for c in &mut sum {
            *c = _mm256_mul_ps(*c, wv[0]);
        }
        for k in 1..M {
            add_on_side(&mut sum, &reference, rotation(&poses[k][b]), wv[k]);
        }
        let r = normalise8(sum);
        // SAFETY: as in `blend_any`.
        for (dst, v) in o.rotation.iter_mut().zip(r) {
            _mm256_store_ps(dst.as_mut_ptr(), v);
        }
        out.done(b);
    }
}

/// [`blend`] of any number of inputs.
#[inline(always)]
// `b` indexes every input's blocks and the sink's, not one slice.
#[allow(clippy::needless_range_loop)]
unsafe fn blend_any(poses: &[&[SoaBlock]], w: &[f32], out: &mut (impl Sink + ?Sized)) {
    let m = poses.len().min(w.len());
    let scale = _mm256_set1_ps(SCALE);
    let w0 = _mm256_set1_ps(w[0]);
    for b in 0..out.blocks() {
        let o = out.block(b);
        let x0 = &poses[0][b];
        let mut vectors = vectors(x0);
        for c in &mut vectors {
            *c = _mm256_mul_ps(*c, w0);
        }
        for k in 1..m {
            let wk = _mm256_set1_ps(w[k]);
            let v = self::vectors(&poses[k][b]);
            for (acc, c) in vectors.iter_mut().zip(v) {
                *acc = _mm256_fmadd_ps(c, wk, *acc);
            }
        }
        // SAFETY: each array is eight f32 of a 32-byte aligned block (asserted above),
        // written through a unique reference.
        for (dst, v) in o
            .translation
            .iter_mut()
            .chain(o.scale.iter_mut())
            .zip(vectors)
        {
            _mm256_store_ps(dst.as_mut_ptr(), v);
        }

        let q0 = rotation(x0);
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
        for k in 1..m {
            let wk = _mm256_set1_ps(w[k]);
            add_on_side(&mut sum, &reference, rotation(&poses[k][b]), wk);
        }
        let r = normalise8(sum);
        // SAFETY: as for the vectors above.
        for (dst, v) in o.rotation.iter_mut().zip(r) {
            _mm256_store_ps(dst.as_mut_ptr(), v);
        }
        out.done(b);
    }
}

/// [`super::soa::lerp_soa`]: `out = lerp(a, b, t)` block by block (`a` from `from`, else
/// `out`), with the row formulas' operations in their order and no fused multiply-add
/// (Rust does not contract `a * b + c`, so the row code has none either): translations and
/// scales `a * (1 - t) + b * t`; rotations after the side test on glam's four-wide dot
/// product `(ax bx + az bz) + (ay by + aw bw)`, `b` multiplied by -1 where it is negative
/// (glam's quaternion negation; it differs from flipping the sign bit only on NaN, whose dot
/// product is never negative); with `NORMALISE` each rotation times `1 / sqrt(v · v)`.
/// The grouping is glam's SSE2 code's, which x86-64 builds use (glam's `scalar-math`
/// feature groups the sum otherwise: `lerp_soa_is_the_row_lerp` compares with glam itself
/// and would fail there).
///
/// # Safety
/// The CPU must support AVX. `from` (where given) and `other` have at least `out.len()`
/// blocks (indexing checks it again).
#[target_feature(enable = "avx")]
pub(super) unsafe fn lerp<const NORMALISE: bool>(
    out: &mut [SoaBlock],
    from: Option<&[SoaBlock]>,
    other: &[SoaBlock],
    t: f32,
) {
    let (tv, sv) = (_mm256_set1_ps(t), _mm256_set1_ps(1.0 - t));
    let (zero, minus) = (_mm256_setzero_ps(), _mm256_set1_ps(-1.0));
    for k in 0..out.len() {
        let a = match from {
            Some(f) => &f[k],
            None => &out[k],
        };
        let (va, qa) = (vectors(a), rotation(a));
        let b = &other[k];
        let (vb, mut qb) = (vectors(b), rotation(b));
        let o = &mut out[k];
        let (t3, s3) = (&mut o.translation, &mut o.scale);
        // SAFETY: each array is eight f32 of a 32-byte aligned block (asserted above),
        // written through a unique reference.
        for ((dst, a), b) in t3.iter_mut().chain(s3.iter_mut()).zip(va).zip(vb) {
            let v = _mm256_add_ps(_mm256_mul_ps(a, sv), _mm256_mul_ps(b, tv));
            _mm256_store_ps(dst.as_mut_ptr(), v);
        }
        let flip = _mm256_cmp_ps::<_CMP_LT_OQ>(dot4(&qa, &qb), zero);
        for c in &mut qb {
            *c = _mm256_blendv_ps(*c, _mm256_mul_ps(*c, minus), flip);
        }
        // Plain loops, not closures (which would not run with this function's features).
        let mut q = qa;
        for (c, b) in q.iter_mut().zip(qb) {
            *c = _mm256_add_ps(_mm256_mul_ps(*c, sv), _mm256_mul_ps(b, tv));
        }
        if NORMALISE {
            q = unit(q);
        }
        // SAFETY: as above.
        for (dst, v) in o.rotation.iter_mut().zip(q) {
            _mm256_store_ps(dst.as_mut_ptr(), v);
        }
    }
}

/// [`super::soa::normalise_rotations_soa`]: each rotation times `1 / sqrt(v · v)`.
///
/// # Safety
/// The CPU must support AVX.
#[target_feature(enable = "avx")]
pub(super) unsafe fn normalise_rotations(out: &mut [SoaBlock]) {
    for o in out {
        let q = unit(rotation(o));
        // SAFETY: as in `lerp`.
        for (dst, v) in o.rotation.iter_mut().zip(q) {
            _mm256_store_ps(dst.as_mut_ptr(), v);
        }
    }
}

/// glam's four-wide dot product per lane, its additions grouped as its SSE2 code groups
/// them: `(ax bx + az bz) + (ay by + aw bw)`.
#[inline(always)]
unsafe fn dot4(a: &[__m256; 4], b: &[__m256; 4]) -> __m256 {
    let xz = _mm256_add_ps(_mm256_mul_ps(a[0], b[0]), _mm256_mul_ps(a[2], b[2]));
    let yw = _mm256_add_ps(_mm256_mul_ps(a[1], b[1]), _mm256_mul_ps(a[3], b[3]));
    _mm256_add_ps(xz, yw)
}

/// `v * (1 / sqrt(v · v))` per lane (glam's `v * v.length_recip()`).
#[inline(always)]
unsafe fn unit(mut q: [__m256; 4]) -> [__m256; 4] {
    let r = _mm256_div_ps(_mm256_set1_ps(1.0), _mm256_sqrt_ps(dot4(&q, &q)));
    for c in &mut q {
        *c = _mm256_mul_ps(*c, r);
    }
    q
}

/// The rotation's four component rows of a block.
#[inline(always)]
unsafe fn rotation(x: &SoaBlock) -> [__m256; 4] {
    // SAFETY: each row is eight f32, 32-byte aligned (asserted above), read through a shared
    // reference.
    let r = &x.rotation;
    [
        _mm256_load_ps(r[0].as_ptr()),
        _mm256_load_ps(r[1].as_ptr()),
        _mm256_load_ps(r[2].as_ptr()),
        _mm256_load_ps(r[3].as_ptr()),
    ]
}

/// The translation's and the scale's six component rows of a block.
#[inline(always)]
unsafe fn vectors(x: &SoaBlock) -> [__m256; 6] {
    let (t, s) = (&x.translation, &x.scale);
    // SAFETY: as in `rotation`.
    [
        _mm256_load_ps(t[0].as_ptr()),
        _mm256_load_ps(t[1].as_ptr()),
        _mm256_load_ps(t[2].as_ptr()),
        _mm256_load_ps(s[0].as_ptr()),
        _mm256_load_ps(s[1].as_ptr()),
        _mm256_load_ps(s[2].as_ptr()),
    ]
}

/// Writes the first `out.len()` (at most eight) lanes of `block` to `out`: the eight rows
/// x, y, z, w, translation x, y, z and scale x transposed into each joint's first eight
/// floats (one 32-byte store per joint), the scale's y and z paired (one 8-byte store).
///
/// # Safety
/// The CPU must support AVX; `out` has at most eight entries.
#[target_feature(enable = "avx")]
pub(super) unsafe fn write_block(block: &SoaBlock, out: &mut [Transform]) {
    let (r, t, s) = (&block.rotation, &block.translation, &block.scale);
    // SAFETY: every row is eight f32, 32-byte aligned (asserted above), read through a
    // shared reference.
    let rows = [
        _mm256_load_ps(r[0].as_ptr()),
        _mm256_load_ps(r[1].as_ptr()),
        _mm256_load_ps(r[2].as_ptr()),
        _mm256_load_ps(r[3].as_ptr()),
        _mm256_load_ps(t[0].as_ptr()),
        _mm256_load_ps(t[1].as_ptr()),
        _mm256_load_ps(t[2].as_ptr()),
        _mm256_load_ps(s[0].as_ptr()),
    ];
    let heads = transpose8(rows);
    let (sy, sz) = (_mm256_load_ps(s[1].as_ptr()), _mm256_load_ps(s[2].as_ptr()));
    // Joints (0, 1 | 4, 5) and (2, 3 | 6, 7): each joint's (y, z) in one 64-bit lane.
    let yz = [_mm256_unpacklo_ps(sy, sz), _mm256_unpackhi_ps(sy, sz)];
    for (i, o) in out.iter_mut().enumerate().take(8) {
        let p = o as *mut Transform as *mut f32;
        let pair = yz[(i / 2) % 2];
        let half = if i < 4 {
            _mm256_castps256_ps128(pair)
        } else {
            _mm256_extractf128_ps::<1>(pair)
        };
        // SAFETY: floats 0..8 of a `Transform` are its rotation, translation and scale.x,
        // 8..10 its scale.y and z (asserted in `play/simd.rs`), written through a unique
        // reference: nothing past the scale.
        _mm256_storeu_ps(p, heads[i]);
        if i % 2 == 0 {
            store2(p.add(8), half);
        } else {
            store2(p.add(8), _mm_movehl_ps(half, half));
        }
    }
}

/// Fills `block` from eight transforms: each joint's first eight floats (one 32-byte load)
/// transposed into the rows x, y, z, w, translation x, y, z and scale x, the scale's y and z
/// from one 8-byte load per joint.
///
/// # Safety
/// The CPU must support AVX.
#[target_feature(enable = "avx")]
pub(super) unsafe fn read_block(joints: &[Transform; 8], block: &mut SoaBlock) {
    let p: [*const f32; 8] = std::array::from_fn(|i| &joints[i] as *const Transform as *const f32);
    // SAFETY: floats 0..10 of a `Transform` are its fields (asserted in `play/simd.rs`),
    // read through a shared reference; the padding after them is never read.
    let rows = [
        _mm256_loadu_ps(p[0]),
        _mm256_loadu_ps(p[1]),
        _mm256_loadu_ps(p[2]),
        _mm256_loadu_ps(p[3]),
        _mm256_loadu_ps(p[4]),
        _mm256_loadu_ps(p[5]),
        _mm256_loadu_ps(p[6]),
        _mm256_loadu_ps(p[7]),
    ];
    let c = transpose8(rows);
    // (y, z) of joints 0, 1 | 4, 5 and 2, 3 | 6, 7, as `write_block` pairs them.
    let (lo, hi) = (scale_yz(&p, 0, 4), scale_yz(&p, 2, 6));
    let sy = _mm256_shuffle_ps::<0x88>(lo, hi);
    let sz = _mm256_shuffle_ps::<0xDD>(lo, hi);
    let (r, t, s) = (
        &mut block.rotation,
        &mut block.translation,
        &mut block.scale,
    );
    // SAFETY: as in `write_block`, through a unique reference.
    for (dst, v) in r.iter_mut().chain(t.iter_mut()).zip(&c[..7]) {
        _mm256_store_ps(dst.as_mut_ptr(), *v);
    }
    _mm256_store_ps(s[0].as_mut_ptr(), c[7]);
    _mm256_store_ps(s[1].as_mut_ptr(), sy);
    _mm256_store_ps(s[2].as_mut_ptr(), sz);
}

/// The scale's (y, z) of joints `a`, `a + 1` in the low half and `b`, `b + 1` in the high
/// half (floats 8 and 9 of the transforms at `p`).
#[inline(always)]
unsafe fn scale_yz(p: &[*const f32; 8], a: usize, b: usize) -> __m256 {
    // SAFETY: the caller's (`read_block`): floats 8 and 9 of each transform are its scale.y
    // and scale.z.
    let lo = _mm_movelh_ps(load2(p[a].add(8)), load2(p[a + 1].add(8)));
    let hi = _mm_movelh_ps(load2(p[b].add(8)), load2(p[b + 1].add(8)));
    _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(lo), hi)
}

/// An eight-by-eight transpose: row `i` of the result holds lane `i` of each input.
#[inline(always)]
unsafe fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    // Four-by-four in each half, then the halves exchanged.
    let a = transpose4(r[0], r[1], r[2], r[3]);
    let b = transpose4(r[4], r[5], r[6], r[7]);
    [
        _mm256_permute2f128_ps::<0x20>(a[0], b[0]),
        _mm256_permute2f128_ps::<0x20>(a[1], b[1]),
        _mm256_permute2f128_ps::<0x20>(a[2], b[2]),
        _mm256_permute2f128_ps::<0x20>(a[3], b[3]),
        _mm256_permute2f128_ps::<0x31>(a[0], b[0]),
        _mm256_permute2f128_ps::<0x31>(a[1], b[1]),
        _mm256_permute2f128_ps::<0x31>(a[2], b[2]),
        _mm256_permute2f128_ps::<0x31>(a[3], b[3]),
    ]
}

//! Dual quaternion skinning of eight vertices at once with AVX and FMA: the blend, the
//! conversion to a matrix and its application done in structure-of-arrays form, one vertex
//! per 256-bit lane.
//!
//! One vertex at a time, turning the blended dual quaternion into a matrix is scalar work
//! (about forty dependent products that four-wide registers cannot share out) and costs more
//! than the blend itself. Eight vertices side by side do it in the same number of
//! instructions as one. The palette's dual quaternions are loaded as whole 32-byte rows and
//! transposed, positions and normals are de-interleaved from and re-interleaved to the
//! caller's `Vec3` arrays with shuffles; the arithmetic is that of
//! [`super::kernel::dual_vertex`], the path on CPUs without AVX. Rigid vertices that do not
//! fill a block go through a padded copy ([`dual_gathered`]): lanes are computed
//! independently, so every vertex gets the same bits however the mesh is split into ranges
//! (`skin_par`'s chunks included). The hemisphere test (the sign of a dot product) is summed
//! in another order than glam's: for two joints almost exactly a half turn apart the FMA and
//! baseline builds can pick opposite signs and blend differently, the discontinuity dual
//! quaternion skinning has there anyway; within one build the choice is always the same.
//! Only the FMA build of the skinning kernel ([`super::kernel::skin_range_fma`])
//! calls in here, after run-time detection.
//!
//! Written with `std::arch` because the layout changes (8x8 transpose, 3x8 de-interleave)
//! are what the compiler does not produce from portable code: an attempt with fixed-size
//! arrays vectorised the arithmetic but went through memory lane by lane, and stalled on
//! store forwarding.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use glam::{Vec3, Vec4};

use super::kernel::{tangent, Source};
use super::{DualQuat, SkinOutput};
use crate::play::simd::{pair, transpose4};

// The layouts the loads rely on (glam's SSE2 and scalar builds alike).
const _: () = assert!(std::mem::size_of::<DualQuat>() == 32);
const _: () = assert!(std::mem::size_of::<Vec3>() == 12);

/// Vertices per block: a 256-bit register of `f32`.
pub(super) const LANES: usize = 8;

/// The real and dual halves of dual quaternions `a` and `b`, `a`'s in the low halves.
///
/// # Safety
/// `a` and `b` must be below `d.len()`: the loads are unchecked (the callers check the
/// largest joint of a whole group once, see [`dual_block`]).
#[inline(always)]
unsafe fn load_dual_pair(d: &[DualQuat], a: u16, b: u16) -> (__m256, __m256) {
    debug_assert!((a as usize) < d.len() && (b as usize) < d.len());
    // SAFETY: `DualQuat` is `repr(C)` of two `Quat`s, each four `f32` (x, y, z, w), so an
    // element of `d` is 8 consecutive f32, and `a`, `b` are elements (the caller's promise).
    // Unaligned loads have no alignment requirement.
    let (a, b) = (
        d.as_ptr().add(a as usize) as *const f32,
        d.as_ptr().add(b as usize) as *const f32,
    );
    (
        pair(_mm_loadu_ps(a), _mm_loadu_ps(b)),
        pair(_mm_loadu_ps(a.add(4)), _mm_loadu_ps(b.add(4))),
    )
}

/// The dual quaternions of `joints[l * K + i]` for the eight lanes `l`, transposed: element
/// `c` holds component `c` (real x, y, z, w, then dual x, y, z, w) of every lane.
///
/// # Safety
/// Every joint read must be below `d.len()` (as [`load_dual_pair`]).
#[inline(always)]
unsafe fn load_transposed<const K: usize>(d: &[DualQuat], joints: &[u16], i: usize) -> [__m256; 8] {
    // Lanes l and l + 4 share a register (four-by-four transposes in each half, inserts on
    // the way in); plain calls, not closures, which would not take on the target features.
    let j = &joints[i..i + 7 * K + 1];
    let (r0, d0) = load_dual_pair(d, j[0], j[4 * K]);
    let (r1, d1) = load_dual_pair(d, j[K], j[5 * K]);
    let (r2, d2) = load_dual_pair(d, j[2 * K], j[6 * K]);
    let (r3, d3) = load_dual_pair(d, j[3 * K], j[7 * K]);
    let [rx, ry, rz, rw] = transpose4(r0, r1, r2, r3);
    let [dx, dy, dz, dw] = transpose4(d0, d1, d2, d3);
    [rx, ry, rz, rw, dx, dy, dz, dw]
}

/// Eight `Vec3` as their x, y and z lanes.
#[inline(always)]
pub(super) unsafe fn load_vec3(v: &[Vec3]) -> [__m256; 3] {
    let v = &v[..LANES];
    // SAFETY: `Vec3` is `repr(C)` of three f32, so eight of them are 24 consecutive f32,
    // and `v` has eight elements (the slice above checks it). Unaligned 16-byte loads at
    // offsets 0, 4, ..., 20 read exactly those 24.
    let p = v.as_ptr() as *const f32;
    let m03 = pair(_mm_loadu_ps(p), _mm_loadu_ps(p.add(12))); // x0 y0 z0 x1 | x4 y4 z4 x5
    let m14 = pair(_mm_loadu_ps(p.add(4)), _mm_loadu_ps(p.add(16))); // y1 z1 x2 y2 | y5 z5 x6 y6
    let m25 = pair(_mm_loadu_ps(p.add(8)), _mm_loadu_ps(p.add(20))); // z2 x3 y3 z3 | z6 x7 y7 z7
    let xy = _mm256_shuffle_ps::<0b10_01_11_10>(m14, m25); // x2 y2 x3 y3
    let yz = _mm256_shuffle_ps::<0b01_00_10_01>(m03, m14); // y0 z0 y1 z1
    [
        _mm256_shuffle_ps::<0b10_00_11_00>(m03, xy),
        _mm256_shuffle_ps::<0b11_01_10_00>(yz, xy),
        _mm256_shuffle_ps::<0b11_00_11_01>(yz, m25),
    ]
}

/// Writes the lanes `x`, `y`, `z` to eight `Vec3`.
#[inline(always)]
pub(super) unsafe fn store_vec3(out: &mut [Vec3], [x, y, z]: [__m256; 3]) {
    let out = &mut out[..LANES];
    let rxy = _mm256_shuffle_ps::<0b10_00_10_00>(x, y); // x0 x2 y0 y2
    let ryz = _mm256_shuffle_ps::<0b11_01_11_01>(y, z); // y1 y3 z1 z3
    let rzx = _mm256_shuffle_ps::<0b11_01_10_00>(z, x); // z0 z2 x1 x3
    let r03 = _mm256_shuffle_ps::<0b10_00_10_00>(rxy, rzx); // x0 y0 z0 x1
    let r14 = _mm256_shuffle_ps::<0b11_01_10_00>(ryz, rxy); // y1 z1 x2 y2
    let r25 = _mm256_shuffle_ps::<0b11_01_11_01>(rzx, ryz); // z2 x3 y3 z3

    // SAFETY: as in `load_vec3`, `out` is 24 consecutive f32 (checked above); the six
    // unaligned 16-byte stores cover exactly them, and `out` is borrowed mutably.
    let p = out.as_mut_ptr() as *mut f32;
    _mm_storeu_ps(p, _mm256_castps256_ps128(r03));
    _mm_storeu_ps(p.add(4), _mm256_castps256_ps128(r14));
    _mm_storeu_ps(p.add(8), _mm256_castps256_ps128(r25));
    _mm_storeu_ps(p.add(12), _mm256_extractf128_ps::<1>(r03));
    _mm_storeu_ps(p.add(16), _mm256_extractf128_ps::<1>(r14));
    _mm_storeu_ps(p.add(20), _mm256_extractf128_ps::<1>(r25));
}

/// Row `r` of `m` (rows of four lanes) times the direction `v`.
#[inline(always)]
unsafe fn rotate_row(m: &[__m256; 12], r: usize, v: [__m256; 3]) -> __m256 {
    _mm256_fmadd_ps(
        m[4 * r],
        v[0],
        _mm256_fmadd_ps(m[4 * r + 1], v[1], _mm256_mul_ps(m[4 * r + 2], v[2])),
    )
}

/// Row `r` of `m` (rows of four lanes) times the point `p`.
#[inline(always)]
unsafe fn transform_row(m: &[__m256; 12], r: usize, p: [__m256; 3]) -> __m256 {
    _mm256_fmadd_ps(
        m[4 * r],
        p[0],
        _mm256_fmadd_ps(
            m[4 * r + 1],
            p[1],
            _mm256_fmadd_ps(m[4 * r + 2], p[2], m[4 * r + 3]),
        ),
    )
}

/// The `K - 1` stored weights of eight vertices (each vertex's following one another in
/// `w`), one register per weight: `[i]` holds weight `i` of every lane. Up to three weights
/// per vertex are de-interleaved with whole-row loads and shuffles; more are gathered.
#[inline(always)]
unsafe fn lane_weights<const K: usize>(w: &[f32]) -> [__m256; 8] {
    let w1 = K - 1;
    let w = &w[..LANES * w1];
    let mut out = [_mm256_setzero_ps(); 8];
    // SAFETY (the loads): `w` holds `8 * w1` f32 (checked above); each unaligned load reads
    // four or eight of them within it.
    let p = w.as_ptr();
    match w1 {
        1 => out[0] = _mm256_loadu_ps(p),
        2 => {
            let lo = pair(_mm_loadu_ps(p), _mm_loadu_ps(p.add(8))); // a0 b0 a1 b1 | a4 b4 a5 b5
            let hi = pair(_mm_loadu_ps(p.add(4)), _mm_loadu_ps(p.add(12))); // a2 b2 a3 b3 | ..
            out[0] = _mm256_shuffle_ps::<0x88>(lo, hi);
            out[1] = _mm256_shuffle_ps::<0xDD>(lo, hi);
        }
        3 => {
            // Eight triples: the layout of eight `Vec3`.
            // SAFETY: `Vec3` is `repr(C)` of three f32 (asserted above), and `w` is 24 f32.
            let v = std::slice::from_raw_parts(p as *const Vec3, LANES);
            [out[0], out[1], out[2]] = load_vec3(v);
        }
        _ => {
            for (i, o) in out.iter_mut().enumerate().take(w1) {
                *o = _mm256_setr_ps(
                    w[i],
                    w[w1 + i],
                    w[2 * w1 + i],
                    w[3 * w1 + i],
                    w[4 * w1 + i],
                    w[5 * w1 + i],
                    w[6 * w1 + i],
                    w[7 * w1 + i],
                );
            }
        }
    }
    out
}

/// The translation row of the dual quaternion matrix for one axis, `(w d_a - d_w a + (b d_c -
/// c d_b)) s`: `a`, `b`, `c` this axis and the next two of the real part, `da`, `db`, `dc`
/// the same of the dual part.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn translation(
    [a, b, c]: [__m256; 3],
    [da, db, dc]: [__m256; 3],
    w: __m256,
    dw: __m256,
    s: __m256,
) -> __m256 {
    let cross = _mm256_fmsub_ps(b, dc, _mm256_mul_ps(c, db));
    _mm256_mul_ps(
        _mm256_add_ps(_mm256_fmsub_ps(da, w, _mm256_mul_ps(a, dw)), cross),
        s,
    )
}

/// The directions `[x, y, z]` scaled to unit length; in lanes where the length is zero,
/// subnormal or not finite, the direction of `src` (eight `Vec3`, the source the directions
/// were transformed from; as [`super::kernel::unit`]). `src` is loaded only when some lane
/// needs it: kept live beside the arithmetic, it cost registers.
#[inline(always)]
pub(super) unsafe fn unit8(d: [__m256; 3], src: &[Vec3]) -> [__m256; 3] {
    let (mut u, ok) = scale_unit8(d);
    if _mm256_movemask_ps(ok) != 0xFF {
        let fallback = load_vec3(src);
        for c in 0..3 {
            u[c] = _mm256_blendv_ps(fallback[c], u[c], ok);
        }
    }
    u
}

/// The directions `[x, y, z]` scaled to unit length, and a mask of the lanes where that is
/// meaningful (the squared length is a normal, finite number); the other lanes hold garbage.
#[inline(always)]
pub(super) unsafe fn scale_unit8([x, y, z]: [__m256; 3]) -> ([__m256; 3], __m256) {
    let l2 = _mm256_fmadd_ps(x, x, _mm256_fmadd_ps(y, y, _mm256_mul_ps(z, z)));
    // One Newton-Raphson step on the estimate, as `transform::inv_sqrt`.
    let e = _mm256_rsqrt_ps(l2);
    let h = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5), l2), e), e);
    let inv = _mm256_mul_ps(e, _mm256_sub_ps(_mm256_set1_ps(1.5), h));
    let ok = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_GE_OQ>(l2, _mm256_set1_ps(f32::MIN_POSITIVE)),
        _mm256_cmp_ps::<_CMP_LE_OQ>(l2, _mm256_set1_ps(f32::MAX)),
    );
    let u = [
        _mm256_mul_ps(x, inv),
        _mm256_mul_ps(y, inv),
        _mm256_mul_ps(z, inv),
    ];
    (u, ok)
}

/// Skins vertices `v0..v0 + 8` of an influence group with `K` influences per vertex by dual
/// quaternion blending; every joint they use must be rigid. `joints` and `weights` are the
/// group's (`K` and `K - 1` per vertex), `src` and `out` cover the group.
///
/// # Safety
/// The CPU must support AVX and FMA, and every joint of the block must be below `d.len()`
/// (the dual quaternions are loaded unchecked: the caller checks the largest joint of the
/// whole group once, where a check per load had cost 32 compares and branches per block of
/// four influences, and hoisted all the indices to the stack before the arithmetic).
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn dual_block<const K: usize>(
    d: &[DualQuat],
    joints: &[u16],
    weights: &[f32],
    src: &Source<'_>,
    v0: usize,
    out: &mut SkinOutput<'_>,
) {
    let joints = &joints[v0 * K..(v0 + LANES) * K];
    let w1 = K.saturating_sub(1);
    let weights = &weights[v0 * w1..(v0 + LANES) * w1];
    // The blend (see `kernel::blend_dual`), lane by lane.
    let mut q = load_transposed::<K>(d, joints, 0);
    // The first joint's rotation, the side every other one is blended on. (Only its real
    // part is kept: holding all eight components live through the loop spilled registers.)
    let first = [q[0], q[1], q[2], q[3]];
    if K > 1 {
        let ws = lane_weights::<K>(weights);
        let w0 = ws[0];
        for c in &mut q {
            *c = _mm256_mul_ps(*c, w0);
        }
        let mut last = _mm256_sub_ps(_mm256_set1_ps(1.0), w0);
        let sign = _mm256_set1_ps(-0.0);
        // A plain range over the constant `K`, unrolled: an iterator chain (`take`, `skip`)
        // here was left as calls, the loop not unrolled and the sums kept on the stack.
        #[allow(clippy::needless_range_loop)]
        for i in 1..K {
            let qi = load_transposed::<K>(d, joints, i);
            let wi = if i + 1 < K { ws[i] } else { last };
            last = _mm256_sub_ps(last, wi);
            let dot = _mm256_fmadd_ps(
                first[0],
                qi[0],
                _mm256_fmadd_ps(
                    first[1],
                    qi[1],
                    _mm256_fmadd_ps(first[2], qi[2], _mm256_mul_ps(first[3], qi[3])),
                ),
            );
            // The weight takes the sign of the dot product: shortest path.
            let s = _mm256_xor_ps(wi, _mm256_and_ps(dot, sign));
            for c in 0..8 {
                q[c] = _mm256_fmadd_ps(qi[c], s, q[c]);
            }
        }
    }
    let n = _mm256_fmadd_ps(
        q[0],
        q[0],
        _mm256_fmadd_ps(
            q[1],
            q[1],
            _mm256_fmadd_ps(q[2], q[2], _mm256_mul_ps(q[3], q[3])),
        ),
    );
    // Only NaN or infinite palettes fail this (see `kernel::blend_dual`): those lanes keep
    // the first joint's transform.
    let ok = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_GE_OQ>(n, _mm256_set1_ps(1e-12)),
        _mm256_cmp_ps::<_CMP_LE_OQ>(n, _mm256_set1_ps(f32::MAX)),
    );
    if _mm256_movemask_ps(ok) != 0xFF {
        // Loaded again, here only (no valid palette gets here).
        let first = load_transposed::<K>(d, joints, 0);
        for c in 0..8 {
            q[c] = _mm256_blendv_ps(first[c], q[c], ok);
        }
    }
    let n = _mm256_blendv_ps(_mm256_set1_ps(1.0), n, ok);
    // The matrix, as `kernel::dual_to_affine`, rows of four lanes (m[row * 4 + column]).
    let s = _mm256_div_ps(_mm256_set1_ps(2.0), n);
    let [x, y, z, w, dx, dy, dz, dw] = q;
    let (xs, ys, zs) = (
        _mm256_mul_ps(x, s),
        _mm256_mul_ps(y, s),
        _mm256_mul_ps(z, s),
    );
    let (xx, yy, zz) = (
        _mm256_mul_ps(x, xs),
        _mm256_mul_ps(y, ys),
        _mm256_mul_ps(z, zs),
    );
    let (xy, xz, yz) = (
        _mm256_mul_ps(x, ys),
        _mm256_mul_ps(x, zs),
        _mm256_mul_ps(y, zs),
    );
    let (wx, wy, wz) = (
        _mm256_mul_ps(w, xs),
        _mm256_mul_ps(w, ys),
        _mm256_mul_ps(w, zs),
    );
    let one = _mm256_set1_ps(1.0);
    // Translation: (w d_v - d_w r_v + r_v x d_v) * s.
    let m = [
        _mm256_sub_ps(one, _mm256_add_ps(yy, zz)),
        _mm256_sub_ps(xy, wz),
        _mm256_add_ps(xz, wy),
        translation([x, y, z], [dx, dy, dz], w, dw, s),
        _mm256_add_ps(xy, wz),
        _mm256_sub_ps(one, _mm256_add_ps(xx, zz)),
        _mm256_sub_ps(yz, wx),
        translation([y, z, x], [dy, dz, dx], w, dw, s),
        _mm256_sub_ps(xz, wy),
        _mm256_add_ps(yz, wx),
        _mm256_sub_ps(one, _mm256_add_ps(xx, yy)),
        translation([z, x, y], [dz, dx, dy], w, dw, s),
    ];
    let p = load_vec3(&src.positions[v0..]);
    let rows = [
        transform_row(&m, 0, p),
        transform_row(&m, 1, p),
        transform_row(&m, 2, p),
    ];
    store_vec3(&mut out.positions[v0..], rows);
    if let (Some(o), Some(ns)) = (out.normals.as_deref_mut(), src.normals) {
        let v = load_vec3(&ns[v0..]);
        let rotated = [
            rotate_row(&m, 0, v),
            rotate_row(&m, 1, v),
            rotate_row(&m, 2, v),
        ];
        // A rotation keeps unit normals unit: renormalising them cost 10 % of the kernel.
        store_vec3(
            &mut o[v0..],
            if src.unit_normals {
                rotated
            } else {
                unit8(rotated, &ns[v0..])
            },
        );
    }
    if let (Some(o), Some(ts)) = (out.tangents.as_deref_mut(), src.tangents) {
        // Rarely asked for on the CPU: the rows go through memory, each lane scalar.
        let mut rows = [[0.0f32; LANES]; 12];
        for (r, mr) in rows.iter_mut().zip(&m) {
            // SAFETY: `r` is eight f32; an unaligned store writes exactly them.
            _mm256_storeu_ps(r.as_mut_ptr(), *mr);
        }
        for l in 0..LANES {
            let t = ts[v0 + l];
            let e = |r: usize, c: usize| rows[4 * r + c][l];
            let v = glam::Vec3A::new(
                e(0, 0) * t.x + e(0, 1) * t.y + e(0, 2) * t.z,
                e(1, 0) * t.x + e(1, 1) * t.y + e(1, 2) * t.z,
                e(2, 0) * t.x + e(2, 1) * t.y + e(2, 2) * t.z,
            );
            o[v0 + l] = tangent(v, t, false);
        }
    }
}

/// The vertices `idx` (one to `LANES` of them, all rigid) through [`dual_block`] by way of a
/// block padded with copies of the last, so that each gets the bits it would get inside a
/// full block.
///
/// # Safety
/// As [`dual_block`]: AVX and FMA, and every joint of the vertices `idx` below `d.len()`.
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn dual_gathered<const K: usize>(
    d: &[DualQuat],
    joints: &[u16],
    weights: &[f32],
    src: &Source<'_>,
    idx: &[usize],
    out: &mut SkinOutput<'_>,
) {
    debug_assert!((1..=LANES).contains(&idx.len()));
    debug_assert_eq!(out.normals.is_some(), src.normals.is_some());
    let w1 = K.saturating_sub(1);
    let mut j = [0u16; LANES * 8];
    let mut w = [0.0f32; LANES * 7];
    let mut p = [Vec3::ZERO; LANES];
    let mut nr = [Vec3::ZERO; LANES];
    let mut t = [Vec4::ZERO; LANES];
    for l in 0..LANES {
        let u = idx[l.min(idx.len() - 1)];
        j[l * K..(l + 1) * K].copy_from_slice(&joints[u * K..(u + 1) * K]);
        w[l * w1..(l + 1) * w1].copy_from_slice(&weights[u * w1..(u + 1) * w1]);
        p[l] = src.positions[u];
        if let Some(n) = src.normals {
            nr[l] = n[u];
        }
        if let Some(s) = src.tangents {
            t[l] = s[u];
        }
    }
    let block = Source {
        positions: &p,
        normals: src.normals.map(|_| &nr[..]),
        tangents: src.tangents.map(|_| &t[..]),
        unit_normals: src.unit_normals,
    };
    let (mut op, mut on, mut ot) = (
        [Vec3::ZERO; LANES],
        [Vec3::ZERO; LANES],
        [Vec4::ZERO; LANES],
    );
    {
        let mut o = SkinOutput {
            positions: &mut op,
            normals: out.normals.is_some().then_some(&mut on[..]),
            tangents: out.tangents.is_some().then_some(&mut ot[..]),
        };
        dual_block::<K>(d, &j[..LANES * K], &w[..LANES * w1], &block, 0, &mut o);
    }
    for (l, &u) in idx.iter().enumerate() {
        out.positions[u] = op[l];
        if let Some(o) = out.normals.as_deref_mut() {
            o[u] = on[l];
        }
        if let Some(o) = out.tangents.as_deref_mut() {
            o[u] = ot[l];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avx() -> bool {
        super::super::kernel::fma_available()
    }

    #[test]
    fn vec3_lanes_round_trip() {
        if !avx() {
            return;
        }
        let v: Vec<Vec3> = (0..8)
            .map(|i| Vec3::new(i as f32, 10.0 + i as f32, 20.0 + i as f32))
            .collect();
        // SAFETY: AVX and FMA were just detected.
        let (lanes, back) = unsafe {
            let lanes = load_vec3(&v);
            let mut back = vec![Vec3::ZERO; 8];
            store_vec3(&mut back, lanes);
            let mut a = [[0.0f32; 8]; 3];
            for (a, l) in a.iter_mut().zip(lanes) {
                _mm256_storeu_ps(a.as_mut_ptr(), l);
            }
            (a, back)
        };
        for i in 0..8 {
            assert_eq!(
                [lanes[0][i], lanes[1][i], lanes[2][i]],
                v[i].to_array(),
                "lane {i}"
            );
        }
        assert_eq!(back, v);
    }
}

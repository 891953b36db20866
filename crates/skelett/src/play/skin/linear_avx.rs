//! Linear blend skinning with AVX and FMA: each vertex's matrices blended two columns per
//! 256-bit register, its normals renormalised eight at a time.
//!
//! One vertex at a time with four-wide registers (the baseline build, [`super::kernel`]),
//! blending `K` matrices takes `4 K` multiply-adds and renormalising a direction is a
//! horizontal sum, a square root estimate and a refinement that four lanes cannot share out
//! (about a fifth of the time on CesiumMan). Here a palette matrix is two 32-byte loads
//! (columns x, y and z, w), so the blend takes `2 K`; the blended columns are applied to the
//! position and directions as before, with the same operations in the same order (positions
//! get the bits of the baseline build's FMA instantiation, `kernel::linear_vertex`; a test
//! checks it). Normals are written as transformed, and each chunk of 64 vertices is then
//! renormalised in place eight at a time in structure-of-arrays form (`dual_avx::scale_unit8`,
//! the dual quaternion kernel's arithmetic): the stores have long left the store buffer when
//! they are read back, and no chain of dependent work waits on a whole block. A last, partial
//! block goes through the same code padded, so every vertex gets the same bits however the
//! mesh is split into ranges (`skin_par`'s chunks). Tangents, rarely skinned on the CPU, are
//! renormalised one at a time.
//!
//! One-influence vertices whose eight in a row follow one joint (a rigid part: a robot's
//! limbs, props) skip the per-vertex path: the joint's matrix is broadcast once and the
//! eight positions and normals go through it in structure-of-arrays form ([`rigid8`]),
//! with the per-vertex path's operations in its order, so the bits do not change
//! (robot_quaternius: 1.7 → 1.1 ns per vertex); their normals are renormalised there, in
//! registers, and the chunk's pass leaves them alone (1.1 → 1.07).
//!
//! Positions (and raw normals) are written with one 16-byte store per vertex, whose fourth
//! float lands on the next vertex's `x` and is overwritten by it (within the 64-vertex chunk
//! or by the next chunk); the last vertex of a group's slice (the group's vertices within
//! the range being skinned) gets an 8-byte and a 4-byte store. The loop runs that vertex on
//! its own, so no vertex tests which store it needs (that test and its branches, twice per
//! vertex, were about a ninth of the per-vertex path's instructions on CesiumMan). Only the
//! FMA build of the skinning kernel ([`super::kernel::skin_range_fma`]) calls in here, after
//! run-time detection.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use glam::{Mat3A, Mat4, Vec3, Vec3A, Vec4};

use super::dual_avx::{load_vec3, scale_unit8, store_vec3, unit8, LANES};
use super::kernel::{tangent, Source};
use super::{SkinOutput, SkinPalette};

// The layouts the loads rely on. `Vec3A` (in `Mat3A`) must be glam's SSE2 type, whose four
// lanes are all initialised: its scalar build pads it with an uninitialised fourth float.
// This module (like `kernel::madd`) turns `__m128` into `Vec4`, which only glam's SSE2
// build offers, so with its scalar build it does not compile.
const _: () = assert!(std::mem::size_of::<Mat4>() == 64);
const _: () = assert!(std::mem::size_of::<Mat3A>() == 48);
const _: () = assert!(std::mem::size_of::<Vec3>() == 12);

/// Palette matrix `j` as its columns (x | y) and (z | w).
#[inline(always)]
unsafe fn columns(mats: &[Mat4], j: u16) -> (__m256, __m256) {
    // SAFETY: `Mat4` is four `Vec4` columns, 16 consecutive f32 (asserted above), and
    // `run` has checked that every joint index of the group is below `mats.len()`. Unaligned
    // loads have no alignment requirement.
    debug_assert!((j as usize) < mats.len());
    let m = mats.as_ptr().add(j as usize) as *const f32;
    (_mm256_loadu_ps(m), _mm256_loadu_ps(m.add(8)))
}

/// Palette matrix `j` as its four columns.
#[inline(always)]
unsafe fn columns4(mats: &[Mat4], j: u16) -> [__m128; 4] {
    // SAFETY: as in `columns`.
    debug_assert!((j as usize) < mats.len());
    let m = mats.as_ptr().add(j as usize) as *const f32;
    [
        _mm_loadu_ps(m),
        _mm_loadu_ps(m.add(4)),
        _mm_loadu_ps(m.add(8)),
        _mm_loadu_ps(m.add(12)),
    ]
}

/// Normal matrix `j` as its columns (x | y) and z (each `Vec3A`, four f32 with one unused).
#[inline(always)]
unsafe fn normal_columns(mats: &[Mat3A], j: u16) -> (__m256, __m128) {
    // SAFETY: `Mat3A` is three `Vec3A` of four f32 each, 12 consecutive f32 (asserted
    // above), and `run` has checked every joint index of the group against `mats.len()`.
    debug_assert!((j as usize) < mats.len());
    let m = mats.as_ptr().add(j as usize) as *const f32;
    (_mm256_loadu_ps(m), _mm_loadu_ps(m.add(8)))
}

/// The blend of the `K` palette matrices `j` with the weights `w` (the last one implied),
/// as [`super::kernel::blend_mats`] computes it: the same operations in the same order.
#[inline(always)]
unsafe fn blend<const K: usize>(mats: &[Mat4], j: &[u16], w: &[f32]) -> (__m256, __m256) {
    let (a, b) = columns(mats, j[0]);
    if K == 1 {
        return (a, b);
    }
    let w0 = _mm256_broadcast_ss(&w[0]);
    let (mut xy, mut zw) = (_mm256_mul_ps(a, w0), _mm256_mul_ps(b, w0));
    let mut last = _mm256_sub_ps(_mm256_set1_ps(1.0), w0);
    for i in 1..K - 1 {
        let wi = _mm256_broadcast_ss(&w[i]);
        let (a, b) = columns(mats, j[i]);
        xy = _mm256_fmadd_ps(a, wi, xy);
        zw = _mm256_fmadd_ps(b, wi, zw);
        last = _mm256_sub_ps(last, wi);
    }
    let (a, b) = columns(mats, j[K - 1]);
    (_mm256_fmadd_ps(a, last, xy), _mm256_fmadd_ps(b, last, zw))
}

/// The blend of the `K` normal matrices `j`, as [`blend`].
#[inline(always)]
unsafe fn blend_normal<const K: usize>(mats: &[Mat3A], j: &[u16], w: &[f32]) -> (__m256, __m128) {
    let (a, b) = normal_columns(mats, j[0]);
    if K == 1 {
        return (a, b);
    }
    let w0 = _mm256_broadcast_ss(&w[0]);
    let (mut xy, mut z) = (
        _mm256_mul_ps(a, w0),
        _mm_mul_ps(b, _mm256_castps256_ps128(w0)),
    );
    let mut last = _mm256_sub_ps(_mm256_set1_ps(1.0), w0);
    for i in 1..K - 1 {
        let wi = _mm256_broadcast_ss(&w[i]);
        let (a, b) = normal_columns(mats, j[i]);
        xy = _mm256_fmadd_ps(a, wi, xy);
        z = _mm_fmadd_ps(b, _mm256_castps256_ps128(wi), z);
        last = _mm256_sub_ps(last, wi);
    }
    let (a, b) = normal_columns(mats, j[K - 1]);
    (
        _mm256_fmadd_ps(a, last, xy),
        _mm_fmadd_ps(b, _mm256_castps256_ps128(last), z),
    )
}

/// `x * v.x + y * v.y + z * v.z`, in the order of [`super::kernel::Affine::vector`].
#[inline(always)]
unsafe fn apply(x: __m128, y: __m128, z: __m128, v: &Vec3) -> __m128 {
    let r = _mm_mul_ps(z, _mm_broadcast_ss(&v.z));
    let r = _mm_fmadd_ps(y, _mm_broadcast_ss(&v.y), r);
    _mm_fmadd_ps(x, _mm_broadcast_ss(&v.x), r)
}

/// Writes the first three lanes of `r` to `out[v]`; `v < out.len()`. With `WIDE`, the
/// caller promises `v + 1 < out.len()` as well, and the write is one 16-byte store whose
/// fourth float lands on `out[v + 1].x` (which the caller writes next); without it, an 8-byte
/// and a 4-byte store, nothing past `out[v]`. The kernel's loop takes `WIDE` for every vertex
/// but its slice's last, so that no vertex tests which store it needs.
#[inline(always)]
unsafe fn store3<const WIDE: bool>(out: &mut [Vec3], v: usize, r: __m128) {
    debug_assert!(v < out.len() && (!WIDE || v + 1 < out.len()));
    let p = out.as_mut_ptr().add(v) as *mut f32;
    if WIDE {
        // SAFETY: `out[v]` and `out[v + 1]` are both in the slice (the caller's promise),
        // and `Vec3` is three consecutive f32, so the 16 bytes from `out[v]` are `out[v]`
        // and `out[v + 1].x`, borrowed mutably. Callers write `out[v + 1]` after `out[v]`
        // (in the same 64-vertex chunk or at the start of the next).
        _mm_storeu_ps(p, r);
    } else {
        // SAFETY: `out[v]` is in the slice (the caller's promise): eight bytes, then four.
        _mm_storel_epi64(p as *mut __m128i, _mm_castps_si128(r));
        _mm_store_ss(p.add(2), _mm_movehl_ps(r, r));
    }
}

/// Scales the directions `out` (raw, as skinned) to unit length in place, eight at a time;
/// where a length is unusable, `src`'s direction (as [`super::kernel::unit`]). Every
/// direction gets the same bits wherever it falls in a block: the last, partial block goes
/// through a padded copy. Directions whose bit is set in `done` (bit `i` for `out[i]`; at
/// most 64 directions) were renormalised already ([`rigid8`]) and keep their bits.
#[inline(always)]
unsafe fn unit_in_place(out: &mut [Vec3], src: &[Vec3], done: u64) {
    let n = out.len();
    debug_assert!(n <= 64);
    let mut v0 = 0;
    while v0 < n {
        let m = (n - v0).min(LANES);
        let all = (1u32 << m) - 1;
        let skip = (done >> v0) as u32 & all;
        if skip == all {
            v0 += m;
            continue;
        }
        let ok = if m == LANES {
            let x = load_vec3(&out[v0..]);
            let (u, ok) = scale_unit8(x);
            store_vec3(&mut out[v0..], keep_done(u, x, skip));
            ok
        } else {
            let mut pad = [Vec3::ZERO; LANES];
            pad[..m].copy_from_slice(&out[v0..]);
            let x = load_vec3(&pad);
            let (u, ok) = scale_unit8(x);
            store_vec3(&mut pad, keep_done(u, x, skip));
            out[v0..].copy_from_slice(&pad[..m]);
            ok
        };
        // Done lanes keep their value (unit, or the source direction rigid8 fell back to).
        let ok = _mm256_movemask_ps(ok) as u32 | !all | skip;
        if ok != u32::MAX {
            // A zero, subnormal or infinite length (rare): the source direction, as `unit`.
            for l in (0..m).filter(|l| ok & (1 << l) == 0) {
                out[v0 + l] = src[v0 + l];
            }
        }
        v0 += m;
    }
}

/// `u`, with the lanes whose bit is set in `skip` (done: kept as they are) taken from `x`.
/// Blocks with nothing done (every block of meshes without rigid runs) take no blend.
#[inline(always)]
unsafe fn keep_done(u: [__m256; 3], x: [__m256; 3], skip: u32) -> [__m256; 3] {
    if skip == 0 {
        return u;
    }
    let lane = |l: u32| -((skip >> l & 1) as i32);
    let keep = _mm256_castsi256_ps(_mm256_setr_epi32(
        lane(0),
        lane(1),
        lane(2),
        lane(3),
        lane(4),
        lane(5),
        lane(6),
        lane(7),
    ));
    [
        _mm256_blendv_ps(u[0], x[0], keep),
        _mm256_blendv_ps(u[1], x[1], keep),
        _mm256_blendv_ps(u[2], x[2], keep),
    ]
}

/// What a group's loop writes, fixed per call so that the common cases run without tests
/// per vertex.
const POSITIONS: u8 = 0;
/// Positions and unit normals from the blended matrix.
const UNIT_NORMALS: u8 = 1;
/// Positions and raw (not renormalised) normals from the blended matrix.
const RAW_NORMALS: u8 = 2;
/// Anything else: normal matrices or tangents, tested per vertex.
const GENERAL: u8 = 3;

/// Skins one influence group with `K` (1 to 8) influences per vertex by linear blending:
/// what [`super::kernel::group`] does with [`super::kernel::linear_vertex`] for each vertex.
/// `joints` and `weights` are the group's (`K` and `K - 1` per vertex); `src` and `out`
/// cover exactly the group's vertices.
///
/// # Safety
/// The CPU must support AVX and FMA.
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn linear_group<const K: usize>(
    palette: Palette<'_>,
    joints: &[u16],
    weights: &[f32],
    src: &Source<'_>,
    out: &mut SkinOutput<'_>,
) {
    let normals = out.normals.is_some() && src.normals.is_some();
    let tangents = out.tangents.is_some() && src.tangents.is_some();
    match (
        normals,
        tangents || (normals && palette.normal.is_some()),
        palette.raw,
    ) {
        (false, false, _) => run::<K, POSITIONS>(palette, joints, weights, src, out),
        (true, false, false) => run::<K, UNIT_NORMALS>(palette, joints, weights, src, out),
        (true, false, true) => run::<K, RAW_NORMALS>(palette, joints, weights, src, out),
        (_, true, _) => run::<K, GENERAL>(palette, joints, weights, src, out),
    }
}

/// The matrices a group is skinned with.
#[derive(Clone, Copy)]
pub(super) struct Palette<'a> {
    /// One per joint.
    pub(super) matrices: &'a [Mat4],
    /// Inverse-transposes for the normals, one per joint, where the palette needs them.
    pub(super) normal: Option<&'a [Mat3A]>,
    /// Whether directions are left as transformed (not renormalised).
    pub(super) raw: bool,
}

impl<'a> Palette<'a> {
    /// The linear blending palette of `p`.
    pub(super) fn linear(p: &'a SkinPalette) -> Self {
        Palette {
            matrices: &p.matrices,
            normal: p.use_normal.then_some(&p.normal[..]),
            raw: p.raw_directions,
        }
    }
}

/// The slices one group's loop reads and writes, cut to its `n` vertices.
struct Group<'a, 'o, const K: usize> {
    n: usize,
    joints: &'a [u16],
    weights: &'a [f32],
    mats: &'a [Mat4],
    normal_mats: Option<&'a [Mat3A]>,
    raw: bool,
    src: Source<'a>,
    positions: &'o mut [Vec3],
    normals: Option<&'o mut [Vec3]>,
    tangents: Option<&'o mut [Vec4]>,
}

/// Skins vertex `v < g.n`: writes its position and its raw (not renormalised) normal, with
/// [`store3`]'s 16-byte stores where `WIDE` (then `v + 1 < g.n`: the next vertex, written
/// after this one, takes the fourth float).
#[inline(always)]
unsafe fn vertex<const K: usize, const MODE: u8, const WIDE: bool>(
    g: &mut Group<'_, '_, K>,
    v: usize,
) {
    let w1 = K.saturating_sub(1);
    debug_assert!(v < g.n && (!WIDE || v + 1 < g.n));
    // SAFETY: `v < n`, and `joints` and `weights` hold `K` and `K - 1` entries for each of
    // the `n` vertices, so these ranges are in bounds.
    let j = std::slice::from_raw_parts(g.joints.as_ptr().add(v * K), K);
    let w = std::slice::from_raw_parts(g.weights.as_ptr().add(v * w1), w1);
    let [x, y, z, t] = if K == 1 {
        // Nothing to blend: the columns as four 16-byte loads, no extracts.
        columns4(g.mats, j[0])
    } else {
        let (xy, zw) = blend::<K>(g.mats, j, w);
        [
            _mm256_castps256_ps128(xy),
            _mm256_extractf128_ps::<1>(xy),
            _mm256_castps256_ps128(zw),
            _mm256_extractf128_ps::<1>(zw),
        ]
    };
    // As `Affine::point`: z first, onto the translation.
    // SAFETY (this and the normal below): `v < n`, the length of every source slice.
    let p = g.src.positions.get_unchecked(v);
    let r = _mm_fmadd_ps(z, _mm_broadcast_ss(&p.z), t);
    let r = _mm_fmadd_ps(y, _mm_broadcast_ss(&p.y), r);
    store3::<WIDE>(g.positions, v, _mm_fmadd_ps(x, _mm_broadcast_ss(&p.x), r));
    if let (Some(o), Some(s)) = (g.normals.as_deref_mut(), g.src.normals) {
        let sv = s.get_unchecked(v);
        let d = match g.normal_mats {
            Some(nm) if MODE == GENERAL => {
                let (nxy, nz) = blend_normal::<K>(nm, j, w);
                let nx = _mm256_castps256_ps128(nxy);
                apply(nx, _mm256_extractf128_ps::<1>(nxy), nz, sv)
            }
            _ => apply(x, y, z, sv),
        };
        store3::<WIDE>(o, v, d);
    }
    if MODE == GENERAL {
        if let (Some(o), Some(s)) = (g.tangents.as_deref_mut(), g.src.tangents) {
            let tv = s[v];
            let d = Vec3A::from(Vec4::from(apply(x, y, z, &tv.truncate())).truncate());
            o[v] = tangent(d, tv, g.raw);
        }
    }
}

/// Whether vertices `v..v + 8` of a one-influence group all follow one joint (`joints` holds
/// one per vertex, and at least `v + 8`).
#[inline(always)]
unsafe fn same_joint8(joints: &[u16], v: usize) -> bool {
    let j = &joints[v..v + LANES];
    // SAFETY: `j` is eight u16, 16 bytes, read through the shared slice (unaligned load).
    let all = _mm_loadu_si128(j.as_ptr() as *const __m128i);
    let first = _mm_set1_epi16(j[0] as i16);
    _mm_movemask_epi8(_mm_cmpeq_epi16(all, first)) == 0xFFFF
}

/// Skins vertices `v..v + 8` of a one-influence group that all follow one joint, eight at
/// a time in structure-of-arrays form: the matrix's twelve entries broadcast once, the
/// positions and normals de-interleaved into one register per component. Each lane does
/// [`vertex`]'s operations in its order (the same bits), without its per-vertex shuffles.
/// Rigid parts (a robot's limbs, props) are long runs of such vertices. With unit normals
/// asked for, they are renormalised here, in registers, with the chunk pass's operations (the
/// same bits), and the caller marks them done for that pass: 6-10 % faster on the robot than
/// storing them raw and loading them back (the source direction, for the rare fallback, is
/// loaded again only then; kept live, it had cost registers).
#[inline(always)]
unsafe fn rigid8<const K: usize, const MODE: u8>(g: &mut Group<'_, '_, K>, v: usize) {
    debug_assert!(K == 1 && MODE != GENERAL && v + LANES <= g.n);
    let j = g.joints[v] as usize;
    let m = &g.mats[j];
    let p = load_vec3(&g.src.positions[v..]);
    let mut out = [_mm256_setzero_ps(); 3];
    for (r, o) in out.iter_mut().enumerate() {
        // As `vertex`: z first, onto the translation, then y, then x.
        let t = _mm256_fmadd_ps(entry(m, 2, r), p[2], entry(m, 3, r));
        let t = _mm256_fmadd_ps(entry(m, 1, r), p[1], t);
        *o = _mm256_fmadd_ps(entry(m, 0, r), p[0], t);
    }
    store_vec3(&mut g.positions[v..], out);
    if MODE == POSITIONS {
        return;
    }
    if let (Some(o), Some(s)) = (g.normals.as_deref_mut(), g.src.normals) {
        let d = load_vec3(&s[v..]);
        let mut n = [_mm256_setzero_ps(); 3];
        for (r, nr) in n.iter_mut().enumerate() {
            // As `apply`: z * v.z, then y, then x.
            let t = _mm256_mul_ps(entry(m, 2, r), d[2]);
            let t = _mm256_fmadd_ps(entry(m, 1, r), d[1], t);
            *nr = _mm256_fmadd_ps(entry(m, 0, r), d[0], t);
        }
        if MODE == UNIT_NORMALS {
            // Renormalised here, in registers, with the chunk pass's operations (the same
            // bits); the chunk pass then skips these eight (`done`).
            n = unit8(n, &s[v..]);
        }
        store_vec3(&mut o[v..], n);
    }
}

/// Row `r` of column `c` of `m` in every lane. (A helper, not a closure's body: a closure
/// does not take on its caller's AVX.)
#[inline(always)]
unsafe fn entry(m: &Mat4, c: usize, r: usize) -> __m256 {
    debug_assert!(c < 4 && r < 4);
    // SAFETY: `Mat4` is 16 consecutive f32 (asserted above), column-major: entry `4 c + r`
    // (below 16) is row `r` of column `c`, read through the shared reference.
    _mm256_broadcast_ss(&*(m as *const Mat4 as *const f32).add(4 * c + r))
}

/// [`linear_group`] for one `MODE`.
#[inline(always)]
unsafe fn run<const K: usize, const MODE: u8>(
    palette: Palette<'_>,
    joints: &[u16],
    weights: &[f32],
    src: &Source<'_>,
    out: &mut SkinOutput<'_>,
) {
    let n = src.positions.len();
    let w1 = K.saturating_sub(1);
    let (normals, src_normals) = match (out.normals.as_deref_mut(), src.normals) {
        (Some(o), Some(s)) if MODE != POSITIONS => (Some(&mut o[..n]), Some(&s[..n])),
        _ => (None, None),
    };
    let (tangents, src_tangents) = match (out.tangents.as_deref_mut(), src.tangents) {
        (Some(o), Some(s)) if MODE == GENERAL => (Some(&mut o[..n]), Some(&s[..n])),
        _ => (None, None),
    };
    // What makes the unchecked palette loads sound. `SkinningMesh::new` and `skin`'s checks
    // already guarantee it; this pass (vectorised, a few hundredths of a nanosecond per
    // vertex) keeps the proof local.
    let top = super::joint_bound(&joints[..n * K]);
    assert!(
        top <= palette.matrices.len() && palette.normal.is_none_or(|m| top <= m.len()),
        "skinning: joint index {} beyond the palette of {}",
        top - 1,
        palette.matrices.len()
    );
    let mut g = Group::<K> {
        n,
        joints: &joints[..n * K],
        weights: &weights[..n * w1],
        mats: palette.matrices,
        normal_mats: palette.normal,
        raw: palette.raw,
        src: Source {
            positions: &src.positions[..n],
            normals: src_normals,
            tangents: src_tangents,
            unit_normals: src.unit_normals,
        },
        positions: &mut out.positions[..n],
        normals,
        tangents,
    };
    let unit = MODE == UNIT_NORMALS || (MODE == GENERAL && !g.raw);
    // Chunks small enough that their raw normals are still in the first-level cache (and
    // their stores long done) when they are renormalised.
    const CHUNK: usize = 8 * LANES;
    let mut v0 = 0;
    while v0 < n {
        let end = (v0 + CHUNK).min(n);
        let mut v = v0;
        // Vertices of the chunk whose normals `rigid8` renormalised already.
        let mut done = 0u64;
        // Every vertex but the last of the slice (`n`, the length of every output slice `g`
        // holds) has a next one for its 16-byte stores: below `wide_end`, `v + 1 < n`. At a
        // chunk's end that next vertex is the following chunk's first, written after it.
        let wide_end = if end == n { n - 1 } else { end };
        while v < wide_end {
            if K == 1 && MODE != GENERAL && v + LANES <= end && same_joint8(g.joints, v) {
                rigid8::<K, MODE>(&mut g, v);
                if MODE == UNIT_NORMALS {
                    done |= 0xFF << (v - v0);
                }
                v += LANES;
            } else {
                // SAFETY (`WIDE`): `v < wide_end`, so `v + 1 < n` (above).
                vertex::<K, MODE, true>(&mut g, v);
                v += 1;
            }
        }
        // The slice's last vertex, unless a rigid run took it (narrow stores: no promise).
        if v < end {
            vertex::<K, MODE, false>(&mut g, v);
            v += 1;
        }
        debug_assert_eq!(v, end);
        if let (true, Some(o), Some(s)) = (unit, g.normals.as_deref_mut(), g.src.normals) {
            unit_in_place(&mut o[v0..end], &s[v0..end], done);
        }
        v0 = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Directions marked done are left exactly as they are, in whole blocks, in blocks
    /// where only some are done and in the last, partial block (done in part or in whole),
    /// even without length; the others are renormalised (or fall back to the source where
    /// they have no length) with the bits they get without any done mark.
    #[test]
    fn unit_in_place_keeps_done_directions() {
        if !crate::play::simd::avx_fma() {
            return;
        }
        // 21: blocks of 8, 8 and a partial 5 done in part; 29: a partial 5 all done.
        for (n, done) in [
            (21usize, 0xFFu64 | 0b0110_0000 << 8 | 0b1_0010 << 16),
            (
                29,
                0xFF | 0b0110_0000 << 8 | 0b0010_0100 << 16 | 0b1_1111 << 24,
            ),
        ] {
            let src: Vec<Vec3> = (0..n)
                .map(|i| Vec3::new(1.0, i as f32 * 0.7, -2.0).normalize())
                .collect();
            // Not unit, so renormalising them would change them; two without length, one
            // of them done.
            let mut raw: Vec<Vec3> = src.iter().map(|v| *v * 3.0).collect();
            raw[9] = Vec3::ZERO;
            raw[13] = Vec3::ZERO;
            let (mut marked, mut plain) = (raw.clone(), raw.clone());
            // SAFETY: the CPU has AVX and FMA (checked above).
            unsafe {
                in_avx(&mut marked, &src, done);
                in_avx(&mut plain, &src, 0);
            }
            for i in 0..n {
                if done >> i & 1 != 0 {
                    assert_eq!(marked[i], raw[i], "{n}: {i}");
                } else {
                    assert_eq!(marked[i], plain[i], "{n}: {i}");
                    assert!((marked[i].length() - 1.0).abs() < 1e-6, "{n}: {i}");
                }
            }
            assert_eq!(marked[9], src[9]);
        }
    }

    /// [`unit_in_place`] compiled as the kernel compiles it.
    #[target_feature(enable = "avx,fma")]
    unsafe fn in_avx(out: &mut [Vec3], src: &[Vec3], done: u64) {
        unit_in_place(out, src, done);
    }
}

//! Matrix products of the hierarchy with AVX and FMA.
//!
//! The palette: a column-major product `a * b` takes, for each column of `b`, the columns of `a` weighted
//! by that column's four entries. With both halves of a 256-bit register holding `a`'s
//! column (one broadcast load) and an in-lane shuffle spreading one entry of two of `b`'s
//! columns across each half, two output columns cost four fused multiply-adds: half the
//! instructions of four-wide SSE, which spends one shuffle and one multiply or add per entry.
//!
//! Local-to-model: rotations turned into matrices eight joints at a time, and the parent's
//! columns kept in registers along chains (see [`local_to_model`]).
//!
//! Both are chosen at run time by [`super::skinning_palette`] and [`super::local_to_model`];
//! the baseline build (and the `scalar` feature) multiplies with glam.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;
use std::mem::MaybeUninit;

use glam::{Mat4, Quat};

use crate::play::simd::transpose4;
use crate::pose::SoaBlock;
use crate::{JointIndex, Transform};

const _: () = assert!(std::mem::size_of::<Mat4>() == 64);

pub(super) use crate::play::simd::avx_fma as available;

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

/// Joints whose rotations [`rotations8`] turns into matrices at a time.
const BLOCK: usize = 8;

/// A block's local matrices in structure-of-arrays form: `[3 * c + r][i]` is the entry of
/// row `r`, column `c` of joint `i`'s rotation matrix times the scale (`c`, `r` below 3),
/// `[9 + k][i]` component `k` of its translation ([`matrices8`] writes them all).
type Locals = [[f32; BLOCK]; 12];

/// [`super::local_to_model`]'s loop: `model[j] = model[parent] * local[j]` for joints
/// `from..`, roots taking their local matrix (the callers have checked the lengths; parents
/// precede their children).
///
/// What makes it fast:
/// - The rotations of eight joints at a time become matrices, their columns times the
///   scale, in structure-of-arrays form ([`rotations8`]: quaternions, translations and
///   scales loaded from the `Transform` rows and transposed, then each product of the
///   formula once for eight joints), into a small buffer on the stack that holds the
///   translations too ([`Locals`]), from which each joint's twelve entries are broadcast by
///   loads at one offset, not shuffles.
/// - That buffer is filled one block ahead: a 4-byte load from part of a 32-byte store that
///   has not reached the cache yet waits for it (measured: 3-6 % of the loop).
/// - The last, partial block is the skeleton's last eight joints, overlapping the block
///   before, not a padded copy: with 19 joints (CesiumMan) the copy had cost 13 %.
/// - A joint whose parent is the joint just before it (most joints: chains are stored in
///   order) takes the parent's columns from registers, not from the store just made.
/// - Each output column is three fused multiply-adds on four lanes, and the loop over a
///   block's joints checks no index: the block's parents are one slice, checked once.
///
/// Trying more did not pay (measured): keeping the last two joints' columns in registers
/// too (for breadth-first orders, whose limbs interleave) spilled registers and was 10-20 %
/// slower; summing a column as a tree instead of a chain (shorter latency, one more
/// instruction) made no difference: the loop is bound by its instructions, not by the
/// chain's latency. Again on an AMD Zen 3, whose multiplies and adds take 3 cycles to a
/// fused multiply-add's 4: three products and two adds per column (9 cycles from the
/// parent's columns, not 11; 7 more instructions per joint) took 1.02x, 0.98x and 0.97x the
/// time of a whole CesiumMan, Fox and robot character update (20-30 alternated pairs, all
/// within their quartiles).
///
/// # Safety
/// The CPU must support AVX and FMA.
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn local_to_model<L: Local + ?Sized>(
    parents: &[JointIndex],
    local: &L,
    from: usize,
    model: &mut [Mat4],
) {
    let n = model.len();
    let parents = &parents[..n];
    let identity = [
        _mm_setr_ps(1.0, 0.0, 0.0, 0.0),
        _mm_setr_ps(0.0, 1.0, 0.0, 0.0),
        _mm_setr_ps(0.0, 0.0, 1.0, 0.0),
        _mm_setr_ps(0.0, 0.0, 0.0, 1.0),
    ];
    // The joint before `from` is already in `model`: a first joint that is its child takes
    // it from here like any other (and joint 0 is a root, whose `p + 1` is never 0).
    let mut previous = match from.checked_sub(1) {
        Some(p) if p < n => load(&model[p]),
        _ => identity,
    };
    // Two buffers: the next block's matrices are made before this block's joints read
    // theirs, so the 32-byte stores have reached the cache by the time the 4-byte loads
    // come (a load from part of a store still in flight waits for it). Left uninitialised:
    // each is read only after `block` filled it, and zeroing them first (a `memset`) cost
    // 3 % of a 19-joint skeleton's call.
    let mut buffers = [MaybeUninit::<Locals>::uninit(); 2];
    // Per buffer: where joint `start` sits in it, and how many joints from `start` it holds.
    let mut span = [(0, 0); 2];
    let mut start = from;
    if start < n {
        span[0] = local.block(n, start, &mut buffers[0]);
    }
    let mut current = 0;
    let out = model.as_mut_ptr();
    while start < n {
        let (shift, count) = span[current];
        if start + count < n {
            span[current ^ 1] = local.block(n, start + count, &mut buffers[current ^ 1]);
        }
        // SAFETY: `span[current]` was set by a `block` call on this buffer (the first
        // before the loop, each later one in the iteration before), which wrote every entry
        // of it (the promise of the unsafe trait `Local`); nothing has written it since.
        let locals = buffers[current].assume_init_ref();
        current ^= 1;
        // One bounds check for the block: `start + count <= n`, so every `j` below is a
        // joint, below `model.len()`.
        let block_parents = &parents[start..start + count];
        debug_assert!(shift + count <= BLOCK);
        // SAFETY: `shift + count <= BLOCK` (the promise of `Local::block`), so joint
        // `start + i`'s entries, at `shift + i` in each row, lie within the buffer.
        let mut entries = (locals as *const Locals as *const f32).add(shift);
        for (i, &p) in block_parents.iter().enumerate() {
            let j = start + i;
            // The parent just before first (most joints: chains are stored in order); a
            // root's `p as usize + 1` is 65536, never a joint's index.
            let a = if p as usize + 1 == j {
                previous
            } else if p == JointIndex::MAX {
                identity
            } else {
                // SAFETY: `p < n` (asserted), within `model`, whose every matrix is
                // initialised (a parent after its child, which a `Skeleton` never has,
                // would read a matrix not yet computed, as the portable loop does).
                assert!((p as usize) < n, "joint {j}'s parent {p} is not a joint");
                load(&*out.add(p as usize))
            };
            let c = [
                column(a, entries, 0),
                column(a, entries, 1),
                column(a, entries, 2),
                translation(a, entries),
            ];
            // SAFETY: `j < n` (above), `out` is `model`'s pointer and nothing else
            // borrows `model` while the loop runs.
            store(&mut *out.add(j), c);
            previous = c;
            entries = entries.add(1);
        }
        start += count;
    }
}

/// The local transforms [`local_to_model`] reads: a slice of transforms, or the blocks of a
/// structure-of-arrays pose (whose rotations, translations and scales need no transposing).
///
/// # Safety
/// [`Local::block`] must write every entry of its `out` ([`local_to_model`] reads the buffer
/// as initialised after the call) and return a `(shift, count)` with `shift + count` at most
/// [`BLOCK`] ([`local_to_model`] reads entries `shift..shift + count` of each row unchecked).
pub(super) unsafe trait Local {
    /// The local matrices ([`Locals`]) of a block of joints holding joint `start` (below
    /// `n`, the joints to convert), into `out` as [`matrices8`] writes them (every entry: the
    /// caller reads it as initialised); returns where joint `start` sits in the block and how
    /// many joints from `start` on the block holds (at least one; the two add up to at most
    /// [`BLOCK`]).
    ///
    /// # Safety
    /// The CPU must support AVX and FMA; the source holds at least `n` joints.
    unsafe fn block(&self, n: usize, start: usize, out: &mut MaybeUninit<Locals>)
        -> (usize, usize);
}

// SAFETY: every branch of `block` ends in `rotations8`, whose `matrices8` writes all twelve
// rows of `out`; each returns `(0, count)` with `count <= BLOCK`, or `(start - (n - BLOCK),
// n - start)`, whose sum is `BLOCK`.
unsafe impl Local for [Transform] {
    /// [`rotations8`] of the eight joints from `start`, or, where fewer are left, of the last
    /// eight (the block overlapping the one before; joint `start` then sits at the returned
    /// position, not at 0), or of all of them padded with identities through a copy on the
    /// stack where the skeleton has fewer than eight.
    #[inline(always)]
    unsafe fn block(
        &self,
        n: usize,
        start: usize,
        out: &mut MaybeUninit<Locals>,
    ) -> (usize, usize) {
        let local = &self[..n];
        let count = (n - start).min(BLOCK);
        if start + BLOCK <= n {
            rotations8(local[start..start + BLOCK].try_into().unwrap(), out);
            (0, count)
        } else if n >= BLOCK {
            rotations8(local[n - BLOCK..].try_into().unwrap(), out);
            (start - (n - BLOCK), count)
        } else {
            let mut padded = [Transform::IDENTITY; BLOCK];
            padded[..n - start].copy_from_slice(&local[start..]);
            rotations8(&padded, out);
            (0, count)
        }
    }
}

// SAFETY: `block` ends in `matrices8`, which writes all twelve rows of `out`; `shift` is
// below `BLOCK` and the count at most `BLOCK - shift`.
unsafe impl Local for [SoaBlock] {
    /// The matrices of the block holding joint `start`, its rows loaded as they are.
    #[inline(always)]
    unsafe fn block(
        &self,
        n: usize,
        start: usize,
        out: &mut MaybeUninit<Locals>,
    ) -> (usize, usize) {
        let b = &self[start / BLOCK];
        let shift = start % BLOCK;
        matrices8(
            [
                row(&b.rotation[0]),
                row(&b.rotation[1]),
                row(&b.rotation[2]),
                row(&b.rotation[3]),
            ],
            [row(&b.scale[0]), row(&b.scale[1]), row(&b.scale[2])],
            [
                row(&b.translation[0]),
                row(&b.translation[1]),
                row(&b.translation[2]),
            ],
            out,
        );
        (shift, (n - start).min(BLOCK - shift))
    }
}

/// f32 from one `Transform` to the next (`rotations8` reads the rotation's four first, the
/// translation's three at 4..7 and the scale's three at 7..10).
const STRIDE: usize = crate::play::simd::TRANSFORM_STRIDE;

/// [`matrices8`] of eight joints' transforms (their rotations, translations and scales
/// transposed into one register per component first).
#[inline(always)]
unsafe fn rotations8(t: &[Transform; BLOCK], out: &mut MaybeUninit<Locals>) {
    // SAFETY: `t` is `8 * STRIDE` consecutive f32 (the layout is asserted in
    // `play/simd.rs`); the 16-byte loads at `STRIDE * i` (the rotation), `STRIDE * i + 3`
    // (the rotation's w and the translation) and `STRIDE * i + 6` (the translation's z and
    // the scale) read within joint i's.
    let p = t.as_ptr() as *const f32;
    // Joints i and i + 4 in the two halves; a 4x4 transpose in each half.
    let q = columns4(p, 0);
    let [_, tx, ty, tz] = columns4(p, 3);
    let [_, sx, sy, sz] = columns4(p, 6);
    matrices8(q, [sx, sy, sz], [tx, ty, tz], out);
}

/// The local matrices of eight joints (rotations `q`, x y z w, scales `s` and translations
/// `t`, one register per component) as [`Locals`]: the rotation matrices (the
/// unit-quaternion formula of [`super::compose`], term for term) with each column `c` times
/// the scale's component `c`, then the translations. Every entry of `out` is written.
#[inline(always)]
unsafe fn matrices8(q: [__m256; 4], s: [__m256; 3], t: [__m256; 3], out: &mut MaybeUninit<Locals>) {
    let [x, y, z, w] = q;
    let [sx, sy, sz] = s;
    let (x2, y2, z2) = (
        _mm256_add_ps(x, x),
        _mm256_add_ps(y, y),
        _mm256_add_ps(z, z),
    );
    let (xx, xy, xz) = (
        _mm256_mul_ps(x, x2),
        _mm256_mul_ps(x, y2),
        _mm256_mul_ps(x, z2),
    );
    let (yy, yz, zz) = (
        _mm256_mul_ps(y, y2),
        _mm256_mul_ps(y, z2),
        _mm256_mul_ps(z, z2),
    );
    let (wx, wy, wz) = (
        _mm256_mul_ps(w, x2),
        _mm256_mul_ps(w, y2),
        _mm256_mul_ps(w, z2),
    );
    let one = _mm256_set1_ps(1.0);
    let entries = [
        _mm256_sub_ps(one, _mm256_add_ps(yy, zz)),
        _mm256_add_ps(xy, wz),
        _mm256_sub_ps(xz, wy),
        _mm256_sub_ps(xy, wz),
        _mm256_sub_ps(one, _mm256_add_ps(xx, zz)),
        _mm256_add_ps(yz, wx),
        _mm256_add_ps(xz, wy),
        _mm256_sub_ps(yz, wx),
        _mm256_sub_ps(one, _mm256_add_ps(xx, yy)),
    ];
    // SAFETY: `Locals` is twelve rows of eight consecutive f32 (96 in all), so row `3 * k +
    // r` (at most 8) starts at f32 `8 * (3 * k + r)` and row `9 + k` at `8 * (9 + k)`, their
    // eight lying within; every one of the twelve rows is written here, so all of `out` is
    // initialised on return.
    let p = out.as_mut_ptr() as *mut f32;
    for (k, s) in [sx, sy, sz].into_iter().enumerate() {
        for r in 0..3 {
            _mm256_storeu_ps(
                p.add(BLOCK * (3 * k + r)),
                _mm256_mul_ps(entries[3 * k + r], s),
            );
        }
    }
    for (k, t) in t.into_iter().enumerate() {
        _mm256_storeu_ps(p.add(BLOCK * (9 + k)), t);
    }
}

/// One row of a structure-of-arrays block in a register (an aligned load).
///
/// # Safety
/// The CPU must support AVX, and `r` must be 32-byte aligned (a row of a [`SoaBlock`],
/// `repr(C, align(32))` with rows of 32 bytes: the only rows passed here).
#[inline(always)]
unsafe fn row(r: &[f32; BLOCK]) -> __m256 {
    // SAFETY: eight f32 behind a shared reference, 32-byte aligned (the caller's promise).
    _mm256_load_ps(r.as_ptr())
}

/// The four f32 at offset `o` of eight joints' rows from `p`, one register per float
/// (joints `i` and `i + 4` in the two halves). (A helper, not a closure: a closure does not
/// take on its caller's AVX.)
#[inline(always)]
unsafe fn columns4(p: *const f32, o: usize) -> [__m256; 4] {
    transpose4(
        pair(p, o),
        pair(p.add(STRIDE), o),
        pair(p.add(2 * STRIDE), o),
        pair(p.add(3 * STRIDE), o),
    )
}

/// The four f32 at `p + o` and four joints further (joint `i + 4`'s) in the two halves of
/// a register.
#[inline(always)]
unsafe fn pair(p: *const f32, o: usize) -> __m256 {
    // SAFETY: the caller's (`rotations8`): both reads lie within its eight joints.
    crate::play::simd::pair(_mm_loadu_ps(p.add(o)), _mm_loadu_ps(p.add(4 * STRIDE + o)))
}

/// Column `c` of `parent * local` for the joint whose entries start at `e` (its entry of
/// [`Locals`]' first row; each next row 8 f32 further): the parent's columns `a` weighted by
/// column `c` of the rotation matrix, already times the scale (three fused multiply-adds on
/// four lanes). (Helpers, not closures: a closure does not take on its caller's AVX.)
///
/// # Safety
/// `e` must point at entry `i` of the first row of an initialised [`Locals`], `i` below
/// [`BLOCK`].
#[inline(always)]
unsafe fn column(a: [__m128; 4], e: *const f32, c: usize) -> __m128 {
    let x = _mm_mul_ps(a[0], _mm_broadcast_ss(&*e.add(BLOCK * 3 * c)));
    let xy = _mm_fmadd_ps(a[1], _mm_broadcast_ss(&*e.add(BLOCK * (3 * c + 1))), x);
    _mm_fmadd_ps(a[2], _mm_broadcast_ss(&*e.add(BLOCK * (3 * c + 2))), xy)
}

/// The last column of `parent * local`: the parent's columns `a` weighted by the
/// translation `(x, y, z)` (rows 9 to 11 of [`Locals`] from `e`), plus the parent's
/// translation.
///
/// # Safety
/// As for [`column`].
#[inline(always)]
unsafe fn translation(a: [__m128; 4], e: *const f32) -> __m128 {
    let x = _mm_broadcast_ss(&*e.add(BLOCK * 9));
    let y = _mm_broadcast_ss(&*e.add(BLOCK * 10));
    let z = _mm_broadcast_ss(&*e.add(BLOCK * 11));
    _mm_add_ps(
        _mm_fmadd_ps(a[1], y, _mm_mul_ps(a[0], x)),
        _mm_fmadd_ps(a[2], z, a[3]),
    )
}

const _: () = assert!(std::mem::size_of::<Quat>() == 16);

/// The four columns of `m` (unaligned loads: glam's scalar build aligns `Mat4` to 4 bytes).
#[inline(always)]
unsafe fn load(m: &Mat4) -> [__m128; 4] {
    // SAFETY: a `Mat4` is 16 consecutive f32 (asserted above).
    let p = m as *const Mat4 as *const f32;
    [
        _mm_loadu_ps(p),
        _mm_loadu_ps(p.add(4)),
        _mm_loadu_ps(p.add(8)),
        _mm_loadu_ps(p.add(12)),
    ]
}

/// Stores four columns into `m`.
#[inline(always)]
unsafe fn store(m: &mut Mat4, c: [__m128; 4]) {
    // SAFETY: as in `load`, for writing.
    let p = m as *mut Mat4 as *mut f32;
    _mm_storeu_ps(p, c[0]);
    _mm_storeu_ps(p.add(4), c[1]);
    _mm_storeu_ps(p.add(8), c[2]);
    _mm_storeu_ps(p.add(12), c[3]);
}

/// `out[i] = model[joints[i]] * inverse_bind[i]` for every `i`.
///
/// # Safety
/// The CPU must support AVX and FMA, and every entry of `joints` must be below
/// `model.len()` (the matrices are read unchecked: [`super::skinning_palette`] checks the
/// skin's largest joint against `model` once, where a check per matrix was two of the 32
/// instructions of each).
#[target_feature(enable = "avx,fma")]
pub(super) unsafe fn palette(
    joints: &[JointIndex],
    inverse_bind: &[Mat4],
    model: &[Mat4],
    out: &mut [Mat4],
) {
    for ((o, &j), ibm) in out.iter_mut().zip(joints).zip(inverse_bind) {
        debug_assert!((j as usize) < model.len());
        // SAFETY: `j < model.len()`, the caller's promise.
        mul(model.get_unchecked(j as usize), ibm, o);
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

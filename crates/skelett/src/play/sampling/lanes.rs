//! Keyed sampling eight tracks at a time (AVX), from the clip's lanes (`clip/lanes.rs`).
//!
//! ```text
//! (segment, position) on the union timeline ──┐
//! Lanes: blocks of 8 tracks ──────────────────┼─▶ slerp / nlerp / lerp on 8 lanes
//!                                             │     ─▶ transpose ─▶ pose
//! leftover tracks, STEP, CUBICSPLINE ─────────┴─▶ one at a time, as `sample_with` does
//! ```
//!
//! Each lane performs the operations of the one-track formulas in the same order, without
//! fused multiply-adds: slerp `a * w0 + b * w1` with the weights from
//! [`crate::transform::sin_0_half_pi`]'s polynomial, nlerp's lerp and its length taken as
//! glam's four-wide dot product sums it, `(x² + z²) + (y² + w²)`, translations and scales
//! `a * (1 - u) + b * u`. Blocks on a track's own timeline therefore give the per-track
//! loops' bits; blocks on the union timeline interpolate between finer keys and agree with
//! them to rounding (the property test in this file bounds it). Every search (a cache's
//! cursors, [`super::sample_uncached`], [`super::sample_joint`]) goes through the lanes, so
//! the three give the same bits. The results go back to a slice's joints through a
//! transpose: eight rotations are eight 16-byte stores, eight vectors sixteen 8- and 4-byte
//! stores (a transform's vectors are 12 bytes: a wider store would overwrite its neighbour).
//! A structure-of-arrays pose ([`SoaOut`])
//! takes a block aligned with a block of joints as it lies, one aligned store per row (a
//! masked blend where some lanes have no track), and other blocks lane by lane; sampled
//! again from the same clip, it keeps the clip's static joints instead of writing them.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use glam::{Quat, Vec3};

use super::{copy_static, keyed, nlerp_aligned, NLERP_SCALE};
use crate::clip::lanes::{Block, Lanes, Row, LANES, NOT_ALIGNED};
use crate::clip::{Keys, Target, Track};
use crate::play::simd::{joint, transpose4};
use crate::pose::{SoaBlock, SOA_LANES};
use crate::{Clip, JointIndex, Transform};

const _: () = assert!(std::mem::size_of::<Quat>() == 16);
const _: () = assert!(std::mem::size_of::<Row>() == 32);

/// [`super::sample_with`] through the clip's lanes: blocks of eight tracks interpolated
/// eight at a time, the other tracks one at a time. `block_at` and `track_at` give the
/// (segment, position) of a block's timeline and of a track's.
///
/// # Safety
/// The CPU must support AVX. `keys.lanes` must have been built from `keys` (its blocks'
/// rows and joints in range for `keys` and `pose`: `Lanes::build` makes them so), `pose` must
/// hold the clip's joints, and the segments must be segments of the timelines they are for.
#[target_feature(enable = "avx")]
pub(super) unsafe fn sample<const NLERP: bool, P: Out + ?Sized>(
    clip: &Clip,
    keys: &Keys,
    time: f32,
    block_at: impl Fn(&Block) -> (u32, f32),
    track_at: impl Fn(&Track) -> (u32, f32),
    pose: &mut P,
) {
    pose.copy_static(clip);
    let lanes: &Lanes = &keys.lanes;
    for block in lanes.blocks.iter() {
        let (k, u) = block_at(block);
        let rows = block_rows(lanes, block, k);
        match block.target {
            Target::Rotation => {
                let q = if NLERP {
                    nlerp8(rows, u)
                } else {
                    slerp8(rows, u)
                };
                pose.rotations(block, q);
            }
            Target::Translation => pose.vectors(block, lerp8(rows, u), false),
            Target::Scale => pose.vectors(block, lerp8(rows, u), true),
        }
    }
    // The LINEAR tracks in no block, then STEP and CUBICSPLINE ones: one at a time.
    for &i in lanes.leftover.iter() {
        let tr = &keys.tracks[i as usize];
        let (k, u) = track_at(tr);
        pose.joint(tr.joint, |t| eval_linear::<NLERP>(keys, tr, k, u, t));
    }
    for tr in &keys.tracks[keys.groups[2]..] {
        let (k, u) = track_at(tr);
        pose.joint(tr.joint, |t| keys.eval_track(tr, k as usize, u, time, t));
    }
}

/// Where [`sample`] writes a clip's joints: a slice of transforms, or the blocks of a
/// structure-of-arrays pose ([`crate::SoaPose`]). Joints are the clip's (the callers check
/// the lengths; indexing checks them again).
pub(super) trait Out {
    /// The clip's base values into the joints some component of which no track writes.
    fn copy_static(&mut self, clip: &Clip);
    /// Eight rotations (x, y, z, w rows) into the joints of `block`'s lanes.
    ///
    /// # Safety
    /// The CPU must support AVX.
    unsafe fn rotations(&mut self, block: &Block, q: [__m256; 4]);
    /// Eight vectors (x, y, z rows) into the translations (or scales) of the joints of
    /// `block`'s lanes.
    ///
    /// # Safety
    /// The CPU must support AVX.
    unsafe fn vectors(&mut self, block: &Block, v: [__m256; 3], scale: bool);
    /// `f` on joint `j`'s transform.
    fn joint(&mut self, j: JointIndex, f: impl FnOnce(&mut Transform));
}

impl Out for [Transform] {
    #[inline(always)]
    fn copy_static(&mut self, clip: &Clip) {
        copy_static(clip, self);
    }

    #[inline(always)]
    unsafe fn rotations(&mut self, block: &Block, q: [__m256; 4]) {
        store_rotations(&block.joints, block.mask, q, self);
    }

    #[inline(always)]
    unsafe fn vectors(&mut self, block: &Block, v: [__m256; 3], scale: bool) {
        let (joints, lanes) = (&block.joints, block.mask);
        if scale {
            store_vectors(joints, lanes, v, self, |t| &mut t.scale);
        } else {
            store_vectors(joints, lanes, v, self, |t| &mut t.translation);
        }
    }

    #[inline(always)]
    fn joint(&mut self, j: JointIndex, f: impl FnOnce(&mut Transform)) {
        f(&mut self[j as usize]);
    }
}

/// A structure-of-arrays pose's blocks as [`Out`]: `statics` says whether the clip's static
/// joints must be written (not where the pose holds them from a sample of the same clip).
pub(super) struct SoaOut<'a> {
    pub(super) blocks: &'a mut [SoaBlock],
    pub(super) statics: bool,
}

impl Out for SoaOut<'_> {
    #[inline(always)]
    fn copy_static(&mut self, clip: &Clip) {
        if !self.statics {
            return;
        }
        let base = &clip.base;
        // A joint's base written lane by lane costs about as much as eight written by one
        // transpose: from one static joint in eight on, the whole base is written (the
        // tracks then write over every component they animate, so the joints end as
        // they would with only the static ones written). Clips that animate a few
        // components of many joints (a scale or translation track missing) are the usual
        // case, and a pose that takes turns between clips (a blend space's, a tree's
        // scratch, the thread's slot poses in a varied crowd) writes them every sample.
        if clip.static_joints.len() * SOA_LANES >= clip.joint_count() {
            crate::play::pose::fill_blocks(self.blocks, base);
        } else {
            for &j in clip.static_joints.iter() {
                let j = j as usize;
                self.blocks[j / SOA_LANES].set(j % SOA_LANES, &base[j]);
            }
        }
    }

    #[inline(always)]
    unsafe fn rotations(&mut self, block: &Block, q: [__m256; 4]) {
        if block.soa != NOT_ALIGNED {
            let mask = lane_mask(block.mask);
            let r = &mut self.blocks[block.soa as usize].rotation;
            for (row, v) in r.iter_mut().zip(q) {
                // SAFETY: AVX (this function's promise); a row of a `SoaBlock`, aligned.
                store_lanes(row, v, mask);
            }
            return;
        }
        let joints = &block.joints[..block.count as usize];
        let mut lanes = [[0.0f32; SOA_LANES]; 4];
        for (row, v) in lanes.iter_mut().zip(q) {
            // SAFETY: eight f32, written through a unique reference.
            _mm256_storeu_ps(row.as_mut_ptr(), v);
        }
        for (lane, &j) in joints.iter().enumerate() {
            let (b, l) = (j as usize / SOA_LANES, j as usize % SOA_LANES);
            for (row, from) in self.blocks[b].rotation.iter_mut().zip(&lanes) {
                row[l] = from[lane];
            }
        }
    }

    #[inline(always)]
    unsafe fn vectors(&mut self, block: &Block, v: [__m256; 3], scale: bool) {
        if block.soa != NOT_ALIGNED {
            let mask = lane_mask(block.mask);
            for (row, v) in vector_rows(&mut self.blocks[block.soa as usize], scale)
                .iter_mut()
                .zip(v)
            {
                // SAFETY: as for the rotations: a row of a `SoaBlock`.
                store_lanes(row, v, mask);
            }
            return;
        }
        let joints = &block.joints[..block.count as usize];
        let mut lanes = [[0.0f32; SOA_LANES]; 3];
        for (row, v) in lanes.iter_mut().zip(v) {
            // SAFETY: eight f32, written through a unique reference.
            _mm256_storeu_ps(row.as_mut_ptr(), v);
        }
        for (lane, &j) in joints.iter().enumerate() {
            let (b, l) = (j as usize / SOA_LANES, j as usize % SOA_LANES);
            for (row, from) in vector_rows(&mut self.blocks[b], scale)
                .iter_mut()
                .zip(&lanes)
            {
                row[l] = from[lane];
            }
        }
    }

    #[inline(always)]
    fn joint(&mut self, j: JointIndex, f: impl FnOnce(&mut Transform)) {
        let (b, l) = (j as usize / SOA_LANES, j as usize % SOA_LANES);
        let mut t = self.blocks[b].get(l);
        f(&mut t);
        self.blocks[b].set(l, &t);
    }
}

/// The scale's rows of `block` if `scale`, else the translation's.
#[inline(always)]
fn vector_rows(block: &mut SoaBlock, scale: bool) -> &mut [[f32; SOA_LANES]; 3] {
    if scale {
        &mut block.scale
    } else {
        &mut block.translation
    }
}

/// The lanes of a block's mask: `None` for all eight, else all bits set in the lanes to
/// write. Two four-lane integer comparisons (SSE2; on 256 bits they would need AVX2, which
/// the sampler does not ask for) joined into one register: building the eight lanes one at
/// a time in a scalar loop took 3 % of the instructions of a CesiumMan character's update
/// (callgrind), whose blocks of joints are partly filled.
///
/// # Safety
/// The CPU must support AVX.
#[inline(always)]
unsafe fn lane_mask(mask: u8) -> Option<__m256> {
    if mask == 0xFF {
        return None;
    }
    let m = _mm_set1_epi32(i32::from(mask));
    let (lo, hi) = (_mm_setr_epi32(1, 2, 4, 8), _mm_setr_epi32(16, 32, 64, 128));
    let lo = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(m, lo), lo));
    let hi = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(m, hi), hi));
    Some(_mm256_insertf128_ps::<1>(_mm256_castps128_ps256(lo), hi))
}

/// Writes the lanes of `v` that `mask` has ([`lane_mask`]) into `row`: one aligned store for
/// all eight, else a blend with the lanes it has; the others keep their values.
///
/// The row is read with a volatile load: LLVM turns a plain load, blend and store of one
/// address into a masked store (`vmaskmovps`), which AMD's Zen cores run in microcode. On
/// this project's build machine (Zen 3) a masked 256-bit store took 6.0 ns where the load,
/// blend and store took 1.6 (a throwaway C loop), and a CesiumMan character's two samples
/// made 18 of them per update.
///
/// # Safety
/// The CPU must support AVX, and `row` must be 32-byte aligned (a row of a [`SoaBlock`],
/// which is `repr(C, align(32))` with rows of 32 bytes).
#[inline(always)]
unsafe fn store_lanes(row: &mut [f32; SOA_LANES], v: __m256, mask: Option<__m256>) {
    // SAFETY: `row` is eight f32, 32-byte aligned (the caller's promise), read and written
    // through a unique reference.
    let p = row.as_mut_ptr();
    match mask {
        None => _mm256_store_ps(p, v),
        Some(m) => {
            // Volatile only so that the three are not fused into a masked store (above);
            // the same aligned 32-byte load.
            let old = std::ptr::read_volatile(p as *const __m256);
            _mm256_store_ps(p, _mm256_blendv_ps(old, v, m))
        }
    }
}

/// [`super::sample_joint`] through the clip's lanes: what [`sample`] writes for `joint`
/// (slerp), into `out`, segments found by `block_at` and `track_at`.
///
/// # Safety
/// As [`sample`] (`out` takes the place of the joint's entry in the pose).
#[target_feature(enable = "avx")]
pub(super) unsafe fn sample_joint(
    keys: &Keys,
    joint: JointIndex,
    time: f32,
    block_at: impl Fn(&Block) -> (u32, f32),
    track_at: impl Fn(&Track) -> (u32, f32),
    out: &mut Transform,
) {
    let lanes: &Lanes = &keys.lanes;
    // Every lane written to its own entry of a scratch pose, then the joint's lane taken.
    let mut scratch = [Transform::IDENTITY; LANES];
    const SCRATCH: [JointIndex; LANES] = [0, 1, 2, 3, 4, 5, 6, 7];
    for block in lanes.blocks.iter() {
        let Some(lane) = block.joints[..block.count as usize]
            .iter()
            .position(|&j| j == joint)
        else {
            continue;
        };
        let (k, u) = block_at(block);
        let rows = block_rows(lanes, block, k);
        match block.target {
            Target::Rotation => {
                store_rotations(&SCRATCH, 0xFF, slerp8(rows, u), &mut scratch);
                out.rotation = scratch[lane].rotation;
            }
            Target::Translation => {
                store_vectors(&SCRATCH, 0xFF, lerp8(rows, u), &mut scratch, |t| {
                    &mut t.translation
                });
                out.translation = scratch[lane].translation;
            }
            Target::Scale => {
                store_vectors(&SCRATCH, 0xFF, lerp8(rows, u), &mut scratch, |t| {
                    &mut t.scale
                });
                out.scale = scratch[lane].scale;
            }
        }
    }
    for (i, tr) in keys.tracks.iter().enumerate() {
        let in_block = i < keys.groups[2] && lanes.leftover.binary_search(&(i as u32)).is_err();
        if tr.joint != joint || in_block {
            continue;
        }
        let (k, u) = track_at(tr);
        keys.eval_track(tr, k as usize, u, time, out);
    }
}

/// The rows of keys `k` and `k + 1` of `block` (the segment's two keys: a segment is never
/// the last key).
#[inline(always)]
fn block_rows<'a>(lanes: &'a Lanes, block: &Block, k: u32) -> &'a [Row] {
    let per = block.rows_per_key();
    let start = block.first_row as usize + k as usize * per;
    &lanes.rows[start..start + 2 * per]
}

/// A LINEAR track's value, one track at a time, as `sample_with`'s loops compute it.
#[inline(always)]
fn eval_linear<const NLERP: bool>(keys: &Keys, tr: &Track, k: u32, u: f32, out: &mut Transform) {
    let v = tr.value_start as usize + k as usize;
    match tr.target {
        Target::Rotation if NLERP => {
            out.rotation = nlerp_aligned(keys.quats[v], keys.quats[v + 1], u);
        }
        Target::Rotation => {
            out.rotation =
                keyed::slerp_weights_apply(keys.quats[v], keys.quats[v + 1], keys.slerp[v], u);
        }
        Target::Translation => out.translation = keys.vec3s[v].lerp(keys.vec3s[v + 1], u).into(),
        Target::Scale => out.scale = keys.vec3s[v].lerp(keys.vec3s[v + 1], u).into(),
    }
}

/// Row `i` of `rows` (aligned: `Row` is).
#[inline(always)]
unsafe fn row(rows: &[Row], i: usize) -> __m256 {
    // SAFETY: `rows[i]` is 8 f32 aligned to 32 bytes (indexing checks the range).
    _mm256_load_ps(rows[i].0.as_ptr())
}

/// Slerp of eight rotations: rows x, y, z, w, angle, 1/sin (then the chord's x, y, z, w) of
/// keys k (0..10) and k + 1 (10..20). [`keyed::slerp_weights_apply`] on each lane.
///
/// (No closures in these helpers: a closure does not take on its caller's AVX, and the
/// intrinsics in it would become calls.)
#[inline(always)]
unsafe fn slerp8(rows: &[Row], u: f32) -> [__m256; 4] {
    let angle = row(rows, 4);
    let inv_sin = row(rows, 5);
    let w0 = _mm256_mul_ps(sin8(_mm256_mul_ps(_mm256_set1_ps(1.0 - u), angle)), inv_sin);
    let w1 = _mm256_mul_ps(sin8(_mm256_mul_ps(_mm256_set1_ps(u), angle)), inv_sin);
    [
        mix(rows, 0, w0, w1),
        mix(rows, 1, w0, w1),
        mix(rows, 2, w0, w1),
        mix(rows, 3, w0, w1),
    ]
}

/// `a * w0 + b * w1` of row `c` of key k (`a`) and k + 1 (`b`, half the rows on).
#[inline(always)]
unsafe fn mix(rows: &[Row], c: usize, w0: __m256, w1: __m256) -> __m256 {
    let next = rows.len() / 2;
    _mm256_add_ps(
        _mm256_mul_ps(row(rows, c), w0),
        _mm256_mul_ps(row(rows, next + c), w1),
    )
}

/// Nlerp of eight rotations (rows as for [`slerp8`]): [`nlerp_aligned`] on each lane, of the
/// chords (rows 6..10: on the union timeline, the lerp of the track's own keys at the union's
/// times, so that lerping them is lerping the track's keys; elsewhere the keys themselves).
#[inline(always)]
unsafe fn nlerp8(rows: &[Row], u: f32) -> [__m256; 4] {
    let (w0, w1) = (_mm256_set1_ps(1.0 - u), _mm256_set1_ps(u));
    let (x, y) = (mix(rows, 6, w0, w1), mix(rows, 7, w0, w1));
    let (z, w) = (mix(rows, 8, w0, w1), mix(rows, 9, w0, w1));
    let scale = _mm256_set1_ps(NLERP_SCALE);
    let (sx, sy) = (_mm256_mul_ps(x, scale), _mm256_mul_ps(y, scale));
    let (sz, sw) = (_mm256_mul_ps(z, scale), _mm256_mul_ps(w, scale));
    // glam's dot product: (x² + z²) + (y² + w²).
    let len2 = _mm256_add_ps(
        _mm256_add_ps(_mm256_mul_ps(sx, sx), _mm256_mul_ps(sz, sz)),
        _mm256_add_ps(_mm256_mul_ps(sy, sy), _mm256_mul_ps(sw, sw)),
    );
    let inv = _mm256_div_ps(scale, _mm256_sqrt_ps(len2));
    [
        _mm256_mul_ps(x, inv),
        _mm256_mul_ps(y, inv),
        _mm256_mul_ps(z, inv),
        _mm256_mul_ps(w, inv),
    ]
}

/// Lerp of eight vectors: rows x, y, z of keys k (0..3) and k + 1 (3..6).
#[inline(always)]
unsafe fn lerp8(rows: &[Row], u: f32) -> [__m256; 3] {
    let (w0, w1) = (_mm256_set1_ps(1.0 - u), _mm256_set1_ps(u));
    [
        mix(rows, 0, w0, w1),
        mix(rows, 1, w0, w1),
        mix(rows, 2, w0, w1),
    ]
}

/// [`crate::transform::sin_0_half_pi`] on eight lanes, operation for operation.
#[inline(always)]
pub(super) unsafe fn sin8(x: __m256) -> __m256 {
    use crate::transform::SIN_COEF as C;
    let x2 = _mm256_mul_ps(x, x);
    let r = _mm256_sub_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(x2, _mm256_set1_ps(C[4])));
    let r = sin_step(x2, C[3], r);
    let r = sin_step(x2, C[2], r);
    let r = sin_step(x2, C[1], r);
    _mm256_mul_ps(x, sin_step(x2, C[0], r))
}

/// `1 - x2 * c * rest`, left to right as the scalar formula multiplies.
#[inline(always)]
unsafe fn sin_step(x2: __m256, c: f32, rest: __m256) -> __m256 {
    _mm256_sub_ps(
        _mm256_set1_ps(1.0),
        _mm256_mul_ps(_mm256_mul_ps(x2, _mm256_set1_ps(c)), rest),
    )
}

/// Writes eight rotations (x, y, z, w rows) to the joints of the lanes whose bits `lanes` has.
#[inline(always)]
pub(super) unsafe fn store_rotations(
    joints: &[JointIndex; LANES],
    lanes: u8,
    q: [__m256; 4],
    pose: &mut [Transform],
) {
    let r = transpose4(q[0], q[1], q[2], q[3]);
    // Eight lanes, each tested: the loop unrolls (a loop over the set bits took 25-40 % longer).
    for (lane, &j) in joints.iter().enumerate() {
        if lanes & (1 << lane) == 0 {
            continue;
        }
        let half = joint(&r, lane);
        // SAFETY: a `Quat` is four f32 (asserted above), written through a unique reference.
        _mm_storeu_ps(
            &mut pose[j as usize].rotation as *mut Quat as *mut f32,
            half,
        );
    }
}

/// Writes eight vectors (x, y, z rows) to the field `field` picks of the joints of the lanes
/// whose bits `lanes` has.
#[inline(always)]
pub(super) unsafe fn store_vectors(
    joints: &[JointIndex; LANES],
    lanes: u8,
    v: [__m256; 3],
    pose: &mut [Transform],
    field: impl Fn(&mut Transform) -> &mut Vec3,
) {
    // Vectors as (x, y, z, z).
    let r = transpose4(v[0], v[1], v[2], v[2]);
    for (lane, &j) in joints.iter().enumerate() {
        if lanes & (1 << lane) == 0 {
            continue;
        }
        let half = joint(&r, lane);
        let out = field(&mut pose[j as usize]);
        // SAFETY: a `Vec3` is three consecutive f32 (glam's layout, `repr(C)`); x and y are
        // written as 8 bytes, z as 4, through a unique reference, nothing past the vector.
        let p = out as *mut Vec3 as *mut f32;
        crate::play::simd::store2(p, half);
        _mm_store_ss(p.add(2), _mm_movehl_ps(half, half));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        sample, sample_uncached, Interpolation, JointIndex, Pose, RawChannel, RawClip, RawJoint,
        RawSkeleton, RawValues, RotationInterpolation, SamplingCache,
    };
    use proptest::prelude::*;

    /// A skeleton of `n` joints in a chain.
    fn skeleton(n: usize) -> crate::Skeleton {
        RawSkeleton {
            joints: (0..n)
                .map(|j| RawJoint {
                    name: format!("j{j}"),
                    parent: j.checked_sub(1),
                    rest: Transform::IDENTITY,
                })
                .collect(),
            ..Default::default()
        }
        .build()
        .unwrap()
    }

    /// The clip with its lanes emptied: sampled by the per-track loops. A clip of its own
    /// (a new id), so that a cache that sampled the original does not take it for the same
    /// clip (it keeps no per-timeline cursors for a clip on its lanes alone).
    fn without_lanes(clip: &Clip) -> Clip {
        let mut c = clip.clone();
        c.id = crate::clip::next_clip_id();
        if let crate::clip::Storage::Keyed(k) = &mut c.storage {
            *k.lanes = Default::default();
        }
        c
    }

    /// Whether `sample_uncached` (into `scratch`) and `sample_joint` of every joint give the
    /// bits of `cached`, a cached slerp sample of `clip` at `t`.
    fn other_searches_agree(
        clip: &Clip,
        t: f32,
        cached: &[Transform],
        scratch: &mut [Transform],
    ) -> bool {
        sample_uncached(clip, t, scratch).unwrap();
        scratch == cached
            && (0..cached.len()).all(|j| crate::sample_joint(clip, j as JointIndex, t) == cached[j])
    }

    /// Largest difference between two poses' components (rotations as unit 4-vectors up to
    /// sign), relative to the vectors' size.
    fn gap(a: &[Transform], b: &[Transform]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| {
                let r = glam::Vec4::from(x.rotation);
                let s = glam::Vec4::from(y.rotation);
                let rot = (r - s).abs().max_element().min((r + s).abs().max_element());
                let t = (x.translation - y.translation).abs().max_element()
                    / (1.0 + x.translation.abs().max_element());
                let sc =
                    (x.scale - y.scale).abs().max_element() / (1.0 + x.scale.abs().max_element());
                rot.max(t).max(sc)
            })
            .fold(0.0, f32::max)
    }

    proptest! {
        /// Sampling through lanes follows the per-track loops within 1e-6 (the union
        /// timeline's extra keys are the tracks' own slerp, or for nlerp their chord, rounded),
        /// slerp and nlerp, on clips whose tracks fall in groups of every size over two
        /// timelines, with STEP and CUBICSPLINE tracks beside them; keys are hit exactly; the
        /// uncached sample and `sample_joint` give the cached sample's bits.
        #[test]
        fn lanes_follow_the_per_track_path(
            channels in proptest::collection::vec(
                (0usize..24, 0u8..3, any::<bool>(), 0u8..10,
                 proptest::collection::vec(-1.0f32..1.0, 24)),
                1..60),
            times in proptest::collection::vec(-0.5f32..2.5, 12),
        ) {
            let sk = skeleton(24);
            let mut seen = std::collections::HashSet::new();
            let mut raw = Vec::new();
            for (joint, target, second, interp, v) in channels {
                if !seen.insert((joint, target)) {
                    continue;
                }
                // Timelines: 0, 0.25, .. 2 (9 keys) or 0, 0.3, .. 1.8 (7 keys).
                let (n, step) = if second { (7, 0.3) } else { (9, 0.25) };
                let interpolation = match interp {
                    0 => Interpolation::Step,
                    1 => Interpolation::CubicSpline,
                    _ => Interpolation::Linear,
                };
                let per = if interpolation == Interpolation::CubicSpline { 3 } else { 1 };
                let target = [Target::Rotation, Target::Translation, Target::Scale][target as usize];
                let values = match target {
                    Target::Rotation => RawValues::Quat((0..n * per).map(|k| {
                        let i = (k * 3) % 22;
                        Quat::from_euler(glam::EulerRot::XYZ, v[i] * 1.5, v[i + 1] * 0.7, v[i + 2] * 1.5)
                    }).collect()),
                    _ => RawValues::Vec3((0..n * per).map(|k| {
                        let i = (k * 2) % 22;
                        Vec3::new(v[i], v[i + 1], v[i + 2]) * 3.0
                    }).collect()),
                };
                raw.push(RawChannel {
                    joint: format!("j{joint}"),
                    target,
                    interpolation,
                    times: (0..n).map(|k| k as f32 * step).collect(),
                    values,
                });
            }
            let clip = RawClip { name: "c".into(), start: 0.0, duration: 2.0, channels: raw }
                .build(&sk)
                .unwrap();
            let plain = without_lanes(&clip);
            // Times where every track is at a key or holds one, then key times of one
            // timeline, then the drawn times.
            let exact = [-0.5f32, 0.0, 2.0, 2.5];
            let times: Vec<f32> = exact.into_iter().chain([0.25, 0.3, 1.75, 1.8]).chain(times).collect();
            for rotation in [RotationInterpolation::Slerp, RotationInterpolation::Nlerp] {
                let mut a = SamplingCache::for_clip(&clip).with_rotation_interpolation(rotation);
                let mut b = SamplingCache::for_clip(&plain).with_rotation_interpolation(rotation);
                let (mut pa, mut pb, mut pc) = (Pose::rest(&sk), Pose::rest(&sk), Pose::rest(&sk));
                for &t in &times {
                    sample(&clip, t, &mut a, &mut pa).unwrap();
                    sample(&plain, t, &mut b, &mut pb).unwrap();
                    let keyed = exact.contains(&t);
                    let tolerance = if keyed { 2.5e-7 } else { 1e-6 };
                    let g = gap(&pa, &pb);
                    prop_assert!(g <= tolerance, "gap {} at {} ({:?})", g, t, rotation);
                    if rotation == RotationInterpolation::Slerp {
                        prop_assert!(other_searches_agree(&clip, t, &pa, &mut pc), "at {}", t);
                    }
                }
            }
        }
    }

    #[test]
    fn every_linear_track_is_in_a_block_on_the_union_timeline() {
        // 11 rotations keyed at 0, 0.5, 1; 3 translations at 0, 0.4, 0.8, 1; 5 scales at 0, 1.
        let sk = skeleton(12);
        let ch = |j: usize, target: Target, times: &[f32]| {
            let n = times.len();
            RawChannel {
                joint: format!("j{j}"),
                target,
                interpolation: Interpolation::Linear,
                values: match target {
                    Target::Rotation => RawValues::Quat(
                        (0..n)
                            .map(|k| Quat::from_rotation_y((k * k) as f32 * 0.1 + j as f32))
                            .collect(),
                    ),
                    _ => RawValues::Vec3(
                        (0..n)
                            .map(|k| Vec3::splat((k * k) as f32 + j as f32))
                            .collect(),
                    ),
                },
                times: times.to_vec(),
            }
        };
        let mut channels: Vec<RawChannel> = (0..11)
            .map(|j| ch(j, Target::Rotation, &[0.0, 0.5, 1.0]))
            .collect();
        channels.extend((0..3).map(|j| ch(j, Target::Translation, &[0.0, 0.4, 0.8, 1.0])));
        channels.extend((0..5).map(|j| ch(j, Target::Scale, &[0.0, 1.0])));
        let clip = RawClip {
            name: "c".into(),
            start: 0.0,
            duration: 1.0,
            channels,
        }
        .build(&sk)
        .unwrap();
        let crate::clip::Storage::Keyed(keys) = &clip.storage else {
            unreachable!()
        };
        let lanes = crate::clip::lanes::Lanes::build_always(keys);
        let shape: Vec<(Target, u32)> = lanes.blocks.iter().map(|b| (b.target, b.count)).collect();
        assert_eq!(
            shape,
            [
                (Target::Rotation, 8),
                (Target::Rotation, 3),
                (Target::Translation, 3),
                (Target::Scale, 5)
            ]
        );
        assert!(lanes
            .blocks
            .iter()
            .all(|b| b.timeline == crate::clip::lanes::UNION));
        assert!(lanes.leftover.is_empty() && lanes.timelines.is_empty());
        assert_eq!(&lanes.times[..], [0.0, 0.4, 0.5, 0.8, 1.0]);
        // Rows: 5 keys x 10 per rotation block, 5 x 3 per other block.
        assert_eq!(lanes.rows.len(), 2 * 5 * 10 + 2 * 5 * 3);
        // The padding lanes of a partial block repeat its last track.
        let second = &lanes.rows[50..100];
        assert!(second.iter().all(|r| r.0[3..].iter().all(|&x| x == r.0[2])));
        assert_eq!(lanes.blocks[1].joints[3..], [10; 5]);
        // A rotation key is copied exactly; the translation at 0.5 (no key of its own) is its
        // interpolation between 0.4 and 0.8.
        assert_eq!(lanes.rows[2 * 10].0[0], keys.quats[1].x);
        assert_eq!(lanes.rows[2 * 10 + 6].0[0], keys.quats[1].x);
        let t = &lanes.rows[100 + 2 * 3..100 + 3 * 3];
        assert!(
            (t[0].0[0] - (1.0 + 0.25 * 3.0)).abs() < 1e-6,
            "{}",
            t[0].0[0]
        );
    }

    #[test]
    fn tracks_keyed_at_unrelated_times_are_sampled_one_at_a_time() {
        // 16 rotations with 300 keys each, no two tracks sharing a time: a union of 4800
        // times for 16 lanes would be 16 times the keys.
        let sk = skeleton(16);
        let channels = (0..16)
            .map(|j| RawChannel {
                joint: format!("j{j}"),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                times: (0..300).map(|k| k as f32 + j as f32 / 16.0).collect(),
                values: RawValues::Quat(
                    (0..300)
                        .map(|k| Quat::from_rotation_x(((k * 7 + j) % 13) as f32 * 0.2))
                        .collect(),
                ),
            })
            .collect();
        let clip = RawClip {
            name: "c".into(),
            start: 0.0,
            duration: 300.0,
            channels,
        }
        .build(&sk)
        .unwrap();
        let crate::clip::Storage::Keyed(keys) = &clip.storage else {
            unreachable!()
        };
        let lanes = crate::clip::lanes::Lanes::build_always(keys);
        // No union, no group of four on one timeline: nothing kept, every track sampled
        // one at a time.
        assert_eq!(lanes, crate::clip::lanes::Lanes::default());
    }

    #[test]
    fn blocks_on_their_own_timelines_give_the_per_track_bits() {
        if !crate::clip::lanes::used() {
            eprintln!("no AVX: lanes are not used on this CPU");
            return;
        }
        // Six rotations and five translations on one timeline of 9 keys, and one rotation
        // with 3000 keys at times no other track has: a union would be too large, so the
        // two groups keep their timeline (blocks of 6 and 5) and the long track is left over.
        let sk = skeleton(12);
        let wave = |k: usize, j: usize| ((k * k + 3 * j) % 17) as f32 * 0.37;
        let shared: Vec<f32> = (0..9).map(|k| k as f32 * 0.25).collect();
        let mut channels: Vec<RawChannel> = (0..6)
            .map(|j| RawChannel {
                joint: format!("j{j}"),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                times: shared.clone(),
                values: RawValues::Quat(
                    (0..9)
                        .map(|k| {
                            Quat::from_euler(glam::EulerRot::XYZ, wave(k, j), 0.3, wave(k, j + 1))
                        })
                        .collect(),
                ),
            })
            .collect();
        channels.extend((0..5).map(|j| {
            RawChannel {
                joint: format!("j{j}"),
                target: Target::Translation,
                interpolation: Interpolation::Linear,
                times: shared.clone(),
                values: RawValues::Vec3(
                    (0..9)
                        .map(|k| Vec3::new(wave(k, j), -wave(k, j + 2), 1.0))
                        .collect(),
                ),
            }
        }));
        channels.push(RawChannel {
            joint: "j11".into(),
            target: Target::Rotation,
            interpolation: Interpolation::Linear,
            times: (0..3000).map(|k| 0.0007 + k as f32 * 0.000_661).collect(),
            values: RawValues::Quat(
                (0..3000)
                    .map(|k| Quat::from_rotation_z(wave(k, 0)))
                    .collect(),
            ),
        });
        let clip = RawClip {
            name: "c".into(),
            start: 0.0,
            duration: 2.0,
            channels,
        }
        .build(&sk)
        .unwrap();
        let crate::clip::Storage::Keyed(keys) = &clip.storage else {
            unreachable!()
        };
        let shape: Vec<(Target, u32, bool)> = keys
            .lanes
            .blocks
            .iter()
            .map(|b| (b.target, b.count, b.timeline == crate::clip::lanes::UNION))
            .collect();
        assert_eq!(
            shape,
            [
                (Target::Translation, 5, false),
                (Target::Rotation, 6, false)
            ]
        );
        assert_eq!(keys.lanes.leftover.len(), 1);
        let plain = without_lanes(&clip);
        for rotation in [RotationInterpolation::Slerp, RotationInterpolation::Nlerp] {
            let mut a = SamplingCache::for_clip(&clip).with_rotation_interpolation(rotation);
            let mut b = SamplingCache::for_clip(&plain).with_rotation_interpolation(rotation);
            let (mut pa, mut pb, mut pc) = (Pose::rest(&sk), Pose::rest(&sk), Pose::rest(&sk));
            for i in -5..130 {
                let t = i as f32 * 0.0171;
                sample(&clip, t, &mut a, &mut pa).unwrap();
                sample(&plain, t, &mut b, &mut pb).unwrap();
                assert_eq!(&pa[..], &pb[..], "{t} {rotation:?}");
                if rotation == RotationInterpolation::Slerp {
                    assert!(other_searches_agree(&clip, t, &pa, &mut pc), "at {t}");
                }
            }
        }
    }

    #[test]
    fn eight_lane_sine_equals_the_scalar_one_bit_for_bit() {
        if !crate::clip::lanes::used() {
            eprintln!("no AVX: the eight-lane sine is not used on this CPU");
            return;
        }
        for i in 0..=4000 {
            let x = i as f32 / 4000.0 * std::f32::consts::FRAC_PI_2;
            let lanes = [1.0f32, 0.5, 0.25, 0.75, 0.1, 0.9, 0.33, 0.0];
            let mut out = [0f32; 8];
            // SAFETY: AVX was just detected; `out` holds eight f32.
            unsafe {
                let v = _mm256_loadu_ps(lanes.map(|k| x * k).as_ptr());
                _mm256_storeu_ps(out.as_mut_ptr(), sin8(v));
            }
            for (o, k) in out.iter().zip(lanes) {
                let expected = crate::transform::sin_0_half_pi(x * k);
                assert_eq!(o.to_bits(), expected.to_bits(), "x {x} k {k}");
            }
        }
    }
}

//! Sampling a compact clip in the lanes layout (`clip/compact_lanes.rs`): the time's key pair
//! found by a table lookup (and a step or two on sparse tables), then, per block of eight tracks, each row's two keys
//! dequantised and interpolated on eight lanes (AVX2 and FMA) and written to the pose as the
//! keyed clip's lanes write theirs.
//!
//! ```text
//! time ─▶ frame position x ─▶ key k (key_at, then stepping on), u ─▶ segment j = k / SEG,
//!                                                                     i = k % SEG
//! per block: per row: smallest + step * (q[i] + (q[i+1] - q[i]) * u)   (STEP: u = 0, or 1
//!            at the last key)
//!            slerped lanes: the arc between the dequantised keys, at the pair's angle
//!            derived at load (`arc`)
//!            rotations normalised (the identity where the length is not positive finite)
//! ```
//!
//! The portable path performs each lane's operations in the same order with the same fused
//! multiply-adds (`f32::mul_add`), so both give the same bits
//! (`lanes_and_portable_paths_give_the_same_bits` compares them). Rotations are normalised
//! as the streamed layout normalises them (`transform::inv_sqrt`: the SSE estimate and a
//! Newton step), so, as there, Intel and AMD CPUs may differ in the last bits. The only
//! state is optional: a `SamplingCache` keeps the key the last sample read, which the next
//! tries first (forward playback then finds its key without the table); a seek costs one
//! missed guess and the table's lookup, and gives the same bits either way.

use glam::{Quat, Vec4};

use crate::clip::compact::Compact;
use crate::clip::compact_lanes::{PackedBlock, PackedLanes, LANE_SEG};
use crate::clip::lanes::LANES;
use crate::{JointIndex, Target, Transform};

/// Where a sample at `t_from_start` reads: the key (the last at or before the time, at most
/// the last but one), and the fraction to the next. With `hint`, the key the last sample
/// read from, tried first along with the one after it, then updated.
///
/// The hint is what makes forward playback of small skeletons cheap: a sample whose key the
/// branch predictor guesses from the hint starts loading the blocks' keys at once, where
/// the table's path waits for the time's conversion to a frame, the table and the step on.
#[inline(always)]
fn locate(c: &Compact, p: &PackedLanes, t_from_start: f32, hint: Option<&mut u32>) -> (usize, f32) {
    let keys = p.pos.len();
    let x = c.pos_of(t_from_start);
    // Key `k` holds `x` where the next key lies past it, or `k` is the last pair's.
    let holds = |k: usize| p.pos[k] <= x && (k + 2 == keys || x < p.pos[k + 1]);
    let k = match hint {
        Some(h) => {
            let last = (*h as usize).min(keys - 2);
            let k = if holds(last) {
                last
            } else if last + 2 < keys && holds(last + 1) {
                last + 1
            } else {
                from_table(c, p, t_from_start, x)
            };
            *h = k as u32;
            k
        }
        None => from_table(c, p, t_from_start, x),
    };
    // The fraction from the snapped position before its clamp to the grid
    // (`Compact::snap`): every block's interpolation waits on the fraction, and the clamp's
    // comparisons and selects would lengthen that chain, while the key comes from a
    // predicted branch. The same fraction as from `x`: past either end it is clamped to 0
    // or 1 all the same, and on the last pair `snapped` reaches the end where `x` does.
    let snapped = c.snap(t_from_start * c.rate);
    // At the last key, exactly 1 (the product with the reciprocal may round below it, and a
    // STEP track must hold the last key there).
    if snapped >= p.pos[k + 1] {
        return (k, 1.0);
    }
    (k, super::compact::unit_span(snapped - p.pos[k], p.inv[k]))
}

/// [`locate`]'s key from the frame-to-key table: the entry of the time's frame, then on
/// while the next key is at or before `x` (`pos_of(t_from_start)`).
#[inline(always)]
fn from_table(c: &Compact, p: &PackedLanes, t_from_start: f32, x: f32) -> usize {
    let keys = p.pos.len();
    // The table is read at the frame before snapping to a whole frame (`pos_of`), so that
    // the two run side by side: the snapped position lies at most one frame on, and the
    // entry of the frame before it still starts at or before its key.
    let f = ((t_from_start * c.rate) as usize).min(c.frames as usize - 1);
    let e = (f >> p.entry_shift).min(p.key_at.len() - 1);
    let mut k = (p.key_at[e] as usize).min(keys - 2);
    // The table's entry may lie a few keys before x's (several frames per entry).
    while k + 2 < keys && p.pos[k + 1] <= x {
        k += 1;
    }
    k
}

/// Samples every track of `c` (in the lanes layout) at `t_from_start` into `pose`, whose
/// static joints the caller set; with `only`, that joint's tracks alone, into `pose[0]`;
/// with `hint`, a sampling cache's last key (see [`locate`]).
pub(crate) fn sample_tracks(
    c: &Compact,
    t_from_start: f32,
    only: Option<JointIndex>,
    hint: Option<&mut u32>,
    pose: &mut [Transform],
) {
    let Some(p) = c.lanes.as_deref() else {
        return;
    };
    if p.pos.len() < 2 {
        return;
    }
    let (k, u) = locate(c, p, t_from_start, hint);
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if crate::play::simd::avx2_fma() {
        // SAFETY: AVX2 and FMA were just detected; `p` was built or checked for `c`
        // (`PackedLanes::new` sizes the ranges and keys for every block and segment;
        // `from_bytes` checks joints against the clip's tracks), `j` and `i` come from
        // `locate`, and `pose` holds the clip's joints (checked by the public functions;
        // indexing checks again). `lanes_and_portable_paths_give_the_same_bits` runs it.
        unsafe { avx::sample(p, k, u, only, pose) };
        return;
    }
    sample_portable(p, k, u, only, pose);
}

/// [`sample_tracks`] one lane at a time.
fn sample_portable(
    p: &PackedLanes,
    k: usize,
    u: f32,
    only: Option<JointIndex>,
    pose: &mut [Transform],
) {
    for (n, b) in p.blocks.iter().enumerate() {
        if only.is_some_and(|o| !b.block.joints.contains(&o)) {
            continue;
        }
        let v = block_values(p, n, b, k, u);
        let lanes = b.block.joints.iter().zip(v).take(b.block.count as usize);
        for (&joint, v) in lanes {
            let slot = match only {
                Some(o) if o == joint => 0,
                Some(_) => continue,
                None => joint as usize,
            };
            write(b.block.target, v, &mut pose[slot]);
        }
    }
}

/// The eight lanes' values of block `b` (the `n`th) at key `k` and fraction `u` (rotations
/// not yet normalised), one lane at a time. Each row is lerped as integers, then
/// dequantised: `((b - a) * u + a) * step + smallest`; lanes the key slerps take [`arc`]
/// between the dequantised keys instead (normalised by the caller, as every rotation is),
/// with the pair's angle from [`PackedLanes::arcs`].
fn block_values(p: &PackedLanes, n: usize, b: &PackedBlock, k: usize, u: f32) -> [Vec4; LANES] {
    let j = k / LANE_SEG;
    let rows = b.rows();
    let r0 = b.first_range as usize + j * rows * 2;
    let q0 = b.first_q as usize + PackedLanes::slot(k) * rows;
    let u = step_u(b.step, u);
    // As the eight-lane path: slerped lanes only in blocks with derived angles.
    let angles = p.angles(b, k);
    let slerp = match angles {
        Some(_) => p.slerp[n * p.pos.len() + k],
        None => 0,
    };
    std::array::from_fn(|l| {
        let (mut va, mut vb, mut v) = ([0f32; 4], [0f32; 4], [0f32; 4]);
        for r in 0..rows {
            let (lo, step) = (p.ranges[r0 + 2 * r].0[l], p.ranges[r0 + 2 * r + 1].0[l]);
            let a = f32::from(p.q[q0 + r][l]);
            let b = f32::from(p.q[q0 + rows + r][l]);
            v[r] = (b - a).mul_add(u, a).mul_add(step, lo);
            va[r] = a.mul_add(step, lo);
            vb[r] = b.mul_add(step, lo);
        }
        if let (Some(angles), true) = (angles, slerp & (1 << l) != 0) {
            return arc(Vec4::from_array(va), Vec4::from_array(vb), angles.0[l], u);
        }
        Vec4::from_array(v)
    })
}

/// The slerp at `u` of two dequantised rotation keys `a` and `b` the angle `angle` apart (as
/// normalised), up to a positive factor that the caller's normalisation removes: `a * sin((1
/// - u) angle) / |a| + b * sin(u angle) / |b|`, the arc between the normalised keys times
/// `sin(angle)`.
///
/// Built for latency, since a sample waits on this chain once per block that slerps:
/// - The angle comes from the table derived at load, not from an arc cosine of the keys'
///   normalised dot product (two square roots and a division).
/// - `1 / |a|` is the series `1 - δ/2 + 3δ²/8` of `δ = |a|² - 1`, not a square root and a
///   division. The keys of a slerped pair lie on the arc the builder sampled, so only the
///   16-bit rounding moves them off the unit sphere (`|δ|` below 2e-4, where the series is
///   exact to f32 precision). On keys far off the unit sphere, which only damaged data has,
///   the result leaves the arc, or becomes the identity where the series overflows (no
///   panic).
/// - `sin` is the Taylor series of `transform::sin_0_half_pi` evaluated by Estrin's scheme
///   with fused multiply-adds: three levels deep instead of five.
///
/// Each operation as the eight-lane path performs it, so both give the same bits.
#[inline(always)]
fn arc(a: Vec4, b: Vec4, angle: f32, u: f32) -> Vec4 {
    let inv_norm = |v: Vec4| {
        let d = ((v.x * v.x + v.z * v.z) + (v.y * v.y + v.w * v.w)) - 1.0;
        INV_SQRT_SERIES[0]
            .mul_add(d, INV_SQRT_SERIES[1])
            .mul_add(d, 1.0)
    };
    let w0 = sin_0_pi((1.0 - u) * angle) * inv_norm(a);
    let w1 = sin_0_pi(u * angle) * inv_norm(b);
    a * w0 + b * w1
}

/// `1 / sqrt(1 + δ) ≈ 1 + δ * (-1/2 + δ * 3/8)`: the coefficients of `δ²` and `δ`.
const INV_SQRT_SERIES: [f32; 2] = [0.375, -0.5];

/// `sin(x) = x * P(x²)`: P's coefficients, the Taylor series to `x^11` (to about 2e-7 on
/// `[0, pi/2]`).
const SIN_SERIES: [f32; 6] = [
    1.0,
    -1.0 / 6.0,
    1.0 / 120.0,
    -1.0 / 5040.0,
    1.0 / 362_880.0,
    -1.0 / 39_916_800.0,
];

/// The smallest `x²` [`sin_0_pi`] evaluates its series at.
const SIN_Z_MIN: f32 = 1e-9;

/// `sin(x)` for `x` in `[0, pi]` (folded to `[0, pi/2]`), [`SIN_SERIES`] by Estrin's scheme.
#[inline(always)]
fn sin_0_pi(x: f32) -> f32 {
    use std::f32::consts::{FRAC_PI_2, PI};
    let x = if x > FRAC_PI_2 { PI - x } else { x };
    let c = SIN_SERIES;
    // At least 1e-9 (P is then 1 in f32 all the same), so that z^4 stays a normal float:
    // subnormal products cost a microcode assist of a hundred cycles or more each.
    let z = (x * x).max(SIN_Z_MIN);
    let z2 = z * z;
    let lo = c[3].mul_add(z, c[2]).mul_add(z2, c[1].mul_add(z, c[0]));
    x * c[5].mul_add(z, c[4]).mul_add(z2 * z2, lo)
}

/// The fraction a block interpolates with: `u`, or for STEP tracks the key at or before the
/// time (0, or 1 at the clip's last key, where `u` reaches 1).
#[inline(always)]
fn step_u(step: bool, u: f32) -> f32 {
    if !step {
        u
    } else if u >= 1.0 {
        1.0
    } else {
        0.0
    }
}

/// One lane's value into its transform: rotations normalised as the eight-lane path does.
fn write(target: Target, v: Vec4, out: &mut Transform) {
    match target {
        Target::Rotation => {
            // As the streamed layout's `compact::write` (the SSE estimate refined by a Newton
            // step, 5e-7 relative: a square root and a division took a quarter of a sample).
            let l = (v.x * v.x + v.z * v.z) + (v.y * v.y + v.w * v.w);
            out.rotation = if (f32::MIN_POSITIVE..=f32::MAX).contains(&l) {
                Quat::from_vec4(v * crate::transform::inv_sqrt(l))
            } else {
                Quat::IDENTITY
            };
        }
        Target::Translation => out.translation = v.truncate(),
        Target::Scale => out.scale = v.truncate(),
    }
}

#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
mod avx {
    use std::arch::x86_64::*;

    use super::*;
    use crate::play::sampling::compact_avx::normalize8;
    use crate::play::sampling::compact_seek_avx::dot8;
    use crate::play::sampling::lanes::{store_rotations, store_vectors};

    /// [`super::sample_tracks`] eight lanes at a time, each lane [`super::block_values`]'s
    /// operations in its order.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA; `k` from [`super::locate`] for `p`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn sample(
        p: &PackedLanes,
        k: usize,
        u: f32,
        only: Option<JointIndex>,
        pose: &mut [Transform],
    ) {
        let j = k / LANE_SEG;
        let keys = p.pos.len();
        for (n, b) in p.blocks.iter().enumerate() {
            if only.is_some_and(|o| !b.block.joints.contains(&o)) {
                continue;
            }
            let rows = b.rows();
            let r0 = b.first_range as usize + j * rows * 2;
            let q0 = b.first_q as usize + PackedLanes::slot(k) * rows;
            let ranges = &p.ranges[r0..r0 + 2 * rows];
            let q = &p.q[q0..q0 + 2 * rows];
            let uv = _mm256_set1_ps(step_u(b.step, u));
            let mut v = [_mm256_setzero_ps(); 4];
            let slerp = p.slerp[n * keys + k];
            if let (Some(angles), true) = (p.angles(b, k), slerp != 0) {
                v = slerped(ranges, q, slerp, angles, uv);
            } else {
                for (r, v) in v.iter_mut().enumerate().take(rows) {
                    *v = lerped(ranges, q, rows, r, uv);
                }
            }
            match b.block.target {
                Target::Rotation => {
                    let n = normalize8(v);
                    if only.is_some() {
                        write_only(b, n, only, pose);
                    } else {
                        store_rotations(&b.block.joints, b.block.mask, n, pose);
                    }
                }
                _ if only.is_some() => write_only(b, v, only, pose),
                Target::Scale => store_vectors(
                    &b.block.joints,
                    b.block.mask,
                    [v[0], v[1], v[2]],
                    pose,
                    |t| &mut t.scale,
                ),
                Target::Translation => store_vectors(
                    &b.block.joints,
                    b.block.mask,
                    [v[0], v[1], v[2]],
                    pose,
                    |t| &mut t.translation,
                ),
            }
        }
    }

    /// The lane of `b` that animates `only` (values already final) into `pose[0]`.
    #[inline(always)]
    unsafe fn write_only(
        b: &PackedBlock,
        v: [__m256; 4],
        only: Option<JointIndex>,
        pose: &mut [Transform],
    ) {
        let mut lanes = [[0f32; LANES]; 4];
        for (row, reg) in lanes.iter_mut().zip(v) {
            // SAFETY: eight f32 into an array of eight.
            _mm256_storeu_ps(row.as_mut_ptr(), reg);
        }
        for (l, &joint) in b
            .block
            .joints
            .iter()
            .enumerate()
            .take(b.block.count as usize)
        {
            if Some(joint) == only {
                let v = Vec4::new(lanes[0][l], lanes[1][l], lanes[2][l], lanes[3][l]);
                match b.block.target {
                    Target::Rotation => pose[0].rotation = Quat::from_vec4(v),
                    Target::Translation => pose[0].translation = v.truncate(),
                    Target::Scale => pose[0].scale = v.truncate(),
                }
            }
        }
    }

    /// A rotation block some of whose keys slerp: the rows lerped as [`lerped`] lerps them,
    /// and the lanes of `slerp` (none at some keys) replaced by [`super::arc`] on eight
    /// lanes, with the angles `angle`.
    #[inline(always)]
    unsafe fn slerped(
        ranges: &[crate::clip::lanes::Row],
        q: &[[u16; LANES]],
        slerp: u8,
        angle: &crate::clip::lanes::Row,
        u: __m256,
    ) -> [__m256; 4] {
        let mut a = [_mm256_setzero_ps(); 4];
        let mut b = [_mm256_setzero_ps(); 4];
        let mut v = [_mm256_setzero_ps(); 4];
        for r in 0..4 {
            // SAFETY: as in `lerped`.
            let lo = _mm256_load_ps(ranges[2 * r].0.as_ptr());
            let step = _mm256_load_ps(ranges[2 * r + 1].0.as_ptr());
            let (qa, qb) = (ints(&q[r]), ints(&q[4 + r]));
            a[r] = _mm256_fmadd_ps(qa, step, lo);
            b[r] = _mm256_fmadd_ps(qb, step, lo);
            v[r] = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_sub_ps(qb, qa), u, qa), step, lo);
        }
        let one = _mm256_set1_ps(1.0);
        // SAFETY: a `Row` is eight f32 aligned to 32 bytes.
        let angle = _mm256_load_ps(angle.0.as_ptr());
        let w0 = _mm256_mul_ps(
            sin_0_pi8(_mm256_mul_ps(_mm256_sub_ps(one, u), angle)),
            inv_norm(a),
        );
        let w1 = _mm256_mul_ps(sin_0_pi8(_mm256_mul_ps(u, angle)), inv_norm(b));
        let bits = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);
        let on = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
            _mm256_and_si256(_mm256_set1_epi32(i32::from(slerp)), bits),
            bits,
        ));
        for r in 0..4 {
            let arc = _mm256_add_ps(_mm256_mul_ps(a[r], w0), _mm256_mul_ps(b[r], w1));
            v[r] = _mm256_blendv_ps(v[r], arc, on);
        }
        v
    }

    /// `1 / |v|` of eight near-unit 4-vectors, as [`super::arc`] computes it (a plain
    /// function: closures do not inherit the caller's target features).
    #[inline(always)]
    unsafe fn inv_norm(v: [__m256; 4]) -> __m256 {
        let one = _mm256_set1_ps(1.0);
        let d = _mm256_sub_ps(dot8(v, v), one);
        let c = INV_SQRT_SERIES;
        _mm256_fmadd_ps(fma_c(c[0], d, c[1]), d, one)
    }

    /// `c1 * x + c0`, fused, `c` broadcast.
    #[inline(always)]
    unsafe fn fma_c(c1: f32, x: __m256, c0: f32) -> __m256 {
        _mm256_fmadd_ps(_mm256_set1_ps(c1), x, _mm256_set1_ps(c0))
    }

    /// [`super::sin_0_pi`] on eight lanes.
    #[inline(always)]
    unsafe fn sin_0_pi8(x: __m256) -> __m256 {
        use std::f32::consts::{FRAC_PI_2, PI};
        let past = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(FRAC_PI_2));
        let x = _mm256_blendv_ps(x, _mm256_sub_ps(_mm256_set1_ps(PI), x), past);
        let c = SIN_SERIES;
        // `f32::max(x * x, SIN_Z_MIN)`: x * x is never NaN here but where x is.
        let z = _mm256_max_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(SIN_Z_MIN));
        let z2 = _mm256_mul_ps(z, z);
        let lo = _mm256_fmadd_ps(fma_c(c[3], z, c[2]), z2, fma_c(c[1], z, c[0]));
        let p = _mm256_fmadd_ps(fma_c(c[5], z, c[4]), _mm256_mul_ps(z2, z2), lo);
        _mm256_mul_ps(x, p)
    }

    /// Eight u16 as f32.
    #[inline(always)]
    unsafe fn ints(q: &[u16; LANES]) -> __m256 {
        // SAFETY: eight u16 (16 bytes), read unaligned.
        _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_loadu_si128(
            q.as_ptr() as *const __m128i
        )))
    }

    /// Row `r` of eight lanes lerped as integers, then dequantised: `(b - a) * u + a`, then
    /// `* step + smallest`, both fused.
    #[inline(always)]
    unsafe fn lerped(
        ranges: &[crate::clip::lanes::Row],
        q: &[[u16; LANES]],
        rows: usize,
        r: usize,
        u: __m256,
    ) -> __m256 {
        // SAFETY: `Row` is eight f32 aligned to 32 bytes; indexing checks the ranges.
        let lo = _mm256_load_ps(ranges[2 * r].0.as_ptr());
        let step = _mm256_load_ps(ranges[2 * r + 1].0.as_ptr());
        let (a, b) = (ints(&q[r]), ints(&q[rows + r]));
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_sub_ps(b, a), u, a), step, lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::compress::lanes::lanes_from_stream;
    use crate::compress::encode::{TrackInput, SUB_AT};
    use crate::play::sampling::compact::tests::{clip_of, get, values};
    use crate::play::sampling::compact::{sample_tracks_uncached, CompactCache};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]

        /// A streamed clip in the lanes layout samples within the 16-bit rounding of the
        /// streamed clip (slerped pairs included) at frames, between them and outside the
        /// clip; the eight-lane and portable paths give the same bits, and one joint alone is
        /// that joint of the whole pose.
        #[test]
        fn lanes_and_portable_paths_give_the_same_bits(
            frames in 2usize..120,
            kinds in proptest::collection::vec((0u8..3, any::<bool>()), 1..20),
            last_span in prop_oneof![Just(1.0f32), 0.05f32..1.0],
            seed in proptest::collection::vec(-1.0f32..1.0, 3..9),
            swing in 1.0f32..8.0,
            tol in 1e-4f32..1e-1,
            times in proptest::collection::vec(-0.1f32..1.1, 1..40),
        ) {
            let tracks: Vec<(Target, bool, Vec<Vec4>)> = kinds
                .iter()
                .enumerate()
                .map(|(i, &(kind, step))| {
                    let target = [Target::Rotation, Target::Translation, Target::Scale][usize::from(kind)];
                    // Larger swings: key pairs far apart, which the encoder slerps.
                    let seed: Vec<f32> = seed.iter().map(|s| s * swing).collect();
                    (target, step, values(target, &seed[i % seed.len()..], frames))
                })
                .collect();
            let tols = vec![tol; frames];
            let pos: Vec<f32> = (0..frames)
                .map(|f| if f + 1 == frames { (frames - 2) as f32 + last_span } else { f as f32 })
                .collect();
            let mids: Vec<Vec<Vec4>> = tracks
                .iter()
                .map(|(_, step, raw)| {
                    raw.windows(2)
                        .flat_map(|w| SUB_AT.map(|u| if *step { w[0] } else { w[0] + (w[1] - w[0]) * u }))
                        .collect()
                })
                .collect();
            let inputs: Vec<TrackInput<'_>> = tracks
                .iter()
                .zip(&mids)
                .enumerate()
                .map(|(i, ((target, step, raw), mid))| TrackInput {
                    joint: i as JointIndex, target: *target, step: *step, raw, raw_sub: mid,
                    tol: &tols, rest: Vec4::new(100.0, 0.0, 0.0, 1.0), units: None,
                })
                .collect();
            let stream = clip_of(&inputs, &pos, frames as u32, last_span);
            let lanes = lanes_from_stream(&stream).unwrap();
            let p = lanes.lanes.as_deref().unwrap();
            // The angles derived at load: those of slerped pairs, as acos in f64 gives them
            // (`key_value` reads a segment's last key from the next segment: 1e-4).
            let keys = p.pos.len();
            for (n, b) in p.blocks.iter().enumerate() {
                let flags = &p.slerp[n * keys..(n + 1) * keys];
                let Some(first) = b.first_arc else {
                    prop_assert!(flags.iter().all(|&f| f == 0));
                    continue;
                };
                for (k, &f) in flags.iter().enumerate().take(keys.saturating_sub(1)) {
                    for l in (0..LANES).filter(|l| f & (1 << l) != 0) {
                        let slot = first as usize + (k / LANE_SEG) * (LANE_SEG + 1) + k % LANE_SEG;
                        let a = p.key_value(b, l, k).as_dvec4().normalize();
                        let c = p.key_value(b, l, k + 1).as_dvec4().normalize();
                        let want = a.dot(c).clamp(-1.0, 1.0).acos().max(1e-3);
                        let got = f64::from(p.arcs[slot].0[l]);
                        prop_assert!((got - want).abs() < 1e-4, "key {} lane {}: {} against {}", k, l, got, want);
                    }
                }
            }
            let mut cache = CompactCache::default();
            cache.reset(&stream);
            let n = tracks.len();
            let (mut want, mut eight, mut one) = (
                vec![Transform::IDENTITY; n],
                vec![Transform::IDENTITY; n],
                vec![Transform::IDENTITY; n],
            );
            let mut single = [Transform::IDENTITY];
            // Each track's largest magnitude, for the rounding's bound.
            let reach: Vec<f32> = tracks
                .iter()
                .map(|(_, _, raw)| raw.iter().map(|v| v.abs().max_element()).fold(1.0, f32::max))
                .collect();
            let grid: Vec<f32> = (0..frames).map(|f| f as f32 / 30.0).collect();
            let end = ((frames - 2) as f32 + last_span) / 30.0;
            // A hint carried from sample to sample, as a sampling cache carries it: forward
            // over the grid (the hint's key or the next), then at random times (misses).
            let (mut hint, mut hinted) = (0u32, vec![Transform::IDENTITY; n]);
            for t in grid.into_iter().chain(times.iter().map(|u| u * end)) {
                sample_tracks_uncached(&stream, t, None, &mut want);
                sample_tracks(&lanes, t, None, None, &mut eight);
                sample_tracks(&lanes, t, None, Some(&mut hint), &mut hinted);
                if p.pos.len() >= 2 {
                    let (k, u) = locate(&lanes, p, t, None);
                    prop_assert_eq!(hint as usize, k, "t {}", t);
                    sample_portable(p, k, u, None, &mut one);
                }
                for tr in lanes.tracks.iter() {
                    let j = tr.joint as usize;
                    let bits = |x: &[Transform], j: usize| get(tr.target, &x[j]).to_array().map(f32::to_bits);
                    prop_assert_eq!(bits(&eight, j), bits(&one, j), "t {} track {}", t, j);
                    prop_assert_eq!(bits(&hinted, j), bits(&eight, j), "t {} track {} hinted", t, j);
                    sample_tracks(&lanes, t, Some(tr.joint), None, &mut single);
                    prop_assert_eq!(bits(&single, 0), bits(&eight, j), "t {} joint {} alone", t, j);
                    let (a, mut b) = (get(tr.target, &want[j]), get(tr.target, &eight[j]));
                    if tr.target == Target::Rotation && a.dot(b) < 0.0 {
                        b = -b;
                    }
                    let gap = (a - b).abs().max_element();
                    prop_assert!(
                        gap <= 1e-4 * reach[j],
                        "t {} track {} ({:?}, step {}): stream {} lanes {}", t, j, tr.target, tr.step, a, b
                    );
                }
            }
        }
    }

    /// The stored form reads back to the same layout, and damaged forms are refused with a
    /// message, never a panic.
    #[test]
    fn stored_lanes_read_back_and_damage_is_refused() {
        let frames = 70usize;
        let raw = values(Target::Rotation, &[0.9, -0.4, 0.7], frames);
        let mids: Vec<Vec4> = raw
            .windows(2)
            .flat_map(|w| SUB_AT.map(|u| w[0] + (w[1] - w[0]) * u))
            .collect();
        let tols = vec![1e-3f32; frames];
        let pos: Vec<f32> = (0..frames).map(|f| f as f32).collect();
        let input = TrackInput {
            joint: 0,
            target: Target::Rotation,
            step: false,
            raw: &raw,
            raw_sub: &mids,
            tol: &tols,
            rest: Vec4::W,
            units: None,
        };
        let stream = clip_of(&[input], &pos, frames as u32, 1.0);
        let lanes = lanes_from_stream(&stream).unwrap();
        let p = lanes.lanes.as_deref().unwrap();
        let tracks = [(0, Target::Rotation, false)];
        let bytes = p.to_bytes();
        assert_eq!(bytes.len(), p.stored_bytes());
        let back = PackedLanes::from_bytes(&bytes, &tracks, frames as u32, 1.0).unwrap();
        assert_eq!(&back, p);
        // Every byte changed, and every length cut: refused or a layout that samples.
        let mut refused = 0;
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                match PackedLanes::from_bytes(&b, &tracks, frames as u32, 1.0) {
                    Err(e) => {
                        assert!(!e.is_empty());
                        refused += 1;
                    }
                    Ok(l) => {
                        let c = Compact::with_lanes(&stream, l);
                        let mut pose = [Transform::IDENTITY];
                        for t in [0.0, 0.5, 1.0, 2.3] {
                            sample_tracks(&c, t, None, None, &mut pose);
                        }
                    }
                }
            }
        }
        assert!(refused > 0);
        for len in 0..bytes.len() {
            assert!(PackedLanes::from_bytes(&bytes[..len], &tracks, frames as u32, 1.0).is_err());
        }
        // The key table follows the keys, not the clip's length: two keys on 2^24 frames.
        let long = PackedLanes::new(
            vec![0.0, 16_777_215.0],
            &[],
            Vec::new(),
            Vec::new(),
            Vec::new(),
            1 << 24,
        )
        .unwrap();
        assert!(long.key_at.len() <= 8, "{} entries", long.key_at.len());
        // A lane that names no track, and a track in no lane.
        assert!(PackedLanes::from_bytes(&bytes, &[(1, Target::Rotation, false)], 70, 1.0).is_err());
        assert!(
            PackedLanes::from_bytes(&bytes, &[(0, Target::Translation, false)], 70, 1.0).is_err()
        );
    }
}

//! Compact clips sampled eight tracks at a time (AVX): the interpolation half of
//! `compact.rs`'s cursors, kept per character in blocks of eight tracks of one target.
//!
//! ```text
//! time ─▶ frame position x ─▶ per block: lanes with x outside their key pair
//!                               │   └─▶ compact::advance (decode), then the lane's slot
//!                               └─▶ lerp / slerp / hold on 8 lanes ─▶ (normalise) ─▶ pose
//! ```
//!
//! The one-track path (`compact::sample_tracks_scalar`) interpolates each track after
//! deciding, track by track, whether to decode; with a decision per track that goes either
//! way on dense motion capture, most of its time went into mispredicted branches and the
//! latency of each track's chain. Here a block's lanes are tested together, only the lanes
//! that left their pair decode, and the interpolation runs without branches on all eight.
//!
//! Each lane performs the one-track formulas' operations in the same order, without fused
//! multiply-adds: the lerp `a + (b - a) * u`, slerp's `a * w0 + b * w1` with the weights
//! from [`crate::transform::sin_0_half_pi`]'s polynomial, a held key as stored, and a
//! rotation's length as glam's four-wide dot product sums it, `(x² + z²) + (y² + w²)`,
//! refined from the same reciprocal square root estimate (`_mm256_rsqrt_ps`, the
//! instruction `_mm_rsqrt_ss` is the one-lane form of). The results are the one-track
//! path's bits: the tests compare them bit for bit.

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

use glam::Vec4;

use super::compact::{advance, CompactCache};
use super::lanes::{sin8, store_rotations, store_vectors};
use crate::clip::compact::Compact;
use crate::{JointIndex, Target, Transform};

/// Lanes per block.
const LANES: usize = 8;

/// Eight tracks of one target: each lane's key pair as the interpolation reads it.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub(crate) struct Block {
    /// The pair applies for `x0 <= x < x1` (a lane that was never decoded has `x0 > x1`,
    /// an unused lane applies everywhere).
    x0: [f32; LANES],
    x1: [f32; LANES],
    /// `1 / (x1 - x0)` as the cursor computed it.
    inv: [f32; LANES],
    /// Slerp's angle (0: lerp) and `1 / sin(angle)`.
    angle: [f32; LANES],
    inv_sin: [f32; LANES],
    /// The pair's values, components x, y, z, w (normalised for slerp, as `interpolate`
    /// normalises them).
    a: [[f32; LANES]; 4],
    b: [[f32; LANES]; 4],
    /// All bits set where the lane holds `a` (STEP tracks, and after the last key).
    hold: [f32; LANES],
    /// Tracks and joints of the lanes in use.
    tracks: [u32; LANES],
    joints: [JointIndex; LANES],
    count: u8,
    target: Target,
}

// Every row at a multiple of 32 bytes of the 32-byte aligned block: what `load`'s aligned
// loads rely on.
const _: () = {
    use std::mem::{align_of, offset_of};
    assert!(align_of::<Block>() == 32);
    assert!(offset_of!(Block, x0) % 32 == 0);
    assert!(offset_of!(Block, x1) % 32 == 0);
    assert!(offset_of!(Block, inv) % 32 == 0);
    assert!(offset_of!(Block, angle) % 32 == 0);
    assert!(offset_of!(Block, inv_sin) % 32 == 0);
    assert!(offset_of!(Block, a) % 32 == 0);
    assert!(offset_of!(Block, b) % 32 == 0);
    assert!(offset_of!(Block, hold) % 32 == 0);
};

/// Per-character blocks of a compact clip's tracks, inside [`CompactCache`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Hot {
    blocks: Vec<Block>,
}

impl Hot {
    /// Notes the blocks' memory (for [`crate::crowd`]'s prefetching).
    pub fn note_blocks(&self, r: &mut crate::play::crowd::Regions) {
        r.push(&self.blocks);
    }

    /// Blocks for `c`'s tracks, grouped by target, every lane due for decoding.
    ///
    /// Allocates only where `c` needs more blocks than the cache held (rebinding, which the
    /// animator does at every play, must not allocate).
    pub fn reset(&mut self, c: &Compact) {
        self.blocks.clear();
        for target in [Target::Rotation, Target::Translation, Target::Scale] {
            let mut tracks =
                (0..c.tracks.len() as u32).filter(|&i| c.tracks[i as usize].target == target);
            loop {
                let mut chunk = [0u32; LANES];
                let mut count = 0;
                for (slot, i) in chunk.iter_mut().zip(tracks.by_ref()) {
                    *slot = i;
                    count += 1;
                }
                if count == 0 {
                    break;
                }
                let chunk = &chunk[..count];
                let mut b = Block {
                    // Unused lanes apply everywhere and hold zeros.
                    x0: [f32::NEG_INFINITY; LANES],
                    x1: [f32::INFINITY; LANES],
                    inv: [0.0; LANES],
                    angle: [0.0; LANES],
                    inv_sin: [0.0; LANES],
                    a: [[0.0; LANES]; 4],
                    b: [[0.0; LANES]; 4],
                    hold: [f32::from_bits(!0); LANES],
                    tracks: [0; LANES],
                    joints: [0; LANES],
                    count: chunk.len() as u8,
                    target,
                };
                for (lane, &i) in chunk.iter().enumerate() {
                    // Due: no x lies in [+inf, -inf).
                    b.x0[lane] = f32::INFINITY;
                    b.x1[lane] = f32::NEG_INFINITY;
                    b.tracks[lane] = i;
                    b.joints[lane] = c.tracks[i as usize].joint;
                }
                self.blocks.push(b);
            }
        }
    }
}

/// Copies track `i`'s cursor into lane `lane` of block `block`.
#[inline(always)]
fn set_lane(c: &Compact, cache: &mut CompactCache, block: usize, lane: usize, i: usize) {
    let p = &cache.cursors[i];
    let tr = &c.tracks[i];
    let b = &mut cache.hot.blocks[block];
    b.x0[lane] = p.x0;
    b.x1[lane] = p.x1;
    b.inv[lane] = p.inv;
    b.angle[lane] = p.slerp.angle;
    b.inv_sin[lane] = p.slerp.inv_sin;
    let (a, v) = if p.slerp.is_slerp() {
        (p.v0.normalize_or(Vec4::W), p.v1.normalize_or(Vec4::W))
    } else {
        (p.v0, p.v1)
    };
    for k in 0..4 {
        b.a[k][lane] = a[k];
        b.b[k][lane] = v[k];
    }
    let hold = tr.step || p.x1 == f32::INFINITY;
    b.hold[lane] = if hold { f32::from_bits(!0) } else { 0.0 };
}

/// [`super::compact::sample_tracks_scalar`] eight tracks at a time, with the same results.
///
/// # Safety
/// The CPU must support AVX. `cache` must have been reset for `c` (its blocks hold `c`'s
/// tracks), and `pose` must hold every joint a track of `c` animates.
#[target_feature(enable = "avx")]
pub(super) unsafe fn sample_tracks(
    c: &Compact,
    t_from_start: f32,
    cache: &mut CompactCache,
    pose: &mut [Transform],
) {
    debug_assert_eq!(
        cache.cursors.len(),
        c.tracks.len(),
        "cache not reset for the clip"
    );
    let x = c.pos_of(t_from_start);
    let xv = _mm256_set1_ps(x);
    for bi in 0..cache.hot.blocks.len() {
        let b = &cache.hot.blocks[bi];
        // Lanes whose pair no longer holds x (ordered compares: NaN is outside).
        let inside = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_GE_OQ>(xv, load(&b.x0)),
            _mm256_cmp_ps::<_CMP_LT_OQ>(xv, load(&b.x1)),
        );
        let mut due = !(_mm256_movemask_ps(inside) as u32) & ((1u32 << b.count) - 1);
        let tracks = b.tracks;
        while due != 0 {
            let lane = due.trailing_zeros() as usize;
            due &= due - 1;
            let i = tracks[lane] as usize;
            advance(c, cache, i, x);
            set_lane(c, cache, bi, lane, i);
        }
        let b = &cache.hot.blocks[bi];
        let v = interpolate8(b, xv);
        let (joints, lanes) = (&b.joints, ((1u32 << b.count) - 1) as u8);
        match b.target {
            Target::Rotation => store_rotations(joints, lanes, normalize8(v), pose),
            Target::Translation => store_vectors(joints, lanes, [v[0], v[1], v[2]], pose, |t| {
                &mut t.translation
            }),
            Target::Scale => {
                store_vectors(joints, lanes, [v[0], v[1], v[2]], pose, |t| &mut t.scale)
            }
        }
    }
}

/// `compact::value` on eight lanes: the position in the pair clamped to 0..=1, then the
/// lerp, the slerp or the held key, per lane.
#[inline(always)]
unsafe fn interpolate8(b: &Block, xv: __m256) -> [__m256; 4] {
    let one = _mm256_set1_ps(1.0);
    // `compact::unit_span`: `max` then `min`, a NaN giving 0 as `f32::max` gives it.
    let t = _mm256_mul_ps(_mm256_sub_ps(xv, load(&b.x0)), load(&b.inv));
    let u = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), one);
    let angle = load(&b.angle);
    let inv_sin = load(&b.inv_sin);
    let w0 = _mm256_mul_ps(
        sin_0_pi8(_mm256_mul_ps(_mm256_sub_ps(one, u), angle)),
        inv_sin,
    );
    let w1 = _mm256_mul_ps(sin_0_pi8(_mm256_mul_ps(u, angle)), inv_sin);
    let slerp = _mm256_cmp_ps::<_CMP_GT_OQ>(angle, _mm256_setzero_ps());
    let hold = load(&b.hold);
    let mut out = [_mm256_setzero_ps(); 4];
    for (k, o) in out.iter_mut().enumerate() {
        let a = load(&b.a[k]);
        let v = load(&b.b[k]);
        let lerp = _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(v, a), u));
        let arc = _mm256_add_ps(_mm256_mul_ps(a, w0), _mm256_mul_ps(v, w1));
        *o = _mm256_blendv_ps(_mm256_blendv_ps(lerp, arc, slerp), a, hold);
    }
    out
}

/// A block's row (aligned: `Block` is).
///
/// (No closures in these helpers: a closure does not take on its caller's AVX, and the
/// intrinsics in it would become calls.)
#[inline(always)]
unsafe fn load(r: &[f32; LANES]) -> __m256 {
    // SAFETY: eight f32 at the start of a row of a 32-byte aligned `Block`, whose rows are
    // 32 bytes each.
    _mm256_load_ps(r.as_ptr())
}

/// `compact::sin_0_pi` on eight lanes: `x` folded into `[0, pi/2]`, then the polynomial.
#[inline(always)]
pub(super) unsafe fn sin_0_pi8(x: __m256) -> __m256 {
    let past = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(std::f32::consts::FRAC_PI_2));
    let folded = _mm256_sub_ps(_mm256_set1_ps(std::f32::consts::PI), x);
    sin8(_mm256_blendv_ps(x, folded, past))
}

/// `compact::write`'s rotation on eight lanes: `v * inv_sqrt(|v|²)` where `|v|²` is a
/// positive normal float, else the identity.
#[inline(always)]
pub(super) unsafe fn normalize8(v: [__m256; 4]) -> [__m256; 4] {
    let l = _mm256_add_ps(
        _mm256_add_ps(_mm256_mul_ps(v[0], v[0]), _mm256_mul_ps(v[2], v[2])),
        _mm256_add_ps(_mm256_mul_ps(v[1], v[1]), _mm256_mul_ps(v[3], v[3])),
    );
    let ok = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_GE_OQ>(l, _mm256_set1_ps(f32::MIN_POSITIVE)),
        _mm256_cmp_ps::<_CMP_LE_OQ>(l, _mm256_set1_ps(f32::MAX)),
    );
    // `y * (1.5 - 0.5 * x * y * y)`, left to right as `transform::inv_sqrt`.
    let y = _mm256_rsqrt_ps(l);
    let half_x = _mm256_mul_ps(_mm256_set1_ps(0.5), l);
    let r = _mm256_mul_ps(
        y,
        _mm256_sub_ps(
            _mm256_set1_ps(1.5),
            _mm256_mul_ps(_mm256_mul_ps(half_x, y), y),
        ),
    );
    let zero = _mm256_setzero_ps();
    [
        _mm256_blendv_ps(zero, _mm256_mul_ps(v[0], r), ok),
        _mm256_blendv_ps(zero, _mm256_mul_ps(v[1], r), ok),
        _mm256_blendv_ps(zero, _mm256_mul_ps(v[2], r), ok),
        _mm256_blendv_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(v[3], r), ok),
    ]
}

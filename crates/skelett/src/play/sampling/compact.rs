//! Decoding compact tracks (format: `clip/compact.rs`): a decoder per track that walks a
//! segment's bit stream forward, the cursors a [`crate::SamplingCache`] keeps per track so
//! that forward playback only interpolates, and the interpolation of decoded keys (lerp, and
//! nlerp or slerp for rotations by how far apart the keys are) that the encoder also uses
//! to measure its error.
//!
//! A cursor holds the key pair around the last time and up to `AHEAD` keys decoded after
//! it, in one run: playing forward, a track decodes eight keys every eighth time it passes a
//! key. Where the CPU has AVX, `compact_avx.rs` tests and interpolates the pairs eight tracks
//! at a time; `sample_tracks_scalar` does it one track at a time with the same bits.

use glam::{IVec4, Quat, Vec4};

use crate::clip::compact::*;
use crate::{JointIndex, Target, Transform};

/// A decoded key: its frame and integers, with what dequantising them needs from its
/// segment's header.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Key {
    pub frame: u32,
    pub q: [i32; 4],
    pub drop: u8,
    pub negative: bool,
}

impl Key {
    #[inline(always)]
    pub(crate) fn value(&self, track: &CompactTrack) -> Vec4 {
        track.dequantize(self.q, self.drop, self.negative)
    }
}

/// Decodes one track's keys in one segment, in order, as integers. Everything is kept in
/// lane order (x, y, z, w), a dropped component being a lane of width 0: the stream stores
/// components in lane order, so reading four lanes reads the same bits.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SegDecoder {
    /// Bit position of the next thing to read.
    pos: u32,
    /// Keyed frames still to come, as bits (bit i: frame `first + 1 + i`); for a dense
    /// segment every frame.
    mask: u32,
    /// First frame of the segment.
    first: u32,
    /// The last two keys decoded (`q1` the latest).
    q1: IVec4,
    q0: IVec4,
    /// The largest integer per lane.
    hi: IVec4,
    /// Bits of an absolute value, and of a residual, per lane (0 for a dropped lane).
    abs_bits: [u32; 4],
    widths: [u32; 4],
    /// Bits of one key's residuals (the sum of `widths`).
    key_bits: u32,
    order2: bool,
    drop: u8,
    negative: bool,
    /// Keys decoded so far in this segment.
    count: u32,
}

impl SegDecoder {
    /// Starts decoding `track` in segment `s` at `pos` (its header); returns the decoder and
    /// the segment's first key.
    #[inline(always)]
    pub fn start(c: &Compact, track: &CompactTrack, s: u32, pos: u32) -> (Self, Key) {
        let (h, mask, mut p) = read_start(c, track, s, pos);
        let (lanes, stored) = stored(h.drop);
        let mut abs_bits = [0u32; 4];
        let mut widths = [0u32; 4];
        for k in 0..stored {
            abs_bits[lanes[k]] = u32::from(track.bits[lanes[k]]);
            widths[lanes[k]] = u32::from(h.widths[k]);
        }
        let q = read_lanes(&c.data, &mut p, abs_bits);
        let d = Self {
            pos: p,
            mask,
            first: s * SEG_LEN,
            q1: q,
            q0: q,
            hi: IVec4::from_array(track.bits.map(|b| ((1u64 << b) - 1) as i32)),
            abs_bits,
            widths,
            key_bits: widths.iter().sum(),
            order2: h.order2,
            drop: h.drop,
            negative: h.negative,
            count: 1,
        };
        let key = Key {
            frame: s * SEG_LEN,
            q: q.to_array(),
            drop: h.drop,
            negative: h.negative,
        };
        (d, key)
    }

    /// The next key of the segment, or `None` after its last.
    #[inline(always)]
    pub fn next(&mut self, c: &Compact) -> Option<Key> {
        if self.mask == 0 {
            return None;
        }
        let i = self.mask.trailing_zeros();
        self.mask &= self.mask - 1;
        let q = self.step(&c.data);
        Some(Key {
            frame: self.first + 1 + i,
            q: q.to_array(),
            drop: self.drop,
            negative: self.negative,
        })
    }

    /// The frame of the key [`Self::next`] returns next (`None` after the segment's last).
    #[inline(always)]
    pub fn next_frame(&self) -> Option<u32> {
        (self.mask != 0).then(|| self.first + 1 + self.mask.trailing_zeros())
    }

    /// Steps over the keys at frames up to `frame` but the last of them, as integers only:
    /// a seek's short way to the pair around its time ([`Self::next`] then returns that last
    /// key, and the one after it).
    #[inline(always)]
    pub fn skip_before(&mut self, c: &Compact, frame: u32) {
        let below = frame.saturating_sub(self.first);
        // Bit i is frame first + 1 + i: the keys at frames up to `frame` are bits below.
        let keys = if below >= 32 {
            self.mask
        } else {
            self.mask & ((1u32 << below) - 1)
        };
        for _ in 1..keys.count_ones() {
            self.mask &= self.mask - 1;
            self.step(&c.data);
        }
    }

    /// Decodes the next key's integers (the caller has taken its bit from `mask`).
    #[inline(always)]
    fn step(&mut self, data: &[u8]) -> IVec4 {
        let q = if self.order2 && self.count == 1 {
            // The second anchor, absolute.
            read_lanes(data, &mut self.pos, self.abs_bits)
        } else {
            // Loops, not `array::map`: its closure compiled to a call per key here.
            let mut r = [0i32; 4];
            if self.key_bits <= 57 {
                // One load for the whole key (widths of a few bits each: nearly always).
                let mut word = load_bits(data, self.pos);
                self.pos += self.key_bits;
                for (r, &w) in r.iter_mut().zip(&self.widths) {
                    *r = unzigzag((word & ((1u64 << w) - 1)) as u32);
                    word >>= w;
                }
            } else {
                for (r, &w) in r.iter_mut().zip(&self.widths) {
                    *r = unzigzag(read_bits(data, self.pos, w));
                    self.pos += w;
                }
            }
            let r = IVec4::from_array(r);
            let pred = if self.order2 {
                (self.q1 * 2) - self.q0
            } else {
                self.q1
            };
            (pred + r).clamp(IVec4::ZERO, self.hi)
        };
        self.q0 = self.q1;
        self.q1 = q;
        self.count += 1;
        q
    }
}

/// Keys a cursor decodes ahead in one go when playback moves forward. Decoding a run of keys
/// in a tight loop costs far less per key than one key per call (the decoder's state stays
/// in registers and its branches predictable), at `AHEAD * 20` bytes per track.
const AHEAD: usize = 8;

/// Per character and track: the key pair around the last sampled time (frame positions and
/// values, with their interpolation), the keys decoded after it, and the decoder after those.
///
/// In this order (`repr(C)`): what every sample reads first, the decoder then, the keys
/// ahead last, so that a seek, which decodes one or two keys, touches four of its six cache
/// lines.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct TrackCursor {
    /// Frame positions of the pair (`x1 = +inf` after the last key).
    pub(super) x0: f32,
    pub(super) x1: f32,
    pub(super) inv: f32,
    /// Keys decoded after the pair: entries `head..len` of `ahead_x` (frame positions) and
    /// `ahead_v` (values).
    head: u8,
    len: u8,
    /// Keys the last move forward passed: above two, the cursor decodes no more ahead than
    /// the pair needs and steps over the others as integers.
    stride: u8,
    /// How to interpolate between `v0` and `v1` (the AVX sampler reads the pair too).
    pub(super) slerp: PairSlerp,
    /// Segment whose keys `dec` reads (`u32::MAX`: none yet); its last key returned, the next
    /// is segment `seg + 1`'s anchor.
    seg: u32,
    pub(super) v0: Vec4,
    pub(super) v1: Vec4,
    dec: SegDecoder,
    ahead_x: [f32; AHEAD],
    ahead_v: [Vec4; AHEAD],
}

impl Default for TrackCursor {
    fn default() -> Self {
        Self {
            x0: f32::INFINITY,
            x1: f32::NEG_INFINITY,
            inv: 0.0,
            v0: Vec4::ZERO,
            v1: Vec4::ZERO,
            slerp: PairSlerp::default(),
            head: 0,
            len: 0,
            stride: 0,
            ahead_x: [0.0; AHEAD],
            ahead_v: [Vec4::ZERO; AHEAD],
            seg: u32::MAX,
            dec: SegDecoder::default(),
        }
    }
}

/// Track offsets of one segment, kept by the sampling cache.
#[derive(Clone, Debug, Default)]
pub(crate) struct OffsetTable {
    pub seg: u32,
    pub offsets: Vec<u32>,
}

/// Per-character state for compact clips (inside [`crate::SamplingCache`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct CompactCache {
    pub cursors: Vec<TrackCursor>,
    /// Two segments' track offsets (the current segment and the next).
    pub tables: [OffsetTable; 2],
    /// The cursors' pairs in blocks of eight tracks, for the AVX sampler.
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    pub hot: super::compact_avx::Hot,
}

impl CompactCache {
    /// Notes the heap blocks a streamed sample reads and writes (empty for other clips).
    pub fn note_blocks(&self, r: &mut crate::play::crowd::Regions) {
        r.push(&self.cursors);
        r.push(&self.tables[0].offsets);
        r.push(&self.tables[1].offsets);
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        self.hot.note_blocks(r);
    }

    pub fn reset(&mut self, c: &Compact) {
        let n = c.tracks.len();
        self.cursors.clear();
        self.cursors.resize(n, TrackCursor::default());
        for t in &mut self.tables {
            t.seg = u32::MAX;
            t.offsets.clear();
            t.offsets.resize(n, 0);
        }
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        self.hot.reset(c);
    }
}

/// The nlerp thresholds an encoder may choose ([`CompactTrack::nlerp_dot`]), loosest (and
/// cheapest to play) first: about 11.5, 1.6 and 0.16 degrees between keys, then always slerp.
pub const NLERP_DOTS: [f32; 4] = [0.995, 0.9999, 0.999_999, 2.0];
// Loosest first, strictly: the encoder's planning skips a threshold that would interpolate
// every key pair as the one before did, which holds only for rising thresholds.
const _: () = {
    let mut i = 1;
    while i < NLERP_DOTS.len() {
        assert!(NLERP_DOTS[i - 1] < NLERP_DOTS[i]);
        i += 1;
    }
};

/// How a key pair is interpolated: `angle == 0` nlerp, else slerp over `angle` (the angle
/// between the keys as 4-vectors, up to pi: keys are not re-aligned, the encoder stored
/// them with the source's signs so that the path is the source's).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PairSlerp {
    pub(crate) angle: f32,
    pub(crate) inv_sin: f32,
}

impl PairSlerp {
    /// `true` for slerp, `false` for nlerp (or a vector track's linear interpolation).
    #[inline(always)]
    pub(crate) fn is_slerp(&self) -> bool {
        self.angle > 0.0
    }
}

/// `acos(d)` for `d` in `[0, 1]`, to about 2e-7 (Abramowitz and Stegun 4.4.46, evaluated
/// in f32): a square root and seven multiply-adds, an order of magnitude cheaper than
/// `atan2`.
#[inline(always)]
pub(crate) fn acos_0_1(d: f32) -> f32 {
    const A: [f32; 8] = ACOS_COEF;
    let mut p = A[7];
    for &a in A[..7].iter().rev() {
        p = p * d + a;
    }
    (1.0 - d).max(0.0).sqrt() * p
}

/// [`acos_0_1`]'s coefficients (`compact_seek_avx.rs` evaluates it on eight lanes).
pub(super) const ACOS_COEF: [f32; 8] = [
    std::f32::consts::FRAC_PI_2,
    -0.214_598_8,
    0.088_978_99,
    -0.050_174_305,
    0.030_891_88,
    -0.017_088_126,
    0.006_670_09,
    -0.001_262_491_1,
];

/// `sin(x)` for `x` in `[0, pi]`, from the `[0, pi/2]` polynomial by symmetry.
#[inline(always)]
pub(crate) fn sin_0_pi(x: f32) -> f32 {
    let x = if x > std::f32::consts::FRAC_PI_2 {
        std::f32::consts::PI - x
    } else {
        x
    };
    crate::transform::sin_0_half_pi(x)
}

/// [`sin_0_pi`] on four lanes: the same operations in the same order, so each lane equals the
/// scalar result bit for bit (the encoder's four-lane key pair tests, `compress::encode`).
#[inline(always)]
pub(crate) fn sin_0_pi4(x: Vec4) -> Vec4 {
    let past = x.cmpgt(Vec4::splat(std::f32::consts::FRAC_PI_2));
    super::sin4(Vec4::select(past, Vec4::splat(std::f32::consts::PI) - x, x))
}

/// The interpolation a key pair of `track` needs (one function for the encoder and the
/// runtime, so that what the encoder measured is what plays).
#[inline(always)]
pub(crate) fn pair_slerp(track: &CompactTrack, a: Vec4, b: Vec4) -> PairSlerp {
    if track.step || track.target != Target::Rotation {
        return PairSlerp::default();
    }
    // Rotation keys are unit 4-vectors (to f32 precision) as dequantised.
    let d = a.dot(b);
    if d >= track.nlerp_dot {
        return PairSlerp::default();
    }
    slerp_of_dot(d)
}

/// [`pair_slerp`] past its nlerp test: the slerp of two unit 4-vectors whose dot product is
/// `d` (shared with the lanes layout's sampler, `compact_lanes.rs`).
#[inline(always)]
pub(crate) fn slerp_of_dot(d: f32) -> PairSlerp {
    let d = d.clamp(-1.0, 1.0);
    let angle = if d >= 0.0 {
        acos_0_1(d)
    } else {
        std::f32::consts::PI - acos_0_1(-d)
    }
    .max(1e-3);
    PairSlerp {
        angle,
        inv_sin: 1.0 / sin_0_pi(angle).max(1e-6),
    }
}

/// Interpolates a key pair at `u`: linear, or slerp where the pair needs it (rotations are
/// normalised by the caller).
#[inline(always)]
pub(crate) fn interpolate(a: Vec4, b: Vec4, seg: PairSlerp, u: f32) -> Vec4 {
    if seg.angle > 0.0 {
        let a = a.normalize_or(Vec4::W);
        let b = b.normalize_or(Vec4::W);
        let w0 = sin_0_pi((1.0 - u) * seg.angle) * seg.inv_sin;
        let w1 = sin_0_pi(u * seg.angle) * seg.inv_sin;
        a * w0 + b * w1
    } else {
        a + (b - a) * u
    }
}

/// `1 / span` for spans of whole frames (the common case), else the division.
#[inline(always)]
pub(crate) fn reciprocal(span: f32) -> f32 {
    const R: [f32; SEG_LEN as usize + 1] = {
        let mut r = [0f32; SEG_LEN as usize + 1];
        let mut i = 1;
        while i <= SEG_LEN as usize {
            r[i] = 1.0 / i as f32;
            i += 1;
        }
        r
    };
    let k = span as usize;
    if k as f32 == span && k <= SEG_LEN as usize {
        R[k]
    } else {
        1.0 / span
    }
}

/// Moves track `i`'s cursor so that `x0 <= x < x1` (or past the last key): from the keys
/// decoded ahead, decoding more when they run out. A seek (backward, first use, or more than
/// a segment past the one the decoder reads) restarts from the anchor of `x`'s segment,
/// stepping over the keys before `x` as integers. Moving forward, a cursor that passed at
/// most two keys last time decodes runs of `AHEAD`; one that passed more (fast playback, a
/// low update rate) decodes only the pair and steps over the keys before it as integers.
#[inline(always)]
pub(super) fn advance(c: &Compact, cache: &mut CompactCache, i: usize, x: f32) {
    let tr = &c.tracks[i];
    let seg_x = ((x as u32) / SEG_LEN).min(c.segment_count() - 1);
    let CompactCache {
        cursors, tables, ..
    } = cache;
    let cur = &mut cursors[i];
    let mut want = AHEAD;
    if x < cur.x0 || cur.seg == u32::MAX || seg_x > cur.seg + 1 {
        let (dec, key) = SegDecoder::start(c, tr, seg_x, offset(tables, c, seg_x, i));
        cur.seg = seg_x;
        cur.dec = dec;
        // Keys at whole frames up to x but the last are passed as integers; the anchor is
        // the pair's upper key until the loop below moves past it.
        cur.dec.skip_before(c, x as u32);
        cur.x1 = c.frame_pos(key.frame);
        // The anchor's value is needed only where no later key of the segment is at or
        // before x (else the loop below moves two keys past it).
        let passed = cur.dec.next_frame().is_some_and(|f| c.frame_pos(f) <= x);
        cur.v1 = if passed { Vec4::ZERO } else { key.value(tr) };
        cur.x0 = cur.x1;
        cur.v0 = cur.v1;
        cur.head = 0;
        cur.len = 0;
        // The key at or before x (where it is not the anchor) and the one after it.
        want = if passed { 2 } else { 1 };
    }
    let mut past_end = false;
    let mut popped = 0u8;
    while x >= cur.x1 {
        if cur.head == cur.len {
            if cur.seg == seg_x {
                // Keys of this segment up to x but the last are not needed: as integers.
                cur.dec.skip_before(c, x as u32);
            }
            let want = if cur.stride > 2 { want.min(2) } else { want };
            fill(c, tables, i, cur, seg_x + 1, want);
            if cur.len == 0 {
                past_end = true;
                break;
            }
        }
        popped = popped.saturating_add(1);
        let h = usize::from(cur.head);
        cur.x0 = cur.x1;
        cur.v0 = cur.v1;
        cur.x1 = cur.ahead_x[h];
        cur.v1 = cur.ahead_v[h];
        cur.head += 1;
    }
    cur.stride = popped;
    if past_end {
        // Hold the last key.
        cur.v0 = cur.v1;
        cur.x0 = cur.x1;
        cur.x1 = f32::INFINITY;
        cur.inv = 0.0;
        cur.slerp = PairSlerp::default();
    } else {
        cur.inv = reciprocal(cur.x1 - cur.x0);
        cur.slerp = pair_slerp(tr, cur.v0, cur.v1);
    }
}

/// Decodes up to `want` keys of track `i` after those its cursor holds into its `ahead`
/// buffer (which the caller has used up), reading no anchor past segment `last`: no more
/// than the pair around the sampled time needs, so that the offset tables hold two segments.
/// Leaves `len == 0` only after the clip's last key.
#[inline(always)]
fn fill(
    c: &Compact,
    tables: &mut [OffsetTable; 2],
    i: usize,
    cur: &mut TrackCursor,
    last: u32,
    want: usize,
) {
    let tr = &c.tracks[i];
    let mut n = 0;
    while n < want {
        let key = match cur.dec.next(c) {
            Some(k) => k,
            None => {
                let s = cur.seg + 1;
                if s >= c.segment_count() || s > last {
                    break;
                }
                let (dec, key) = SegDecoder::start(c, tr, s, offset(tables, c, s, i));
                cur.dec = dec;
                cur.seg = s;
                key
            }
        };
        cur.ahead_x[n] = c.frame_pos(key.frame);
        cur.ahead_v[n] = key.value(tr);
        n += 1;
    }
    cur.head = 0;
    cur.len = n as u8;
}

/// Where track `i` starts in segment `s`, from the two-segment table (computing it into the
/// older slot if neither holds it).
#[inline]
fn offset(tables: &mut [OffsetTable; 2], c: &Compact, s: u32, i: usize) -> u32 {
    let slot = if tables[0].seg == s {
        0
    } else if tables[1].seg == s {
        1
    } else {
        // Keep the lower segment in slot 0 for forward play (s, s + 1).
        let slot = if tables[0].seg != u32::MAX && tables[0].seg + 1 == s {
            1
        } else {
            0
        };
        tables[slot].seg = s;
        c.track_offsets(s, &mut tables[slot].offsets);
        slot
    };
    tables[slot].offsets[i]
}

/// The value of a track at frame position `x`, from its cursor.
#[inline(always)]
fn value(tr: &CompactTrack, cur: &TrackCursor, x: f32) -> Vec4 {
    if tr.step || cur.x1 == f32::INFINITY {
        return cur.v0;
    }
    let u = unit_span(x - cur.x0, cur.inv);
    interpolate(cur.v0, cur.v1, cur.slerp, u)
}

/// `(dx * inv)` clamped to 0..=1 as `max` then `min`, so that a NaN (a zero `dx` times an
/// infinite `inv`, from a last span below f32's normal range) gives 0 and the key, on every
/// path (`compact_avx.rs` takes the same `max` and `min`).
#[inline(always)]
#[allow(clippy::manual_clamp)]
pub(crate) fn unit_span(dx: f32, inv: f32) -> f32 {
    (dx * inv).max(0.0).min(1.0)
}

#[inline(always)]
pub(super) fn write(tr: &CompactTrack, v: Vec4, out: &mut Transform) {
    match tr.target {
        Target::Rotation => {
            // Interpolated keys are near unit length: the SSE estimate refined by a Newton
            // step (5e-7 relative) instead of a square root and a division.
            // Summed as `compact_avx.rs` sums eight (and as glam's SSE2 dot product does),
            // whatever glam's build.
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

/// Samples every track at `t_from_start` into `pose` (whose static joints the caller set):
/// eight tracks at a time where the CPU has AVX (`compact_avx.rs`), else one at a time, with
/// the same results.
pub(crate) fn sample_tracks(
    c: &Compact,
    t_from_start: f32,
    cache: &mut CompactCache,
    pose: &mut [Transform],
) {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX was just detected; `cache` was reset for `c` (the sampling cache binds
        // it to the clip before every call, and tests reset it), and `pose` holds the clip's
        // joints (checked by the public functions). The tests compare this path with the
        // one-track path bit for bit.
        unsafe { super::compact_avx::sample_tracks(c, t_from_start, cache, pose) };
        return;
    }
    sample_tracks_scalar(c, t_from_start, cache, pose);
}

/// [`sample_tracks`] one track at a time.
pub(crate) fn sample_tracks_scalar(
    c: &Compact,
    t_from_start: f32,
    cache: &mut CompactCache,
    pose: &mut [Transform],
) {
    let x = c.pos_of(t_from_start);
    for i in 0..c.tracks.len() {
        let cur = &cache.cursors[i];
        if !(x >= cur.x0 && x < cur.x1) {
            advance(c, cache, i, x);
        }
        let tr = &c.tracks[i];
        let v = value(tr, &cache.cursors[i], x);
        write(tr, v, &mut pose[tr.joint as usize]);
    }
}

/// Samples track values without a cache: one walk over the segment's headers, then each
/// track decoded from its anchors (what [`sample_tracks`] gives, without allocating). With
/// `only_joint`, only that joint's tracks are decoded, into `pose[0]`.
pub(crate) fn sample_tracks_uncached(
    c: &Compact,
    t_from_start: f32,
    only_joint: Option<JointIndex>,
    pose: &mut [Transform],
) {
    let x = c.pos_of(t_from_start);
    let s = ((x as u32) / SEG_LEN).min(c.segment_count() - 1);
    let has_next = s + 1 < c.segment_count();
    let mut pos = c.segments[s as usize];
    let mut pos_next = if has_next {
        c.segments[s as usize + 1]
    } else {
        0
    };
    for tr in c.tracks.iter() {
        let here = pos;
        let there = pos_next;
        pos += c.track_bits(tr, s, here);
        if has_next {
            pos_next += c.track_bits(tr, s + 1, there);
        }
        if only_joint.is_some_and(|j| j != tr.joint) {
            continue;
        }
        let (mut dec, first) = SegDecoder::start(c, tr, s, here);
        let mut k0 = first;
        let mut k1 = None;
        let mut anchor_next = false;
        loop {
            let k = match dec.next(c) {
                Some(k) => k,
                // After this segment's keys, the next segment's anchor, once.
                None if has_next && !anchor_next => {
                    anchor_next = true;
                    SegDecoder::start(c, tr, s + 1, there).1
                }
                None => break,
            };
            if c.frame_pos(k.frame) <= x {
                // Reached (the next segment's anchor too, when it is the clip's last frame
                // and x is the end: what the cursor holds there).
                k0 = k;
                if anchor_next {
                    break;
                }
            } else {
                k1 = Some(k);
                break;
            }
        }
        let v0 = k0.value(tr);
        let v = match k1 {
            Some(k1) if !tr.step => {
                // As the cursor computes it, bit for bit.
                let (x0, x1) = (c.frame_pos(k0.frame), c.frame_pos(k1.frame));
                let v1 = k1.value(tr);
                let inv = reciprocal(x1 - x0);
                let u = unit_span(x - x0, inv);
                interpolate(v0, v1, pair_slerp(tr, v0, v1), u)
            }
            _ => v0,
        };
        let slot = if only_joint.is_some() {
            0
        } else {
            tr.joint as usize
        };
        write(tr, v, &mut pose[slot]);
    }
}

/// Appends key (`t`, `v`) of `tr` to a decoded channel: times of the last two frames can
/// coincide in f32 only for a last span far below a frame (the later key wins), and a
/// rotation pair more than 180 degrees apart gets its midpoint as a key.
fn push_key(tr: &CompactTrack, times: &mut Vec<f32>, values: &mut Vec<Vec4>, t: f32, v: Vec4) {
    if times.last().is_some_and(|&last| t <= last) {
        times.pop();
        values.pop();
    }
    if let (Some(&t0), Some(&v0)) = (times.last(), values.last()) {
        if tr.target == Target::Rotation && !tr.step && v0.dot(v) < 0.0 {
            let mid = interpolate(v0, v, pair_slerp(tr, v0, v), 0.5);
            let tm = 0.5 * (t0 + t);
            if tm > t0 && tm < t {
                times.push(tm);
                values.push(mid.normalize_or(Vec4::W));
            }
        }
    }
    times.push(t);
    values.push(v);
}

impl Compact {
    /// Every track's stored keys as a LINEAR or STEP channel at the grid's times (joints
    /// named by index), for [`crate::Clip::decompressed`]. A rotation pair more than 180
    /// degrees apart (dot below 0, slerped the long way here) gets its midpoint as a key, so
    /// that a clip that takes the short way between keys follows the same path.
    pub fn decoded_channels(&self, start: f32, duration: f32) -> Vec<crate::RawChannel> {
        let mut pos: Vec<u32> = self.segments.to_vec();
        let mut out = Vec::with_capacity(self.tracks.len());
        for tr in self.tracks.iter() {
            let mut times: Vec<f32> = Vec::new();
            let mut values: Vec<Vec4> = Vec::new();
            let mut push = |t: f32, v: Vec4| push_key(tr, &mut times, &mut values, t, v);
            if let Some(lanes) = &self.lanes {
                // The lanes layout: the track's value at every key of the union timeline.
                let last = lanes.pos.len().saturating_sub(1);
                let found = lanes.blocks.iter().find_map(|b| {
                    let n = b.block.count as usize;
                    let same = b.block.target == tr.target && b.step == tr.step;
                    let l = b.block.joints[..n].iter().position(|&j| j == tr.joint);
                    l.filter(|_| same).map(|l| (b, l))
                });
                if let Some((b, l)) = found {
                    for (k, &x) in lanes.pos.iter().enumerate() {
                        let f = if k == last { self.frames - 1 } else { x as u32 };
                        push(
                            self.frame_time(start, duration, f),
                            lanes.key_value(b, l, k),
                        );
                    }
                }
            }
            for s in 0..self.segment_count() {
                let p = pos[s as usize];
                pos[s as usize] += self.track_bits(tr, s, p);
                if self.layout == CompactLayout::Seek {
                    let seg = super::compact_seek::SeekTrack::open(self, tr, s, p);
                    let (mut mask, mut frame) = (seg.mask, s * SEG_LEN);
                    for k in 0..seg.count {
                        let v = tr.dequantize(
                            seg.key(&self.data, k).to_array(),
                            seg.drop,
                            seg.negative,
                        );
                        push(self.frame_time(start, duration, frame), v);
                        frame = s * SEG_LEN + 1 + mask.trailing_zeros();
                        mask &= mask.wrapping_sub(1);
                    }
                    continue;
                }
                let (mut dec, first) = SegDecoder::start(self, tr, s, p);
                push(
                    self.frame_time(start, duration, first.frame),
                    first.value(tr),
                );
                while let Some(k) = dec.next(self) {
                    push(self.frame_time(start, duration, k.frame), k.value(tr));
                }
            }
            out.push(crate::RawChannel {
                joint: tr.joint.to_string(),
                target: tr.target,
                interpolation: if tr.step {
                    crate::Interpolation::Step
                } else {
                    crate::Interpolation::Linear
                },
                times,
                values: if tr.target == Target::Rotation {
                    crate::RawValues::Quat(
                        values
                            .iter()
                            .map(|v| Quat::from_vec4(v.normalize_or(Vec4::W)))
                            .collect(),
                    )
                } else {
                    crate::RawValues::Vec3(values.iter().map(|v| v.truncate()).collect())
                },
            });
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::compress::encode::{self, Plan, TrackInput};
    use proptest::prelude::*;

    /// Encoded tracks as one compact clip (joint i for input i).
    pub(crate) fn clip_of(
        inputs: &[TrackInput<'_>],
        pos: &[f32],
        frames: u32,
        last_span: f32,
    ) -> Compact {
        let encoded: Vec<_> = inputs
            .iter()
            .filter_map(|i| match encode::plan(i, pos) {
                Plan::Animated(e) => Some(e),
                _ => None,
            })
            .collect();
        let mut bits = encode::Bits::default();
        let mut segments = Vec::new();
        for s in 0..frames.div_ceil(SEG_LEN) as usize {
            segments.push(bits.len as u32);
            for e in &encoded {
                bits.append(&e.segments[s]);
            }
        }
        Compact::new(
            CompactLayout::Stream,
            30.0,
            frames,
            last_span,
            encoded.iter().map(|e| e.track).collect(),
            Vec::new(),
            segments,
            bits.into_padded_bytes(),
        )
    }

    pub(crate) fn values(target: Target, seed: &[f32], frames: usize) -> Vec<Vec4> {
        (0..frames)
            .map(|f| {
                let t = f as f32 / 30.0;
                let wobble = |k: usize| seed[k % seed.len()] * (t * (1.0 + k as f32)).sin();
                match target {
                    Target::Rotation => Vec4::from(Quat::from_euler(
                        glam::EulerRot::XYZ,
                        wobble(0) * 3.0,
                        wobble(1),
                        wobble(2) * 2.0,
                    )),
                    _ => Vec4::new(wobble(0) * 50.0, wobble(1) * 5.0, wobble(2), 0.0),
                }
            })
            .collect()
    }

    pub(crate) fn get(target: Target, t: &Transform) -> Vec4 {
        match target {
            Target::Rotation => Vec4::from(t.rotation),
            Target::Translation => t.translation.extend(0.0),
            Target::Scale => t.scale.extend(0.0),
        }
    }

    /// A cache's memory per track stays what the README states (400 bytes: a 336-byte
    /// cursor and an eighth of a 512-byte block): the keys decoded ahead are bounded by
    /// `AHEAD`.
    #[test]
    fn cursor_memory_per_track_is_bounded() {
        let cursor = std::mem::size_of::<TrackCursor>();
        assert!(cursor <= 336, "a track cursor takes {cursor} bytes");
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        {
            let block = std::mem::size_of::<super::super::compact_avx::Block>();
            assert!(block <= 512, "a block of eight tracks takes {block} bytes");
        }
    }

    #[test]
    fn acos_and_sine_polynomials_are_accurate() {
        for i in 0..=10_000 {
            let d = i as f32 / 10_000.0;
            let want = (d as f64).acos();
            assert!((acos_0_1(d) as f64 - want).abs() < 4e-7, "acos({d})");
            let x = std::f32::consts::PI * d;
            assert!(
                (sin_0_pi(x) as f64 - (x as f64).sin()).abs() < 4e-7,
                "sin({x})"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Every frame of every track decodes within the tolerance the encoder was given,
        /// and sampling with a cache (forward, backward, jumping) equals sampling without
        /// one, bit for bit.
        #[test]
        fn decoding_meets_the_tolerance_and_cached_equals_uncached(
            frames in 2usize..200,
            kinds in proptest::collection::vec((0u8..3, any::<bool>()), 1..20),
            last_span in prop_oneof![Just(1.0f32), 0.05f32..1.0],
            seed in proptest::collection::vec(-1.0f32..1.0, 3..9),
            tol in 1e-5f32..1e-1,
            order in proptest::collection::vec(0.0f32..1.0, 1..60),
        ) {
            let tracks: Vec<(Target, bool, Vec<Vec4>)> = kinds
                .iter()
                .enumerate()
                .map(|(i, &(kind, step))| {
                    let target = [Target::Rotation, Target::Translation, Target::Scale][usize::from(kind)];
                    (target, step, values(target, &seed[i % seed.len()..], frames))
                })
                .collect();
            let tols = vec![tol; frames];
            // The last frame `last_span` after the one before.
            let pos: Vec<f32> = (0..frames)
                .map(|f| if f + 1 == frames { (frames - 2) as f32 + last_span } else { f as f32 })
                .collect();
            // Values of the source between frames: the frames' interpolation (held for STEP).
            let mids: Vec<Vec<Vec4>> = tracks
                .iter()
                .map(|(target, step, raw)| {
                    raw.windows(2)
                        .flat_map(|w| {
                            encode::SUB_AT.map(|u| match (step, target) {
                                (true, _) => w[0],
                                (false, Target::Rotation) => {
                                    let b = if w[0].dot(w[1]) < 0.0 { -w[1] } else { w[1] };
                                    Vec4::from(Quat::from_vec4(w[0]).slerp(Quat::from_vec4(b), u))
                                }
                                (false, _) => w[0] + (w[1] - w[0]) * u,
                            })
                        })
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
            let c = clip_of(&inputs, &pos, frames as u32, last_span);
            let mut cache = CompactCache::default();
            cache.reset(&c);
            let mut one_track = CompactCache::default();
            one_track.reset(&c);
            let n = tracks.len();
            let mut a = vec![Transform::IDENTITY; n];
            let mut b = vec![Transform::IDENTITY; n];
            let mut d = vec![Transform::IDENTITY; n];
            // The eight-lane path against the one-track path, bit for bit (on a CPU without
            // AVX, or with the `scalar` feature, both are the one-track path).
            let bits = |p: &[Transform], j: usize, target: Target| get(target, &p[j]).to_array().map(f32::to_bits);
            for f in 0..frames {
                let t = f as f32 / 30.0;
                sample_tracks(&c, t, &mut cache, &mut a);
                sample_tracks_uncached(&c, t, None, &mut b);
                sample_tracks_scalar(&c, t, &mut one_track, &mut d);
                for tr in c.tracks.iter() {
                    let j = tr.joint as usize;
                    let (target, _, raw) = &tracks[j];
                    prop_assert_eq!(bits(&a, j, *target), bits(&d, j, *target), "frame {} track {}", f, j);
                    prop_assert_eq!(get(*target, &a[j]), get(*target, &b[j]), "frame {} track {}", f, j);
                    let e = encode::error(*target == Target::Rotation, get(*target, &a[j]), raw[f]);
                    prop_assert!(e <= tol * 1.0001 + 1e-6, "frame {} track {}: error {} > {}", f, j, e, tol);
                }
            }
            for &u in &order {
                let t = u * (frames as f32 + 2.0) / 30.0 - 1.0 / 30.0;
                sample_tracks(&c, t, &mut cache, &mut a);
                sample_tracks_uncached(&c, t, None, &mut b);
                sample_tracks_scalar(&c, t, &mut one_track, &mut d);
                for tr in c.tracks.iter() {
                    let j = tr.joint as usize;
                    prop_assert_eq!(bits(&a, j, tr.target), bits(&d, j, tr.target), "t {} track {}", t, j);
                    prop_assert_eq!(get(tr.target, &a[j]), get(tr.target, &b[j]), "t {} track {}", t, j);
                }
            }
        }
    }
}

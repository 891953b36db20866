//! Sampling compact clips in the seekable layout ([`CompactLayout::Seek`], format in
//! `clip/compact.rs`): stateless, one pass over the sampled segment's tracks. Each track's
//! header gives where its keys are; the mask's population count below the sampled frame
//! gives the index of the key at or before it, and the key after it is the next one, or the
//! next segment's first (that segment's tracks are walked only as far as a track needs).
//! Tracks are located eight at a time (their two keys read directly, as integers), then
//! dequantised and interpolated with the functions the streamed layout's decoder uses
//! (`compact.rs`), or with the same operations on eight AVX lanes (`compact_seek_avx.rs`),
//! so both layouts sample the same bits.
//!
//! Input: a [`Compact`] from `build/compress/seek.rs` or a file; output: the tracks' joints of
//! a pose, as `compact::sample_tracks` writes them.
//!
//! [`CompactLayout::Seek`]: crate::compress::CompactLayout::Seek

use glam::{IVec4, Vec4};

use super::compact::{interpolate, pair_slerp, reciprocal, unit_span, write};
use crate::clip::compact::*;
use crate::{JointIndex, Transform};

/// One track's stream in one segment of a seekable clip, its header read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SeekTrack {
    /// The stream's length in bits.
    pub bits: u32,
    /// Keys in the segment (the first at its frame 0).
    pub count: u32,
    /// Keyed frames after the first: bit i is frame i + 1 of the segment.
    pub mask: u32,
    /// Where key 0 starts.
    keys_pos: u32,
    /// The segment's smallest integers, per lane.
    base: IVec4,
    /// Bits of one key's offsets from `base`, per lane (0 for a dropped lane).
    widths: [u32; 4],
    /// Their sum.
    key_bits: u32,
    /// The largest integer per lane (a broken stream stays within the quantisation).
    hi: IVec4,
    pub drop: u8,
    pub negative: bool,
}

impl SeekTrack {
    /// Reads `track`'s header in segment `s` at `pos`.
    #[inline(always)]
    pub fn open(c: &Compact, track: &CompactTrack, s: u32, pos: u32) -> Self {
        let (h, mask, mut p) = read_start(c, track, s, pos);
        // The base, where the streamed layout has its first key.
        let (lanes, n) = stored(h.drop);
        let mut base = [0i32; 4];
        let mut widths = [0u32; 4];
        for k in 0..n {
            let b = u32::from(track.bits[lanes[k]]);
            base[lanes[k]] = read_bits(&c.data, p, b) as i32;
            p += b;
            widths[lanes[k]] = u32::from(h.widths[k]);
        }
        let base = IVec4::from_array(base);
        let key_bits = widths.iter().sum::<u32>();
        let count = 1 + mask.count_ones();
        Self {
            bits: p - pos + count * key_bits,
            count,
            mask,
            keys_pos: p,
            base,
            widths,
            key_bits,
            hi: IVec4::from_array(track.bits.map(|b| ((1u64 << b) - 1) as i32)),
            drop: h.drop,
            negative: h.negative,
        }
    }

    /// The integers of key `k` (in lane order).
    #[inline(always)]
    pub fn key(&self, data: &[u8], k: u32) -> IVec4 {
        let mut pos = self.keys_pos + k * self.key_bits;
        let mut r = [0i32; 4];
        if self.key_bits <= 57 {
            let mut word = load_bits(data, pos);
            for (r, &w) in r.iter_mut().zip(&self.widths) {
                *r = (word & ((1u64 << w) - 1)) as i32;
                word >>= w;
            }
        } else {
            for (r, &w) in r.iter_mut().zip(&self.widths) {
                *r = read_bits(data, pos, w) as i32;
                pos += w;
            }
        }
        (self.base + IVec4::from_array(r)).min(self.hi)
    }
}

/// Tracks located, up to [`BATCH`], as integers (the first phase of [`sample_tracks`]), in
/// rows of lanes so that the AVX phase (`compact_seek_avx.rs`) loads them as vectors.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub(super) struct Located {
    /// The keys' integers, per component (lane order x, y, z, w).
    pub q0: [[i32; BATCH]; 4],
    pub q1: [[i32; BATCH]; 4],
    /// Each key's dropped component (0..=3, 4: none; 3 for vectors), as a float.
    pub drop0: [f32; BATCH],
    pub drop1: [f32; BATCH],
    /// The dropped component's sign: -0.0 where negative, else 0.0 (its bit).
    pub sign0: [f32; BATCH],
    pub sign1: [f32; BATCH],
    /// The keys' frame positions.
    pub x0: [f32; BATCH],
    pub x1: [f32; BATCH],
    /// 0: interpolate; 1: key 0 holds; 2: key 1 holds.
    pub hold: [f32; BATCH],
    pub track: [u32; BATCH],
}

impl Default for Located {
    fn default() -> Self {
        Located {
            q0: [[0; BATCH]; 4],
            q1: [[0; BATCH]; 4],
            drop0: [3.0; BATCH],
            drop1: [3.0; BATCH],
            sign0: [0.0; BATCH],
            sign1: [0.0; BATCH],
            x0: [0.0; BATCH],
            x1: [1.0; BATCH],
            hold: [1.0; BATCH],
            track: [0; BATCH],
        }
    }
}

impl Located {
    #[inline(always)]
    fn set_key(&mut self, lane: usize, first: bool, q: IVec4, drop: u8, negative: bool) {
        let (rows, d, sign) = if first {
            (&mut self.q0, &mut self.drop0, &mut self.sign0)
        } else {
            (&mut self.q1, &mut self.drop1, &mut self.sign1)
        };
        for (c, row) in rows.iter_mut().enumerate() {
            row[lane] = q[c];
        }
        d[lane] = f32::from(drop);
        sign[lane] = if negative { -0.0 } else { 0.0 };
    }

    /// Lane `lane`'s key (`first` or the second) dequantised.
    #[inline(always)]
    fn value(&self, lane: usize, first: bool, tr: &CompactTrack) -> Vec4 {
        let (rows, d, sign) = if first {
            (&self.q0, &self.drop0, &self.sign0)
        } else {
            (&self.q1, &self.drop1, &self.sign1)
        };
        let q = std::array::from_fn(|c| rows[c][lane]);
        tr.dequantize(q, d[lane] as u8, sign[lane].is_sign_negative())
    }
}

/// Tracks located before any is dequantised: each track's chain (dequantisation with a
/// square root, the pair's interpolation, the normalisation) is long, and with the bit
/// reading of the next track in between, the processor overlapped little of one track with
/// the next. Eight: one AVX vector per row.
pub(super) const BATCH: usize = 8;

/// Samples every track of a seekable `c` at `t_from_start` into `pose` (whose static joints
/// the caller set), or with `only_joint` that joint's tracks into `pose[0]`: the values the
/// streamed layout's decoder gives for the same keys, bit for bit. Tracks are located in
/// batches of eight, then dequantised and interpolated, eight lanes at a time where the CPU
/// has AVX (`compact_seek_avx.rs`, the same operations in the same order).
pub(crate) fn sample_tracks(
    c: &Compact,
    t_from_start: f32,
    only_joint: Option<JointIndex>,
    pose: &mut [Transform],
) {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if only_joint.is_none()
        && std::arch::is_x86_feature_detected!("avx")
        && std::arch::is_x86_feature_detected!("popcnt")
    {
        // SAFETY: AVX and POPCNT were just detected; `pose` holds every joint a track of
        // `c` animates (checked by the public functions).
        unsafe { sample_tracks_avx(c, t_from_start, pose) };
        return;
    }
    let one = only_joint.is_some();
    locate(c, t_from_start, only_joint, |at, n, x| {
        finish(c, at, n, x, one, pose)
    });
}

/// [`sample_tracks`] with the second phase on eight lanes, and the first compiled with the
/// POPCNT instruction (the masks' population counts; the baseline build counts bits with a
/// dozen instructions).
///
/// # Safety
/// The CPU must support AVX and POPCNT; `pose` must hold every joint a track of `c`
/// animates.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[target_feature(enable = "avx,popcnt")]
unsafe fn sample_tracks_avx(c: &Compact, t_from_start: f32, pose: &mut [Transform]) {
    locate(c, t_from_start, None, |at, n, x| {
        // SAFETY: AVX is there (the caller's contract); `at` holds `n` tracks of `c`,
        // located at `x`; `pose` holds their joints. The tests compare this path with the
        // one-lane path bit for bit.
        unsafe { super::compact_seek_avx::finish(c, at, n, x, pose) }
    });
}

/// The first phase: locates every track's (or `only_joint`'s tracks') keys around
/// `t_from_start`, calling `finish` with each batch, its length and the frame position.
#[inline(always)]
fn locate(
    c: &Compact,
    t_from_start: f32,
    only_joint: Option<JointIndex>,
    mut finish: impl FnMut(&Located, usize, f32),
) {
    let segments = c.segment_count();
    if c.tracks.is_empty() || segments == 0 {
        return;
    }
    let x = c.pos_of(t_from_start);
    // The frame at or before x (x >= 0, below 2^26 frames: the cast is the floor).
    let fx = x as u32;
    let s = (fx / SEG_LEN).min(segments - 1);
    let first = s * SEG_LEN;
    let k = (fx - first).min(c.segment_len(s) - 1);
    // Keyed frames after the first up to k are the mask's bits below k.
    let below = if k == 0 { 0 } else { u32::MAX >> (32 - k) };
    let mut pos = c.segments[s as usize];
    // The next segment's tracks, walked as far as a track needs its first key.
    let has_next = s + 1 < segments;
    let mut next_track = 0usize;
    let mut next_pos = if has_next {
        c.segments[s as usize + 1]
    } else {
        0
    };
    let mut at = Located::default();
    let mut n = 0;
    for (i, tr) in c.tracks.iter().enumerate() {
        let here = SeekTrack::open(c, tr, s, pos);
        pos += here.bits;
        if only_joint.is_some_and(|j| j != tr.joint) {
            continue;
        }
        let keyed = here.mask & below;
        let k0 = keyed.count_ones();
        let f0 = if keyed == 0 {
            0
        } else {
            32 - keyed.leading_zeros()
        };
        let later = here.mask >> k;
        at.track[n] = i as u32;
        at.set_key(n, true, here.key(&c.data, k0), here.drop, here.negative);
        // The key after x: later in this segment, or the next segment's first.
        let after = if later != 0 {
            Some((first + k + 1 + later.trailing_zeros(), here, k0 + 1))
        } else if has_next {
            while next_track < i {
                next_pos += c.track_bits(&c.tracks[next_track], s + 1, next_pos);
                next_track += 1;
            }
            let there = SeekTrack::open(c, tr, s + 1, next_pos);
            next_pos += there.bits;
            next_track = i + 1;
            Some((first + SEG_LEN, there, 0))
        } else {
            None
        };
        match after {
            Some((f1, seg1, k1)) => {
                at.set_key(n, false, seg1.key(&c.data, k1), seg1.drop, seg1.negative);
                let (x0, x1) = (c.frame_pos(first + f0), c.frame_pos(f1));
                at.x0[n] = x0;
                at.x1[n] = x1;
                // At the clip's end its last key holds; a STEP track holds its key.
                at.hold[n] = if x1 <= x {
                    2.0
                } else if tr.step {
                    1.0
                } else {
                    0.0
                };
            }
            None => at.hold[n] = 1.0,
        }
        n += 1;
        if n == BATCH {
            finish(&at, n, x);
            n = 0;
        }
    }
    if n > 0 {
        finish(&at, n, x);
    }
}

/// The second phase, one lane at a time: dequantises and interpolates the first `n` located
/// tracks into `pose` (into `pose[0]` with `one`).
#[inline(always)]
fn finish(c: &Compact, at: &Located, n: usize, x: f32, one: bool, pose: &mut [Transform]) {
    for lane in 0..n {
        let tr = &c.tracks[at.track[lane] as usize];
        let v = if at.hold[lane] == 2.0 {
            at.value(lane, false, tr)
        } else if at.hold[lane] == 1.0 {
            at.value(lane, true, tr)
        } else {
            // As the streamed layout's decoder computes it, bit for bit.
            let v0 = at.value(lane, true, tr);
            let v1 = at.value(lane, false, tr);
            let (x0, x1) = (at.x0[lane], at.x1[lane]);
            let u = unit_span(x - x0, reciprocal(x1 - x0));
            interpolate(v0, v1, pair_slerp(tr, v0, v1), u)
        };
        let slot = if one { 0 } else { tr.joint as usize };
        write(tr, v, &mut pose[slot]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::compress::seek::relayout;
    use crate::clip::compact::CompactLayout;
    use crate::compress::encode::{self, TrackInput};
    use crate::play::sampling::compact::tests::{clip_of, get, values};
    use crate::play::sampling::compact::{sample_tracks_uncached, CompactCache};
    use crate::Target;
    use glam::Vec4;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The seekable layout holds the streamed layout's keys: sampled at any time (every
        /// frame, between frames, before the start, past the end), every track gives the
        /// streamed decoder's bits, for the whole pose and one joint; converted back to the
        /// streamed layout, it gives them again; the decoded keys and key counts are equal.
        #[test]
        fn seekable_layout_samples_the_streamed_bits(
            frames in 2usize..150,
            kinds in proptest::collection::vec((0u8..3, any::<bool>()), 1..12),
            last_span in prop_oneof![Just(1.0f32), 0.05f32..1.0],
            seed in proptest::collection::vec(-1.0f32..1.0, 3..9),
            tol in prop_oneof![1e-5f32..1e-3, 1e-3f32..2e-1],
            times in proptest::collection::vec(-0.1f32..1.1, 1..40),
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
            let pos: Vec<f32> = (0..frames)
                .map(|f| if f + 1 == frames { (frames - 2) as f32 + last_span } else { f as f32 })
                .collect();
            let mids: Vec<Vec<Vec4>> = tracks
                .iter()
                .map(|(_, _, raw)| {
                    raw.windows(2).flat_map(|w| encode::SUB_AT.map(|u| w[0] + (w[1] - w[0]) * u)).collect()
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
            let seek = relayout(&stream, CompactLayout::Seek).unwrap();
            let back = relayout(&seek, CompactLayout::Stream).unwrap();
            prop_assert_eq!(seek.layout, CompactLayout::Seek);
            prop_assert_eq!(back.layout, CompactLayout::Stream);
            prop_assert_eq!(&seek.keys, &stream.keys);
            prop_assert_eq!(&back.keys, &stream.keys);
            prop_assert_eq!(seek.decoded_channels(0.0, 1.0), stream.decoded_channels(0.0, 1.0));
            let n = tracks.len();
            let mut want = vec![Transform::IDENTITY; n];
            let mut got = vec![Transform::IDENTITY; n];
            let mut again = vec![Transform::IDENTITY; n];
            let mut cache = CompactCache::default();
            cache.reset(&back);
            let rate = stream.rate;
            let mut at: Vec<f32> = (0..frames).map(|f| pos[f] / rate).collect();
            at.extend((0..frames).map(|f| (f as f32 + 0.37) / rate));
            let end = pos[frames - 1] / rate;
            at.extend(times.iter().map(|u| u * end));
            at.extend([-1.0, end, end + 1.0, f32::INFINITY]);
            let bits = |p: &[Transform], j: usize, target: Target| get(target, &p[j]).to_array().map(f32::to_bits);
            for &t in &at {
                sample_tracks_uncached(&stream, t, None, &mut want);
                sample_tracks(&seek, t, None, &mut got);
                crate::play::sampling::compact::sample_tracks(&back, t, &mut cache, &mut again);
                for tr in stream.tracks.iter() {
                    let j = tr.joint as usize;
                    prop_assert_eq!(bits(&got, j, tr.target), bits(&want, j, tr.target), "t {} track {}", t, j);
                    prop_assert_eq!(bits(&again, j, tr.target), bits(&want, j, tr.target), "t {} track {} (back)", t, j);
                    let mut one = [Transform::IDENTITY];
                    sample_tracks(&seek, t, Some(tr.joint), &mut one);
                    prop_assert_eq!(bits(&one, 0, tr.target), bits(&want, j, tr.target), "t {} joint {}", t, j);
                }
            }
        }
    }

    /// The AVX phase gives the one-lane phase's bits for any located lanes: random
    /// integers (rotations three or four components, keys of any sign, so pairs more than
    /// 90 degrees apart), dropped components and signs, STEP and LINEAR tracks with every
    /// nlerp threshold, held keys, positions inside and outside the pair.
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    #[test]
    fn avx_lanes_give_the_one_lane_bits() {
        use crate::compress::CompactTrack;
        use crate::play::sampling::compact::NLERP_DOTS;
        if !std::arch::is_x86_feature_detected!("avx") {
            return;
        }
        proptest!(ProptestConfig::with_cases(512), |(
            lanes in proptest::collection::vec(
                (0u8..3, any::<bool>(), 0usize..4, 0u8..5, 0u8..5, any::<[bool; 2]>(),
                 any::<[u16; 8]>(), 0u8..3, 0u8..4),
                1..=BATCH,
            ),
            x in -1.0f32..40.0,
        )| {
            let tracks: Vec<CompactTrack> = lanes
                .iter()
                .enumerate()
                .map(|(i, &(target, step, nlerp, ..))| CompactTrack {
                    joint: i as JointIndex,
                    target: [Target::Translation, Target::Rotation, Target::Scale][usize::from(target)],
                    step,
                    bits: [12; 4],
                    min: [-1.0; 4],
                    scale: [2.0 / 4095.0; 4],
                    nlerp_dot: NLERP_DOTS[nlerp],
                })
                .collect();
            let c = Compact {
                rate: 30.0,
                frames: 2,
                last_span: 1.0,
                tracks: tracks.clone().into(),
                segments: Box::new([]),
                data: Box::new([]),
                constants: Box::new([]),
                keys: Box::new([]),
                layout: CompactLayout::Seek,
                lanes: None,
            };
            let mut at = Located::default();
            for (lane, &(_, _, _, d0, d1, neg, q, hold, span)) in lanes.iter().enumerate() {
                let (d0, d1) = if tracks[lane].target == Target::Rotation { (d0, d1) } else { (3, 3) };
                let q = q.map(|v| i32::from(v % 4096));
                at.set_key(lane, true, IVec4::new(q[0], q[1], q[2], q[3]), d0, neg[0]);
                at.set_key(lane, false, IVec4::new(q[4], q[5], q[6], q[7]), d1, neg[1]);
                at.track[lane] = lane as u32;
                at.x0[lane] = 10.0;
                at.x1[lane] = 10.0 + [1.0, 2.0, 0.37, 31.0][usize::from(span)];
                at.hold[lane] = f32::from(hold);
            }
            let n = lanes.len();
            let mut one = vec![Transform::IDENTITY; n];
            let mut eight = vec![Transform::IDENTITY; n];
            finish(&c, &at, n, x, false, &mut one);
            // SAFETY: AVX detected above; the lanes hold tracks of `c`; the pose has their joints.
            unsafe { crate::play::sampling::compact_seek_avx::finish(&c, &at, n, x, &mut eight) };
            for (j, tr) in tracks.iter().enumerate() {
                let bits = |p: &[Transform]| get(tr.target, &p[j]).to_array().map(f32::to_bits);
                prop_assert_eq!(bits(&eight), bits(&one), "lane {}: {:?}", j, tr);
            }
        });
    }

    /// A segment of keys 0..len-1 on a single track lays out as the format says: base and
    /// widths from the segment's range, key `i` at `i` times the key's bits.
    #[test]
    fn a_seekable_key_is_read_at_its_index() {
        let frames = 40;
        let raw: Vec<Vec4> = (0..frames)
            .map(|f| Vec4::new(f as f32 * 3.0, 100.0 - f as f32, 7.0, 0.0))
            .collect();
        let mids: Vec<Vec4> = raw
            .windows(2)
            .flat_map(|w| encode::SUB_AT.map(|u| w[0] + (w[1] - w[0]) * u))
            .collect();
        let tols = vec![1e-3f32; frames];
        let pos: Vec<f32> = (0..frames).map(|f| f as f32).collect();
        let input = TrackInput {
            joint: 0,
            target: Target::Translation,
            step: true,
            raw: &raw,
            raw_sub: &mids,
            tol: &tols,
            rest: Vec4::ZERO,
            units: None,
        };
        let stream = clip_of(&[input], &pos, frames as u32, 1.0);
        let seek = relayout(&stream, CompactLayout::Seek).unwrap();
        let tr = &seek.tracks[0];
        // STEP keys on a line: every frame is a key (dense), 32 in the first segment.
        let open = SeekTrack::open(&seek, tr, 0, seek.segments[0]);
        assert_eq!(open.count, 32);
        for k in [0u32, 1, 17, 31] {
            let v = tr.dequantize(open.key(&seek.data, k).to_array(), 3, false);
            assert!(
                (v - raw[k as usize]).abs().max_element() < 2e-3,
                "key {k}: {v}"
            );
        }
        // The stream is exactly header, base and 32 keys of the widths.
        let widths: u32 = open.widths.iter().sum();
        let (_, hb) = SegHeader::read(&seek.data, seek.segments[0], false);
        let base: u32 = tr.bits.iter().map(|&b| u32::from(b)).sum();
        assert_eq!(open.bits, hb + base + 32 * widths);
        assert_eq!(seek.segments[1], open.bits);
    }
}

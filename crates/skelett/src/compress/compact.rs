//! The compact clip: what [`super::compress`] produces and [`crate::sample`] plays.
//!
//! ```text
//! grid: frame f at start + f / rate (the last frame at the clip's end), frames in segments
//!       of SEG_LEN; frame 0 of every segment and the clip's last frame are always keys
//! tracks: one per animated (joint, target): quantisation (bits, min, scale per component),
//!         LINEAR (lerp; nlerp for rotations) or STEP
//! data: per segment, per track, a bit stream:
//!   flags(2: sparse, order 2) | [rotations: all four(1), or dropped component(2) and its
//!   sign(1)] | widths(5 per stored component) | [mask(len-1): keyed frames after frame 0]
//!   | anchors(order keys, bits per stored component) | residuals((keys - order) x widths)
//! ```
//!
//! Values are integers `q` per stored component, dequantised as `min + q * scale`.
//! Rotations are made continuous in sign over the clip and keep their four components'
//! ranges; each segment stores three of them and rebuilds the one that stays largest in
//! magnitude over its frames (sign in the header), so the rebuilt component is never near
//! zero (dropping `w` always would lose all precision near 180 degree rotations, where `w`
//! is near zero). A segment in which every component crosses zero (a capture glitch
//! spinning a joint) stores all four. Within a segment each key after the anchors is a residual
//! from a prediction in integers: the previous key (order 1) or the line through the two
//! before it (order 2), so the decoder reproduces the encoder's integers exactly, with no
//! drift. Reading forward, a key costs three bit reads and three adds.
//!
//! Sampling keeps, per character and track, the two keys around the last time and a decoder
//! positioned after them ([`TrackCursor`] in the [`crate::SamplingCache`]): playing forward
//! only interpolates, and decodes a key when time passes one. A seek (backward, or more than
//! a segment ahead) restarts the track from its segment's anchors. Where each track's bits
//! start in a segment is found by walking the segment's track headers once and kept in a
//! small table in the cache.

use glam::{Quat, Vec4};

use crate::{JointIndex, Target, Transform};

/// Frames per segment. Every segment starts with a key of every track, so a seek never
/// decodes more than a segment of keys.
pub const SEG_LEN: u32 = 32;
/// Largest residual width in bits (components have at most 24 bits; residuals of order-2
/// prediction need two more, and the zigzag sign one).
pub(crate) const MAX_WIDTH: u32 = 27;
/// Largest quantisation width of a component.
pub const MAX_BITS: u8 = 24;
/// Header bits of a translation or scale track in a segment: 2 flags, 3 widths of 5 bits.
pub(crate) const HEADER_BITS: u32 = 2 + 3 * 5;

/// Header bits of a track in a segment whose header starts with `first` (its first 3 bits:
/// rotations store three components with 6 bits of layout, or four with 3).
#[inline(always)]
pub(crate) fn header_bits(rotation: bool, first: u32) -> u32 {
    if !rotation {
        HEADER_BITS
    } else if first & 4 != 0 {
        3 + 4 * 5
    } else {
        2 + 1 + 2 + 1 + 3 * 5
    }
}

/// One animated channel of a compact clip.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompactTrack {
    /// The joint it animates.
    pub joint: JointIndex,
    /// What it animates.
    pub target: Target,
    /// `true`: the key at or before the time holds (STEP); `false`: linear between keys.
    pub step: bool,
    /// Quantisation bits per component: x, y, z (and w for rotations); 0: the component is
    /// `min` throughout.
    pub bits: [u8; 4],
    /// Dequantisation: value = `min + q * scale`, per component.
    pub min: [f32; 4],
    /// See `min`.
    pub scale: [f32; 4],
    /// Rotations: key pairs whose dot product (as unit 4-vectors) is at least this are
    /// nlerped, the others slerped (above 1: always slerp). The encoder picks the loosest
    /// value its error budget allows, as nlerp drifts from slerp as the cube of the angle.
    pub nlerp_dot: f32,
}

/// The components a segment stores, and how many: all but `drop` (0..=3), or all four
/// (`drop == 4`); translations and scales store x, y, z (`drop == 3`).
#[inline(always)]
pub(crate) fn stored(drop: u8) -> ([usize; 4], usize) {
    match drop {
        0 => ([1, 2, 3, 0], 3),
        1 => ([0, 2, 3, 0], 3),
        2 => ([0, 1, 3, 0], 3),
        3 => ([0, 1, 2, 0], 3),
        _ => ([0, 1, 2, 3], 4),
    }
}

impl CompactTrack {
    /// Bits of the components stored with `drop` (see [`stored`]).
    #[inline(always)]
    pub(crate) fn stored_bits(&self, drop: u8) -> [u8; 4] {
        let (c, n) = stored(drop);
        std::array::from_fn(|k| if k < n { self.bits[c[k]] } else { 0 })
    }

    /// The value of integers `q` (the stored components), as a 4-vector: rotations x, y, z,
    /// w with a dropped component rebuilt with its sign; translations and scales x, y, z, 0.
    #[inline(always)]
    pub(crate) fn dequantize(&self, q: [i32; 4], drop: u8, negative: bool) -> Vec4 {
        let (c, n) = stored(drop);
        let mut v = [0f32; 4];
        let mut sq = 0.0;
        for k in 0..n {
            let x = self.min[c[k]] + q[k] as f32 * self.scale[c[k]];
            v[c[k]] = x;
            sq += x * x;
        }
        if self.target == Target::Rotation && n == 3 {
            let r = (1.0 - sq).max(0.0).sqrt();
            v[drop as usize & 3] = if negative { -r } else { r };
        }
        Vec4::from_array(v)
    }
}

/// A compact clip's data (inside [`crate::Clip`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Compact {
    /// Frames per second of the grid.
    pub rate: f32,
    /// Frames on the grid (at least 2 when there are tracks).
    pub frames: u32,
    /// Length of the last frame interval, in frames (0, 1]: the last frame is the clip's end.
    pub last_span: f32,
    pub tracks: Box<[CompactTrack]>,
    /// Bit offset of each segment's stream in `data`.
    pub segments: Box<[u32]>,
    /// The bit streams, followed by 8 zero bytes (so that every read can load 8 bytes).
    pub data: Box<[u8]>,
    /// Channels with one value for the whole clip (also in the clip's base pose): x, y, z, w
    /// for rotations, x, y, z for vectors.
    pub constants: Box<[(JointIndex, Target, Vec4)]>,
    /// Keys stored per track (anchors included).
    pub keys: Box<[u32]>,
}

/// Reads `n <= 32` bits at bit `pos`. Never panics: bits past the end read as zeros (the
/// format's validation makes that unreachable; this keeps a broken invariant harmless).
#[inline(always)]
pub(crate) fn read_bits(data: &[u8], pos: u32, n: u32) -> u32 {
    let byte = (pos >> 3) as usize;
    let word = match data.get(byte..byte + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => {
            let mut w = [0u8; 8];
            for (i, x) in w.iter_mut().enumerate() {
                *x = data.get(byte + i).copied().unwrap_or(0);
            }
            u64::from_le_bytes(w)
        }
    };
    ((word >> (pos & 7)) & ((1u64 << n) - 1)) as u32
}

#[inline(always)]
fn unzigzag(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// A track's header in one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SegHeader {
    pub sparse: bool,
    pub order2: bool,
    /// The component not stored (rotations: 0..=3, or 4 when all four are; 3 for
    /// translations and scales).
    pub drop: u8,
    /// The dropped component is negative in this segment.
    pub negative: bool,
    /// Residual widths of the stored components.
    pub widths: [u8; 4],
}

impl Default for SegHeader {
    fn default() -> Self {
        Self {
            sparse: false,
            order2: false,
            drop: 3,
            negative: false,
            widths: [0; 4],
        }
    }
}

impl SegHeader {
    /// Reads a header; returns it and its length in bits.
    #[inline(always)]
    pub fn read(data: &[u8], pos: u32, rotation: bool) -> (Self, u32) {
        let h = read_bits(data, pos, 23);
        let len = header_bits(rotation, h);
        let (drop, negative, w) = if !rotation {
            (3, false, h >> 2)
        } else if h & 4 != 0 {
            (4, false, h >> 3)
        } else {
            (((h >> 3) & 3) as u8, h & 32 != 0, h >> 6)
        };
        let n = if drop == 4 { 4 } else { 3 };
        let header = Self {
            sparse: h & 1 != 0,
            order2: h & 2 != 0,
            drop,
            negative,
            widths: std::array::from_fn(|k| {
                if k < n {
                    ((w >> (5 * k)) & 31) as u8
                } else {
                    0
                }
            }),
        };
        (header, len)
    }

    /// The header's bits and their count.
    pub fn bits(&self, rotation: bool) -> (u32, u32) {
        let flags = u32::from(self.sparse) | u32::from(self.order2) << 1;
        let w = |n: usize| (0..n).fold(0u32, |acc, k| acc | u32::from(self.widths[k]) << (5 * k));
        if !rotation {
            (flags | w(3) << 2, HEADER_BITS)
        } else if self.drop == 4 {
            (flags | 4 | w(4) << 3, 3 + 20)
        } else {
            (
                flags | u32::from(self.drop & 3) << 3 | u32::from(self.negative) << 5 | w(3) << 6,
                6 + 15,
            )
        }
    }
}

impl Compact {
    /// A compact clip from its parts (`data` padded); counts each track's keys.
    pub fn new(
        rate: f32,
        frames: u32,
        last_span: f32,
        tracks: Vec<CompactTrack>,
        constants: Vec<(JointIndex, Target, Vec4)>,
        segments: Vec<u32>,
        data: Vec<u8>,
    ) -> Compact {
        let mut c = Compact {
            rate,
            frames,
            last_span,
            tracks: tracks.into(),
            segments: segments.into(),
            data: data.into(),
            constants: constants.into(),
            keys: Box::new([]),
        };
        let mut keys = vec![0u32; c.tracks.len()];
        for s in 0..c.segment_count() {
            let mut pos = c.segments[s as usize];
            for (i, tr) in c.tracks.iter().enumerate() {
                let rot = tr.target == Target::Rotation;
                let (h, hb) = SegHeader::read(&c.data, pos, rot);
                let len = c.segment_len(s);
                keys[i] += if h.sparse {
                    1 + read_bits(&c.data, pos + hb, len - 1).count_ones()
                } else {
                    len
                };
                pos += c.track_bits(tr, s, pos);
            }
        }
        c.keys = keys.into();
        c
    }

    /// Bytes the compact data takes as stored (what `.skl` writes for it, name and events
    /// aside): a 24-byte header, 44 bytes per rotation track and 31 per other track, 19 or 15
    /// per constant, 4 per segment, and the bit streams.
    pub fn byte_size(&self) -> usize {
        let constants: usize = self
            .constants
            .iter()
            .map(|c| if c.1 == Target::Rotation { 19 } else { 15 })
            .sum();
        let tracks: usize = self
            .tracks
            .iter()
            .map(|t| if t.target == Target::Rotation { 44 } else { 31 })
            .sum();
        24 + tracks + constants + self.segments.len() * 4 + self.data.len().saturating_sub(8)
    }

    /// Every track's stored keys as a LINEAR or STEP channel at the grid's times (joints
    /// named by index), for [`crate::Clip::decompressed`].
    pub fn decoded_channels(&self, start: f32, duration: f32) -> Vec<crate::RawChannel> {
        let time = |f: u32| {
            if f + 1 >= self.frames {
                start + duration
            } else {
                start + f as f32 / self.rate
            }
        };
        let mut pos: Vec<u32> = self.segments.to_vec();
        let mut out = Vec::with_capacity(self.tracks.len());
        for tr in self.tracks.iter() {
            let mut times = Vec::new();
            let mut values = Vec::new();
            for s in 0..self.segment_count() {
                let p = pos[s as usize];
                pos[s as usize] += self.track_bits(tr, s, p);
                let (mut dec, f, v) = SegDecoder::start(self, tr, s, p);
                times.push(time(f));
                values.push(v);
                while let Some((f, v)) = dec.next(self, tr) {
                    times.push(time(f));
                    values.push(v);
                }
            }
            // f32 times of the last two frames can coincide only for a last span far below
            // a frame; keep times strictly increasing.
            let mut k = 1;
            while k < times.len() {
                if times[k] <= times[k - 1] {
                    times.remove(k - 1);
                    values.remove(k - 1);
                } else {
                    k += 1;
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

    /// Multiplies every translation (tracks and constants) by `factor`.
    pub fn scale_translations(&mut self, factor: f32) {
        for t in self.tracks.iter_mut() {
            if t.target == Target::Translation {
                for c in 0..3 {
                    t.min[c] *= factor;
                    t.scale[c] *= factor;
                }
            }
        }
        for c in self.constants.iter_mut() {
            if c.1 == Target::Translation {
                c.2 *= factor;
            }
        }
    }

    /// Number of segments.
    #[inline]
    pub fn segment_count(&self) -> u32 {
        self.segments.len() as u32
    }

    /// Frames in segment `s`.
    #[inline(always)]
    pub fn segment_len(&self, s: u32) -> u32 {
        (self.frames - s * SEG_LEN).min(SEG_LEN)
    }

    /// Position of frame `f` on the time axis, in frames from the start (the last frame sits
    /// `last_span` after the one before).
    #[inline(always)]
    pub fn frame_pos(&self, f: u32) -> f32 {
        if f + 1 >= self.frames {
            (self.frames.saturating_sub(2)) as f32 + self.last_span
        } else {
            f as f32
        }
    }

    /// The frame position of clip time `t` (seconds from the clip's start), clamped to the
    /// grid. A position within f32 rounding of a whole frame is that frame: the time of
    /// frame `f` computed in f32 (`start + f / rate`) lands on it, so a STEP key is held from
    /// its own frame's time on.
    #[inline(always)]
    pub fn pos_of(&self, t_from_start: f32) -> f32 {
        let end = self.frame_pos(self.frames - 1);
        let x = t_from_start * self.rate;
        let whole = x.round();
        let x = if (x - whole).abs() <= (x.abs() * 8.0 * f32::EPSILON).max(1e-4) {
            whole
        } else {
            x
        };
        // NaN compares false: it lands on 0 (the first frame), as NaN times do everywhere.
        if x >= end {
            end
        } else if x > 0.0 {
            // The last interval may be shorter than a frame: positions past frames - 2 scale.
            x
        } else {
            0.0
        }
    }

    /// Bits a track's stream takes in segment `s`, from its header at `pos`.
    #[inline(always)]
    pub fn track_bits(&self, track: &CompactTrack, s: u32, pos: u32) -> u32 {
        let rot = track.target == Target::Rotation;
        let (h, hb) = SegHeader::read(&self.data, pos, rot);
        let len = self.segment_len(s);
        let (mask_bits, keys) = if h.sparse {
            let m = read_bits(&self.data, pos + hb, len - 1);
            (len - 1, 1 + m.count_ones())
        } else {
            (0, len)
        };
        let order = 1 + u32::from(h.order2);
        let kbits: u32 = track
            .stored_bits(h.drop)
            .iter()
            .map(|&b| u32::from(b))
            .sum();
        let wbits: u32 = h.widths.iter().map(|&b| u32::from(b)).sum();
        hb + mask_bits + order * kbits + keys.saturating_sub(order) * wbits
    }

    /// Where each track's stream starts in segment `s` (`out` gets one entry per track).
    pub fn track_offsets(&self, s: u32, out: &mut [u32]) {
        let mut pos = self.segments[s as usize];
        for (i, tr) in self.tracks.iter().enumerate() {
            out[i] = pos;
            pos += self.track_bits(tr, s, pos);
        }
    }
}

/// Decodes one track's keys in one segment, in order, as values.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SegDecoder {
    /// Bit position of the next thing to read.
    pos: u32,
    /// Keyed frames still to come, as bits (bit i: frame `first + 1 + i`); for a dense
    /// segment every frame.
    mask: u32,
    /// First frame of the segment.
    first: u32,
    /// The last two keys decoded (`q1` the latest), as integers of the stored components.
    q1: [i32; 4],
    q0: [i32; 4],
    header: SegHeader,
    /// Bits of the stored components, and their number.
    bits: [u8; 4],
    stored: u8,
    /// Keys decoded so far in this segment.
    count: u32,
}

impl SegDecoder {
    /// Starts decoding `track` in segment `s` at `pos` (its header); returns the decoder and
    /// the segment's first key (frame, value).
    #[inline(always)]
    pub fn start(c: &Compact, track: &CompactTrack, s: u32, pos: u32) -> (Self, u32, Vec4) {
        let rot = track.target == Target::Rotation;
        let (h, hb) = SegHeader::read(&c.data, pos, rot);
        let len = c.segment_len(s);
        let mut p = pos + hb;
        let mask = if h.sparse {
            let m = read_bits(&c.data, p, len - 1);
            p += len - 1;
            m
        } else {
            // Every frame after the first.
            ((1u64 << (len - 1)) - 1) as u32
        };
        let bits = track.stored_bits(h.drop);
        let stored = stored(h.drop).1;
        let mut q = [0i32; 4];
        for k in 0..stored {
            q[k] = read_bits(&c.data, p, u32::from(bits[k])) as i32;
            p += u32::from(bits[k]);
        }
        let d = Self {
            pos: p,
            mask,
            first: s * SEG_LEN,
            q1: q,
            q0: q,
            header: h,
            bits,
            stored: stored as u8,
            count: 1,
        };
        (d, s * SEG_LEN, track.dequantize(q, h.drop, h.negative))
    }

    /// The next key of the segment (frame, value), or `None` after its last.
    #[inline(always)]
    pub fn next(&mut self, c: &Compact, track: &CompactTrack) -> Option<(u32, Vec4)> {
        if self.mask == 0 {
            return None;
        }
        let i = self.mask.trailing_zeros();
        self.mask &= self.mask - 1;
        let frame = self.first + 1 + i;
        let mut q = [0i32; 4];
        let n = usize::from(self.stored);
        if self.header.order2 && self.count == 1 {
            // The second anchor, absolute.
            for (qk, &b) in q.iter_mut().zip(&self.bits).take(n) {
                *qk = read_bits(&c.data, self.pos, u32::from(b)) as i32;
                self.pos += u32::from(b);
            }
        } else {
            #[allow(clippy::needless_range_loop)] // five arrays indexed alike
            for k in 0..n {
                let w = u32::from(self.header.widths[k]);
                let r = unzigzag(read_bits(&c.data, self.pos, w));
                self.pos += w;
                let pred = if self.header.order2 {
                    self.q1[k].wrapping_mul(2).wrapping_sub(self.q0[k])
                } else {
                    self.q1[k]
                };
                let hi = ((1u64 << self.bits[k]) - 1) as i32;
                q[k] = pred.wrapping_add(r).clamp(0, hi);
            }
        }
        self.q0 = self.q1;
        self.q1 = q;
        self.count += 1;
        Some((
            frame,
            track.dequantize(q, self.header.drop, self.header.negative),
        ))
    }
}

/// Per character and track: the keys around the last sampled time and the decoder after
/// them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TrackCursor {
    /// Frame positions of the two keys (`x1 = +inf` after the last key).
    x0: f32,
    x1: f32,
    inv: f32,
    v0: Vec4,
    v1: Vec4,
    /// How to interpolate between `v0` and `v1`.
    slerp: PairSlerp,
    /// Segment whose keys `dec` reads; the key at `x1` is the last one it returned (or the
    /// first of segment `seg + 1` when `next_is_anchor`).
    seg: u32,
    dec: SegDecoder,
    next_is_anchor: bool,
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
            seg: u32::MAX,
            dec: SegDecoder::default(),
            next_is_anchor: false,
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
}

impl CompactCache {
    pub fn reset(&mut self, c: &Compact) {
        let n = c.tracks.len();
        self.cursors.clear();
        self.cursors.resize(n, TrackCursor::default());
        for t in &mut self.tables {
            t.seg = u32::MAX;
            t.offsets.clear();
            t.offsets.resize(n, 0);
        }
    }

    /// The table of segment `s`, computing it into the older slot if neither holds it.
    #[inline]
    fn table(&mut self, c: &Compact, s: u32) -> usize {
        if self.tables[0].seg == s {
            return 0;
        }
        if self.tables[1].seg == s {
            return 1;
        }
        // Keep the lower segment in slot 0 for forward play (s, s + 1).
        let slot = if self.tables[0].seg != u32::MAX && self.tables[0].seg + 1 == s {
            1
        } else {
            0
        };
        self.tables[slot].seg = s;
        c.track_offsets(s, &mut self.tables[slot].offsets);
        slot
    }
}

/// The nlerp thresholds an encoder may choose ([`CompactTrack::nlerp_dot`]), loosest (and
/// cheapest to play) first: about 11.5, 1.6 and 0.16 degrees between keys, then always slerp.
pub const NLERP_DOTS: [f32; 4] = [0.995, 0.9999, 0.999_999, 2.0];

/// How a key pair is interpolated: `angle == 0` nlerp, else slerp over `angle` (the angle
/// between the keys as 4-vectors, up to pi: keys are not re-aligned, the encoder stored
/// them with the source's signs so that the path is the source's).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PairSlerp {
    angle: f32,
    inv_sin: f32,
}

/// The interpolation a key pair of `track` needs.
#[inline(always)]
pub(crate) fn pair_slerp(track: &CompactTrack, a: Vec4, b: Vec4) -> PairSlerp {
    if track.step || track.target != Target::Rotation {
        return PairSlerp::default();
    }
    let (la, lb) = (a.length(), b.length());
    let d = a.dot(b);
    if d >= track.nlerp_dot * la * lb || la == 0.0 || lb == 0.0 {
        return PairSlerp::default();
    }
    let d = (d / (la * lb)).clamp(-1.0, 1.0);
    // atan2 keeps precision near the ends where acos does not.
    let angle = (1.0 - d * d).max(0.0).sqrt().atan2(d).max(1e-3);
    PairSlerp {
        angle,
        inv_sin: 1.0 / angle.sin().max(1e-6),
    }
}

/// Interpolates a key pair at `u`: linear, or slerp where the pair needs it (rotations are
/// normalised by the caller).
#[inline(always)]
pub(crate) fn interpolate(a: Vec4, b: Vec4, seg: PairSlerp, u: f32) -> Vec4 {
    if seg.angle > 0.0 {
        let a = a.normalize_or(Vec4::W);
        let b = b.normalize_or(Vec4::W);
        let (w0, w1) = if seg.angle <= std::f32::consts::FRAC_PI_2 {
            (
                crate::transform::sin_0_half_pi((1.0 - u) * seg.angle),
                crate::transform::sin_0_half_pi(u * seg.angle),
            )
        } else {
            // Keys more than 180 degrees of rotation apart (a flip in the source): rare.
            (((1.0 - u) * seg.angle).sin(), (u * seg.angle).sin())
        };
        a * (w0 * seg.inv_sin) + b * (w1 * seg.inv_sin)
    } else {
        a + (b - a) * u
    }
}

/// Moves track `i`'s cursor so that `x0 <= x < x1` (or past the last key).
#[inline(always)]
fn advance(c: &Compact, cache: &mut CompactCache, i: usize, x: f32) {
    let tr = &c.tracks[i];
    let seg_x = ((x as u32) / SEG_LEN).min(c.segment_count() - 1);
    let cur = cache.cursors[i];
    // A seek: backward, never started, or more than one segment ahead.
    if x < cur.x0 || cur.seg == u32::MAX || seg_x > cur.seg + 1 {
        let slot = cache.table(c, seg_x);
        let pos = cache.tables[slot].offsets[i];
        let (dec, f, v) = SegDecoder::start(c, tr, seg_x, pos);
        let cur = &mut cache.cursors[i];
        cur.seg = seg_x;
        cur.dec = dec;
        cur.x0 = c.frame_pos(f);
        cur.v0 = v;
        cur.x1 = cur.x0;
        cur.v1 = v;
        cur.next_is_anchor = false;
        // The key after the anchor becomes x1 below (x >= x1 holds now).
    }
    while x >= cache.cursors[i].x1 {
        let cur = cache.cursors[i];
        // The next key: in the decoder's segment, or the next segment's anchor.
        let next = if cur.next_is_anchor {
            // x1 is segment seg+1's first key: continue inside that segment.
            let s = cur.seg + 1;
            let slot = cache.table(c, s);
            let pos = cache.tables[slot].offsets[i];
            let (mut dec, _, _) = SegDecoder::start(c, tr, s, pos);
            let k = dec.next(c, tr);
            let cur = &mut cache.cursors[i];
            cur.seg = s;
            cur.dec = dec;
            cur.next_is_anchor = false;
            k.map(|k| (k, false))
        } else {
            let cur = &mut cache.cursors[i];
            cur.dec.next(c, tr).map(|k| (k, false))
        };
        let (key, anchor) = match next {
            Some(k) => (Some(k.0), k.1),
            None => {
                let s = cache.cursors[i].seg + 1;
                if s < c.segment_count() {
                    let slot = cache.table(c, s);
                    let pos = cache.tables[slot].offsets[i];
                    let (_, f, v) = SegDecoder::start(c, tr, s, pos);
                    (Some((f, v)), true)
                } else {
                    (None, false)
                }
            }
        };
        let cur = &mut cache.cursors[i];
        match key {
            Some((f, v)) => {
                cur.x0 = cur.x1;
                cur.v0 = cur.v1;
                cur.x1 = c.frame_pos(f);
                cur.v1 = v;
                cur.inv = 1.0 / (cur.x1 - cur.x0);
                cur.slerp = pair_slerp(tr, cur.v0, cur.v1);
                cur.next_is_anchor = anchor;
            }
            None => {
                // Past the last key: hold it.
                cur.x0 = cur.x1;
                cur.v0 = cur.v1;
                cur.x1 = f32::INFINITY;
                cur.inv = 0.0;
            }
        }
    }
}

/// The value of a track at frame position `x`, from its cursor.
#[inline(always)]
fn value(tr: &CompactTrack, cur: &TrackCursor, x: f32) -> Vec4 {
    if tr.step || cur.x1 == f32::INFINITY {
        return cur.v0;
    }
    let u = ((x - cur.x0) * cur.inv).clamp(0.0, 1.0);
    interpolate(cur.v0, cur.v1, cur.slerp, u)
}

#[inline(always)]
fn write(tr: &CompactTrack, v: Vec4, out: &mut Transform) {
    match tr.target {
        Target::Rotation => {
            out.rotation = Quat::from_vec4(v.normalize_or(Vec4::W));
        }
        Target::Translation => out.translation = v.truncate(),
        Target::Scale => out.scale = v.truncate(),
    }
}

/// Samples every track at `t_from_start` into `pose` (whose static joints the caller set).
pub(crate) fn sample_tracks(
    c: &Compact,
    t_from_start: f32,
    cache: &mut CompactCache,
    pose: &mut [Transform],
) {
    let x = c.pos_of(t_from_start);
    for i in 0..c.tracks.len() {
        let cur = cache.cursors[i];
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
        let (mut dec, f, v) = SegDecoder::start(c, tr, s, here);
        let (mut x0, mut v0) = (c.frame_pos(f), v);
        let mut next = None;
        loop {
            let k = dec.next(c, tr).or_else(|| {
                has_next.then(|| {
                    let (_, f, v) = SegDecoder::start(c, tr, s + 1, there);
                    (f, v)
                })
            });
            match k {
                Some((f, v)) if c.frame_pos(f) <= x => {
                    x0 = c.frame_pos(f);
                    v0 = v;
                    // The next segment's anchor is the last key this segment can reach.
                    if f == (s + 1) * SEG_LEN {
                        break;
                    }
                }
                Some((f, v)) => {
                    next = Some((c.frame_pos(f), v));
                    break;
                }
                None => break,
            }
        }
        let v = match next {
            Some((x1, v1)) if !tr.step => {
                // As the cursor computes it, bit for bit.
                let inv = 1.0 / (x1 - x0);
                let u = ((x - x0) * inv).clamp(0.0, 1.0);
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

#[cfg(test)]
mod tests {
    use super::super::encode::{self, Plan, TrackInput};
    use super::*;
    use proptest::prelude::*;

    /// Encoded tracks as one compact clip (joint i for input i).
    fn clip_of(inputs: &[TrackInput<'_>], pos: &[f32], frames: u32) -> Compact {
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
            30.0,
            frames,
            1.0,
            encoded.iter().map(|e| e.track).collect(),
            Vec::new(),
            segments,
            bits.into_padded_bytes(),
        )
    }

    fn values(target: Target, seed: &[f32], frames: usize) -> Vec<Vec4> {
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

    fn get(target: Target, t: &Transform) -> Vec4 {
        match target {
            Target::Rotation => Vec4::from(t.rotation),
            Target::Translation => t.translation.extend(0.0),
            Target::Scale => t.scale.extend(0.0),
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
            kinds in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..5),
            seed in proptest::collection::vec(-1.0f32..1.0, 3..9),
            tol in 1e-5f32..1e-1,
            order in proptest::collection::vec(0.0f32..1.0, 1..60),
        ) {
            let tracks: Vec<(Target, bool, Vec<Vec4>)> = kinds
                .iter()
                .enumerate()
                .map(|(i, &(rot, step))| {
                    let target = if rot { Target::Rotation } else { Target::Translation };
                    (target, step, values(target, &seed[i % seed.len()..], frames))
                })
                .collect();
            let tols = vec![tol; frames];
            let pos: Vec<f32> = (0..frames).map(|f| f as f32).collect();
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
                    tol: &tols, rest: Vec4::new(100.0, 0.0, 0.0, 1.0),
                })
                .collect();
            let c = clip_of(&inputs, &pos, frames as u32);
            let mut cache = CompactCache::default();
            cache.reset(&c);
            let n = tracks.len();
            let mut a = vec![Transform::IDENTITY; n];
            let mut b = vec![Transform::IDENTITY; n];
            for f in 0..frames {
                let t = f as f32 / 30.0;
                sample_tracks(&c, t, &mut cache, &mut a);
                sample_tracks_uncached(&c, t, None, &mut b);
                for tr in c.tracks.iter() {
                    let j = tr.joint as usize;
                    let (target, _, raw) = &tracks[j];
                    prop_assert_eq!(get(*target, &a[j]), get(*target, &b[j]), "frame {} track {}", f, j);
                    let e = encode::error(*target == Target::Rotation, get(*target, &a[j]), raw[f]);
                    prop_assert!(e <= tol * 1.0001 + 1e-6, "frame {} track {}: error {} > {}", f, j, e, tol);
                }
            }
            for &u in &order {
                let t = u * (frames as f32 + 2.0) / 30.0 - 1.0 / 30.0;
                sample_tracks(&c, t, &mut cache, &mut a);
                sample_tracks_uncached(&c, t, None, &mut b);
                for tr in c.tracks.iter() {
                    let j = tr.joint as usize;
                    prop_assert_eq!(get(tr.target, &a[j]), get(tr.target, &b[j]), "t {} track {}", t, j);
                }
            }
        }
    }
}

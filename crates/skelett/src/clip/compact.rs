//! The compact clip's storage format: what [`crate::compress`] produces and
//! [`crate::sample`] plays (its decoder is `play/sampling/compact.rs`).
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
//! drift. Reading forward, a key costs one 8-byte load, a few shifts and a vector add.
//!
//! A second layout, [`CompactLayout::Seek`], keeps the same keys (the same integers at the
//! same frames, so it samples the same bits) without prediction:
//!
//! ```text
//! data: per segment, per track: flags(2: sparse, 0) | [rotations: as above] | widths(5 per
//!   stored component) | [mask(len-1)] | base(bits per stored component) | keys x widths
//! ```
//!
//! Each key stores its integers minus the segment's smallest (`base`) in fixed widths, so
//! key `i` of a segment is read directly at `i x (sum of widths)`: a seek reads the two keys
//! around its time (the mask's population count below the frame gives their index) instead
//! of stepping over the segment's keys from its start. It is larger (fixed widths cover the
//! segment's range, residuals only its steps); `CompressOptions::layout` chooses it.
//!
//! Sampling the streamed layout keeps, per character and track, the two keys around the last time, the next few
//! keys decoded, and a decoder positioned after them ([`TrackCursor`] in the
//! [`crate::SamplingCache`]): playing forward only interpolates, and decodes a run of keys
//! when time has passed those it holds. A seek (backward, or more than
//! a segment ahead) restarts the track from its segment's anchors. Where each track's bits
//! start in a segment is found by walking the segment's track headers once and kept in a
//! small table in the cache.

use glam::Vec4;

use crate::{JointIndex, Target};

/// How a compact clip lays out each segment's keys. The two layouts hold the same keys (the
/// same integers at the same frames) and sample the same values, bit for bit, so the
/// compressor's error report holds for both; the README's "Compressing clips" gives sizes
/// and timings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompactLayout {
    /// Prediction residuals: the smallest. Playing forward decodes each key once through
    /// the cursors of a [`crate::SamplingCache`]; a seek decodes from its segment's start.
    #[default]
    Stream,
    /// Keys in fixed widths from the segment's smallest value: a seek reads the two keys
    /// around its time directly, keeping no state per character, and forward playback costs
    /// what a seek does (on dense motion capture less than the streamed layout's, on sparse
    /// clips about twice). About 16% larger over `../shared/data` (14.9:1 against 17.2:1).
    Seek,
    /// Eight tracks side by side on one timeline, every value a 16-bit integer on its
    /// segment's range (`clip/compact_lanes.rs`): forward playback and seeks read two keys
    /// of eight tracks with two 16-byte loads per component, keeping no state per
    /// character, at about the keyed clip's time (more where sparse keys are slerped), for
    /// a clip several times larger than the streamed layout (and, for clips of a few keys,
    /// possibly larger than raw). The rounding to 16 bits changes the values, so
    /// [`crate::compress::compress`] measures the clip again in this layout; it has a floor
    /// (about 1/65535 of each component's span over 16 keys), so budgets far below 0.01 cm
    /// may not be met (the report says so). It cannot be turned back into the others.
    Lanes,
}

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

    /// The value of integers `q` (in lane order: x, y, z, w; a dropped lane's integer is
    /// ignored), as a 4-vector: rotations x, y, z, w with a dropped component rebuilt with
    /// its sign (unit length either way); translations and scales x, y, z, 0.
    #[inline(always)]
    pub(crate) fn dequantize(&self, q: [i32; 4], drop: u8, negative: bool) -> Vec4 {
        // Lanes kept, per dropped component (4: all kept).
        const KEEP: [Vec4; 5] = [
            Vec4::new(0.0, 1.0, 1.0, 1.0),
            Vec4::new(1.0, 0.0, 1.0, 1.0),
            Vec4::new(1.0, 1.0, 0.0, 1.0),
            Vec4::new(1.0, 1.0, 1.0, 0.0),
            Vec4::ONE,
        ];
        const AXIS: [Vec4; 4] = [Vec4::X, Vec4::Y, Vec4::Z, Vec4::W];
        let q = glam::IVec4::from_array(q).as_vec4();
        let v = (Vec4::from_array(self.min) + q * Vec4::from_array(self.scale))
            * KEEP[usize::from(drop.min(4))];
        if self.target != Target::Rotation {
            return v;
        }
        if drop >= 4 {
            // All four stored: unit length by normalising (zero stays the identity).
            return v.normalize_or(Vec4::W);
        }
        let r = (1.0 - v.length_squared()).max(0.0).sqrt();
        v + AXIS[usize::from(drop & 3)] * if negative { -r } else { r }
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
    /// How `data` lays out the keys.
    pub layout: CompactLayout,
    /// The keys in [`CompactLayout::Lanes`] (then `data` holds no streams and `segments`
    /// is empty).
    pub lanes: Option<Box<super::compact_lanes::PackedLanes>>,
}

/// Reads `n <= 32` bits at bit `pos`. Never panics: bits past the end read as zeros (the
/// format's validation makes that unreachable; this keeps a broken invariant harmless).
#[inline(always)]
pub(crate) fn read_bits(data: &[u8], pos: u32, n: u32) -> u32 {
    (load_bits(data, pos) & ((1u64 << n) - 1)) as u32
}

/// The 57 or more bits from bit `pos` on, in the low bits (zeros past the end).
#[inline(always)]
pub(crate) fn load_bits(data: &[u8], pos: u32) -> u64 {
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
    word >> (pos & 7)
}

#[inline(always)]
pub(crate) fn unzigzag(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// The start of a track's stream in one segment, the same in both layouts: its header and
/// the keyed-frame mask (bit i: frame i + 1 of the segment; a dense segment: every frame);
/// returns them and where the stream continues (the full-width integers that follow are the
/// streamed layout's first key, the seekable layout's base).
#[inline(always)]
pub(crate) fn read_start(
    c: &Compact,
    track: &CompactTrack,
    s: u32,
    pos: u32,
) -> (SegHeader, u32, u32) {
    let rot = track.target == Target::Rotation;
    let (header, hb) = SegHeader::read(&c.data, pos, rot);
    let len = c.segment_len(s);
    let p = pos + hb;
    if header.sparse {
        (header, read_bits(&c.data, p, len - 1), p + len - 1)
    } else {
        (header, ((1u64 << (len - 1)) - 1) as u32, p)
    }
}

/// Reads four lanes of `bits[lane]` bits each (0 bits: 0) from `*pos`, advancing it.
#[inline(always)]
pub(crate) fn read_lanes(data: &[u8], pos: &mut u32, bits: [u32; 4]) -> glam::IVec4 {
    let mut q = [0i32; 4];
    for (q, &b) in q.iter_mut().zip(&bits) {
        *q = read_bits(data, *pos, b) as i32;
        *pos += b;
    }
    glam::IVec4::from_array(q)
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
    /// A compact clip from its parts (`data` padded, in `layout`); counts each track's keys.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        layout: CompactLayout,
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
            layout,
            lanes: None,
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

    /// `c`'s grid, tracks and constants with its keys in the lanes layout.
    pub(crate) fn with_lanes(c: &Compact, lanes: super::compact_lanes::PackedLanes) -> Compact {
        Compact {
            rate: c.rate,
            frames: c.frames,
            last_span: c.last_span,
            tracks: c.tracks.clone(),
            segments: Box::new([]),
            data: Box::new([0u8; 8]),
            constants: c.constants.clone(),
            keys: vec![lanes.pos.len() as u32; c.tracks.len()].into(),
            layout: CompactLayout::Lanes,
            lanes: Some(Box::new(lanes)),
        }
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
        let lanes = self.lanes.as_ref().map_or(0, |l| l.stored_bytes());
        24 + tracks
            + constants
            + self.segments.len() * 4
            + self.data.len().saturating_sub(8)
            + lanes
    }

    /// Time of grid frame `f` for a clip starting at `start` and lasting `duration`: `f /
    /// rate` after the start, the last frame at the end.
    #[inline]
    pub fn frame_time(&self, start: f32, duration: f32, f: u32) -> f32 {
        if f + 1 >= self.frames {
            start + duration
        } else {
            start + f as f32 / self.rate
        }
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
        if let Some(lanes) = &mut self.lanes {
            lanes.scale_translations(factor);
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
        let x = self.snap(t_from_start * self.rate);
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

    /// `x` (a position in frames), or the whole frame within f32 rounding of it: `pos_of`
    /// before its clamp to the grid. The tolerance grows with `x` (f32's relative rounding),
    /// so that frame times computed in f32 land on their frame all along a long clip.
    ///
    /// On clips of at most [`FAST_SNAP_FRAMES`] frames, the nearest whole number is taken by
    /// adding and subtracting 1.5 * 2^23 (two additions where [`round`] takes five
    /// dependent steps). That rounds halves to even where `round` rounds them away from
    /// zero, which decides nothing: below 2^19 a half is never within the tolerance (it is
    /// under 0.5 there), and a position past 2^19 (where the sum can be off too) is past the
    /// clip's last frame, before snapping and after, so `pos_of` clamps it to the same end.
    /// Every sample waits on this chain (the lanes layout's interpolation fraction
    /// directly).
    #[inline(always)]
    pub(crate) fn snap(&self, x: f32) -> f32 {
        let whole = if self.frames <= FAST_SNAP_FRAMES {
            (x + ROUND_MAGIC) - ROUND_MAGIC
        } else {
            round(x)
        };
        if (x - whole).abs() <= (x.abs() * 8.0 * f32::EPSILON).max(1e-4) {
            whole
        } else {
            x
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
        let kbits: u32 = track
            .stored_bits(h.drop)
            .iter()
            .map(|&b| u32::from(b))
            .sum();
        let wbits: u32 = h.widths.iter().map(|&b| u32::from(b)).sum();
        match self.layout {
            CompactLayout::Stream => {
                let order = 1 + u32::from(h.order2);
                hb + mask_bits + order * kbits + keys.saturating_sub(order) * wbits
            }
            // The base, then every key in the widths.
            CompactLayout::Seek => hb + mask_bits + kbits + keys * wbits,
            // No streams (`Compact::lanes` holds the keys).
            CompactLayout::Lanes => 0,
        }
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

/// The clips [`Compact::snap`] rounds by [`ROUND_MAGIC`]: at most 2^19 frames (2.4 hours
/// at 60 frames per second).
pub(crate) const FAST_SNAP_FRAMES: u32 = 1 << 19;

/// 1.5 * 2^23: adding it to an `f32` below 2^22 in magnitude leaves no fraction bits, so
/// `(x + ROUND_MAGIC) - ROUND_MAGIC` is `x` rounded to the nearest whole number, halves to
/// even.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `x.round()` (half away from zero) without a call: x86-64's baseline has no rounding
/// instruction, so `f32::round` calls libm's `roundf`, a fifth of a sample's time-to-key
/// chain. Adding the largest float below 0.5 (with `x`'s sign) and truncating rounds as
/// `round` does for every `x` (up to the sign of a zero result); the truncation converts to
/// an integer and back below 2^23, where floats still have a fraction (NaN stays NaN).
#[inline(always)]
pub(crate) fn round(x: f32) -> f32 {
    let t = x + f32::from_bits(0x3eff_ffff).copysign(x);
    if t.abs() < 8_388_608.0 {
        (t as i32) as f32
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// `round` is `f32::round` (up to the sign of a zero) on every float, halves,
        /// the largest float below one half and the edges of the converted range included.
        #[test]
        fn round_is_f32_round(bits in any::<u32>(), n in -9_000_000i32..9_000_000) {
            let edge = [0.5f32, f32::from_bits(0x3eff_ffff), 8_388_607.5, 8_388_608.0, 4_194_303.5];
            let half = n as f32 + 0.5;
            let mut xs = vec![f32::from_bits(bits), half, n as f32, n as f32 / 7.0];
            // The floats on either side of each half, where adding the constant could carry.
            xs.extend([half.next_up(), half.next_down()]);
            xs.extend(edge.iter().flat_map(|&e| [e, e.next_up(), e.next_down()]));
            let mut xs: Vec<f32> = xs.iter().flat_map(|&x| [x, -x]).collect();
            xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 4_194_304.0, 16_777_216.5]);
            for x in xs {
                let (a, b) = (super::round(x), x.round());
                prop_assert!(a == b || (a.is_nan() && b.is_nan()), "{x}: {a} against {b}");
            }
        }

        /// `pos_of` gives the bits of its definition with `f32::round` (the frame within
        /// f32 rounding of the position, clamped to the grid) on clips on either side of
        /// `FAST_SNAP_FRAMES`: at whole frames and halves, a tolerance on either side of
        /// them, anywhere, and far past both ends.
        #[test]
        fn pos_of_snaps_as_round_does(
            frames in prop_oneof![2u32..40, 40u32..2_000_000],
            rate in prop_oneof![Just(30.0f32), Just(120.0005), 1.0f32..1000.0],
            last_span in 0.01f32..=1.0,
            f in 0u32..2_000_000,
            bits in any::<u32>(),
        ) {
            let c = super::Compact::new(
                super::CompactLayout::Stream, rate, frames, last_span,
                vec![], vec![], vec![], vec![0; 8],
            );
            let reference = |t: f32| {
                let end = (frames.saturating_sub(2)) as f32 + last_span;
                let x = t * rate;
                let whole = x.round();
                let x = if (x - whole).abs() <= (x.abs() * 8.0 * f32::EPSILON).max(1e-4) { whole } else { x };
                if x >= end { end } else if x > 0.0 { x } else { 0.0 }
            };
            let f = (f % (frames + 8)) as f32;
            let mut ts = vec![f32::from_bits(bits), f / rate, (f + 0.5) / rate, -f / rate];
            for d in [1e-4f32, 2e-4, 8.0 * f32::EPSILON * f, 1e-3, 0.49] {
                ts.extend([(f + d) / rate, (f - d) / rate]);
            }
            ts.extend([1e9, -1e9, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-30, -0.0]);
            for t in ts {
                let ts: Vec<f32> = [t, t.next_up(), t.next_down()].into();
                for t in ts {
                    let (a, b) = (c.pos_of(t), reference(t));
                    prop_assert_eq!(a.to_bits(), b.to_bits(), "t {} frames {}", t, frames);
                }
            }
        }
    }
}

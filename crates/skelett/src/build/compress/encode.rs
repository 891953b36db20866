//! Encoding one track: from its raw value at every frame and a tolerance at every frame to
//! its compact form (or to a constant, or to nothing when it equals the rest pose).
//!
//! ```text
//! raw values per frame, tolerance per frame
//!   ──constant?──▶ one value (base pose), or the rest pose's (dropped)
//!   ──for each quantisation share alpha──▶ step per component, bits, integers per frame
//!        ──per segment: keys kept so that interpolating them stays within tolerance at
//!          every frame (greedy, longest segments first)
//!        ──per segment: dense or sparse, prediction order 1 or 2, residual widths: the
//!          cheapest in bits
//!   ──▶ the alpha with the fewest bits
//! ```
//!
//! Errors are measured exactly against the raw values: for rotations as the chord between
//! unit quaternions (the caller converts angles: chord = 2 sin(angle / 4)), for
//! translations and scales as the distance. The tolerance at a frame is what the caller's
//! error budget allows this track there; whether the whole hierarchy stays within the budget
//! is measured by the caller in model space.
//!
//! The caller plans each track many times over at other tolerances (the budget search, the
//! loosening, the tightening). A [`TrackMemory`] carries from one plan to the next what
//! does not depend on the tolerances (a quantisation's integers and decoded values) and the
//! answers that the new tolerances keep (a key pair that fit still fits at tolerances no
//! smaller, one that did not still does not at tolerances no larger), so a plan is the same
//! with or without it, and sooner with it. Of the neighbouring keys' pairs, which every
//! encode tests, it keeps the errors themselves (`Quantised::adjacent`): one tolerance
//! decides such a pair, so any plan's answer is a comparison.

use glam::Vec4;

use crate::clip::compact::{stored, CompactTrack, SegHeader, MAX_BITS, MAX_WIDTH, SEG_LEN};
use crate::play::sampling::compact::{interpolate, pair_slerp, sin_0_pi4, PairSlerp, NLERP_DOTS};
use crate::{JointIndex, Target};

/// Points checked inside every frame interval.
pub(crate) const SUB: usize = 3;
/// Where, as fractions of the interval.
pub(crate) const SUB_AT: [f32; SUB] = [0.25, 0.5, 0.75];

/// A growable bit string.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Bits {
    pub words: Vec<u64>,
    pub len: u64,
}

impl Bits {
    pub fn push(&mut self, value: u32, n: u32) {
        if n == 0 {
            return;
        }
        let v = u64::from(value) & ((1u64 << n) - 1);
        let off = (self.len % 64) as u32;
        if off == 0 {
            self.words.push(v);
        } else {
            *self.words.last_mut().unwrap_or(&mut 0) |= v << off;
            if off + n > 64 {
                self.words.push(v >> (64 - off));
            }
        }
        self.len += u64::from(n);
    }

    pub fn append(&mut self, other: &Bits) {
        let mut left = other.len;
        for &w in &other.words {
            let n = left.min(64) as u32;
            self.push(w as u32, n.min(32));
            if n > 32 {
                self.push((w >> 32) as u32, n - 32);
            }
            left -= u64::from(n);
        }
    }

    /// The bytes, followed by 8 zero bytes of padding.
    pub fn into_padded_bytes(self) -> Vec<u8> {
        let n = self.len.div_ceil(8) as usize;
        let mut out: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.truncate(n);
        out.extend_from_slice(&[0u8; 8]);
        out
    }
}

/// What becomes of a track.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Plan {
    /// Equal to the rest pose within tolerance: not stored.
    Rest,
    /// One value for the whole clip (x, y, z, w for rotations; x, y, z for vectors).
    Constant(Vec4),
    /// Keys.
    Animated(EncodedTrack),
}

/// A track's compact form: its descriptor and its bits per segment.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EncodedTrack {
    pub track: CompactTrack,
    pub segments: Vec<Bits>,
    /// Keys kept (anchors included), over all segments.
    pub keys: usize,
}

impl EncodedTrack {
    pub fn bits(&self) -> u64 {
        self.segments.iter().map(|s| s.len).sum()
    }
}

/// One track's input.
pub(crate) struct TrackInput<'a> {
    pub joint: JointIndex,
    pub target: Target,
    /// The source holds values (STEP) rather than interpolating.
    pub step: bool,
    /// Raw value at every frame: rotations as unit quaternions (any sign), vectors with w 0.
    pub raw: &'a [Vec4],
    /// Raw value at [`SUB_AT`] of every frame interval ([`SUB`] per interval): keys must stay
    /// within tolerance between frames too (nlerp drifts from slerp most near a quarter and
    /// three quarters of an interval; curves bend anywhere).
    pub raw_sub: &'a [Vec4],
    /// Tolerance at every frame (chord for rotations, distance for vectors).
    pub tol: &'a [f32],
    /// The rest pose's value.
    pub rest: Vec4,
    /// `raw` and `raw_sub` as the comparisons take them (rotations normalised), where the
    /// caller made them once for every plan of the track; `None`: made here.
    pub units: Option<(&'a [Vec4], &'a [Vec4])>,
}

/// Error between two values of a target (chord between unit quaternions, on the short way,
/// or distance).
#[cfg(test)]
#[inline(always)]
pub(crate) fn error(rotation: bool, a: Vec4, b: Vec4) -> f32 {
    error_to(rotation, a, unit(rotation, b))
}

/// `b` as [`error_to`] takes it: normalised for rotations.
#[inline(always)]
fn unit(rotation: bool, b: Vec4) -> Vec4 {
    if rotation {
        b.normalize_or(Vec4::W)
    } else {
        b
    }
}

/// [`error`] against a value already passed through [`unit`]: the raw values are
/// normalised once per track instead of at every one of the encoder's comparisons. The
/// shorter chord is the square root of the smaller square (the same bits: the square root is
/// correctly rounded and monotonic).
#[inline(always)]
fn error_to(rotation: bool, a: Vec4, b: Vec4) -> f32 {
    if rotation {
        let a = a.normalize_or(Vec4::W);
        (a - b)
            .length_squared()
            .min((a + b).length_squared())
            .sqrt()
    } else {
        (a - b).truncate().length()
    }
}

/// A track's input with its raw values as [`error_to`] takes them.
struct Input<'a> {
    src: &'a TrackInput<'a>,
    /// The raw values normalised (rotations) or as they are (borrowed).
    raw_unit: std::borrow::Cow<'a, [Vec4]>,
    sub_unit: std::borrow::Cow<'a, [Vec4]>,
}

impl<'a> Input<'a> {
    fn new(src: &'a TrackInput<'a>) -> Self {
        let rot = src.target == Target::Rotation;
        let (raw_unit, sub_unit) = match src.units {
            Some((raw, sub)) => (raw.into(), sub.into()),
            None => (units(rot, src.raw), units(rot, src.raw_sub)),
        };
        Self {
            src,
            raw_unit,
            sub_unit,
        }
    }
}

/// `values` through [`unit`]: a copy for rotations, else the values themselves.
pub(crate) fn units(rotation: bool, values: &[Vec4]) -> std::borrow::Cow<'_, [Vec4]> {
    if rotation {
        values.iter().map(|&v| unit(true, v)).collect()
    } else {
        std::borrow::Cow::Borrowed(values)
    }
}

impl<'a> std::ops::Deref for Input<'a> {
    type Target = TrackInput<'a>;
    fn deref(&self) -> &TrackInput<'a> {
        self.src
    }
}

/// [`plan_remembering`] with nothing remembered (the tests' way in).
#[cfg(test)]
pub(crate) fn plan(input: &TrackInput<'_>, frame_pos: &[f32]) -> Plan {
    plan_with(input, frame_pos, input.raw.len() <= MEMO_FRAMES, true, None)
}

/// Plans a track: rest, constant or keys, at `frame_pos` positions (the grid), taking what
/// earlier plans of the same track (at other tolerances) left in `memory` and leaving its
/// own there: the plan it would make without them, sooner.
pub(crate) fn plan_remembering(
    input: &TrackInput<'_>,
    frame_pos: &[f32],
    memory: &mut TrackMemory,
) -> Plan {
    let memo = input.raw.len() <= MEMO_FRAMES;
    plan_with(input, frame_pos, memo, true, memo.then_some(memory))
}

/// What a track's plans keep for its next plans in the same compression (the budget search
/// plans every track at several multipliers, the loosening again): per quantisation met
/// (the most recent [`REMEMBERED`]), its integers and decoded values, and the answers of its
/// key pair tests at the tolerances of the last [`LAYERS`] plans that used it. A key pair
/// that fit at some tolerances fits at tolerances no smaller at every frame, and one that
/// did not fit does not at tolerances no larger: those answers are taken as they are.
/// (The search's multipliers lie a few percent apart, so most quantisations come back: on
/// Boxing_Toes four encodes in five meet one planned before.)
pub(crate) struct TrackMemory {
    quants: Vec<Remembered>,
    /// The most bytes it keeps.
    cap: usize,
}

/// Quantisations remembered per track, and layers of answers per quantisation (at most;
/// fewer where [`TrackMemory`]'s bytes run out).
const REMEMBERED: usize = 4;
const LAYERS: usize = 2;

/// One quantisation of a track, as [`TrackMemory`] keeps it.
struct Remembered {
    quant: Quantization,
    q: Vec<[i32; 4]>,
    deq: Vec<Vec4>,
    /// [`Quantised::adjacent`]: errors, not answers, so good at any tolerances.
    adjacent: Vec<[f32; 2]>,
    layers: Vec<Layer>,
}

/// The answers of one plan's key pair tests ([`Quantised::spans`]) and the tolerances they
/// were given at.
struct Layer {
    tol: Vec<f32>,
    spans: Vec<u8>,
}

impl TrackMemory {
    /// Memory keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            quants: Vec::new(),
            cap,
        }
    }

    /// The remembered quantisation `quant`, taken out (it comes back with [`Self::keep`]).
    fn take(&mut self, quant: &Quantization) -> Option<Remembered> {
        let i = self.quants.iter().position(|r| r.quant == *quant)?;
        Some(self.quants.remove(i))
    }

    /// Keeps a quantised track and the answers it gave at `tol`, the most recent first.
    fn keep(&mut self, qd: Quantised, tol: &[f32]) {
        let mut layers: Vec<Layer> = qd.prior.into_iter().map(|p| p.0).collect();
        layers.insert(
            0,
            Layer {
                tol: tol.to_vec(),
                spans: qd.spans,
            },
        );
        layers.truncate(LAYERS);
        self.quants.insert(
            0,
            Remembered {
                quant: qd.quant,
                q: qd.q,
                deq: qd.deq,
                adjacent: qd.adjacent,
                layers,
            },
        );
        self.quants.truncate(REMEMBERED);
        // The oldest answers first, then the oldest quantisations, until it fits its bytes.
        let bytes = |r: &Remembered| {
            let layers: usize = r
                .layers
                .iter()
                .map(|l| l.spans.len() + 4 * l.tol.len())
                .sum();
            32 * r.q.len() + 8 * r.adjacent.len() + layers
        };
        while self.quants.iter().map(bytes).sum::<usize>() > self.cap {
            let Some(last) = self.quants.last_mut() else {
                break;
            };
            if last.layers.len() > 1 {
                last.layers.pop();
            } else {
                self.quants.pop();
            }
        }
    }
}

/// [`plan`], keeping each share's quantisation for the next threshold or not (`memo`), and
/// skipping the scans that would encode what the scan before did or not (`skip`): the same
/// plan either way.
fn plan_with(
    input: &TrackInput<'_>,
    frame_pos: &[f32],
    memo: bool,
    skip: bool,
    mut memory: Option<&mut TrackMemory>,
) -> Plan {
    let input = &Input::new(input);
    let rot = input.target == Target::Rotation;
    let n = input.raw.len();
    let sub_tol = |i: usize| input.tol[i / SUB].min(input.tol[i / SUB + 1]);
    let within = |v: Vec4| {
        (0..n).all(|f| error_to(rot, v, input.raw_unit[f]) <= input.tol[f])
            && (0..input.raw_sub.len()).all(|i| error_to(rot, v, input.sub_unit[i]) <= sub_tol(i))
    };
    if within(input.rest) {
        return Plan::Rest;
    }
    // A constant: the value at the middle frame, and the componentwise midrange.
    let mid = input.raw[n / 2];
    let (lo, hi) = input.raw.iter().fold(
        (Vec4::splat(f32::INFINITY), Vec4::splat(f32::NEG_INFINITY)),
        |(lo, hi), &v| {
            let v = if rot && v.dot(mid) < 0.0 { -v } else { v };
            (lo.min(v), hi.max(v))
        },
    );
    let midrange = (lo + hi) * 0.5;
    let midrange = if rot {
        midrange.normalize_or(Vec4::W)
    } else {
        midrange
    };
    for c in [midrange, mid] {
        if within(c) {
            return Plan::Constant(c);
        }
    }
    if n < 2 {
        return Plan::Constant(mid);
    }
    // Rotations: every nlerp threshold, the loosest (cheapest to play) kept unless a tighter
    // one saves more than 2% of the bits (slerp can span more keys).
    // (Unused by translations and scales: 2, what files store for them.)
    let dots: &[f32] = if rot { &NLERP_DOTS } else { &[2.0] };
    let values = continuous(rot, input.raw);
    let drops = drops(rot, &values);
    let ranges = ranges(&values, if rot { 4 } else { 3 });
    // Each share's quantisation, made on first use: the same for every threshold. Kept for
    // the next threshold up to MEMO_FRAMES frames (five of them, each with its key pairs'
    // answers and its neighbouring pairs' errors, about 73 bytes per frame); longer tracks
    // make it again each time, keeping only those an encoding still to be written needs.
    let mut quantised: [Option<Quantised>; ALPHAS.len()] = Default::default();
    // The cheapest encoding so far and the share (index into `quantised`) it quantised with:
    // sized, not written (only the plan's choice is).
    let mut best: Option<(Chosen, usize)> = None;
    // What the last threshold's scan found: whether it encoded the track, and the lowest dot
    // product of the key pairs it interpolated by nlerp (every pair it asked about).
    let mut last: Option<(bool, f32)> = None;
    for &dot in dots {
        // (The thresholds rise: a pair below the last one is below this one too; a const
        // assertion in `compact.rs` holds them to it.)
        // A threshold that interpolates every pair the last scan asked about the same way
        // (none of them has a dot product from the last threshold up to this one: pairs below
        // the last stay slerp, pairs at or above this one stay nlerp) asks the same questions
        // and gets the same answers, so its scan finds the same bits: the loop below would
        // stop at it (it saves nothing) where the last scan encoded the track, and go on to
        // the next threshold where it did not. Skipped, with the same plan. On mocap keyed
        // at every frame the keys kept are a degree or two apart: most tracks scan once.
        if let Some((encoded, lowest)) = last.filter(|_| skip) {
            if lowest >= dot {
                match encoded {
                    true => break,
                    false => continue,
                }
            }
        }
        let mut lowest = f32::INFINITY;
        // The shares from the largest down, stopping at the first that costs more bits than
        // the one before it (the cost falls as the share shrinks, then rises: the keys cost
        // more bits each, the interpolation keeps fewer of them). A share whose quantisation
        // alone fails does not stop it. On ties the smaller share is kept. A share whose
        // quantisation is the one before's (the same bits per component, so the same scale)
        // encodes the same bits: skipped, as the tie it would be.
        let mut here: Option<(Chosen, usize)> = None;
        let mut before: Option<Quantization> = None;
        for (k, &alpha) in ALPHAS.iter().enumerate().rev() {
            let quant = Quantization::new(input, &ranges, &drops, alpha);
            if before.replace(quant) == Some(quant) && skip {
                continue;
            }
            let qd = quantised[k].get_or_insert_with(|| {
                let known = memory.as_deref_mut().and_then(|m| m.take(&quant));
                Quantised::with(input, &values, &drops, quant, memo, known)
            });
            qd.lowest_nlerp = f32::INFINITY;
            let e = encode(input, frame_pos, &drops, qd, dot);
            lowest = lowest.min(qd.lowest_nlerp);
            if let Some(e) = e {
                match &here {
                    Some((b, _)) if e.bits > b.bits => break,
                    _ => here = Some((e, k)),
                }
            }
            if !memo {
                // Made again each time, but kept while an encoding to be written needs it.
                let needed = |i: usize| {
                    [&here, &best]
                        .iter()
                        .any(|c| c.as_ref().is_some_and(|c| c.1 == i))
                };
                for (i, q) in quantised.iter_mut().enumerate() {
                    if !needed(i) {
                        *q = None;
                    }
                }
            }
        }
        last = Some((here.is_some(), lowest));
        match (here, &best) {
            (Some(h), None) => best = Some(h),
            (Some(h), Some(b)) if (h.0.bits as f64) < 0.98 * b.0.bits as f64 => best = Some(h),
            // A tighter threshold that saves nothing: the tighter ones after it will not
            // either (the interpolation only gets closer to the source's).
            (Some(_), Some(_)) => break,
            (None, _) => {}
        }
    }
    let best = best.map(|(chosen, k)| {
        let qd = quantised[k]
            .as_ref()
            .expect("the chosen encoding's quantisation is kept");
        chosen.write(&qd.q)
    });
    if let Some(memory) = memory {
        for qd in quantised.into_iter().flatten() {
            memory.keep(qd, input.tol);
        }
    }
    // Quantisation alone was too coarse at every share: the finest quantisation, every key.
    let best = best.unwrap_or_else(|| encode_finest(input, frame_pos));
    Plan::Animated(best)
}

/// Raw values as the encoder quantises them: rotations made continuous in sign (each on the
/// hemisphere of the frame before), so that their components' ranges stay tight.
fn continuous(rot: bool, raw: &[Vec4]) -> Vec<Vec4> {
    let mut out: Vec<Vec4> = raw.to_vec();
    if rot {
        for f in 1..out.len() {
            if out[f].dot(out[f - 1]) < 0.0 {
                out[f] = -out[f];
            }
        }
    }
    out
}

/// A rotation segment whose best component to drop comes this close to zero stores all
/// four (rebuilding it would amplify errors more than a fourth component costs).
const ALL_FOUR_BELOW: f32 = 0.2;

/// Per segment: the component a rotation segment does not store (the one largest in
/// magnitude over all its frames) and its sign, or 4 (all four stored) when every component
/// comes near zero; translations and scales store x, y, z (3). Also the dropped component's
/// smallest magnitude (1 when none is dropped).
fn drops(rot: bool, values: &[Vec4]) -> Vec<(u8, bool, f32)> {
    let n = values.len() as u32;
    (0..n.div_ceil(SEG_LEN))
        .map(|s| {
            if !rot {
                return (3, false, 1.0);
            }
            let frames = &values[(s * SEG_LEN) as usize..((s + 1) * SEG_LEN).min(n) as usize];
            // A component can be rebuilt with one sign only if it keeps that sign.
            let margin = |c: usize| {
                let lo = frames.iter().map(|v| v[c]).fold(f32::INFINITY, f32::min);
                let hi = frames
                    .iter()
                    .map(|v| v[c])
                    .fold(f32::NEG_INFINITY, f32::max);
                if lo > 0.0 {
                    lo
                } else if hi < 0.0 {
                    -hi
                } else {
                    0.0
                }
            };
            let (c, m) = (0..4)
                .map(|c| (c, margin(c)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((3, 1.0));
            if m < ALL_FOUR_BELOW {
                (4, false, 1.0)
            } else {
                (c as u8, frames[0][c] < 0.0, m)
            }
        })
        .collect()
}

/// The smallest and largest value of each of a track's components (4 for rotations, else
/// 3): what every quantisation of the track starts from.
fn ranges(values: &[Vec4], components: usize) -> [(f32, f32); 4] {
    std::array::from_fn(|c| {
        if c >= components {
            return (0.0, 0.0);
        }
        let lo = values.iter().map(|v| v[c]).fold(f32::INFINITY, f32::min);
        let hi = values
            .iter()
            .map(|v| v[c])
            .fold(f32::NEG_INFINITY, f32::max);
        (lo, hi)
    })
}

/// Quantisation of a track: bits, min and scale per component (4 for rotations), from its
/// [`ranges`] and a step per component.
fn quantization(
    ranges: &[(f32, f32); 4],
    components: usize,
    step: f32,
) -> ([u8; 4], [f32; 4], [f32; 4]) {
    let mut bits = [0u8; 4];
    let mut min = [0f32; 4];
    let mut scale = [0f32; 4];
    for c in 0..components {
        let (lo, hi) = ranges[c];
        min[c] = lo;
        let range = hi - lo;
        if range <= 0.0 {
            continue;
        }
        let levels = (f64::from(range) / f64::from(step.max(f32::MIN_POSITIVE))).ceil();
        let b = (levels + 1.0).log2().ceil().clamp(1.0, f64::from(MAX_BITS)) as u8;
        bits[c] = b;
        scale[c] = range / ((1u32 << b) - 1) as f32;
    }
    (bits, min, scale)
}

/// A track's quantisation four lanes at once: each lane `round((v - min) / scale)` clamped
/// to `0..=2^bits - 1` (0 for a lane without bits), as `f32::round` and a clamp give it
/// lane by lane.
///
/// Without the library call `round` makes on the x86-64 baseline (no SSE4.1 rounding), which
/// was a twentieth of the planning's time, nor a division and a branch per lane: a NaN becomes
/// 0 (as `round` then the clamp take it), the rest is clamped to `-1..=2^24` (the largest
/// `hi` is 2^24 - 1, so the final clamp gives the same), where truncation is exact. The
/// integer part plus one where the rest, exact, is at least a half is then `round`'s answer
/// for every value at or above 0, and clamped at 0 for the negative ones.
struct Quantizer {
    min: Vec4,
    scale: Vec4,
    hi: Vec4,
}

impl Quantizer {
    fn new(track: &CompactTrack) -> Self {
        let hi = track.bits.map(|b| {
            if b == 0 {
                0.0
            } else {
                ((1u32 << b) - 1) as f32
            }
        });
        Self {
            min: Vec4::from_array(track.min),
            scale: Vec4::from_array(track.scale),
            hi: Vec4::from_array(hi),
        }
    }

    #[inline]
    fn quantize(&self, v: Vec4) -> [i32; 4] {
        let x = (v - self.min) / self.scale;
        let x = Vec4::select(x.cmpeq(x), x, Vec4::ZERO)
            .clamp(Vec4::splat(-1.0), Vec4::splat((1u32 << MAX_BITS) as f32));
        let whole = whole_part(x);
        let up = (x - whole).cmpge(Vec4::splat(0.5));
        let rounded = whole + Vec4::select(up, Vec4::ONE, Vec4::ZERO);
        truncated(rounded.clamp(Vec4::ZERO, self.hi))
    }
}

/// Each lane truncated towards zero, `x.as_ivec4().to_array()`, for lanes within i32's
/// range (the quantiser's are within `-1..=2^24`), which glam's SSE2 build converts lane by
/// lane, each with the checks of a saturating `as i32` (a fifth of the quantisation's
/// instructions); on x86-64 one conversion.
#[inline(always)]
fn truncated(x: Vec4) -> [i32; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_cvttps_epi32};
        // SAFETY: `_mm_cvttps_epi32` needs SSE2, which is part of x86-64 itself (every x86-64
        // CPU has it), and reads and writes registers only; within i32's range it truncates
        // as `as i32` does. `__m128i` and `[i32; 4]` are both 16 bytes of plain integers, so
        // the transmute is a reinterpretation of every bit pattern.
        unsafe { std::mem::transmute::<__m128i, [i32; 4]>(_mm_cvttps_epi32(x.into())) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x.as_ivec4().to_array()
    }
}

/// [`truncated`] back to floats: `x.as_ivec4().as_vec4()` within the same range, exact (the
/// integers are at most 2^24 in magnitude); on x86-64 one conversion each way.
#[inline(always)]
fn whole_part(x: Vec4) -> Vec4 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_cvtepi32_ps, _mm_cvttps_epi32};
        // SAFETY: as in `truncated`; `_mm_cvtepi32_ps` (SSE2 too) converts each integer
        // exactly where it is at most 2^24 in magnitude, as `as f32` does.
        unsafe { Vec4::from(_mm_cvtepi32_ps(_mm_cvttps_epi32(x.into()))) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x.as_ivec4().as_vec4()
    }
}

/// Tracks of up to this many frames keep their quantisations and key pairs' answers from one
/// nlerp threshold to the next (see [`plan`]).
const MEMO_FRAMES: usize = 1 << 16;

/// Shares of the tightest tolerance given to quantisation, each tried.
const ALPHAS: [f32; 5] = [0.3, 0.45, 0.6, 0.75, 0.9];

/// A track quantised with one share of its tolerance: what every nlerp threshold encodes
/// from, made once.
struct Quantised {
    quant: Quantization,
    /// Integers per frame (all four lanes).
    q: Vec<[i32; 4]>,
    /// What the decoder rebuilds at every frame, with each segment's dropped component.
    deq: Vec<Vec4>,
    /// Every frame within its tolerance (quantisation alone, every key kept).
    frames_fit: bool,
    /// Per frame interval `f`: the largest error at its points between frames ([`SUB_AT`])
    /// of keys `f` and `f + 1` interpolated by nlerp (`[0]`) and by slerp (`[1]`), as
    /// [`Quantised::fits`] measures them (tracks that never slerp, translations, scales and
    /// stepped tracks, keep their own interpolation's in `[0]`); [`UNMEASURED`] until
    /// asked, [`NO_POINTS`] where the input has none. Such a pair fits where this error is within the one tolerance
    /// of its points (`Quantised::adjacent_fits`), so, unlike `spans`' answers, it holds at
    /// any tolerances: each encode tests every neighbouring pair (quantisation alone must
    /// fit), and every plan that meets this quantisation compares instead of measuring.
    /// A NaN error stays NaN and fails, as the points' comparisons would.
    adjacent: Vec<[f32; 2]>,
    /// Per key pair `(a, b)` at `a * SPANS + b - a` (`b - a` up to [`SEG_LEN`]): whether
    /// interpolating them stays within tolerance at every frame and point between, by nlerp
    /// (bits 0 and 1: known, fits) and by slerp (bits 2 and 3). The thresholds only decide
    /// which of the two a pair uses: what one threshold measured, the others reuse.
    spans: Vec<u8>,
    /// The lowest dot product of the key pairs [`Quantised::fits`] was asked about that the
    /// track's nlerp threshold interpolates by nlerp, since the caller last set it.
    lowest_nlerp: f32,
    /// Answers remembered from earlier plans ([`TrackMemory`]), each with whether these
    /// tolerances are at least theirs at every frame (their passes hold) and at most theirs
    /// (their failures hold).
    prior: Vec<(Layer, bool, bool)>,
}

impl Quantised {
    /// The track quantised with `quant`; with `memo`, room to remember its key pairs' answers;
    /// with `known`, the same quantisation remembered from an earlier plan (its integers and
    /// decoded values, the same as made here, and its answers).
    fn with(
        input: &Input<'_>,
        values: &[Vec4],
        drops: &[(u8, bool, f32)],
        quant: Quantization,
        memo: bool,
        known: Option<Remembered>,
    ) -> Self {
        let rot = input.target == Target::Rotation;
        let (q, deq, adjacent, prior) = match known {
            Some(r) => {
                let prior = r
                    .layers
                    .into_iter()
                    .map(|l| {
                        let looser = input.tol.iter().zip(&l.tol).all(|(t, u)| t >= u);
                        let tighter = input.tol.iter().zip(&l.tol).all(|(t, u)| t <= u);
                        (l, looser, tighter)
                    })
                    .collect();
                (r.q, r.deq, r.adjacent, prior)
            }
            None => {
                let track = quant.track(input, 2.0);
                let quantizer = Quantizer::new(&track);
                let q: Vec<[i32; 4]> = values.iter().map(|&v| quantizer.quantize(v)).collect();
                let deq: Vec<Vec4> = q
                    .iter()
                    .enumerate()
                    .map(|(f, q)| {
                        // Lane order, as the decoder rebuilds it (the dropped lane is ignored).
                        let (drop, negative, _) = drops[f / SEG_LEN as usize];
                        track.dequantize(*q, drop, negative)
                    })
                    .collect();
                let adjacent = vec![[UNMEASURED; 2]; q.len().saturating_sub(1)];
                (q, deq, adjacent, Vec::new())
            }
        };
        // Rejected where an error exceeds its tolerance (a NaN does not).
        let frames_fit =
            !(0..q.len()).any(|f| error_to(rot, deq[f], input.raw_unit[f]) > input.tol[f]);
        let spans = if memo {
            vec![0; q.len() * SPANS]
        } else {
            Vec::new()
        };
        Self {
            quant,
            q,
            deq,
            frames_fit,
            adjacent,
            spans,
            lowest_nlerp: f32::INFINITY,
            prior,
        }
    }

    /// Interpolating keys `a` and `b` (`a < b <= a + SEG_LEN`) of `track` stays within
    /// tolerance at every frame and point between them.
    fn fits(
        &mut self,
        input: &Input<'_>,
        track: &CompactTrack,
        frame_pos: &[f32],
        a: usize,
        b: usize,
    ) -> bool {
        let slerp = self.slerps(track, a, b);
        let shift = if slerp { 2 } else { 0 };
        let slot = a * SPANS + (b - a);
        if let Some(&known) = self.spans.get(slot) {
            if known >> shift & 1 != 0 {
                return known >> shift & 2 != 0;
            }
        }
        // An earlier plan's answer, where these tolerances keep it: a pass at tolerances no
        // larger than these, a failure at tolerances no smaller.
        for (layer, looser, tighter) in &self.prior {
            let known = layer.spans[slot] >> shift;
            if known & 1 != 0 {
                let fits = known & 2 != 0;
                if (fits && *looser) || (!fits && *tighter) {
                    self.spans[slot] |= (1 | u8::from(fits) << 1) << shift;
                    return fits;
                }
            }
        }
        let deq = &self.deq;
        let seg = pair_slerp(track, deq[a], deq[b]);
        debug_assert_eq!(seg.is_slerp(), slerp);
        let fits = if four_at_a_time(input, seg, b) {
            fits_four(input, frame_pos, deq[a], deq[b], seg, a, b)
        } else {
            fits_one_by_one(input, track, frame_pos, deq, seg, a, b)
        };
        if let Some(known) = self.spans.get_mut(slot) {
            *known |= (1 | u8::from(fits) << 1) << shift;
        }
        fits
    }
}

impl Quantised {
    /// [`Quantised::fits`] for keys `f` and `f + 1`, with the same answer: their error from
    /// [`Quantised::adjacent`] (measured on first use) against the tolerance of the
    /// interval's points.
    fn adjacent_fits(
        &mut self,
        input: &Input<'_>,
        track: &CompactTrack,
        frame_pos: &[f32],
        f: usize,
    ) -> bool {
        let (a, b) = (f, f + 1);
        let slerp = self.slerps(track, a, b);
        let known = self.adjacent[f][usize::from(slerp)];
        let error = if known == UNMEASURED {
            let deq = &self.deq;
            let seg = pair_slerp(track, deq[a], deq[b]);
            debug_assert_eq!(seg.is_slerp(), slerp);
            // The errors `fits` measures for the pair (the three points between frames), four
            // lanes at a time for every interpolation, where `fits` goes point by point for
            // slerp and vectors: the same bits, and here all three points are measured anyway.
            let e = if four_lanes(input, b) {
                let (pa, span) = (frame_pos[a], frame_pos[b] - frame_pos[a]);
                let e = four_errors(input, frame_pos, deq[a], deq[b], seg, pa, span, f);
                worst(worst(e.x, e.y), e.z)
            } else {
                mid_error(input, track, deq, a, b, seg, frame_pos, f).unwrap_or(NO_POINTS)
            };
            self.adjacent[f][usize::from(slerp)] = e;
            e
        } else {
            known
        };
        error == NO_POINTS || error <= input.tol[f].min(input.tol[f + 1])
    }
}

impl Quantised {
    /// Whether keys `a` and `b` interpolate by slerp, as `pair_slerp` decides it without the
    /// angle (a NaN product is slerp's, as there); a pair interpolated by nlerp lowers
    /// [`Quantised::lowest_nlerp`] to its dot product.
    #[inline(always)]
    fn slerps(&mut self, track: &CompactTrack, a: usize, b: usize) -> bool {
        track.target == Target::Rotation && !track.step && {
            let d = self.deq[a].dot(self.deq[b]);
            let nlerp = d >= track.nlerp_dot;
            if nlerp {
                self.lowest_nlerp = self.lowest_nlerp.min(d);
            }
            !nlerp
        }
    }
}

/// Whether a key pair interpolated as `seg` says, whose second key is `b`, is tested four
/// points at a time ([`fits_four`]): nlerped rotations with points between frames, where
/// glam's SSE2 arithmetic is what the lanes repeat. Slerped pairs and vectors are tested
/// point by point, which stops at the first point over its tolerance (for them, the
/// four-lane test cost more instructions than it saved: for slerp 2.3% more on a compression
/// of CMU 01_01, for vectors 0.1-0.3% more on 01_01, 01_03 and Boxing_Toes).
#[inline(always)]
fn four_at_a_time(input: &Input<'_>, seg: PairSlerp, b: usize) -> bool {
    four_lanes(input, b) && input.target == Target::Rotation && !seg.is_slerp()
}

/// Whether key pairs whose second key is `b` can be measured four points at a time
/// ([`four_errors`]): any interpolation but a step, with points between frames, on x86-64.
#[inline(always)]
fn four_lanes(input: &Input<'_>, b: usize) -> bool {
    cfg!(target_arch = "x86_64") && !input.step && input.sub_unit.len() >= b * SUB
}

/// [`Quantised::adjacent`] not yet measured (errors are never negative).
const UNMEASURED: f32 = -1.0;
/// [`Quantised::adjacent`] of an interval without points between frames: it fits.
const NO_POINTS: f32 = f32::NEG_INFINITY;

/// The larger of two errors, NaN where either is (a NaN error fails every comparison).
#[inline(always)]
fn worst(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// [`Quantised::fits`] point by point: the frames inside the span, then the points between
/// frames.
fn fits_one_by_one(
    input: &Input<'_>,
    track: &CompactTrack,
    frame_pos: &[f32],
    deq: &[Vec4],
    seg: PairSlerp,
    a: usize,
    b: usize,
) -> bool {
    let rot = track.target == Target::Rotation;
    (a + 1..b).all(|f| {
        let v = if input.step {
            deq[a]
        } else {
            let u = (frame_pos[f] - frame_pos[a]) / (frame_pos[b] - frame_pos[a]);
            interpolate(deq[a], deq[b], seg, u)
        };
        error_to(rot, v, input.raw_unit[f]) <= input.tol[f]
    }) && (a..b).all(|f| {
        mid_error(input, track, deq, a, b, seg, frame_pos, f)
            .is_none_or(|error| error <= input.tol[f].min(input.tol[f + 1]))
    })
}

/// Square roots of four lanes (each correctly rounded, as `f32::sqrt`).
#[inline(always)]
fn sqrt4(v: Vec4) -> Vec4 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `_mm_sqrt_ps` needs SSE, part of the x86-64 baseline that every x86_64
        // target enables; it reads and writes registers only.
        Vec4::from(unsafe { std::arch::x86_64::_mm_sqrt_ps(v.into()) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec4::from_array(v.to_array().map(f32::sqrt))
    }
}

/// [`Quantised::fits`] for rotation keys `ka` (frame `a`) and `kb` (frame `b`) interpolated
/// as `seg` says, four points at a time (used on x86-64 for nlerp, see [`four_at_a_time`];
/// glam's `Vec4` is SSE2 there and its dot product sums `(x x + z z) + (y y + w w)`, the
/// order repeated here): for each frame interval `f` of the span, its three between-frame
/// points and the frame after it (inside the span). Each lane does what
/// `interpolate` and [`error_to`] do for one point, operation for operation, so the answer
/// is the point-by-point one; the first interval's lanes hold the frame that most often
/// breaks a span, so a failing span costs one step.
fn fits_four(
    input: &Input<'_>,
    frame_pos: &[f32],
    ka: Vec4,
    kb: Vec4,
    seg: PairSlerp,
    a: usize,
    b: usize,
) -> bool {
    let (pa, span) = (frame_pos[a], frame_pos[b] - frame_pos[a]);
    (a..b).all(|f| {
        let error = four_errors(input, frame_pos, ka, kb, seg, pa, span, f);
        let tol_mid = input.tol[f].min(input.tol[f + 1]);
        // The frame's lane counts inside the span only (the last interval's frame is `b`).
        let tol_frame = if f + 1 < b {
            input.tol[f + 1]
        } else {
            f32::INFINITY
        };
        let pass = error.cmple(Vec4::new(tol_mid, tol_mid, tol_mid, tol_frame));
        let skip = glam::BVec4A::new(false, false, false, f + 1 >= b);
        (pass | skip).all()
    })
}

/// The errors of keys `ka` and `kb` (at `frame_pos` `pa` and `pa + span`) interpolated as
/// `seg` says (nlerp, slerp, or a vector's lerp) at the points between frames of interval
/// `f` ([`SUB_AT`], lanes x, y, z) and at its second frame (lane w), each as [`mid_error`]
/// and [`fits_one_by_one`] compute them (`interpolate` and [`error_to`], glam's SSE2 `Vec4`
/// arithmetic and, for a vector's distance, its scalar `Vec3::length`, repeated on four
/// lanes).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn four_errors(
    input: &Input<'_>,
    frame_pos: &[f32],
    ka: Vec4,
    kb: Vec4,
    seg: PairSlerp,
    pa: f32,
    span: f32,
    f: usize,
) -> Vec4 {
    let at = Vec4::new(SUB_AT[0], SUB_AT[1], SUB_AT[2], 0.0);
    // Positions: the between-frame points as `mid_error` computes them, then the frame.
    let (p0, p1) = (frame_pos[f], frame_pos[f + 1]);
    let x = Vec4::splat(p0) + Vec4::splat(p1 - p0) * at;
    let x = Vec4::new(x.x, x.y, x.z, p1);
    let u = (x - Vec4::splat(pa)) / Vec4::splat(span);
    let v = if seg.is_slerp() {
        // `interpolate`'s slerp: both keys normalised, then `a * w0 + b * w1` with
        // `w0 = sin((1 - u) angle) / sin(angle)` and `w1 = sin(u angle) / sin(angle)`.
        let (a, b) = (ka.normalize_or(Vec4::W), kb.normalize_or(Vec4::W));
        let (angle, inv_sin) = (Vec4::splat(seg.angle), Vec4::splat(seg.inv_sin));
        let w0 = sin_0_pi4((Vec4::ONE - u) * angle) * inv_sin;
        let w1 = sin_0_pi4(u * angle) * inv_sin;
        [
            Vec4::splat(a.x) * w0 + Vec4::splat(b.x) * w1,
            Vec4::splat(a.y) * w0 + Vec4::splat(b.y) * w1,
            Vec4::splat(a.z) * w0 + Vec4::splat(b.z) * w1,
            Vec4::splat(a.w) * w0 + Vec4::splat(b.w) * w1,
        ]
    } else {
        // a + (b - a) * u, per component.
        let d = kb - ka;
        [
            Vec4::splat(ka.x) + Vec4::splat(d.x) * u,
            Vec4::splat(ka.y) + Vec4::splat(d.y) * u,
            Vec4::splat(ka.z) + Vec4::splat(d.z) * u,
            Vec4::splat(ka.w) + Vec4::splat(d.w) * u,
        ]
    };
    // The raw values, one point per lane (the frame's in the last).
    let sub = &input.sub_unit[f * SUB..f * SUB + SUB];
    let r = glam::Mat4::from_cols(sub[0], sub[1], sub[2], input.raw_unit[f + 1]).transpose();
    let r = [r.x_axis, r.y_axis, r.z_axis, r.w_axis];
    if input.target != Target::Rotation {
        // A vector's distance: `Vec3::length` of the difference, its dot product summed
        // `(x x + y y) + z z`.
        let m = [v[0] - r[0], v[1] - r[1], v[2] - r[2]];
        return sqrt4((m[0] * m[0] + m[1] * m[1]) + m[2] * m[2]);
    }
    // normalize_or(W): glam's dot product order, 1 / sqrt, the fallback.
    let dot = (v[0] * v[0] + v[2] * v[2]) + (v[1] * v[1] + v[3] * v[3]);
    let rcp = Vec4::ONE / sqrt4(dot);
    let ok = Vec4::ZERO.cmplt(rcp) & rcp.cmplt(Vec4::INFINITY);
    let n = [
        Vec4::select(ok, v[0] * rcp, Vec4::ZERO),
        Vec4::select(ok, v[1] * rcp, Vec4::ZERO),
        Vec4::select(ok, v[2] * rcp, Vec4::ZERO),
        Vec4::select(ok, v[3] * rcp, Vec4::ONE),
    ];
    let m = [n[0] - r[0], n[1] - r[1], n[2] - r[2], n[3] - r[3]];
    let p = [n[0] + r[0], n[1] + r[1], n[2] + r[2], n[3] + r[3]];
    let dm = (m[0] * m[0] + m[2] * m[2]) + (m[1] * m[1] + m[3] * m[3]);
    let dp = (p[0] * p[0] + p[2] * p[2]) + (p[1] * p[1] + p[3] * p[3]);
    // f32::min (a NaN loses), then the root.
    let smaller = Vec4::select(
        dm.is_nan_mask(),
        dp,
        Vec4::select(dp.is_nan_mask(), dm, dm.min(dp)),
    );
    sqrt4(smaller)
}

/// Key pairs remembered per first key in [`Quantised::spans`].
const SPANS: usize = SEG_LEN as usize + 1;

/// Encodes a quantised track with nlerp threshold `nlerp_dot`; `None` if the quantisation
/// alone exceeds the tolerance somewhere.
fn encode(
    input: &Input<'_>,
    frame_pos: &[f32],
    drops: &[(u8, bool, f32)],
    qd: &mut Quantised,
    nlerp_dot: f32,
) -> Option<Chosen> {
    let track = qd.quant.track(input, nlerp_dot);
    // Quantisation alone must fit, with every frame kept (midpoints included).
    let pairs = qd.q.len().saturating_sub(1);
    if !qd.frames_fit || !(0..pairs).all(|f| qd.adjacent_fits(input, &track, frame_pos, f)) {
        return None;
    }
    Some(choose(input, frame_pos, drops, track, qd, true))
}

/// A track's quantisation.
#[derive(Clone, Copy, PartialEq)]
struct Quantization {
    bits: [u8; 4],
    min: [f32; 4],
    scale: [f32; 4],
}

impl Quantization {
    /// Quantisation with share `alpha` of the tightest tolerance.
    fn new(
        input: &Input<'_>,
        ranges: &[(f32, f32); 4],
        drops: &[(u8, bool, f32)],
        alpha: f32,
    ) -> Self {
        let rot = input.target == Target::Rotation;
        let tol_min = input.tol.iter().copied().fold(f32::INFINITY, f32::min);
        // Per-component error e gives a vector error up to sqrt(3) e; for rotations the
        // rebuilt component adds a factor 1 / (its smallest magnitude).
        let amp = drops.iter().map(|d| d.2).fold(1.0f32, f32::min).max(0.05);
        let step = 2.0 * alpha * tol_min * amp / 3f32.sqrt();
        let (bits, min, scale) = quantization(ranges, if rot { 4 } else { 3 }, step);
        Self { bits, min, scale }
    }

    /// The track's descriptor with this quantisation and nlerp threshold.
    fn track(&self, input: &Input<'_>, nlerp_dot: f32) -> CompactTrack {
        CompactTrack {
            joint: input.joint,
            target: input.target,
            step: input.step,
            bits: self.bits,
            min: self.min,
            scale: self.scale,
            nlerp_dot,
        }
    }
}

/// Every component at the maximum precision, every key: the last resort.
fn encode_finest(input: &Input<'_>, frame_pos: &[f32]) -> EncodedTrack {
    let rot = input.target == Target::Rotation;
    let values = continuous(rot, input.raw);
    let drops = drops(rot, &values);
    let comps = if rot { 4 } else { 3 };
    let (bits, min, scale) = quantization(&ranges(&values, comps), comps, 0.0);
    let mut qd = Quantised::with(
        input,
        &values,
        &drops,
        Quantization { bits, min, scale },
        false,
        None,
    );
    // Always slerp: the closest to the source between keys.
    let track = qd.quant.track(input, 2.0);
    choose(input, frame_pos, &drops, track, &mut qd, false).write(&qd.q)
}

/// A track's encoding chosen, with its size, but not yet written: a plan sizes one encoding
/// per quantisation share and nlerp threshold it tries and writes the bits of the one it
/// keeps only ([`Chosen::write`]).
struct Chosen {
    track: CompactTrack,
    /// Each segment's choice ([`choose_segment`]).
    segments: Vec<SegmentChoice>,
    /// The frames of the segments stored sparse, one run after another.
    sparse: Vec<u32>,
    keys: usize,
    /// Bits over all segments: what [`EncodedTrack::bits`] of the written track gives.
    bits: u64,
}

/// How segment `s` is written: its dropped component and sign, and its choice (`None`
/// where no choice fits, which order 1 on the dense frames always does: nothing written).
#[derive(Clone, Copy)]
struct SegmentChoice {
    s: u32,
    drop: u8,
    negative: bool,
    choice: Option<Choice>,
    /// Its sparse frames' run in [`Chosen::sparse`] ends here.
    sparse_end: usize,
}

/// One segment's cheapest encoding: its frames stored sparse (with a mask) or dense, with
/// order-1 or order-2 prediction, the residuals' widths, and its size in bits.
#[derive(Clone, Copy)]
struct Choice {
    size: u64,
    as_sparse: bool,
    order2: bool,
    widths: [u32; 4],
}

/// Chooses how to encode a quantised track into segments: with `reduce_keys`, keys kept only
/// where interpolation leaves the tolerance, else every key.
fn choose(
    input: &Input<'_>,
    frame_pos: &[f32],
    drops: &[(u8, bool, f32)],
    track: CompactTrack,
    qd: &mut Quantised,
    reduce_keys: bool,
) -> Chosen {
    let n = qd.q.len() as u32;
    let segs = n.div_ceil(SEG_LEN);
    let mut segments = Vec::with_capacity(segs as usize);
    let mut kept: Vec<u32> = Vec::new();
    let (mut keys, mut bits) = (0, 0);
    let mut sparse = Vec::new();
    for s in 0..segs {
        let first = s * SEG_LEN;
        let end = (first + SEG_LEN).min(n); // frames of this segment: first..end
        let last = end.min(n - 1); // the key the segment interpolates towards
        sparse.clear();
        if reduce_keys {
            reduce(input, &track, frame_pos, qd, first, last, &mut sparse);
        } else {
            sparse.extend(first..=last);
        }
        // Keys stored in this segment: those before the next segment's first frame (which
        // that segment stores), and the clip's last frame in the last segment.
        sparse.retain(|&f| f < end);
        let (drop, negative, _) = drops[s as usize];
        let q = &qd.q[first as usize..end as usize];
        let choice = choose_segment(&track, s, n, drop, negative, q, &sparse);
        let len = (end - first) as usize;
        match choice {
            Some(c) if c.as_sparse => {
                keys += sparse.len();
                kept.extend_from_slice(&sparse);
            }
            _ => keys += len,
        }
        bits += choice.map_or(0, |c| c.size);
        segments.push(SegmentChoice {
            s,
            drop,
            negative,
            choice,
            sparse_end: kept.len(),
        });
    }
    Chosen {
        track,
        segments,
        sparse: kept,
        keys,
        bits,
    }
}

/// The stored components of `q` for a segment that drops component `drop`.
#[inline]
fn pick(q: &[i32; 4], drop: u8) -> [i32; 4] {
    let (c, n) = stored(drop);
    std::array::from_fn(|k| if k < n { q[c[k]] } else { 0 })
}

impl Chosen {
    /// The track written: every segment's bits as chosen, from the quantised integers `q`
    /// it was chosen with.
    fn write(&self, q: &[[i32; 4]]) -> EncodedTrack {
        let n = q.len() as u32;
        let mut qs = Vec::new();
        let mut start = 0;
        let segments = self
            .segments
            .iter()
            .map(|seg| {
                let first = seg.s * SEG_LEN;
                let end = (first + SEG_LEN).min(n);
                let sparse = &self.sparse[start..seg.sparse_end];
                start = seg.sparse_end;
                let Some(choice) = seg.choice else {
                    return Bits::default();
                };
                qs.clear();
                qs.extend((first..end).map(|f| pick(&q[f as usize], seg.drop)));
                let every: [u32; SEG_LEN as usize] = std::array::from_fn(|i| first + i as u32);
                let frames = match choice.as_sparse {
                    true => sparse,
                    false => &every[..(end - first) as usize],
                };
                write_segment(
                    &self.track,
                    seg.s,
                    n,
                    seg.drop,
                    seg.negative,
                    &qs,
                    frames,
                    choice,
                )
            })
            .collect();
        let out = EncodedTrack {
            track: self.track,
            segments,
            keys: self.keys,
        };
        debug_assert_eq!(out.bits(), self.bits);
        out
    }
}

/// Greedy key selection over frames `first..=last` (both kept): each segment between kept
/// keys is extended while interpolating its two keys stays within tolerance at every frame
/// it spans. Appends the kept frames to `kept`.
fn reduce(
    input: &Input<'_>,
    track: &CompactTrack,
    frame_pos: &[f32],
    qd: &mut Quantised,
    first: u32,
    last: u32,
    kept: &mut Vec<u32>,
) {
    kept.push(first);
    if last == first {
        return;
    }
    let mut start = first as usize;
    for end in first as usize + 2..=last as usize {
        if !qd.fits(input, track, frame_pos, start, end) {
            start = end - 1;
            kept.push(start as u32);
        }
    }
    kept.push(last);
}

/// The largest error of keys `a` and `b` interpolated at the points inside frame interval
/// `f` (NaN where any is NaN); `None` where the input has no points there.
#[inline]
#[allow(clippy::too_many_arguments)]
fn mid_error(
    input: &Input<'_>,
    track: &CompactTrack,
    deq: &[Vec4],
    a: usize,
    b: usize,
    seg: PairSlerp,
    frame_pos: &[f32],
    f: usize,
) -> Option<f32> {
    let raw = input.sub_unit.get(f * SUB..(f + 1) * SUB)?;
    let rot = track.target == Target::Rotation;
    let seg = (!input.step).then_some(seg);
    let errors = raw.iter().zip(SUB_AT).map(|(&raw, at)| {
        let v = match seg {
            None => deq[a],
            Some(seg) => {
                let x = frame_pos[f] + (frame_pos[f + 1] - frame_pos[f]) * at;
                let u = (x - frame_pos[a]) / (frame_pos[b] - frame_pos[a]);
                interpolate(deq[a], deq[b], seg, u)
            }
        };
        error_to(rot, v, raw)
    });
    Some(errors.fold(0.0, worst))
}

/// Zigzag: signed to unsigned, small magnitudes small.
#[inline]
pub(super) fn zigzag(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

pub(super) fn width(max_zigzag: u32) -> u32 {
    32 - max_zigzag.leading_zeros()
}

/// The cheapest encoding of segment `s` (of a clip of `n` frames) storing either the
/// `sparse` frames (with a mask) or every frame (dense), with order-1 or order-2
/// prediction (the first of equals); `None` where none fits. `q` holds the segment's
/// frames' integers (all four lanes: the widths are those of the lanes `drop` stores).
#[allow(clippy::too_many_arguments)]
fn choose_segment(
    track: &CompactTrack,
    s: u32,
    n: u32,
    drop: u8,
    negative: bool,
    q: &[[i32; 4]],
    sparse: &[u32],
) -> Option<Choice> {
    let rot = track.target == Target::Rotation;
    let first = s * SEG_LEN;
    let len = (n - first).min(SEG_LEN);
    let bits = track.stored_bits(drop);
    let (lanes, nc) = stored(drop);
    let key_bits: u32 = bits.iter().take(nc).map(|&b| u32::from(b)).sum();
    let mut best: Option<Choice> = None;
    let is_dense = sparse.len() == len as usize;
    let dense = &q[..len as usize];
    // The sparse frames' values side by side, so that both sets are read in order.
    let mut gathered = [[0i32; 4]; SEG_LEN as usize];
    if !is_dense {
        for (g, &f) in gathered.iter_mut().zip(sparse) {
            *g = q[(f - first) as usize];
        }
    }
    let sets: [(&[[i32; 4]], bool); 2] = [
        (
            if is_dense {
                dense
            } else {
                &gathered[..sparse.len()]
            },
            !is_dense,
        ),
        (dense, false),
    ];
    for (values, as_sparse) in sets {
        let widest = widest_residuals(values);
        for order2 in [false, true] {
            if order2 && values.len() < 2 {
                continue;
            }
            let order = 1 + usize::from(order2);
            let widths: [u32; 4] = std::array::from_fn(|c| match c < nc {
                true => width(widest[usize::from(order2)][lanes[c]]),
                false => 0,
            });
            if widths.iter().any(|&w| w > MAX_WIDTH) {
                continue;
            }
            let (_, hlen) = header(as_sparse, order2, drop, negative, widths).bits(rot);
            let residual_bits: u32 = widths.iter().take(nc).sum();
            let size = u64::from(hlen)
                + if as_sparse { u64::from(len - 1) } else { 0 }
                + order as u64 * u64::from(key_bits)
                + (values.len() - order) as u64 * u64::from(residual_bits);
            if best.as_ref().is_none_or(|b| size < b.size) {
                best = Some(Choice {
                    size,
                    as_sparse,
                    order2,
                    widths,
                });
            }
        }
        if is_dense {
            break;
        }
    }
    best
}

/// Per component, the bitwise OR of the zigzagged residuals of `v`'s values from their
/// order-1 prediction (`[0]`, from the second value on) and their order-2 prediction (`[1]`,
/// from the third on), the ones [`residual`] gives. An OR has the same highest bit as the
/// largest of the values, so its [`width`] is theirs. The order-2 residual is the difference
/// of two neighbouring order-1 residuals (`c - (2b - a) = (c - b) - (b - a)`, exactly, in
/// wrapping arithmetic), so one pass gives both.
#[inline]
fn widest_residuals(v: &[[i32; 4]]) -> [[u32; 4]; 2] {
    let diff =
        |a: [i32; 4], b: [i32; 4]| -> [i32; 4] { std::array::from_fn(|c| a[c].wrapping_sub(b[c])) };
    let or_zigzag = |acc: &mut [u32; 4], d: [i32; 4]| {
        for (a, d) in acc.iter_mut().zip(d) {
            *a |= zigzag(d);
        }
    };
    let (mut one, mut two) = ([0u32; 4], [0u32; 4]);
    if v.len() < 2 {
        return [one, two];
    }
    let mut last = diff(v[1], v[0]);
    or_zigzag(&mut one, last);
    for k in 2..v.len() {
        let d = diff(v[k], v[k - 1]);
        or_zigzag(&mut one, d);
        or_zigzag(&mut two, diff(d, last));
        last = d;
    }
    [one, two]
}

/// The residual of frame `frames[k]` (components of `q`, whose first frame is `first`) from
/// its prediction by the one or two frames stored before it.
#[inline(always)]
fn residual(q: &[[i32; 4]], first: u32, frames: &[u32], order2: bool, k: usize) -> [i32; 4] {
    let at = |f: u32| q[(f - first) as usize];
    let cur = at(frames[k]);
    let p1 = at(frames[k - 1]);
    std::array::from_fn(|c| {
        let pred = if order2 {
            let p0 = at(frames[k - 2]);
            p1[c].wrapping_mul(2).wrapping_sub(p0[c])
        } else {
            p1[c]
        };
        cur[c].wrapping_sub(pred)
    })
}

/// A segment's header.
fn header(as_sparse: bool, order2: bool, drop: u8, negative: bool, widths: [u32; 4]) -> SegHeader {
    SegHeader {
        sparse: as_sparse,
        order2,
        drop,
        negative,
        widths: widths.map(|w| w as u8),
    }
}

/// Segment `s` written as `choice` ([`choose_segment`]) says, storing `frames` (the sparse
/// ones, or every frame).
#[allow(clippy::too_many_arguments)]
fn write_segment(
    track: &CompactTrack,
    s: u32,
    n: u32,
    drop: u8,
    negative: bool,
    q: &[[i32; 4]],
    frames: &[u32],
    choice: Choice,
) -> Bits {
    let rot = track.target == Target::Rotation;
    let first = s * SEG_LEN;
    let len = (n - first).min(SEG_LEN);
    let bits = track.stored_bits(drop);
    let nc = stored(drop).1;
    let Choice {
        size,
        as_sparse,
        order2,
        widths,
    } = choice;
    let order = 1 + usize::from(order2);
    let mut b = Bits {
        words: Vec::with_capacity(size.div_ceil(64) as usize),
        len: 0,
    };
    let (hbits, hlen) = header(as_sparse, order2, drop, negative, widths).bits(rot);
    b.push(hbits, hlen);
    if as_sparse {
        let mut mask = 0u32;
        for &f in &frames[1..] {
            mask |= 1 << (f - first - 1);
        }
        b.push(mask, len - 1);
    }
    for &f in &frames[..order] {
        for (v, &k) in q[(f - first) as usize].iter().zip(&bits).take(nc) {
            b.push(*v as u32, u32::from(k));
        }
    }
    for k in order..frames.len() {
        for (v, &w) in residual(q, first, frames, order2, k)
            .iter()
            .zip(&widths)
            .take(nc)
        {
            b.push(zigzag(*v), w);
        }
    }
    debug_assert_eq!(b.len, size);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "x86_64")]
    use crate::play::sampling::compact::slerp_of_dot;

    #[test]
    fn bits_push_and_read_back() {
        let mut b = Bits::default();
        let items: Vec<(u32, u32)> = (0..500)
            .map(|i| {
                let n = (i * 7 % 33) as u32;
                let v = (i as u32).wrapping_mul(2654435761)
                    & if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
                (v, n.min(32))
            })
            .collect();
        for &(v, n) in &items {
            b.push(v, n);
        }
        let mut other = Bits::default();
        other.push(5, 3);
        other.append(&b);
        let bytes = other.into_padded_bytes();
        let mut pos = 3u32;
        assert_eq!(crate::clip::compact::read_bits(&bytes, 0, 3), 5);
        for &(v, n) in &items {
            assert_eq!(
                crate::clip::compact::read_bits(&bytes, pos, n),
                v,
                "at {pos}"
            );
            pos += n;
        }
    }

    /// A linear rotation track of joint 0, its rest the identity.
    fn rotation<'a>(raw: &'a [Vec4], raw_sub: &'a [Vec4], tol: &'a [f32]) -> TrackInput<'a> {
        TrackInput {
            joint: 0,
            target: Target::Rotation,
            step: false,
            raw,
            raw_sub,
            tol,
            rest: Vec4::W,
            units: None,
        }
    }

    proptest::proptest! {
        /// The one-pass widths of both prediction orders are the widths of the largest
        /// zigzagged residual that [`residual`] gives frame by frame, over every frame and
        /// over a sparse subset, for values from small steps to the whole i32 range (where
        /// the predictions wrap).
        #[test]
        fn one_pass_residual_widths_are_the_largest_residuals_widths(
            q in proptest::collection::vec(
                proptest::array::uniform4(proptest::prop_oneof![-40i32..40, proptest::num::i32::ANY]),
                1..=SEG_LEN as usize,
            ),
            keep in proptest::collection::vec(proptest::bool::ANY, SEG_LEN as usize),
        ) {
            let first = 64u32;
            let dense: Vec<u32> = (0..q.len() as u32).map(|i| first + i).collect();
            let sparse: Vec<u32> = dense.iter().copied().filter(|f| keep[(f - first) as usize]).collect();
            for frames in [&dense, &sparse] {
                let values: Vec<[i32; 4]> = frames.iter().map(|&f| q[(f - first) as usize]).collect();
                let one_pass = widest_residuals(&values);
                for order2 in [false, true] {
                    let order = 1 + usize::from(order2);
                    let mut widest = [0u32; 4];
                    for k in order..frames.len() {
                        let r = residual(&q, first, frames, order2, k);
                        for (m, v) in widest.iter_mut().zip(r) {
                            *m = (*m).max(zigzag(v));
                        }
                    }
                    proptest::prop_assert_eq!(
                        widest.map(width),
                        one_pass[usize::from(order2)].map(width),
                        "order {} over {} frames", order, frames.len()
                    );
                }
            }
        }

        /// The four-lane test of a rotation key pair, interpolated by nlerp or by slerp,
        /// answers as the point-by-point one, at the edge: one frame's tolerance is set to
        /// exactly the largest error of the points it governs (all pass), then to the float
        /// below it (the worst fails); every other tolerance is loose. Spans of 1 to 12
        /// frames, keys on either hemisphere, slerped keys up to a half turn apart.
        #[test]
        #[cfg(target_arch = "x86_64")]
        fn spans_four_at_a_time_answer_as_one_by_one(
            raw in proptest::collection::vec(proptest::array::uniform4(-1.0f32..1.0), 16..40),
            keys in proptest::array::uniform2(proptest::array::uniform4(-1.0f32..1.0)),
            flip in proptest::bool::ANY,
            slerp in proptest::bool::ANY,
            a in 0usize..4,
            len in 1usize..13,
            pick in 0usize..64,
        ) {
            let n = raw.len();
            let raw: Vec<Vec4> = raw.iter().map(|v| Vec4::from_array(*v)).collect();
            let raw_sub: Vec<Vec4> = (0..(n - 1) * SUB)
                .map(|i| raw[i / SUB].lerp(raw[i / SUB + 1], SUB_AT[i % SUB]))
                .collect();
            let b = a + len;
            let frame_pos: Vec<f32> = (0..n).map(|f| f as f32 * 1.0001).collect();
            let mut deq = raw.clone();
            deq[a] = Vec4::from_array(keys[0]).normalize_or(Vec4::W);
            deq[b] = Vec4::from_array(keys[1]).normalize_or(Vec4::W) * if flip { -1.0 } else { 1.0 };
            // The pair's slerp as `pair_slerp` makes it for a track that slerps every pair.
            let seg = match slerp {
                true => slerp_of_dot(deq[a].dot(deq[b])),
                false => PairSlerp::default(),
            };
            proptest::prop_assert_eq!(seg.is_slerp(), slerp);
            let span = frame_pos[b] - frame_pos[a];
            let at = |x: f32| interpolate(deq[a], deq[b], seg, (x - frame_pos[a]) / span);
            // The frame whose tolerance is on the edge, and the errors of what it governs:
            // itself (inside the span) and the points of the intervals on either side.
            let edge = a + pick % (len + 1);
            let mut worst = 0f32;
            if edge > a && edge < b {
                worst = worst.max(error(true, at(frame_pos[edge]), raw[edge]));
            }
            for f in [edge.wrapping_sub(1), edge] {
                if f >= a && f < b {
                    for (k, t) in SUB_AT.iter().enumerate() {
                        let x = frame_pos[f] + (frame_pos[f + 1] - frame_pos[f]) * t;
                        worst = worst.max(error(true, at(x), raw_sub[f * SUB + k]));
                    }
                }
            }
            for (tol_edge, expect) in [(worst, true), (worst.next_down(), false)] {
                let mut tol = vec![1e9f32; n];
                tol[edge] = tol_edge;
                let src = rotation(&raw, &raw_sub, &tol);
                let input = Input::new(&src);
                let track = CompactTrack {
                    joint: 0,
                    target: Target::Rotation,
                    step: false,
                    bits: [8; 4],
                    min: [-1.0; 4],
                    scale: [1.0 / 128.0; 4],
                    nlerp_dot: 2.0,
                };
                let one = fits_one_by_one(&input, &track, &frame_pos, &deq, seg, a, b);
                let four = fits_four(&input, &frame_pos, deq[a], deq[b], seg, a, b);
                proptest::prop_assert_eq!(one, four, "tolerance {} at frame {}", tol_edge, edge);
                // Where the edge frame governs a point, the answer turns at it.
                if len > 1 || edge == a || edge == b {
                    proptest::prop_assert_eq!(one, expect || worst == 0.0);
                }
            }
        }
    }

    proptest::proptest! {
        /// [`four_errors`]' lanes are, bit for bit, the errors the point-by-point path
        /// measures: each of the three points between frames of an interval (`interpolate`
        /// then `error_to`, as `mid_error` computes them, and `mid_error`'s largest) and its
        /// second frame, for rotations interpolated by nlerp and by slerp (keys of any
        /// length, a zero key among them: `normalize_or`'s fallback) and for vectors
        /// (translations, scales).
        #[test]
        #[cfg(target_arch = "x86_64")]
        fn four_lane_errors_are_the_point_by_point_ones(
            raw in proptest::collection::vec(proptest::array::uniform4(-1.0f32..1.0), 8..16),
            keys in proptest::array::uniform2(proptest::array::uniform4(-1.0f32..1.0)),
            lengths in proptest::array::uniform2(proptest::sample::select(vec![0.0f32, 0.5, 1.0, 1.0, 1.7])),
            kind in 0usize..4,
            a in 0usize..3,
            len in 1usize..5,
            pick in 0usize..8,
        ) {
            // 0: nlerp, 1: slerp, 2: translation, 3: scale.
            let rot = kind < 2;
            let n = raw.len();
            let raw: Vec<Vec4> = raw.iter().map(|v| Vec4::from_array(*v)).collect();
            let raw: Vec<Vec4> = match rot {
                true => raw.iter().map(|v| v.normalize_or(Vec4::W)).collect(),
                false => raw.iter().map(|v| v.truncate().extend(0.0)).collect(),
            };
            let raw_sub: Vec<Vec4> = (0..(n - 1) * SUB)
                .map(|i| raw[i / SUB].lerp(raw[i / SUB + 1], SUB_AT[i % SUB]))
                .collect();
            let frame_pos: Vec<f32> = (0..n).map(|f| f as f32 * 1.0001).collect();
            let b = a + len;
            let mut deq = raw.clone();
            for (k, key) in [a, b].into_iter().enumerate() {
                let v = Vec4::from_array(keys[k]);
                // Rotations near unit length as dequantised, or not at all (zero: the
                // fallback of `normalize_or`).
                deq[key] = if rot { v.normalize_or(Vec4::W) * lengths[k] } else { v };
            }
            let target = [Target::Rotation, Target::Rotation, Target::Translation, Target::Scale][kind];
            let tol = vec![1.0f32; n];
            let src = TrackInput {
                joint: 0, target, step: false, raw: &raw, raw_sub: &raw_sub, tol: &tol,
                rest: Vec4::W, units: None,
            };
            let input = Input::new(&src);
            let track = CompactTrack {
                joint: 0,
                target,
                step: false,
                bits: [8; 4],
                min: [-1.0; 4],
                scale: [1.0 / 128.0; 4],
                nlerp_dot: 2.0,
            };
            let seg = match kind {
                1 => slerp_of_dot(deq[a].dot(deq[b])),
                _ => PairSlerp::default(),
            };
            let f = a + pick % len;
            let (pa, span) = (frame_pos[a], frame_pos[b] - frame_pos[a]);
            let e = four_errors(&input, &frame_pos, deq[a], deq[b], seg, pa, span, f);
            // Each point between frames, as `mid_error` computes it.
            for (k, at) in SUB_AT.iter().enumerate() {
                let x = frame_pos[f] + (frame_pos[f + 1] - frame_pos[f]) * at;
                let u = (x - frame_pos[a]) / (frame_pos[b] - frame_pos[a]);
                let point = error_to(rot, interpolate(deq[a], deq[b], seg, u), input.sub_unit[f * SUB + k]);
                proptest::prop_assert_eq!(e[k].to_bits(), point.to_bits(), "point {}", k);
            }
            let mid = mid_error(&input, &track, &deq, a, b, seg, &frame_pos, f).unwrap();
            proptest::prop_assert_eq!(worst(worst(e.x, e.y), e.z).to_bits(), mid.to_bits());
            // The frame, as `fits_one_by_one` computes it.
            let u = (frame_pos[f + 1] - frame_pos[a]) / (frame_pos[b] - frame_pos[a]);
            let frame = error_to(rot, interpolate(deq[a], deq[b], seg, u), input.raw_unit[f + 1]);
            proptest::prop_assert_eq!(e.w.to_bits(), frame.to_bits());
        }
    }

    proptest::proptest! {
        /// Neighbouring keys' pairs, decided from their remembered errors
        /// (`Quantised::adjacent_fits`), answer as `Quantised::fits` measuring them afresh
        /// does: over three rounds of tolerances with the errors kept from one round to the
        /// next (through `TrackMemory`), on rotations (by nlerp and slerp) and translations,
        /// stepped or not; in the last round one interval's tolerances sit exactly on its
        /// remembered error (fits) and on the float below it (does not).
        #[test]
        fn neighbouring_pairs_answer_as_fits_does(
            raw in proptest::collection::vec(proptest::array::uniform4(-1.0f32..1.0), 8..24),
            sub_noise in proptest::collection::vec(-0.05f32..0.05, 24 * SUB),
            rot in proptest::bool::ANY,
            step in proptest::bool::ANY,
            dot in proptest::sample::select(vec![0.5f32, 0.99, 0.9999, 2.0]),
            tols in proptest::collection::vec(proptest::collection::vec(0.0f32..0.3, 24), 3),
            edge in 0usize..22,
            bits in 3u8..9,
        ) {
            let n = raw.len();
            let raw: Vec<Vec4> = raw
                .iter()
                .map(|v| {
                    let v = Vec4::from_array(*v);
                    if rot { v.normalize_or(Vec4::W) } else { v.truncate().extend(0.0) }
                })
                .collect();
            let raw_sub: Vec<Vec4> = (0..(n - 1) * SUB)
                .map(|i| raw[i / SUB].lerp(raw[i / SUB + 1], SUB_AT[i % SUB]) + Vec4::splat(sub_noise[i]))
                .collect();
            let frame_pos: Vec<f32> = (0..n).map(|f| f as f32 * 1.0001).collect();
            let target = if rot { Target::Rotation } else { Target::Translation };
            let values = continuous(rot, &raw);
            let drops = drops(rot, &values);
            let steps = ((1u32 << bits) - 1) as f32;
            let quant = Quantization { bits: [bits; 4], min: [-1.0; 4], scale: [2.0 / steps; 4] };
            let edge = edge.min(n - 2);
            let mut memory = TrackMemory::new(usize::MAX);
            for (round, tol) in tols.iter().enumerate() {
                let tol = tol[..n].to_vec();
                let src = TrackInput {
                    joint: 0, target, step, raw: &raw, raw_sub: &raw_sub, tol: &tol, rest: Vec4::W,
                    units: None,
                };
                let input = Input::new(&src);
                let track = quant.track(&input, dot);
                let known = memory.take(&quant);
                proptest::prop_assert_eq!(known.is_some(), round > 0);
                let mut kept = Quantised::with(&input, &values, &drops, quant, true, known);
                let mut edge_cases = vec![None];
                if round == 2 {
                    let slerp = rot && !step && kept.deq[edge].dot(kept.deq[edge + 1]) < dot;
                    let e = kept.adjacent[edge][usize::from(slerp)];
                    proptest::prop_assert!(e != UNMEASURED, "measured in an earlier round");
                    if e.is_finite() && e > 0.0 {
                        edge_cases = vec![Some((e, true)), Some((e.next_down(), false))];
                    }
                }
                for case in edge_cases {
                    let mut tol = tol.clone();
                    if let Some((t, _)) = case {
                        tol[edge] = t;
                        tol[edge + 1] = t;
                    }
                    let src = TrackInput { tol: &tol, units: None, ..src };
                    let input = Input::new(&src);
                    let mut fresh = Quantised::with(&input, &values, &drops, quant, false, None);
                    for f in 0..n - 1 {
                        let measured = fresh.fits(&input, &track, &frame_pos, f, f + 1);
                        let remembered = kept.adjacent_fits(&input, &track, &frame_pos, f);
                        proptest::prop_assert_eq!(measured, remembered, "interval {} round {}", f, round);
                        if let (Some((_, expect)), true) = (case, f == edge) {
                            proptest::prop_assert_eq!(remembered, expect);
                        }
                    }
                }
                memory.keep(kept, &tol);
            }
        }
    }

    /// A rotation track planned keeping each quantisation for the next threshold (as tracks
    /// up to MEMO_FRAMES frames are) and making it again each time (as longer ones do, but
    /// for those an encoding still to be written needs): the same plan, at a tolerance that
    /// keeps some keys and drops others.
    #[test]
    fn keeping_quantisations_changes_no_plan() {
        let n = 400;
        let q = |t: f32| {
            glam::Quat::from_euler(
                glam::EulerRot::XYZ,
                (t * 3.1).sin(),
                0.3 * t,
                (t * 7.3).cos(),
            )
        };
        let raw: Vec<Vec4> = (0..n).map(|f| Vec4::from(q(f as f32 / 60.0))).collect();
        let raw_sub: Vec<Vec4> = (0..(n - 1) * SUB)
            .map(|i| Vec4::from(q((i / SUB) as f32 / 60.0 + SUB_AT[i % SUB] / 60.0)))
            .collect();
        let frame_pos: Vec<f32> = (0..n).map(|f| f as f32).collect();
        for tol in [1e-4f32, 1e-3, 1e-2] {
            let tol = vec![tol; n];
            let input = rotation(&raw, &raw_sub, &tol);
            let (kept, made) = (
                plan_with(&input, &frame_pos, true, true, None),
                plan_with(&input, &frame_pos, false, true, None),
            );
            assert!(matches!(kept, Plan::Animated(_)), "{tol:?}");
            assert_eq!(kept, made);
        }
    }

    proptest::proptest! {
        /// `Quantizer` answers as `f32::round` and a clamp to `0..=hi` lane by lane (0 for a
        /// lane without bits): on random bit patterns (NaNs, infinities, negative, huge and
        /// tiny values), on halves and on the float just below a half, with a unit scale and
        /// with random ranges (the division rounding as the scalar one does).
        #[test]
        fn quantizing_answers_as_round_once_clamped(
            lanes in proptest::array::uniform4(proptest::num::u32::ANY),
            half in -70_000i32..70_000,
            bits in proptest::array::uniform4(0u8..=MAX_BITS),
            min in proptest::array::uniform4(-3.0f32..3.0),
            scale in proptest::array::uniform4(1e-7f32..1e-2),
        ) {
            let specials = [half as f32 * 0.5, 0.49999997, 0.5, 8_388_607.5];
            let values = [
                lanes.map(f32::from_bits),
                specials,
                [specials[3], specials[0], specials[1], specials[2]],
            ];
            for (min, scale) in [([0.0; 4], [1.0; 4]), (min, scale)] {
                let track = CompactTrack {
                    joint: 0,
                    target: Target::Translation,
                    step: false,
                    bits,
                    min,
                    scale,
                    nlerp_dot: 2.0,
                };
                let quantizer = Quantizer::new(&track);
                for v in values {
                    let ours = quantizer.quantize(Vec4::from_array(v));
                    for c in 0..4 {
                        let want = match bits[c] {
                            0 => 0,
                            b => ((v[c] - min[c]) / scale[c])
                                .round()
                                .clamp(0.0, ((1u32 << b) - 1) as f32) as i32,
                        };
                        proptest::prop_assert_eq!(ours[c], want, "lane {} of {:?}", c, v);
                    }
                }
            }
        }

        /// Skipping the scans of a share whose quantisation is the one before's, and of the
        /// thresholds that interpolate every pair asked about as the last one did, plans what
        /// the full scan plans: rotations turning from a tenth of a degree to several degrees
        /// per frame (key pairs on either side of every nlerp threshold), translations, at
        /// tolerances from tight to loose. (Checked to fail where every later threshold is
        /// skipped, or none of them.)
        #[test]
        fn skipped_scans_change_no_plan(
            speed in 0.05f32..8.0,
            wobble in proptest::option::of(0.0f32..3.0),
            tol in -6.0f32..-1.5,
            translation in proptest::bool::ANY,
            n in 2usize..200,
        ) {
            // Turning evenly about one axis (no wobble), slerp is exact where nlerp is not:
            // the tighter thresholds keep fewer keys at tight tolerances.
            let (wobble, tol) = (wobble.unwrap_or(0.0), 10f32.powf(tol));
            let value = |t: f32| {
                let q = glam::Quat::from_euler(
                    glam::EulerRot::XYZ,
                    speed * t,
                    (wobble * t).sin(),
                    0.4 * (wobble * 1.7 * t).cos(),
                );
                match translation {
                    true => Vec4::new(speed * t, (wobble * t).sin(), 0.5, 0.0),
                    false => Vec4::from(q),
                }
            };
            let raw: Vec<Vec4> = (0..n).map(|f| value(f as f32 / 30.0)).collect();
            let raw_sub: Vec<Vec4> = (0..(n - 1) * SUB)
                .map(|i| value(((i / SUB) as f32 + SUB_AT[i % SUB]) / 30.0))
                .collect();
            let frame_pos: Vec<f32> = (0..n).map(|f| f as f32).collect();
            let tol: Vec<f32> = (0..n).map(|f| tol * (1.0 + (f % 7) as f32 * 0.1)).collect();
            let mut input = rotation(&raw, &raw_sub, &tol);
            if translation {
                input.target = Target::Translation;
                input.rest = Vec4::ZERO;
            }
            for memo in [true, false] {
                proptest::prop_assert_eq!(
                    plan_with(&input, &frame_pos, memo, true, None),
                    plan_with(&input, &frame_pos, memo, false, None)
                );
            }
        }
    }

    proptest::proptest! {
        /// A track planned again and again at other tolerances (up, down, back), each time
        /// with what the plans before it remembered, plans what it plans with nothing
        /// remembered: with room for everything, and with room for little (answers and
        /// quantisations dropped along the way).
        #[test]
        fn remembered_answers_change_no_plan(
            speed in 0.05f32..6.0,
            wobble in 0.0f32..3.0,
            tol in -5.0f32..-2.0,
            steps in proptest::collection::vec(0.5f32..2.0, 2..7),
            n in 2usize..160,
            roomy in proptest::bool::ANY,
        ) {
            let value = |t: f32| {
                Vec4::from(glam::Quat::from_euler(
                    glam::EulerRot::XYZ,
                    speed * t,
                    (wobble * t).sin(),
                    0.4 * (wobble * 1.7 * t).cos(),
                ))
            };
            let raw: Vec<Vec4> = (0..n).map(|f| value(f as f32 / 30.0)).collect();
            let raw_sub: Vec<Vec4> = (0..(n - 1) * SUB)
                .map(|i| value(((i / SUB) as f32 + SUB_AT[i % SUB]) / 30.0))
                .collect();
            let frame_pos: Vec<f32> = (0..n).map(|f| f as f32).collect();
            let mut memory = TrackMemory::new(if roomy { 1 << 30 } else { 40 * n });
            let mut m = 1.0f32;
            for step in steps {
                m *= step;
                let tol: Vec<f32> =
                    (0..n).map(|f| 10f32.powf(tol) * m * (1.0 + (f % 5) as f32 * 0.1)).collect();
                let input = rotation(&raw, &raw_sub, &tol);
                proptest::prop_assert_eq!(
                    plan_remembering(&input, &frame_pos, &mut memory),
                    plan(&input, &frame_pos)
                );
            }
        }
    }

    #[test]
    fn zigzag_round_trips() {
        for v in [-5, -1, 0, 1, 7, i32::MAX / 2, i32::MIN / 2] {
            let z = zigzag(v);
            assert_eq!(((z >> 1) as i32) ^ -((z & 1) as i32), v);
        }
    }
}

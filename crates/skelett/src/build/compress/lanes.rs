//! The lanes layout ([`CompactLayout::Lanes`], format in `clip/compact_lanes.rs`) made from
//! a compact clip in the streamed layout: every track's keys decoded, put on the union of
//! their frames (each track's value at a frame it has no key at is what the streamed layout
//! interpolates there before normalising: the chord of an nlerped pair, the point on a
//! slerped pair's arc), with a flag per lane and key where the pair is slerped (the runtime
//! slerps those lanes between the finer keys, which follows the same arc), then each block of eight tracks quantised to 16
//! bits on each segment's range per lane and row.
//!
//! Unlike the seekable layout, this one changes the values (by the rounding to 16 bits), so
//! [`crate::compress::compress`] measures the clip again in it; [`crate::Clip::with_compact_layout`]
//! makes it without a reference to measure against.

use glam::Vec4;

use crate::clip::compact::{Compact, CompactLayout, CompactTrack};
use crate::clip::compact_lanes::{BlockSpec, PackedLanes, LANE_SEG};
use crate::clip::lanes::{Row, LANES};
use crate::play::sampling::compact::{
    interpolate, pair_slerp, reciprocal, slerp_of_dot, unit_span, SegDecoder,
};
use crate::Target;

/// How far (as unit 4-vectors) nlerp between a slerped pair's finer keys may stray from the
/// arc for the pair to be nlerped: about 2e-6 radians.
const SLERP_GAP: f32 = 1e-6;

/// Components below this magnitude are stored as zero.
const TINY: f32 = 1e-15;

/// Largest 16-bit integer, as the quantisation's steps.
const STEPS: f64 = 65535.0;

/// `c` (streamed) in the lanes layout; `None` for another layout, or where the layout would
/// need more keys or blocks than it can index.
pub(crate) fn lanes_from_stream(c: &Compact) -> Option<Compact> {
    // Keys are found by frame (`PackedLanes::key_at`): frames must be exact in f32.
    if c.layout != CompactLayout::Stream || c.frames > crate::compress::MAX_FRAMES {
        return None;
    }
    // Each track's keys: (frame, value).
    let keys: Vec<Vec<(u32, Vec4)>> = c
        .tracks
        .iter()
        .enumerate()
        .map(|(i, tr)| track_keys(c, i, tr))
        .collect();
    // The union timeline: every key's position.
    let mut pos: Vec<f32> = keys
        .iter()
        .flat_map(|k| k.iter().map(|&(f, _)| c.frame_pos(f)))
        .collect();
    pos.sort_by(f32::total_cmp);
    pos.dedup();
    if c.tracks.is_empty() {
        pos.clear();
    }
    // Every track's value at every union position, and whether its pair from there to the
    // next position is slerped: one walk over its keys.
    let (values, slerps): (Vec<Vec<Vec4>>, Vec<Vec<bool>>) = c
        .tracks
        .iter()
        .zip(&keys)
        .map(|(tr, k)| {
            let mut at = 0usize;
            pos.iter()
                .map(|&x| {
                    while at + 1 < k.len() && c.frame_pos(k[at + 1].0) <= x {
                        at += 1;
                    }
                    let (f0, v0) = k[at];
                    let x0 = c.frame_pos(f0);
                    let next = k
                        .get(at + 1)
                        .map(|&(f1, v1)| (f1, v1, pair_slerp(tr, v0, v1)));
                    let v = match next {
                        Some((f1, v1, pair)) if !tr.step && x0 < x => {
                            let x1 = c.frame_pos(f1);
                            interpolate(v0, v1, pair, unit_span(x - x0, reciprocal(x1 - x0)))
                        }
                        _ => v0,
                    };
                    // Components whose squares would be subnormal (exporters write 1e-20
                    // for zero) made zero: subnormal arithmetic costs a hundred cycles.
                    let v = Vec4::select(v.abs().cmplt(Vec4::splat(TINY)), Vec4::ZERO, v);
                    (v, next.is_some_and(|n| n.2.is_slerp()))
                })
                .unzip()
        })
        .unzip();
    // A slerped pair's finer keys are nlerped where that strays from the arc by at most
    // SLERP_GAP between them (dense motion capture: nearly everywhere), the cheaper path.
    let slerps: Vec<Vec<bool>> = slerps
        .into_iter()
        .zip(&values)
        .map(|(s, v)| {
            s.iter()
                .enumerate()
                .map(|(k, &slerp)| slerp && k + 1 < v.len() && strays(v[k], v[k + 1]))
                .collect()
        })
        .collect();
    // Blocks: tracks of one target and interpolation, eight at a time in track order.
    let mut specs = Vec::new();
    let mut members: Vec<[usize; LANES]> = Vec::new();
    for target in [Target::Rotation, Target::Translation, Target::Scale] {
        for step in [false, true] {
            let group: Vec<usize> = (0..c.tracks.len())
                .filter(|&i| c.tracks[i].target == target && c.tracks[i].step == step)
                .collect();
            for chunk in group.chunks(LANES) {
                let lanes: [usize; LANES] =
                    std::array::from_fn(|l| if l < chunk.len() { chunk[l] } else { chunk[0] });
                specs.push(BlockSpec {
                    target,
                    step,
                    count: chunk.len() as u8,
                    joints: lanes.map(|i| c.tracks[i].joint),
                });
                members.push(lanes);
            }
        }
    }
    let segs = PackedLanes::segments_for(pos.len());
    let mut ranges: Vec<Row> = Vec::new();
    let mut q: Vec<[u16; LANES]> = Vec::new();
    for (spec, lanes) in specs.iter().zip(&members) {
        let rows = if spec.target == Target::Rotation {
            4
        } else {
            3
        };
        for j in 0..segs {
            let first = j * LANE_SEG;
            // The segment's keys, the next segment's first repeated (past the last key, the
            // last again: never read).
            let at = |i: usize| (first + i).min(pos.len().saturating_sub(1));
            let mut lo = [[0f32; LANES]; 4];
            let mut step = [[0f32; LANES]; 4];
            for r in 0..rows {
                for (l, &t) in lanes.iter().enumerate() {
                    let (mut a, mut b) = (f32::INFINITY, f32::NEG_INFINITY);
                    for i in 0..=LANE_SEG {
                        let v = values[t][at(i)][r];
                        a = a.min(v);
                        b = b.max(v);
                    }
                    lo[r][l] = a;
                    step[r][l] = ((f64::from(b) - f64::from(a)) / STEPS) as f32;
                }
                ranges.push(Row(lo[r]));
                ranges.push(Row(step[r]));
            }
            // The last segment holds only the keys left.
            let slots = if j + 1 == segs {
                PackedLanes::key_slots(pos.len()) - j * (LANE_SEG + 1)
            } else {
                LANE_SEG + 1
            };
            for i in 0..slots {
                for r in 0..rows {
                    q.push(std::array::from_fn(|l| {
                        let v = f64::from(values[lanes[l]][at(i)][r]);
                        let s = f64::from(step[r][l]);
                        if s > 0.0 {
                            ((v - f64::from(lo[r][l])) / s).round().clamp(0.0, STEPS) as u16
                        } else {
                            0
                        }
                    }));
                }
            }
        }
    }
    let slerp: Vec<u8> = members
        .iter()
        .flat_map(|lanes| {
            let slerps = &slerps;
            (0..pos.len())
                .map(move |k| (0..LANES).fold(0u8, |m, l| m | (u8::from(slerps[lanes[l]][k]) << l)))
        })
        .collect();
    let lanes = PackedLanes::new(pos, &specs, ranges, q, slerp, c.frames)?;
    Some(Compact::with_lanes(c, lanes))
}

/// Whether nlerp from `a` to `b` strays from their slerp by more than [`SLERP_GAP`]
/// (measured a quarter of the way, near where it strays most).
fn strays(a: Vec4, b: Vec4) -> bool {
    let (na, nb) = (a.normalize_or(Vec4::W), b.normalize_or(Vec4::W));
    let arc = interpolate(a, b, slerp_of_dot(na.dot(nb)), 0.25).normalize_or(Vec4::W);
    let chord = (a + (b - a) * 0.25).normalize_or(Vec4::W);
    (arc - chord).length() > SLERP_GAP
}

/// Track `i`'s keys over the whole clip, as the streamed decoder reads them: (frame, value).
fn track_keys(c: &Compact, i: usize, tr: &CompactTrack) -> Vec<(u32, Vec4)> {
    let mut out = Vec::new();
    let mut offsets = vec![0u32; c.tracks.len()];
    for s in 0..c.segment_count() {
        c.track_offsets(s, &mut offsets);
        let (mut dec, first) = SegDecoder::start(c, tr, s, offsets[i]);
        out.push((first.frame, first.value(tr)));
        while let Some(k) = dec.next(c) {
            out.push((k.frame, k.value(tr)));
        }
    }
    debug_assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
    debug_assert_eq!(out.first().map(|k| k.0), Some(0));
    out
}

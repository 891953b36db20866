//! The lanes layout of a compact clip ([`super::compact::CompactLayout::Lanes`]): eight
//! tracks side by side on one timeline, each value a 16-bit integer, so that a sample reads
//! two keys of eight tracks with aligned loads and no state, as a keyed clip's lanes
//! (`clip/lanes.rs`) do with floats.
//!
//! ```text
//! timeline: the union of every track's key frames, as frame positions
//! blocks:   up to eight tracks of one target and interpolation (STEP or LINEAR), in track
//!           order; a lane past `count` repeats lane 0
//! per block, per segment of SEG keys (keys j*SEG ..= j*SEG + SEG: the next segment's first
//! key is repeated, so a pair never straddles two segments):
//!   ranges: per row (x, y, z[, w]): smallest value[8] f32, step[8] f32
//!   keys:   per key, per row: q[8] u16;  value = smallest + q * step
//! per block, per key: a byte, bit l set where lane l's pair from this key to the next is
//!   slerped (the streamed layout's `pair_slerp` on the track's own keys)
//! derived at load (not stored): the reciprocal of each key pair's span, a frame-to-key
//!   table, and per rotation block with slerped pairs, per key slot, the pair's angle[8] f32
//!   (half the size of the block's integers: 4.2 KB on Fox's Run, three blocks of 44 slots)
//! ```
//!
//! A track's value at a union frame where it has no key of its own is what the streamed
//! layout interpolates there before normalising (nlerp's chord, which is linear in time, the
//! slerp point, a STEP track's held key), so interpolating the finer keys follows the
//! streamed clip's curve; the 16-bit rounding on each segment's range adds an error the
//! compressor measures ([`crate::compress::compress`] reports the clip as it plays in this
//! layout). Made from the streamed layout by `build/compress/lanes.rs`, sampled by
//! `play/sampling/compact_lanes.rs`; `.skl` stores [`PackedLanes::to_bytes`].

use super::lanes::{Block, Row, LANES, NOT_ALIGNED};
use crate::{JointIndex, Target};

/// Keys per quantisation segment (each block keeps one range per row and lane for them).
pub(crate) const LANE_SEG: usize = 16;

/// One block of eight tracks as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PackedBlock {
    /// Target, joints and lanes written (`mask`), as the keyed lanes' sinks take them.
    pub(crate) block: Block,
    /// STEP tracks: the key at or before the time holds.
    pub(crate) step: bool,
    /// The block's first entry of [`PackedLanes::ranges`].
    pub(crate) first_range: u32,
    /// The block's first entry of [`PackedLanes::q`].
    pub(crate) first_q: u32,
    /// A rotation block some of whose keys slerp some lane: its first entry of
    /// [`PackedLanes::arcs`].
    pub(crate) first_arc: Option<u32>,
}

impl PackedBlock {
    /// Component rows per key: x, y, z, w for rotations, x, y, z otherwise.
    #[inline(always)]
    pub(crate) fn rows(&self) -> usize {
        rows(self.block.target)
    }
}

#[inline(always)]
fn rows(target: Target) -> usize {
    if target == Target::Rotation {
        4
    } else {
        3
    }
}

/// A compact clip's keys in the lanes layout (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PackedLanes {
    /// Frame position of each key of the union timeline (the last frame `last_span` after
    /// the one before): increasing, the first 0, the last the clip's last frame.
    pub(crate) pos: Box<[f32]>,
    /// `1 / (pos[k + 1] - pos[k])` per key pair.
    pub(crate) inv: Box<[f32]>,
    /// Per `1 << entry_shift` grid frames, the last key at or before the first of them (a
    /// sample steps on from it to its own key). At most four entries per key, so the
    /// table's size follows the data's, not the clip's length.
    pub(crate) key_at: Box<[u32]>,
    /// The base-2 logarithm of the grid frames per entry of `key_at` (0 where keys are
    /// dense: an entry per frame).
    pub(crate) entry_shift: u32,
    pub(crate) blocks: Box<[PackedBlock]>,
    /// Per block, per segment, per row: the smallest value, then the step.
    pub(crate) ranges: Box<[Row]>,
    /// Per block, per segment, per key (`LANE_SEG + 1`; the last segment only its own), per
    /// row: eight integers.
    pub(crate) q: Box<[[u16; LANES]]>,
    /// Per block, per key: the lanes whose pair from it to the next key is slerped.
    pub(crate) slerp: Box<[u8]>,
    /// Derived at load, not stored: per rotation block with slerped keys
    /// ([`PackedBlock::first_arc`]), per key slot (as `q`), the angle between each lane's
    /// normalised key there and at the next slot (0 at a segment's last slot). With it the
    /// sampler's slerp needs no arc cosine, square roots or divisions of its own: that chain
    /// was more than half of a sample of clips whose keys are far apart (Fox,
    /// robot_quaternius). Half the size of the block's integers.
    pub(crate) arcs: Box<[Row]>,
}

/// What a block is built from: its tracks' target, interpolation and joints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BlockSpec {
    pub(crate) target: Target,
    pub(crate) step: bool,
    /// Lanes with a track of their own (1..=8), from the first.
    pub(crate) count: u8,
    pub(crate) joints: [JointIndex; LANES],
}

impl PackedLanes {
    /// Segments of a timeline of `keys` keys.
    #[inline(always)]
    pub(crate) fn segments_for(keys: usize) -> usize {
        keys.saturating_sub(1).div_ceil(LANE_SEG).max(1)
    }

    /// Key slots per block of a timeline of `keys` keys: `LANE_SEG + 1` per segment but the
    /// last, which holds the keys left.
    #[inline(always)]
    pub(crate) fn key_slots(keys: usize) -> usize {
        if keys < 2 {
            return 0;
        }
        let full = Self::segments_for(keys) - 1;
        full * (LANE_SEG + 1) + keys - full * LANE_SEG
    }

    /// The layout from its stored parts, with the derived tables; `None` where the sizes do
    /// not match (`ranges` and `q` must hold every block's segments). `frames` must be
    /// valid for the grid (checked by [`PackedLanes::from_bytes`]).
    pub(crate) fn new(
        pos: Vec<f32>,
        specs: &[BlockSpec],
        ranges: Vec<Row>,
        q: Vec<[u16; LANES]>,
        slerp: Vec<u8>,
        grid_frames: u32,
    ) -> Option<PackedLanes> {
        let segs = Self::segments_for(pos.len());
        let (mut r, mut k) = (0usize, 0usize);
        let mut blocks = Vec::with_capacity(specs.len());
        for s in specs {
            let rows = rows(s.target);
            blocks.push(PackedBlock {
                block: Block {
                    timeline: super::lanes::UNION,
                    target: s.target,
                    count: u32::from(s.count),
                    joints: s.joints,
                    soa: NOT_ALIGNED,
                    mask: ((1u32 << s.count) - 1) as u8,
                    first_row: 0,
                },
                step: s.step,
                first_range: u32::try_from(r).ok()?,
                first_q: u32::try_from(k).ok()?,
                first_arc: None,
            });
            r += segs * rows * 2;
            k += Self::key_slots(pos.len()) * rows;
        }
        if r != ranges.len() || k != q.len() || slerp.len() != specs.len() * pos.len() {
            return None;
        }
        let inv = pos
            .windows(2)
            .map(|w| crate::play::sampling::compact::reciprocal(w[1] - w[0]))
            .collect::<Vec<f32>>();
        // A power of two, so that the sampler shifts instead of dividing.
        let per = grid_frames
            .div_ceil(4 * pos.len().max(1) as u32)
            .max(1)
            .next_power_of_two();
        let mut key_at = vec![0u32; grid_frames.div_ceil(per) as usize];
        let mut key = 0usize;
        for (e, slot) in key_at.iter_mut().enumerate() {
            while key + 1 < pos.len() && pos[key + 1] <= (e as u64 * u64::from(per)) as f32 {
                key += 1;
            }
            *slot = key as u32;
        }
        let mut lanes = PackedLanes {
            pos: pos.into(),
            inv: inv.into(),
            key_at: key_at.into(),
            entry_shift: per.trailing_zeros(),
            blocks: blocks.into(),
            ranges: ranges.into(),
            q: q.into(),
            slerp: slerp.into(),
            arcs: Box::new([]),
        };
        lanes.arcs = lanes.derive_arcs()?;
        Some(lanes)
    }

    /// The index of key `k`'s slot among a block's slots (in `q`, per row, and in
    /// [`PackedLanes::arcs`]): segment `k / LANE_SEG`'s slots, then `k`'s place in it.
    #[inline(always)]
    pub(crate) fn slot(k: usize) -> usize {
        (k / LANE_SEG) * (LANE_SEG + 1) + k % LANE_SEG
    }

    /// The angles derived for block `b`'s key pairs from key `k`, where the block slerps
    /// some pair.
    #[inline(always)]
    pub(crate) fn angles(&self, b: &PackedBlock, k: usize) -> Option<&Row> {
        Some(&self.arcs[b.first_arc? as usize + Self::slot(k)])
    }

    /// [`PackedLanes::arcs`] from the stored parts, each block's first entry set.
    fn derive_arcs(&mut self) -> Option<Box<[Row]>> {
        let keys = self.pos.len();
        let slots = Self::key_slots(keys);
        let mut arcs = Vec::new();
        for n in 0..self.blocks.len() {
            let b = self.blocks[n];
            let flags = &self.slerp[n * keys..(n + 1) * keys];
            if b.block.target != Target::Rotation || flags.iter().all(|&f| f == 0) {
                continue;
            }
            self.blocks[n].first_arc = Some(u32::try_from(arcs.len()).ok()?);
            for s in 0..slots {
                let (j, i) = (s / (LANE_SEG + 1), s % (LANE_SEG + 1));
                let mut angle = Row::default();
                if i < LANE_SEG && s + 1 < slots {
                    for (l, out) in angle.0.iter_mut().enumerate() {
                        let a = self.slot_value(&b, l, j, i).normalize_or(glam::Vec4::W);
                        let c = self.slot_value(&b, l, j, i + 1).normalize_or(glam::Vec4::W);
                        *out = crate::play::sampling::compact::slerp_of_dot(a.dot(c)).angle;
                    }
                }
                arcs.push(angle);
            }
        }
        Some(arcs.into())
    }

    /// Multiplies every translation by `factor` (each segment's smallest value and step).
    pub(crate) fn scale_translations(&mut self, factor: f32) {
        let segs = Self::segments_for(self.pos.len());
        for b in self.blocks.iter() {
            if b.block.target != Target::Translation {
                continue;
            }
            let first = b.first_range as usize;
            for row in &mut self.ranges[first..first + segs * 3 * 2] {
                for v in &mut row.0 {
                    *v *= factor;
                }
            }
        }
    }

    /// The value of block `b`'s lane `l` at key `k`, as the sampler dequantises it (x, y, z
    /// and w for rotations, not normalised; x, y, z, 0 otherwise).
    pub(crate) fn key_value(&self, b: &PackedBlock, l: usize, k: usize) -> glam::Vec4 {
        let segs = Self::segments_for(self.pos.len());
        let j = (k / LANE_SEG).min(segs - 1);
        self.slot_value(b, l, j, k - j * LANE_SEG)
    }

    /// The value of block `b`'s lane `l` at key slot `i` of segment `j`, dequantised.
    fn slot_value(&self, b: &PackedBlock, l: usize, j: usize, i: usize) -> glam::Vec4 {
        let rows = b.rows();
        let r0 = b.first_range as usize + j * rows * 2;
        let q0 = b.first_q as usize + (j * (LANE_SEG + 1) + i) * rows;
        let mut v = [0f32; 4];
        for (r, out) in v.iter_mut().enumerate().take(rows) {
            let (lo, step) = (
                self.ranges[r0 + 2 * r].0[l],
                self.ranges[r0 + 2 * r + 1].0[l],
            );
            *out = f32::from(self.q[q0 + r][l]).mul_add(step, lo);
        }
        glam::Vec4::from_array(v)
    }

    /// Bytes as stored ([`PackedLanes::to_bytes`]'s length).
    pub(crate) fn stored_bytes(&self) -> usize {
        8 + self.pos.len() * 4
            + self.blocks.len() * (4 + 2 * LANES)
            + self.ranges.len() * 32
            + self.q.len() * 16
            + self.slerp.len()
    }

    /// The stored form, little-endian: key count, the keys' frame positions, block count, each block
    /// (target, STEP, count, 0, eight joints as u16), then the ranges (f32), the integers and
    /// the slerp flags.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.stored_bytes());
        out.extend_from_slice(&(self.pos.len() as u32).to_le_bytes());
        for x in self.pos.iter() {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.extend_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        for b in self.blocks.iter() {
            out.extend_from_slice(&[
                b.block.target as u8,
                u8::from(b.step),
                b.block.count as u8,
                0,
            ]);
            for j in b.block.joints {
                out.extend_from_slice(&j.to_le_bytes());
            }
        }
        for r in self.ranges.iter() {
            for v in r.0 {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        for k in self.q.iter() {
            for v in k {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.slerp);
        out
    }

    /// Reads [`PackedLanes::to_bytes`]'s form for a clip of `grid_frames` frames whose
    /// animated channels are `tracks` (joint, target, STEP), checking everything a sample
    /// relies on: the key positions increase from 0 to the last frame, every block's lanes are
    /// channels of the clip and every channel is in exactly one lane, every value the
    /// integers can give is finite, and the sizes match.
    pub(crate) fn from_bytes(
        bytes: &[u8],
        tracks: &[(JointIndex, Target, bool)],
        grid_frames: u32,
        last_span: f32,
    ) -> Result<PackedLanes, String> {
        let mut at = 0usize;
        let mut take = |n: usize, what: &str| -> Result<&[u8], String> {
            let s = bytes
                .get(at..at.checked_add(n).ok_or("size overflow")?)
                .ok_or_else(|| format!("lanes data ends at byte {} reading {what}", bytes.len()))?;
            at += n;
            Ok(s)
        };
        let u32_at = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let keys = u32_at(take(4, "the key count")?) as usize;
        if tracks.is_empty() && keys != 0 {
            return Err(format!("{keys} lane keys without tracks"));
        }
        if !tracks.is_empty() && keys < 2 {
            return Err(format!("{keys} lane keys for {} tracks", tracks.len()));
        }
        let raw = take(keys * 4, "the key positions")?;
        let pos: Vec<f32> = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let end = grid_frames.saturating_sub(2) as f32 + last_span;
        if let (Some(&first), Some(&last)) = (pos.first(), pos.last()) {
            if first != 0.0
                || last != end
                || pos
                    .windows(2)
                    .any(|w| w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Less))
            {
                return Err(format!(
                    "lane key positions must increase from 0 to the last frame's {end}"
                ));
            }
        }
        let nblocks = u32_at(take(4, "the block count")?) as usize;
        if nblocks > tracks.len() {
            return Err(format!("{nblocks} lane blocks for {} tracks", tracks.len()));
        }
        let mut specs = Vec::with_capacity(nblocks);
        let mut seen = vec![false; tracks.len()];
        for i in 0..nblocks {
            let h = take(4 + 2 * LANES, "a block")?;
            let target = match h[0] {
                0 => Target::Translation,
                1 => Target::Rotation,
                2 => Target::Scale,
                t => return Err(format!("block {i}: target {t}")),
            };
            let (step, count) = (h[1] != 0, h[2]);
            if h[1] > 1 || !(1..=LANES as u8).contains(&count) || h[3] != 0 {
                return Err(format!("block {i}: header {:?}", &h[..4]));
            }
            let joints: [JointIndex; LANES] =
                std::array::from_fn(|l| u16::from_le_bytes([h[4 + 2 * l], h[5 + 2 * l]]));
            for (l, &j) in joints.iter().enumerate() {
                let Some(t) = tracks
                    .iter()
                    .position(|&(tj, tt, ts)| tj == j && tt == target && ts == step)
                else {
                    return Err(format!(
                        "block {i}, lane {l}: joint {j} {target} is no track"
                    ));
                };
                if l < count as usize {
                    if seen[t] {
                        return Err(format!("block {i}, lane {l}: joint {j} {target} twice"));
                    }
                    seen[t] = true;
                }
            }
            specs.push(BlockSpec {
                target,
                step,
                count,
                joints,
            });
        }
        if let Some(t) = seen.iter().position(|s| !s) {
            return Err(format!("track {t} is in no lane block"));
        }
        let segs = Self::segments_for(keys);
        let nranges: usize = specs.iter().map(|s| segs * rows(s.target) * 2).sum();
        let nq: usize = specs
            .iter()
            .map(|s| Self::key_slots(keys) * rows(s.target))
            .sum();
        let raw = take(nranges * 32, "the ranges")?;
        let ranges: Vec<Row> = raw
            .chunks_exact(32)
            .map(|r| {
                Row(std::array::from_fn(|l| {
                    f32::from_le_bytes(r[4 * l..4 * l + 4].try_into().unwrap())
                }))
            })
            .collect();
        for (i, pair) in ranges.chunks_exact(2).enumerate() {
            for l in 0..LANES {
                let (lo, step) = (pair[0].0[l], pair[1].0[l]);
                if !(lo.is_finite() && step >= 0.0 && (lo + 65535.0 * step).is_finite()) {
                    return Err(format!("range {i}, lane {l}: {lo} + q * {step}"));
                }
            }
        }
        let raw = take(nq * 16, "the keys")?;
        let q: Vec<[u16; LANES]> = raw
            .chunks_exact(16)
            .map(|k| std::array::from_fn(|l| u16::from_le_bytes([k[2 * l], k[2 * l + 1]])))
            .collect();
        let slerp = take(nblocks * keys, "the slerp flags")?.to_vec();
        for (b, s) in specs.iter().enumerate() {
            let flags = &slerp[b * keys..(b + 1) * keys];
            if (s.target != Target::Rotation || s.step) && flags.iter().any(|&f| f != 0) {
                return Err(format!("block {b}: slerp flags on {} tracks", s.target));
            }
        }
        if at != bytes.len() {
            return Err(format!("{} bytes after the lanes data", bytes.len() - at));
        }
        PackedLanes::new(pos, &specs, ranges, q, slerp, grid_frames)
            .ok_or_else(|| "lanes data too large to index".to_string())
    }
}

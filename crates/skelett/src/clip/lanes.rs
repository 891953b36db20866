//! The playback layout of a keyed clip's LINEAR tracks: eight tracks side by side, on one
//! timeline.
//!
//! ```text
//! Keys (per track: its own times and values)   Lanes (blocks of 8 tracks of one target)
//! track a: times Ta, quats ┐                    union of the times: T0 T1 T2 ...
//! track b: times Tb, quats ├─ Lanes::build ─▶ key m: x[8] y[8] z[8] w[8] angle[8] 1/sin[8]
//! ...                      ┘                         chord x[8] y[8] z[8] w[8]
//!                                               (translations, scales: x[8] y[8] z[8])
//! ```
//!
//! Lossless key reduction leaves each track its own key times (robot_quaternius's 45 tracks
//! of Robot_Dance have 38 timelines), and finding the keys around a time once per timeline,
//! then gathering each track's pair of keys, costs more than interpolating them. The lanes
//! put every LINEAR track on the union of their key times instead: a sample finds its segment
//! once, and the two keys of eight tracks around it are aligned 256-bit loads, interpolated
//! eight at a time by `play/sampling/lanes.rs`. A track's value at a union time it has no key
//! at is its own interpolation there, exact in f64 and rounded: for slerp the point on the
//! great arc, for nlerp (a second set of rows) the chord between its keys before
//! normalising, which is linear in time, so that either interpolation between the finer keys
//! follows the track's own to rounding (a property test holds it within 1e-6) and every key
//! is hit.
//!
//! Tracks of one block of eight joints (joints `8b..8b + 8`) share a block aligned with it,
//! lane `i` for joint `8b + i`, wherever that makes no more blocks than packing every track
//! eight to a block would ([`Block::soa`]): a structure-of-arrays pose then takes the
//! block's rows as they lie. A lane whose joint has no track repeats another lane's track
//! (rows and joint), so it computes that track's values and is never written out; the other
//! tracks are packed in track order.
//!
//! The layout is derived from the per-track arrays when a clip is built (and rebuilt where a
//! derived clip changes keys), is not serialised, and takes memory beside them: the union's
//! keys times the tracks, 40 bytes per rotation key (both sets, slerp's angle) and 12 per
//! vector key. Where that would exceed [`MAX_GROWTH`] times the LINEAR keys (tracks
//! keyed at unrelated times, which a union would multiply), blocks keep the tracks' own
//! timelines instead, exactly as keyed, for groups of at least [`MIN_TRACKS`] tracks; the rest
//! are `leftover` and sampled one at a time. It is built only where it is used: on x86-64
//! CPUs with AVX, without the `scalar` feature (which samples track by track).

use crate::clip::{Interpolation, Keys, Target};
use crate::JointIndex;

/// Tracks per block: the f32 lanes of a 256-bit register.
pub(crate) const LANES: usize = 8;

/// Without a union timeline: the smallest group of tracks (one target, one timeline) laid
/// out in lanes.
pub(crate) const MIN_TRACKS: usize = 4;

/// The most memory the union timeline may take, in keys of all lanes, as a multiple of the
/// LINEAR keys it replaces (plus [`SLACK`]).
pub(crate) const MAX_GROWTH: usize = 4;

/// Keys a union may always add: short clips are cheap however their keys fall.
const SLACK: usize = 4096;

/// [`Block::timeline`] of blocks on the union timeline ([`Lanes::times`]).
pub(crate) const UNION: u32 = u32::MAX;

/// [`Block::soa`] of blocks whose lanes are not one block of joints.
pub(crate) const NOT_ALIGNED: u32 = u32::MAX;

/// One value for each of eight tracks, aligned for 256-bit loads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(32))]
pub(crate) struct Row(pub(crate) [f32; LANES]);

/// Up to eight LINEAR tracks of one target keyed at the same times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Block {
    /// The tracks' timeline: [`UNION`], or an index into `Keys::timelines`.
    pub(crate) timeline: u32,
    pub(crate) target: Target,
    /// Lanes to write out, from the first (1..=8). A lane without a track of its own (past
    /// the last track, or a hole of an aligned block) repeats one that has: its rows, and
    /// so its values, are that track's, and its joint is that track's joint.
    pub(crate) count: u32,
    /// The joint each lane animates.
    pub(crate) joints: [JointIndex; LANES],
    /// [`NOT_ALIGNED`], or the block of eight joints (joints `8 * soa..8 * soa + 8`) whose
    /// lane `i` is joint `8 * soa + i` wherever `mask` has bit `i`: then a structure-of-arrays
    /// pose takes the block's values as they lie, without moving them between lanes.
    pub(crate) soa: u32,
    /// The lanes holding a track of their own (the low `count` bits where not aligned): the
    /// lanes written out.
    pub(crate) mask: u8,
    /// The first row of key 0; key `k` starts [`Block::rows_per_key`] rows later per key.
    pub(crate) first_row: u32,
}

impl Block {
    /// Rows per key: for rotations x, y, z, w, slerp angle, 1 / sin, and x, y, z, w again for
    /// nlerp (see [`Lanes`]); x, y, z otherwise.
    #[cfg_attr(
        not(all(target_arch = "x86_64", not(feature = "scalar"))),
        allow(dead_code)
    )]
    #[inline(always)]
    pub(crate) fn rows_per_key(&self) -> usize {
        rows_per_key(self.target)
    }
}

#[inline(always)]
fn rows_per_key(target: Target) -> usize {
    if target == Target::Rotation {
        10
    } else {
        3
    }
}

/// The LINEAR rotation, translation and scale tracks of a keyed clip in blocks of eight.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Lanes {
    pub(crate) blocks: Box<[Block]>,
    pub(crate) rows: Box<[Row]>,
    /// The union timeline's key times (empty where blocks keep their own timelines).
    pub(crate) times: Box<[f32]>,
    /// Indices into `Keys::tracks` of the LINEAR rotation, translation and scale tracks that
    /// no block holds, in track order.
    pub(crate) leftover: Box<[u32]>,
    /// The timelines a sample still needs found: those of the leftover tracks, of the STEP
    /// and CUBICSPLINE tracks, and of blocks on their own timelines; sorted.
    pub(crate) timelines: Box<[u32]>,
}

impl Lanes {
    /// Whether sampling takes the lanes (blocks were built).
    #[cfg_attr(
        not(all(target_arch = "x86_64", not(feature = "scalar"))),
        allow(dead_code)
    )]
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Bytes held.
    pub(crate) fn byte_size(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>()
            + self.rows.len() * std::mem::size_of::<Row>()
            + (self.times.len() + self.leftover.len() + self.timelines.len()) * 4
    }

    /// The layout of `keys` (its `tracks`, `timelines`, `quats`, `vec3s` and `slerp` final),
    /// or an empty one where sampling would not use it.
    pub(crate) fn build(keys: &Keys) -> Box<Lanes> {
        if !used() {
            return Box::default();
        }
        Box::new(Self::build_always(keys))
    }

    /// [`Lanes::build`] whatever the CPU (for tests of the layout itself).
    pub(crate) fn build_always(keys: &Keys) -> Lanes {
        let linear = &keys.tracks[..keys.groups[2]];
        if linear.is_empty() {
            return Lanes::default();
        }
        let mut lanes = match union_times(keys) {
            Some(times) => on_union(keys, times),
            None => on_own_timelines(keys),
        };
        let mut timelines: Vec<u32> = lanes
            .leftover
            .iter()
            .map(|&i| keys.tracks[i as usize].timeline)
            .chain(keys.tracks[keys.groups[2]..].iter().map(|t| t.timeline))
            .chain(
                lanes
                    .blocks
                    .iter()
                    .map(|b| b.timeline)
                    .filter(|&t| t != UNION),
            )
            .collect();
        timelines.sort_unstable();
        timelines.dedup();
        lanes.timelines = timelines.into();
        if lanes.blocks.is_empty() || lanes.rows.len() > u32::MAX as usize {
            // No block, or more rows than a block can address: every track one at a time.
            return Lanes::default();
        }
        lanes
    }
}

/// The union of the LINEAR tracks' key times, if laying every track out on it stays within
/// [`MAX_GROWTH`].
fn union_times(keys: &Keys) -> Option<Vec<f32>> {
    let linear = &keys.tracks[..keys.groups[2]];
    let mut used: Vec<u32> = linear.iter().map(|t| t.timeline).collect();
    used.sort_unstable();
    used.dedup();
    let mut times: Vec<f32> = used
        .iter()
        .flat_map(|&t| keys.timeline_times(t as usize).iter().copied())
        .collect();
    times.sort_by(f32::total_cmp);
    times.dedup();
    let keyed: usize = linear.iter().map(|t| t.key_count as usize).sum();
    let lanes: usize = [Target::Rotation, Target::Translation, Target::Scale]
        .iter()
        .map(|&target| {
            linear
                .iter()
                .filter(|t| t.target == target)
                .count()
                .div_ceil(LANES)
                * LANES
        })
        .sum();
    let within = lanes
        .checked_mul(times.len())
        .is_some_and(|n| n <= keyed.saturating_mul(MAX_GROWTH).saturating_add(SLACK));
    within.then_some(times)
}

/// Every LINEAR track in blocks of its target on the union timeline `times`.
fn on_union(keys: &Keys, times: Vec<f32>) -> Lanes {
    let linear = &keys.tracks[..keys.groups[2]];
    let mut blocks = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for target in [Target::Rotation, Target::Translation, Target::Scale] {
        let members: Vec<u32> = (0..linear.len() as u32)
            .filter(|&i| linear[i as usize].target == target)
            .collect();
        for chunk in chunks(&members, linear) {
            let first_row = rows.len();
            let per = rows_per_key(target);
            rows.resize(first_row + times.len() * per, Row::default());
            for lane in chunk.own_lanes() {
                let tr = &linear[chunk.src[lane] as usize];
                let track_times = keys.track_times(tr);
                let v = tr.value_start as usize;
                let key = |m: usize| first_row + m * per..first_row + (m + 1) * per;
                if target == Target::Rotation {
                    let q = &keys.quats[v..v + track_times.len()];
                    let mut before = q[0];
                    let sub: Vec<(glam::Quat, glam::Vec4)> = segments(track_times, &times)
                        .map(|(k, u)| {
                            // On the hemisphere of the key before (slerp's path between keys
                            // on one hemisphere: the built clip stores them so).
                            before = crate::transform::align_sign(before, rotation_at(q, k, u));
                            (before, chord_at(q, k, u))
                        })
                        .collect();
                    for (m, (x, chord)) in sub.iter().enumerate() {
                        let seg = match sub.get(m + 1) {
                            Some(&(next, _)) => crate::transform::SlerpSegment::new(*x, next),
                            None => Default::default(),
                        };
                        let values = [
                            x.x,
                            x.y,
                            x.z,
                            x.w,
                            seg.angle,
                            seg.inv_sin,
                            chord.x,
                            chord.y,
                            chord.z,
                            chord.w,
                        ];
                        for (row, value) in rows[key(m)].iter_mut().zip(values) {
                            row.0[lane] = value;
                        }
                    }
                } else {
                    let p = &keys.vec3s[v..v + track_times.len()];
                    for (m, (k, u)) in segments(track_times, &times).enumerate() {
                        let x = vector_at(p, k, u);
                        for (row, value) in rows[key(m)].iter_mut().zip([x.x, x.y, x.z]) {
                            row.0[lane] = value;
                        }
                    }
                }
            }
            chunk.repeat(&mut rows[first_row..]);
            blocks.push(chunk.block(UNION, target, linear, first_row));
        }
    }
    Lanes {
        blocks: blocks.into(),
        rows: rows.into(),
        times: times.into(),
        ..Default::default()
    }
}

/// The lanes of a block before its rows are filled: which track each lane computes.
struct Chunk {
    /// The track (index into the LINEAR tracks) of each lane; a lane without a track of
    /// its own repeats one that has.
    src: [u32; LANES],
    /// Lanes with a track of their own (their rows are filled; the others copy them).
    mask: u8,
    /// Lanes to write out: up to the last with a track of its own.
    count: u32,
    /// [`Block::soa`].
    soa: u32,
}

impl Chunk {
    /// A packed block: `tracks` (one to eight) in lanes from the first, the last repeated.
    fn packed(tracks: &[u32]) -> Chunk {
        Chunk {
            src: std::array::from_fn(|lane| tracks[lane.min(tracks.len() - 1)]),
            mask: (((1u32 << tracks.len()) - 1) & 0xFF) as u8,
            count: tracks.len() as u32,
            soa: NOT_ALIGNED,
        }
    }

    /// The lanes whose rows are filled from their track.
    fn own_lanes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..LANES).filter(|&lane| self.mask & (1 << lane) != 0)
    }

    /// The lane whose rows `lane` repeats (itself where it has a track of its own).
    fn source_lane(&self, lane: usize) -> usize {
        (0..LANES)
            .find(|&l| self.mask & (1 << l) != 0 && self.src[l] == self.src[lane])
            .unwrap_or(lane)
    }

    /// Copies every repeating lane's values from the lane it repeats, in all `rows`.
    fn repeat(&self, rows: &mut [Row]) {
        let from: [usize; LANES] = std::array::from_fn(|lane| self.source_lane(lane));
        for row in rows {
            for (lane, &f) in from.iter().enumerate() {
                row.0[lane] = row.0[f];
            }
        }
    }

    /// The block, its rows from `first_row`.
    fn block(
        &self,
        timeline: u32,
        target: Target,
        linear: &[crate::clip::Track],
        first_row: usize,
    ) -> Block {
        Block {
            timeline,
            target,
            count: self.count,
            joints: self.src.map(|i| linear[i as usize].joint),
            soa: self.soa,
            mask: self.mask,
            first_row: first_row as u32,
        }
    }
}

/// The blocks for `members` (indices into `linear`, one target, in track order): tracks of one
/// block of eight joints go into one block aligned with it (lane `i` joint `8 * b + i`, so that
/// a structure-of-arrays pose takes them as they lie) wherever that makes no more blocks than
/// packing all of them eight to a block would (the work is the blocks'); the rest are packed,
/// in order.
fn chunks(members: &[u32], linear: &[crate::clip::Track]) -> Vec<Chunk> {
    let packed = members.len().div_ceil(LANES);
    // Tracks per block of joints, in joint order; a block with two tracks for one joint
    // (not built by `RawClip::build`, which merges channels) cannot be aligned.
    let mut groups: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    for &i in members {
        groups
            .entry(linear[i as usize].joint as u32 / LANES as u32)
            .or_default()
            .push(i);
    }
    let alignable = |g: &[u32]| {
        let mut seen = 0u8;
        g.iter().all(|&i| {
            let bit = 1u8 << (linear[i as usize].joint as usize % LANES);
            let fresh = seen & bit == 0;
            seen |= bit;
            fresh
        })
    };
    // The fewest tracks a block of joints needs to be aligned: the smallest that keeps the
    // block count (eight always does: full blocks are aligned or packed alike).
    let threshold = (1..=LANES)
        .find(|&t| {
            let aligned: Vec<&Vec<u32>> = groups
                .values()
                .filter(|g| g.len() >= t && alignable(g))
                .collect();
            let rest = members.len() - aligned.iter().map(|g| g.len()).sum::<usize>();
            aligned.len() + rest.div_ceil(LANES) <= packed
        })
        .unwrap_or(LANES);
    let mut out = Vec::new();
    let mut rest = Vec::new();
    for (&b, g) in &groups {
        if g.len() < threshold || !alignable(g) {
            rest.extend_from_slice(g);
            continue;
        }
        let lane_of = |i: u32| linear[i as usize].joint as usize % LANES;
        let mut chunk = Chunk {
            src: [g[0]; LANES],
            mask: 0,
            count: 0,
            soa: b,
        };
        for &i in g {
            chunk.src[lane_of(i)] = i;
            chunk.mask |= 1 << lane_of(i);
        }
        // Holes repeat the nearest track below them (the first track for holes before it).
        let mut last = g[0];
        for lane in 0..LANES {
            if chunk.mask & (1 << lane) != 0 {
                last = chunk.src[lane];
            } else {
                chunk.src[lane] = last;
            }
        }
        chunk.count = 8 - chunk.mask.leading_zeros();
        out.push(chunk);
    }
    // The packed rest keeps the tracks' order.
    rest.sort_unstable();
    out.extend(rest.chunks(LANES).map(Chunk::packed));
    out
}

/// The segment of a track's key `times` holding each of `at` (increasing) and the position in
/// it, in f64, found by walking the keys once (clamped outside them: 0 before the first key
/// and at a segment's first key, 1 at and after the last key).
fn segments<'a>(times: &'a [f32], at: &'a [f32]) -> impl Iterator<Item = (usize, f64)> + 'a {
    let last = times.len() - 2;
    let mut k = 0;
    at.iter().map(move |&t| {
        while k < last && times[k + 1] <= t {
            k += 1;
        }
        let (t0, t1) = (times[k] as f64, times[k + 1] as f64);
        (k, ((t as f64 - t0) / (t1 - t0)).clamp(0.0, 1.0))
    })
}

/// The LINEAR rotation keyed `q`, at position `u` of segment `k`: exact slerp in f64,
/// rounded (a key exactly where one is).
fn rotation_at(q: &[glam::Quat], k: usize, u: f64) -> glam::Quat {
    if u == 0.0 {
        return q[k];
    }
    if u == 1.0 {
        return q[k + 1];
    }
    let (a, b) = (q[k].as_dquat(), q[k + 1].as_dquat());
    // Keys of a segment are on one hemisphere (the built clip stores them so).
    let d = a.dot(b).clamp(-1.0, 1.0);
    let angle = (1.0 - d * d).max(0.0).sqrt().atan2(d);
    let v = if angle < 1e-9 {
        (glam::DVec4::from(a) * (1.0 - u) + glam::DVec4::from(b) * u).normalize()
    } else {
        let s = angle.sin();
        (glam::DVec4::from(a) * (((1.0 - u) * angle).sin() / s)
            + glam::DVec4::from(b) * ((u * angle).sin() / s))
            .normalize()
    };
    glam::DQuat::from_vec4(v).as_quat()
}

/// The chord between rotation keys `q[k]` and `q[k + 1]` at position `u` (their lerp, not
/// normalised: what nlerp normalises), exact in f64 and rounded (a key exactly where one is).
fn chord_at(q: &[glam::Quat], k: usize, u: f64) -> glam::Vec4 {
    if u == 0.0 {
        return q[k].into();
    }
    if u == 1.0 {
        return q[k + 1].into();
    }
    let (a, b) = (
        glam::DVec4::from(q[k].as_dquat()),
        glam::DVec4::from(q[k + 1].as_dquat()),
    );
    (a + (b - a) * u).as_vec4()
}

/// The LINEAR vector keyed `p`, at position `u` of segment `k`: exact lerp in f64, rounded.
fn vector_at(p: &[glam::Vec3A], k: usize, u: f64) -> glam::Vec3 {
    if u == 0.0 {
        return p[k].into();
    }
    if u == 1.0 {
        return p[k + 1].into();
    }
    let (a, b) = (p[k].as_dvec3(), p[k + 1].as_dvec3());
    (a + (b - a) * u).as_vec3()
}

/// Groups of at least [`MIN_TRACKS`] tracks of one target and one timeline in blocks on that
/// timeline, keys as they are; the other LINEAR tracks left over.
fn on_own_timelines(keys: &Keys) -> Lanes {
    let linear = &keys.tracks[..keys.groups[2]];
    // Groups of (target, timeline), tracks in order within each (a stable sort: linear in
    // log time however many timelines there are).
    debug_assert!(linear
        .iter()
        .all(|t| t.interpolation == Interpolation::Linear));
    let mut order: Vec<u32> = (0..linear.len() as u32).collect();
    order.sort_by_key(|&i| (linear[i as usize].target, linear[i as usize].timeline));
    let mut blocks = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut leftover = Vec::new();
    let group_of = |i: &u32| (linear[*i as usize].target, linear[*i as usize].timeline);
    for members in order.chunk_by(|a, b| group_of(a) == group_of(b)) {
        let (target, timeline) = group_of(&members[0]);
        if members.len() < MIN_TRACKS {
            leftover.extend_from_slice(members);
            continue;
        }
        let n = keys.timelines[timeline as usize].1 as usize;
        let per = rows_per_key(target);
        for tracks in members.chunks(LANES) {
            let chunk = Chunk::packed(tracks);
            let first_row = rows.len();
            rows.resize(first_row + n * per, Row::default());
            for k in 0..n {
                let key = &mut rows[first_row + k * per..first_row + (k + 1) * per];
                for lane in 0..LANES {
                    // Unused lanes repeat the block's last track.
                    let tr = &linear[chunk.src[lane] as usize];
                    let v = tr.value_start as usize + k;
                    if target == Target::Rotation {
                        let (q, s) = (keys.quats[v], keys.slerp[v]);
                        let values = [q.x, q.y, q.z, q.w, s.angle, s.inv_sin, q.x, q.y, q.z, q.w];
                        for (c, x) in values.into_iter().enumerate() {
                            key[c].0[lane] = x;
                        }
                    } else {
                        let p = keys.vec3s[v];
                        for (c, x) in [p.x, p.y, p.z].into_iter().enumerate() {
                            key[c].0[lane] = x;
                        }
                    }
                }
            }
            blocks.push(chunk.block(timeline, target, linear, first_row));
        }
    }
    leftover.sort_unstable();
    Lanes {
        blocks: blocks.into(),
        rows: rows.into(),
        leftover: leftover.into(),
        ..Default::default()
    }
}

/// Whether this build and CPU sample through lanes (the sampler is AVX code).
#[inline]
pub(crate) fn used() -> bool {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    {
        std::arch::is_x86_feature_detected!("avx")
    }
    #[cfg(not(all(target_arch = "x86_64", not(feature = "scalar"))))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clip::Track;
    use proptest::prelude::*;

    fn tracks(joints: &[u16]) -> Vec<Track> {
        joints
            .iter()
            .map(|&joint| Track {
                joint,
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                timeline: 0,
                time_start: 0,
                key_count: 2,
                value_start: 0,
            })
            .collect()
    }

    proptest! {
        /// Whatever joints the tracks animate (in any order): every track has exactly one
        /// lane of its own, there are no more blocks than packing eight to a block makes,
        /// aligned blocks put joint `8b + i` in lane `i`, packed ones fill lanes from the
        /// first, and every lane repeating another carries that lane's joint.
        #[test]
        fn chunks_cover_every_track_once(
            set in proptest::collection::btree_set(0u16..70, 1..50),
            seed in any::<u64>(),
        ) {
            let mut joints: Vec<u16> = set.into_iter().collect();
            // A shuffled track order.
            let mut x = seed | 1;
            for i in (1..joints.len()).rev() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                joints.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let linear = tracks(&joints);
            let members: Vec<u32> = (0..linear.len() as u32).collect();
            let chunks = chunks(&members, &linear);
            prop_assert!(chunks.len() <= members.len().div_ceil(LANES));
            let mut seen = vec![0; members.len()];
            for c in &chunks {
                let block = c.block(UNION, Target::Rotation, &linear, 0);
                prop_assert!(c.mask != 0 && c.count >= 1 && c.count as usize <= LANES);
                prop_assert_eq!(c.count, 8 - c.mask.leading_zeros());
                for lane in 0..LANES {
                    let own = c.mask & (1 << lane) != 0;
                    if own {
                        seen[c.src[lane] as usize] += 1;
                    }
                    let joint = block.joints[lane] as u32;
                    if c.soa == NOT_ALIGNED {
                        prop_assert_eq!(own, lane < c.count as usize);
                    } else if own {
                        prop_assert_eq!(joint, c.soa * LANES as u32 + lane as u32);
                    }
                    // A lane computes its source track's values for that track's joint.
                    prop_assert_eq!(joint, linear[c.src[lane] as usize].joint as u32);
                    prop_assert!(c.mask & (1 << c.source_lane(lane)) != 0);
                }
            }
            prop_assert!(seen.iter().all(|&n| n == 1), "{:?}", seen);
        }
    }

    /// Dense runs of joints are aligned with the blocks of eight joints (Fox's rotations:
    /// joints 2 to 22 but 19), sparse ones packed (robot_quaternius's rotations).
    #[test]
    fn dense_tracks_are_aligned_sparse_ones_packed() {
        let dense: Vec<u16> = (2..23).filter(|&j| j != 19).collect();
        let linear = tracks(&dense);
        let members: Vec<u32> = (0..linear.len() as u32).collect();
        let c = chunks(&members, &linear);
        let shape: Vec<(u32, u8)> = c.iter().map(|c| (c.soa, c.mask)).collect();
        assert_eq!(shape, [(0, 0b1111_1100), (1, 0xFF), (2, 0b0111_0111)]);

        let sparse = [1u16, 2, 6, 7, 9, 10, 22, 23, 24, 36, 37, 38, 39, 41];
        let linear = tracks(&sparse);
        let members: Vec<u32> = (0..linear.len() as u32).collect();
        let c = chunks(&members, &linear);
        assert_eq!(c.len(), 2);
        assert!(c.iter().all(|c| c.soa == NOT_ALIGNED));
    }
}

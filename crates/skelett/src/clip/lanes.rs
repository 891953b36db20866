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
    /// Lanes in use, from the first (1..=8); the others repeat the last track in use.
    pub(crate) count: u32,
    /// The joint each lane animates.
    pub(crate) joints: [JointIndex; LANES],
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
        for chunk in members.chunks(LANES) {
            let first_row = rows.len();
            let per = rows_per_key(target);
            rows.resize(first_row + times.len() * per, Row::default());
            for (lane, &i) in chunk.iter().enumerate() {
                let tr = &linear[i as usize];
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
            // Unused lanes repeat the block's last track: valid values to compute with, never
            // written out.
            let last = chunk.len() - 1;
            for row in &mut rows[first_row..] {
                let x = row.0[last];
                row.0[last + 1..].fill(x);
            }
            blocks.push(block(UNION, target, chunk, linear, first_row));
        }
    }
    Lanes {
        blocks: blocks.into(),
        rows: rows.into(),
        times: times.into(),
        ..Default::default()
    }
}

/// A block of the tracks `chunk` (indices into `linear`), its rows from `first_row`.
fn block(
    timeline: u32,
    target: Target,
    chunk: &[u32],
    linear: &[crate::clip::Track],
    first_row: usize,
) -> Block {
    let mut joints = [0; LANES];
    for (lane, j) in joints.iter_mut().enumerate() {
        *j = linear[chunk[lane.min(chunk.len() - 1)] as usize].joint;
    }
    Block {
        timeline,
        target,
        count: chunk.len() as u32,
        joints,
        first_row: first_row as u32,
    }
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
        for chunk in members.chunks(LANES) {
            let first_row = rows.len();
            rows.resize(first_row + n * per, Row::default());
            for k in 0..n {
                let key = &mut rows[first_row + k * per..first_row + (k + 1) * per];
                for lane in 0..LANES {
                    // Unused lanes repeat the block's last track.
                    let tr = &linear[chunk[lane.min(chunk.len() - 1)] as usize];
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
            blocks.push(block(timeline, target, chunk, linear, first_row));
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

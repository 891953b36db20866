//! The budget driver: the error budget shared along the hierarchy by each channel's
//! sensitivity, a global multiplier raised while the measured model-space error stays within
//! the budget, slack joints loosened, then chains that the dense measurement finds over it
//! tightened (from the search's clip too where the loosened one needed that, the smaller
//! kept); each attempt planned per channel (`encode`), assembled into a compact clip and
//! measured (`metric`).

use glam::{Mat4, Quat, Vec4};

use super::*;
use std::borrow::{Borrow, Cow};

use crate::{
    local_to_model, sample, Clip, Error, Interpolation, JointIndex, SamplingCache, Skeleton,
    Target, Transform,
};

/// One compression's result.
pub(super) struct Outcome {
    pub(super) clip: Clip,
    pub(super) plans: Vec<encode::Plan>,
    pub(super) dense: Checked,
    pub(super) animated: usize,
    pub(super) constant: usize,
    pub(super) rest: usize,
    pub(super) keys: usize,
    /// Each joint's largest error at the check times, per chunk of them (`metric::CHUNK`
    /// times; chunk-major), where a complete measurement found it.
    pub(super) check_errors: Option<Vec<f32>>,
}

/// Everything about the reference on one grid that every attempt reuses.
pub(super) struct Prepared {
    pub(super) grid: Grid,
    pub(super) pos: Vec<f32>,
    /// Raw value per channel (joint * 3 + target) per frame, and at a quarter, half and three
    /// quarters of every frame interval; empty for a channel that has no track and is at rest
    /// (see [`Prepared::values`]).
    pub(super) raw: Vec<Vec<Vec4>>,
    pub(super) raw_sub: Vec<Vec<Vec4>>,
    /// Per rotation channel that moves, `raw` and `raw_sub` normalised as the encoder
    /// compares them (`encode::units`), made once for every plan of it (empty for others).
    pub(super) raw_unit: Vec<Vec<Vec4>>,
    pub(super) sub_unit: Vec<Vec<Vec4>>,
    /// Channels whose every value (at frames and between) is their rest value.
    pub(super) at_rest: Vec<bool>,
    /// What each channel's plans keep for its next ones (`encode::TrackMemory`), up to
    /// [`PLAN_MEMORY`] bytes in all; locked by the one task planning the channel's joint.
    pub(super) memory: Vec<std::sync::Mutex<encode::TrackMemory>>,
    pub(super) step: Vec<bool>,
    pub(super) rest: Vec<Vec4>,
    pub(super) sens: metric::Sensitivity,
    /// Share of the budget of each joint's channels (before the multiplier).
    pub(super) share: Vec<f32>,
    /// Where the search and the loosening measure ([`CHECK_PER_INTERVAL`] points per frame
    /// interval: the frames and the midpoints between them, and the source's own key times,
    /// with a time just before each where a channel steps), and where the final check does
    /// (sixteen per interval).
    pub(super) check_times: Vec<f32>,
    pub(super) dense_times: Vec<f32>,
    /// The reference composed at `check_times` once (unless the clip is too long to keep it).
    pub(super) check_frames: Option<metric::ModelFrames>,
}

impl Prepared {
    /// Channel `ch`'s raw values at the frames and between them (`raw`, `raw_sub`); a
    /// channel not stored is its rest value at every one.
    pub(super) fn values(&self, ch: usize) -> (Cow<'_, [Vec4]>, Cow<'_, [Vec4]>) {
        let (raw, sub) = (&self.raw[ch], &self.raw_sub[ch]);
        if !raw.is_empty() || self.grid.frames == 0 {
            return (Cow::Borrowed(raw), Cow::Borrowed(sub));
        }
        let frames = self.grid.frames as usize;
        let subs = (frames - 1) * encode::SUB;
        let rest = self.rest[ch];
        (Cow::Owned(vec![rest; frames]), Cow::Owned(vec![rest; subs]))
    }

    /// The reference as measured at the check times.
    pub(super) fn check_reference<'a>(&'a self, reference: &'a Clip) -> metric::Reference<'a> {
        match &self.check_frames {
            Some(f) => metric::Reference::Frames(f),
            None => metric::Reference::Clip(reference),
        }
    }
}

pub(super) const TARGETS: [Target; 3] = [Target::Translation, Target::Rotation, Target::Scale];

pub(super) fn to_vec4(target: Target, t: &Transform) -> Vec4 {
    match target {
        Target::Translation => t.translation.extend(0.0),
        Target::Rotation => Vec4::from(t.rotation),
        Target::Scale => t.scale.extend(0.0),
    }
}

/// The reference's channels at every frame and between frames, and the sensitivity from
/// its model space at every frame, for [`prepare`]: in parallel chunks of frames, each sampled
/// forward through its own cache (the values `sample_uncached` gives, without searching
/// every channel's keys from scratch) into one pose and written straight into its part of
/// every channel: a compression's memory is touched page by page the first time (a page
/// fault each), and gathering the poses and model space first touched about 35 MB more on
/// Boxing_Toes (37,000 page faults per compression where 27,100 then). Channels in `skip`
/// are left empty; `None` where one of them is not its `rest` value at some time.
#[allow(clippy::type_complexity)]
fn sample_channels(
    skeleton: &Skeleton,
    reference: &Clip,
    grid: Grid,
    shell: f32,
    rest: &[Vec4],
    skip: &[bool],
) -> Result<Option<(Vec<Vec<Vec4>>, Vec<Vec<Vec4>>, metric::Sensitivity)>, Error> {
    let n = skeleton.len();
    let frames = grid.frames as usize;
    const FRAMES: usize = 64;
    let subs = frames.saturating_sub(1) * encode::SUB;
    let channels = |len: usize| -> Vec<Vec<Vec4>> {
        skip.iter()
            .map(|&s| if s { Vec::new() } else { vec![Vec4::ZERO; len] })
            .collect()
    };
    let (mut raw, mut raw_sub) = (channels(frames), channels(subs));
    // Each chunk's part of every channel (channel `j * 3 + k`: joint `j`, `TARGETS[k]`;
    // `None` where it is skipped).
    type Part<'a> = Vec<Option<&'a mut [Vec4]>>;
    fn parts(channels: &mut [Vec<Vec4>], len: usize, total: usize) -> Vec<(usize, Part<'_>)> {
        let mut each: Vec<_> = channels.iter_mut().map(|c| c.chunks_mut(len)).collect();
        (0..total.div_ceil(len))
            .map(|c| (c, each.iter_mut().map(|it| it.next()).collect()))
            .collect()
    }
    // One pose into its place in every stored channel; `false` where a skipped channel is
    // not its rest value.
    let write = |pose: &[Transform], part: &mut Part<'_>, k: usize| -> bool {
        let mut at_rest = true;
        for (j, t) in pose.iter().enumerate() {
            for (c, target) in TARGETS.into_iter().enumerate() {
                let v = to_vec4(target, t);
                match &mut part[j * 3 + c] {
                    Some(values) => values[k] = v,
                    None => at_rest &= v == rest[j * 3 + c],
                }
            }
        }
        at_rest
    };
    let mut at_frames = parts(&mut raw, FRAMES, frames);
    let sens_parts = par_map_mut(
        &mut at_frames,
        |(c, part)| -> Result<Option<metric::Sensitivity>, Error> {
            let range = *c * FRAMES..((*c + 1) * FRAMES).min(frames);
            let mut pose = vec![Transform::IDENTITY; n];
            let mut model = vec![Mat4::IDENTITY; n];
            let mut sens = metric::Sensitivity::with_capacity(n, range.len());
            let mut cache = SamplingCache::for_clip(reference);
            let mut ok = true;
            for (k, f) in range.enumerate() {
                sample(reference, grid.time(f as u32), &mut cache, &mut pose)?;
                local_to_model(skeleton, &pose, 0, &mut model)?;
                sens.push(skeleton, &model, &pose, shell);
                ok &= write(&pose, part, k);
            }
            Ok(ok.then_some(sens))
        },
    );
    drop(at_frames);
    let mut sens = metric::Sensitivity::with_capacity(n, frames);
    for part in sens_parts {
        match part? {
            Some(part) => sens.append(part),
            None => return Ok(None),
        }
    }
    let mut between = parts(&mut raw_sub, FRAMES, subs);
    let done = par_map_mut(&mut between, |(c, part)| -> Result<bool, Error> {
        let range = *c * FRAMES..((*c + 1) * FRAMES).min(subs);
        let mut pose = vec![Transform::IDENTITY; n];
        let mut cache = SamplingCache::for_clip(reference);
        let mut ok = true;
        for (k, i) in range.enumerate() {
            let (f, s) = ((i / encode::SUB) as u32, i % encode::SUB);
            let (t0, t1) = (grid.time(f), grid.time(f + 1));
            let t = t0 + (t1 - t0) * encode::SUB_AT[s];
            sample(reference, t, &mut cache, &mut pose)?;
            ok &= write(&pose, part, k);
        }
        Ok(ok)
    });
    drop(between);
    for ok in done {
        if !ok? {
            return Ok(None);
        }
    }
    Ok(Some((raw, raw_sub, sens)))
}

pub(super) fn prepare(
    skeleton: &Skeleton,
    reference: &Clip,
    grid: Grid,
    budget: f32,
    shell: f32,
) -> Result<Prepared, Error> {
    let n = skeleton.len();
    let rest_pose = skeleton.rest_pose();
    let rest: Vec<Vec4> = rest_pose
        .iter()
        .flat_map(|t| TARGETS.map(|target| to_vec4(target, t)))
        .collect();
    let mut step = vec![false; 3 * n];
    let mut tracked = vec![false; 3 * n];
    for (j, target, interp, _) in reference.channels() {
        let ch = j as usize * 3 + target as usize;
        tracked[ch] = true;
        step[ch] |= interp == Interpolation::Step;
    }
    // Channels the reference has no track for, whose base value is their rest value, are
    // that value at every time: they are not stored (on Boxing_Toes 56 of 78 channels,
    // 11 MB, a tenth of a compression's page faults). The sampling checks that each is;
    // should one not be, every channel is sampled again and stored.
    let skip: Vec<bool> = (0..3 * n)
        .map(|ch| {
            let (j, target) = (ch / 3, TARGETS[ch % 3]);
            !tracked[ch] && reference.base.get(j).map(|t| to_vec4(target, t)) == Some(rest[ch])
        })
        .collect();
    let (raw, raw_sub, sens, skipped) =
        match sample_channels(skeleton, reference, grid, shell, &rest, &skip)? {
            Some((raw, raw_sub, sens)) => (raw, raw_sub, sens, skip),
            None => {
                let none = vec![false; 3 * n];
                let (raw, raw_sub, sens) =
                    sample_channels(skeleton, reference, grid, shell, &rest, &none)?
                        .expect("no channel skipped, none found off its rest value");
                (raw, raw_sub, sens, none)
            }
        };
    let at_rest: Vec<bool> = (0..3 * n)
        .map(|ch| skipped[ch] || raw[ch].iter().chain(&raw_sub[ch]).all(|v| *v == rest[ch]))
        .collect();
    let (raw_unit, sub_unit) = (0..3 * n)
        .map(
            |ch| match TARGETS[ch % 3] == Target::Rotation && !at_rest[ch] {
                true => (
                    encode::units(true, &raw[ch]).into_owned(),
                    encode::units(true, &raw_sub[ch]).into_owned(),
                ),
                false => (Vec::new(), Vec::new()),
            },
        )
        .unzip();
    // Channels that move (or leave the rest pose) share the budget along every chain: a
    // joint's channels get the budget divided by the most such channels on any path from
    // a root through it to a leaf.
    let moving: Vec<u32> = (0..n)
        .map(|j| {
            (0..3)
                .filter(|&k| {
                    // (A channel not stored is at rest.)
                    let v = &raw[j * 3 + k];
                    !v.is_empty() && (v.iter().any(|x| *x != v[0]) || v[0] != rest[j * 3 + k])
                })
                .count() as u32
        })
        .collect();
    let parents = skeleton.parents();
    let mut path = vec![0u32; n];
    for j in 0..n {
        let p = parents[j];
        path[j] = moving[j]
            + if p == JointIndex::MAX {
                0
            } else {
                path[p as usize]
            };
    }
    let mut chain = path.clone();
    for j in (0..n).rev() {
        let p = parents[j];
        if p != JointIndex::MAX && chain[j] > chain[p as usize] {
            chain[p as usize] = chain[j];
        }
    }
    let share = chain.iter().map(|&c| budget / c.max(1) as f32).collect();
    // The source's key times: a kink between the grid's points is measured where it
    // happens. Where the source can jump (a STEP channel: key times are strictly increasing,
    // `RawClip::build` checks it), also just before each key, so that both sides of a jump
    // are measured. "Just before" is twice the tolerance within which a time counts as its
    // grid frame (see `Compact::pos_of`), outside the f32 rounding of frame times that a
    // compact STEP key switches at. Without STEP channels both clips are continuous at a
    // key (LINEAR, slerp and CUBICSPLINE segments meet at its value), and the key's own
    // time measures the same (the point before took a fifth of every measurement of clips
    // keyed at every frame).
    let before = |t: f32| {
        let x = ((t - reference.start) * grid.rate).abs();
        t - (2e-4f32).max(16.0 * f32::EPSILON * x) / grid.rate
    };
    let source_times = reference.keys().map_or(&[][..], |k| &k.times[..]);
    let jumps = step.iter().any(|&s| s);
    let mut keys: Vec<f32> = source_times
        .iter()
        .filter(|&&t| t >= reference.start && t <= reference.end())
        .flat_map(|&t| [jumps.then(|| before(t)), Some(t)])
        .flatten()
        .filter(|&t| t >= reference.start)
        .collect();
    keys.sort_by(f32::total_cmp);
    keys.dedup();
    let with_keys = |mut t: Vec<f32>| {
        t.extend_from_slice(&keys);
        t.sort_by(f32::total_cmp);
        t.dedup();
        t
    };
    let check_times = with_keys(grid.times(CHECK_PER_INTERVAL));
    let dense_times = with_keys(grid.times(16));
    let _ = shell;
    let check_frames = metric::ModelFrames::new(skeleton, reference, &check_times)?;
    // Shared between the channels that move (the others are never planned).
    let moving = at_rest.iter().filter(|&&r| !r).count().max(1);
    let memory = (0..3 * n)
        .map(|_| encode::TrackMemory::new(PLAN_MEMORY / moving).into())
        .collect();
    Ok(Prepared {
        grid,
        pos: (0..grid.frames).map(|f| grid.pos(f)).collect(),
        raw,
        raw_sub,
        raw_unit,
        sub_unit,
        at_rest,
        memory,
        step,
        rest,
        sens,
        share,
        check_times,
        dense_times,
        check_frames,
    })
}

/// Points per frame interval at which the search and the loosening measure every candidate
/// (the frame and the midpoint); the final check measures at sixteen, and its word decides.
/// The encoder keeps each channel within its tolerance at the frames and at a quarter, half
/// and three quarters between, so a candidate's error between frames mostly follows its
/// error at the frames; the midpoint is where a straight interpolation strays furthest from
/// a curve (nlerp's drift from slerp, though, is nil there and largest near a quarter and
/// three quarters: only the encoder's own tolerances and the final check see it). Four
/// points per interval measured twice as much for the same clips: over the corpus 32 of 34
/// files came out byte for byte the same (CMU 01_01, 01_03 and Boxing_Toes among them),
/// the corpus ratio unchanged, and 3 small clips (of 282 and 1,564 bytes) took a round or
/// three of tightening where the final check found them over the budget. It also leaves
/// more clips nearer the budget between the points it measures, which the final check's
/// closer look ([`REFINE_FROM`]) is there for.
pub(super) const CHECK_PER_INTERVAL: u32 = 2;

/// Plans every channel with the budget multiplied by `m`, and each joint's by `scale[j]`.
/// Joints are planned independently (on rayon's pool with feature `rayon`).
pub(super) fn plan_all(p: &Prepared, m: f32, scale: &[f32]) -> Vec<encode::Plan> {
    let joints: Vec<usize> = (0..p.sens.joints).collect();
    par_map(&joints, |&j| plan_joint(p, j, m * scale[j]))
        .into_iter()
        .flatten()
        .collect()
}

/// [`plan_all`], taking the plans of `before` (planned with `before_m` and `before_scale`)
/// for the joints whose multiplier is the same: a joint's plan depends on its multiplier
/// only, so these are the plans it would make again.
pub(super) fn plan_changed(
    p: &Prepared,
    m: f32,
    scale: &[f32],
    (before, before_m, before_scale): (&[encode::Plan], f32, &[f32]),
) -> Vec<encode::Plan> {
    let same = |j: usize| (m * scale[j]).to_bits() == (before_m * before_scale[j]).to_bits();
    let changed: Vec<usize> = (0..p.sens.joints).filter(|&j| !same(j)).collect();
    let mut planned = par_map(&changed, |&j| plan_joint(p, j, m * scale[j])).into_iter();
    let mut out = Vec::with_capacity(before.len());
    for j in 0..p.sens.joints {
        match same(j) {
            true => out.extend_from_slice(&before[j * 3..j * 3 + 3]),
            false => out.extend(planned.next().expect("one plan per changed joint")),
        }
    }
    out
}

/// Plans joint `j`'s three channels with its share of the budget multiplied by `m`.
pub(super) fn plan_joint(p: &Prepared, j: usize, m: f32) -> [encode::Plan; 3] {
    let n = p.sens.joints;
    let frames = p.grid.frames as usize;
    let mut tol = vec![0f32; frames];
    let e = p.share[j] * m;
    TARGETS.map(|target| {
        let k = target as usize;
        let ch = j * 3 + k;
        // A channel that never leaves its rest value measures no error at rest: `plan` finds
        // it within every tolerance that is not negative (or NaN), and says `Rest` first.
        // A rotation's tolerance never is (a sine of at most 1.5 and at least 0, NaN
        // taken as 1.5), so it is not even computed. (A fifth of the channels of the CMU
        // clips, about 3% of the time.)
        if p.at_rest[ch] && target == Target::Rotation {
            return encode::Plan::Rest;
        }
        for (f, t) in tol.iter_mut().enumerate() {
            let i = f * n + j;
            *t = match target {
                // Angle e / reach, as the chord between unit quaternions.
                Target::Rotation => 2.0 * (e / p.sens.reach[i] * 0.25).min(1.5).sin(),
                Target::Translation => e / p.sens.parent_scale[i],
                Target::Scale => e * p.sens.min_scale[i] / p.sens.reach[i],
            };
        }
        if p.at_rest[ch] && tol.iter().all(|&t| t >= 0.0) {
            return encode::Plan::Rest;
        }
        let (raw, raw_sub) = p.values(ch);
        let input = encode::TrackInput {
            joint: j as JointIndex,
            target,
            step: p.step[ch],
            raw: &raw,
            raw_sub: &raw_sub,
            tol: &tol,
            rest: p.rest[ch],
            units: (target == Target::Rotation && !p.at_rest[ch])
                .then(|| (&p.raw_unit[ch][..], &p.sub_unit[ch][..])),
        };
        // (A poisoned lock only means a plan panicked midway: what it left is still exact.)
        let mut memory = p.memory[ch].lock().unwrap_or_else(|e| e.into_inner());
        encode::plan_remembering(&input, &p.pos, &mut memory)
    })
}

/// Bytes the channels' plans may keep for their next plans (`encode::TrackMemory`), shared
/// evenly between the channels that move. By its sizes a track keeps at most 456 bytes per
/// frame: four quantisations of 114 each (40 bytes of integers, values and neighbouring
/// pairs' errors, and two layers of answers of 37), 2.06 MB on CMU 01_03's 4,511 frames,
/// within the 2.4 MB each of its 28 moving channels gets; a longer clip keeps less per
/// channel, never more in all. Compression took 12-15% less time on 01_01 and 01_03 with it
/// (the fast level 15-23%), 1-8% on Boxing_Toes (when a track kept at most 424 bytes per
/// frame; 01_03's peak memory rose from 171 to 176 MB, measured).
pub(super) const PLAN_MEMORY: usize = 64 << 20;

/// Bits a plan stores (constants counted as their values).
pub(super) fn plan_bits(plan: &encode::Plan) -> u64 {
    match plan {
        encode::Plan::Rest => 0,
        encode::Plan::Constant(_) => 128,
        encode::Plan::Animated(e) => e.bits() + 31 * 8,
    }
}

/// Assembles planned channels into a clip.
pub(super) fn assemble(
    reference: &Clip,
    skeleton: &Skeleton,
    p: &Prepared,
    plans: Vec<encode::Plan>,
) -> Result<Outcome, Error> {
    let (clip, counts) = assemble_clip(reference, skeleton, p, &plans)?;
    let [animated, constant, rest, keys] = counts;
    Ok(Outcome {
        clip,
        plans,
        dense: Checked {
            stats: ErrorStats::default(),
            over: Vec::new(),
            histogram: metric::ErrorHistogram::new(1.0),
        },
        animated,
        constant,
        rest,
        keys,
        check_errors: None,
    })
}

/// [`assemble`]'s clip from borrowed plans (the loosening's trials borrow the plans they
/// keep rather than copy their bits), with the counts of animated, constant and rest
/// channels and of keys.
pub(super) fn assemble_clip<P: Borrow<encode::Plan>>(
    reference: &Clip,
    skeleton: &Skeleton,
    p: &Prepared,
    plans: &[P],
) -> Result<(Clip, [usize; 4]), Error> {
    let n = skeleton.len();
    let mut base: Vec<Transform> = skeleton.rest_pose().to_vec();
    let mut constants = Vec::new();
    let mut tracks = Vec::new();
    let (mut animated, mut constant, mut rest, mut keys) = (0, 0, 0, 0);
    let mut encoded = Vec::new();
    let mut moved = vec![0u8; n];
    for (i, plan) in plans.iter().enumerate() {
        let j = i / 3;
        let target = TARGETS[i % 3];
        match plan.borrow() {
            encode::Plan::Rest => rest += 1,
            encode::Plan::Constant(v) => {
                constant += 1;
                set(&mut base[j], target, *v);
                constants.push((j as JointIndex, target, *v));
            }
            encode::Plan::Animated(e) => {
                animated += 1;
                keys += e.keys;
                moved[j] |= 1 << (i % 3);
                tracks.push(e.track);
                encoded.push(e);
            }
        }
    }
    let segs = p.grid.frames.div_ceil(SEG_LEN) as usize;
    let mut bits = encode::Bits::default();
    let mut segments = Vec::with_capacity(segs);
    for s in 0..segs {
        segments.push(bits.len as u32);
        for e in &encoded {
            bits.append(&e.segments[s]);
        }
    }
    if bits.len > u64::from(u32::MAX) - 64 {
        return Err(Error::ClipRange {
            clip: reference.name.clone(),
            problem: format!(
                "{} bits of keys: more than a compact clip can index (2^32); split the clip",
                bits.len
            ),
        });
    }
    let compact = Compact::new(
        crate::clip::compact::CompactLayout::Stream,
        p.grid.rate,
        p.grid.frames,
        p.grid.last_span,
        tracks,
        constants,
        segments,
        bits.into_padded_bytes(),
    );
    let static_joints = (0..n)
        .filter(|&j| moved[j] != 7)
        .map(|j| j as JointIndex)
        .collect();
    let mut clip = Clip::from_compact(
        reference.skeleton,
        reference.name.clone(),
        reference.start,
        reference.duration,
        base,
        static_joints,
        compact,
        Vec::new(),
    );
    // Weight tracks are small and kept exact (see `clip/morph.rs`).
    clip.morph = reference.morph.clone();
    clip.frame_rate = reference.frame_rate;
    Ok((clip, [animated, constant, rest, keys]))
}

pub(super) fn set(t: &mut Transform, target: Target, v: Vec4) {
    match target {
        Target::Translation => t.translation = v.truncate(),
        Target::Rotation => t.rotation = Quat::from_vec4(v).normalize(),
        Target::Scale => t.scale = v.truncate(),
    }
}

/// What a measurement of an assembled clip found.
pub(super) struct Checked {
    pub(super) stats: ErrorStats,
    /// Joints with an error above the budget somewhere.
    pub(super) over: Vec<bool>,
    pub(super) histogram: metric::ErrorHistogram,
}

/// Measures an assembled clip against the reference at the dense times (sixteen per frame
/// interval and the source's keys): the final word on a clip, with every statistic the
/// report gives. (The search and the loosening measure at the check times through
/// `metric::measure_joints` directly, needing only the largest errors.)
///
/// Near the budget it looks closer: the error is a continuous curve, and its peak between
/// two dense times can rise above both (an independent check at 32 points per interval found
/// CMU 01_01 at 24 fps 0.7% above the dense maximum, over the budget). Every gap between
/// dense times next to one whose largest error is at least [`REFINE_FROM`] of the budget is
/// measured again at [`REFINE_POINTS`] points inside it (eight times finer: the peak rises
/// above the samples by a sixty-fourth as much, for an error curved as before); those errors
/// count for the largest error and for the joints over the budget, not for the histogram
/// (the report's distribution stays that of the dense times).
pub(super) fn check(
    skeleton: &Skeleton,
    p: &Prepared,
    reference: &Clip,
    clip: &Clip,
    shell: f32,
    budget: f32,
) -> Result<Checked, Error> {
    let (times, against) = (&p.dense_times, metric::Reference::Clip(reference));
    let mut stats = ErrorStats::default();
    let mut over = vec![false; skeleton.len()];
    let mut histogram = metric::ErrorHistogram::new(budget);
    // The dense times at which some joint's error is near the budget (or NaN).
    let near = REFINE_FROM * budget;
    let mut close = vec![false; times.len()];
    metric::measure(skeleton, against, clip, shell, times, |i, j, e| {
        stats.samples += 1;
        if e > stats.max || e.is_nan() {
            stats.max = if e.is_nan() { f32::INFINITY } else { e };
            stats.worst_joint = j as JointIndex;
            stats.worst_time = times[i];
        }
        if e >= near || e.is_nan() {
            close[i] = true;
            over[j] |= e.is_nan() || e > budget;
        }
        histogram.add(e);
    })?;
    let mut closer = Vec::new();
    for (i, pair) in times.windows(2).enumerate() {
        if close[i] || close[i + 1] {
            let (a, b) = (pair[0], pair[1]);
            closer.extend(
                (1..=REFINE_POINTS).map(|k| a + (b - a) * k as f32 / (REFINE_POINTS + 1) as f32),
            );
        }
    }
    if !closer.is_empty() {
        metric::measure(skeleton, against, clip, shell, &closer, |i, j, e| {
            if e > stats.max || e.is_nan() {
                stats.max = if e.is_nan() { f32::INFINITY } else { e };
                stats.worst_joint = j as JointIndex;
                stats.worst_time = closer[i];
            }
            over[j] |= e.is_nan() || e > budget;
        })?;
    }
    stats.p99 = histogram.quantile(0.99, stats.max);
    Ok(Checked {
        stats,
        over,
        histogram,
    })
}

/// The share of the budget from which [`check`] measures the gaps next to a dense time
/// again: the peaks found between dense times so far rose 0.7% above them, and the search
/// aims at 97% of the budget.
pub(super) const REFINE_FROM: f32 = 0.98;

/// Points measured inside each such gap.
pub(super) const REFINE_POINTS: usize = 7;

/// The largest budget multiplier whose clip measures within the budget, at
/// [`CompressLevel::Smallest`] loosened joint by joint, then tightened where the dense
/// measurement finds more; `None` if even the smallest multiplier does not measure within
/// it (the grid is too coarse). `report_budget` is the budget whose bins the lanes layout's
/// measurement counts its errors in (`budget` itself, or the user's where `budget` was
/// tightened for the lanes layout's rounding: every clip of a run shares its bins).
#[allow(clippy::too_many_arguments)]
pub(super) fn compress_on(
    skeleton: &Skeleton,
    reference: &Clip,
    grid: Grid,
    budget: f32,
    report_budget: f32,
    shell: f32,
    level: CompressLevel,
    layout: CompactLayout,
) -> Result<Option<Outcome>, Error> {
    let p = prepare(skeleton, reference, grid, budget, shell)?;
    match search_and_tighten(skeleton, reference, &p, budget, shell, level)? {
        Some(out) => {
            in_layout(skeleton, reference, &p, report_budget, shell, out, layout).map(Some)
        }
        None => Ok(None),
    }
}

/// `out` (streamed) in `layout`. The lanes layout rounds the values, so its clip is measured
/// again at the dense times (the histogram's bins those of `budget`): the report is the clip
/// as it plays. `None` where the layout cannot index the clip.
fn in_layout(
    skeleton: &Skeleton,
    reference: &Clip,
    p: &Prepared,
    budget: f32,
    shell: f32,
    mut out: Outcome,
    layout: CompactLayout,
) -> Result<Outcome, Error> {
    if layout == CompactLayout::Stream {
        return Ok(out);
    }
    let Some(clip) = out.clip.with_compact_layout(layout) else {
        return Err(Error::ClipRange {
            clip: out.clip.name.clone(),
            problem: format!(
                "the {layout:?} layout cannot index this clip (more than 2^32 bits or keys): \
                 split the clip"
            ),
        });
    };
    out.clip = clip;
    if layout == CompactLayout::Lanes {
        out.dense = check(skeleton, p, reference, &out.clip, shell, budget)?;
        out.keys = out.clip.counts().keys.iter().sum();
    }
    Ok(out)
}

/// [`compress_on`]'s search, loosening and tightening on a prepared grid.
fn search_and_tighten(
    skeleton: &Skeleton,
    reference: &Clip,
    p: &Prepared,
    budget: f32,
    shell: f32,
    level: CompressLevel,
) -> Result<Option<Outcome>, Error> {
    let target = 0.97 * budget;
    let n = skeleton.len();
    let ones = vec![1.0f32; n];
    // An attempt's largest error at the check times; one over the target stops the
    // measurement (the search needs only an estimate there: at least the target).
    let attempt = |m: f32| -> Result<(Outcome, f32), Error> {
        let mut out = assemble(reference, skeleton, p, plan_all(p, m, &ones))?;
        let mut errors = vec![0f32; p.check_times.len().div_ceil(metric::CHUNK) * n];
        let complete = metric::measure_joints(
            skeleton,
            p.check_reference(reference),
            &out.clip,
            shell,
            &p.check_times,
            None,
            None,
            Some(target),
            |i, j, e| keep_worst(&mut errors, n, i, j, e),
        )?;
        let max = errors.iter().fold(0f32, |a, &e| a.max(e));
        out.check_errors = complete.then_some(errors);
        Ok((out, max))
    };
    let Some((lo_m, found)) = search(attempt, target)? else {
        return Ok(None);
    };
    let tight = Tighten {
        skeleton,
        reference,
        p,
        shell,
        budget,
    };
    // At [`CompressLevel::Smallest`], spend the slack first: the multiplier stopped at the
    // worst joint; every other joint gets more budget where the error at the check times
    // allows. The dense measurement then checks the clip that is kept, once where it passes
    // (checking the search's clip before loosening it measured the clip twice).
    if level == CompressLevel::Smallest {
        let (loose, loose_scale) =
            loosen(skeleton, reference, p, shell, target, lo_m, &ones, &found)?;
        if loose.clip.size_bytes() < found.clip.size_bytes() {
            match tight.run(loose, lo_m, loose_scale)? {
                // Within the budget at once: smaller than the search's clip, which the fast
                // level returns where it passes (and tightening only takes budget away).
                Some((out, 0)) => return Ok(Some(out)),
                // Tightened from the loosened budgets: the search's clip tightened may come
                // out smaller, so both are made and the smaller kept; where the loosened
                // clip found no way within the budget, the search's clip is what is left.
                Some((out, _)) => {
                    return Ok(match tight.run(found, lo_m, ones)? {
                        Some((plain, _)) if plain.clip.size_bytes() < out.clip.size_bytes() => {
                            Some(plain)
                        }
                        _ => Some(out),
                    })
                }
                None => {}
            }
        }
    }
    Ok(tight.run(found, lo_m, ones)?.map(|(out, _)| out))
}

/// What [`Tighten::run`] needs of a compression.
struct Tighten<'a> {
    skeleton: &'a Skeleton,
    reference: &'a Clip,
    p: &'a Prepared,
    shell: f32,
    budget: f32,
}

impl Tighten<'_> {
    /// The final word on `best`, planned with multiplier `m` and per-joint `scale`: sixteen
    /// points per frame interval (near a capture glitch the error changes fast inside an
    /// interval). Where that finds joints over the budget, the chains above them get less
    /// budget and the clip is planned and measured again, up to 12 rounds. Returns the clip
    /// within the budget (its `dense` set) and the rounds of tightening it took.
    fn run(
        &self,
        mut best: Outcome,
        mut m: f32,
        mut scale: Vec<f32>,
    ) -> Result<Option<(Outcome, usize)>, Error> {
        let (skeleton, p) = (self.skeleton, self.p);
        let n = skeleton.len();
        // What `best` was planned with: the tightened attempt re-plans only the joints whose
        // multiplier changed.
        let (mut best_m, mut best_scale) = (m, scale.clone());
        for round in 0..12 {
            let measured = check(
                skeleton,
                p,
                self.reference,
                &best.clip,
                self.shell,
                self.budget,
            )?;
            if measured.stats.max <= self.budget {
                best.dense = measured;
                return Ok(Some((best, round)));
            }
            // Tighten only the joints on the way from the root to each joint over the
            // budget. Parents come before their children, so one pass from the leaves marks
            // every ancestor of a joint over the budget (linear, where walking each joint's
            // chain was quadratic on deep skeletons).
            let mut chain = measured.over.clone();
            for j in (0..n).rev() {
                if chain[j] {
                    if let Some(parent) = skeleton.parent(j as JointIndex) {
                        chain[parent as usize] = true;
                    }
                }
            }
            for (s, &o) in scale.iter_mut().zip(&chain) {
                if o {
                    *s *= 0.7;
                }
            }
            // After several local rounds, everything a little (where the first-order split
            // misjudged the hierarchy).
            if round >= 8 {
                m *= 0.8;
            }
            let plans = plan_changed(p, m, &scale, (&best.plans, best_m, &best_scale));
            best = assemble(self.reference, skeleton, p, plans)?;
            (best_m, best_scale) = (m, scale.clone());
        }
        Ok(None)
    }
}

/// The search stops once its bracket is this narrow (the ratio of the failing multiplier to
/// the passing one). Five bisections of a factor-4 bracket used to stop at 4^(1/32), 1.044:
/// over the corpus 1.07 compresses 0.14% larger (16.894:1 against 16.918:1) and takes an
/// attempt less on most clips (15% of the time); 1.1 lost 0.9%, on Boxing_Toes 3.6%.
pub(super) const SEARCH_PRECISION: f32 = 1.07;

/// Bounds of the multiplier: a clip whose error allows more than the largest is kept at it,
/// and one that fails even at the smallest needs a finer grid (`None`).
pub(super) const SEARCH_MAX: f32 = 16384.0;
pub(super) const SEARCH_MIN: f32 = 1.0 / 256.0;

/// The largest budget multiplier whose attempt measures within `target`, to
/// [`SEARCH_PRECISION`], and that attempt; `None` if even [`SEARCH_MIN`] measures over.
/// `attempt(m)` plans and measures a clip, returning it and its largest error (NaN counts as
/// over).
///
/// The search starts at 4, where the first-order split usually leaves the multiplier. It
/// steps from the last attempt by the ratio of the aimed error (99% of `target`) to the
/// measured one (the error grows about as fast as the multiplier), at least 1.25x and at most
/// 16x, until it has one passing and one failing multiplier; then it narrows the bracket by
/// the secant of log error against log multiplier, each step kept within the middle half of
/// the bracket (in log scale) so that it shrinks by at least a quarter even where the error
/// is a staircase (the largest error over all joints stays flat while others loosen, then
/// jumps). Where the last two passing attempts measured the very same largest error (the
/// same joint's same error: a flat step, on which the secant would take the smallest step
/// allowed), it takes the bracket's middle instead (Boxing_Toes: 5 attempts where 6, 9%
/// faster and 0.3% smaller; the corpus 21 bytes larger). On mocap this takes 2 to 5
/// attempts where growing by fours and bisecting five times took 7 to 8.
///
/// Once per search it tries the edge of the precision instead, where that attempt's answer
/// may end the search: next to the only attempt so far, where the aim lies within the
/// precision of it (a fail above a pass, or a pass below a fail, leaves a bracket no wider
/// than the precision), and just below the failing end of a bracket, where the secant
/// points to the bracket's upper half (a pass there ends it; not on a flat step, nor where
/// there is no secant). The first attempt, at the first-order split's multiplier, often
/// lands that near: CMU 01_01 and 01_03 took 2 attempts where 3, Boxing_Toes 3 where 5 (and
/// 0.2% smaller), the corpus 380 where 386 (17.08:1 either way). A probe that fails
/// narrows the bracket by the precision only, so on some clips it costs an attempt.
pub(super) fn search<T>(
    mut attempt: impl FnMut(f32) -> Result<(T, f32), Error>,
    target: f32,
) -> Result<Option<(f32, T)>, Error> {
    let goal = 0.99 * target;
    let mut lo: Option<(f32, f32, T)> = None;
    let mut hi: Option<(f32, f32)> = None;
    let mut m = 4.0f32;
    // The last two passing attempts measured the very same largest error: a flat step of
    // the staircase, where the secant predicts no step at all.
    let mut flat = false;
    // Whether the one probe at the precision's edge was made (see below).
    let mut probed = false;
    loop {
        let (out, e) = attempt(m)?;
        let e = if e.is_nan() { f32::INFINITY } else { e };
        if e <= target {
            if lo.as_ref().is_none_or(|l| m > l.0) {
                flat = lo.as_ref().is_some_and(|l| l.1 == e);
                lo = Some((m, e, out));
            }
        } else if hi.is_none_or(|h| m < h.0) {
            hi = Some((m, e));
        }
        m = match (&lo, hi) {
            (Some(l), Some(h)) => {
                let span = (h.0 / l.0).ln();
                // (With a margin for the rounding of a bracket made by a probe, exactly the
                // precision wide.)
                if span <= SEARCH_PRECISION.ln() + 1e-6 {
                    break;
                }
                let slope = (h.1 / l.1).ln() / span;
                // On a flat step, the bracket's middle (in log scale): the secant from the
                // step's error would take the smallest step the bracket allows.
                let secant = !flat && l.1 > 0.0 && slope.is_finite() && slope > 0.0;
                let x = if secant {
                    (goal / l.1).ln() / slope
                } else {
                    0.5 * span
                };
                if !probed && secant && x >= 0.5 * span {
                    // The secant points to the bracket's upper half: the failing attempt's
                    // own precision's edge, where a pass ends the search.
                    probed = true;
                    h.0 / SEARCH_PRECISION
                } else {
                    l.0 * x.clamp(0.25 * span, 0.75 * span).exp()
                }
            }
            (Some(l), None) if l.0 < SEARCH_MAX => {
                let step = if l.1 > 0.0 { goal / l.1 } else { 16.0 };
                if !probed && step < SEARCH_PRECISION {
                    // The aim lies within the precision above: its edge, where a fail ends
                    // the search.
                    probed = true;
                    (l.0 * SEARCH_PRECISION).min(SEARCH_MAX)
                } else {
                    (l.0 * step.clamp(1.25, 16.0)).min(SEARCH_MAX)
                }
            }
            (None, Some(h)) if h.0 > SEARCH_MIN => {
                let step = if h.1.is_finite() {
                    goal / h.1
                } else {
                    1.0 / 16.0
                };
                if !probed && step > 1.0 / SEARCH_PRECISION {
                    // The aim lies within the precision below: its edge, where a pass ends
                    // the search.
                    probed = true;
                    (h.0 / SEARCH_PRECISION).max(SEARCH_MIN)
                } else {
                    (h.0 * step.clamp(1.0 / 16.0, 0.8)).max(SEARCH_MIN)
                }
            }
            _ => break,
        };
    }
    Ok(lo.map(|(m, _, out)| (m, out)))
}

/// Each trial of [`loosen`] assembles a clip of the joints it composes and measures the
/// joints it moves, at every check time, so skeletons up to this
/// many joints are loosened joint by joint, and larger ones in this many blocks of
/// neighbouring joints: the work stays linear in the joint count (it was quadratic: 8,191
/// joints took 52 s), at the price of a slightly coarser spend on skeletons that large.
pub(super) const LOOSEN_TRIALS: usize = 256;

/// Joint by joint (block by block past [`LOOSEN_TRIALS`] joints), leaves first: half as much
/// budget again for the joints' channels, kept where it saves bits and the clip still
/// measures within `target`; then once more for the joints whose trial was kept. Returns the
/// loosened clip and the per-joint scale its plans were made with.
#[allow(clippy::too_many_arguments)]
pub(super) fn loosen(
    skeleton: &Skeleton,
    reference: &Clip,
    p: &Prepared,
    shell: f32,
    target: f32,
    m: f32,
    scale: &[f32],
    best: &Outcome,
) -> Result<(Outcome, Vec<f32>), Error> {
    let n = skeleton.len();
    let block = n.div_ceil(LOOSEN_TRIALS).max(1);
    let mut scale = scale.to_vec();
    let mut plans = best.plans.clone();
    // Each joint's largest error per chunk of check times (chunk-major), under the plans
    // accepted so far: a trial measures only the joints its changes move (the subtrees of the
    // changed joints) and takes the others' from here, which is what measuring the whole clip
    // would find, since a joint's decoded track depends on its own plan only.
    //
    // A trial measures first the chunks where the joints it moves came nearest the target,
    // so that one that fails stops after a batch or two (in the order of time, the failing trials of CMU 01_03 took 53 of the 144 ms its
    // trials took; this way 13). Which chunks come first decides nothing but when a failing
    // trial stops: a trial is kept only where every chunk was measured.
    let chunks = p.check_times.len().div_ceil(metric::CHUNK);
    let mut by_chunk = match &best.check_errors {
        Some(e) => e.clone(),
        None => {
            let mut errors = vec![0f32; chunks * n];
            metric::measure(
                skeleton,
                p.check_reference(reference),
                &best.clip,
                shell,
                &p.check_times,
                |i, j, e| keep_worst(&mut errors, n, i, j, e),
            )?;
            errors
        }
    };
    let mut order: Vec<usize> = Vec::with_capacity(chunks);
    let mut risk = vec![0f32; chunks];
    let parents: Vec<Option<usize>> = (0..n)
        .map(|j| skeleton.parent(j as JointIndex).map(usize::from))
        .collect();
    let (mut moved, mut needed) = (vec![false; n], vec![false; n]);
    // The joints tried in this pass: all of them, then those whose trial was kept (with
    // half as much budget again). A joint whose trial was not kept would try the same plan
    // again, and measured over the whole corpus that found 0.06% of its bytes for a quarter
    // of the loosening's time.
    let mut tried = vec![true; n];
    for _ in 0..2 {
        // Every tried joint's plan, planned up front (in parallel): a joint's trial depends
        // on its own scale only, which changes only when that trial is kept.
        let trying: Vec<usize> = (0..n).filter(|&j| tried[j]).collect();
        // `m * (scale * 1.5)`: the multiplier the kept scale records, so that the
        // tightening's `plan_changed` takes these plans as the ones it would make again.
        let planned = par_map(&trying, |&j| plan_joint(p, j, m * (scale[j] * 1.5)));
        let mut trials: Vec<Option<[encode::Plan; 3]>> = vec![None; n];
        for (&j, t) in trying.iter().zip(planned) {
            trials[j] = Some(t);
        }
        tried.fill(false);
        let mut end = n;
        while end > 0 {
            let start = end.saturating_sub(block);
            // The block's trials that save bits (the kept plans stay as they are until a
            // trial is kept: only the plans a trial composes are copied for it).
            let mut changed = Vec::new();
            let mut tried_plans: Vec<[encode::Plan; 3]> = Vec::new();
            for j in (start..end).rev() {
                let Some(trial) = trials[j].take() else {
                    continue;
                };
                let old: u64 = plans[j * 3..j * 3 + 3].iter().map(plan_bits).sum();
                let new: u64 = trial.iter().map(plan_bits).sum();
                if new < old {
                    changed.push(j);
                    tried_plans.push(trial);
                }
            }
            end = start;
            if changed.is_empty() {
                continue;
            }
            // The joints the change moves (parents come before their children), and those
            // to compose: them and every joint above them.
            moved.fill(false);
            for &j in &changed {
                moved[j] = true;
            }
            for j in 0..n {
                if let Some(q) = parents[j] {
                    moved[j] |= moved[q];
                }
            }
            needed.copy_from_slice(&moved);
            for j in (0..n).rev() {
                if let (true, Some(q)) = (needed[j], parents[j]) {
                    needed[q] = true;
                }
            }
            // The needed joints' channels alone (the others at rest): the same poses for
            // every joint composed, sampled at the cost of what those joints store.
            let mut partial: Vec<&encode::Plan> = plans
                .iter()
                .enumerate()
                .map(|(i, plan)| match needed[i / 3] {
                    true => plan,
                    false => &encode::Plan::Rest,
                })
                .collect();
            for (&j, trial) in changed.iter().zip(&tried_plans) {
                for (k, plan) in trial.iter().enumerate() {
                    partial[j * 3 + k] = plan;
                }
            }
            let (trial_clip, _) = assemble_clip(reference, skeleton, p, &partial)?;
            let mut trial = by_chunk.clone();
            for (j, _) in moved.iter().enumerate().filter(|m| *m.1) {
                for c in 0..chunks {
                    trial[c * n + j] = 0.0;
                }
            }
            // The chunks by the largest error a moved joint had there, largest first (ties
            // in the order of time).
            for (c, r) in risk.iter_mut().enumerate() {
                let row = &by_chunk[c * n..(c + 1) * n];
                *r = row
                    .iter()
                    .zip(&moved)
                    .filter(|m| *m.1)
                    .fold(0f32, |a, (&e, _)| a.max(e));
            }
            order.clear();
            order.extend(0..chunks);
            order.sort_by(|&a, &b| risk[b].total_cmp(&risk[a]));
            // Stopped at the first error over the target: the trial is not kept.
            let complete = metric::measure_joints(
                skeleton,
                p.check_reference(reference),
                &trial_clip,
                shell,
                &p.check_times,
                Some((&needed, &moved)),
                Some(&order),
                Some(target),
                |i, j, e| keep_worst(&mut trial, n, i, j, e),
            )?;
            if complete && trial.iter().fold(0.0f32, |a, &e| worse(a, e)) <= target {
                for (j, kept) in changed.into_iter().zip(tried_plans) {
                    scale[j] *= 1.5;
                    tried[j] = true;
                    plans.splice(j * 3..j * 3 + 3, kept);
                }
                by_chunk = trial;
            }
        }
    }
    // The errors kept along the way are the loosened clip's at the check times (the tests
    // measure it again to check the bookkeeping).
    let mut out = assemble(reference, skeleton, p, plans)?;
    out.check_errors = Some(by_chunk);
    Ok((out, scale))
}

/// Keeps error `e` of joint `j` at the `i`th check time in `errors`, the largest per chunk of
/// check times and joint (chunk-major, `n` joints).
fn keep_worst(errors: &mut [f32], n: usize, i: usize, j: usize, e: f32) {
    let k = i / metric::CHUNK * n + j;
    errors[k] = worse(errors[k], e);
}

/// The larger of two errors, a NaN counting as infinite (as [`check`] counts it).
fn worse(a: f32, e: f32) -> f32 {
    if e.is_nan() {
        f32::INFINITY
    } else {
        a.max(e)
    }
}

/// The tightest attempt on the finest grid, whatever its error (reported honestly).
pub(super) fn compress_fallback(
    skeleton: &Skeleton,
    reference: &Clip,
    grid: Grid,
    budget: f32,
    shell: f32,
    layout: CompactLayout,
) -> Result<Outcome, Error> {
    let p = prepare(skeleton, reference, grid, budget, shell)?;
    let scale = vec![1.0; skeleton.len()];
    let mut out = assemble(reference, skeleton, &p, plan_all(&p, 1.0 / 256.0, &scale))?;
    out.dense = check(skeleton, &p, reference, &out.clip, shell, budget)?;
    in_layout(skeleton, reference, &p, budget, shell, out, layout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;
    use proptest::prelude::*;

    /// A chain of four joints 10 units apart, each turning on two axes at its own pace, one
    /// second at 30 fps.
    fn chain() -> (Skeleton, Clip) {
        chain_turning(4)
    }

    /// [`chain`] with only the first `turning` joints turning (the others keep their rest).
    fn chain_turning(turning: usize) -> (Skeleton, Clip) {
        chain_for(turning, 1)
    }

    /// [`chain_turning`] over `seconds` seconds.
    fn chain_for(turning: usize, seconds: usize) -> (Skeleton, Clip) {
        use crate::{RawChannel, RawClip, RawJoint, RawSkeleton, RawValues};
        let skeleton = RawSkeleton {
            joints: (0..4usize)
                .map(|j| RawJoint {
                    name: format!("j{j}"),
                    parent: j.checked_sub(1),
                    rest: Transform::new(Vec3::new(0.0, 10.0, 0.0), Quat::IDENTITY, Vec3::ONE),
                })
                .collect(),
            ..Default::default()
        }
        .build()
        .unwrap();
        let times: Vec<f32> = (0..=30 * seconds).map(|f| f as f32 / 30.0).collect();
        let channels = (0..turning)
            .map(|j| RawChannel {
                joint: format!("j{j}"),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                times: times.clone(),
                values: RawValues::Quat(
                    times
                        .iter()
                        .map(|&t| {
                            let a = t * (1.0 + j as f32);
                            Quat::from_euler(glam::EulerRot::XYZ, a.sin(), 0.0, (2.0 * a).cos())
                        })
                        .collect(),
                ),
            })
            .collect();
        let clip = RawClip {
            name: "c".into(),
            start: 0.0,
            duration: seconds as f32,
            channels,
        }
        .build(&skeleton)
        .unwrap();
        (skeleton, clip)
    }

    /// The loosening's errors per chunk of check times (kept trial by trial, each trial
    /// measuring only the joints it moves, its chunks in the order of their errors) are what
    /// measuring the loosened clip afresh finds, bit for bit: twenty seconds (ten chunks), some
    /// trials kept.
    #[test]
    fn the_loosenings_errors_are_the_loosened_clips() {
        let (skeleton, clip) = chain_for(4, 20);
        let grid = Grid::new(clip.start, clip.duration, 30.0).unwrap();
        let (budget, shell) = (0.01, 3.0);
        let p = prepare(&skeleton, &clip, grid, budget, shell).unwrap();
        let n = skeleton.len();
        let ones = vec![1.0; n];
        let chunks = p.check_times.len().div_ceil(metric::CHUNK);
        assert!(chunks >= 8, "{chunks} chunks");
        let per_chunk = |c: &Clip| {
            let mut e = vec![0f32; chunks * n];
            let times = &p.check_times;
            metric::measure(
                &skeleton,
                p.check_reference(&clip),
                c,
                shell,
                times,
                |i, j, x| {
                    let k = i / metric::CHUNK * n + j;
                    e[k] = worse(e[k], x);
                },
            )
            .unwrap();
            e
        };
        // A search's clip: the largest of a few multipliers that measures within the target.
        let target = 0.97 * budget;
        let (m, best) = [8.0f32, 4.0, 2.0, 1.0, 0.5, 0.25]
            .into_iter()
            .find_map(|m| {
                let out = assemble(&clip, &skeleton, &p, plan_all(&p, m, &ones)).unwrap();
                let e = per_chunk(&out.clip);
                let within = e.iter().all(|&x| x <= target);
                within.then(|| {
                    let check_errors = Some(e);
                    (
                        m,
                        Outcome {
                            check_errors,
                            ..out
                        },
                    )
                })
            })
            .unwrap();
        let (loose, scale) = loosen(&skeleton, &clip, &p, shell, target, m, &ones, &best).unwrap();
        assert!(scale.iter().any(|&s| s > 1.0), "a trial kept: {scale:?}");
        let bits = |e: &[f32]| e.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let kept = loose.check_errors.as_deref().unwrap();
        assert_eq!(bits(kept), bits(&per_chunk(&loose.clip)));
    }

    /// Channels without a track that sit at their rest value are not stored and read back
    /// as the values sampling them gives; skipping a channel that moves is noticed, and
    /// `prepare` would then sample every channel again.
    #[test]
    fn untracked_channels_at_rest_are_not_stored() {
        let (skeleton, clip) = chain_turning(3);
        let grid = Grid::new(clip.start, clip.duration, 30.0).unwrap();
        let p = prepare(&skeleton, &clip, grid, 0.01, 3.0).unwrap();
        let n = skeleton.len();
        let none = vec![false; 3 * n];
        let (raw, raw_sub, _) = sample_channels(&skeleton, &clip, grid, 3.0, &p.rest, &none)
            .unwrap()
            .unwrap();
        let mut skipped = 0;
        for ch in 0..3 * n {
            let (a, b) = p.values(ch);
            assert_eq!(&a[..], &raw[ch][..], "channel {ch}");
            assert_eq!(&b[..], &raw_sub[ch][..], "channel {ch}");
            if p.raw[ch].is_empty() {
                assert!(p.at_rest[ch] && p.raw_sub[ch].is_empty());
                skipped += 1;
            }
        }
        // Translations and scales have no track here, nor has the last joint's rotation.
        assert_eq!(skipped, 2 * n + 1);
        let moving = (0..3 * n).find(|&ch| !p.at_rest[ch]).unwrap();
        let mut skip = none.clone();
        skip[moving] = true;
        assert!(sample_channels(&skeleton, &clip, grid, 3.0, &p.rest, &skip)
            .unwrap()
            .is_none());
    }

    /// Each joint's plans as `plan_joint` makes them (channels at rest answered without
    /// planning, rotations compared with the values normalised once) are the plans
    /// `encode::plan` makes from the channel alone, at several multipliers; the chain's
    /// translations and scales never leave their rest values, and neither does the last
    /// joint's rotation (the others turn).
    #[test]
    fn joint_plans_are_the_channels_plans() {
        let (skeleton, clip) = chain_turning(3);
        let grid = Grid::new(clip.start, clip.duration, 30.0).unwrap();
        let p = prepare(&skeleton, &clip, grid, 0.01, 3.0).unwrap();
        let n = skeleton.len();
        let resting = |ch: usize| TARGETS[ch % 3] != Target::Rotation || ch / 3 == 3;
        for ch in 0..3 * n {
            assert_eq!(p.at_rest[ch], resting(ch), "channel {ch}");
        }
        for m in [0.5f32, 4.0, 64.0] {
            for j in 0..n {
                let plans = plan_joint(&p, j, m);
                for (k, target) in TARGETS.into_iter().enumerate() {
                    let e = p.share[j] * m;
                    let tol: Vec<f32> = (0..grid.frames as usize)
                        .map(|f| {
                            let i = f * n + j;
                            match target {
                                Target::Rotation => {
                                    2.0 * (e / p.sens.reach[i] * 0.25).min(1.5).sin()
                                }
                                Target::Translation => e / p.sens.parent_scale[i],
                                Target::Scale => e * p.sens.min_scale[i] / p.sens.reach[i],
                            }
                        })
                        .collect();
                    let (raw, raw_sub) = p.values(j * 3 + k);
                    let input = encode::TrackInput {
                        joint: j as JointIndex,
                        target,
                        step: false,
                        raw: &raw,
                        raw_sub: &raw_sub,
                        tol: &tol,
                        rest: p.rest[j * 3 + k],
                        units: None,
                    };
                    let alone = encode::plan(&input, &p.pos);
                    assert_eq!(plans[k], alone, "joint {j} {target:?} at {m}");
                    let at_rest = matches!(alone, encode::Plan::Rest);
                    assert_eq!(at_rest, resting(j * 3 + k), "joint {j} {target:?}");
                }
            }
        }
    }

    /// The tightening brings a clip planned with far too much budget within it, chain by
    /// chain, and says how many rounds that took; a clip already within takes none. Both
    /// measured again at the dense times with the reference sampled from the clip itself
    /// (not the prepared frames the tightening measures with).
    #[test]
    fn tightening_brings_a_clip_within_the_budget() {
        let (skeleton, clip) = chain();
        let grid = Grid::new(clip.start, clip.duration, 30.0).unwrap();
        let (budget, shell) = (0.01, 3.0);
        let p = prepare(&skeleton, &clip, grid, budget, shell).unwrap();
        let tight = Tighten {
            skeleton: &skeleton,
            reference: &clip,
            p: &p,
            shell,
            budget,
        };
        let ones = vec![1.0; skeleton.len()];
        let worst = |c: &Clip| {
            let mut e = 0f32;
            metric::measure(
                &skeleton,
                metric::Reference::Clip(&clip),
                c,
                shell,
                &p.dense_times,
                |_, _, x| e = worse(e, x),
            )
            .unwrap();
            e
        };
        for (m, tightened) in [(64.0, true), (1.0 / 64.0, false)] {
            let start = assemble(&clip, &skeleton, &p, plan_all(&p, m, &ones)).unwrap();
            assert_eq!(worst(&start.clip) > budget, tightened, "{m}");
            let (out, rounds) = tight.run(start, m, ones.clone()).unwrap().unwrap();
            assert_eq!(rounds > 0, tightened, "{m}: {rounds}");
            assert!(out.dense.stats.max <= budget);
            assert!(worst(&out.clip) <= budget);
        }
    }

    /// Runs [`search`] on `error(m)`, returning the multiplier found and every one tried.
    fn run(error: impl Fn(f32) -> f32) -> (Option<f32>, Vec<f32>) {
        let mut tried = Vec::new();
        let found = search(
            |m| {
                tried.push(m);
                Ok(((), error(m)))
            },
            1.0,
        )
        .unwrap();
        (found.map(|(m, ())| m), tried)
    }

    proptest! {
        /// Where the error grows with the multiplier (as a power, in steps or not), the
        /// search returns a multiplier that passes, within the precision of the largest that
        /// does, in a bounded number of attempts.
        #[test]
        fn finds_the_threshold_of_a_growing_error(
            log_threshold in -8.0f32..10.0,
            power in 0.3f32..4.0,
            steps in prop::option::of(2.0f32..40.0),
        ) {
            // Log-uniform, so that thresholds below 4 (the first attempt), and below the
            // smallest multiplier, are drawn as often as those above.
            let threshold = log_threshold.exp();
            let error = |m: f32| {
                let x = (m / threshold).powf(power);
                // A staircase: flat between steps, jumping at them (as the worst joint's does).
                match steps {
                    Some(k) => (x.ln() * k).ceil().exp().powf(1.0 / k).max(x),
                    None => x,
                }
            };
            let (found, tried) = run(error);
            prop_assert!(tried.len() <= 40, "{} attempts", tried.len());
            match found {
                None => {
                    prop_assert!(error(SEARCH_MIN) > 1.0);
                }
                Some(m) => {
                    prop_assert!(error(m) <= 1.0);
                    prop_assert!(tried.contains(&m));
                    // Within the precision: a failing multiplier was tried just above, or the
                    // search stopped at its bound.
                    let close = tried.iter().any(|&t| t > m && t <= m * SEARCH_PRECISION * 1.0001 && error(t) > 1.0);
                    prop_assert!(close || m == SEARCH_MAX, "m {m}, tried {tried:?}");
                }
            }
        }
    }

    /// A staircase like Boxing_Toes' (the largest error flat over a step, then a jump), with
    /// the jump low enough that the probe below the first attempt fails: once two passing
    /// attempts measure the same error, the search takes the bracket's middle instead of
    /// creeping up the step, and still ends within the precision of the threshold.
    #[test]
    fn a_flat_step_is_bisected() {
        let error = |m: f32| match m {
            m if m < 3.0 => 0.633,
            m if m < 3.65 => 0.898,
            m if m < 3.7 => 0.9967,
            _ => 1.36,
        };
        let (found, tried) = run(error);
        let found = found.unwrap();
        assert!(
            found < 3.7 && 3.7 / found <= SEARCH_PRECISION,
            "{found} {tried:?}"
        );
        assert!(tried.len() <= 6, "{tried:?}");
        // The attempt after the first two passing ones with the same error is the middle (in
        // log scale) of the bracket then: between the second of them and the smallest fail.
        let k = (2..tried.len())
            .find(|&k| error(tried[k - 1]) <= 1.0 && error(tried[k - 1]) == error(tried[k - 2]))
            .expect("a flat step");
        let fail = tried[..k]
            .iter()
            .copied()
            .filter(|&m| error(m) > 1.0)
            .fold(f32::INFINITY, f32::min);
        let middle = (tried[k - 1] * fail).sqrt();
        assert!((tried[k] / middle - 1.0).abs() < 1e-5, "{tried:?}");
    }

    /// Where the first attempt's error is within the precision of the aim, the search tries
    /// the precision's edge next, and that attempt ends it: above a pass (which fails
    /// there) or below a fail (which passes there).
    #[test]
    fn an_attempt_near_the_aim_is_settled_at_the_precisions_edge() {
        // 4 passes at 0.98 of the target; the aim (0.99) is 1% further: 4 * 1.07 fails.
        let (found, tried) = run(|m| 0.98 * (m / 4.0).powi(2));
        assert_eq!(found, Some(4.0));
        assert_eq!(tried, vec![4.0, 4.0 * SEARCH_PRECISION]);
        // 4 fails at 1.02 of the target: 4 / 1.07 passes.
        let (found, tried) = run(|m| 1.02 * (m / 4.0).powi(2));
        assert_eq!(found, Some(4.0 / SEARCH_PRECISION));
        assert_eq!(tried.len(), 2, "{tried:?}");
        // Far from the aim, no probe: 4 passes at half the target, the search steps on.
        let (_, tried) = run(|m| 0.5 * (m / 4.0).powi(2));
        assert!(tried[1] >= 4.0 * 1.25, "{tried:?}");
    }

    /// A staircase whose threshold lies just below the failing attempt, the secant pointing
    /// to the bracket's upper half (as on Boxing_Toes): the attempt just below the failing
    /// one passes and ends the search, in three attempts where the secant and bisection
    /// took five. Where the secant points to the lower half, no probe.
    #[test]
    fn the_bracket_is_probed_below_its_failing_end_once() {
        let error = |m: f32| match m {
            m if m < 3.0 => 0.633,
            m if m < 3.9 => 0.898,
            _ => 1.36,
        };
        let (found, tried) = run(error);
        assert_eq!(tried.len(), 3, "{tried:?}");
        assert_eq!(found, Some(4.0 / SEARCH_PRECISION));
        // The same staircase with the jump lower: the probe fails, and the search goes on
        // within the narrowed bracket, probing no more.
        let low = |m: f32| if m < 3.3 { 0.633 } else { 1.36 };
        let (found, tried) = run(low);
        let found = found.unwrap();
        assert!(
            found < 3.3 && 3.3 / found <= SEARCH_PRECISION,
            "{found} {tried:?}"
        );
        let edge = 4.0 / SEARCH_PRECISION;
        assert_eq!(tried[2], edge, "{tried:?}");
        assert!(!tried.contains(&(edge / SEARCH_PRECISION)), "{tried:?}");
        // The secant points to the lower half of the first bracket (4 fails at 2, 1.98
        // passes at 0.9, near the aim): no probe, the secant's step (kept to a quarter of
        // the bracket) instead.
        let lower = |m: f32| match m {
            m if m >= 3.0 => 2.0,
            m if m >= 2.2 => 1.5,
            _ => 0.9,
        };
        let (found, tried) = run(lower);
        assert!(!tried.contains(&edge), "{tried:?}");
        let quarter = tried[1] * (4.0 / tried[1]).powf(0.25);
        assert!((tried[2] / quarter - 1.0).abs() < 1e-5, "{tried:?}");
        let found = found.unwrap();
        assert!(
            found < 2.2 && 2.2 / found <= SEARCH_PRECISION,
            "{found} {tried:?}"
        );
    }

    #[test]
    fn bounds_nan_and_zero() {
        // An error of zero everywhere: the largest multiplier.
        assert_eq!(run(|_| 0.0).0, Some(SEARCH_MAX));
        // NaN counts as over the target: nothing passes.
        let (found, tried) = run(|_| f32::NAN);
        assert_eq!(found, None);
        assert_eq!(tried.last(), Some(&SEARCH_MIN));
        // An error that falls as the multiplier grows, over the target at 4: the search
        // shrinks to its bound and finds nothing.
        let (found, tried) = run(|m| 8.0 / m);
        assert_eq!(found, None);
        assert_eq!(tried.last(), Some(&SEARCH_MIN));
        // NaN above a multiplier: the search stays below it.
        let (found, _) = run(|m| if m > 2.0 { f32::NAN } else { m / 4.0 });
        let m = found.unwrap();
        assert!(m <= 2.0 && m * SEARCH_PRECISION > 2.0, "{m}");
    }
}

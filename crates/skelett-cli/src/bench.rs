//! `skelett bench`: the runtime's per-frame steps timed on any asset.
//!
//! The same workloads as `crates/skelett/benches/runtime.rs` (criterion), with a small
//! self-calibrating timer instead of criterion so that it runs in seconds on a user's file:
//! each figure is the median of `rounds` rounds, each round long enough (about 5 ms) for the
//! clock's resolution not to matter.
//!
//! - forward: the clip played at 60 Hz from start to end, through a warm sampling cache;
//! - seek: pseudo-random times over the clip (every sample a jump);
//! - local-to-model: the whole skeleton from a sampled pose;
//! - palette: skin 0's matrices (model x inverse bind).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use glam::Mat4;
use serde::Serialize;
use skelett::{local_to_model, sample, skinning_palette, Clip, Pose, SamplingCache};

use crate::outln;

use crate::Result;

#[derive(Serialize)]
struct Row {
    clip: String,
    joints: usize,
    animated_channels: usize,
    forward_ns_per_joint: f64,
    seek_ns_per_joint: f64,
}

#[derive(Serialize)]
struct Report {
    source: String,
    joints: usize,
    rounds: usize,
    clips: Vec<Row>,
    local_to_model_ns_per_joint: f64,
    palette_ns_per_matrix: Option<f64>,
    palette_matrices: usize,
}

/// Median nanoseconds per call of `f`, over `rounds` rounds of about 5 ms each.
pub(crate) fn median_ns(rounds: usize, mut f: impl FnMut()) -> f64 {
    // Calibrate: double the batch until it takes at least 5 ms.
    let mut batch = 1usize;
    loop {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        if t.elapsed().as_micros() >= 5000 || batch >= 1 << 30 {
            break;
        }
        batch *= 2;
    }
    let mut per_call: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            t.elapsed().as_nanos() as f64 / batch as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    per_call[per_call.len() / 2]
}

/// Times at 60 Hz over the clip (at least two; at most 100 000, over the clip's start for
/// absurdly long clips).
pub fn forward_times(clip: &Clip) -> Vec<f32> {
    let frames = ((clip.duration() * 60.0).ceil() as usize).clamp(1, 100_000);
    (0..=frames)
        .map(|i| clip.start() + (i as f32 / 60.0).min(clip.duration()))
        .collect()
}

/// 256 reproducible pseudo-random times over the clip.
pub fn seek_times(clip: &Clip) -> Vec<f32> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    (0..256)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            clip.start() + clip.duration() * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

/// Runs `skelett bench`.
pub fn run(out: &mut String, file: Option<&Path>, json: bool, rounds: usize) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    let skeleton = &asset.skeleton;
    let n = skeleton.len();
    let mut pose = Pose::rest(skeleton);
    let mut model = vec![Mat4::IDENTITY; n];
    let mut rows = Vec::new();
    for clip in &asset.clips {
        let mut cache = SamplingCache::for_clip(clip);
        let fwd = forward_times(clip);
        let seeks = seek_times(clip);
        let mut i = 0;
        let forward = median_ns(rounds, || {
            i = if i + 1 < fwd.len() { i + 1 } else { 0 };
            sample(clip, black_box(fwd[i]), &mut cache, &mut pose).unwrap();
            black_box(&pose);
        });
        let mut k = 0;
        let seek = median_ns(rounds, || {
            k = (k + 1) & 255;
            sample(clip, black_box(seeks[k]), &mut cache, &mut pose).unwrap();
            black_box(&pose);
        });
        rows.push(Row {
            clip: clip.name().to_string(),
            joints: n,
            animated_channels: clip.track_count(),
            forward_ns_per_joint: forward / n as f64,
            seek_ns_per_joint: seek / n as f64,
        });
    }
    if let Some(clip) = asset.clips.first() {
        skelett::sample_uncached(clip, clip.start() + clip.duration() * 0.37, &mut pose)?;
    }
    let l2m = median_ns(rounds, || {
        local_to_model(skeleton, black_box(&pose), 0, &mut model).unwrap();
        black_box(&model);
    }) / n.max(1) as f64;
    let (palette, palette_matrices) = match asset.skins.first() {
        Some(skin) if !skin.is_empty() => {
            let mut out = vec![Mat4::IDENTITY; skin.len()];
            let ns = median_ns(rounds, || {
                skinning_palette(skin, black_box(&model), &mut out).unwrap();
                black_box(&out);
            });
            (Some(ns / skin.len() as f64), skin.len())
        }
        _ => (None, 0),
    };
    let report = Report {
        source,
        joints: n,
        rounds,
        clips: rows,
        local_to_model_ns_per_joint: l2m,
        palette_ns_per_matrix: palette,
        palette_matrices,
    };
    if json {
        outln!(out, "{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    outln!(
        out,
        "{}: {} joints, median of {} rounds, one thread",
        report.source,
        report.joints,
        report.rounds
    );
    outln!(
        out,
        "  {:<28} {:>9} {:>14} {:>14}",
        "clip",
        "channels",
        "forward ns/j",
        "seek ns/j"
    );
    for r in &report.clips {
        outln!(
            out,
            "  {:<28} {:>9} {:>14.2} {:>14.2}",
            r.clip,
            r.animated_channels,
            r.forward_ns_per_joint,
            r.seek_ns_per_joint
        );
    }
    outln!(
        out,
        "  local-to-model   {:>8.2} ns/joint",
        report.local_to_model_ns_per_joint
    );
    match report.palette_ns_per_matrix {
        Some(p) => outln!(
            out,
            "  palette          {p:>8.2} ns/matrix ({} matrices)",
            report.palette_matrices
        ),
        None => outln!(out, "  palette          (no skin)"),
    }
    Ok(())
}

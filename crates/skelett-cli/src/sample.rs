//! `skelett sample`: world matrices of every joint of skin 0 at given clip times.
//!
//! The JSON output has the shape of `shared/data/reference/*.json`: `clips`, a list (of the
//! one clip sampled) with `index`, `name`, `start`, `end` and `samples`, each with `t` and
//! `joints`, each with `joint`, `name` and `world` as 16 column-major numbers; so the two can
//! be compared number by number.

use std::path::Path;

use glam::Mat4;
use serde::Serialize;
use skelett::{local_to_model, sample, Pose, SamplingCache};

use crate::outln;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Serialize)]
struct Output {
    source: String,
    convention: &'static str,
    clips: [ClipSamples; 1],
}

#[derive(Serialize)]
struct ClipSamples {
    index: usize,
    name: String,
    start: f32,
    end: f32,
    samples: Vec<Sample>,
}

#[derive(Serialize)]
struct Sample {
    t: f32,
    joints: Vec<JointWorld>,
}

#[derive(Serialize)]
struct JointWorld {
    joint: usize,
    name: String,
    world: [f32; 16],
}

const CONVENTION: &str = "world: column-major 4x4 world matrix (scene space, including every \
non-joint ancestor node) of each joint of skin 0, in skin joint order; t is the clip time in the \
file's time base; before the first key = first key, past the last key = last key.";

/// Runs `skelett sample`.
pub fn run(
    out: &mut String,
    file: Option<&Path>,
    clip: Option<&str>,
    times: &[f32],
    json: bool,
) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    let (index, clip) = match clip {
        None => asset
            .clips
            .first()
            .map(|c| (0, c))
            .ok_or("the file has no clips")?,
        Some(name) => asset
            .clip_index(name)
            .map(|i| (i, &asset.clips[i]))
            .ok_or_else(|| {
                let names: Vec<&str> = asset.clips.iter().map(|c| c.name()).collect();
                format!("no clip {name:?}; the file has: {}", names.join(", "))
            })?,
    };
    if let Some(t) = times.iter().find(|t| !t.is_finite()) {
        return Err(format!("time {t} is not a finite number").into());
    }
    let skeleton = &asset.skeleton;
    let skin_joints = asset.skin_joints(0);
    let root = skeleton.root_transform();
    let mut cache = SamplingCache::for_clip(clip);
    let mut pose = Pose::rest(skeleton);
    let mut model = vec![Mat4::IDENTITY; skeleton.len()];
    let mut samples = Vec::with_capacity(times.len());
    for &t in times {
        sample(clip, t, &mut cache, &mut pose)?;
        local_to_model(skeleton, &pose, 0, &mut model)?;
        samples.push(Sample {
            t,
            joints: skin_joints
                .iter()
                .enumerate()
                .map(|(k, &j)| JointWorld {
                    joint: k,
                    name: skeleton.name(j).to_string(),
                    world: (root * model[j as usize]).to_cols_array(),
                })
                .collect(),
        });
    }
    let result = Output {
        source,
        convention: CONVENTION,
        clips: [ClipSamples {
            index,
            name: clip.name().to_string(),
            start: clip.start(),
            end: clip.end(),
            samples,
        }],
    };
    if json {
        outln!(out, "{}", serde_json::to_string(&result)?);
        return Ok(());
    }
    let c = &result.clips[0];
    outln!(
        out,
        "{}: clip [{}] {:?}, {} .. {} s; world matrices (rows) of skin 0's joints",
        result.source,
        c.index,
        c.name,
        c.start,
        c.end
    );
    for s in &c.samples {
        outln!(out, "t = {}", s.t);
        for j in &s.joints {
            let m = Mat4::from_cols_array(&j.world);
            outln!(out, "  [{}] {}", j.joint, j.name);
            for r in 0..4 {
                let row = m.row(r);
                outln!(
                    out,
                    "      {:>13.7} {:>13.7} {:>13.7} {:>13.7}",
                    row.x,
                    row.y,
                    row.z,
                    row.w
                );
            }
        }
    }
    Ok(())
}

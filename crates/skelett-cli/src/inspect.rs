//! `skelett inspect`: the joint tree, morph channels, clips, meshes and warnings of a file, as
//! text or JSON.

use std::path::Path;

use serde::Serialize;
use skelett::{Clip, JointIndex, Skeleton};
use skelett_io::Asset;

use crate::outln;

use crate::Result;

#[derive(Serialize)]
struct Report {
    source: String,
    skeleton: SkeletonInfo,
    /// Morph-target weight channels: name, rest weight, and the clips that animate each.
    morph_channels: Vec<MorphChannelInfo>,
    clips: Vec<ClipInfo>,
    meshes: Vec<MeshInfo>,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct SkeletonInfo {
    joints: usize,
    root_transform: [f32; 16],
    tree: Vec<JointInfo>,
}

#[derive(Serialize)]
struct JointInfo {
    index: usize,
    name: String,
    parent: Option<usize>,
    depth: usize,
}

#[derive(Serialize)]
struct MorphChannelInfo {
    index: usize,
    name: String,
    rest: f32,
    /// Indices of the clips with a track for it.
    animated_by: Vec<usize>,
}

#[derive(Serialize)]
struct ClipInfo {
    index: usize,
    name: String,
    start: f32,
    duration: f32,
    /// Frames per second the file gives or its keys show (`null`: neither).
    frame_rate: Option<f32>,
    /// Animated channels (more than one distinct key).
    channels: usize,
    /// Channels holding one value the whole clip (folded into the base pose).
    constant_channels: usize,
    keys: KeysByInterpolation,
    bytes: usize,
    /// For a compressed clip: the frames per second of its grid.
    #[serde(skip_serializing_if = "Option::is_none")]
    compact_rate: Option<f32>,
    /// For a compressed clip: its key layout, "stream" or "seek".
    #[serde(skip_serializing_if = "Option::is_none")]
    compact_layout: Option<&'static str>,
    /// Morph-weight tracks (channels with more than one key).
    morph_tracks: usize,
    /// Their keys, by interpolation (a cubic key counts once).
    morph_keys: KeysByInterpolation,
}

#[derive(Serialize)]
struct KeysByInterpolation {
    step: usize,
    linear: usize,
    cubic: usize,
}

#[derive(Serialize)]
struct MeshInfo {
    name: String,
    skin: usize,
    primitives: usize,
    vertices: usize,
    triangles: usize,
    /// `influences[k]` vertices have k non-zero weights.
    influences: Vec<usize>,
    has_normals: bool,
    has_tangents: bool,
    has_uvs: bool,
    /// Morph targets per primitive (each weighed by the morph channel of the same index in
    /// `morph_channels`).
    morph_targets: usize,
    /// The skeleton morph channel of each target.
    morph_channels: Vec<u32>,
    /// The channel weight each target is full at (FBX in-between shapes); empty when all
    /// are 1.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    morph_full_weights: Vec<f32>,
}

fn clip_info(index: usize, c: &Clip) -> ClipInfo {
    let counts = c.counts();
    ClipInfo {
        index,
        name: c.name().to_string(),
        start: c.start(),
        duration: c.duration(),
        frame_rate: c.frame_rate(),
        channels: c.track_count(),
        constant_channels: counts.constant,
        keys: KeysByInterpolation {
            step: counts.keys[0],
            linear: counts.keys[1],
            cubic: counts.keys[2],
        },
        bytes: c.size_bytes(),
        compact_rate: c.compact_grid().map(|g| g.0),
        compact_layout: c.compact_layout().map(layout_name),
        morph_tracks: c.morph_tracks().len(),
        morph_keys: {
            let count = |i: skelett::Interpolation| {
                c.morph_tracks()
                    .filter(|t| t.interpolation == i)
                    .map(|t| t.times.len())
                    .sum()
            };
            KeysByInterpolation {
                step: count(skelett::Interpolation::Step),
                linear: count(skelett::Interpolation::Linear),
                cubic: count(skelett::Interpolation::CubicSpline),
            }
        },
    }
}

fn report(asset: &Asset, source: String) -> Report {
    let s = &asset.skeleton;
    Report {
        source,
        skeleton: SkeletonInfo {
            joints: s.len(),
            root_transform: s.root_transform().to_cols_array(),
            tree: (0..s.len() as JointIndex)
                .map(|j| JointInfo {
                    index: j as usize,
                    name: s.name(j).to_string(),
                    parent: s.parent(j).map(|p| p as usize),
                    depth: s.depth(j),
                })
                .collect(),
        },
        morph_channels: s
            .morph_channels()
            .into_iter()
            .enumerate()
            .map(|(i, c)| MorphChannelInfo {
                index: i,
                name: c.name,
                rest: c.rest,
                animated_by: asset
                    .clips
                    .iter()
                    .enumerate()
                    .filter(|(_, clip)| clip.morph_tracks().any(|t| t.channel == i))
                    .map(|(k, _)| k)
                    .collect(),
            })
            .collect(),
        clips: asset
            .clips
            .iter()
            .enumerate()
            .map(|(i, c)| clip_info(i, c))
            .collect(),
        meshes: asset
            .meshes
            .iter()
            .map(|m| {
                let mut influences = vec![0usize; 9];
                for p in &m.primitives {
                    for k in p.influence_counts() {
                        influences[k.min(8)] += 1;
                    }
                }
                while influences.len() > 1 && influences.last() == Some(&0) {
                    influences.pop();
                }
                MeshInfo {
                    name: m.name.clone(),
                    skin: m.skin,
                    primitives: m.primitives.len(),
                    vertices: m.primitives.iter().map(|p| p.vertex_count()).sum(),
                    triangles: m.primitives.iter().map(|p| p.triangle_count()).sum(),
                    influences,
                    has_normals: m.primitives.iter().all(|p| p.normals.is_some()),
                    has_tangents: m.primitives.iter().all(|p| p.tangents.is_some()),
                    has_uvs: m.primitives.iter().all(|p| p.uvs.is_some()),
                    morph_targets: m.morph_channels.len(),
                    morph_channels: m.morph_channels.clone(),
                    morph_full_weights: m.morph_full_weights.clone(),
                }
            })
            .collect(),
        warnings: asset.warnings.clone(),
    }
}

fn print_tree(out: &mut String, s: &Skeleton) {
    // Children in joint order under each parent, drawn with box characters.
    let n = s.len();
    let mut children = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for j in 0..n as JointIndex {
        match s.parent(j) {
            Some(p) => children[p as usize].push(j),
            None => roots.push(j),
        }
    }
    fn walk(
        out: &mut String,
        s: &Skeleton,
        children: &[Vec<JointIndex>],
        j: JointIndex,
        prefix: &str,
        last: bool,
        top: bool,
    ) {
        let branch = if top {
            ""
        } else if last {
            "└─ "
        } else {
            "├─ "
        };
        outln!(out, "  {prefix}{branch}{} [{j}]", s.name(j));
        let next = if top {
            String::new()
        } else {
            format!("{prefix}{}", if last { "   " } else { "│  " })
        };
        let kids = &children[j as usize];
        for (i, &c) in kids.iter().enumerate() {
            walk(out, s, children, c, &next, i + 1 == kids.len(), false);
        }
    }
    for &r in &roots {
        walk(out, s, &children, r, "", true, true);
    }
}

fn kib(bytes: usize) -> String {
    if bytes >= 10 * 1024 {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// Runs `skelett inspect`.
pub fn run(out: &mut String, file: Option<&Path>, json: bool) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    let r = report(&asset, source);
    if json {
        outln!(out, "{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    outln!(out, "{}", r.source);
    let identity = asset.skeleton.root_transform() == glam::Mat4::IDENTITY;
    outln!(
        out,
        "skeleton: {} joints{}",
        r.skeleton.joints,
        if identity {
            ""
        } else {
            " (under non-joint ancestors: see root_transform in --json)"
        }
    );
    print_tree(out, &asset.skeleton);
    if !r.morph_channels.is_empty() {
        outln!(out, "morph channels: {}", r.morph_channels.len());
        for c in &r.morph_channels {
            let by: Vec<String> = c.animated_by.iter().map(|k| format!("[{k}]")).collect();
            outln!(
                out,
                "  ({}) {:<32} rest {}  {}",
                c.index,
                crate::term_safe(&c.name),
                c.rest,
                if by.is_empty() {
                    "not animated".to_string()
                } else {
                    format!("animated by clip {}", by.join(" "))
                }
            );
        }
    }
    outln!(out, "clips: {}", r.clips.len());
    for c in &r.clips {
        outln!(
            out,
            "  [{}] {:<24} start {:.4} s  duration {:.4} s  channels {} animated + {} constant  \
             keys: {} linear, {} step, {} cubic  {}",
            c.index,
            c.name,
            c.start,
            c.duration,
            c.channels,
            c.constant_channels,
            c.keys.linear,
            c.keys.step,
            c.keys.cubic,
            kib(c.bytes)
        );
        if let Some(rate) = c.frame_rate {
            outln!(out, "      frame rate: {rate} fps");
        }
        if let Some(rate) = c.compact_rate {
            let layout = match c.compact_layout {
                Some("seek") => ", seekable layout",
                Some("lanes") => ", lanes layout",
                _ => "",
            };
            outln!(
                out,
                "      compressed: {rate} fps grid (skelett compress{layout})"
            );
        }
        if c.morph_tracks > 0 {
            let k = &c.morph_keys;
            outln!(
                out,
                "      morph weights: {} track(s), keys: {} linear, {} step, {} cubic",
                c.morph_tracks,
                k.linear,
                k.step,
                k.cubic
            );
        }
    }
    outln!(out, "meshes: {}", r.meshes.len());
    for m in &r.meshes {
        let hist: Vec<String> = m
            .influences
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k}:{n}"))
            .collect();
        outln!(
            out,
            "  {:<24} skin {}  {} primitive(s)  {} vertices  {} triangles  influences {}{}{}{}",
            m.name,
            m.skin,
            m.primitives,
            m.vertices,
            m.triangles,
            hist.join(" "),
            if m.has_normals {
                "  normals"
            } else {
                "  no normals"
            },
            if m.has_tangents { " tangents" } else { "" },
            if m.has_uvs { " uvs" } else { "" },
        );
        if m.morph_targets > 0 {
            outln!(
                out,
                "      {} morph targets (channels {})",
                m.morph_targets,
                m.morph_channels
                    .iter()
                    .enumerate()
                    .map(|(k, c)| match m.morph_full_weights.get(k) {
                        // An in-between shape: its channel, '@' the weight it is full at.
                        Some(&f) if f != 1.0 => format!("{c}@{f}"),
                        _ => c.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    if r.warnings.is_empty() {
        outln!(out, "warnings: none");
    } else {
        outln!(out, "warnings: {}", r.warnings.len());
        for w in &r.warnings {
            outln!(out, "  {w}");
        }
    }
    Ok(())
}

/// A compact layout's name in JSON: "stream" or "seek".
pub(crate) fn layout_name(layout: skelett::compress::CompactLayout) -> &'static str {
    match layout {
        skelett::compress::CompactLayout::Stream => "stream",
        skelett::compress::CompactLayout::Seek => "seek",
        skelett::compress::CompactLayout::Lanes => "lanes",
    }
}

//! `skelett bench`: the runtime's per-frame steps timed on any asset.
//!
//! The same workloads as `crates/skelett/benches/runtime.rs` (criterion), with a small
//! self-calibrating timer instead of criterion so that it runs in seconds on a user's file:
//! each figure is the median of `rounds` rounds, each round long enough (about 5 ms) for the
//! clock's resolution not to matter.
//!
//! - forward: the clip played at 60 Hz from start to end, through a warm sampling cache;
//! - seek: pseudo-random times over the clip (every sample a jump); a compressed clip is
//!   measured in every layout (the file's and the others it converts to), with their sizes,
//!   so that the trade-off shows on the user's own data; with `--compress`, each keyed clip
//!   is compressed (default options) and its forms follow it, each with its forward and
//!   seek time over the keyed clip's;
//! - local-to-model: the whole skeleton from a sampled pose;
//! - palette: skin 0's matrices (model x inverse bind);
//! - blend: two and three sampled poses blended with equal weights, as slices of transforms
//!   and as structure-of-arrays poses;
//! - character: what one character does per frame with two clips playing (the first two, or
//!   the only one at two phases): sample both through their caches, blend 50/50,
//!   local-to-model, palette; the same character over and over, and 1024 distinct ones in
//!   turn (their data no longer in the caches); and the same on structure-of-arrays poses;
//! - animator: the same two clips through an [`Animator`] cross-fading from one to the other
//!   (a fade that lasts, synchronised), local-to-model (`Animator::local_to_model`: from the
//!   pose where the animator left it, blocks or rows), palette: one, 1024 in turn, and 1024
//!   with the next one's memory prefetched ([`skelett::crowd`]); and 1024 lean animators
//!   (`Animator::new_lean`), prefetched, writing their palettes alone
//!   (`Animator::skinning_palette`, no model matrices kept);
//! - skinning: the largest skinned primitive, positions and normals, linear blend and dual
//!   quaternion, one thread.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use glam::{Mat4, Vec3};
use serde::Serialize;
use skelett::animator::{Animator, Curve, PlayOptions};
use skelett::compress::CompactLayout;
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{
    blend, blend_soa, crowd, local_to_model, local_to_model_soa, sample, sample_soa,
    skinning_palette, BlendInput, Clip, Pose, SamplingCache, Skeleton, Skin, SoaBlendInput,
    SoaPose,
};

use crate::outln;

use crate::Result;

#[derive(Serialize)]
struct Row {
    clip: String,
    /// "keys", "compact" (the streamed layout), "compact, seekable" or "compact, lanes".
    storage: &'static str,
    /// What the clip's keys take ([`Clip::size_bytes`]).
    bytes: usize,
    joints: usize,
    animated_channels: usize,
    forward_ns_per_joint: f64,
    seek_ns_per_joint: f64,
    /// With `--compress`, for the forms of a keyed clip: forward and seek time over the
    /// keyed clip's.
    #[serde(skip_serializing_if = "Option::is_none")]
    over_keys: Option<[f64; 2]>,
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
    blend2_ns_per_joint: Option<f64>,
    blend3_ns_per_joint: Option<f64>,
    /// The same blends on structure-of-arrays poses (`blend_soa`).
    blend2_soa_ns_per_joint: Option<f64>,
    blend3_soa_ns_per_joint: Option<f64>,
    character: Option<CharacterRow>,
    animator: Option<AnimatorRow>,
    skinning: Option<SkinningRow>,
}

#[derive(Serialize)]
struct AnimatorRow {
    one_us: f64,
    crowd_1024_us: f64,
    /// The crowd with `crowd::for_each_prefetched` and `Animator::prefetch`.
    crowd_1024_prefetch_us: f64,
    /// A prefetched crowd of lean animators (`Animator::new_lean`) writing their palettes
    /// alone (`Animator::skinning_palette`: no model matrices of each character's); none
    /// without a skin.
    crowd_1024_lean_palette_us: Option<f64>,
}

#[derive(Serialize)]
struct CharacterRow {
    clips: [String; 2],
    one_us: f64,
    crowd_1024_us: f64,
    /// The same on structure-of-arrays poses (`sample_soa`, `blend_soa`,
    /// `local_to_model_soa`).
    one_soa_us: f64,
    crowd_1024_soa_us: f64,
    /// The structure-of-arrays crowd with the next character prefetched
    /// (`crowd::for_each_prefetched`).
    crowd_1024_soa_prefetch_us: f64,
}

#[derive(Serialize)]
struct SkinningRow {
    vertices: usize,
    linear_ns_per_vertex: f64,
    dual_quaternion_ns_per_vertex: f64,
}

/// One character of the `character` row: two clips sampled, blended, local-to-model and
/// palette, each with its own buffers.
struct Character {
    time: f32,
    caches: [SamplingCache; 2],
    poses: [Pose; 2],
    blended: Pose,
    /// The structure-of-arrays path's poses (`update_soa`): two sampled, the blend, the rest
    /// pose; empty for characters measured on slices (so that their memory is as before).
    soa: [SoaPose; 4],
    model: Vec<Mat4>,
    palette: Vec<Mat4>,
}

impl Character {
    fn new(
        skeleton: &Skeleton,
        clips: [&Clip; 2],
        skin: Option<&Skin>,
        time: f32,
        soa: bool,
    ) -> Self {
        let rows = |soa: bool| {
            if soa {
                Pose::default()
            } else {
                Pose::rest(skeleton)
            }
        };
        Character {
            time,
            caches: clips.map(SamplingCache::for_clip),
            // Rows only for characters measured on slices, blocks only for the others: memory
            // a character's update does not touch would lie between the crowd's characters.
            poses: std::array::from_fn(|_| rows(soa)),
            blended: rows(soa),
            soa: std::array::from_fn(|_| {
                if soa {
                    SoaPose::rest(skeleton)
                } else {
                    SoaPose::default()
                }
            }),
            model: vec![Mat4::IDENTITY; skeleton.len()],
            palette: vec![Mat4::IDENTITY; skin.map_or(0, Skin::len)],
        }
    }

    /// What [`Character::update_soa`] reads and writes next, on its way into the caches.
    fn prefetch_soa(&self) {
        for p in &self.soa[..3] {
            crowd::prefetch(p.blocks());
        }
        crowd::prefetch(&self.model);
        crowd::prefetch(&self.palette);
    }

    fn update(&mut self, skeleton: &Skeleton, clips: [&Clip; 2], skin: Option<&Skin>) {
        self.time += 1.0 / 60.0;
        for (k, clip) in clips.iter().enumerate() {
            // The second clip half a cycle later (the same clip twice still blends two poses).
            let t = clip.start()
                + (self.time + 0.5 * k as f32 * clip.duration()) % clip.duration().max(1e-6);
            let _ = sample(clip, t, &mut self.caches[k], &mut self.poses[k]);
        }
        let inputs = [
            BlendInput {
                pose: &self.poses[0],
                weight: 0.5,
                mask: None,
            },
            BlendInput {
                pose: &self.poses[1],
                weight: 0.5,
                mask: None,
            },
        ];
        let _ = blend(&inputs, skeleton.rest_pose(), &mut self.blended);
        let _ = local_to_model(skeleton, &self.blended, 0, &mut self.model);
        if let Some(skin) = skin {
            let _ = skinning_palette(skin, &self.model, &mut self.palette);
        }
        black_box(&self.palette);
    }

    /// [`Character::update`] on structure-of-arrays poses: `sample_soa`, `blend_soa`,
    /// `local_to_model_soa` (the same matrices).
    fn update_soa(&mut self, skeleton: &Skeleton, clips: [&Clip; 2], skin: Option<&Skin>) {
        self.time += 1.0 / 60.0;
        let [a, b, blended, rest] = &mut self.soa;
        for (k, (clip, pose)) in clips.iter().zip([&mut *a, &mut *b]).enumerate() {
            let t = clip.start()
                + (self.time + 0.5 * k as f32 * clip.duration()) % clip.duration().max(1e-6);
            let _ = sample_soa(clip, t, &mut self.caches[k], pose);
        }
        let inputs = [
            SoaBlendInput {
                pose: a,
                weight: 0.5,
            },
            SoaBlendInput {
                pose: b,
                weight: 0.5,
            },
        ];
        let _ = blend_soa(&inputs, rest, blended);
        let _ = local_to_model_soa(skeleton, blended, 0, &mut self.model);
        if let Some(skin) = skin {
            let _ = skinning_palette(skin, &self.model, &mut self.palette);
        }
        black_box(&self.palette);
    }
}

/// One character of the `animator` row: an animator cross-fading the two clips (a fade
/// that never ends, so both are sampled and blended every frame), local-to-model, palette.
struct Animated {
    animator: Animator,
    model: Vec<Mat4>,
    palette: Vec<Mat4>,
}

impl Animated {
    /// With `lean`, the animator of [`Animator::new_lean`] and no model matrices of its own
    /// (it writes its palette alone: [`Animated::update_palette`]).
    fn new(
        asset: &skelett_io::Asset,
        clips: [&std::sync::Arc<Clip>; 2],
        phase: f32,
        lean: bool,
    ) -> Self {
        let skeleton = &asset.skeleton;
        let mut animator = if lean {
            Animator::new_lean(skeleton.clone())
        } else {
            Animator::new(skeleton.clone())
        };
        let sync = PlayOptions {
            sync_group: Some(0),
            start: phase,
            ..Default::default()
        };
        // Clips of another skeleton (checked when loaded) or none: the rest pose, timed all
        // the same.
        let _ = animator.play(0, clips[0].clone(), sync);
        let _ = animator.crossfade(0, clips[1].clone(), 1.0e9, Curve::SmoothStep, sync);
        animator.update(0.5);
        Animated {
            animator,
            model: vec![Mat4::IDENTITY; if lean { 0 } else { skeleton.len() }],
            palette: vec![Mat4::IDENTITY; asset.skins.first().map_or(0, Skin::len)],
        }
    }

    fn update(&mut self, skin: Option<&Skin>) {
        self.animator.update(black_box(1.0 / 60.0));
        // From blocks where the animator leaves the pose in blocks (no rows made).
        let _ = self.animator.local_to_model(&mut self.model);
        if let Some(skin) = skin {
            let _ = skinning_palette(skin, &self.model, &mut self.palette);
        }
        black_box(&self.palette);
    }

    fn prefetch(&self) {
        self.animator.prefetch();
        crowd::prefetch(&self.model);
        crowd::prefetch(&self.palette);
    }

    /// The palette alone, its model matrices in the thread's buffer.
    fn update_palette(&mut self, skin: &Skin) {
        self.animator.update(black_box(1.0 / 60.0));
        let _ = self.animator.skinning_palette(skin, &mut self.palette);
        black_box(&self.palette);
    }

    /// [`Animated::prefetch`] for [`Animated::update_palette`].
    fn prefetch_palette(&self) {
        self.animator.prefetch();
        crowd::prefetch(&self.palette);
    }
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
pub fn run(
    out: &mut String,
    file: Option<&Path>,
    json: bool,
    rounds: usize,
    compress: bool,
) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    let skeleton = &asset.skeleton;
    let n = skeleton.len();
    let mut pose = Pose::rest(skeleton);
    let mut model = vec![Mat4::IDENTITY; n];
    let mut rows = Vec::new();
    // Compressed clips in every layout: the file's, then the others it converts to (a clip
    // in the lanes layout converts to none).
    // With `--compress`, a keyed clip's compressed forms follow it, each with its index.
    let mut measured: Vec<(std::sync::Arc<Clip>, &'static str, Option<usize>)> = Vec::new();
    for clip in &asset.clips {
        let storage = |c: &Clip| match c.compact_layout() {
            None => "keys",
            Some(CompactLayout::Stream) => "compact",
            Some(CompactLayout::Seek) => "compact, seekable",
            Some(CompactLayout::Lanes) => "compact, lanes",
        };
        let keyed = measured.len();
        measured.push((clip.clone(), storage(clip), None));
        let small = match clip.compact_layout() {
            None if compress => {
                let options = skelett::compress::CompressOptions {
                    declared_cm_per_unit: asset.model_cm_per_unit(),
                    ..Default::default()
                };
                match skelett::compress::compress(skeleton, clip, &options) {
                    Ok((small, _)) => std::sync::Arc::new(small),
                    // A clip that does not compress (no keys) is measured as keys only.
                    Err(_) => continue,
                }
            }
            _ => clip.clone(),
        };
        let Some(own) = small.compact_layout() else {
            continue;
        };
        let from_keys = clip.compact_layout().is_none().then_some(keyed);
        if from_keys.is_some() {
            let s = storage(&small);
            measured.push((small.clone(), s, from_keys));
        }
        for layout in [
            CompactLayout::Stream,
            CompactLayout::Seek,
            CompactLayout::Lanes,
        ] {
            if layout == own {
                continue;
            }
            if let Some(o) = small.with_compact_layout(layout) {
                let s = storage(&o);
                measured.push((std::sync::Arc::new(o), s, from_keys));
            }
        }
    }
    for (clip, storage, keyed) in &measured {
        let clip = &**clip;
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
            storage,
            bytes: clip.size_bytes(),
            joints: n,
            animated_channels: clip.track_count(),
            forward_ns_per_joint: forward / n as f64,
            seek_ns_per_joint: seek / n as f64,
            over_keys: keyed.map(|k| {
                let keys: &Row = &rows[k];
                [
                    forward / n as f64 / keys.forward_ns_per_joint,
                    seek / n as f64 / keys.seek_ns_per_joint,
                ]
            }),
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
    // Blending: poses of the first clip (two and three phases).
    let (mut blend2, mut blend3) = (None, None);
    let (mut blend2_soa, mut blend3_soa) = (None, None);
    if let Some(clip) = asset.clips.first() {
        let poses: Vec<Pose> = [0.2f32, 0.5, 0.8]
            .iter()
            .map(|f| {
                let mut p = Pose::rest(skeleton);
                let _ = skelett::sample_uncached(clip, clip.start() + clip.duration() * f, &mut p);
                p
            })
            .collect();
        let mut out = Pose::rest(skeleton);
        for (layers, into) in [(2usize, &mut blend2), (3, &mut blend3)] {
            let inputs: Vec<BlendInput> = poses[..layers]
                .iter()
                .map(|p| BlendInput {
                    pose: p,
                    weight: 1.0,
                    mask: None,
                })
                .collect();
            *into = Some(
                median_ns(rounds, || {
                    blend(black_box(&inputs), skeleton.rest_pose(), &mut out).unwrap();
                    black_box(&out);
                }) / n.max(1) as f64,
            );
        }
        // The same blends on structure-of-arrays poses.
        let soa: Vec<SoaPose> = poses.iter().map(|p| SoaPose::from_transforms(p)).collect();
        let rest = SoaPose::rest(skeleton);
        let mut out = SoaPose::rest(skeleton);
        for (layers, into) in [(2usize, &mut blend2_soa), (3, &mut blend3_soa)] {
            let inputs: Vec<SoaBlendInput> = soa[..layers]
                .iter()
                .map(|p| SoaBlendInput {
                    pose: p,
                    weight: 1.0,
                })
                .collect();
            *into = Some(
                median_ns(rounds, || {
                    blend_soa(black_box(&inputs), &rest, &mut out).unwrap();
                    black_box(&out);
                }) / n.max(1) as f64,
            );
        }
    }
    // One character, and 1024 distinct ones.
    let character = match asset.clips.as_slice() {
        [] => None,
        clips => {
            let pair: [&Clip; 2] = [&clips[0], clips.get(1).unwrap_or(&clips[0])];
            let skin = asset.skins.first();
            let mut one = Character::new(skeleton, pair, skin, 0.0, false);
            let one_ns = median_ns(rounds, || one.update(skeleton, pair, skin));
            let mut crowd: Vec<Character> = (0..1024)
                .map(|i| Character::new(skeleton, pair, skin, i as f32 * 0.013, false))
                .collect();
            let crowd_ns = median_ns(rounds, || {
                for c in crowd.iter_mut() {
                    c.update(skeleton, pair, skin);
                }
            }) / 1024.0;
            drop(crowd);
            let mut one = Character::new(skeleton, pair, skin, 0.0, true);
            let one_soa_ns = median_ns(rounds, || one.update_soa(skeleton, pair, skin));
            let mut crowd: Vec<Character> = (0..1024)
                .map(|i| Character::new(skeleton, pair, skin, i as f32 * 0.013, true))
                .collect();
            let crowd_soa_ns = median_ns(rounds, || {
                for c in crowd.iter_mut() {
                    c.update_soa(skeleton, pair, skin);
                }
            }) / 1024.0;
            let crowd_soa_prefetch_ns = median_ns(rounds, || {
                crowd::for_each_prefetched(&mut crowd, Character::prefetch_soa, |c| {
                    c.update_soa(skeleton, pair, skin)
                })
            }) / 1024.0;
            Some(CharacterRow {
                clips: pair.map(|c| c.name().to_string()),
                one_us: one_ns / 1000.0,
                crowd_1024_us: crowd_ns / 1000.0,
                one_soa_us: one_soa_ns / 1000.0,
                crowd_1024_soa_us: crowd_soa_ns / 1000.0,
                crowd_1024_soa_prefetch_us: crowd_soa_prefetch_ns / 1000.0,
            })
        }
    };
    // The same through the animator.
    let animator = match asset.clips.as_slice() {
        [] => None,
        clips => {
            let pair = [&clips[0], clips.get(1).unwrap_or(&clips[0])];
            let skin = asset.skins.first();
            let mut one = Animated::new(&asset, pair, 0.0, false);
            let one_ns = median_ns(rounds, || one.update(skin));
            let mut crowd: Vec<Animated> = (0..1024)
                .map(|i| Animated::new(&asset, pair, (i as f32 * 0.618).fract(), false))
                .collect();
            let crowd_ns = median_ns(rounds, || {
                for c in crowd.iter_mut() {
                    c.update(skin);
                }
            }) / 1024.0;
            let prefetch_ns = median_ns(rounds, || {
                crowd::for_each_prefetched(&mut crowd, Animated::prefetch, |c| c.update(skin))
            }) / 1024.0;
            let palette_ns = skin.map(|skin| {
                drop(std::mem::take(&mut crowd));
                let mut lean: Vec<Animated> = (0..1024)
                    .map(|i| Animated::new(&asset, pair, (i as f32 * 0.618).fract(), true))
                    .collect();
                median_ns(rounds, || {
                    crowd::for_each_prefetched(&mut lean, Animated::prefetch_palette, |c| {
                        c.update_palette(skin)
                    })
                }) / 1024.0
            });
            Some(AnimatorRow {
                one_us: one_ns / 1000.0,
                crowd_1024_us: crowd_ns / 1000.0,
                crowd_1024_prefetch_us: prefetch_ns / 1000.0,
                crowd_1024_lean_palette_us: palette_ns.map(|ns| ns / 1000.0),
            })
        }
    };
    // Skinning the largest skinned primitive in the pose above.
    let largest = asset
        .meshes
        .iter()
        .flat_map(|m| m.primitives.iter().map(move |p| (p, m.skin)))
        .filter(|(p, s)| p.vertex_count() > 0 && *s < asset.skins.len())
        .max_by_key(|(p, _)| p.vertex_count());
    let skinning = match largest {
        Some((p, s)) => {
            let skin_def = &asset.skins[s];
            let mesh = SkinningMesh::new(p, skin_def.len())?;
            let count = mesh.vertex_count();
            let mut pos = vec![Vec3::ZERO; count];
            let mut nrm = vec![Vec3::ZERO; count];
            let mut per_vertex = |method| -> Result<f64> {
                let mut palette = SkinPalette::new(method);
                palette.update(skin_def, &model)?;
                Ok(median_ns(rounds, || {
                    let out = SkinOutput {
                        positions: &mut pos,
                        normals: Some(&mut nrm),
                        tangents: None,
                    };
                    skin(black_box(&mesh), &palette, out).unwrap();
                }) / count.max(1) as f64)
            };
            Some(SkinningRow {
                vertices: count,
                linear_ns_per_vertex: per_vertex(SkinningMethod::Linear)?,
                dual_quaternion_ns_per_vertex: per_vertex(SkinningMethod::DualQuaternion)?,
            })
        }
        None => None,
    };
    let report = Report {
        source,
        joints: n,
        rounds,
        clips: rows,
        local_to_model_ns_per_joint: l2m,
        palette_ns_per_matrix: palette,
        palette_matrices,
        blend2_ns_per_joint: blend2,
        blend3_ns_per_joint: blend3,
        blend2_soa_ns_per_joint: blend2_soa,
        blend3_soa_ns_per_joint: blend3_soa,
        character,
        animator,
        skinning,
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
    if report.clips.is_empty() {
        outln!(
            out,
            "  (no clips: sampling, blending and the character are not measured)"
        );
    } else {
        outln!(
            out,
            "  {:<28} {:<18} {:>10} {:>9} {:>14} {:>14}",
            "clip",
            "storage",
            "bytes",
            "channels",
            "forward ns/j",
            "seek ns/j"
        );
        for r in &report.clips {
            let over = match r.over_keys {
                Some([f, s]) => format!("  {f:.2}x / {s:.2}x keys"),
                None => String::new(),
            };
            outln!(
                out,
                "  {:<28} {:<18} {:>10} {:>9} {:>14.2} {:>14.2}{over}",
                r.clip,
                r.storage,
                r.bytes,
                r.animated_channels,
                r.forward_ns_per_joint,
                r.seek_ns_per_joint
            );
        }
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
    if let (Some(b2), Some(b3)) = (report.blend2_ns_per_joint, report.blend3_ns_per_joint) {
        outln!(out, "  blend 2 / 3      {b2:>8.2} / {b3:.2} ns/joint");
    }
    if let (Some(b2), Some(b3)) = (
        report.blend2_soa_ns_per_joint,
        report.blend3_soa_ns_per_joint,
    ) {
        outln!(
            out,
            "  blend 2 / 3, SoA {b2:>8.2} / {b3:.2} ns/joint (structure-of-arrays poses)"
        );
    }
    if let Some(c) = &report.character {
        outln!(
            out,
            "  character        {:>8.3} µs one, {:.3} µs each of 1024 ({} + {}: sample both, blend, local-to-model{})",
            c.one_us,
            c.crowd_1024_us,
            c.clips[0],
            c.clips[1],
            if report.palette_matrices > 0 { ", palette" } else { "; no skin, no palette" }
        );
        outln!(
            out,
            "  character, SoA   {:>8.3} µs one, {:.3} µs each of 1024, {:.3} prefetched (the same on structure-of-arrays poses: the stateless calls, no animator)",
            c.one_soa_us,
            c.crowd_1024_soa_us,
            c.crowd_1024_soa_prefetch_us,
        );
    }
    if let Some(a) = &report.animator {
        outln!(
            out,
            "  animator         {:>8.3} µs one, {:.3} µs each of 1024, {:.3} prefetched (the character's clips cross-fading)",
            a.one_us,
            a.crowd_1024_us,
            a.crowd_1024_prefetch_us,
        );
        if let Some(p) = a.crowd_1024_lean_palette_us {
            outln!(
                out,
                "  animator, lean            {p:.3} µs each of 1024 prefetched (`Animator::new_lean`, palettes alone: `skinning_palette`)",
            );
        }
    }
    if report.skinning.is_none() {
        outln!(out, "  skinning         (no skinned mesh)");
    }
    if let Some(k) = &report.skinning {
        outln!(
            out,
            "  skinning         {:>8.2} ns/vertex linear, {:.2} dual quaternion ({} vertices, positions and normals)",
            k.linear_ns_per_vertex,
            k.dual_quaternion_ns_per_vertex,
            k.vertices
        );
    }
    Ok(())
}

//! `skelett render` and `skelett demo`: the animator driving the GPU renderer, offscreen,
//! into an animated GIF or a PNG.
//!
//! ```text
//! Animator (clip commands at times, or a `play` script) --update(dt)--> pose --local_to_model--> model matrices
//!   --> CPU skinning of every primitive (timed, as a cross-check of the GPU path)
//!   --> Renderer::render (GPU skinning, draw, read back) --> GifWriter / PNG
//! ```
//!
//! The demo adds footstep events to the locomotion clips on their contact frames, found
//! from the feet's heights (`skelett::contacts`), and prints every event as it fires.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::{Mat4, Vec3};
use skelett::animator::{Animator, Curve, EventPolicy, PlayOptions};
use skelett::local_to_model;
use skelett::morph::{morph, skin_morphed, Morphed};
use skelett::skin::{SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett_io::Asset;
use skelett_render::{Bounds, Character, GifWriter, Gpu, OrbitCamera, RenderOptions, Renderer};

use crate::outln;

use crate::Result;

/// What one animated shot does.
pub struct Shot<'a> {
    /// What drives the animator.
    pub drive: Drive<'a>,
    /// Seconds rendered.
    pub seconds: f32,
    /// Frames per second.
    pub fps: f32,
    /// Image size and layers.
    pub options: RenderOptions,
    /// Print each event as it fires.
    pub print_events: bool,
    /// Camera yaw and pitch in degrees (yaw 0 looks from +Z, the front of a glTF
    /// character; 90 from +X, its left side); `None`: the framing camera's.
    pub view: Option<(f32, f32)>,
}

/// What drives a shot's animator.
pub enum Drive<'a> {
    /// Timed commands: at `t` seconds, play (no fade) or cross-fade to a clip, in sync
    /// group 1 or on its own.
    Clips(Vec<Command>),
    /// A `skelett play` script (clips, layers, IK modifiers); its IK targets are drawn as
    /// markers and the ground its foot placement stands on as a surface.
    Script(Box<crate::play::ScriptPlayer<'a>>),
}

/// One run of a shot: the animator and how far its commands have gone.
enum Running {
    Clips { anim: Box<Animator>, next: usize },
    Script(crate::play::ScriptState),
}

impl Running {
    fn start(asset: &Asset, shot: &Shot) -> Result<Running> {
        Ok(match &shot.drive {
            Drive::Clips(commands) => {
                if commands.is_empty() {
                    return Err("nothing to play".into());
                }
                let mut anim = Animator::new(asset.skeleton.clone());
                anim.set_event_policy(EventPolicy {
                    min_weight: 0.5,
                    sync_leader_only: false,
                });
                Running::Clips {
                    anim: Box::new(anim),
                    next: 0,
                }
            }
            Drive::Script(player) => Running::Script(player.start()?),
        })
    }

    /// Runs the commands due at `t` seconds.
    fn run_due(&mut self, asset: &Asset, shot: &Shot, t: f32) -> Result<()> {
        match (self, &shot.drive) {
            (Running::Clips { anim, next }, Drive::Clips(commands)) => {
                *next = apply(anim, asset, commands, *next, t)?;
            }
            (Running::Script(state), Drive::Script(player)) => {
                player.run_due(state, t as f64)?;
            }
            _ => return Err("shot and run do not match".into()),
        }
        Ok(())
    }

    /// Advances by `dt` (through the graph when a script plays one).
    fn update(&mut self, dt: f32) -> skelett::animator::UpdateResult<'_> {
        match self {
            Running::Clips { anim, .. } => anim.update(dt),
            Running::Script(state) => state.update(dt),
        }
    }

    fn anim(&mut self) -> &mut Animator {
        match self {
            Running::Clips { anim, .. } => anim,
            Running::Script(state) => state.anim(),
        }
    }
}

/// The scene-space targets of the animator's IK modifiers that are on (weight above 0):
/// two-bone targets orange, aim targets cyan, chain targets magenta.
fn ik_markers(anim: &Animator, root: Mat4) -> Vec<(Vec3, [f32; 4])> {
    use skelett::animator::Modifier;
    (0..anim.modifier_count())
        .filter(|&i| anim.modifier_state(i).is_some_and(|(w, _)| w > 0.0))
        .filter_map(|i| match anim.modifier(i)? {
            Modifier::TwoBone { ik, .. } => Some((ik.target, [1.0, 0.55, 0.1, 1.0])),
            Modifier::Aim { aim, .. } => Some((aim.target, [0.2, 0.9, 1.0, 1.0])),
            Modifier::Chain { reach, .. } => Some((reach.target, [1.0, 0.3, 0.9, 1.0])),
            Modifier::Feet { .. } => None,
        })
        .map(|(p, c)| (root.transform_point3(p), c))
        .collect()
}

/// The ground of the animator's first foot-placement modifier, if any.
fn ik_ground(anim: &Animator) -> Option<skelett::animator::SharedGround> {
    use skelett::animator::Modifier;
    (0..anim.modifier_count()).find_map(|i| match anim.modifier(i)? {
        Modifier::Feet { ground, .. } => Some(ground.clone()),
        _ => None,
    })
}

/// One timed command of a shot.
#[derive(Clone, Copy, Debug)]
pub struct Command {
    /// When, in seconds from the start.
    pub at: f32,
    /// Which clip.
    pub clip: usize,
    /// Cross-fade duration (0: cut).
    pub fade: f32,
    /// Whether it joins sync group 1 (locomotion clips keep their feet in phase).
    pub sync: bool,
}

/// Milliseconds per frame spent in each stage, and what was produced.
#[derive(Default)]
struct Timing {
    frames: usize,
    rendered: usize,
    animation: Duration,
    skinning: Duration,
    rendering: Duration,
    encoding: Duration,
    events: usize,
}

/// The widest and tallest image `render` makes: a 4096x4096 frame is 64 MiB of RGBA, read
/// back from the GPU once a frame (8192 failed to allocate under a 4 GB address-space limit).
const MAX_SIDE: u32 = 4096;

/// Parses `WxH`.
pub fn parse_size(s: &str) -> std::result::Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("size {s:?}: expected WIDTHxHEIGHT, e.g. 640x480"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| (16..=MAX_SIDE).contains(&n))
            .ok_or_else(|| format!("size {s:?}: each side must be 16 to {MAX_SIDE} pixels"))
    };
    Ok((parse(w)?, parse(h)?))
}

/// Runs a shot and writes `out` (`.gif`: every frame; `.png`: the last frame).
fn run_shot(out_text: &mut String, asset: &Asset, shot: &Shot, out: &Path) -> Result<Timing> {
    let ext = out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let gif = match ext.as_deref() {
        Some("gif") => true,
        Some("png") => false,
        _ => return Err(format!("{}: the output must end in .gif or .png", out.display()).into()),
    };
    if !(shot.fps > 0.0 && shot.fps <= 120.0) {
        return Err("--fps must be above 0 and at most 120".into());
    }
    if !(shot.seconds >= 0.0 && shot.seconds <= 600.0) {
        return Err("--seconds must be 0 to 600".into());
    }
    // A GIF holds every frame, at most a byte a pixel before compression: checked against
    // the output limit before anything is rendered.
    let gif_frames = if gif {
        ((f64::from(shot.seconds) * f64::from(shot.fps)).round()).max(1.0)
    } else {
        1.0
    };
    let bound = gif_frames * f64::from(shot.options.width) * f64::from(shot.options.height);
    let max = skelett_io::max_output_bytes();
    if bound > max as f64 {
        return Err(format!(
            "{}: {gif_frames} frames of {}x{} can be up to {bound} bytes, above the output \
             limit of {max} bytes (--max-output-mb raises it; or fewer --seconds, --fps or a \
             smaller --size)",
            out.display(),
            shot.options.width,
            shot.options.height
        )
        .into());
    }
    let gpu = Gpu::new()?;
    let sk = asset.skeleton.clone();
    let root = sk.root_transform();
    let character = Character::new(&asset.skeleton, &asset.skins, &asset.meshes, &asset.images);
    let mut renderer = Renderer::new(&gpu, character, shot.options)?;
    let dt = 1.0 / shot.fps;
    let frames = ((shot.seconds * shot.fps).round() as usize).max(1);

    // Frame the whole shot: a dry run of the animator collects the joints' extent.
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let mut bounds: Option<Bounds> = None;
    let mut ground = None;
    {
        let mut run = Running::start(asset, shot)?;
        for f in 0..frames {
            run.run_due(asset, shot, f as f32 * dt)?;
            run.update(if f == 0 { 0.0 } else { dt });
            let anim = run.anim();
            local_to_model(&sk, anim.pose(), 0, &mut model)?;
            if let Some(b) = renderer.bounds(&model) {
                bounds = Some(bounds.map_or(b, |a| a.union(b)));
            }
            for (p, _) in ik_markers(anim, root) {
                let b = Bounds { min: p, max: p };
                bounds = Some(bounds.map_or(b, |a| a.union(b)));
            }
            if ground.is_none() {
                ground = ik_ground(anim);
            }
        }
    }
    let bounds = bounds.ok_or("nothing to frame: the skeleton has no finite joints")?;
    let aspect = shot.options.width as f32 / shot.options.height as f32;
    let mut camera = OrbitCamera::framing(bounds, aspect);
    if let Some((yaw, pitch)) = shot.view {
        if !(yaw.is_finite() && pitch.is_finite() && pitch.abs() < 89.0) {
            return Err("--yaw must be finite and --pitch between -89 and 89 degrees".into());
        }
        camera.yaw = yaw.to_radians();
        camera.pitch = pitch.to_radians();
    }
    let center = Vec3::new(bounds.center().x, bounds.min.y, bounds.center().z);
    match &ground {
        // The ground the feet stand on, found by casting down from above the shot.
        Some(g) => {
            let top = bounds.max.y + 4.0 * bounds.radius();
            let depth = 8.0 * bounds.radius() + (bounds.max.y - bounds.min.y);
            renderer.set_ground_surface(center, bounds.radius() * 1.5, &|x, z| {
                g.cast(Vec3::new(x, top, z), Vec3::NEG_Y, depth)
                    .map(|hit| hit.point.y)
            });
        }
        None => renderer.set_ground(center, bounds.radius() * 1.5),
    }

    // CPU skinning of every primitive, timed for comparison with the GPU path, which is what
    // draws (the GPU tests check that the two agree).
    // The CPU's share of a frame, timed for the summary: morph then skin every primitive.
    // Per primitive: skin index, mesh, morphed bind pose, skinned positions and normals.
    type CpuPrimitive = (usize, SkinningMesh, Morphed, Vec<Vec3>, Vec<Vec3>);
    let mut cpu: Vec<CpuPrimitive> = Vec::new();
    for m in &asset.meshes {
        let skin = &asset.skins[m.skin];
        for p in &m.primitives {
            let mut sm = SkinningMesh::new(p, skin.len())?;
            if !m.morph_channels.is_empty() {
                sm.bind_morph(&m.morph_channels, &m.morph_full_weights)?;
            }
            let n = sm.vertex_count();
            let morphed = Morphed::new(&sm);
            cpu.push((
                m.skin,
                sm,
                morphed,
                vec![Vec3::ZERO; n],
                vec![Vec3::ZERO; n],
            ));
        }
    }
    let mut palettes = vec![SkinPalette::new(SkinningMethod::Linear); asset.skins.len()];

    let mut writer = if gif {
        Some(GifWriter::create(
            out,
            shot.options.width,
            shot.options.height,
            dt,
        )?)
    } else {
        None
    };
    let mut run = Running::start(asset, shot)?;
    let mut timing = Timing::default();
    let mut last = None;
    for f in 0..frames {
        let t = f as f32 * dt;
        let start = Instant::now();
        run.run_due(asset, shot, t)?;
        let result = run.update(if f == 0 { 0.0 } else { dt });
        let update_time = start.elapsed();
        let fired = result.events.len();
        for e in result.events {
            timing.events += 1;
            if shot.print_events {
                outln!(
                    out_text,
                    "  t = {t:6.3} s  event {:<10} {:<10} in {} at {:.3} s (weight {:.2})",
                    e.name(),
                    e.payload().unwrap_or(""),
                    e.clip.name(),
                    e.time(),
                    e.weight
                );
            }
        }
        if shot.print_events && fired > 0 {
            // As they fire, not when the command ends.
            print!("{out_text}");
            out_text.clear();
            let _ = std::io::Write::flush(&mut std::io::stdout());
        }
        let start = Instant::now();
        let anim = run.anim();
        local_to_model(&sk, anim.pose(), 0, &mut model)?;
        timing.animation += update_time + start.elapsed();

        let start = Instant::now();
        for (skin, sm, morphed, pos, nrm) in &mut cpu {
            palettes[*skin].update(&asset.skins[*skin], &model)?;
            morph(sm, anim.morph_weights(), morphed)?;
            skin_morphed(
                sm,
                &palettes[*skin],
                morphed,
                SkinOutput {
                    positions: pos,
                    normals: sm.normals().is_some().then_some(&mut nrm[..]),
                    tangents: None,
                },
            )?;
        }
        timing.skinning += start.elapsed();

        if gif || f + 1 == frames {
            renderer.set_markers(&ik_markers(anim, root));
            renderer.set_morph_weights(&gpu, anim.morph_weights())?;
            let start = Instant::now();
            let image = renderer.render(&gpu, &model, &camera)?;
            timing.rendering += start.elapsed();
            timing.rendered += 1;
            let start = Instant::now();
            if let Some(w) = writer.as_mut() {
                w.push(&image)?;
            }
            timing.encoding += start.elapsed();
            last = Some(image);
        }
        timing.frames += 1;
    }
    if !gif {
        if let Some(image) = last {
            image.write_png(out)?;
        }
    }
    outln!(
        out_text,
        "wrote {} ({} frame{}, {}x{}, {:.1} s at {} fps) on {}",
        out.display(),
        if gif { frames } else { 1 },
        if gif && frames != 1 { "s" } else { "" },
        shot.options.width,
        shot.options.height,
        shot.seconds,
        shot.fps,
        gpu.describe()
    );
    Ok(timing)
}

/// Runs the commands due at time `t`, from index `next`; returns the next index.
fn apply(
    anim: &mut Animator,
    asset: &Asset,
    commands: &[Command],
    mut next: usize,
    t: f32,
) -> Result<usize> {
    while let Some(c) = commands.get(next) {
        if c.at > t + 1e-6 {
            break;
        }
        let clip = asset.clips[c.clip].clone();
        let opts = PlayOptions {
            sync_group: c.sync.then_some(1),
            ..Default::default()
        };
        if next == 0 || c.fade <= 0.0 {
            anim.play(0, clip, opts)?;
        } else {
            anim.crossfade(0, clip, c.fade, Curve::SmoothStep, opts)?;
        }
        next += 1;
    }
    Ok(next)
}

fn print_timing(out: &mut String, t: &Timing) {
    let per = |d: Duration, n: usize| d.as_secs_f64() * 1e3 / n.max(1) as f64;
    outln!(
        out,
        "per frame: animation {:.3} ms, CPU skinning {:.3} ms, GPU skinning + render + readback {:.2} ms, GIF encoding {:.2} ms ({} frames, {} events)",
        per(t.animation, t.frames),
        per(t.skinning, t.frames),
        per(t.rendering, t.rendered),
        per(t.encoding, t.rendered),
        t.frames,
        t.events
    );
}

/// `skelett render`.
#[allow(clippy::too_many_arguments)]
pub fn render(
    out_text: &mut String,
    file: Option<&Path>,
    script: Option<&Path>,
    graph: Option<&Path>,
    clip: Option<&str>,
    to: Option<&str>,
    crossfade: f32,
    seconds: Option<f32>,
    fps: f32,
    options: RenderOptions,
    view: Option<(f32, f32)>,
    out: &Path,
) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    let find = |name: &str| {
        asset.clip_index(name).ok_or_else(|| {
            let names: Vec<&str> = asset.clips.iter().map(|c| c.name()).collect();
            format!("no clip {name:?}; the file has: {}", names.join(", "))
        })
    };
    if graph.is_some() && script.is_none() {
        return Err("--graph needs a --script that sets its parameters over time".into());
    }
    if let Some(path) = script {
        if clip.is_some() || to.is_some() {
            return Err("--script plays its own clips: leave out --clip and --to".into());
        }
        let player = crate::play::ScriptPlayer::load(&asset, path, graph)?;
        let shot = Shot {
            seconds: seconds.unwrap_or(player.duration().clamp(0.5, 60.0)),
            drive: Drive::Script(Box::new(player)),
            fps,
            options,
            print_events: false,
            view,
        };
        outln!(out_text, "{source} with {}", path.display());
        let timing = run_shot(out_text, &asset, &shot, out)?;
        print_timing(out_text, &timing);
        return Ok(());
    }
    if asset.clips.is_empty() {
        return Err("the file has no clips".into());
    }
    let first = clip.map(find).transpose()?.unwrap_or(0);
    let mut commands = vec![Command {
        at: 0.0,
        clip: first,
        fade: 0.0,
        sync: to.is_some(),
    }];
    let first_len = asset.clips[first].duration();
    let mut seconds_default = first_len;
    if let Some(to) = to {
        let second = find(to)?;
        let at = first_len.max(0.5);
        commands.push(Command {
            at,
            clip: second,
            fade: crossfade.max(0.0),
            sync: true,
        });
        seconds_default = at + crossfade.max(0.0) + asset.clips[second].duration();
    }
    let shot = Shot {
        drive: Drive::Clips(commands),
        seconds: seconds.unwrap_or(seconds_default.clamp(0.5, 20.0)),
        fps,
        options,
        print_events: false,
        view,
    };
    outln!(out_text, "{source}");
    let timing = run_shot(out_text, &asset, &shot, out)?;
    print_timing(out_text, &timing);
    Ok(())
}

/// `skelett demo`: Survey, cross-fade to Walk, then to Run (synchronised), footsteps on the
/// contact frames, into a GIF.
pub fn demo(
    out_text: &mut String,
    file: Option<&Path>,
    out: &Path,
    options: RenderOptions,
    fps: f32,
) -> Result<()> {
    let (mut asset, source) = crate::load(file)?;
    if asset.clips.is_empty() {
        return Err(format!("{source} has no clips to play").into());
    }
    // Fox's clips by name; any other asset: its first three clips (fewer if it has fewer).
    let pick = |name: &str, fallback: usize| {
        asset
            .clips
            .iter()
            .position(|c| c.name() == name)
            .unwrap_or(fallback.min(asset.clips.len() - 1))
    };
    let (idle, walk, run) = (pick("Survey", 0), pick("Walk", 1), pick("Run", 2));
    let mut locomotion = vec![walk, run];
    locomotion.dedup();
    for &i in &locomotion {
        let events = skelett::contacts::footstep_events(&asset.skeleton, &asset.clips[i]);
        asset.clips[i] = Arc::new((*asset.clips[i]).clone().with_events(events)?);
    }
    let (d_idle, d_walk) = (asset.clips[idle].duration(), asset.clips[walk].duration());
    let walk_at = d_idle.clamp(1.0, 3.0);
    let walk_fade = 0.5;
    let run_at = walk_at + walk_fade + (3.0 * d_walk).clamp(1.5, 3.0);
    let run_fade = 0.6;
    let seconds = run_at + run_fade + 2.5;
    outln!(out_text, "skelett demo: {source}");
    outln!(
        out_text,
        "  {:.2} s {:?}, cross-fade {walk_fade} s to {:?} at {walk_at:.2} s, then {run_fade} s to {:?} at {run_at:.2} s (synchronised)",
        walk_at,
        asset.clips[idle].name(),
        asset.clips[walk].name(),
        asset.clips[run].name()
    );
    for &i in &locomotion {
        let c = &asset.clips[i];
        let times: Vec<String> = c
            .events()
            .iter()
            .filter(|e| e.name == "footstep")
            .map(|e| format!("{:.3} {}", e.time, e.payload.as_deref().unwrap_or("")))
            .collect();
        outln!(
            out_text,
            "  footsteps in {:?} (contact frames): {}",
            c.name(),
            times.join(", ")
        );
    }
    let shot = Shot {
        // Survey plays on its own; Walk and Run share a sync group, so Run joins Walk's phase.
        drive: Drive::Clips(vec![
            Command {
                at: 0.0,
                clip: idle,
                fade: 0.0,
                sync: false,
            },
            Command {
                at: walk_at,
                clip: walk,
                fade: walk_fade,
                sync: true,
            },
            Command {
                at: run_at,
                clip: run,
                fade: run_fade,
                sync: true,
            },
        ]),
        seconds,
        fps,
        options,
        print_events: true,
        view: None,
    };
    let timing = run_shot(out_text, &asset, &shot, out)?;
    print_timing(out_text, &timing);
    Ok(())
}

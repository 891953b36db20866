//! Fixed workloads for measuring the runtime where timings are too noisy to compare: run
//! under `valgrind --tool=callgrind` (instructions) or `--tool=cachegrind --cache-sim=yes`
//! (cache lines missed), twice with different counts, and take the difference per item, as
//! `scripts/bench/instructions.sh` does; or time a crowd against one character in one
//! process.
//!
//! ```text
//! cost_probe updates FILE CLIP_A CLIP_B N [blocks|rows|one|palette]
//!     N updates of one character: the animator cross-fading CLIP_A into CLIP_B (a sync
//!     group, a smooth-step fade that lasts the whole run), then local-to-model (from the
//!     pose in blocks, or through `Animator::pose` as rows) and the skinning palette, as
//!     `benches/animator.rs` does; `one` plays CLIP_A alone; `palette` writes the palette
//!     alone (`Animator::skinning_palette`).
//! cost_probe crowd FILE CLIP_A CLIP_B N ROUNDS [CHARACTERS]
//!     The same update, ns per character: one character N times, CHARACTERS (1024) in turn,
//!     and in turn with the next one prefetched (`crowd::for_each_prefetched`); then writing
//!     the palette alone (`Animator::skinning_palette`: one character, and the prefetched
//!     crowd); then a second crowd of lean animators (`Animator::new_lean`), prefetched, with
//!     model matrices and writing palettes alone; then the same two clips through the
//!     stateless calls alone, in the shape of ozz-animation's harness (`sample_soa` into a
//!     cache each, `blend_soa` half and half, `local_to_model_soa`, `skinning_palette`; no
//!     animator): one character, 1024 in turn and prefetched; medians over ROUNDS, each
//!     round running all ten in that order.
//! cost_probe samples FILE CLIP N [keyed|lanes]
//!     N forward samples at 60 Hz of the file's clip CLIP (an index), as keyed, or
//!     compressed (0.01 cm) in the lanes layout.
//! cost_probe compress FILE CLIP N [CM_PER_UNIT] [smallest|fast]
//!     N compressions of clip CLIP (an index) at 0.01 cm, on the calling thread, with the
//!     file's unit taken as CM_PER_UNIT (the tests' 6.822 for the CMU clips, 1.010 for
//!     Boxing_Toes; without it, guessed from the skeleton), at the default level or the
//!     fast one; prints the ratio, the error and the median time.
//! cost_probe skin FILE N [linear|dual] [mixed|four]
//!     N skinnings (positions and unit normals, one thread) of the file's largest
//!     primitive posed at 40 % of its first clip, as `benches/skinning.rs` does; `four`
//!     gives every vertex four influences first, as that bench's `cesium_man_all4`;
//!     prints the median time per vertex.
//! ```
//!
//! `updates` and `crowd` take clip names (the file's; `0` for an unnamed first clip, as
//! CesiumMan's), `samples` and `compress` a clip's index; counts are at least 1, and a mode
//! not in the list is refused. The workload
//! is the same however many items run, so the difference between two counts is the cost of
//! the items alone, without the loading.

use std::hint::black_box;
use std::time::Instant;

use glam::Mat4;
use skelett::animator::{Animator, Curve, PlayOptions};
use skelett::compress::{compress, CompactLayout, CompressLevel, CompressOptions};
use skelett::{
    crowd, local_to_model, sample, sample_uncached, skin, skinning_palette, Pose, SamplingCache,
    Skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod, SoaPose,
};

type Failure = Box<dyn std::error::Error>;

/// A subcommand: its arguments after the name.
type Command = fn(&[String]) -> Result<(), Failure>;

/// A character's animator and the buffers its update writes.
struct Character {
    animator: Animator,
    /// The animator's skeleton, held here so that the rows path needs no clone per update.
    skeleton: std::sync::Arc<skelett::Skeleton>,
    model: Vec<Mat4>,
    palette: Vec<Mat4>,
}

impl Character {
    /// The animator playing `a` cross-fading into `b` (or `a` alone), from `phase` of `a`.
    fn new(
        asset: &skelett_io::Asset,
        a: &str,
        b: Option<&str>,
        phase: f32,
        lean: bool,
    ) -> Result<Self, Failure> {
        let clip = |name: &str| {
            asset
                .clip(name)
                .cloned()
                .ok_or_else(|| format!("no clip {name:?}; the file's clips: {}", clip_names(asset)))
        };
        let mut animator = if lean {
            Animator::new_lean(asset.skeleton.clone())
        } else {
            Animator::new(asset.skeleton.clone())
        };
        let sync = PlayOptions {
            sync_group: Some(0),
            start: phase,
            ..Default::default()
        };
        animator.play(0, clip(a)?, sync)?;
        if let Some(b) = b {
            animator.crossfade(0, clip(b)?, 1.0e6, Curve::SmoothStep, sync)?;
        }
        animator.update(0.5);
        let skin = first_skin(asset)?;
        Ok(Character {
            skeleton: asset.skeleton.clone(),
            animator,
            model: vec![Mat4::IDENTITY; asset.skeleton.len()],
            palette: vec![Mat4::IDENTITY; skin.len()],
        })
    }

    /// One frame: the animator, local-to-model and the palette, as `out` says.
    fn update(&mut self, skin: &Skin, out: Out) {
        self.animator.update(black_box(1.0 / 60.0));
        match out {
            Out::Rows => local_to_model(&self.skeleton, self.animator.pose(), 0, &mut self.model)
                .expect("model matrices sized for the skeleton"),
            Out::Blocks => self
                .animator
                .local_to_model(&mut self.model)
                .expect("model matrices sized for the skeleton"),
            Out::Palette => {
                self.animator
                    .skinning_palette(skin, &mut self.palette)
                    .expect("palette sized for the skin");
                return;
            }
        }
        skinning_palette(skin, &self.model, &mut self.palette).expect("palette sized for the skin");
    }

    /// What the next update reads and writes, on its way into the caches.
    fn prefetch(&self) {
        self.animator.prefetch();
        crowd::prefetch(&self.model);
        crowd::prefetch(&self.palette);
    }

    /// [`Character::prefetch`] for [`Out::Palette`], which writes no model matrices.
    fn prefetch_palette(&self) {
        self.animator.prefetch();
        crowd::prefetch(&self.palette);
    }
}

// The stateless character of `benches/animator.rs` (the calls alone, ozz's harness's shape).
#[path = "../../skelett/benches/support/stateless.rs"]
mod stateless;
use stateless::{Shared, Stateless as Direct};

/// Where an update's local-to-model goes.
#[derive(Clone, Copy, PartialEq)]
enum Out {
    /// `Animator::pose` (rows), then `local_to_model` and `skinning_palette`.
    Rows,
    /// `Animator::local_to_model` (from blocks), then `skinning_palette`.
    Blocks,
    /// `Animator::skinning_palette`: no model matrices of the character's.
    Palette,
}

fn first_skin(asset: &skelett_io::Asset) -> Result<Skin, Failure> {
    Ok(asset.skins.first().cloned().ok_or("the file has no skin")?)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The file's clip names, quoted, for messages.
fn clip_names(asset: &skelett_io::Asset) -> String {
    let names: Vec<String> = asset
        .clips
        .iter()
        .map(|c| format!("{:?}", c.name()))
        .collect();
    names.join(", ")
}

/// Argument `i` as a count of at least 1.
fn count(args: &[String], i: usize, what: &str) -> Result<usize, Failure> {
    match arg(args, i, what)? {
        0 => Err(format!("{what} must be at least 1").into()),
        n => Ok(n),
    }
}

/// Argument `i` as one of `choices` (the first where it is absent).
fn choice<'a>(
    args: &'a [String],
    i: usize,
    what: &str,
    choices: &[&'a str],
) -> Result<&'a str, Failure> {
    match args.get(i).map(String::as_str) {
        None => Ok(choices[0]),
        Some(c) if choices.contains(&c) => Ok(c),
        Some(c) => Err(format!("{what}: {c:?} is not one of {}", choices.join(", ")).into()),
    }
}

/// Clip `i` (an index) of the file.
fn clip_at(asset: &skelett_io::Asset, args: &[String], i: usize) -> Result<skelett::Clip, Failure> {
    let index: usize = arg(args, i, "CLIP (an index)")?;
    Ok((**asset.clips.get(index).ok_or_else(|| {
        format!(
            "no clip {index}: the file has {} ({})",
            asset.clips.len(),
            clip_names(asset)
        )
    })?)
    .clone())
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, Failure> {
    args.get(i)
        .ok_or_else(|| format!("missing {what}"))?
        .parse()
        .map_err(|_| format!("{what}: not a number: {}", args[i]).into())
}

fn updates(args: &[String]) -> Result<(), Failure> {
    let asset = skelett_io::load(&args[0])?;
    let n = count(args, 3, "N")?;
    let mode = choice(args, 4, "mode", &["blocks", "rows", "one", "palette"])?;
    let b = (mode != "one").then_some(args[2].as_str());
    let mut c = Character::new(&asset, &args[1], b, 0.0, false)?;
    let skin = first_skin(&asset)?;
    let out = match mode {
        "rows" => Out::Rows,
        "palette" => Out::Palette,
        _ => Out::Blocks,
    };
    for _ in 0..n {
        c.update(&skin, out);
    }
    black_box(&c.palette);
    Ok(())
}

fn crowd_vs_one(args: &[String]) -> Result<(), Failure> {
    let asset = skelett_io::load(&args[0])?;
    let n = count(args, 3, "N")?;
    let rounds = count(args, 4, "ROUNDS")?;
    let characters = if args.len() > 5 {
        count(args, 5, "CHARACTERS")?
    } else {
        1024
    };
    let skin = first_skin(&asset)?;
    let b = Some(args[2].as_str());
    let mut one = Character::new(&asset, &args[1], b, 0.0, false)?;
    let mut many = (0..characters)
        .map(|i| Character::new(&asset, &args[1], b, (i as f32 * 0.618).fract(), false))
        .collect::<Result<Vec<_>, _>>()?;
    let mut lean = (0..characters)
        .map(|i| Character::new(&asset, &args[1], b, (i as f32 * 0.618).fract(), true))
        .collect::<Result<Vec<_>, _>>()?;
    let clip = |name: &str| asset.clip(name).map(|c| &**c).ok_or("no clip");
    let shared = Shared {
        skeleton: &asset.skeleton,
        rest: SoaPose::rest(&asset.skeleton),
        clips: [clip(&args[1])?, clip(&args[2])?],
        skin: &skin,
    };
    let mut direct_one = Direct::new(&shared, 0.0);
    let mut direct = (0..characters)
        .map(|i| Direct::new(&shared, (i as f32 * 0.618).fract()))
        .collect::<Vec<_>>();
    let passes = n.div_ceil(characters);
    let [mut t_one, mut t_many, mut t_pre, mut t_one_p, mut t_pre_p, mut t_lean, mut t_lean_p]: [Vec<f64>; 7] =
        Default::default();
    let [mut t_d_one, mut t_d_many, mut t_d_pre]: [Vec<f64>; 3] = Default::default();
    let skin = &skin;
    for _ in 0..rounds {
        t_one.push(again(&mut one, skin, Out::Blocks, n));
        t_many.push(in_turn(&mut many, skin, passes, false, Out::Blocks));
        t_pre.push(in_turn(&mut many, skin, passes, true, Out::Blocks));
        t_one_p.push(again(&mut one, skin, Out::Palette, n));
        t_pre_p.push(in_turn(&mut many, skin, passes, true, Out::Palette));
        t_lean.push(in_turn(&mut lean, skin, passes, true, Out::Blocks));
        t_lean_p.push(in_turn(&mut lean, skin, passes, true, Out::Palette));
        let s = Instant::now();
        for _ in 0..n {
            direct_one.update(&shared, black_box(1.0 / 60.0));
        }
        t_d_one.push(s.elapsed().as_nanos() as f64 / n as f64);
        let s = Instant::now();
        for _ in 0..passes {
            direct
                .iter_mut()
                .for_each(|c| c.update(&shared, black_box(1.0 / 60.0)));
        }
        t_d_many.push(s.elapsed().as_nanos() as f64 / (passes * characters) as f64);
        let s = Instant::now();
        for _ in 0..passes {
            crowd::for_each_prefetched(&mut direct, Direct::prefetch, |c| {
                c.update(&shared, black_box(1.0 / 60.0))
            });
        }
        t_d_pre.push(s.elapsed().as_nanos() as f64 / (passes * characters) as f64);
    }
    black_box((&direct_one.palette, &direct[0].palette));
    let (o, m, p) = (median(t_one), median(t_many), median(t_pre));
    let (op, pp) = (median(t_one_p), median(t_pre_p));
    let (l, lp) = (median(t_lean), median(t_lean_p));
    println!(
        "ns per character: one {o:.0}, {characters} in turn {m:.0} ({:.2}x), prefetched {p:.0} ({:.2}x); \
         palette only: one {op:.0}, prefetched {pp:.0} ({:.2}x one, {:.2}x the prefetched crowd)",
        m / o,
        p / o,
        pp / op,
        pp / p
    );
    println!(
        "lean animators (Animator::new_lean), prefetched: {l:.0} ({:.2}x one, {:.2}x the prefetched crowd); \
         palette only {lp:.0} ({:.2}x one, {:.2}x the prefetched crowd)",
        l / o,
        l / p,
        lp / op,
        lp / p
    );
    let (d_one, d_many, d_pre) = (median(t_d_one), median(t_d_many), median(t_d_pre));
    println!(
        "stateless calls (sample_soa, blend_soa, local_to_model_soa, skinning_palette): \
         one {d_one:.0}, {characters} in turn {d_many:.0} ({:.2}x), prefetched {d_pre:.0} ({:.2}x)",
        d_many / d_one,
        d_pre / d_one
    );
    Ok(())
}

/// ns per update of `c` updated `n` times, writing `out`.
fn again(c: &mut Character, skin: &Skin, out: Out, n: usize) -> f64 {
    let s = Instant::now();
    for _ in 0..n {
        c.update(skin, out);
    }
    s.elapsed().as_nanos() as f64 / n as f64
}

/// ns per character of `passes` passes over `crowd` in turn, each update writing `out`;
/// with `prefetch`, the next character's memory prefetched (`crowd::for_each_prefetched`:
/// its animator, and its model matrices where `out` writes them, and its palette).
fn in_turn(crowd: &mut [Character], skin: &Skin, passes: usize, prefetch: bool, out: Out) -> f64 {
    let s = Instant::now();
    for _ in 0..passes {
        match (prefetch, out) {
            (false, _) => crowd.iter_mut().for_each(|c| c.update(skin, out)),
            (true, Out::Palette) => {
                crowd::for_each_prefetched(crowd, Character::prefetch_palette, |c| {
                    c.update(skin, out)
                })
            }
            (true, _) => {
                crowd::for_each_prefetched(crowd, Character::prefetch, |c| c.update(skin, out))
            }
        }
    }
    s.elapsed().as_nanos() as f64 / (passes * crowd.len()) as f64
}

fn samples(args: &[String]) -> Result<(), Failure> {
    let asset = skelett_io::load(&args[0])?;
    let clip = clip_at(&asset, args, 1)?;
    let n = count(args, 2, "N")?;
    let clip = match choice(args, 3, "layout", &["keyed", "lanes"])? {
        "lanes" => {
            let options = CompressOptions {
                error_cm: 0.01,
                ..Default::default()
            };
            let (small, _) = compress(&asset.skeleton, &clip, &options)?;
            small
                .with_compact_layout(CompactLayout::Lanes)
                .ok_or("no lanes layout")?
        }
        _ => clip,
    };
    let mut cache = SamplingCache::for_clip(&clip);
    let mut pose = Pose::rest(&asset.skeleton);
    // Clip time from the clip's start, wrapping at its end.
    let mut t = 0.0f32;
    for _ in 0..n {
        t += 1.0 / 60.0;
        if t > clip.duration() {
            t -= clip.duration();
        }
        sample(&clip, black_box(clip.start() + t), &mut cache, &mut pose)?;
    }
    black_box(&pose);
    Ok(())
}

fn compressions(args: &[String]) -> Result<(), Failure> {
    let asset = skelett_io::load(&args[0])?;
    let clip = clip_at(&asset, args, 1)?;
    let n = count(args, 2, "N")?;
    let cm_per_unit = match args.get(3) {
        Some(_) => Some(arg(args, 3, "CM_PER_UNIT")?),
        None => None,
    };
    let level = match choice(args, 4, "level", &["smallest", "fast"])? {
        "fast" => CompressLevel::Fast,
        _ => CompressLevel::Smallest,
    };
    let options = CompressOptions {
        error_cm: 0.01,
        cm_per_unit,
        level,
        ..Default::default()
    };
    let mut times = Vec::with_capacity(n);
    let mut last = None;
    for _ in 0..n {
        let s = Instant::now();
        let (small, report) = compress(&asset.skeleton, &clip, &options)?;
        times.push(s.elapsed().as_secs_f64() * 1e3);
        black_box(&small);
        last = Some(report);
    }
    if let Some(r) = last {
        println!(
            "{:.2}:1, max {:.5} cm, median {:.1} ms over {n}",
            r.ratio(),
            r.max_error_cm,
            median(times)
        );
    }
    Ok(())
}

fn skinnings(args: &[String]) -> Result<(), Failure> {
    let asset = skelett_io::load(&args[0])?;
    let n = count(args, 1, "N")?;
    let method = match choice(args, 2, "method", &["linear", "dual"])? {
        "dual" => SkinningMethod::DualQuaternion,
        _ => SkinningMethod::Linear,
    };
    let four = choice(args, 3, "influences", &["mixed", "four"])? == "four";
    let clip = asset.clips.first().ok_or("the file has no clip")?;
    let mut pose = Pose::rest(&asset.skeleton);
    sample_uncached(clip, clip.start() + clip.duration() * 0.4, &mut pose)?;
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    local_to_model(&asset.skeleton, &pose, 0, &mut model)?;
    let (primitive, s) = asset
        .meshes
        .iter()
        .flat_map(|m| m.primitives.iter().map(move |p| (p, m.skin)))
        .max_by_key(|(p, _)| p.vertex_count())
        .ok_or("the file has no mesh")?;
    let skin_def = asset.skins.get(s).ok_or("the mesh has no skin")?;
    let mut primitive = primitive.clone();
    if four {
        // Every vertex with four non-zero weights (the heaviest kept, the rest made up).
        for v in 0..primitive.vertex_count() {
            for i in 0..4.min(primitive.influences) {
                let slot = v * primitive.influences + i;
                if primitive.weights[slot] <= 0.0 {
                    primitive.weights[slot] = 0.05;
                    primitive.joints[slot] = ((v + i) % skin_def.len()) as u16;
                }
            }
        }
    }
    let mesh = SkinningMesh::new(&primitive, skin_def.len())?;
    let mut palette = SkinPalette::new(method);
    palette.update(skin_def, &model)?;
    let mut positions = vec![glam::Vec3::ZERO; mesh.vertex_count()];
    let mut normals = vec![glam::Vec3::ZERO; mesh.vertex_count()];
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let s = Instant::now();
        skin(
            black_box(&mesh),
            &palette,
            SkinOutput {
                positions: &mut positions,
                normals: Some(&mut normals),
                tangents: None,
            },
        )?;
        times.push(s.elapsed().as_nanos() as f64);
    }
    black_box((&positions, &normals));
    let vertices = mesh.vertex_count();
    println!(
        "{vertices} vertices: median {:.3} ns per vertex over {n}",
        median(times) / vertices as f64
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match probe(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cost_probe: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn probe(args: &[String]) -> Result<(), Failure> {
    let usage = "usage: cost_probe updates FILE A B N [blocks|rows|one|palette] | \
                 crowd FILE A B N ROUNDS [CHARACTERS] | samples FILE CLIP N [keyed|lanes] | \
                 compress FILE CLIP N [CM_PER_UNIT] [smallest|fast] | \
                 skin FILE N [linear|dual] [mixed|four]";
    let (need, run): (usize, Command) = match args.first().map(String::as_str) {
        Some("updates") => (4, updates),
        Some("crowd") => (5, crowd_vs_one),
        Some("samples") => (3, samples),
        Some("compress") => (3, compressions),
        Some("skin") => (2, skinnings),
        _ => return Err(usage.into()),
    };
    if args.len() < need + 1 {
        return Err(usage.into());
    }
    run(&args[1..])
}

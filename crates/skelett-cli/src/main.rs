//! The `skelett` command: demo, render, inspect, sample, play, convert and benchmark
//! animated characters.
//!
//! Every subcommand that takes a FILE falls back to the embedded default character
//! (`Fox.glb`, see `assets/Fox.LICENSE.md`) when none is given, so the binary needs nothing
//! outside itself. FILE `-` is standard input (`skelett_io::load_with`).

mod batch;
mod bench;
mod compress;
mod convert;
mod inspect;
mod render;
mod retarget;
mod sample;
mod scaling;
mod side_by_side;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
// The library half (`lib.rs`), under the names the subcommands use (`crate::load`, ...).
pub(crate) use skelett_cli::{
    load, load_options, play, set_load_options, term_safe, term_text, Result,
};

const ABOUT: &str = "skelett: load, inspect, sample, compress and benchmark skeletal animation.";
const LONG_ABOUT: &str = "\
skelett loads animated characters (glTF, FBX, BVH, DirectX .x, RAM/RAA, .skl), plays their clips and reports what it
finds. Every command that takes a FILE uses the embedded default character when none is given;
FILE `-` reads standard input, recognising the format from its first bytes.

Examples:
  skelett demo                          the main job: the Fox walks into a run, footsteps
                                        printed, rendered to skelett-demo.gif
  skelett render model.glb --clip Walk --to Run --skeleton --out walk_run.gif
  skelett inspect                       the embedded Fox: joints, clips, meshes
  skelett inspect model.glb --json      the same for your file, as JSON
  curl -s URL/model.glb | skelett inspect -
                                        a file from standard input
  skelett sample model.glb --clip Run --times 0,0.5,1 --json
                                        world matrix of every joint at those times
  skelett play model.glb --script walk_to_run.json
                                        run the animator on a script: events, root motion
  skelett convert capture.bvh capture.glb --scale 0.01
                                        any supported file to glTF (folders too, with --to)
  skelett compress capture.bvh capture.skl --error 0.01cm
                                        clips compressed within 0.01 cm, with ratio and errors
  skelett inspect rig.fbx --to-meters --y-up
                                        FBX in metres and Y-up (global flags: --to-meters,
                                        --y-up for FBX, --right-handed for DirectX .x)
  skelett bench model.glb               sampling and hierarchy speed on your data
  skelett bench --scaling --plot s.svg  cost per joint from 1 to 100,000 characters, 20 to 1,000 joints";
const AFTER_HELP: &str = "\
The embedded default character is the Khronos glTF sample \"Fox\": mesh by PixelMannen (CC0),
rigging and animation by @tomkranis (CC BY 4.0, https://creativecommons.org/licenses/by/4.0/),
glTF conversion by @AsoboStudio and @scurest.";

#[derive(Parser)]
#[command(name = "skelett", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    load: LoadArgs,
}

/// How files are read, for every command (global flags).
#[derive(clap::Args)]
struct LoadArgs {
    /// FBX: convert lengths to metres (default: the file's own unit).
    #[arg(long, global = true)]
    to_meters: bool,
    /// FBX: convert to Y-up, right-handed axes (default: the file's own axes).
    #[arg(long, global = true)]
    y_up: bool,
    /// DirectX .x: read the left-handed file as right-handed (mirror Z), as glTF expects.
    #[arg(long, global = true)]
    right_handed: bool,
    /// DirectX .x: honour AnimationOptions (closed cycles, spline positions) as Direct3D
    /// Retained Mode did; by default they are ignored, as D3DX's loader and assimp do.
    #[arg(long, global = true)]
    x_animation_options: bool,
    /// RAM: read this .raa animation onto the model (repeat for more: a walk and a wave);
    /// default: the .raa of the model's name beside it.
    #[arg(long, global = true, value_name = "FILE")]
    raa: Vec<std::path::PathBuf>,
    /// RAM/RAA: the frame rate of .raa files read without an `fps` line (the article's
    /// layout has none) and of those written (default 30).
    #[arg(long, global = true, value_name = "FPS", value_parser = parse_frame_rate)]
    raa_fps: Option<f32>,
    /// The largest input file read, in MiB (default 2048); larger files are refused before
    /// reading. Only regular files are read (not devices, pipes or folders).
    #[arg(long, global = true, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    max_input_mb: Option<u64>,
    /// The largest file written, in MiB (default 1024); a larger output is refused before it
    /// is written (a .raa before it is sampled).
    #[arg(long, global = true, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    max_output_mb: Option<u64>,
}

impl LoadArgs {
    fn options(&self) -> skelett_io::LoadOptions {
        skelett_io::LoadOptions {
            fbx: skelett_io::fbx::Options {
                to_meters: self.to_meters,
                y_up: self.y_up,
            },
            x: skelett_io::x::Options {
                right_handed: self.right_handed,
                animation_options: self.x_animation_options,
            },
            rite: skelett_io::rite::Options::animations(self.raa.iter().cloned())
                .with_fps(self.raa_fps.unwrap_or(skelett_io::rite::DEFAULT_FPS)),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// The main job: play a character (Survey, cross-fade to Walk, then to Run), print its
    /// footstep events as they fire, and render it (skin and skeleton) to an animated GIF.
    ///
    /// Renders offscreen on the GPU (any Vulkan, Metal or DX12 adapter; without a GPU,
    /// Mesa's software Vulkan, apt: mesa-vulkan-drivers libvulkan1).
    Demo {
        /// The file to play (its first three clips); the embedded Fox when omitted.
        file: Option<PathBuf>,
        /// The GIF to write.
        #[arg(long, default_value = "skelett-demo.gif")]
        out: PathBuf,
        /// Image size, WIDTHxHEIGHT.
        #[arg(long, default_value = "480x360", value_parser = render::parse_size)]
        size: (u32, u32),
        /// Frames per second of the GIF.
        #[arg(long, default_value_t = 15.0, value_parser = parse_positive)]
        fps: f32,
    },
    /// Open the interactive viewer: Open (a file browser, or drop a file on the window),
    /// clips, play/pause/stop, speed (also in frames per second), scrubber, cross-fades,
    /// a second layer with weight and mask, skin/wireframe/skeleton toggles, orbit camera,
    /// event log, frame times. Needs the `viewer` feature.
    View {
        /// The file to view; the embedded Fox when omitted.
        file: Option<PathBuf>,
        /// Close after this many frames (scripted runs, CI).
        #[arg(long, value_name = "FRAMES")]
        exit_after: Option<u32>,
        /// With --exit-after: save a PNG screenshot of the window before closing.
        #[arg(long, value_name = "PNG", requires = "exit_after")]
        screenshot: Option<PathBuf>,
        /// Start with the look-at target on (the head turns toward the cyan cross; drag it).
        #[arg(long)]
        look_at: bool,
        /// Start on a ground sloped by this many degrees (rising toward the character's
        /// front), feet placed on it.
        #[arg(long, value_name = "DEGREES", allow_negative_numbers = true, value_parser = parse_slope)]
        slope: Option<f32>,
        /// Play an animation graph: its parameters become sliders, checkboxes and buttons.
        #[arg(long, value_name = "GRAPH.json", conflicts_with_all = ["look_at", "slope"])]
        graph: Option<PathBuf>,
        /// With --exit-after: open this file halfway through the run, as the Open button's
        /// file browser or dropping the file on the window does, or for a folder show the
        /// file browser on it (scripted runs, CI).
        #[arg(long, value_name = "FILE", requires = "exit_after")]
        then_open: Option<PathBuf>,
    },
    /// Render a clip (optionally cross-fading to another) offscreen to a GIF or PNG.
    Render {
        /// The file to render; the embedded Fox when omitted.
        file: Option<PathBuf>,
        /// A `skelett play` script to render instead of --clip/--to: its clips, layers and
        /// IK commands; IK targets are drawn as crosses, the ground of `feet` as a surface.
        #[arg(long, conflicts_with_all = ["clip", "to"])]
        script: Option<PathBuf>,
        /// An animation graph that plays the clips while --script sets its parameters.
        #[arg(long, requires = "script")]
        graph: Option<PathBuf>,
        /// Clip name or index (default: the first clip).
        #[arg(long)]
        clip: Option<String>,
        /// A clip to cross-fade to when the first one has played once.
        #[arg(long)]
        to: Option<String>,
        /// Cross-fade duration, seconds.
        #[arg(long, default_value_t = 0.5, value_parser = parse_non_negative)]
        crossfade: f32,
        /// Seconds to render (default: the clips' length); a PNG shows the last frame.
        #[arg(long, value_parser = parse_positive)]
        seconds: Option<f32>,
        /// Image size, WIDTHxHEIGHT.
        #[arg(long, default_value = "640x480", value_parser = render::parse_size)]
        size: (u32, u32),
        /// Frames per second (GIF).
        #[arg(long, default_value_t = 20.0, value_parser = parse_positive)]
        fps: f32,
        /// Draw the skeleton overlay (bones and joint axes).
        #[arg(long)]
        skeleton: bool,
        /// Draw the triangle edges.
        #[arg(long)]
        wireframe: bool,
        /// Do not draw the shaded skin (with --skeleton or --wireframe).
        #[arg(long)]
        no_skin: bool,
        /// Camera yaw, degrees: 0 looks from the front (+Z), 90 from the character's left
        /// (+X, the side view that shows a slope); default 35.
        #[arg(long, allow_negative_numbers = true, value_parser = parse_finite)]
        yaw: Option<f32>,
        /// Camera pitch, degrees above the horizon (default 15).
        #[arg(long, allow_negative_numbers = true, value_parser = parse_finite)]
        pitch: Option<f32>,
        /// Output file: .gif (animated) or .png.
        #[arg(long)]
        out: PathBuf,
    },
    /// Put the clips of one file on the character of another: other joint names,
    /// proportions and rest poses (T-pose against A-pose), through a joint map built from
    /// names and body parts (or --map). Writes the target character with the new clips
    /// (which keep their source names) as .glb or .skl, and prints the map it used.
    ///
    /// Example: `skelett retarget 01_01.bvh robot_quaternius.glb robot_01_01.glb`.
    Retarget {
        /// The file whose clips to retarget (a capture, another character).
        source: PathBuf,
        /// The character to put them on.
        target: PathBuf,
        /// The .glb or .skl file to write (not needed with --print-map).
        #[arg(required_unless_present = "print_map")]
        out: Option<PathBuf>,
        /// A joint map (JSON, as --print-map prints it) instead of the automatic one.
        #[arg(long)]
        map: Option<PathBuf>,
        /// A clip to retarget (name or index; repeat for several); all when omitted.
        #[arg(long)]
        clip: Vec<String>,
        /// Source time (seconds, in the first clip) whose pose is the common reference
        /// pose the target is aligned to; the source's rest pose when omitted.
        #[arg(long, value_name = "T", value_parser = parse_finite)]
        reference_frame: Option<f32>,
        /// Print the joint map as JSON (to edit and pass back with --map) and stop.
        #[arg(long)]
        print_map: bool,
        /// Bind the clips by joint name only (the skeletons share names), no retargeting.
        #[arg(long, conflicts_with_all = ["map", "reference_frame", "root_scale", "bone_axis"])]
        by_name: bool,
        /// Factor for the root's translation (default: the ratio of hip heights).
        #[arg(long, value_parser = parse_finite)]
        root_scale: Option<f32>,
        /// The axis the target's bones point along (y for Blender exports), to align joints
        /// with no mapped child, such as one-bone legs.
        #[arg(long, value_parser = retarget::parse_axis, allow_hyphen_values = true)]
        bone_axis: Option<glam::Vec3>,
        /// Bake at this many frames per second instead of the source's key times (1 to
        /// 10000).
        #[arg(long, value_parser = parse_frame_rate)]
        rate: Option<f32>,
        /// Hold the target's feet where they land through the source's foot contacts
        /// (two-bone IK on its legs, hips lowered where a leg cannot reach), so that a
        /// character of other proportions does not slide its planted feet.
        #[arg(long, conflicts_with = "by_name")]
        plant_feet: bool,
        /// Align both skeletons through T-poses built for them (arms out level, legs and
        /// spine straight) instead of the source's rest pose: for a capture whose rest pose
        /// is not a T-pose.
        #[arg(long, conflicts_with_all = ["by_name", "reference_frame"])]
        t_pose: bool,
        /// Also render the first clip, the source (left, with its bones) beside the target
        /// (right), to this .gif (15 fps) or .png (the last frame); each half has a camera
        /// fixed for the shot, so sliding feet show.
        #[arg(long, value_name = "GIF_OR_PNG")]
        render: Option<PathBuf>,
        /// Seconds of the clip to render (default: all of it, at most 10).
        #[arg(long, requires = "render", value_parser = parse_positive)]
        render_seconds: Option<f32>,
        /// Size of each half of the render, WIDTHxHEIGHT.
        #[arg(long, default_value = "400x400", value_parser = render::parse_size, requires = "render")]
        render_size: (u32, u32),
    },
    /// Show a file's joint tree, clips, meshes and import warnings.
    Inspect {
        /// The file to inspect (.glb, .gltf, .fbx, .bvh, .x, .ram + .raa or .skl); the
        /// embedded Fox when omitted.
        file: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the world (scene-space) matrix of every joint of skin 0 at the given times.
    ///
    /// Matrices are column-major, in skin joint order, at clip times in the file's own time
    /// base (a clip may start at 0.0417 s). The JSON has the shape of the reference files in
    /// skelett's test data, so the two can be compared directly.
    Sample {
        /// The file to sample; the embedded Fox when omitted.
        file: Option<PathBuf>,
        /// Clip name or index (default: the first clip).
        #[arg(long)]
        clip: Option<String>,
        /// Comma-separated times in seconds, e.g. `0,0.5,1.25`.
        #[arg(
            long,
            value_delimiter = ',',
            required = true,
            allow_hyphen_values = true,
            value_parser = parse_finite
        )]
        times: Vec<f32>,
        /// Also skin a mesh primitive (morph targets first) and print N of its vertices,
        /// spread evenly (vertex k*(count-1)/(N-1)), as in the skin reference files, with
        /// each target's weight.
        #[arg(long, value_name = "N")]
        vertices: Option<usize>,
        /// With --vertices: which skinned mesh (as `inspect` numbers them).
        #[arg(long, default_value_t = 0, requires = "vertices")]
        mesh: usize,
        /// With --vertices: which primitive of that mesh.
        #[arg(long, default_value_t = 0, requires = "vertices")]
        primitive: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run the animator headless on a timed script and print what it does each step.
    ///
    /// Prints per step the events fired, the root-motion delta and, with --joints, the
    /// joints' world positions (the full matrices in --json). With --graph, the script sets
    /// the graph's parameters over time and each step also prints every layer's state and
    /// the transitions taken. The script and graph formats are in the README; the output is
    /// deterministic, so it can be checked in CI.
    Play {
        /// The file whose clips the script plays; the embedded Fox when omitted.
        file: Option<PathBuf>,
        /// The script (JSON).
        #[arg(long)]
        script: PathBuf,
        /// An animation graph (JSON) that plays the clips; the script's commands then
        /// "set" its parameters.
        #[arg(long)]
        graph: Option<PathBuf>,
        /// Time step, in seconds or as a fraction like 1/60.
        #[arg(long, default_value = "1/60", value_parser = play::parse_dt)]
        dt: f32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also print every joint of skin 0 each step.
        #[arg(long)]
        joints: bool,
    },
    /// Convert a file to another format, or every animation file of a folder (in parallel).
    ///
    /// The output format comes from OUT's extension (for a folder: --to). Reads .glb, .gltf,
    /// .fbx, .bvh, .x, .ram (+ .raa, or the --raa files) and .skl; writes .glb, .skl
    /// (skelett's own fast-loading file) and .ram + .raa (the article's layout, keys at whole
    /// frames of --raa-fps). A folder prints what was converted, skipped and why.
    Convert {
        /// The file or folder to convert.
        input: PathBuf,
        /// The file or folder to write.
        output: PathBuf,
        /// For folders: the format to write (glb, skl or ram).
        #[arg(long)]
        to: Option<String>,
        /// Keep only this clip (name or index).
        #[arg(long)]
        clip: Option<String>,
        /// Multiply every length by this (0.01: centimetres to metres).
        #[arg(long, value_parser = parse_finite)]
        scale: Option<f32>,
        /// Close each clip's cycle: one frame longer (at the clip's frame rate, else 30 fps),
        /// interpolating from its last key back to its first, so it loops without a jump.
        #[arg(long)]
        close_loops: bool,
        /// Writing .ram: skelett's counted layout (`joints N`, `vertices N`, ..., an `fps`
        /// line and key counts) instead of the article's (headings, no counts, no rate).
        #[arg(long)]
        ram_counts: bool,
    },
    /// Compress clips within an error bound and write them as a .skl file (a folder: every
    /// file, in parallel), printing per clip the raw and compressed sizes, the ratio, the
    /// maximum and 99th-percentile error and the time.
    ///
    /// The error is ACL's: the largest distance a virtual vertex SHELL cm from any joint (on
    /// its axes, in model space) moves, measured at every frame, fifteen points between and
    /// the source's own key times. The
    /// raw size is ACL's: 10 f32 per joint per sample. The unit comes from --cm-per-unit, else
    /// from the file (glTF: metres; FBX: its unit), else from the skeleton's height.
    Compress {
        /// The file or folder to compress.
        input: PathBuf,
        /// The .skl file (or folder) to write.
        output: PathBuf,
        /// Largest error allowed, in centimetres (e.g. 0.01 or 0.01cm).
        // (Values with a leading hyphen reach the parser, which says why they are refused.)
        #[arg(long, default_value = "0.01", value_parser = parse_cm, allow_hyphen_values = true)]
        error: f32,
        /// Distance of the virtual vertices from their joint, in centimetres.
        #[arg(long, default_value = "3", value_parser = parse_cm, allow_hyphen_values = true)]
        shell: f32,
        /// Length of one skeleton unit in centimetres (e.g. 6.822 for the CMU captures taken
        /// as 1.75 m tall).
        #[arg(long, value_parser = parse_positive)]
        cm_per_unit: Option<f32>,
        /// Resample every clip at this rate first (samples at i / RATE s), as ACL does (1 to
        /// 10000).
        #[arg(long, value_parser = parse_frame_rate)]
        rate: Option<f32>,
        /// Keep only this clip (name or index).
        #[arg(long)]
        clip: Option<String>,
        /// Lay the keys out for random access (the seekable layout): larger, but a seek reads
        /// two keys per track instead of decoding from its segment's start; the same keys
        /// and errors.
        #[arg(long)]
        seekable: bool,
        /// Lay the keys out for fast playback (the lanes layout): eight tracks side by side
        /// in 16-bit integers, played forward or seeked at about a keyed clip's speed, several
        /// times larger than the streamed layout; the error is measured in this layout.
        #[arg(long, conflicts_with = "seekable")]
        lanes: bool,
        /// Spend less time for a larger clip: no joint-by-joint loosening after the budget
        /// search (three fifths to three quarters of the time on motion capture, 7% larger over the
        /// test data); the same error bound, measured the same way.
        #[arg(long)]
        fast: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Measure the runtime's per-frame steps on a file's skeleton, clips and meshes.
    ///
    /// Reports medians, single thread: per clip, forward playback at 60 Hz through a sampling
    /// cache and random seeks (ns per joint; "channels" is how many tracks the clip animates);
    /// local-to-model (ns per joint); the skinning palette (ns per matrix); blending two and
    /// three poses (ns per joint); one character playing two clips (the first two, or the
    /// only one at two phases: sample both, blend, local-to-model, palette), alone and each
    /// of 1024 in turn (µs); CPU skinning of the largest skinned primitive, positions and
    /// normals, linear and dual quaternion (ns per vertex).
    Bench {
        /// The file to measure; the embedded Fox when omitted.
        file: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Measurement rounds per figure (the median is reported), 1 to 10,000; fewer than 3
        /// are raised to 3.
        #[arg(long, default_value_t = 15,
              value_parser = clap::value_parser!(u32).range(1..=10_000))]
        rounds: u32,
        /// Instead: how the cost per joint grows with the number of characters (1 to
        /// 100,000 of the file's skeleton, one thread and all cores) and with skeleton size
        /// (generated skeletons of 20 to 1,000 joints). Uses up to a few GB for the largest
        /// crowd.
        #[arg(long)]
        scaling: bool,
        /// With --scaling: also draw the figures as an SVG plot to this file.
        #[arg(long, requires = "scaling")]
        plot: Option<PathBuf>,
        /// Also compress each keyed clip (default options, the file's unit) and measure it
        /// in every layout beside its keys, with each form's forward and seek time over the
        /// keyed clip's (the rows are measured one after the other).
        #[arg(long, conflicts_with = "scaling")]
        compress: bool,
    },
}

/// A length in centimetres: a number, optionally followed by "cm".
fn parse_cm(s: &str) -> std::result::Result<f32, String> {
    let v: f32 = s
        .trim()
        .trim_end_matches("cm")
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: a length in centimetres is needed, e.g. 0.01 or 0.01cm"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{s:?}: a positive length is needed"))
    }
}

/// `skelett view`.
#[cfg(feature = "viewer")]
fn view(
    file: Option<&Path>,
    exit_after: Option<u32>,
    screenshot: Option<PathBuf>,
    look_at: bool,
    slope: Option<f32>,
    graph: Option<&Path>,
    then_open: Option<PathBuf>,
) -> Result<()> {
    let (asset, source) = load(file)?;
    // Read (and so check the syntax) before the window opens; the viewer builds it.
    let graph = match graph {
        Some(p) => Some((skelett_io::graph_file::load(p)?, p.to_path_buf())),
        None => None,
    };
    skelett_viewer::run(
        asset,
        skelett_viewer::ViewerOptions {
            title: source,
            exit_after,
            screenshot,
            look_at,
            slope,
            graph,
            load: load_options(),
            then_open,
        },
    )?;
    Ok(())
}

/// `skelett view` in a build without the viewer.
#[cfg(not(feature = "viewer"))]
fn view(
    _file: Option<&Path>,
    _exit_after: Option<u32>,
    _screenshot: Option<PathBuf>,
    _look_at: bool,
    _slope: Option<f32>,
    _graph: Option<&Path>,
    _then_open: Option<PathBuf>,
) -> Result<()> {
    Err(
        "this skelett was built without the viewer; build it with the `viewer` feature: \
         cargo run --release -p skelett-cli --features viewer -- view [FILE]"
            .into(),
    )
}

/// A finite number (NaN, infinities and numbers past f32's range, which read as infinity,
/// are refused by name, not passed on).
fn parse_finite(s: &str) -> std::result::Result<f32, String> {
    s.trim()
        .parse::<f32>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("{s:?}: a finite number (at most 3.4e38 in size) is needed"))
}

/// A sampling or baking rate: 1 to 10000 frames per second (below, a clip flattens to a
/// pose or two; above, baking and measuring run for minutes).
fn parse_frame_rate(s: &str) -> std::result::Result<f32, String> {
    let v = parse_finite(s)?;
    if (1.0..=10_000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{s:?}: a rate of 1 to 10000 frames per second is needed"
        ))
    }
}

/// A finite number, zero or more (a duration).
fn parse_non_negative(s: &str) -> std::result::Result<f32, String> {
    let v = parse_finite(s)?;
    if v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("{s:?}: zero or more is needed"))
    }
}

/// A finite number above zero (a rate or a factor).
fn parse_positive(s: &str) -> std::result::Result<f32, String> {
    let v = parse_finite(s)?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{s:?}: a number above zero is needed"))
    }
}

/// A ground slope for the viewer: -40 to 40 degrees.
fn parse_slope(s: &str) -> std::result::Result<f32, String> {
    s.trim()
        .parse::<f32>()
        .ok()
        .filter(|v| (-40.0..=40.0).contains(v))
        .ok_or_else(|| format!("{s:?}: a slope is -40 to 40 degrees"))
}

/// `writeln!` into the command's output buffer (a `String`, which cannot fail).
#[macro_export]
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    set_load_options(cli.load.options());
    if let Some(mb) = cli.load.max_input_mb {
        skelett_io::set_max_input_bytes(mb << 20);
    }
    if let Some(mb) = cli.load.max_output_mb {
        skelett_io::set_max_output_bytes(mb << 20);
    }
    let mut out = String::new();
    let result = match cli.command {
        Command::Demo {
            file,
            out: path,
            size,
            fps,
        } => render::demo(
            &mut out,
            file.as_deref(),
            &path,
            skelett_render::RenderOptions {
                width: size.0,
                height: size.1,
                skeleton: true,
                ..Default::default()
            },
            fps,
        ),
        Command::View {
            file,
            exit_after,
            screenshot,
            look_at,
            slope,
            graph,
            then_open,
        } => view(
            file.as_deref(),
            exit_after,
            screenshot,
            look_at,
            slope,
            graph.as_deref(),
            then_open,
        ),
        Command::Render {
            file,
            script,
            graph,
            clip,
            to,
            crossfade,
            seconds,
            size,
            fps,
            skeleton,
            wireframe,
            no_skin,
            yaw,
            pitch,
            out: path,
        } => render::render(
            &mut out,
            file.as_deref(),
            script.as_deref(),
            graph.as_deref(),
            clip.as_deref(),
            to.as_deref(),
            crossfade,
            seconds,
            fps,
            skelett_render::RenderOptions {
                width: size.0,
                height: size.1,
                skin: !no_skin,
                wireframe,
                skeleton,
                ..Default::default()
            },
            (yaw.is_some() || pitch.is_some())
                .then(|| (yaw.unwrap_or(35.0), pitch.unwrap_or(15.0))),
            &path,
        ),
        Command::Retarget {
            source,
            target,
            out: path,
            map,
            clip,
            reference_frame,
            print_map,
            by_name,
            root_scale,
            bone_axis,
            rate,
            plant_feet,
            t_pose,
            render,
            render_seconds,
            render_size,
        } => retarget::run(
            &mut out,
            &source,
            &target,
            path.as_deref(),
            &retarget::Options {
                map,
                clips: clip,
                reference_frame,
                print_map,
                by_name,
                root_scale,
                bone_axis,
                rate,
                plant_feet,
                t_pose,
                render,
                render_seconds,
                render_size,
            },
        ),
        Command::Inspect { file, json } => inspect::run(&mut out, file.as_deref(), json),
        Command::Sample {
            file,
            clip,
            times,
            vertices,
            mesh,
            primitive,
            json,
        } => sample::run(
            &mut out,
            file.as_deref(),
            clip.as_deref(),
            &times,
            vertices,
            (mesh, primitive),
            json,
        ),
        Command::Play {
            file,
            script,
            graph,
            dt,
            json,
            joints,
        } => {
            // Streamed: a long run's output is written as it is made, not held.
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            let r = play::run(
                &mut stdout,
                file.as_deref(),
                &script,
                graph.as_deref(),
                dt,
                json,
                joints,
            );
            use std::io::Write as _;
            match stdout.flush() {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe && r.is_ok() => {
                    Err(format!("cannot write the output: {e}").into())
                }
                _ => r,
            }
        }
        Command::Convert {
            input,
            output,
            to,
            clip,
            scale,
            close_loops,
            ram_counts,
        } => convert::run(
            &mut out,
            &input,
            &output,
            to.as_deref(),
            &convert::Options {
                clip,
                scale,
                close_loops,
                load: load_options(),
                ram_counts,
            },
        ),
        Command::Compress {
            input,
            output,
            error,
            shell,
            cm_per_unit,
            rate,
            clip,
            seekable,
            lanes,
            fast,
            json,
        } => compress::run(
            &mut out,
            &input,
            &output,
            &compress::Options {
                error_cm: error,
                shell_cm: shell,
                cm_per_unit,
                rate,
                clip,
                seekable,
                lanes,
                fast,
            },
            json,
        ),
        Command::Bench {
            file,
            json,
            rounds,
            scaling: true,
            plot,
            ..
        } => scaling::run(
            &mut out,
            file.as_deref(),
            json,
            rounds.max(3) as usize,
            plot.as_deref(),
        ),
        Command::Bench {
            file,
            json,
            rounds,
            compress,
            ..
        } => bench::run(
            &mut out,
            file.as_deref(),
            json,
            rounds.max(3) as usize,
            compress,
        ),
    };
    // A closed pipe (`skelett inspect | head`) is not an error worth a panic.
    use std::io::Write as _;
    // Names from files reach the terminal: escape their control characters (escape
    // sequences among them); JSON already escapes them, so JSON output is unchanged.
    let written = std::io::stdout()
        .lock()
        .write_all(term_text(&out).as_bytes());
    if let Err(e) = written {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: cannot write the output: {e}");
            return ExitCode::FAILURE;
        }
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", term_text(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

//! # skelett-io: loading animated characters from files
//!
//! One module per format; each turns a file into an [`Asset`]: a built
//! [`skelett::Skeleton`], its skins and skinned meshes, and clips, with the warnings
//! collected on the way (what was skipped and why — nothing is dropped silently).
//!
//! ```text
//! file bytes ──format module──▶ RawSkeleton, RawClip, meshes ──build──▶ Asset (Arc-shared parts)
//! ```
//!
//! Every format module has the same shape:
//!
//! | | reads | writes |
//! |---|---|---|
//! | from a path | `load(path)`; `load_with(path, &Options)` where the format has choices | `save(&asset, path)` |
//! | from memory | `from_bytes(bytes, name)` (`from_str` for the text pair RAM/RAA); `from_bytes_with(bytes, name, &Options)` | `to_bytes(&asset)` (`to_string` for RAM) |
//!
//! | module | format | options | writer |
//! |---|---|---|---|
//! | [`gltf`] | `.glb`, `.gltf` | folder of external buffers | `.glb` |
//! | [`fbx`] | `.fbx` (binary, ASCII) | metres, Y-up | — |
//! | [`bvh`] | `.bvh` | — | — |
//! | [`x`] | DirectX `.x` (text) | right-handed | — |
//! | [`rite`] | `.ram` + `.raa` | which `.raa` | `.ram` + `.raa` |
//! | [`native`] | `.skl` (skelett's own) | — | `.skl` |
//!
//! [`load`] and [`load_with`] pick the module by extension ([`from_bytes_with`] and the path
//! `-`, standard input, by content). Every reader returns
//! [`Error`] (`#[non_exhaustive]`), whose variants name the file as a `PathBuf` and where in
//! it the problem is.
//!
//! ```no_run
//! use skelett::{sample, local_to_model, Pose, SamplingCache};
//! let asset = skelett_io::load("Fox.glb")?;
//! let run = asset.clip("Run").expect("Fox has a Run clip");
//! let mut pose = Pose::rest(&asset.skeleton);
//! let mut model = vec![glam::Mat4::IDENTITY; asset.skeleton.len()];
//! sample(run, run.start() + 0.5, &mut SamplingCache::for_clip(run), &mut pose)?;
//! local_to_model(&asset.skeleton, &pose, 0, &mut model)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod bvh;
mod error;
pub mod fbx;
pub mod gltf;
pub mod graph_file;
pub mod native;
pub mod retarget_map;
pub mod rite;
pub mod validate;
pub mod x;

use std::path::Path;
use std::sync::Arc;

pub use error::Error;
use skelett::{Clip, Skeleton, Skin, SkinnedMesh};

/// Everything an importer read from one file.
#[derive(Clone, Debug)]
pub struct Asset {
    /// The joint hierarchy all skins and clips refer to.
    pub skeleton: Arc<Skeleton>,
    /// The skins (joint lists with inverse bind matrices), in source order.
    pub skins: Vec<Skin>,
    /// Skinned meshes; each names its skin.
    pub meshes: Vec<SkinnedMesh>,
    /// Clips, in source order.
    pub clips: Vec<Arc<Clip>>,
    /// What was skipped or changed on the way, for the user to read.
    pub warnings: Vec<String>,
    /// Images embedded in the source, by the source's image index (what
    /// [`skelett::MeshPrimitive::base_color_texture`] refers to); `None` where an image was
    /// not embedded (external files are not loaded) or the format has none.
    pub images: Vec<Option<EncodedImage>>,
    /// How long one unit of the source's scene space is, in metres, where the source says
    /// (glTF: 1; FBX: its unit scale); `None` for formats that do not (BVH, .x, RAM).
    /// Model space (below [`skelett::Skeleton::root_transform`]) may scale further.
    pub meters_per_unit: Option<f32>,
}

impl Asset {
    /// Centimetres per unit of model space (the space clips and skeletons are in), where the
    /// source says: [`Asset::meters_per_unit`] times the scale of the root transform.
    pub fn model_cm_per_unit(&self) -> Option<f32> {
        let m = self.skeleton.root_transform();
        let scale = (m.x_axis.truncate().length()
            + m.y_axis.truncate().length()
            + m.z_axis.truncate().length())
            / 3.0;
        self.meters_per_unit
            .map(|u| 100.0 * u * scale)
            .filter(|c| c.is_finite() && *c > 0.0)
    }
}

/// An image file's bytes as the source stored them; a core type (renderers take it without
/// depending on the importers), re-exported here where importers produce it.
pub use skelett::EncodedImage;

impl Asset {
    /// The index of the clip called `name`, or `name` itself if it is a number in range.
    pub fn clip_index(&self, name: &str) -> Option<usize> {
        self.clips
            .iter()
            .position(|c| c.name() == name)
            .or_else(|| name.parse::<usize>().ok().filter(|&i| i < self.clips.len()))
    }

    /// The clip called `name`, or with that index if `name` is a number.
    pub fn clip(&self, name: &str) -> Option<&Arc<Clip>> {
        self.clip_index(name).map(|i| &self.clips[i])
    }

    /// The asset with every length multiplied by `factor` (skeleton, clips' translations,
    /// mesh positions, inverse bind translations): unit conversion, e.g. 0.01 for
    /// centimetres to metres.
    ///
    /// # Errors
    /// A [`validate::Problem`] when a length is no longer finite (a factor so large that it
    /// overflows), naming the first such element.
    pub fn scaled(&self, factor: f32) -> Result<Asset, validate::Problem> {
        let mut a = self.clone();
        // A unit of the scaled model is 1/factor of the old one.
        a.meters_per_unit = self.meters_per_unit.map(|m| m / factor);
        a.skeleton = Arc::new(self.skeleton.scaled(factor));
        a.clips = self
            .clips
            .iter()
            .map(|c| Arc::new(c.scaled(factor)))
            .collect();
        a.skins = self
            .skins
            .iter()
            .map(|s| {
                let ibm = s
                    .inverse_bind()
                    .iter()
                    .map(|m| {
                        let mut m = *m;
                        m.w_axis.x *= factor;
                        m.w_axis.y *= factor;
                        m.w_axis.z *= factor;
                        m
                    })
                    .collect();
                // Same joints and lengths as a valid skin: fails only on overflow.
                Skin::new(s.name(), s.joints().to_vec(), ibm).map_err(|e| validate::Problem {
                    element: format!("skin {}", error::quote(s.name())),
                    problem: format!("scaled by {factor}: {e}"),
                })
            })
            .collect::<Result<_, _>>()?;
        for m in &mut a.meshes {
            for p in &mut m.primitives {
                for v in &mut p.positions {
                    *v *= factor;
                }
            }
        }
        validate::check(&a).map_err(|p| validate::Problem {
            problem: format!("scaled by {factor}: {}", p.problem),
            ..p
        })?;
        Ok(a)
    }

    /// The asset with only the clip at `index`.
    pub fn with_only_clip(&self, index: usize) -> Asset {
        let mut a = self.clone();
        a.clips = self.clips.get(index).cloned().into_iter().collect();
        a
    }

    /// The joints of skin `i` (skeleton indices, in the skin's order), or every joint when the
    /// asset has no skins.
    pub fn skin_joints(&self, i: usize) -> Vec<skelett::JointIndex> {
        match self.skins.get(i) {
            Some(s) => s.joints().to_vec(),
            None => (0..self.skeleton.len() as skelett::JointIndex).collect(),
        }
    }
}

/// Clips bound by joint name onto another skeleton ([`Asset::clips_onto`], [`load_clips_onto`]),
/// with what was left out.
#[derive(Clone, Debug, Default)]
pub struct BoundClips {
    /// The clips, rebuilt for the target skeleton, in source order.
    pub clips: Vec<Arc<Clip>>,
    /// Per clip: what was bound, what the target lacks, what stays at rest.
    pub reports: Vec<skelett::retarget::BindReport>,
}

impl Asset {
    /// This asset's clips bound by joint name onto `skeleton` (another file's, with the same
    /// joint names in any order, some missing or extra): the DirectX and RiTE way of keeping
    /// animations apart from models. Where names or proportions differ, retarget
    /// ([`skelett::retarget`], `skelett retarget`).
    ///
    /// # Errors
    /// [`skelett::Error::NothingBound`] for a clip none of whose joints `skeleton` has.
    pub fn clips_onto(&self, skeleton: &Skeleton) -> Result<BoundClips, skelett::Error> {
        let mut out = BoundClips::default();
        for c in &self.clips {
            let (clip, report) = c.rebind(&self.skeleton, skeleton)?;
            out.clips.push(Arc::new(clip));
            out.reports.push(report);
        }
        Ok(out)
    }
}

/// Loads the clips of any file [`load_with`] reads and binds them by joint name onto
/// `skeleton` (a character loaded from another file).
///
/// ```no_run
/// let character = skelett_io::load("model.ram")?;
/// let moves = skelett_io::load_clips_onto("walk.bvh", &character.skeleton, &Default::default())?;
/// for r in &moves.reports {
///     println!("left out: {:?}", r.unbound);
/// }
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// # Errors
/// The file's load errors; [`Error::Build`] when a clip binds to none of the joints.
pub fn load_clips_onto(
    path: impl AsRef<Path>,
    skeleton: &Skeleton,
    options: &LoadOptions,
) -> Result<BoundClips, Error> {
    let path = path.as_ref();
    let asset = load_with(path, options)?;
    asset.clips_onto(skeleton).map_err(|e| Error::Build {
        file: path.to_path_buf(),
        location: "clips".into(),
        source: Box::new(e),
    })
}

/// Reads a text file (a joint map, a graph, RAM/RAA) as UTF-8.
pub(crate) fn read_text(path: &Path) -> Result<String, Error> {
    let bytes = read_file(path)?;
    String::from_utf8(bytes).map_err(|e| Error::Malformed {
        file: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to() as u64,
        expected: "UTF-8 text".into(),
    })
}

/// A serde_json error as [`Error::Syntax`]: `expected` names what the file should be; the
/// position is said once (serde_json's own ' at line L column C' suffix is dropped).
pub(crate) fn json_syntax(file: &Path, e: &serde_json::Error, expected: &str) -> Error {
    let message = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    Error::Syntax {
        file: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        expected: format!(
            "{expected} ({})",
            message.strip_suffix(&at).unwrap_or(&message)
        ),
    }
}

/// The first number in parsed JSON that a 32-bit float cannot hold (serde reads it as
/// infinity, so a `duration` of 1e300 would read as "inf s"), with its place, such as
/// `commands[2].duration`. The graph reader and the CLI's `play` scripts refuse it by place.
///
/// ```
/// let v: serde_json::Value = serde_json::from_str(r#"{"a": [1, {"b": 1e300}]}"#).unwrap();
/// assert_eq!(skelett_io::json_past_f32(&v), Some(("a[1].b".to_string(), 1e300)));
/// ```
pub fn json_past_f32(value: &serde_json::Value) -> Option<(String, f64)> {
    fn walk(v: &serde_json::Value, at: String) -> Option<(String, f64)> {
        match v {
            serde_json::Value::Number(n) => n
                .as_f64()
                .filter(|x| x.abs() > f64::from(f32::MAX))
                .map(|x| (at, x)),
            serde_json::Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, x)| walk(x, format!("{at}[{i}]"))),
            serde_json::Value::Object(fields) => fields.iter().find_map(|(k, x)| {
                let place = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                walk(x, place)
            }),
            _ => None,
        }
    }
    walk(value, String::new())
}

/// Frame rates [`infer_frame_rate`] tries, lowest first.
pub const COMMON_FRAME_RATES: [f32; 8] = [24.0, 25.0, 30.0, 48.0, 50.0, 60.0, 120.0, 240.0];

/// A rate read from a frame time, snapped to the common rate it rounds from (BVH's
/// `Frame Time: 0.0083333` is 120 fps, not 120.00047: within 1e-4 of it); others, such as
/// NTSC's 29.97, are kept as they are.
pub(crate) fn snap_frame_rate(rate: f32) -> f32 {
    COMMON_FRAME_RATES
        .into_iter()
        .find(|&r| (rate - r).abs() <= r * 1e-4)
        .unwrap_or(rate)
}

/// The frame rate a clip's keys show, for formats that do not store one (glTF, `.x`): the
/// lowest of [`COMMON_FRAME_RATES`] on whose frames (counted from the clip's start) every
/// key time falls, within a hundredth of a frame. `None` for a clip with fewer than two key
/// times, or keys off every such grid.
///
/// ```
/// # use skelett::*;
/// # use glam::Vec3;
/// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build()?;
/// let times: Vec<f32> = (0..10).map(|i| i as f32 / 25.0).collect();
/// let clip = RawClip { name: "c".into(), start: 0.0, duration: 0.36, channels: vec![RawChannel {
///     joint: "root".into(), target: Target::Translation, interpolation: Interpolation::Linear,
///     values: RawValues::Vec3(times.iter().map(|&t| Vec3::X * t).collect()), times }] }
///     .build(&skeleton)?;
/// assert_eq!(skelett_io::infer_frame_rate(&clip), Some(25.0));
/// # Ok::<(), skelett::Error>(())
/// ```
pub fn infer_frame_rate(clip: &skelett::Clip) -> Option<f32> {
    let mut times: Vec<f64> = Vec::new();
    let mut i = 0;
    while let Some(ch) = clip.channel(i) {
        times.extend(ch.times.iter().map(|&t| f64::from(t - clip.start())));
        i += 1;
    }
    for t in clip.morph_tracks() {
        times.extend(t.times.iter().map(|&x| f64::from(x - clip.start())));
    }
    rate_of_times(times)
}

/// The lowest of [`COMMON_FRAME_RATES`] on whose frames every time (seconds from the clip's
/// start) falls; `None` for fewer than two distinct times.
pub(crate) fn rate_of_times(mut times: Vec<f64>) -> Option<f32> {
    times.sort_by(f64::total_cmp);
    times.dedup();
    if times.len() < 2 {
        return None;
    }
    COMMON_FRAME_RATES.into_iter().find(|&r| {
        times.iter().all(|&t| {
            let f = t * f64::from(r);
            (f - f.round()).abs() < 0.01
        })
    })
}

/// The input size limit every reader starts with: 2 GiB (the largest shared capture is
/// 24 MB). [`set_max_input_bytes`] raises or lowers it.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 2 << 30;

static MAX_INPUT_BYTES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_MAX_INPUT_BYTES);

/// Sets the largest file any reader of this crate reads, in bytes, for the whole process (the
/// CLI's `--max-input-mb`). A larger file is refused before anything is read.
pub fn set_max_input_bytes(bytes: u64) {
    MAX_INPUT_BYTES.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The current input size limit ([`set_max_input_bytes`]).
pub fn max_input_bytes() -> u64 {
    MAX_INPUT_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Reads a whole input file, as every reader here does: only a regular file (a link is
/// followed; a device such as `/dev/zero`, a FIFO, which would block, or a folder is refused
/// before it is opened), and no larger than [`max_input_bytes`] (checked before reading, and
/// again while reading, for a file that grows).
///
/// # Errors
/// [`Error::Io`] naming the file: it cannot be read, is not a regular file, or is too large.
pub fn read_input(path: &Path) -> Result<Vec<u8>, Error> {
    let io = |source: std::io::Error| Error::Io {
        file: path.to_path_buf(),
        source,
    };
    let refuse = |kind: std::io::ErrorKind, msg: String| io(std::io::Error::new(kind, msg));
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(refuse(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a folder, device or pipe); skelett reads regular files (an \
             asset may also come from standard input, given as `-`)"
                .into(),
        ));
    }
    if meta.len() > max_input_bytes() {
        return Err(too_big(path, meta.len()));
    }
    let file = std::fs::File::open(path).map_err(io)?;
    read_bounded(file, meta.len(), path)
}

/// Reads `from` to its end, refusing more than [`max_input_bytes`] (read up to one byte past
/// the limit, so nothing larger is ever held).
fn read_bounded(from: impl std::io::Read, hint: u64, name: &Path) -> Result<Vec<u8>, Error> {
    read_at_most(from, hint, name, max_input_bytes())
}

/// [`read_bounded`] with the limit `max` given.
fn read_at_most(
    from: impl std::io::Read,
    hint: u64,
    name: &Path,
    max: u64,
) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let io = |source| Error::Io {
        file: name.to_path_buf(),
        source,
    };
    // Grown by hand, never past the limit plus one byte: `read_to_end` doubles its buffer,
    // so an input just under a 2 GiB limit asked for 4 GiB and ended in "out of memory"
    // rather than the limit's message.
    let bound = usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX);
    // `bytes` is zeroed up to its length once per growth; `filled` counts what was read.
    let (mut bytes, mut filled): (Vec<u8>, usize) = (Vec::new(), 0);
    let mut from = from.take(max.saturating_add(1));
    loop {
        if filled == bytes.len() {
            // The hinted size and a byte to see the end by, then doubling.
            let want = if filled == 0 && hint > 0 {
                (hint.min(max) as usize).saturating_add(1)
            } else {
                filled.max(64 * 1024)
            };
            let grow = want.min(bound.saturating_sub(filled)).max(1);
            bytes.try_reserve_exact(grow).map_err(|_| {
                io(std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!(
                        "out of memory after reading {filled} bytes (the input limit is \
                         {max} bytes; skelett's --max-input-mb lowers it)"
                    ),
                ))
            })?;
            bytes.resize(filled + grow, 0);
        }
        match from.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    bytes.truncate(filled);
    if bytes.len() as u64 > max {
        return Err(too_big(name, bytes.len() as u64));
    }
    Ok(bytes)
}

/// The error for an input of `len` bytes or more, past [`max_input_bytes`].
fn too_big(name: &Path, len: u64) -> Error {
    Error::Io {
        file: name.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{len} bytes or more, above the input limit of {} bytes (skelett's \
                 --max-input-mb raises it)",
                max_input_bytes()
            ),
        ),
    }
}

/// The path that means standard input to [`load`] and [`load_with`]: `-`.
pub const STDIN_PATH: &str = "-";

/// The name errors give standard input.
pub const STDIN_NAME: &str = "(standard input)";

/// Reads standard input to its end, no more than [`max_input_bytes`].
///
/// # Errors
/// [`Error::Io`] naming standard input: it cannot be read or is too large.
pub fn read_stdin() -> Result<Vec<u8>, Error> {
    read_bounded(std::io::stdin().lock(), 0, Path::new(STDIN_NAME))
}

/// A format [`sniff`] recognises from a file's first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Binary glTF (`glTF` magic).
    Glb,
    /// glTF JSON (text that opens a JSON object).
    Gltf,
    /// skelett's own `.skl` ([`native::MAGIC`]).
    Skl,
    /// FBX, binary (`Kaydara FBX Binary`) or ASCII (`; FBX` or an `FBXHeaderExtension`).
    Fbx,
    /// BVH (`HIERARCHY`).
    Bvh,
    /// DirectX `.x` (`xof `).
    X,
}

/// Recognises a format from the first bytes of a file, as [`from_bytes_with`] does for
/// standard input; `None` when none matches (a RAM/RAA pair, which is two files, or
/// something skelett does not read).
///
/// ```
/// use skelett_io::{sniff, Format};
/// assert_eq!(sniff(b"HIERARCHY\nROOT Hips"), Some(Format::Bvh));
/// assert_eq!(sniff(b"xof 0303txt 0032\n"), Some(Format::X));
/// assert_eq!(sniff(b"hello"), None);
/// ```
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    let head = &bytes[..bytes.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if head.starts_with(b"glTF") {
        Some(Format::Glb)
    } else if head.starts_with(native::MAGIC) {
        Some(Format::Skl)
    } else if head.starts_with(b"Kaydara FBX Binary")
        || trimmed.starts_with("; FBX")
        || trimmed.starts_with("FBXHeaderExtension")
    {
        Some(Format::Fbx)
    } else if trimmed.starts_with("HIERARCHY") {
        Some(Format::Bvh)
    } else if head.starts_with(b"xof ") {
        Some(Format::X)
    } else if trimmed.starts_with('{') {
        Some(Format::Gltf)
    } else {
        None
    }
}

/// Loads an asset from memory, choosing the format from its first bytes ([`sniff`]); `name`
/// is what errors call it. A glTF JSON file read this way can only use embedded (`data:`)
/// buffers, and a RAM/RAA pair, being two files, is not recognised.
///
/// # Errors
/// [`Error::Malformed`] at byte 0 when no format matches, otherwise the format's errors.
pub fn from_bytes_with(bytes: &[u8], name: &Path, options: &LoadOptions) -> Result<Asset, Error> {
    match sniff(bytes) {
        Some(Format::Glb | Format::Gltf) => gltf::from_bytes(bytes, name),
        Some(Format::Skl) => native::from_bytes(bytes, name),
        Some(Format::Fbx) => fbx::from_bytes_with(bytes, name, &options.fbx),
        Some(Format::Bvh) => bvh::from_bytes(bytes, name),
        Some(Format::X) => x::from_bytes_with(bytes, name, &options.x),
        None => Err(Error::Malformed {
            file: name.to_path_buf(),
            offset: 0,
            expected: "the start of a format skelett recognises from its content: glTF \
                       (binary, or JSON with embedded buffers), .skl, FBX, BVH or DirectX .x \
                       (a RAM/RAA pair is two files: give the .ram's path)"
                .into(),
        }),
    }
}

/// The output size limit every writer starts with: 1 GiB (the largest file the shared data
/// converts to is a few tens of MB). [`set_max_output_bytes`] raises or lowers it.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1 << 30;

static MAX_OUTPUT_BYTES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_MAX_OUTPUT_BYTES);

/// Sets the largest file any writer of this crate writes, in bytes, for the whole process (the
/// CLI's `--max-output-mb`). A larger output is refused before it is written: `.skl`, `.glb`
/// and `.ram` by their exact size; a `.raa` by an estimate made before it is sampled
/// (keyframe lines times [`rite::RAA_LINE_BYTES`]), which lines of unusually long numbers can
/// exceed.
pub fn set_max_output_bytes(bytes: u64) {
    MAX_OUTPUT_BYTES.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The current output size limit ([`set_max_output_bytes`]).
pub fn max_output_bytes() -> u64 {
    MAX_OUTPUT_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Refuses an output of `bytes` (exact or estimated) past [`max_output_bytes`]; `what` says
/// what makes it that large.
pub(crate) fn check_output_size(path: &Path, bytes: u64, what: &str) -> Result<(), Error> {
    let max = max_output_bytes();
    if bytes > max {
        return Err(Error::Io {
            file: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "not written: {what}, about {bytes} bytes, above the output limit of {max} \
                     bytes (skelett's --max-output-mb raises it)"
                ),
            ),
        });
    }
    Ok(())
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    read_input(path)
}

/// Refuses to write an asset that breaks [`validate`]'s rules (what skelett's readers
/// refuse), naming the element.
pub(crate) fn check_for_writing(asset: &Asset, path: &Path) -> Result<(), Error> {
    validate::check(asset).map_err(|p| Error::Invalid {
        file: path.to_path_buf(),
        location: p.element,
        problem: format!(
            "{} (not written: skelett's readers would refuse it)",
            p.problem
        ),
    })
}

/// Creates (or truncates) an output file, refusing a path that exists and is not a regular
/// file: a FIFO would block until something reads it, a device would take the bytes.
///
/// # Errors
/// The operating system's error, or `InvalidInput` for a path that is not a regular file.
pub fn create_output(path: &Path) -> std::io::Result<std::fs::File> {
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "exists and is not a regular file (a folder, device or pipe); skelett writes \
                 regular files",
            ));
        }
    }
    std::fs::File::create(path)
}

/// Writes a whole file ([`create_output`]); its errors name the file.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write as _;
    create_output(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|source| Error::Io {
            file: path.to_path_buf(),
            source,
        })
}

/// `candidate(*next)` if `taken` lacks it, else the first `candidate(k)` for `k` counting up
/// from `*next + 1` that it lacks; `*next` is left at that `k`, so callers that keep it per
/// stem probe each name once.
pub(crate) fn first_free(
    taken: &std::collections::HashSet<String>,
    next: &mut usize,
    candidate: impl Fn(usize) -> String,
) -> String {
    let mut name = candidate(*next);
    while taken.contains(&name) {
        *next += 1;
        name = candidate(*next);
    }
    name
}

/// Makes joint names unique, as clips bind by name: a repeated name gets `#<tag>` (the
/// joint's index in the source, from `tags`), with a warning.
pub(crate) fn dedupe_names(names: &mut [String], tags: &[usize], warnings: &mut Vec<String>) {
    let mut seen: std::collections::HashSet<String> = names.iter().cloned().collect();
    let mut first = std::collections::HashSet::with_capacity(names.len());
    for (name, &tag) in names.iter_mut().zip(tags) {
        if !first.insert(name.clone()) {
            // `name#tag`, or `name#tag.k` where a file already uses that (never a clash).
            let renamed = first_free(&seen, &mut 0, |k| match k {
                0 => format!("{name}#{tag}"),
                k => format!("{name}#{tag}.{k}"),
            });
            warnings.push(format!(
                "joint name {name:?} is used twice; the one at index {tag} is called {renamed:?}"
            ));
            seen.insert(renamed.clone());
            *name = renamed;
        }
    }
}

/// The most influences a vertex keeps (the runtime's widest layout, 8 per vertex).
pub const MAX_INFLUENCES: usize = 8;

/// Per-vertex influences packed into fixed slots by [`pack_influences`].
pub(crate) struct Packed {
    /// Slots per vertex: 4, or 8 where a vertex has more than 4.
    pub influences: usize,
    /// Palette entries, `influences` per vertex.
    pub joints: Vec<u16>,
    /// Weights, normalised to sum to 1 per vertex (all 0 for a vertex without any).
    pub weights: Vec<f32>,
    /// Vertices that had more than [`MAX_INFLUENCES`] influences, reduced to the heaviest.
    pub reduced: usize,
}

/// The warning for `count` `what` ("vertices", "face corners") of `mesh` reduced to
/// [`MAX_INFLUENCES`] by [`pack_influences`], if any.
pub(crate) fn reduced_warning(mesh: &str, count: usize, what: &str) -> Option<String> {
    (count > 0).then(|| {
        format!(
            "mesh {mesh:?}: {count} {what} had more than {MAX_INFLUENCES} bone weights; the \
             {MAX_INFLUENCES} heaviest were kept and renormalised"
        )
    })
}

/// Packs per-vertex influence lists (palette entry, weight) into 4 or 8 slots per vertex:
/// the heaviest kept, weights normalised to sum to 1, and the vertices that had more than
/// [`MAX_INFLUENCES`] counted so the reader can say so.
pub(crate) fn pack_influences(per_vertex: &mut [Vec<(u16, f32)>]) -> Packed {
    let per = if per_vertex.iter().all(|w| w.len() <= 4) {
        4
    } else {
        MAX_INFLUENCES
    };
    let mut joints = Vec::with_capacity(per_vertex.len() * per);
    let mut weights = Vec::with_capacity(per_vertex.len() * per);
    let mut reduced = 0;
    for inf in per_vertex.iter_mut() {
        inf.sort_by(|a, b| b.1.total_cmp(&a.1));
        if inf.len() > per {
            reduced += 1;
            inf.truncate(per);
        }
        let sum: f32 = inf.iter().map(|x| x.1).sum();
        for k in 0..per {
            let (j, w) = inf.get(k).copied().unwrap_or((0, 0.0));
            joints.push(j);
            weights.push(if sum > 0.0 { w / sum } else { 0.0 });
        }
    }
    Packed {
        influences: per,
        joints,
        weights,
        reduced,
    }
}

impl Asset {
    /// What an importer read from `file`, with no images and no declared unit (set those
    /// after), under [`validate`]'s one rule: repaired where it has a repair (with warnings),
    /// refused where it does not (an [`Error::Invalid`] naming the element).
    pub(crate) fn read(
        file: &Path,
        skeleton: Skeleton,
        skins: Vec<Skin>,
        meshes: Vec<SkinnedMesh>,
        clips: Vec<Arc<Clip>>,
        warnings: Vec<String>,
    ) -> Result<Asset, Error> {
        let mut asset = Asset {
            skeleton: Arc::new(skeleton),
            skins,
            meshes,
            clips,
            warnings,
            images: Vec::new(),
            meters_per_unit: None,
        };
        // The one rule for values every reader passes on (validate's module docs).
        let repaired = validate::repair(&mut asset);
        asset.warnings.extend(repaired);
        validate::check(&asset).map_err(|p| Error::Invalid {
            file: file.to_path_buf(),
            location: p.element,
            problem: p.problem,
        })?;
        Ok(asset)
    }
}

/// An untextured white primitive (the formats without materials): positions, optional
/// normals and UVs, each vertex's influences (packed by [`pack_influences`]), triangles;
/// with the number of vertices that had more than [`MAX_INFLUENCES`] (see
/// [`reduced_warning`]).
pub(crate) fn plain_primitive(
    positions: Vec<glam::Vec3>,
    normals: Option<Vec<glam::Vec3>>,
    uvs: Option<Vec<glam::Vec2>>,
    per_vertex: &mut [Vec<(u16, f32)>],
    indices: Vec<u32>,
) -> (skelett::MeshPrimitive, usize) {
    let packed = pack_influences(per_vertex);
    let primitive = skelett::MeshPrimitive {
        positions,
        normals,
        tangents: None,
        uvs,
        influences: packed.influences,
        joints: packed.joints,
        weights: packed.weights,
        indices,
        base_color_texture: None,
        base_color: glam::Vec4::ONE,
        morph_targets: Vec::new(),
    };
    (primitive, packed.reduced)
}

/// The file extensions [`load`] understands.
pub const KNOWN_EXTENSIONS: &str = ".glb, .gltf, .bvh, .fbx, .skl, .x, .ram (+ .raa)";

/// `true` when [`load`] reads files with this extension.
pub fn is_known_extension(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("glb" | "gltf" | "bvh" | "fbx" | "skl" | "x" | "ram")
    )
}

/// How [`load_with`] reads the formats that have choices; the default keeps every file's own
/// units and axes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadOptions {
    /// FBX: convert to metres and/or Y-up right-handed axes.
    pub fbx: fbx::Options,
    /// DirectX `.x`: read the left-handed file as right-handed; honour AnimationOptions.
    pub x: x::Options,
    /// RAM: the `.raa` animations to read onto the model (default: the one beside it) and
    /// the frame rate of those that give none.
    pub rite: rite::Options,
}

/// Loads an asset, choosing the format from the file's extension, with every file's own
/// units and axes ([`LoadOptions::default`]). The path `-` reads standard input, choosing
/// the format from its first bytes ([`from_bytes_with`]).
///
/// # Errors
/// [`Error::UnknownFormat`] for an unknown extension, otherwise the format's errors.
pub fn load(path: impl AsRef<Path>) -> Result<Asset, Error> {
    load_with(path, &LoadOptions::default())
}

/// Loads an asset, choosing the format from the file's extension, with format options; the
/// path `-` reads standard input ([`from_bytes_with`]).
///
/// ```no_run
/// use skelett_io::{fbx, LoadOptions};
/// let options = LoadOptions { fbx: fbx::Options { to_meters: true, y_up: true }, ..Default::default() };
/// let asset = skelett_io::load_with("mixamo_run.fbx", &options)?;
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// # Errors
/// [`Error::UnknownFormat`] for an unknown extension, otherwise the format's errors.
pub fn load_with(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Asset, Error> {
    let path = path.as_ref();
    if path == Path::new(STDIN_PATH) {
        return from_bytes_with(&read_stdin()?, Path::new(STDIN_NAME), options);
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "glb" | "gltf" => gltf::load(path),
        "bvh" => bvh::load(path),
        "skl" => native::load(path),
        "x" => x::load_with(path, &options.x),
        "fbx" => fbx::load_with(path, &options.fbx),
        // A .ram model with the .raa animations the options name, or the one of the same
        // name beside it, if there is one.
        "ram" => rite::load_with(path, &options.rite),
        _ => Err(Error::UnknownFormat {
            file: path.to_path_buf(),
            known: KNOWN_EXTENSIONS,
        }),
    }
}

/// Writes `asset` by `path`'s extension: `.glb`, `.skl`, or `.ram` with its first clip as
/// the `.raa` beside it (in `ram`'s layout and at its frame rate). Returns what that format
/// cannot hold, one line each (empty when nothing is lost): what `skelett convert` and the
/// Python package's `save` warn about.
///
/// # Errors
/// [`Error::UnknownFormat`] for another extension; otherwise the writer's.
pub fn save_by_extension(
    asset: &Asset,
    path: &Path,
    ram: &rite::WriteOptions,
) -> Result<Vec<String>, Error> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("skl") => native::save(asset, path).map(|()| Vec::new()),
        Some("ram") => rite::save_with(asset, path, ram).map(|()| rite::losses_with(asset, ram)),
        Some("glb") => gltf::save(asset, path).map(|()| {
            asset
                .meshes
                .iter()
                .filter(|m| !m.morph_full_weights.is_empty())
                .map(|m| {
                    format!(
                        "mesh {:?}: in-between shapes baked into per-target weights (glTF has \
                         none; channels named channel@weight)",
                        m.name
                    )
                })
                .collect()
        }),
        _ => Err(Error::UnknownFormat {
            file: path.to_path_buf(),
            known: "glb, skl, ram",
        }),
    }
}

/// The README's Rust examples, compiled as doctests so they stay true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per call, as a pipe does.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn bounded_reads_are_whole_and_stop_past_the_limit() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        for (hint, step) in [(0, 1000), (0, 1 << 20), (300_000, 4096), (10, 77_777)] {
            let read = read_bounded(Trickle { data: &data, step }, hint, Path::new("t")).unwrap();
            assert_eq!(read, data, "hint {hint} step {step}");
        }
        // Past the limit: a reader that never ends stops one byte past it with the
        // limit's message, having grown its buffer to no more than the limit plus one.
        let e = read_at_most(std::io::repeat(1), 0, Path::new("endless"), 5_000_000).unwrap_err();
        assert!(e.to_string().contains("above the input limit"), "{e}");
        let exact = read_at_most(&data[..], 0, Path::new("exact"), data.len() as u64).unwrap();
        assert_eq!(exact.len(), data.len());
    }
}

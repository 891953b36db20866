//! DirectX `.x` import, in all four of its forms: text (`txt `), binary (`bin `, with 32- or
//! 64-bit floats) and MSZIP-compressed text or binary (`tzip`, `bzip`), the files
//! `D3DXLoadMeshHierarchyFromX` loads.
//!
//! ```text
//! xof 0303txt 0032   (or bin / tzip / bzip, 0032 / 0064)
//!    │  text.rs: text tokens       binary.rs: binary tokens      mszip.rs: inflate first
//!    ▼
//! a tree of data objects (numbers, strings, child objects, { references })      ─▶ build()
//! template ... { }                       skipped (the standard templates are known)
//! Frame name { FrameTransformMatrix {16}  Mesh { vertices faces MeshNormals
//!              MeshTextureCoords SkinWeights { bone, indices, weights, offset matrix } }
//!              Frame ... }               ─▶ one joint per Frame; meshes ─▶ skinned meshes
//! AnimTicksPerSecond { 4800 }            ticks per second (4800 when absent)
//! AnimationSet name { Animation { {Frame} AnimationKey { type; n; keys } AnimationOptions } }
//!                                        ─▶ one clip per set, LINEAR keys
//! ```
//!
//! The three front ends give the same tree, so that the same content reads identically in
//! every form (a test encodes every text file of the shared data into the other forms and
//! checks it). Matrices are row-vector in the file (`v' = v·M`); they are transposed to
//! skelett's column-vector convention, and the file's own axes are kept (left-handed data
//! stays as it is unless [`Options::right_handed`] mirrors Z). Key types: 0 rotation (w
//! first), 1 scale, 2 position, 4 matrix (split into the three; a matrix, or a Frame's matrix,
//! that holds shear, which scale, rotation and translation cannot express, is split with a
//! warning saying how far off it is). `AnimationOptions` (closed cycles, spline positions)
//! are reported and, with [`Options::animation_options`], honoured. Animations or skin
//! weights that name frames the file does not have are skipped with a warning naming them.
//!
//! The parsers are hand-written (no crate reads .x; the compressed blocks are raw DEFLATE,
//! inflated by miniz_oxide): one pass over the bytes into a small tree of data objects, then
//! each object's numbers are read in its template's order. The structure is checked, so a
//! damaged file is refused rather than loaded smaller: counts and indices must be whole
//! numbers (read exactly, not as floats), a count must end with `;` (text), every number an
//! object holds must be used by its counts (a deleted or repeated line leaves some over), key
//! value counts must match the key type, and weights must be finite. Every error names the
//! line and column (text) or the byte offset (binary; in the decompressed data for a
//! compressed file), and quotes tokens escaped and cut short.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec2, Vec3};
use skelett::{
    Interpolation, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues, Skin, SkinnedMesh,
    Target, Transform,
};

use crate::error::quote;
use crate::{Asset, Error};

/// Import options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Convert the (left-handed) file to right-handed coordinates by mirroring Z.
    pub right_handed: bool,
    /// Honour each `Animation`'s `AnimationOptions { openclosed; positionquality; }` as
    /// Direct3D Retained Mode did: a closed animation (`openclosed` 0) interpolates from its last key
    /// back to its first over one more frame (as [`skelett::Clip::closed_loop`] does; the
    /// clip grows by that frame; a pose, all of whose keys are at one time, stays as it is),
    /// and spline positions (`positionquality` 0) become a Catmull-Rom spline
    /// through the position keys (cubic Hermite keys with tangents from the neighbouring
    /// keys). Off by default: D3DX's `D3DXLoadMeshHierarchyFromX`, which the skinned-mesh
    /// files target, and assimp ignore these options and play every key linearly; the file
    /// then gets a warning saying what it asked for.
    pub animation_options: bool,
}

/// Loads a `.x` file (text, binary or compressed) with default options.
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes_with`].
pub fn load(path: impl AsRef<Path>) -> Result<Asset, Error> {
    load_with(path, &Options::default())
}

/// Loads a `.x` file (text, binary or compressed).
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes_with`].
pub fn load_with(path: impl AsRef<Path>, options: &Options) -> Result<Asset, Error> {
    let path = path.as_ref();
    let bytes = crate::read_file(path)?;
    from_bytes_with(&bytes, path, options)
}

/// Reads a `.x` file from memory with default options; `name` is used in errors.
///
/// # Errors
/// As [`from_bytes_with`].
pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Asset, Error> {
    from_bytes_with(bytes, name, &Options::default())
}

mod binary;
mod mszip;
mod text;

/// How deep data objects may nest.
const MAX_DEPTH: usize = 128;

/// A number as the file wrote it: its value, whether it was an integer (a literal without a
/// point in text, an integer list in binary: counts and indices must be), the separator after
/// it (text files; a count must end with `;`), and where it is.
#[derive(Clone, Copy, Debug)]
struct Num {
    v: f64,
    int: bool,
    sep: Sep,
    at: Place,
}

/// Where something is in a `.x` file, as its errors name it.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// A line and column (from 1) of text; `inflated` for the text inside a `tzip` file,
    /// whose lines count from the start of the decompressed body.
    Text {
        line: u32,
        column: u32,
        inflated: bool,
    },
    /// A byte offset: in the file, or (`inflated`) in the decompressed token stream of a
    /// `bzip` file.
    Byte { offset: u64, inflated: bool },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Place::Text { line, inflated, .. } => {
                write!(f, "line {line}")?;
                if inflated {
                    write!(f, " of the decompressed text")?;
                }
                Ok(())
            }
            Place::Byte { offset, inflated } => {
                write!(f, "byte {offset}")?;
                if inflated {
                    write!(f, " of the decompressed data")?;
                }
                Ok(())
            }
        }
    }
}

impl Place {
    /// The error for a problem here: [`Error::Syntax`] with a line for text,
    /// [`Error::Malformed`] with the offset for a binary file, and [`Error::Invalid`] naming
    /// the offset in the decompressed data of a compressed one.
    fn error(self, file: &Path, expected: String) -> Error {
        match self {
            Place::Text {
                line,
                column,
                inflated,
            } => Error::Syntax {
                file: file.to_path_buf(),
                line: line as usize,
                column: column as usize,
                expected: if inflated {
                    format!("{expected} (in the decompressed text)")
                } else {
                    expected
                },
            },
            Place::Byte {
                offset,
                inflated: false,
            } => Error::Malformed {
                file: file.to_path_buf(),
                offset,
                expected,
            },
            Place::Byte {
                offset,
                inflated: true,
            } => Error::Invalid {
                file: file.to_path_buf(),
                location: format!("byte {offset} of the decompressed data"),
                problem: format!("expected {expected}"),
            },
        }
    }
}

impl std::fmt::Display for Num {
    /// The number as a message quotes it: a whole number past 2^53, which f64 cannot hold
    /// exactly, is written as "about 1e20" rather than a rounded string of digits.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.int && self.v.abs() >= 9_007_199_254_740_992.0 {
            write!(f, "about {:e}", self.v)
        } else {
            write!(f, "{}", self.v)
        }
    }
}

/// The separator that followed a number in a text file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sep {
    None,
    Semicolon,
    Comma,
}

#[derive(Debug)]
enum Value {
    Num(Num),
    Str(String),
}

#[derive(Debug)]
struct Obj {
    kind: String,
    name: Option<String>,
    values: Vec<Value>,
    children: Vec<Obj>,
    refs: Vec<String>,
    /// Where the object starts.
    at: Place,
}

/// Loads a `.x` file from memory, in any of its four forms; `name` is used in errors.
///
/// # Errors
/// [`Error::Malformed`] for a header that is not `.x`'s or a binary token stream that does not
/// parse (with its byte offset), [`Error::Unsupported`] for a form other than the four, [`Error::Syntax`] with a line for text that does not parse,
/// [`Error::Invalid`] for a compressed file whose blocks do not inflate (or whose decompressed
/// data does not parse: the offset in it is named), and for objects whose counts or values do
/// not fit, [`Error::Build`] when the runtime rejects the result.
pub fn from_bytes_with(bytes: &[u8], name: &Path, options: &Options) -> Result<Asset, Error> {
    let header = |expected: &str| Error::Malformed {
        file: name.to_path_buf(),
        offset: 0,
        expected: format!(
            "the .x header \"xof 0303txt 0032\" (or bin, tzip, bzip; 0032 or 0064): {expected}"
        ),
    };
    if bytes.len() < 16 || &bytes[..4] != b"xof " {
        return Err(header("\"xof \" and 12 more bytes"));
    }
    let double = match &bytes[12..16] {
        b"0032" => false,
        b"0064" => true,
        _ => return Err(header("a float size of \"0032\" or \"0064\" at byte 12")),
    };
    let top = match &bytes[8..12] {
        b"txt " => text::parse(bytes, 16, name, false)?,
        b"bin " => binary::parse(bytes, 16, double, name, false)?,
        b"tzip" => text::parse(&mszip::inflate(bytes, name)?, 0, name, true)?,
        b"bzip" => binary::parse(&mszip::inflate(bytes, name)?, 0, double, name, true)?,
        other => {
            return Err(Error::Unsupported {
                file: name.to_path_buf(),
                what: format!(
                    "{:?} .x files (\"txt \", \"bin \", \"tzip\" and \"bzip\" are read)",
                    String::from_utf8_lossy(other)
                ),
            })
        }
    };
    build(name, &top, *options)
}

/// The numbers of a data object, in order (strings and child objects left out).
fn nums(o: &Obj) -> Vec<Num> {
    o.values
        .iter()
        .filter_map(|v| match v {
            Value::Num(n) => Some(*n),
            Value::Str(_) => None,
        })
        .collect()
}

/// A row-vector .x matrix (16 numbers, row-major) as a column-vector Mat4.
fn x_matrix(m: &[f32]) -> Mat4 {
    // Row-major M with v' = v·M equals column-major storage of Mᵀ: glam reads columns.
    Mat4::from_cols_slice(&m[..16])
}

/// Reads a data object's numbers in the order its template lays them out, checking each
/// against what the template wants there (a count, an index, a float) and, at the end, that
/// nothing is left over: a line deleted or duplicated shifts everything after it, and is
/// caught here instead of loading as a smaller mesh.
struct Cursor<'a> {
    v: &'a [Num],
    i: usize,
    file: &'a Path,
    what: String,
}

impl Cursor<'_> {
    /// An error at number `at` (or the object, past its end).
    fn err_at(&self, at: usize, problem: String) -> Error {
        match self.v.get(at) {
            Some(n) => n.at.error(self.file, format!("{}: {problem}", self.what)),
            None => Error::Invalid {
                file: self.file.to_path_buf(),
                location: self.what.clone(),
                problem,
            },
        }
    }

    fn take(&mut self, n: usize) -> Result<&[Num], Error> {
        if self.v.len() - self.i < n {
            return Err(self.err_at(
                self.v.len(),
                format!("{n} more numbers needed, {} left", self.v.len() - self.i),
            ));
        }
        self.i += n;
        Ok(&self.v[self.i - n..self.i])
    }

    /// `n` numbers as f32 (a value beyond f32's range becomes infinite, which validation
    /// refuses with its element).
    fn floats(&mut self, n: usize) -> Result<Vec<f32>, Error> {
        Ok(self.take(n)?.iter().map(|x| x.v as f32).collect())
    }

    /// A count: an integer literal ended by `;`, of items of `per` numbers that must fit in
    /// what is left.
    fn count(&mut self, per: usize) -> Result<usize, Error> {
        let at = self.i;
        let n = self.take(1)?[0];
        let left = self.v.len() - self.i;
        if !n.int || n.v < 0.0 || n.sep == Sep::Comma {
            return Err(self.err_at(
                at,
                format!(
                    "a count (a whole number followed by ';'), found {}{}",
                    n,
                    if n.sep == Sep::Comma { "," } else { "" }
                ),
            ));
        }
        if n.v > (left / per.max(1)) as f64 {
            return Err(self.err_at(
                at,
                format!(
                    "a count of {} does not fit the data ({left} numbers left)",
                    n
                ),
            ));
        }
        Ok(n.v as usize)
    }

    /// An index below `bound` (an integer literal).
    fn index(&mut self, bound: usize, what: &str) -> Result<usize, Error> {
        let at = self.i;
        let n = self.take(1)?[0];
        if !(n.int && n.v >= 0.0 && n.v < bound as f64) {
            return Err(self.err_at(at, format!("a {what} index below {bound}, found {n}")));
        }
        Ok(n.v as usize)
    }

    /// Every number was read: none left over.
    fn finish(&self) -> Result<(), Error> {
        let left = self.v.len() - self.i;
        if left > 0 {
            return Err(self.err_at(
                self.i,
                format!(
                    "{left} numbers left over after the data the counts describe (a line \
                     missing or repeated?)"
                ),
            ));
        }
        Ok(())
    }
}

fn build(name: &Path, top: &[Obj], options: Options) -> Result<Asset, Error> {
    let mut warnings = Vec::new();
    let mirror = if options.right_handed {
        Mat4::from_scale(Vec3::new(1.0, 1.0, -1.0))
    } else {
        Mat4::IDENTITY
    };
    let conv = |m: Mat4| mirror * m * mirror;
    // Frames, depth first.
    let mut joints: Vec<RawJoint> = Vec::new();
    let mut meshes_src: Vec<(&Obj, Option<usize>)> = Vec::new();
    fn walk<'o>(
        file: &Path,
        o: &'o Obj,
        parent: Option<usize>,
        joints: &mut Vec<RawJoint>,
        meshes: &mut Vec<(&'o Obj, Option<usize>)>,
        conv: &dyn Fn(Mat4) -> Mat4,
        warnings: &mut Vec<String>,
    ) -> Result<(), Error> {
        if o.kind == "Frame" {
            let me = joints.len();
            let name = o.name.clone().unwrap_or_else(|| format!("frame{me}"));
            let mut m = Mat4::IDENTITY;
            if let Some(t) = o.children.iter().find(|c| c.kind == "FrameTransformMatrix") {
                let v = nums(t);
                let mut c = Cursor {
                    v: &v,
                    i: 0,
                    file,
                    what: format!("FrameTransformMatrix of Frame {} ({})", quote(&name), t.at),
                };
                m = conv(x_matrix(&c.floats(16)?));
                c.finish()?;
                let off = shear(&m);
                if off > SHEAR_TOLERANCE {
                    warnings.push(format!(
                        "Frame {}: its matrix holds shear, dropped when split into scale, \
                         rotation and translation (off by up to {off:.1e} of its scale)",
                        quote(&name)
                    ));
                }
            }
            joints.push(RawJoint {
                name,
                parent,
                rest: Transform::from_mat4(&m),
            });
            for c in &o.children {
                walk(file, c, Some(me), joints, meshes, conv, warnings)?;
            }
        } else if o.kind == "Mesh" {
            meshes.push((o, parent));
        }
        Ok(())
    }
    for o in top {
        walk(
            name,
            o,
            None,
            &mut joints,
            &mut meshes_src,
            &conv,
            &mut warnings,
        )?;
    }
    let mut names: Vec<String> = joints.iter().map(|j| j.name.clone()).collect();
    let tags: Vec<usize> = (0..names.len()).collect();
    crate::dedupe_names(&mut names, &tags, &mut warnings);
    for (j, n) in joints.iter_mut().zip(names) {
        j.name = n;
    }
    let skeleton = RawSkeleton {
        joints,
        ..Default::default()
    }
    .build()
    .map_err(|e| Error::build(name.to_path_buf(), "frames", e))?;
    let joint_of: HashMap<&str, u16> = (0..skeleton.len() as u16)
        .map(|j| (skeleton.name(j), j))
        .collect();

    // Meshes with skin weights.
    let mut skins = Vec::new();
    let mut meshes = Vec::new();
    let joint_of_source = skeleton.joint_of_source();
    for (mi, &(m, owner)) in meshes_src.iter().enumerate() {
        let mname = m.name.clone().unwrap_or_else(|| format!("mesh{mi}"));
        let v = nums(m);
        let mut c = Cursor {
            v: &v,
            i: 0,
            file: name,
            what: format!("Mesh {mname} ({})", m.at),
        };
        let nv = c.count(3)?;
        let positions: Vec<Vec3> = c
            .floats(nv * 3)?
            .chunks_exact(3)
            .map(|p| mirror.transform_point3(Vec3::from_slice(p)))
            .collect();
        let nf = c.count(1)?;
        let mut indices = Vec::new();
        let mut degenerate = 0usize;
        for _ in 0..nf {
            let k = c.count(1)?;
            let mut f = Vec::with_capacity(k);
            for _ in 0..k {
                f.push(c.index(nv, "vertex")? as u32);
            }
            if k < 3 {
                degenerate += 1;
            }
            for t in 1..k.saturating_sub(1) {
                indices.extend([f[0], f[t], f[t + 1]]);
            }
        }
        c.finish()?;
        if degenerate > 0 {
            warnings.push(format!(
                "Mesh {mname}: {degenerate} faces with fewer than 3 corners skipped"
            ));
        }
        if options.right_handed {
            for t in indices.chunks_exact_mut(3) {
                t.swap(1, 2);
            }
        }
        let mut normals = None;
        let mut uvs = None;
        let mut influences: Vec<Vec<(u16, f32)>> = vec![Vec::new(); nv];
        let mut skin_joints: Vec<u16> = Vec::new();
        let mut ibm = Vec::new();
        let mut missing = Vec::new();
        for ch in &m.children {
            let v = nums(ch);
            let mut c = Cursor {
                v: &v,
                i: 0,
                file: name,
                what: format!("{} in Mesh {mname} ({})", quote(&ch.kind), ch.at),
            };
            match ch.kind.as_str() {
                "MeshNormals" => {
                    let n = c.count(3)?;
                    let read: Vec<Vec3> = c
                        .floats(n * 3)?
                        .chunks_exact(3)
                        .map(|p| mirror.transform_vector3(Vec3::from_slice(p)))
                        .collect();
                    // Which normal each face corner uses: read to check the object whole.
                    let faces = c.count(1)?;
                    for _ in 0..faces {
                        let k = c.count(1)?;
                        for _ in 0..k {
                            c.index(n, "normal")?;
                        }
                    }
                    c.finish()?;
                    if n == nv {
                        normals = Some(read);
                    } else {
                        warnings.push(format!(
                            "Mesh {mname}: {n} normals for {nv} vertices (per-corner normals) \
                             not imported"
                        ));
                    }
                }
                "MeshTextureCoords" => {
                    let n = c.count(2)?;
                    let read: Vec<Vec2> = c
                        .floats(n * 2)?
                        .chunks_exact(2)
                        .map(Vec2::from_slice)
                        .collect();
                    c.finish()?;
                    if n == nv {
                        uvs = Some(read);
                    } else {
                        warnings.push(format!(
                            "Mesh {mname}: {n} texture coordinates for {nv} vertices not imported"
                        ));
                    }
                }
                "SkinWeights" => {
                    let bone = ch
                        .values
                        .iter()
                        .find_map(|v| {
                            if let Value::Str(s) = v {
                                Some(s.clone())
                            } else {
                                None
                            }
                        })
                        .unwrap_or_default();
                    let n = c.count(2)?;
                    let idx = (0..n)
                        .map(|_| c.index(nv, "vertex"))
                        .collect::<Result<Vec<_>, _>>()?;
                    let first_weight = c.i;
                    let w = c.floats(n)?;
                    let offset = c.floats(16)?;
                    c.finish()?;
                    if let Some(k) = w.iter().position(|w| !w.is_finite()) {
                        return Err(c.err_at(
                            first_weight + k,
                            format!("weight {} of bone {} is not finite", w[k], quote(&bone)),
                        ));
                    }
                    let Some(&j) = joint_of.get(bone.as_str()) else {
                        missing.push(bone);
                        continue;
                    };
                    let Ok(slot) = u16::try_from(skin_joints.len()) else {
                        return Err(c.err_at(0, "at most 65,536 SkinWeights per mesh".into()));
                    };
                    skin_joints.push(j);
                    ibm.push(conv(x_matrix(&offset)));
                    for (&i, &w) in idx.iter().zip(&w) {
                        if w > 0.0 {
                            influences[i].push((slot, w));
                        }
                    }
                }
                _ => {}
            }
        }
        if !missing.is_empty() {
            warnings.push(format!(
                "Mesh {mname}: skin weights for frames the file does not have skipped: {}",
                missing.join(", ")
            ));
        }
        // Vertices no bone weights move follow the frame that holds the mesh, as DirectX
        // draws them.
        let unweighted = influences.iter().filter(|i| i.is_empty()).count();
        if unweighted > 0 {
            if let Some(owner) = owner.map(|o| joint_of_source[o]) {
                let slot = skin_joints.len() as u16;
                skin_joints.push(owner);
                let bind = skelett::inverse_bind_matrices(&skeleton, &[owner])
                    .map_err(|e| Error::build(name.to_path_buf(), format!("Mesh {mname}"), e))?;
                ibm.push(bind[0]);
                for inf in influences.iter_mut().filter(|i| i.is_empty()) {
                    inf.push((slot, 1.0));
                }
                if skin_joints.len() > 1 {
                    warnings.push(format!(
                        "Mesh {mname}: {unweighted} vertices without bone weights follow its frame"
                    ));
                }
            }
        }
        if skin_joints.is_empty() {
            warnings.push(format!(
                "Mesh {mname} has no skin weights and no frame; skipped"
            ));
            continue;
        }
        let skin = Skin::new(format!("{mname} skin"), skin_joints, ibm)
            .map_err(|e| Error::build(name.to_path_buf(), format!("Mesh {mname}"), e))?;
        let (primitive, reduced) =
            crate::plain_primitive(positions, normals, uvs, &mut influences, indices);
        warnings.extend(crate::reduced_warning(&mname, reduced, "vertices"));
        let mesh = SkinnedMesh {
            name: mname.clone(),
            skin: skins.len(),
            primitives: vec![primitive],
            morph_channels: Vec::new(),
            morph_full_weights: Vec::new(),
        };
        mesh.validate(&skin)
            .map_err(|e| Error::build(name.to_path_buf(), format!("Mesh {mname}"), e))?;
        skins.push(skin);
        meshes.push(mesh);
    }

    // Animations.
    let mut ticks = 4800.0f64;
    let mut clips = Vec::new();
    // Ticks first: the file may give them after the animations.
    for o in top.iter().filter(|o| o.kind == "AnimTicksPerSecond") {
        let v = nums(o);
        let mut c = Cursor {
            v: &v,
            i: 0,
            file: name,
            what: format!("AnimTicksPerSecond ({})", o.at),
        };
        let t = c.take(1)?[0];
        c.finish()?;
        if !(t.int && t.v > 0.0 && t.v <= f64::from(u32::MAX)) {
            return Err(c.err_at(
                0,
                format!("a positive whole number of ticks per second, found {}", t.v),
            ));
        }
        ticks = t.v;
    }
    for o in top.iter().filter(|o| o.kind == "AnimationSet") {
        let cname = o
            .name
            .clone()
            .unwrap_or_else(|| format!("animation{}", clips.len()));
        let mut raw = RawClip {
            name: cname.clone(),
            ..Default::default()
        };
        let mut missing = Vec::new();
        // Per animation that has AnimationOptions: its channels (a range of raw.channels),
        // closed, spline positions.
        let mut asked: Vec<(std::ops::Range<usize>, bool, bool)> = Vec::new();
        for a in o.children.iter().filter(|a| a.kind == "Animation") {
            let target = a.refs.first().cloned().or_else(|| {
                a.children
                    .iter()
                    .find(|c| c.kind == "Frame")
                    .and_then(|c| c.name.clone())
            });
            let Some(target) = target else { continue };
            if !joint_of.contains_key(target.as_str()) {
                missing.push(target);
                continue;
            }
            let first_channel = raw.channels.len();
            let mut flags = None;
            for opt in a.children.iter().filter(|k| k.kind == "AnimationOptions") {
                let v = nums(opt);
                let mut c = Cursor {
                    v: &v,
                    i: 0,
                    file: name,
                    what: format!("AnimationOptions of {} ({})", quote(&target), opt.at),
                };
                let mut flag = |what: &str| -> Result<bool, Error> {
                    let at = c.i;
                    let n = c.take(1)?[0];
                    if !(n.int && (n.v == 0.0 || n.v == 1.0)) {
                        return Err(c.err_at(at, format!("{what}: 0 or 1, found {n}")));
                    }
                    Ok(n.v == 1.0)
                };
                // Microsoft's documentation: openclosed 0 closed, 1 open; positionquality 0
                // spline, 1 linear.
                let open = flag("openclosed")?;
                let linear = flag("positionquality")?;
                c.finish()?;
                flags = Some((!open, !linear));
            }
            for k in a.children.iter().filter(|k| k.kind == "AnimationKey") {
                let v = nums(k);
                let mut c = Cursor {
                    v: &v,
                    i: 0,
                    file: name,
                    what: format!("AnimationKey in {} ({})", quote(&cname), k.at),
                };
                let kind_at = c.i;
                let kind = c.take(1)?[0];
                let need = match (kind.int, kind.v as i64) {
                    (true, 0) => 4,
                    (true, 1 | 2) => 3,
                    (true, 4) => 16,
                    _ => {
                        return Err(c.err_at(
                            kind_at,
                            format!(
                                "a key type (0 rotation, 1 scale, 2 position, 4 matrix), found {}",
                                kind.v
                            ),
                        ))
                    }
                };
                let kind = kind.v as i64;
                let n = c.count(2)?;
                let mut times = Vec::with_capacity(n);
                let mut vals: Vec<Vec<f32>> = Vec::with_capacity(n);
                for _ in 0..n {
                    let t = (c.take(1)?[0].v / ticks) as f32;
                    let at = c.i;
                    let nvals = c.count(1)?;
                    if nvals != need {
                        return Err(c.err_at(
                            at,
                            format!("{need} values per key of type {kind}, found {nvals}"),
                        ));
                    }
                    let x = c.floats(nvals)?;
                    // Repeated times: the later key wins.
                    if times.last().is_some_and(|&l: &f32| t <= l) {
                        times.pop();
                        vals.pop();
                    }
                    times.push(t);
                    vals.push(x);
                }
                c.finish()?;
                let make = |tgt: Target, values: RawValues| RawChannel {
                    joint: target.clone(),
                    target: tgt,
                    interpolation: Interpolation::Linear,
                    times: times.clone(),
                    values,
                };
                match kind {
                    0 => {
                        let q = vals
                            .iter()
                            .map(|x| {
                                conv_quat(
                                    Quat::from_xyzw(-x[1], -x[2], -x[3], x[0]),
                                    options.right_handed,
                                )
                            })
                            .collect();
                        raw.channels
                            .push(make(Target::Rotation, RawValues::Quat(q)));
                    }
                    1 => raw.channels.push(make(
                        Target::Scale,
                        RawValues::Vec3(vals.iter().map(|x| Vec3::from_slice(x)).collect()),
                    )),
                    2 => raw.channels.push(make(
                        Target::Translation,
                        RawValues::Vec3(
                            vals.iter()
                                .map(|x| mirror.transform_point3(Vec3::from_slice(x)))
                                .collect(),
                        ),
                    )),
                    _ => {
                        let mut sheared = 0usize;
                        let mut worst = 0.0f32;
                        let tr: Vec<Transform> = vals
                            .iter()
                            .map(|x| {
                                let m = conv(x_matrix(x));
                                let off = shear(&m);
                                if off > SHEAR_TOLERANCE {
                                    sheared += 1;
                                    worst = worst.max(off);
                                }
                                Transform::from_mat4(&m)
                            })
                            .collect();
                        if sheared > 0 {
                            warnings.push(format!(
                                "AnimationSet {cname}: {sheared} of the {} matrix keys of {} \
                                 hold shear, dropped when split into scale, rotation and \
                                 translation (off by up to {worst:.1e} of their scale)",
                                tr.len(),
                                quote(&target)
                            ));
                        }
                        raw.channels.push(make(
                            Target::Translation,
                            RawValues::Vec3(tr.iter().map(|t| t.translation).collect()),
                        ));
                        raw.channels.push(make(
                            Target::Rotation,
                            RawValues::Quat(tr.iter().map(|t| t.rotation).collect()),
                        ));
                        raw.channels.push(make(
                            Target::Scale,
                            RawValues::Vec3(tr.iter().map(|t| t.scale).collect()),
                        ));
                    }
                }
            }
            if let Some((closed, spline)) = flags {
                asked.push((first_channel..raw.channels.len(), closed, spline));
            }
        }
        if !missing.is_empty() {
            warnings.push(format!(
                "AnimationSet {cname}: animations of frames the file does not have skipped: {}",
                missing.join(", ")
            ));
        }
        animation_options(&mut raw, &asked, options.animation_options, &mut warnings);
        raw.fit_range_to_keys();
        let clip = raw
            .build(&skeleton)
            .map_err(|e| Error::build(name.to_path_buf(), format!("AnimationSet {cname}"), e))?;
        let rate = crate::infer_frame_rate(&clip);
        clips.push(Arc::new(clip.with_frame_rate(rate)));
    }
    Asset::read(name, skeleton, skins, meshes, clips, warnings)
}

/// How far a matrix is from the scale, rotation and translation it splits into, relative to
/// its scale: 0 without shear.
fn shear(m: &Mat4) -> f32 {
    let back = Transform::from_mat4(m).to_mat4();
    let scale = m
        .x_axis
        .truncate()
        .length()
        .max(m.y_axis.truncate().length())
        .max(m.z_axis.truncate().length());
    let mut off = 0.0f32;
    for c in 0..3 {
        off = off.max((m.col(c) - back.col(c)).truncate().abs().max_element());
    }
    off / scale.max(f32::MIN_POSITIVE)
}

/// A matrix whose split differs by more than this (relative to its scale) holds shear.
const SHEAR_TOLERANCE: f32 = 1e-4;

/// Applies (or, when not `honour`ed, reports) the `AnimationOptions` of a set's animations:
/// `asked` holds each animation's channels with whether it is closed and whether its
/// positions are splines.
fn animation_options(
    raw: &mut RawClip,
    asked: &[(std::ops::Range<usize>, bool, bool)],
    honour: bool,
    warnings: &mut Vec<String>,
) {
    let closed = asked.iter().filter(|a| a.1).count();
    let spline = asked.iter().filter(|a| a.2).count();
    if closed + spline == 0 {
        return;
    }
    if !honour {
        let mut asks = Vec::new();
        if closed > 0 {
            asks.push(format!("{closed} closed cycles"));
        }
        if spline > 0 {
            asks.push(format!("{spline} animations with spline positions"));
        }
        warnings.push(format!(
            "AnimationSet {}: AnimationOptions ask for {}; played open and linear, as D3DX and \
             assimp play them (x::Options::animation_options, --x-animation-options, honours \
             them)",
            raw.name,
            asks.join(" and ")
        ));
        return;
    }
    // Where the clip ends, and one frame more: the interval closing a cycle.
    let mut all: Vec<f64> = Vec::new();
    let start = raw
        .channels
        .iter()
        .filter_map(|c| c.times.first())
        .fold(f32::INFINITY, |a, &b| a.min(b));
    for c in &raw.channels {
        all.extend(c.times.iter().map(|&t| f64::from(t - start)));
    }
    let end = raw
        .channels
        .iter()
        .filter_map(|c| c.times.last())
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let interval = crate::rate_of_times(all).map_or(skelett::DEFAULT_CLOSING_INTERVAL, |r| 1.0 / r);
    // A pose (every key at one time) has no cycle to close.
    let pose = end.partial_cmp(&start) != Some(std::cmp::Ordering::Greater);
    for (range, closed, spline) in asked {
        for ch in &mut raw.channels[range.clone()] {
            if *closed && !pose {
                // Hold to the clip's end first if this channel stops early, then back to the
                // first key one frame later.
                let hold = ch.times.last().is_some_and(|&t| t < end);
                // A key without values (`AnimationKey { 0; 0; }`) has nothing to close.
                match &mut ch.values {
                    RawValues::Vec3(v) => {
                        let (Some(&first), Some(&last)) = (v.first(), v.last()) else {
                            continue;
                        };
                        if hold {
                            v.push(last);
                        }
                        v.push(first);
                    }
                    RawValues::Quat(q) => {
                        let (Some(&first), Some(&last)) = (q.first(), q.last()) else {
                            continue;
                        };
                        if hold {
                            q.push(last);
                        }
                        q.push(first);
                    }
                }
                if hold {
                    ch.times.push(end);
                }
                ch.times.push(end + interval);
            }
            if *spline && ch.target == Target::Translation {
                catmull_rom(ch);
            }
        }
    }
}

/// Turns a LINEAR position channel into a Catmull-Rom spline through the same keys: cubic
/// Hermite keys whose tangent at each key is the slope between its neighbours (one-sided at
/// the ends).
fn catmull_rom(ch: &mut RawChannel) {
    let RawValues::Vec3(v) = &ch.values else {
        return;
    };
    let t = &ch.times;
    let n = v.len();
    if n < 2 || t.len() != n {
        return;
    }
    let mut out = Vec::with_capacity(3 * n);
    for k in 0..n {
        let (a, b) = (k.saturating_sub(1), (k + 1).min(n - 1));
        let m = (v[b] - v[a]) / (t[b] - t[a]);
        out.extend([m, v[k], m]);
    }
    ch.values = RawValues::Vec3(out);
    ch.interpolation = Interpolation::CubicSpline;
}

/// A rotation under the Z mirror: (x, y, z, w) → (-x, -y, z, w).
fn conv_quat(q: Quat, mirror: bool) -> Quat {
    if mirror {
        Quat::from_xyzw(-q.x, -q.y, q.z, q.w)
    } else {
        q
    }
}

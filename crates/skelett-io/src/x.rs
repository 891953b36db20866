//! DirectX `.x` import, text format (the format D3DXLoadMeshHierarchyFromX loads).
//!
//! ```text
//! xof 0303txt 0032
//! template ... { }                       skipped (the standard templates are known)
//! Frame name { FrameTransformMatrix {16}  Mesh { vertices faces MeshNormals
//!              MeshTextureCoords SkinWeights { bone, indices, weights, offset matrix } }
//!              Frame ... }               ─▶ one joint per Frame; meshes ─▶ skinned meshes
//! AnimTicksPerSecond { 4800 }            ticks per second (4800 when absent)
//! AnimationSet name { Animation { {Frame} AnimationKey { type; n; keys } AnimationOptions } }
//!                                        ─▶ one clip per set, LINEAR keys
//! ```
//!
//! Matrices are row-vector in the file (`v' = v·M`); they are transposed to skelett's
//! column-vector convention, and the file's own axes are kept (left-handed data stays as it
//! is unless [`Options::right_handed`] mirrors Z). Key types: 0 rotation (w first), 1 scale,
//! 2 position, 4 matrix (decomposed into the three). Binary and compressed files get a clear
//! "not supported" error. Animations or skin weights that name frames the file does not have
//! are skipped with a warning naming them.
//!
//! The parser is hand-written (no crate reads .x): one pass over the bytes into a small tree
//! of data objects (flat lists of numbers and strings, child objects, `{ references }`), with
//! counts checked against what was read and every error naming its line.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec2, Vec3};
use skelett::{
    Interpolation, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues, Skin, SkinnedMesh,
    Target, Transform,
};

use crate::{Asset, Error};

/// Import options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Convert the (left-handed) file to right-handed coordinates by mirroring Z.
    pub right_handed: bool,
}

/// Loads a text `.x` file with default options.
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes_with`].
pub fn load(path: impl AsRef<Path>) -> Result<Asset, Error> {
    load_with(path, &Options::default())
}

/// Loads a text `.x` file.
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes_with`].
pub fn load_with(path: impl AsRef<Path>, options: &Options) -> Result<Asset, Error> {
    let path = path.as_ref();
    let bytes = crate::read_file(path)?;
    from_bytes_with(&bytes, path, options)
}

/// Reads a text `.x` file from memory with default options; `name` is used in errors.
///
/// # Errors
/// As [`from_bytes_with`].
pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Asset, Error> {
    from_bytes_with(bytes, name, &Options::default())
}

#[derive(Debug)]
enum Value {
    Num(f32),
    Str(String),
}

#[derive(Debug)]
struct Obj {
    kind: String,
    name: Option<String>,
    values: Vec<Value>,
    children: Vec<Obj>,
    refs: Vec<String>,
    line: usize,
}

struct Lexer<'a> {
    b: &'a [u8],
    pos: usize,
    line: usize,
    file: &'a Path,
}

#[derive(Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    Ident(String),
    Str(String),
    Eof,
}

const MAX_DEPTH: usize = 128;

impl<'a> Lexer<'a> {
    fn err(&self, expected: &str) -> Error {
        Error::Syntax {
            file: self.file.to_path_buf(),
            line: self.line,
            column: 1,
            expected: expected.to_string(),
        }
    }

    fn next(&mut self) -> Result<Tok, Error> {
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return Ok(Tok::Eof);
            };
            match c {
                b'\n' => {
                    self.line += 1;
                    self.pos += 1;
                }
                b';' | b',' => self.pos += 1,
                c if c.is_ascii_whitespace() => self.pos += 1,
                b'/' if self.b.get(self.pos + 1) == Some(&b'/') => self.skip_line(),
                b'#' => self.skip_line(),
                b'<' => {
                    // A GUID: skip to '>'.
                    while let Some(&c) = self.b.get(self.pos) {
                        self.pos += 1;
                        if c == b'>' {
                            break;
                        }
                        if c == b'\n' {
                            self.line += 1;
                        }
                    }
                }
                b'{' => {
                    self.pos += 1;
                    return Ok(Tok::Open);
                }
                b'}' => {
                    self.pos += 1;
                    return Ok(Tok::Close);
                }
                b'"' => {
                    self.pos += 1;
                    let start = self.pos;
                    while let Some(&c) = self.b.get(self.pos) {
                        if c == b'"' {
                            break;
                        }
                        if c == b'\\' {
                            self.pos += 1;
                        }
                        if c == b'\n' {
                            self.line += 1;
                        }
                        self.pos += 1;
                    }
                    if self.pos >= self.b.len() {
                        return Err(self.err("a closing quote"));
                    }
                    let s = String::from_utf8_lossy(&self.b[start..self.pos]).into_owned();
                    self.pos += 1;
                    return Ok(Tok::Str(s));
                }
                _ => {
                    let start = self.pos;
                    while let Some(&c) = self.b.get(self.pos) {
                        if c.is_ascii_whitespace() || b"{};,<\"".contains(&c) {
                            break;
                        }
                        self.pos += 1;
                    }
                    return Ok(Tok::Ident(
                        String::from_utf8_lossy(&self.b[start..self.pos]).into_owned(),
                    ));
                }
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if c == b'\n' {
                break;
            }
            self.pos += 1;
        }
    }

    /// The body of a data object after its `{`, up to the matching `}`.
    fn body(&mut self, kind: String, name: Option<String>, depth: usize) -> Result<Obj, Error> {
        if depth > MAX_DEPTH {
            return Err(self.err(&format!("objects nested at most {MAX_DEPTH} deep")));
        }
        let mut o = Obj {
            kind,
            name,
            values: Vec::new(),
            children: Vec::new(),
            refs: Vec::new(),
            line: self.line,
        };
        loop {
            match self.next()? {
                Tok::Close => return Ok(o),
                Tok::Eof => {
                    return Err(self.err(&format!("}} closing {} (line {})", o.kind, o.line)))
                }
                Tok::Str(s) => o.values.push(Value::Str(s)),
                Tok::Open => {
                    // A reference: { Name } (or an empty { }).
                    match self.next()? {
                        Tok::Ident(n) => {
                            if self.next()? != Tok::Close {
                                return Err(self.err("} after a reference's name"));
                            }
                            o.refs.push(n);
                        }
                        Tok::Close => {}
                        _ => return Err(self.err("a name in a { reference }")),
                    }
                }
                Tok::Ident(t) => {
                    if let Some(v) = parse_num(&t) {
                        o.values.push(Value::Num(v));
                        continue;
                    }
                    // A nested data object: Type [name] {
                    let (name, open) = match self.next()? {
                        Tok::Open => (None, true),
                        Tok::Ident(n) => (Some(n), self.next()? == Tok::Open),
                        _ => (None, false),
                    };
                    if !open {
                        return Err(self.err(&format!("{{ opening a {t} object")));
                    }
                    let child = self.body(t, name, depth + 1)?;
                    o.children.push(child);
                }
            }
        }
    }
}

fn parse_num(t: &str) -> Option<f32> {
    let c = t.as_bytes().first()?;
    if !(c.is_ascii_digit() || *c == b'-' || *c == b'+' || *c == b'.') {
        return None;
    }
    t.parse::<f32>().ok()
}

/// Loads a text `.x` file from memory; `name` is used in errors.
///
/// # Errors
/// [`Error::Unsupported`] for binary or compressed `.x`, [`Error::Syntax`] with a line for
/// text that does not parse, [`Error::Invalid`] for objects whose counts or values do not
/// fit, [`Error::Build`] when the runtime rejects the result.
pub fn from_bytes_with(bytes: &[u8], name: &Path, options: &Options) -> Result<Asset, Error> {
    if bytes.len() < 16 || &bytes[..4] != b"xof " {
        return Err(Error::Malformed {
            file: name.to_path_buf(),
            offset: 0,
            expected: "the .x header \"xof 0303txt 0032\"".into(),
        });
    }
    let format = &bytes[8..12];
    if format != b"txt " {
        return Err(Error::Unsupported {
            file: name.to_path_buf(),
            what: format!(
                "{:?} .x files (only the text format \"txt \" is read)",
                String::from_utf8_lossy(format)
            ),
        });
    }
    let mut lx = Lexer {
        b: bytes,
        pos: 16,
        line: 1,
        file: name,
    };
    let mut top = Vec::new();
    loop {
        match lx.next()? {
            Tok::Eof => break,
            Tok::Ident(t) if t == "template" => {
                // template Name { ... } — skipped, nested braces included.
                let mut depth = 0usize;
                loop {
                    match lx.next()? {
                        Tok::Open => depth += 1,
                        Tok::Close => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                break;
                            }
                        }
                        Tok::Eof => return Err(lx.err("} closing a template")),
                        _ => {}
                    }
                }
            }
            Tok::Ident(t) => {
                let (oname, open) = match lx.next()? {
                    Tok::Open => (None, true),
                    Tok::Ident(n) => (Some(n), lx.next()? == Tok::Open),
                    _ => (None, false),
                };
                if !open {
                    return Err(lx.err(&format!("{{ opening a {t} object")));
                }
                top.push(lx.body(t, oname, 0)?);
            }
            _ => return Err(lx.err("a template or a data object")),
        }
    }
    build(name, &top, *options)
}

fn nums(o: &Obj) -> Vec<f32> {
    o.values
        .iter()
        .filter_map(|v| {
            if let Value::Num(n) = v {
                Some(*n)
            } else {
                None
            }
        })
        .collect()
}

/// A row-vector .x matrix (16 numbers, row-major) as a column-vector Mat4.
fn x_matrix(m: &[f32]) -> Mat4 {
    // Row-major M with v' = v·M equals column-major storage of Mᵀ: glam reads columns.
    Mat4::from_cols_slice(&m[..16])
}

struct Cursor<'a> {
    v: &'a [f32],
    i: usize,
    file: &'a Path,
    what: String,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[f32], Error> {
        if self.v.len() - self.i < n {
            return Err(Error::Invalid {
                file: self.file.to_path_buf(),
                location: self.what.clone(),
                problem: format!("{n} more numbers needed, {} left", self.v.len() - self.i),
            });
        }
        self.i += n;
        Ok(&self.v[self.i - n..self.i])
    }
    fn count(&mut self, per: usize) -> Result<usize, Error> {
        let n = self.take(1)?[0];
        if !(n >= 0.0 && n.fract() == 0.0)
            || (n as usize).saturating_mul(per) > self.v.len() - self.i
        {
            return Err(Error::Invalid {
                file: self.file.to_path_buf(),
                location: self.what.clone(),
                problem: format!("a count of {n} does not fit the data"),
            });
        }
        Ok(n as usize)
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
        o: &'o Obj,
        parent: Option<usize>,
        joints: &mut Vec<RawJoint>,
        meshes: &mut Vec<(&'o Obj, Option<usize>)>,
        conv: &dyn Fn(Mat4) -> Mat4,
    ) {
        if o.kind == "Frame" {
            let m = o
                .children
                .iter()
                .find(|c| c.kind == "FrameTransformMatrix")
                .map(nums)
                .filter(|v| v.len() >= 16)
                .map_or(Mat4::IDENTITY, |v| conv(x_matrix(&v)));
            let me = joints.len();
            let name = o.name.clone().unwrap_or_else(|| format!("frame{me}"));
            joints.push(RawJoint {
                name,
                parent,
                rest: Transform::from_mat4(&m),
            });
            for c in &o.children {
                walk(c, Some(me), joints, meshes, conv);
            }
        } else if o.kind == "Mesh" {
            meshes.push((o, parent));
        }
    }
    for o in top {
        walk(o, None, &mut joints, &mut meshes_src, &conv);
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
            what: format!("Mesh {mname} (line {})", m.line),
        };
        let nv = c.count(3)?;
        let positions: Vec<Vec3> = c
            .take(nv * 3)?
            .chunks_exact(3)
            .map(|p| mirror.transform_point3(Vec3::from_slice(p)))
            .collect();
        let nf = c.count(1)?;
        let mut indices = Vec::new();
        for _ in 0..nf {
            let k = c.count(1)?;
            let f = c.take(k)?;
            for t in 1..k.saturating_sub(1) {
                for idx in [f[0], f[t], f[t + 1]] {
                    if !(idx >= 0.0 && (idx as usize) < nv) {
                        return Err(Error::Invalid {
                            file: name.to_path_buf(),
                            location: c.what.clone(),
                            problem: format!("face index {idx} outside the {nv} vertices"),
                        });
                    }
                    indices.push(idx as u32);
                }
            }
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
                what: format!("{} in Mesh {mname} (line {})", ch.kind, ch.line),
            };
            match ch.kind.as_str() {
                "MeshNormals" => {
                    let n = c.count(3)?;
                    if n == nv {
                        normals = Some(
                            c.take(n * 3)?
                                .chunks_exact(3)
                                .map(|p| mirror.transform_vector3(Vec3::from_slice(p)))
                                .collect(),
                        );
                    } else {
                        warnings.push(format!("Mesh {mname}: {n} normals for {nv} vertices (per-corner normals) not imported"));
                    }
                }
                "MeshTextureCoords" => {
                    let n = c.count(2)?;
                    if n == nv {
                        uvs = Some(
                            c.take(n * 2)?
                                .chunks_exact(2)
                                .map(Vec2::from_slice)
                                .collect(),
                        );
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
                    let idx: Vec<f32> = c.take(n)?.to_vec();
                    let w: Vec<f32> = c.take(n)?.to_vec();
                    let offset = c.take(16)?;
                    let Some(&j) = joint_of.get(bone.as_str()) else {
                        missing.push(bone);
                        continue;
                    };
                    let slot = skin_joints.len() as u16;
                    skin_joints.push(j);
                    ibm.push(conv(x_matrix(offset)));
                    for (&i, &w) in idx.iter().zip(&w) {
                        if !(i >= 0.0 && (i as usize) < nv) {
                            return Err(Error::Invalid {
                                file: name.to_path_buf(),
                                location: c.what.clone(),
                                problem: format!("vertex index {i} outside the {nv} vertices"),
                            });
                        }
                        if w > 0.0 && w.is_finite() {
                            influences[i as usize].push((slot, w));
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
        let mesh = SkinnedMesh {
            name: mname.clone(),
            skin: skins.len(),
            primitives: vec![crate::plain_primitive(
                positions,
                normals,
                uvs,
                &mut influences,
                indices,
            )],
            morph_channels: Vec::new(),
            morph_full_weights: Vec::new(),
        };
        mesh.validate(&skin)
            .map_err(|e| Error::build(name.to_path_buf(), format!("Mesh {mname}"), e))?;
        skins.push(skin);
        meshes.push(mesh);
    }

    // Animations.
    let mut ticks = 4800.0f32;
    let mut clips = Vec::new();
    for o in top {
        match o.kind.as_str() {
            "AnimTicksPerSecond" => {
                if let Some(&t) = nums(o).first() {
                    if t.is_finite() && t > 0.0 {
                        ticks = t;
                    }
                }
            }
            "AnimationSet" => {
                let cname = o
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("animation{}", clips.len()));
                let mut raw = RawClip {
                    name: cname.clone(),
                    ..Default::default()
                };
                let mut missing = Vec::new();
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
                    for k in a.children.iter().filter(|k| k.kind == "AnimationKey") {
                        let v = nums(k);
                        let mut c = Cursor {
                            v: &v,
                            i: 0,
                            file: name,
                            what: format!("AnimationKey in {cname} (line {})", k.line),
                        };
                        let kind = c.take(1)?[0] as i32;
                        let n = c.count(2)?;
                        let mut times = Vec::with_capacity(n);
                        let mut vals: Vec<Vec<f32>> = Vec::with_capacity(n);
                        for _ in 0..n {
                            let t = c.take(1)?[0] / ticks;
                            let nvals = c.count(1)?;
                            let x = c.take(nvals)?.to_vec();
                            // Repeated times: the later key wins.
                            if times.last().is_some_and(|&l: &f32| t <= l) {
                                times.pop();
                                vals.pop();
                            }
                            times.push(t);
                            vals.push(x);
                        }
                        let make = |tgt: Target, values: RawValues| RawChannel {
                            joint: target.clone(),
                            target: tgt,
                            interpolation: Interpolation::Linear,
                            times: times.clone(),
                            values,
                        };
                        let short = |need: usize| vals.iter().any(|x| x.len() < need);
                        match kind {
                            0 if !short(4) => {
                                let q = vals.iter().map(|x| conv_quat(Quat::from_xyzw(-x[1], -x[2], -x[3], x[0]), options.right_handed)).collect();
                                raw.channels.push(make(Target::Rotation, RawValues::Quat(q)));
                            }
                            1 if !short(3) => raw.channels.push(make(Target::Scale, RawValues::Vec3(vals.iter().map(|x| Vec3::from_slice(x)).collect()))),
                            2 if !short(3) => raw.channels.push(make(Target::Translation, RawValues::Vec3(vals.iter().map(|x| mirror.transform_point3(Vec3::from_slice(x))).collect()))),
                            4 if !short(16) => {
                                let tr: Vec<Transform> = vals.iter().map(|x| Transform::from_mat4(&conv(x_matrix(x)))).collect();
                                raw.channels.push(make(Target::Translation, RawValues::Vec3(tr.iter().map(|t| t.translation).collect())));
                                raw.channels.push(make(Target::Rotation, RawValues::Quat(tr.iter().map(|t| t.rotation).collect())));
                                raw.channels.push(make(Target::Scale, RawValues::Vec3(tr.iter().map(|t| t.scale).collect())));
                            }
                            _ => return Err(Error::Invalid { file: name.to_path_buf(), location: c.what.clone(), problem: format!("key type {kind} with too few values (0 rotation: 4, 1 scale: 3, 2 position: 3, 4 matrix: 16)") }),
                        }
                    }
                }
                if !missing.is_empty() {
                    warnings.push(format!("AnimationSet {cname}: animations of frames the file does not have skipped: {}", missing.join(", ")));
                }
                raw.fit_range_to_keys();
                let clip = raw.build(&skeleton).map_err(|e| {
                    Error::build(name.to_path_buf(), format!("AnimationSet {cname}"), e)
                })?;
                clips.push(Arc::new(clip));
            }
            _ => {}
        }
    }
    Ok(Asset::read(skeleton, skins, meshes, clips, warnings))
}

/// A rotation under the Z mirror: (x, y, z, w) → (-x, -y, z, w).
fn conv_quat(q: Quat, mirror: bool) -> Quat {
    if mirror {
        Quat::from_xyzw(-q.x, -q.y, q.z, q.w)
    } else {
        q
    }
}

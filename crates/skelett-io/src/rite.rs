//! RAM/RAA: the ASCII model and animation pair of the 2006 Maya-based "RiTE" system the older
//! articles describe, read and written.
//!
//! No public files exist, so the article's element lines are kept exactly and the sections
//! are introduced by a keyword and a count (which the reader checks):
//!
//! ```text
//! .ram                                   .raa
//! joints 2                               fps 30
//! 0 "hip"                                tracks 1
//!     parent -1                          track 0 1 "knee" 2
//!     orientation 0 0 0 1                0 0  0 0 0 1
//!     translation 0 1 0                  1 30 0.5 0 0 0.866
//!     rotation 0 0 0 1
//! vertices N     VERTEX_ID X Y Z
//! normals N      NORMAL_ID X Y Z
//! uvs N          UV_ID X Y
//! triangles N    TRIANGLE_ID SHADER_ID V V V N N N UV UV UV
//! weights N      WEIGHT_ID VERTEX_ID JOINT_ID "JOINT_NAME" W
//! ```
//!
//! A joint's local rotation is its orientation times its rotation; a track's keyframes give
//! that rotation (relative to the orientation) at frame numbers, at `fps` frames per second.
//! RAA carries rotations only, as the format defines: translations stay the skeleton's.
//! Triangles index vertices, normals and UVs separately; the reader makes one vertex per
//! distinct (vertex, normal, uv) corner. Inverse bind matrices come from the rest pose.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use glam::{Quat, Vec2, Vec3};
use skelett::{
    Interpolation, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues, Skin, SkinnedMesh,
    Target, Transform,
};

use crate::error::quote;
use crate::{Asset, Error};

/// The frame rate written when a clip is exported, and assumed when an RAA has no `fps`.
pub const DEFAULT_FPS: f32 = 30.0;

struct Tokens<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    /// Where the current line starts.
    line_start: usize,
    /// The line and column (in characters, from 1) of the last token read, or of the end
    /// of the text once it is reached: where an error points.
    at: (usize, usize),
    file: &'a Path,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str, file: &'a Path) -> Self {
        Self {
            text,
            pos: 0,
            line: 1,
            line_start: 0,
            at: (1, 1),
            file,
        }
    }

    fn err(&self, expected: &str) -> Error {
        Error::Syntax {
            file: self.file.to_path_buf(),
            line: self.at.0,
            column: self.at.1,
            expected: expected.into(),
        }
    }

    fn peek(&mut self) -> Option<&'a str> {
        let save = (self.pos, self.line, self.line_start, self.at);
        let t = self.next();
        (self.pos, self.line, self.line_start, self.at) = save;
        t
    }

    fn next(&mut self) -> Option<&'a str> {
        let b = self.text.as_bytes();
        while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
            if b[self.pos] == b'\n' {
                self.line += 1;
                self.line_start = self.pos + 1;
            }
            self.pos += 1;
        }
        // Positions are at whitespace or the end, so they are character boundaries.
        let column = self.text[self.line_start..self.pos].chars().count() + 1;
        self.at = (self.line, column);
        if self.pos >= b.len() {
            return None;
        }
        let start = self.pos;
        if b[start] == b'"' {
            self.pos += 1;
            while self.pos < b.len() && b[self.pos] != b'"' && b[self.pos] != b'\n' {
                self.pos += 1;
            }
            let s = &self.text[start + 1..self.pos];
            if self.pos < b.len() && b[self.pos] == b'"' {
                self.pos += 1;
            }
            return Some(s);
        }
        while self.pos < b.len() && !b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        Some(&self.text[start..self.pos])
    }

    fn word(&mut self, w: &str) -> Result<(), Error> {
        match self.next() {
            Some(t) if t == w => Ok(()),
            Some(t) => Err(self.err(&format!("{w:?}, found {}", quote(t)))),
            None => Err(self.err(&format!("{w:?} (the file ends early)"))),
        }
    }

    fn f32(&mut self, what: &str) -> Result<f32, Error> {
        let t = self
            .next()
            .ok_or_else(|| self.err(&format!("{what} (the file ends early)")))?;
        t.parse::<f32>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.err(&format!("a number for {what}, found {}", quote(t))))
    }

    fn int(&mut self, what: &str) -> Result<i64, Error> {
        let t = self
            .next()
            .ok_or_else(|| self.err(&format!("{what} (the file ends early)")))?;
        t.parse::<i64>()
            .map_err(|_| self.err(&format!("a whole number for {what}, found {}", quote(t))))
    }

    fn string(&mut self, what: &str) -> Result<&'a str, Error> {
        self.next()
            .ok_or_else(|| self.err(&format!("{what} (the file ends early)")))
    }

    /// `keyword N`, N checked against the text left (each item needs `min_bytes`).
    fn section(&mut self, keyword: &str, min_bytes: usize) -> Result<usize, Error> {
        self.word(keyword)?;
        let n = self.int(&format!("the {keyword} count"))?;
        if n < 0 || (n as usize).saturating_mul(min_bytes) > self.text.len() - self.pos {
            return Err(self.err(&format!("a {keyword} count the file can hold, found {n}")));
        }
        Ok(n as usize)
    }

    fn vec3(&mut self, what: &str) -> Result<Vec3, Error> {
        Ok(Vec3::new(self.f32(what)?, self.f32(what)?, self.f32(what)?))
    }

    fn quat(&mut self, what: &str) -> Result<Quat, Error> {
        let q = Quat::from_xyzw(
            self.f32(what)?,
            self.f32(what)?,
            self.f32(what)?,
            self.f32(what)?,
        );
        if q.length_squared() < 1e-12 {
            return Err(self.err(&format!("a non-zero quaternion for {what}")));
        }
        Ok(q.normalize())
    }
}

/// How to read a `.ram` model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// The `.raa` animation to read with the model. `None`: the `.raa` of the same name
    /// beside the `.ram`, if there is one.
    pub animation: Option<std::path::PathBuf>,
}

impl Options {
    /// Options that read the animation from `raa`.
    pub fn animation(raa: impl Into<std::path::PathBuf>) -> Self {
        Options {
            animation: Some(raa.into()),
        }
    }
}

/// Loads a `.ram` model with the `.raa` animation of the same name beside it, if there is
/// one.
///
/// # Errors
/// [`Error::Io`] if a file cannot be read; otherwise as [`from_str`].
pub fn load(ram: impl AsRef<Path>) -> Result<Asset, Error> {
    load_with(ram, &Options::default())
}

/// Loads a `.ram` model and the animation `options` name (or the one beside it).
///
/// # Errors
/// [`Error::Io`] if a file cannot be read; otherwise as [`from_str`].
pub fn load_with(ram: impl AsRef<Path>, options: &Options) -> Result<Asset, Error> {
    let ram = ram.as_ref();
    let beside = ram.with_extension("raa");
    let raa = match &options.animation {
        Some(p) => Some(p.as_path()),
        None => beside.exists().then_some(beside.as_path()),
    };
    let read = |p: &Path| crate::read_text(p);
    let model = read(ram)?;
    let anim = raa.map(read).transpose()?;
    let raa_name = raa.map(Path::to_path_buf);
    let mut asset = from_str(&model, ram, anim.as_deref().zip(raa_name.as_deref()))?;
    if raa.is_none() {
        asset.warnings.push(format!(
            "no animation: {} is not beside the model (a RAM file holds no clips; give the \
             .raa with the .ram's name)",
            beside.display()
        ));
    }
    Ok(asset)
}

/// Reads RAM text (and RAA text with its name); names are used in errors.
///
/// # Errors
/// [`Error::Syntax`] with the line of anything that does not parse, [`Error::Invalid`] for
/// ids that refer to nothing, [`Error::Build`] when the runtime rejects the result.
pub fn from_str(ram: &str, ram_name: &Path, raa: Option<(&str, &Path)>) -> Result<Asset, Error> {
    let mut t = Tokens::new(ram, ram_name);
    let invalid = |what: String| Error::Invalid {
        file: ram_name.to_path_buf(),
        location: "RAM".into(),
        problem: what,
    };
    let nj = t.section("joints", 40)?;
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut raw_parents = Vec::with_capacity(nj);
    let mut joints = Vec::with_capacity(nj);
    let mut orientation = Vec::with_capacity(nj);
    for i in 0..nj {
        let id = t.int("a joint id")?;
        let name = t.string("a joint name")?.to_string();
        t.word("parent")?;
        let parent = t.int("a parent id")?;
        t.word("orientation")?;
        let o = t.quat("the orientation")?;
        t.word("translation")?;
        let tr = t.vec3("the translation")?;
        t.word("rotation")?;
        let r = t.quat("the rotation")?;
        if ids.insert(id, i).is_some() {
            return Err(invalid(format!("joint id {id} used twice")));
        }
        raw_parents.push(parent);
        orientation.push(o);
        joints.push(RawJoint {
            name,
            parent: None,
            rest: Transform::new(tr, (o * r).normalize(), Vec3::ONE),
        });
    }
    for (i, &p) in raw_parents.iter().enumerate() {
        if p >= 0 {
            joints[i].parent = Some(*ids.get(&p).ok_or_else(|| {
                invalid(format!(
                    "joint {} has parent id {p}, which no joint has",
                    quote(&joints[i].name)
                ))
            })?);
        }
    }
    let skeleton = RawSkeleton {
        joints,
        ..Default::default()
    }
    .build()
    .map_err(|e| Error::build(ram_name.to_path_buf(), "joints", e))?;
    let joint_of_source = skeleton.joint_of_source();

    let mut meshes = Vec::new();
    let mut skins = Vec::new();
    let mut warnings = Vec::new();
    if t.peek().is_some() {
        let mesh_name = ram_name
            .file_stem()
            .map_or("mesh".into(), |s| s.to_string_lossy().into_owned());
        let read_items = |t: &mut Tokens,
                          key: &str,
                          dims: usize|
         -> Result<(HashMap<i64, usize>, Vec<f32>), Error> {
            let n = t.section(key, 2 * (dims + 1))?;
            let mut ids = HashMap::with_capacity(n);
            let mut v = Vec::with_capacity(n * dims);
            for i in 0..n {
                let id = t.int(&format!("a {key} id"))?;
                ids.insert(id, i);
                for _ in 0..dims {
                    v.push(t.f32(key)?);
                }
            }
            Ok((ids, v))
        };
        let (vid, pos) = read_items(&mut t, "vertices", 3)?;
        let (nid, nrm) = read_items(&mut t, "normals", 3)?;
        let (uid, uv) = read_items(&mut t, "uvs", 2)?;
        let nt = t.section("triangles", 22)?;
        let mut corner_of: HashMap<(usize, usize, usize), u32> = HashMap::new();
        let mut corners: Vec<(usize, usize, usize)> = Vec::new();
        let mut indices = Vec::with_capacity(nt * 3);
        for _ in 0..nt {
            let _id = t.int("a triangle id")?;
            let _shader = t.int("a shader id")?;
            let mut v = [0usize; 3];
            let mut nn = [0usize; 3];
            let mut uu = [0usize; 3];
            for (slot, (ids, what)) in [(&vid, "vertex"), (&nid, "normal"), (&uid, "uv")]
                .into_iter()
                .enumerate()
            {
                for k in 0..3 {
                    let id = t.int(&format!("a {what} id"))?;
                    let i = *ids
                        .get(&id)
                        .ok_or_else(|| t.err(&format!("a {what} id that exists, found {id}")))?;
                    [&mut v, &mut nn, &mut uu][slot][k] = i;
                }
            }
            for k in 0..3 {
                let key = (v[k], nn[k], uu[k]);
                let idx = *corner_of.entry(key).or_insert_with(|| {
                    corners.push(key);
                    corners.len() as u32 - 1
                });
                indices.push(idx);
            }
        }
        let nw = t.section("weights", 12)?;
        let mut per_vertex: Vec<Vec<(u16, f32)>> = vec![Vec::new(); pos.len() / 3];
        for _ in 0..nw {
            let _id = t.int("a weight id")?;
            let vid_ = t.int("a vertex id")?;
            let jid = t.int("a joint id")?;
            let _name = t.string("a joint name")?;
            let w = t.f32("a weight")?;
            let v = *vid
                .get(&vid_)
                .ok_or_else(|| t.err(&format!("a vertex id that exists, found {vid_}")))?;
            let j = *ids
                .get(&jid)
                .ok_or_else(|| t.err(&format!("a joint id that exists, found {jid}")))?;
            if w > 0.0 {
                per_vertex[v].push((joint_of_source[j], w));
            }
        }
        // Palette = every joint in skeleton order; inverse binds from the rest pose.
        let all: Vec<u16> = (0..skeleton.len() as u16).collect();
        let ibm = skelett::inverse_bind_matrices(&skeleton, &all)
            .map_err(|e| Error::build(ram_name.to_path_buf(), "skin", e))?;
        let skin = Skin::new("skin", all, ibm)
            .map_err(|e| Error::build(ram_name.to_path_buf(), "skin", e))?;
        let mut per_corner: Vec<Vec<(u16, f32)>> = corners
            .iter()
            .map(|&(v, _, _)| per_vertex[v].clone())
            .collect();
        // Counted on the file's vertices (each is spread to its face corners below).
        let reduced = per_vertex
            .iter()
            .filter(|v| v.len() > crate::MAX_INFLUENCES)
            .count();
        warnings.extend(crate::reduced_warning(&mesh_name, reduced, "vertices"));
        let (prim, _) = crate::plain_primitive(
            corners
                .iter()
                .map(|c| Vec3::from_slice(&pos[c.0 * 3..]))
                .collect(),
            Some(
                corners
                    .iter()
                    .map(|c| Vec3::from_slice(&nrm[c.1 * 3..]))
                    .collect(),
            ),
            Some(
                corners
                    .iter()
                    .map(|c| Vec2::from_slice(&uv[c.2 * 2..]))
                    .collect(),
            ),
            &mut per_corner,
            indices,
        );
        let mesh = SkinnedMesh {
            name: mesh_name,
            skin: 0,
            primitives: vec![prim],
            morph_channels: Vec::new(),
            morph_full_weights: Vec::new(),
        };
        mesh.validate(&skin)
            .map_err(|e| Error::build(ram_name.to_path_buf(), "mesh", e))?;
        skins.push(skin);
        meshes.push(mesh);
    }
    if let Some(tok) = t.next() {
        return Err(t.err(&format!("the end of the file, found {}", quote(tok))));
    }

    let mut clips = Vec::new();
    if let Some((raa, raa_name)) = raa {
        let mut t = Tokens::new(raa, raa_name);
        let mut fps = DEFAULT_FPS;
        if t.peek() == Some("fps") {
            t.word("fps")?;
            fps = t.f32("the frame rate")?;
            if fps <= 0.0 {
                return Err(t.err("a positive frame rate"));
            }
        }
        let ntracks = t.section("tracks", 10)?;
        let mut channels = Vec::with_capacity(ntracks);
        for _ in 0..ntracks {
            t.word("track")?;
            let _tid = t.int("a track id")?;
            let jid = t.int("a joint id")?;
            let _name = t.string("a joint name")?;
            let nk = t.int("a keyframe count")?;
            if nk < 1 || (nk as usize).saturating_mul(12) > raa.len() {
                return Err(t.err(&format!(
                    "at least one keyframe the file can hold, found {nk}"
                )));
            }
            let j = *ids
                .get(&jid)
                .ok_or_else(|| t.err(&format!("a joint id of the RAM, found {jid}")))?;
            let mut times: Vec<f32> = Vec::with_capacity(nk as usize);
            let mut values = Vec::with_capacity(nk as usize);
            for _ in 0..nk {
                let _kid = t.int("a keyframe id")?;
                let frame = t.f32("a frame number")?;
                let r = t.quat("a keyframe rotation")?;
                let time = frame / fps;
                if times.last().is_some_and(|&l| time <= l) {
                    return Err(t.err("keyframes in increasing frame order"));
                }
                times.push(time);
                values.push((orientation[j] * r).normalize());
            }
            channels.push(RawChannel {
                joint: skeleton.name(joint_of_source[j]).to_string(),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                times,
                values: RawValues::Quat(values),
            });
        }
        if let Some(tok) = t.next() {
            return Err(t.err(&format!("the end of the file, found {}", quote(tok))));
        }
        let mut raw = RawClip {
            name: raa_name
                .file_stem()
                .map_or("animation".into(), |s| s.to_string_lossy().into_owned()),
            channels,
            ..Default::default()
        };
        raw.fit_range_to_keys();
        let clip = raw
            .build(&skeleton)
            .map_err(|e| Error::build(raa_name.to_path_buf(), "tracks", e))?
            .with_frame_rate(Some(fps));
        clips.push(Arc::new(clip));
    }
    Asset::read(ram_name, skeleton, skins, meshes, clips, warnings)
}

/// Writes an asset as a `.ram` file ([`to_string`]) and, if it has a clip, its first clip
/// beside it as a `.raa` file of the same name ([`animation_to_string`] at [`DEFAULT_FPS`]),
/// the pair [`load`] reads back.
///
/// # Errors
/// [`Error::Invalid`] for an asset that breaks [`crate::validate`]'s rules (nothing is
/// written); [`Error::Io`] if a file cannot be written or would pass the output limit
/// ([`crate::max_output_bytes`]; the `.raa`'s size is estimated before anything is sampled).
pub fn save(asset: &Asset, ram: impl AsRef<Path>) -> Result<(), Error> {
    let ram = ram.as_ref();
    crate::check_for_writing(asset, ram)?;
    let raa = ram.with_extension("raa");
    if let Some(keys) = raa_key_count(asset, 0, DEFAULT_FPS) {
        crate::check_output_size(
            &raa,
            keys.saturating_mul(RAA_LINE_BYTES),
            &format!(
                "clip {} needs {} keyframe lines ({} joints at {DEFAULT_FPS} fps over {} s)",
                if keys == u64::MAX {
                    // Saturated: the count itself would be a made-up number.
                    format!("more than {:e}", u64::MAX as f64)
                } else {
                    keys.to_string()
                },
                quote(asset.clips[0].name()),
                asset.skeleton.len(),
                asset.clips[0].duration()
            ),
        )?;
    }
    let text = to_string(asset);
    crate::check_output_size(ram, text.len() as u64, "the model")?;
    if !asset.clips.is_empty() {
        let io = |source| Error::Io {
            file: raa.clone(),
            source,
        };
        let mut file = crate::create_output(&raa).map_err(io)?;
        if let Err(e) = write_animation(asset, 0, DEFAULT_FPS, &mut file) {
            // No partial file left behind.
            drop(file);
            let _ = std::fs::remove_file(&raa);
            return Err(io(e));
        }
    }
    crate::write_file(ram, text.as_bytes())
}

/// What a RAM/RAA pair written by [`save`] cannot hold of `asset`, one line each (empty when
/// nothing is lost): clips after the first, animated translations and scales, events, meshes
/// after the first, primitives after the first, morph targets and weight tracks. `skelett
/// convert` prints them as warnings.
pub fn losses(asset: &Asset) -> Vec<String> {
    let mut out = Vec::new();
    if asset.clips.len() > 1 {
        out.push(format!(
            "{} clips after the first are not written (a .raa holds one clip)",
            asset.clips.len() - 1
        ));
    }
    if let Some(c) = asset.clips.first() {
        let moved = c
            .channels()
            .filter(|(_, t, _, _)| *t != skelett::Target::Rotation)
            .count();
        if moved > 0 {
            out.push(format!(
                "clip {:?}: {moved} animated translation/scale channels are not written (RAA \
                 carries rotations only)",
                c.name()
            ));
        }
        if !c.events().is_empty() {
            out.push(format!(
                "clip {:?}: {} events are not written",
                c.name(),
                c.events().len()
            ));
        }
        if c.animates_morph_weights() {
            out.push(format!(
                "clip {:?}: morph weight tracks are not written",
                c.name()
            ));
        }
    }
    if asset.meshes.len() > 1 {
        out.push(format!(
            "{} meshes after the first are not written (a .ram holds one)",
            asset.meshes.len() - 1
        ));
    }
    if let Some(m) = asset.meshes.first() {
        if m.primitives.len() > 1 {
            out.push(format!(
                "mesh {:?}: {} primitives after the first are not written",
                m.name,
                m.primitives.len() - 1
            ));
        }
        if !m.morph_channels.is_empty() {
            out.push(format!(
                "mesh {:?}: {} morph targets are not written (RAM has none)",
                m.name,
                m.morph_channels.len()
            ));
        }
    }
    out
}

/// Writes an asset as RAM text: the skeleton (orientation = rest rotation, rotation =
/// identity) and its first mesh's first primitive, if any.
///
/// Writes what it is given: an asset from a reader always loads again; one a program built or
/// edited should pass [`crate::validate::check`] first, as `save` does.
pub fn to_string(asset: &Asset) -> String {
    let s = &asset.skeleton;
    let mut o = String::new();
    let _ = writeln!(o, "joints {}", s.len());
    for j in 0..s.len() as u16 {
        let r = &s.rest_pose()[j as usize];
        let q = r.rotation;
        let _ = writeln!(o, "{j} \"{}\"", s.name(j).replace('"', "'"));
        let _ = writeln!(o, "\tparent {}", s.parent(j).map_or(-1, |p| p as i64));
        let _ = writeln!(o, "\torientation {} {} {} {}", q.x, q.y, q.z, q.w);
        let _ = writeln!(
            o,
            "\ttranslation {} {} {}",
            r.translation.x, r.translation.y, r.translation.z
        );
        let _ = writeln!(o, "\trotation 0 0 0 1");
    }
    if let (Some(m), Some(p)) = (
        asset.meshes.first(),
        asset.meshes.first().and_then(|m| m.primitives.first()),
    ) {
        let skin = &asset.skins[m.skin];
        let n = p.vertex_count();
        let _ = writeln!(o, "vertices {n}");
        for (i, v) in p.positions.iter().enumerate() {
            let _ = writeln!(o, "{i} {} {} {}", v.x, v.y, v.z);
        }
        let normals: Vec<Vec3> = p.normals.clone().unwrap_or_else(|| vec![Vec3::Y; n]);
        let _ = writeln!(o, "normals {n}");
        for (i, v) in normals.iter().enumerate() {
            let _ = writeln!(o, "{i} {} {} {}", v.x, v.y, v.z);
        }
        let uvs: Vec<Vec2> = p.uvs.clone().unwrap_or_else(|| vec![Vec2::ZERO; n]);
        let _ = writeln!(o, "uvs {n}");
        for (i, v) in uvs.iter().enumerate() {
            let _ = writeln!(o, "{i} {} {}", v.x, v.y);
        }
        let _ = writeln!(o, "triangles {}", p.triangle_count());
        for (i, t) in p.indices.chunks_exact(3).enumerate() {
            let _ = writeln!(
                o,
                "{i} 0 {a} {b} {c} {a} {b} {c} {a} {b} {c}",
                a = t[0],
                b = t[1],
                c = t[2]
            );
        }
        let mut lines = Vec::new();
        for v in 0..n {
            for k in 0..p.influences {
                let w = p.weights[v * p.influences + k];
                if w > 0.0 {
                    let j = skin.joints()[p.joints[v * p.influences + k] as usize];
                    lines.push((v, j, w));
                }
            }
        }
        let _ = writeln!(o, "weights {}", lines.len());
        for (i, (v, j, w)) in lines.iter().enumerate() {
            let _ = writeln!(o, "{i} {v} {j} \"{}\" {w}", s.name(*j).replace('"', "'"));
        }
    }
    o
}

/// About how many bytes a `.raa` keyframe line takes (`KEY FRAME X Y Z W` with shortest
/// round-trip floats): [`save`] multiplies [`raa_key_count`] by it to refuse, before sampling
/// anything, a `.raa` past the output limit ([`crate::max_output_bytes`]).
pub const RAA_LINE_BYTES: u64 = 64;

/// How many keyframe lines [`animation_to_string`] writes for clip `index` at `fps`: joints
/// times frames (`None` without that clip). Check it against a budget before writing.
pub fn raa_key_count(asset: &Asset, index: usize, fps: f32) -> Option<u64> {
    let clip = asset.clips.get(index)?;
    Some(
        raa_frames(clip, fps)
            .saturating_add(1)
            .saturating_mul(asset.skeleton.len() as u64),
    )
}

/// Frames after the first a clip is written with at `fps` (saturating: a clip too long for
/// any budget says so instead of being cut).
fn raa_frames(clip: &skelett::Clip, fps: f32) -> u64 {
    let f = (f64::from(clip.duration()) * f64::from(fps)).round();
    if f > 0.0 {
        // Saturating for huge values (and infinity).
        f as u64
    } else {
        0
    }
}

/// Writes clip `index` of an asset as RAA text: every joint's rotation (relative to its rest
/// rotation, the RAM's orientation), sampled at every frame at `fps` over the clip, as the
/// format carries rotations only. The text has [`raa_key_count`] keyframe lines: check it
/// first ([`save`] refuses a `.raa` past the output limit); memory is 16 bytes per line.
pub fn animation_to_string(asset: &Asset, index: usize, fps: f32) -> Option<String> {
    let mut out = Vec::new();
    match write_animation(asset, index, fps, &mut out) {
        Ok(true) => String::from_utf8(out).ok(),
        _ => None,
    }
}

/// [`animation_to_string`] into a writer, as it is made (the text is never held whole):
/// `Ok(false)` without clip `index`.
///
/// # Errors
/// The writer's; `InvalidInput` when the lines' rotations (16 bytes each) would pass
/// [`crate::max_output_bytes`] in memory.
pub fn write_animation(
    asset: &Asset,
    index: usize,
    fps: f32,
    out: &mut dyn std::io::Write,
) -> std::io::Result<bool> {
    let Some(clip) = asset.clips.get(index) else {
        return Ok(false);
    };
    let s = &asset.skeleton;
    let n = s.len();
    // The rotations are held (16 bytes a line) between sampling and writing: bounded like the
    // output, before anything is allocated.
    let keys = raa_key_count(asset, index, fps).unwrap_or(0);
    if keys.saturating_mul(16) > crate::max_output_bytes() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{keys} keyframe lines would hold more than the output limit of {} bytes in \
                 memory",
                crate::max_output_bytes()
            ),
        ));
    }
    let frames = usize::try_from(raa_frames(clip, fps)).unwrap_or(usize::MAX - 1);
    // Sampled frame by frame, written joint by joint (the file is track-major): only the
    // rotations, relative to the rest rotation, are kept between the two.
    let inverse_rest: Vec<Quat> = s
        .rest_pose()
        .iter()
        .map(|r| r.rotation.conjugate())
        .collect();
    // With the output limit raised past memory, refuse rather than abort on allocation.
    let mut rotations: Vec<Quat> = Vec::new();
    let lines = (frames + 1).saturating_mul(n);
    rotations.try_reserve_exact(lines).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!(
                "{lines} keyframe lines need {} bytes of memory between sampling and writing, \
                 more than this machine can give",
                lines.saturating_mul(16)
            ),
        )
    })?;
    let mut pose = skelett::Pose::rest(s);
    for f in 0..=frames {
        let _ = skelett::sample_uncached(clip, clip.start() + f as f32 / fps, &mut pose);
        rotations.extend(pose.0.iter().zip(&inverse_rest).map(|(p, inv)| {
            // Degenerate keys (a hostile file's nearly-zero rotations) can sample to a
            // rotation with no direction; the rest rotation is written there, as the
            // RAA reader refuses it.
            let q = *inv * p.rotation;
            let l = q.length_squared();
            if l.is_finite() && l >= 1e-12 {
                q.normalize()
            } else {
                Quat::IDENTITY
            }
        }));
    }
    let mut w = std::io::BufWriter::new(out);
    use std::io::Write as _;
    writeln!(w, "fps {fps}")?;
    writeln!(w, "tracks {n}")?;
    for j in 0..n {
        writeln!(
            w,
            "track {j} {j} \"{}\" {}",
            s.name(j as u16).replace('"', "'"),
            frames + 1
        )?;
        for f in 0..=frames {
            let q = rotations[f * n + j];
            writeln!(
                w,
                "{f} {} {} {} {} {}",
                f as f32 + clip.start() * fps,
                q.x,
                q.y,
                q.z,
                q.w
            )?;
        }
    }
    w.flush()?;
    Ok(true)
}

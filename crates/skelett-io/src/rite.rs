//! RAM/RAA: the ASCII model and animation pair of the 2006 Maya-based "RiTE" system the older
//! articles describe, read and written.
//!
//! The article prints each element's line under a heading, with no counts and no frame rate;
//! skelett's earlier, counted layout adds a keyword and a count before each section, an `fps`
//! line and per-track key counts. Both are read (counts are checked); the article's is
//! written by default ([`Layout`]):
//!
//! ```text
//! .ram (the article's layout)            .raa                 .raa (counted)
//! Joint Definitions                      track 0 1 "knee"     fps 30
//! 0 "hip"                                0 0 0 0 0 1          tracks 1
//!     parent -1                          1 30 0.5 0 0 0.866   track 0 1 "knee" 2
//!     orientation 0 0 0 1                                     0 0 0 0 0 1
//!     translation 0 1 0                                       1 30 0.5 0 0 0.866
//!     rotation 0 0 0 1
//! Mesh Definition
//! Vertices       VERTEX_ID X Y Z
//! Normals        NORMAL_ID X Y Z
//! UVs            UV_ID X Y
//! Triangles      TRIANGLE_ID SHADER_ID V V V N N N UV UV UV
//! Weights        WEIGHT_ID VERTEX_ID JOINT_ID "JOINT_NAME" W
//! ```
//!
//! The headings are optional: without them, sections are told apart by the shape of their
//! lines (vertices and normals both have four items; normals start when the ids start
//! again). A joint's local rotation is its orientation times its rotation; a track's
//! keyframes give that rotation (relative to the orientation) at frame numbers, at a frame
//! rate the file gives (`fps`) or the reader is told ([`Options::fps`], 30 by default: the
//! article names none). Several `.raa` files load onto one `.ram`, one clip each. RAA
//! carries rotations only, as the format defines: translations stay the skeleton's.
//! Triangles index vertices, normals and UVs separately; the reader makes one vertex per
//! distinct (vertex, normal, uv) corner. Inverse bind matrices come from the rest pose.
//!
//! The writer gives each joint whose rotation the clip animates a track, as the article
//! does; frame numbers are whole, so a track keeps its keys where they fall on frames and is
//! resampled at every frame where they do not ([`losses_with`] says which).

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
    /// The line and byte offset of the last token read, or of the end of the text once it
    /// is reached: where an error points (the column is counted from it).
    at: (usize, usize),
    file: &'a Path,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str, file: &'a Path) -> Self {
        // A byte-order mark some editors write is not a token.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
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
        self.err_at(self.at, expected)
    }

    /// The column, in characters from 1, of byte offset `pos` (a token's start, so a
    /// character boundary) on its line.
    fn column(&self, pos: usize) -> usize {
        let start = self.text[..pos].rfind('\n').map_or(0, |i| i + 1);
        self.text[start..pos].chars().count() + 1
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
        // The token's byte offset; its column in characters is counted only for an error
        // (counting here made a long line quadratic).
        self.at = (self.line, self.pos);
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
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Options {
    /// The `.raa` animations to read onto the model, one clip each, in order (a walk and a
    /// wave for the same model). Empty: the `.raa` of the same name beside the `.ram`, if
    /// there is one.
    pub animations: Vec<std::path::PathBuf>,
    /// The frame rate of `.raa` files that give none (the article's layout has no `fps`
    /// line): [`DEFAULT_FPS`].
    pub fps: f32,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            animations: Vec::new(),
            fps: DEFAULT_FPS,
        }
    }
}

impl Options {
    /// Options that read the animation from `raa`.
    pub fn animation(raa: impl Into<std::path::PathBuf>) -> Self {
        Self::animations([raa])
    }

    /// Options that read every animation of `raas` onto the model, one clip each.
    pub fn animations<P: Into<std::path::PathBuf>>(raas: impl IntoIterator<Item = P>) -> Self {
        Options {
            animations: raas.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// The same options with `fps` for `.raa` files that give no frame rate.
    pub fn with_fps(mut self, fps: f32) -> Self {
        self.fps = fps;
        self
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

/// Loads a `.ram` model and the animations `options` name (or the one beside it).
///
/// ```no_run
/// use skelett_io::rite::{load_with, Options};
/// let asset = load_with("robot.ram", &Options::animations(["walk.raa", "wave.raa"]))?;
/// assert_eq!(asset.clips.len(), 2); // named "walk" and "wave", after their files
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// # Errors
/// [`Error::Io`] if a file cannot be read; otherwise as [`from_str_with`].
pub fn load_with(ram: impl AsRef<Path>, options: &Options) -> Result<Asset, Error> {
    let ram = ram.as_ref();
    let beside = ram.with_extension("raa");
    let raas: Vec<&Path> = if options.animations.is_empty() {
        beside
            .exists()
            .then_some(beside.as_path())
            .into_iter()
            .collect()
    } else {
        options.animations.iter().map(|p| p.as_path()).collect()
    };
    let read = |p: &Path| crate::read_text(p);
    let model = read(ram)?;
    let texts = raas
        .iter()
        .map(|p| read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let pairs: Vec<(&str, &Path)> = texts
        .iter()
        .map(String::as_str)
        .zip(raas.iter().copied())
        .collect();
    if !(options.fps.is_finite() && options.fps > 0.0) {
        return Err(Error::Invalid {
            file: ram.to_path_buf(),
            location: "options".into(),
            problem: format!("a positive frame rate, found {}", options.fps),
        });
    }
    let mut asset = from_str_with(&model, ram, &pairs, options.fps)?;
    if raas.is_empty() {
        asset.warnings.push(format!(
            "no animation: {} is not beside the model (a RAM file holds no clips; give the \
             .raa with the .ram's name)",
            beside.display()
        ));
    }
    Ok(asset)
}

/// Reads RAM text (and RAA text with its name) at [`DEFAULT_FPS`] for an RAA without an
/// `fps` line; names are used in errors.
///
/// # Errors
/// As [`from_str_with`].
pub fn from_str(ram: &str, ram_name: &Path, raa: Option<(&str, &Path)>) -> Result<Asset, Error> {
    from_str_with(ram, ram_name, raa.as_slice(), DEFAULT_FPS)
}

/// One section of a RAM file, in the order the article gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    Joints,
    Vertices,
    Normals,
    Uvs,
    Triangles,
    Weights,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Joints => "joints",
            Section::Vertices => "vertices",
            Section::Normals => "normals",
            Section::Uvs => "uvs",
            Section::Triangles => "triangles",
            Section::Weights => "weights",
        }
    }

    /// Items on an element's (first) line.
    fn items(self) -> usize {
        match self {
            Section::Joints => 2,
            Section::Vertices | Section::Normals => 4,
            Section::Uvs => 3,
            Section::Triangles => 11,
            Section::Weights => 5,
        }
    }
}

/// What a heading word names: a section, or nothing (a word of "Joint Definitions", "Mesh
/// Definition", or the RAA's "Tracks" and "Keyframes" headings). `None` for other words.
fn heading(word: &str) -> Option<Option<Section>> {
    Some(match word.to_ascii_lowercase().as_str() {
        "joints" => Some(Section::Joints),
        "vertices" => Some(Section::Vertices),
        "normals" => Some(Section::Normals),
        "uvs" => Some(Section::Uvs),
        "triangles" => Some(Section::Triangles),
        "weights" => Some(Section::Weights),
        "joint" | "definitions" | "mesh" | "definition" | "tracks" | "keyframes" => None,
        _ => return None,
    })
}

impl<'a> Tokens<'a> {
    /// How many tokens the line of the next token holds (0 at the end of the text).
    fn line_len(&mut self) -> usize {
        let save = (self.pos, self.line, self.line_start, self.at);
        let mut n = 0;
        let mut line = None;
        while self.next().is_some() {
            match line {
                None => line = Some(self.at.0),
                Some(l) if l != self.at.0 => break,
                _ => {}
            }
            n += 1;
        }
        (self.pos, self.line, self.line_start, self.at) = save;
        n
    }

    /// A heading line ("Vertices", "Joint Definitions", or the extended layout's
    /// "vertices 24"): the section it names (if any) and its count (if any), with where the
    /// count is; `None` (nothing read) if the next line is not a heading.
    #[allow(clippy::type_complexity)]
    fn heading_line(
        &mut self,
    ) -> Result<Option<(Option<Section>, Option<(i64, (usize, usize))>)>, Error> {
        let Some(first) = self.peek() else {
            return Ok(None);
        };
        if heading(first).is_none() {
            return Ok(None);
        }
        let n = self.line_len();
        let mut section = None;
        let mut count = None;
        for k in 0..n {
            let tok = self.next().unwrap_or_default();
            match heading(tok) {
                Some(s) if count.is_none() => section = section.or(s),
                _ if k == n - 1 && k > 0 => {
                    let c = tok.parse::<i64>().ok().filter(|&c| c >= 0).ok_or_else(|| {
                        self.err(&format!("a count after the heading, found {}", quote(tok)))
                    })?;
                    count = Some((c, self.at));
                }
                _ => {
                    return Err(self.err(&format!(
                        "a heading (Vertices, Normals, UVs, Triangles, Weights, optionally \
                         with a count), found {}",
                        quote(tok)
                    )))
                }
            }
        }
        Ok(Some((section, count)))
    }

    /// An error at `at`: a line and a token's byte offset, as `self.at` holds them.
    fn err_at(&self, at: (usize, usize), expected: &str) -> Error {
        Error::Syntax {
            file: self.file.to_path_buf(),
            line: at.0,
            column: self.column(at.1.min(self.text.len())),
            expected: expected.into(),
        }
    }
}

/// A counted section's count against the elements it had.
fn check_count(
    t: &Tokens,
    section: Section,
    count: Option<(i64, (usize, usize))>,
    found: usize,
) -> Result<(), Error> {
    match count {
        Some((c, at)) if c != found as i64 => Err(t.err_at(
            at,
            &format!(
                "{} {}: the count says {c}, the file has {found}",
                section.name(),
                if found > c as usize {
                    "(more follow)"
                } else {
                    "(fewer follow)"
                }
            ),
        )),
        _ => Ok(()),
    }
}

/// Reads RAM text and any number of RAA texts with their names (one clip each, named after
/// its file), in either layout: the article's (no counts, no frame rate, optional headings
/// such as `Vertices`; sections told apart by the shape of their lines where a heading does
/// not name them, vertices from normals by their ids starting again) or skelett's extended
/// one (`joints N`, `vertices N`, ..., `fps`, `tracks N` and per-track key counts, which are
/// checked). `fps` is the frame rate of an RAA without an `fps` line. Names are used in
/// errors.
///
/// ```
/// // A RAM and RAA typed as the article shows them: no counts, no frame rate.
/// let ram = "0 \"hip\"\n\tparent -1\n\torientation 0 0 0 1\n\ttranslation 0 1 0\n\trotation 0 0 0 1\n\
///            1 \"knee\"\n\tparent 0\n\torientation 0 0 0 1\n\ttranslation 0 -1 0\n\trotation 0 0 0 1\n";
/// let raa = "track 0 1 \"knee\"\n0 0 0 0 0 1\n1 25 0.5 0 0 0.8660254\n";
/// let asset = skelett_io::rite::from_str_with(ram, "a.ram".as_ref(), &[(raa, "bend.raa".as_ref())], 25.0)?;
/// assert_eq!(asset.clips[0].name(), "bend");
/// assert_eq!(asset.clips[0].duration(), 1.0); // frame 25 at 25 fps
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// # Errors
/// [`Error::Syntax`] with the line and column of anything that does not parse or refers to
/// nothing (an RAA track naming a joint id the RAM lacks, a triangle's vertex id, a parent
/// id no joint has, a joint id used twice, a count that does not match), [`Error::Build`]
/// when the runtime rejects the result (a cycle of parents).
pub fn from_str_with(
    ram: &str,
    ram_name: &Path,
    raas: &[(&str, &Path)],
    fps: f32,
) -> Result<Asset, Error> {
    if !(fps.is_finite() && fps > 0.0) {
        return Err(Error::Invalid {
            file: ram_name.to_path_buf(),
            location: "the frame rate of the RAA files".into(),
            problem: format!("a positive frame rate is needed, not {fps}"),
        });
    }
    let mut t = Tokens::new(ram, ram_name);
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut raw_parents = Vec::new();
    // Where each joint's id is, for errors about it.
    let mut joint_at = Vec::new();
    let mut joints = Vec::new();
    let mut orientation = Vec::new();
    // Mesh elements: ids to indices, values; triangles and weights with where they are.
    let mut item_ids: [HashMap<i64, usize>; 3] = Default::default();
    let mut items: [Vec<f32>; 3] = Default::default();
    let mut triangles: Vec<[(i64, (usize, usize)); 9]> = Vec::new();
    // Weights: vertex id and where it is, joint id and where it is, the weight.
    #[allow(clippy::type_complexity)]
    let mut weights: Vec<(i64, (usize, usize), i64, (usize, usize), f32)> = Vec::new();
    // The section being read, whether a heading named it, and its count.
    let mut section = Section::Joints;
    let mut named = false;
    // Once a file uses headings, only headings change the section (a line of the wrong shape
    // is then an error in its section, not the start of another).
    let mut headings = false;
    let mut count: Option<(i64, (usize, usize))> = None;
    let found = |s: Section, joints: usize, items: &[Vec<f32>; 3], tris: usize, ws: usize| match s {
        Section::Joints => joints,
        Section::Vertices => items[0].len() / 3,
        Section::Normals => items[1].len() / 3,
        Section::Uvs => items[2].len() / 2,
        Section::Triangles => tris,
        Section::Weights => ws,
    };
    loop {
        if let Some((s, c)) = t.heading_line()? {
            if let Some(s) = s {
                if s < section {
                    return Err(t.err(&format!(
                        "sections in the article's order (joints, vertices, normals, uvs, \
                         triangles, weights): {} after {}",
                        s.name(),
                        section.name()
                    )));
                }
                let n = found(
                    section,
                    joints.len(),
                    &items,
                    triangles.len(),
                    weights.len(),
                );
                check_count(&t, section, count, n)?;
                section = s;
                named = true;
                headings = true;
                count = None;
            }
            if c.is_some() {
                count = c;
            }
            continue;
        }
        let n = t.line_len();
        if n == 0 {
            break;
        }
        // The section of this line: as its heading named it, else by its shape.
        let first_id = t.peek().and_then(|w| w.parse::<i64>().ok());
        let kind = if (named && n == section.items()) || (headings && section != Section::Joints) {
            if n != section.items() {
                t.next();
                return Err(t.err(&format!(
                    "a {} line ({} items) under its heading, found {n} items",
                    section.name(),
                    section.items()
                )));
            }
            section
        } else {
            let guess = match n {
                2 => Section::Joints,
                4 if section <= Section::Vertices => {
                    // Vertices until the ids start again: then normals.
                    let restart = !items[0].is_empty()
                        && first_id.is_some_and(|id| item_ids[0].contains_key(&id));
                    if restart {
                        Section::Normals
                    } else {
                        Section::Vertices
                    }
                }
                4 => Section::Normals,
                3 => Section::Uvs,
                11 => Section::Triangles,
                5 => Section::Weights,
                _ if named => {
                    t.next();
                    return Err(t.err(&format!(
                        "a {} line ({} items) under its heading, found {n} items",
                        section.name(),
                        section.items()
                    )));
                }
                _ => {
                    t.next();
                    return Err(t.err(&format!(
                        "a joint (ID \"NAME\"), vertex or normal (4 items), uv (3), triangle \
                         (11) or weight (5) line; this one has {n} items"
                    )));
                }
            };
            if named && guess < section {
                t.next();
                return Err(t.err(&format!(
                    "a {} line ({} items) under its heading, found {n} items",
                    section.name(),
                    section.items()
                )));
            }
            if guess < section {
                t.next();
                return Err(t.err(&format!(
                    "sections in the article's order (joints, vertices, normals, uvs, \
                     triangles, weights): a {} line after the {}",
                    guess.name(),
                    section.name()
                )));
            }
            guess
        };
        if kind != section {
            let n = found(
                section,
                joints.len(),
                &items,
                triangles.len(),
                weights.len(),
            );
            check_count(&t, section, count, n)?;
            section = kind;
            named = false;
            count = None;
        }
        match kind {
            Section::Joints => {
                let id = t.int("a joint id")?;
                let at = t.at;
                let name = t.string("a joint name")?.to_string();
                t.word("parent")?;
                let parent = t.int("a parent id")?;
                t.word("orientation")?;
                let o = t.quat("the orientation")?;
                t.word("translation")?;
                let tr = t.vec3("the translation")?;
                t.word("rotation")?;
                let r = t.quat("the rotation")?;
                if ids.insert(id, joints.len()).is_some() {
                    return Err(t.err_at(at, &format!("a joint id not used before, found {id}")));
                }
                joint_at.push(at);
                raw_parents.push(parent);
                orientation.push(o);
                joints.push(RawJoint {
                    name,
                    parent: None,
                    rest: Transform::new(tr, (o * r).normalize(), Vec3::ONE),
                });
            }
            Section::Vertices | Section::Normals | Section::Uvs => {
                let (slot, dims, what) = match kind {
                    Section::Vertices => (0, 3, "vertex"),
                    Section::Normals => (1, 3, "normal"),
                    _ => (2, 2, "uv"),
                };
                let id = t.int(&format!("a {what} id"))?;
                if item_ids[slot]
                    .insert(id, items[slot].len() / dims)
                    .is_some()
                {
                    return Err(t.err(&format!("a {what} id not used before, found {id}")));
                }
                for _ in 0..dims {
                    let v = t.f32(what)?;
                    items[slot].push(v);
                }
            }
            Section::Triangles => {
                let _id = t.int("a triangle id")?;
                let _shader = t.int("a shader id")?;
                let mut r = [(0i64, (0, 0)); 9];
                for (k, x) in r.iter_mut().enumerate() {
                    let id = t.int(["a vertex id", "a normal id", "a uv id"][k / 3])?;
                    *x = (id, t.at);
                }
                triangles.push(r);
            }
            Section::Weights => {
                let _id = t.int("a weight id")?;
                let v = t.int("a vertex id")?;
                let v_at = t.at;
                let j = t.int("a joint id")?;
                let j_at = t.at;
                let _name = t.string("a joint name")?;
                let w = t.f32("a weight")?;
                weights.push((v, v_at, j, j_at, w));
            }
        }
    }
    let n = found(
        section,
        joints.len(),
        &items,
        triangles.len(),
        weights.len(),
    );
    check_count(&t, section, count, n)?;
    if joints.is_empty() {
        return Err(t.err("a joint (ID \"NAME\" then parent, orientation, translation, rotation)"));
    }
    for (i, &p) in raw_parents.iter().enumerate() {
        if p >= 0 {
            joints[i].parent = Some(*ids.get(&p).ok_or_else(|| {
                t.err_at(
                    joint_at[i],
                    &format!(
                        "a parent id that a joint has: joint {} has parent id {p}",
                        quote(&joints[i].name)
                    ),
                )
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
    let [vid, nid, uid] = &item_ids;
    let [pos, nrm, uv] = &items;
    if !pos.is_empty() || !triangles.is_empty() || !weights.is_empty() {
        let mesh_name = ram_name
            .file_stem()
            .map_or("mesh".into(), |s| s.to_string_lossy().into_owned());
        let mut corner_of: HashMap<(usize, usize, usize), u32> = HashMap::new();
        let mut corners: Vec<(usize, usize, usize)> = Vec::new();
        let mut indices = Vec::with_capacity(triangles.len() * 3);
        for r in &triangles {
            let mut c = [[0usize; 3]; 3];
            for (k, &(id, at)) in r.iter().enumerate() {
                let (map, what) = [(vid, "vertex"), (nid, "normal"), (uid, "uv")][k / 3];
                c[k / 3][k % 3] = *map.get(&id).ok_or_else(|| {
                    t.err_at(
                        at,
                        &format!("a {what} id that exists, found {what} id {id}"),
                    )
                })?;
            }
            let [v, nn, uu] = c;
            for ((&a, &b), &d) in v.iter().zip(&nn).zip(&uu) {
                let key = (a, b, d);
                let idx = *corner_of.entry(key).or_insert_with(|| {
                    corners.push(key);
                    corners.len() as u32 - 1
                });
                indices.push(idx);
            }
        }
        let mut per_vertex: Vec<Vec<(u16, f32)>> = vec![Vec::new(); pos.len() / 3];
        for &(v, v_at, j, j_at, w) in &weights {
            let v = *vid
                .get(&v)
                .ok_or_else(|| t.err_at(v_at, &format!("a vertex id that exists, found {v}")))?;
            let j = *ids
                .get(&j)
                .ok_or_else(|| t.err_at(j_at, &format!("a joint id that exists, found {j}")))?;
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

    let mut clips = Vec::new();
    for &(raa, raa_name) in raas {
        let (clip, warned) = read_raa(raa, raa_name, fps, &ids, &orientation, &skeleton)?;
        warnings.extend(warned);
        clips.push(Arc::new(clip));
    }
    Asset::read(ram_name, skeleton, skins, meshes, clips, warnings)
}

/// One RAA text onto the skeleton a RAM made (`ids`: the RAM's joint ids to its joints,
/// `orientation`: each joint's orientation, which key rotations follow).
fn read_raa(
    raa: &str,
    raa_name: &Path,
    default_fps: f32,
    ids: &HashMap<i64, usize>,
    orientation: &[Quat],
    skeleton: &skelett::Skeleton,
) -> Result<(skelett::Clip, Vec<String>), Error> {
    let joint_of_source = skeleton.joint_of_source();
    let mut t = Tokens::new(raa, raa_name);
    let mut warnings = Vec::new();
    let mut fps = default_fps;
    if t.peek() == Some("fps") {
        t.word("fps")?;
        fps = t.f32("the frame rate")?;
        if fps <= 0.0 {
            return Err(t.err("a positive frame rate"));
        }
    }
    let mut tracks_count = None;
    let mut channels = Vec::new();
    let mut tracked = std::collections::HashSet::new();
    loop {
        if let Some((_, c)) = t.heading_line()? {
            if c.is_some() {
                tracks_count = c;
            }
            continue;
        }
        let Some(first) = t.peek() else { break };
        if first != "track" {
            t.next();
            return Err(t.err(&format!(
                "a track line (track TRACK_ID JOINT_ID \"JOINT_NAME\"), found {}",
                quote(first)
            )));
        }
        let n = t.line_len();
        t.word("track")?;
        let _tid = t.int("a track id")?;
        let jid = t.int("a joint id")?;
        let at = t.at;
        let jname = t.string("a joint name")?.to_string();
        let declared = if n == 5 {
            let c = t.int("a keyframe count")?;
            if c < 1 {
                return Err(t.err(&format!("at least one keyframe, found {c}")));
            }
            Some((c, t.at))
        } else if n != 4 {
            return Err(t.err(&format!(
                "a track line of 4 items (track TRACK_ID JOINT_ID \"JOINT_NAME\"), or 5 with \
                 a keyframe count; this one has {n}"
            )));
        } else {
            None
        };
        let j = *ids
            .get(&jid)
            .ok_or_else(|| t.err_at(at, &format!("a joint id of the RAM, found {jid}")))?;
        if !tracked.insert(j) {
            return Err(t.err_at(
                at,
                &format!("a joint without a track yet: joint id {jid} has one above"),
            ));
        }
        let joint = joint_of_source[j];
        if skeleton.name(joint) != jname {
            warnings.push(format!(
                "{}: track of joint id {jid} names {}, but that joint is {} in the RAM; the id \
                 is used",
                raa_name.display(),
                quote(&jname),
                quote(skeleton.name(joint))
            ));
        }
        let mut times: Vec<f32> = Vec::new();
        let mut values = Vec::new();
        loop {
            // The article's "Keyframes" heading may stand between a track and its keys.
            if t.peek().is_some_and(|w| heading(w).is_some()) {
                t.heading_line()?;
                continue;
            }
            if t.peek().is_none_or(|w| w == "track") {
                break;
            }
            let n = t.line_len();
            if n != 6 {
                t.next();
                return Err(t.err(&format!(
                    "a keyframe line (KEYFRAME_ID FRAME_NUMBER X Y Z W: 6 items), found {n} items"
                )));
            }
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
        if times.is_empty() {
            return Err(t.err("at least one keyframe line after the track line"));
        }
        if let Some((c, at)) = declared {
            if c != times.len() as i64 {
                return Err(t.err_at(
                    at,
                    &format!(
                        "the track's keyframe count says {c}, it has {}",
                        times.len()
                    ),
                ));
            }
        }
        channels.push(RawChannel {
            joint: skeleton.name(joint).to_string(),
            target: Target::Rotation,
            interpolation: Interpolation::Linear,
            times,
            values: RawValues::Quat(values),
        });
    }
    if let Some((c, at)) = tracks_count {
        if c != channels.len() as i64 {
            return Err(t.err_at(
                at,
                &format!("the tracks count says {c}, the file has {}", channels.len()),
            ));
        }
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
        .build(skeleton)
        .map_err(|e| Error::build(raa_name.to_path_buf(), "tracks", e))?
        .with_frame_rate(Some(fps));
    Ok((clip, warnings))
}

/// How a RAM/RAA pair is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// As the article prints it: the headings `Joint Definitions`, `Vertices`, `Normals`,
    /// `UVs`, `Triangles` and `Weights`, elements without counts, and RAA tracks as
    /// `track TRACK_ID JOINT_ID "NAME"` lines followed by their keyframe lines, with no
    /// frame rate (a reader must be told it).
    #[default]
    Article,
    /// skelett's extended layout: `joints N` and a count before each mesh section, an `fps`
    /// line, `tracks N` and a keyframe count on each track line, which a reader can check
    /// (what skelett wrote before it read the article's layout).
    Counted,
}

/// How [`save_with`] writes a RAM/RAA pair.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// The layout ([`Layout::Article`] by default).
    pub layout: Layout,
    /// The RAA's frame rate: keys are written at whole frames of it. `None`: [`DEFAULT_FPS`]
    /// (the article names no rate; its viewer's speed slider runs from 1 to 50 frames per
    /// second), which is also what a reader assumes for an RAA without an `fps` line.
    pub fps: Option<f32>,
}

impl WriteOptions {
    /// Options with `layout`.
    pub fn layout(layout: Layout) -> Self {
        Self {
            layout,
            ..Default::default()
        }
    }

    /// The same options at `fps` frames per second.
    pub fn with_fps(mut self, fps: f32) -> Self {
        self.fps = Some(fps);
        self
    }

    /// The frame rate clips are written at: [`WriteOptions::fps`] or
    /// [`DEFAULT_FPS`] (not the clip's own rate, which the article's layout could not tell a
    /// reader).
    pub fn frame_rate(&self) -> f32 {
        self.fps
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(DEFAULT_FPS)
    }
}

/// Writes an asset as a `.ram` file and, if it has a clip, its first clip beside it as a
/// `.raa` file of the same name, in the article's layout at [`DEFAULT_FPS`] ([`save_with`]
/// with the default [`WriteOptions`]), the pair [`load`] reads back.
///
/// # Errors
/// As [`save_with`].
pub fn save(asset: &Asset, ram: impl AsRef<Path>) -> Result<(), Error> {
    save_with(asset, ram, &WriteOptions::default())
}

/// Writes an asset as a `.ram` file ([`to_string_with`]) and, if it has a clip, its first
/// clip beside it as a `.raa` file of the same name ([`write_animation_with`]).
///
/// # Errors
/// [`Error::Invalid`] for an asset that breaks [`crate::validate`]'s rules (nothing is
/// written); [`Error::Io`] if a file cannot be written or would pass the output limit
/// ([`crate::max_output_bytes`]; the `.raa`'s size is estimated before anything is sampled).
pub fn save_with(
    asset: &Asset,
    ram: impl AsRef<Path>,
    options: &WriteOptions,
) -> Result<(), Error> {
    let ram = ram.as_ref();
    crate::check_for_writing(asset, ram)?;
    let raa = ram.with_extension("raa");
    let fps = options.frame_rate();
    if let Some(keys) = raa_key_count(asset, 0, fps) {
        crate::check_output_size(
            &raa,
            keys.saturating_mul(RAA_LINE_BYTES),
            &format!(
                "clip {} needs {} keyframe lines ({} joints at {fps} fps over {} s)",
                quote(asset.clips[0].name()),
                if keys == u64::MAX {
                    // Saturated: the count itself would be a made-up number.
                    format!("more than {:e}", u64::MAX as f64)
                } else {
                    keys.to_string()
                },
                asset.skeleton.len(),
                asset.clips[0].duration()
            ),
        )?;
    }
    let text = to_string_with(asset, options.layout);
    crate::check_output_size(ram, text.len() as u64, "the model")?;
    if !asset.clips.is_empty() {
        let io = |source| Error::Io {
            file: raa.clone(),
            source,
        };
        let mut file = crate::create_output(&raa).map_err(io)?;
        if let Err(e) = write_animation_with(asset, 0, fps, options.layout, &mut file) {
            // No partial file left behind.
            drop(file);
            let _ = std::fs::remove_file(&raa);
            return Err(io(e));
        }
    }
    crate::write_file(ram, text.as_bytes())
}

/// What a RAM/RAA pair written by [`save`] cannot hold of `asset` ([`losses_with`] the
/// default options).
pub fn losses(asset: &Asset) -> Vec<String> {
    losses_with(asset, &WriteOptions::default())
}

/// What a RAM/RAA pair written by [`save_with`] cannot hold of `asset`, one line each (empty
/// when nothing is lost): clips after the first, keys between whole frames (resampled),
/// a frame rate the article's layout does not store, animated translations and scales,
/// events, meshes after the first, primitives after the first, morph targets and weight
/// tracks. `skelett convert` prints them as warnings.
pub fn losses_with(asset: &Asset, options: &WriteOptions) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = asset.clips.first() {
        let fps = options.frame_rate();
        if !keys_on_frames(c, fps) {
            out.push(format!(
                "clip {:?}: keys between the whole frames of {fps} fps are resampled at those \
                 frames (RAA frame numbers are whole){}",
                c.name(),
                c.frame_rate()
                    .map(|r| format!("; the clip was made at {r} fps"))
                    .unwrap_or_default()
            ));
        }
        let (first, last) = raa_frames(c, fps);
        let on = |t: f32, f: f64| (f64::from(t) * f64::from(fps) - f).abs() < 1e-3;
        if !on(c.start(), first) || !on(c.end(), last) {
            out.push(format!(
                "clip {:?}: runs from {} s to {} s, between whole frames of {fps} fps: written \
                 from frame {first} ({} s) to frame {last} ({} s), holding its ends",
                c.name(),
                c.start(),
                c.end(),
                first / f64::from(fps),
                last / f64::from(fps)
            ));
        }
        if options.layout == Layout::Article && fps != DEFAULT_FPS {
            out.push(format!(
                "clip {:?}: written at {fps} fps, which the article's layout does not store: \
                 read it back at that rate (rite::Options::with_fps, --raa-fps {fps})",
                c.name()
            ));
        }
    }
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

/// Writes an asset as RAM text in the article's layout ([`to_string_with`]).
pub fn to_string(asset: &Asset) -> String {
    to_string_with(asset, Layout::Article)
}

/// Writes an asset as RAM text: the skeleton (orientation = rest rotation, rotation =
/// identity) and its first mesh's first primitive, if any, in `layout`.
///
/// Writes what it is given: an asset from a reader always loads again; one a program built or
/// edited should pass [`crate::validate::check`] first, as `save` does.
pub fn to_string_with(asset: &Asset, layout: Layout) -> String {
    let s = &asset.skeleton;
    let mut o = String::new();
    // A section's heading: the article's title, or skelett's keyword and count.
    let heading = |o: &mut String, title: &str, keyword: &str, n: usize| {
        let _ = match layout {
            Layout::Article => writeln!(o, "{title}"),
            Layout::Counted => writeln!(o, "{keyword} {n}"),
        };
    };
    heading(&mut o, "Joint Definitions", "joints", s.len());
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
        if layout == Layout::Article {
            let _ = writeln!(o, "Mesh Definition");
        }
        heading(&mut o, "Vertices", "vertices", n);
        for (i, v) in p.positions.iter().enumerate() {
            let _ = writeln!(o, "{i} {} {} {}", v.x, v.y, v.z);
        }
        let normals: Vec<Vec3> = p.normals.clone().unwrap_or_else(|| vec![Vec3::Y; n]);
        heading(&mut o, "Normals", "normals", n);
        for (i, v) in normals.iter().enumerate() {
            let _ = writeln!(o, "{i} {} {} {}", v.x, v.y, v.z);
        }
        let uvs: Vec<Vec2> = p.uvs.clone().unwrap_or_else(|| vec![Vec2::ZERO; n]);
        heading(&mut o, "UVs", "uvs", n);
        for (i, v) in uvs.iter().enumerate() {
            let _ = writeln!(o, "{i} {} {}", v.x, v.y);
        }
        heading(&mut o, "Triangles", "triangles", p.triangle_count());
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
        heading(&mut o, "Weights", "weights", lines.len());
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

/// At most how many keyframe lines [`animation_to_string`] writes for clip `index` at `fps`:
/// joints times frames, as if every joint were resampled at every frame (the writer writes
/// only the joints the clip turns, and keeps keys that fall on frames); `None` without that
/// clip or with a frame rate that is not positive. Check it against a budget before writing.
pub fn raa_key_count(asset: &Asset, index: usize, fps: f32) -> Option<u64> {
    let clip = asset.clips.get(index)?;
    if !(fps.is_finite() && fps > 0.0) {
        return None;
    }
    let (first, last) = raa_frames(clip, fps);
    let frames = last - first + 1.0;
    // Saturating for huge values (and infinity).
    let frames = if frames >= u64::MAX as f64 {
        u64::MAX
    } else {
        frames as u64
    };
    Some(frames.saturating_mul(asset.skeleton.len() as u64))
}

/// The whole frame numbers at `fps` a clip is written from and to: the frames at or just
/// outside its start and end, so that the frames cover the clip (a start or end within a
/// thousandth of a frame of a whole frame counts as on it). As f64: a clip too long for any
/// budget says so instead of being cut.
fn raa_frames(clip: &skelett::Clip, fps: f32) -> (f64, f64) {
    let at = |t: f32| f64::from(t) * f64::from(fps);
    let first = (at(clip.start()) + 1e-3).floor();
    let last = (at(clip.end()) - 1e-3).ceil().max(first);
    if first.is_finite() && last.is_finite() {
        (first, last)
    } else {
        (0.0, f64::INFINITY)
    }
}

/// Whether the RAA written at `fps` keeps every rotation channel's keys: LINEAR, each on its
/// own whole frame (within a thousandth of a frame). If not, the channels that are not are
/// resampled at every frame (STEP and cubic ones too, which RAA's slerp cannot hold).
pub fn keys_on_frames(clip: &skelett::Clip, fps: f32) -> bool {
    if !(fps.is_finite() && fps > 0.0) {
        return false;
    }
    let keyed = clip.decompressed();
    let mut i = 0;
    while let Some(ch) = keyed.channel(i) {
        i += 1;
        if ch.target == skelett::Target::Rotation && frames_of(&ch, fps).is_none() {
            return false;
        }
    }
    true
}

/// The whole frame numbers at `fps` of a LINEAR channel's keys, if each key falls on its own
/// frame (within a thousandth of one); `None` otherwise.
fn frames_of(ch: &skelett::ChannelView<'_>, fps: f32) -> Option<Vec<i64>> {
    if ch.interpolation != skelett::Interpolation::Linear {
        return None;
    }
    let mut out: Vec<i64> = Vec::with_capacity(ch.times.len());
    for &t in ch.times {
        let f = f64::from(t) * f64::from(fps);
        let whole = f.round();
        if (f - whole).abs() >= 1e-3 || out.last().is_some_and(|&l| l >= whole as i64) {
            return None;
        }
        out.push(whole as i64);
    }
    Some(out)
}

/// Writes clip `index` of an asset as RAA text in the article's layout: a track for each
/// joint whose rotation the clip turns or holds away from the rest pose (relative to its
/// rest rotation, the RAM's orientation), as the format carries rotations only, with whole
/// frame numbers at `fps` covering the clip: a LINEAR channel's keys where each falls on its
/// own frame, every frame resampled otherwise ([`keys_on_frames`] tells). The text has at
/// most [`raa_key_count`] keyframe lines: check that first ([`save`] refuses a `.raa` past
/// the output limit); memory is 16 bytes per resampled line.
pub fn animation_to_string(asset: &Asset, index: usize, fps: f32) -> Option<String> {
    let mut out = Vec::new();
    match write_animation_with(asset, index, fps, Layout::Article, &mut out) {
        Ok(true) => String::from_utf8(out).ok(),
        _ => None,
    }
}

/// A track's keys as written: (frame number, rotation relative to the rest rotation).
type Keys = Vec<(i64, Quat)>;

/// [`animation_to_string`] into a writer, as it is made (the text is never held whole):
/// `Ok(false)` without clip `index`.
///
/// # Errors
/// As [`write_animation_with`].
pub fn write_animation(
    asset: &Asset,
    index: usize,
    fps: f32,
    out: &mut dyn std::io::Write,
) -> std::io::Result<bool> {
    write_animation_with(asset, index, fps, Layout::Article, out)
}

/// [`write_animation`] in either layout ([`Layout::Counted`] adds the `fps` line, `tracks N`
/// and the per-track keyframe counts).
///
/// # Errors
/// The writer's; `InvalidInput` when the lines' rotations (16 bytes each) would pass
/// [`crate::max_output_bytes`] in memory.
pub fn write_animation_with(
    asset: &Asset,
    index: usize,
    fps: f32,
    layout: Layout,
    out: &mut dyn std::io::Write,
) -> std::io::Result<bool> {
    let Some(clip) = asset.clips.get(index) else {
        return Ok(false);
    };
    if !(fps.is_finite() && fps > 0.0) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("a positive frame rate is needed, not {fps}"),
        ));
    }
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
    let (first, last) = raa_frames(clip, fps);
    // Bounded above by the key count check: a clip this long was refused.
    let frames = (last - first).min((usize::MAX - 1) as f64) as usize;
    let first = first as i64;
    let inverse_rest: Vec<Quat> = s
        .rest_pose()
        .iter()
        .map(|r| r.rotation.conjugate())
        .collect();
    // A rotation relative to the rest rotation, as RAA stores it. Degenerate keys (a hostile
    // file's nearly-zero rotations) can give a rotation with no direction; the rest rotation
    // is written there, as the RAA reader refuses it.
    let relative = |j: usize, q: Quat| {
        let q = inverse_rest[j] * q;
        let l = q.length_squared();
        if l.is_finite() && l >= 1e-12 {
            q.normalize()
        } else {
            Quat::IDENTITY
        }
    };
    // The tracks: each joint whose rotation the clip animates (the article's "each animated
    // joint has its own animation track"), with its own keys where they are LINEAR and on
    // whole frames, else `None`: resampled at every frame.
    let keyed = clip.decompressed();
    let mut tracks: Vec<(usize, Option<Keys>)> = Vec::new();
    let mut i = 0;
    while let Some(ch) = keyed.channel(i) {
        i += 1;
        if ch.target != skelett::Target::Rotation {
            continue;
        }
        let j = ch.joint as usize;
        let skelett::ChannelValues::Quat(values) = ch.values else {
            continue;
        };
        let keys = frames_of(&ch, fps).map(|frames| {
            frames
                .into_iter()
                .zip(values)
                .map(|(f, &q)| (f, relative(j, q)))
                .collect::<Vec<_>>()
        });
        tracks.push((j, keys));
    }
    // Joints the clip holds at a rotation other than the rest pose's (a constant channel,
    // folded into the clip's base pose): a track holding it over the clip.
    let end = first + frames as i64;
    for (j, b) in keyed.base_pose().iter().enumerate() {
        let turned = tracks.iter().any(|t| t.0 == j);
        let rest = s.rest_pose()[j].rotation;
        if !turned && b.rotation.dot(rest).abs() < 1.0 - 1e-7 {
            let q = relative(j, b.rotation);
            let keys = if end > first {
                vec![(first, q), (end, q)]
            } else {
                vec![(first, q)]
            };
            tracks.push((j, Some(keys)));
        }
    }
    if tracks.is_empty() && n > 0 {
        // A clip that turns nothing still has a length: one track holding the root.
        tracks.push((0, None));
    }
    tracks.sort_by_key(|t| t.0);
    // The resampled tracks' rotations, frame by frame (16 bytes a line, bounded like the
    // output above; with the output limit raised past memory, refused rather than aborted).
    let resampled: Vec<usize> = tracks
        .iter()
        .filter(|t| t.1.is_none())
        .map(|t| t.0)
        .collect();
    let mut rotations: Vec<Quat> = Vec::new();
    let lines = (frames + 1).saturating_mul(resampled.len());
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
    if !resampled.is_empty() {
        let mut pose = skelett::Pose::rest(s);
        for f in 0..=frames {
            let time = ((first + f as i64) as f64 / f64::from(fps)) as f32;
            let _ = skelett::sample_uncached(clip, time, &mut pose);
            rotations.extend(resampled.iter().map(|&j| relative(j, pose[j].rotation)));
        }
    }
    let frame_time = |f: i64| (f as f64 / f64::from(fps)) as f32;
    let mut w = std::io::BufWriter::new(out);
    use std::io::Write as _;
    if layout == Layout::Counted {
        writeln!(w, "fps {fps}")?;
        writeln!(w, "tracks {}", tracks.len())?;
    }
    let mut slot = 0;
    let mut pose = skelett::Pose::rest(s);
    for (tid, (j, keys)) in tracks.iter().enumerate() {
        let keys: Vec<(i64, Quat)> = match keys {
            Some(k) => {
                // Held to the clip's first and last frames, so that the clip keeps its length.
                let mut k = k.clone();
                if k.first().is_some_and(|&(f, _)| f > first) {
                    let _ = skelett::sample_uncached(clip, frame_time(first), &mut pose);
                    k.insert(0, (first, relative(*j, pose[*j].rotation)));
                }
                let end = first + frames as i64;
                if k.last().is_some_and(|&(f, _)| f < end) {
                    let _ = skelett::sample_uncached(clip, frame_time(end), &mut pose);
                    k.push((end, relative(*j, pose[*j].rotation)));
                }
                k
            }
            None => {
                let k = (0..=frames)
                    .map(|f| (first + f as i64, rotations[f * resampled.len() + slot]))
                    .collect();
                slot += 1;
                k
            }
        };
        let name = s.name(*j as u16).replace('"', "'");
        match layout {
            Layout::Article => writeln!(w, "track {tid} {j} \"{name}\"")?,
            Layout::Counted => writeln!(w, "track {tid} {j} \"{name}\" {}", keys.len())?,
        }
        for (k, (f, q)) in keys.iter().enumerate() {
            writeln!(w, "{k} {f} {} {} {} {}", q.x, q.y, q.z, q.w)?;
        }
    }
    w.flush()?;
    Ok(true)
}

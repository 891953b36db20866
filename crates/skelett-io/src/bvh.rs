//! BVH (Biovision hierarchy) import: the motion-capture format of the CMU database and most
//! mocap studios.
//!
//! ```text
//! HIERARCHY                      ROOT / JOINT name { OFFSET x y z  CHANNELS n ...  children }
//!   ─▶ RawSkeleton               End Site { OFFSET }  ─▶ a leaf joint "<parent>_End"
//! MOTION                         Frames: N   Frame Time: dt   N lines of n floats
//!   ─▶ RawClip                   one key per frame at i·dt; LINEAR; duration (N-1)·dt
//! ```
//!
//! Rotation channels may come in any order per joint; the rotation is the product of the
//! channel rotations in the order listed (`Zrotation Yrotation Xrotation` gives `Rz·Ry·Rx`),
//! in degrees, turned into quaternion keys. Position channels give the joint's local
//! translation and replace its OFFSET (files exported from MotionBuilder put them on every
//! joint); joints without them keep the OFFSET. End Sites become leaf joints named after
//! their parent with an `_End` suffix (see [`END_SITE_SUFFIX`]), so bones can be drawn to
//! their tips.
//!
//! The parser is hand-written (no crate reads BVH well): it walks the bytes once, allocates
//! nothing per line or per value, checks every count against the file's length before
//! allocating, and reports the line and column of any problem.

use std::path::Path;
use std::sync::Arc;

use glam::{Quat, Vec3};
use skelett::{
    Interpolation, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues, Target, Transform,
};

use crate::error::quote;
use crate::{Asset, Error};

/// Suffix of the leaf joints made from End Sites (`LeftToeBase_End`).
pub const END_SITE_SUFFIX: &str = "_End";

/// Loads a `.bvh` file.
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes`].
pub fn load(path: impl AsRef<Path>) -> Result<Asset, Error> {
    let path = path.as_ref();
    let bytes = crate::read_file(path)?;
    from_bytes(&bytes, path)
}

/// Loads BVH from memory; `name` is used in errors and names the clip (its file stem).
///
/// # Errors
/// [`Error::Syntax`] with the line and column of anything that is not BVH, and
/// [`Error::Build`] if the hierarchy or motion is rejected by the runtime.
pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Asset, Error> {
    let mut p = Parser {
        file: name,
        b: bytes,
        pos: 0,
        line: 1,
        line_start: 0,
    };
    let mut joints: Vec<BvhJoint> = Vec::new();
    p.keyword("HIERARCHY")?;
    loop {
        let (tok, at) = p.token()?;
        match tok {
            b"ROOT" => p.joint(&mut joints, None, 0)?,
            b"MOTION" => break,
            _ => return Err(p.err_at(at, "ROOT or MOTION")),
        }
    }
    if joints.is_empty() {
        return Err(p.err_at(p.pos, "at least one ROOT before MOTION"));
    }
    p.keyword("Frames:")?;
    let frames = p.uint("the frame count")?;
    p.keyword("Frame")?;
    p.keyword("Time:")?;
    let frame_time = p.float("the frame time")?;
    if !(frame_time.is_finite() && frame_time > 0.0) {
        return Err(p.err_at(p.pos, &format!("a positive frame time, found {frame_time}")));
    }
    let channels: usize = joints.iter().map(|j| j.channels.len()).sum();
    let values = frames.saturating_mul(channels);
    // Every value takes at least two bytes ("0 "): a count the file cannot hold is an error
    // before anything is allocated.
    if values > (bytes.len() - p.pos) / 2 + 1 {
        return Err(p.err_at(
            p.pos,
            &format!(
                "{frames} frames of {channels} values, but the file is too short to hold them"
            ),
        ));
    }
    let mut motion = Vec::with_capacity(values);
    for i in 0..values {
        let v = p.float_or_eof(|| {
            format!(
                "frame {} of {frames}: value {} of {channels}",
                i / channels.max(1),
                i % channels.max(1)
            )
        })?;
        motion.push(v);
    }
    p.skip_ws();
    let mut asset = build(name, &joints, frames, frame_time, channels, &motion)?;
    if p.pos < bytes.len() {
        // Exporters sometimes write more frame lines than they declare; the declared count
        // wins (as in other readers), and the rest is reported.
        asset.warnings.push(format!(
            "data after the {frames} declared frames (from line {}) ignored",
            p.line
        ));
    }
    Ok(asset)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Channel {
    Pos(usize),
    Rot(usize),
}

struct BvhJoint {
    name: String,
    parent: Option<usize>,
    offset: Vec3,
    channels: Vec<Channel>,
}

struct Parser<'a> {
    file: &'a Path,
    b: &'a [u8],
    pos: usize,
    line: usize,
    line_start: usize,
}

/// Deepest joint nesting accepted (a guard against stack exhaustion on hostile files).
const MAX_DEPTH: usize = 256;

impl<'a> Parser<'a> {
    fn err_at(&self, at: usize, expected: &str) -> Error {
        // Count lines up to `at` from the last known line start when possible.
        let (mut line, mut start) = (self.line, self.line_start);
        if at < start {
            line = 1 + self.b[..at].iter().filter(|&&c| c == b'\n').count();
            start = self.b[..at]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |p| p + 1);
        }
        Error::Syntax {
            file: self.file.to_path_buf(),
            line,
            column: at.saturating_sub(start) + 1,
            expected: expected.to_string(),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if c == b'\n' {
                self.line += 1;
                self.line_start = self.pos + 1;
            } else if !c.is_ascii_whitespace() {
                break;
            }
            self.pos += 1;
        }
    }

    /// The next whitespace-separated token and its offset.
    fn token(&mut self) -> Result<(&'a [u8], usize), Error> {
        self.skip_ws();
        let start = self.pos;
        while let Some(&c) = self.b.get(self.pos) {
            if c.is_ascii_whitespace() {
                break;
            }
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err_at(start, "more input (the file ends early)"));
        }
        Ok((&self.b[start..self.pos], start))
    }

    fn keyword(&mut self, k: &str) -> Result<(), Error> {
        let (t, at) = self.token()?;
        if t != k.as_bytes() {
            return Err(self.err_at(
                at,
                &format!("{k:?}, found {}", quote(&String::from_utf8_lossy(t))),
            ));
        }
        Ok(())
    }

    fn float(&mut self, what: &str) -> Result<f32, Error> {
        let (t, at) = self.token()?;
        parse_f32(t).ok_or_else(|| {
            self.err_at(
                at,
                &format!(
                    "a number for {what}, found {}",
                    quote(&String::from_utf8_lossy(t))
                ),
            )
        })
    }

    fn float_or_eof(&mut self, what: impl Fn() -> String) -> Result<f32, Error> {
        self.skip_ws();
        if self.pos >= self.b.len() {
            return Err(self.err_at(
                self.pos,
                &format!("{} (the motion data ends early)", what()),
            ));
        }
        let (t, at) = self.token()?;
        parse_f32(t).ok_or_else(|| {
            self.err_at(
                at,
                &format!(
                    "a number for {}, found {}",
                    what(),
                    quote(&String::from_utf8_lossy(t))
                ),
            )
        })
    }

    fn uint(&mut self, what: &str) -> Result<usize, Error> {
        let (t, at) = self.token()?;
        std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .ok_or_else(|| self.err_at(at, &format!("a whole number for {what}")))
    }

    fn vec3(&mut self, what: &str) -> Result<Vec3, Error> {
        Ok(Vec3::new(
            self.float(what)?,
            self.float(what)?,
            self.float(what)?,
        ))
    }

    /// Parses a joint after its ROOT/JOINT keyword: name, `{`, OFFSET, CHANNELS, children, `}`.
    fn joint(
        &mut self,
        joints: &mut Vec<BvhJoint>,
        parent: Option<usize>,
        depth: usize,
    ) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(self.err_at(self.pos, &format!("joints nested at most {MAX_DEPTH} deep")));
        }
        let (name, _) = self.token()?;
        let name = String::from_utf8_lossy(name).into_owned();
        self.keyword("{")?;
        self.keyword("OFFSET")?;
        let offset = self.vec3("OFFSET")?;
        self.keyword("CHANNELS")?;
        let (t, at) = self.token()?;
        let n: usize = std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&n| n <= 6)
            .ok_or_else(|| self.err_at(at, "a channel count from 0 to 6"))?;
        let mut channels = Vec::with_capacity(n);
        for _ in 0..n {
            let (t, at) = self.token()?;
            let c = match t {
                b"Xposition" => Channel::Pos(0),
                b"Yposition" => Channel::Pos(1),
                b"Zposition" => Channel::Pos(2),
                b"Xrotation" => Channel::Rot(0),
                b"Yrotation" => Channel::Rot(1),
                b"Zrotation" => Channel::Rot(2),
                _ => return Err(self.err_at(at, "a channel name (Xposition ... Zrotation)")),
            };
            if channels.contains(&c) {
                return Err(self.err_at(at, "each channel once per joint"));
            }
            channels.push(c);
        }
        let me = joints.len();
        joints.push(BvhJoint {
            name,
            parent,
            offset,
            channels,
        });
        loop {
            let (t, at) = self.token()?;
            match t {
                b"JOINT" => self.joint(joints, Some(me), depth + 1)?,
                b"End" => {
                    self.keyword("Site")?;
                    self.keyword("{")?;
                    self.keyword("OFFSET")?;
                    let offset = self.vec3("the End Site's OFFSET")?;
                    self.keyword("}")?;
                    let name = format!("{}{END_SITE_SUFFIX}", joints[me].name);
                    joints.push(BvhJoint {
                        name,
                        parent: Some(me),
                        offset,
                        channels: Vec::new(),
                    });
                }
                b"}" => return Ok(()),
                _ => return Err(self.err_at(at, "JOINT, End Site or }")),
            }
        }
    }
}

/// Parses a decimal number (BVH writes `.0083333`, `-0.000000`, `1e-05`).
fn parse_f32(t: &[u8]) -> Option<f32> {
    std::str::from_utf8(t)
        .ok()?
        .parse::<f32>()
        .ok()
        .filter(|v| v.is_finite())
}

fn axis(i: usize) -> Vec3 {
    [Vec3::X, Vec3::Y, Vec3::Z][i]
}

fn build(
    name: &Path,
    joints: &[BvhJoint],
    frames: usize,
    frame_time: f32,
    stride: usize,
    motion: &[f32],
) -> Result<Asset, Error> {
    let build_err = |location: &str, source| Error::build(name.to_path_buf(), location, source);
    // Unique names: BVH files sometimes repeat one.
    let mut warnings = Vec::new();
    let mut names: Vec<String> = joints.iter().map(|j| j.name.clone()).collect();
    let tags: Vec<usize> = (0..names.len()).collect();
    crate::dedupe_names(&mut names, &tags, &mut warnings);
    let raw = RawSkeleton {
        joints: joints
            .iter()
            .zip(&names)
            .map(|(j, n)| RawJoint {
                name: n.clone(),
                parent: j.parent,
                rest: Transform::new(j.offset, Quat::IDENTITY, Vec3::ONE),
            })
            .collect(),
        ..Default::default()
    };
    let skeleton = raw.build().map_err(|e| build_err("HIERARCHY", e))?;
    let times: Vec<f32> = (0..frames).map(|i| i as f32 * frame_time).collect();
    let mut channels = Vec::new();
    let mut col = 0;
    for (j, n) in joints.iter().zip(&names) {
        let first = col;
        col += j.channels.len();
        if frames == 0 || j.channels.is_empty() {
            continue;
        }
        let value = |f: usize, c: usize| motion[f * stride + first + c];
        if j.channels.iter().any(|c| matches!(c, Channel::Pos(_))) {
            let keys = (0..frames)
                .map(|f| {
                    let mut t = j.offset;
                    for (c, ch) in j.channels.iter().enumerate() {
                        if let Channel::Pos(a) = ch {
                            t[*a] = value(f, c);
                        }
                    }
                    t
                })
                .collect();
            channels.push(RawChannel {
                joint: n.clone(),
                target: Target::Translation,
                interpolation: Interpolation::Linear,
                times: times.clone(),
                values: RawValues::Vec3(keys),
            });
        }
        if j.channels.iter().any(|c| matches!(c, Channel::Rot(_))) {
            let keys = (0..frames)
                .map(|f| {
                    let mut q = Quat::IDENTITY;
                    for (c, ch) in j.channels.iter().enumerate() {
                        if let Channel::Rot(a) = ch {
                            q *= Quat::from_axis_angle(axis(*a), value(f, c).to_radians());
                        }
                    }
                    q.normalize()
                })
                .collect();
            channels.push(RawChannel {
                joint: n.clone(),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                times: times.clone(),
                values: RawValues::Quat(keys),
            });
        }
    }
    let clip_name = name.file_stem().map_or_else(
        || "motion".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let raw_clip = RawClip {
        name: clip_name,
        start: 0.0,
        duration: frames.saturating_sub(1) as f32 * frame_time,
        channels,
    };
    let clip = raw_clip
        .build(&skeleton)
        .map_err(|e| build_err("MOTION", e))?
        .with_frame_rate(Some(crate::snap_frame_rate(1.0 / frame_time)));
    let clips = vec![Arc::new(clip)];
    Asset::read(name, skeleton, Vec::new(), Vec::new(), clips, warnings)
}

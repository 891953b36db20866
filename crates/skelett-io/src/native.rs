//! `.skl`: skelett's own binary asset file, for loading at the speed of reading bytes.
//!
//! ```text
//! "SKLT" | version u32 | payload length u64 | CRC-32 of the payload u32 | payload
//! payload (little-endian): skeleton, skins, meshes, clips, warnings, metres per unit,
//!   (version 5) each clip's frame rate (f32, NaN: none)
//!   skeleton: joints, root transform, morph channels (name, rest weight)
//!   mesh primitive: attributes, influences, indices, material, morph targets (per target:
//!         which of positions/normals/tangents it offsets, then one offset per vertex each)
//!   mesh: primitives, then the morph channel each target reads, then (version 4) the
//!         channel weight each target is full at (none when all are 1: no in-betweens)
//!   clip: kind u8 (0: keys as built, via skelett::ClipParts; 1: compact, via
//!         skelett::CompactParts: the bytes Clip::size_bytes counts, plus the clip's name,
//!         start, duration and events; (version 6) 2: compact in the seekable layout, the
//!         same fields; (version 7) 3: compact in the lanes layout, the same fields with the
//!         lanes' bytes as the data and no segments), then its data, then its morph weights (the weight of each channel
//!         no track moves; tracks: channel, interpolation, times, values)
//! ```
//!
//! Clips are stored as built (reduced keys, timelines, slerp angles) or as compressed, so
//! loading checks their invariants in one pass ([`skelett::Clip::from_parts`],
//! [`skelett::Clip::from_compact_parts`]) instead of rebuilding them. Morph targets and weight
//! tracks are stored exactly (every bit). Version 1 files (before compact clips: no kind
//! byte, no unit), version 2 files (before morph targets), version 3 files (before
//! in-between shapes), version 4 files (before frame rates), version 5 files (before
//! seekable compact clips) and version 6 files (before the lanes layout) are still read. Every count is checked against the bytes left
//! before anything is allocated; a truncated, corrupted (checksum) or newer-version file is
//! refused with the byte offset and what was expected. The format is versioned: readers refuse versions newer than theirs.

use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec2, Vec3, Vec3A, Vec4};
use skelett::compress::{CompactLayout, CompactTrack};
use skelett::{
    Clip, ClipEvent, ClipParts, CompactParts, Interpolation, MeshPrimitive, MorphChannel,
    MorphTarget, RawJoint, RawMorphTrack, RawSkeleton, Skin, SkinnedMesh, Target, TrackPart,
    Transform,
};

use crate::{Asset, Error};

/// The file's magic bytes.
pub const MAGIC: &[u8; 4] = b"SKLT";
/// The newest format version this crate reads (1 to 6 are read too) and writes: files with a
/// compact clip in the lanes layout are version 7, with a seekable one version 6, the others
/// version 5 (which they need).
pub const VERSION: u32 = 7;
const HEADER: usize = 4 + 4 + 8 + 4;

/// Writes `asset` as `.skl` bytes.
///
/// ```
/// # use std::path::Path;
/// # let bvh = "HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 3 Zrotation Xrotation Yrotation\n End Site\n {\n  OFFSET 0 1 0\n }\n}\nMOTION\nFrames: 2\nFrame Time: 0.5\n0 0 0\n0 90 0\n";
/// let asset = skelett_io::bvh::from_bytes(bvh.as_bytes(), Path::new("wave.bvh"))?;
/// let bytes = skelett_io::native::to_bytes(&asset);
/// let back = skelett_io::native::from_bytes(&bytes, Path::new("wave.skl"))?;
/// assert_eq!(back.clips[0], asset.clips[0]);
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// Writes what it is given: an asset from a reader always loads again; one a program built or
/// edited should pass [`crate::validate::check`] first, as `save` does.
pub fn to_bytes(asset: &Asset) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    let s = &asset.skeleton;
    w.u32(s.len() as u32);
    for j in 0..s.len() as u16 {
        w.str(s.name(j));
        w.u16(s.parent(j).unwrap_or(u16::MAX));
        w.transform(&s.rest_pose()[j as usize]);
    }
    w.f32s(&s.root_transform().to_cols_array());
    w.u32(s.morph_channel_count() as u32);
    for (name, &rest) in s.morph_channel_names().iter().zip(s.morph_rest()) {
        w.str(name);
        w.f32(rest);
    }
    w.u32(asset.skins.len() as u32);
    for skin in &asset.skins {
        w.str(skin.name());
        w.u32(skin.len() as u32);
        for &j in skin.joints() {
            w.u16(j);
        }
        for m in skin.inverse_bind() {
            w.f32s(&m.to_cols_array());
        }
    }
    w.u32(asset.meshes.len() as u32);
    for m in &asset.meshes {
        w.str(&m.name);
        w.u32(m.skin as u32);
        w.u32(m.primitives.len() as u32);
        for p in &m.primitives {
            w.u32(p.vertex_count() as u32);
            w.u32(p.influences as u32);
            let flags = u8::from(p.normals.is_some())
                | u8::from(p.tangents.is_some()) << 1
                | u8::from(p.uvs.is_some()) << 2
                | u8::from(p.base_color_texture.is_some()) << 3;
            w.0.push(flags);
            p.positions.iter().for_each(|v| w.f32s(&v.to_array()));
            if let Some(v) = &p.normals {
                v.iter().for_each(|v| w.f32s(&v.to_array()));
            }
            if let Some(v) = &p.tangents {
                v.iter().for_each(|v| w.f32s(&v.to_array()));
            }
            if let Some(v) = &p.uvs {
                v.iter().for_each(|v| w.f32s(&v.to_array()));
            }
            p.joints.iter().for_each(|&j| w.u16(j));
            w.f32s(&p.weights);
            w.u32(p.indices.len() as u32);
            p.indices.iter().for_each(|&i| w.u32(i));
            w.f32s(&p.base_color.to_array());
            if let Some(t) = p.base_color_texture {
                w.u32(t as u32);
            }
            w.u32(p.morph_targets.len() as u32);
            for t in &p.morph_targets {
                let attrs = [&t.positions, &t.normals, &t.tangents];
                w.0.push(
                    attrs
                        .iter()
                        .enumerate()
                        .map(|(i, a)| u8::from(a.is_some()) << i)
                        .sum(),
                );
                for v in attrs.into_iter().flatten() {
                    v.iter().for_each(|v| w.f32s(&v.to_array()));
                }
            }
        }
        w.u32(m.morph_channels.len() as u32);
        m.morph_channels.iter().for_each(|&c| w.u32(c));
        w.u32(m.morph_full_weights.len() as u32);
        w.f32s(&m.morph_full_weights);
    }
    w.u32(asset.clips.len() as u32);
    for c in &asset.clips {
        if let Some(p) = c.compact_parts() {
            w.0.push(match p.layout {
                CompactLayout::Stream => 1,
                CompactLayout::Seek => 2,
                CompactLayout::Lanes => 3,
            });
            write_compact(&mut w, &p);
            write_morph(&mut w, c);
            continue;
        }
        w.0.push(0);
        let p = c.to_parts();
        w.str(&p.name);
        w.f32(p.start);
        w.f32(p.duration);
        w.u32(p.constant_channels as u32);
        p.base.iter().for_each(|t| w.transform(t));
        w.u32(p.tracks.len() as u32);
        for t in &p.tracks {
            w.u16(t.joint);
            w.0.push(match t.target {
                Target::Translation => 0,
                Target::Rotation => 1,
                Target::Scale => 2,
            });
            w.0.push(interpolation_code(t.interpolation));
            w.u32(t.timeline);
            w.u32(t.value_start);
        }
        w.u32(p.timelines.len() as u32);
        for &(s, n) in &p.timelines {
            w.u32(s);
            w.u32(n);
        }
        w.u32(p.times.len() as u32);
        w.f32s(&p.times);
        w.u32(p.vec3s.len() as u32);
        p.vec3s.iter().for_each(|v| w.f32s(&v.to_array()));
        w.u32(p.quats.len() as u32);
        p.quats.iter().for_each(|q| w.f32s(&q.to_array()));
        p.slerp.iter().for_each(|s| w.f32s(&[s.angle, s.inv_sin]));
        w.events(&p.events);
        write_morph(&mut w, c);
    }
    w.u32(asset.warnings.len() as u32);
    asset.warnings.iter().for_each(|s| w.str(s));
    w.f32(asset.meters_per_unit.unwrap_or(f32::NAN));
    // Version 5: each clip's frame rate (NaN: none), after everything older versions have.
    for c in &asset.clips {
        w.f32(c.frame_rate().unwrap_or(f32::NAN));
    }

    let payload = w.0;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    // Versions 6 and 7 only add the seekable and the lanes clip kinds: a file without them is
    // the oldest version that reads it.
    let has = |l: CompactLayout| asset.clips.iter().any(|c| c.compact_layout() == Some(l));
    let version = if has(CompactLayout::Lanes) {
        VERSION
    } else if has(CompactLayout::Seek) {
        6
    } else {
        5
    };
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// A clip's morph weights: the weight of every channel no track moves, then the tracks
/// (channel, interpolation, key count, times, values).
fn write_morph(w: &mut Writer, c: &Clip) {
    w.f32s(c.morph_base());
    w.u32(c.morph_tracks().len() as u32);
    for t in c.morph_tracks() {
        w.u32(t.channel as u32);
        w.0.push(interpolation_code(t.interpolation));
        w.u32(t.times.len() as u32);
        w.f32s(t.times);
        w.f32s(t.values);
    }
}

fn interpolation_code(i: Interpolation) -> u8 {
    match i {
        Interpolation::Step => 0,
        Interpolation::Linear => 1,
        Interpolation::CubicSpline => 2,
    }
}

/// Components stored per compact track or constant: 4 for rotations, 3 otherwise.
fn components(target: Target) -> usize {
    if target == Target::Rotation {
        4
    } else {
        3
    }
}

/// A compact clip: name, times, then exactly what [`skelett::Clip::size_bytes`] counts (a
/// 24-byte header, the tracks, constants, segment offsets and bits), then events.
fn write_compact(w: &mut Writer, p: &CompactParts) {
    w.str(&p.name);
    w.f32(p.start);
    w.f32(p.duration);
    w.f32(p.rate);
    w.u32(p.frames);
    w.f32(p.last_span);
    w.u32(p.tracks.len() as u32);
    w.u32(p.constants.len() as u32);
    w.u32(p.data.len() as u32);
    for t in &p.tracks {
        let n = components(t.target);
        w.u16(t.joint);
        w.0.push(target_code(t.target));
        w.0.push(u8::from(t.step));
        w.0.extend_from_slice(&t.bits[..n]);
        w.f32s(&t.min[..n]);
        w.f32s(&t.scale[..n]);
        if t.target == Target::Rotation {
            w.f32(t.nlerp_dot);
        }
    }
    for (j, target, v) in &p.constants {
        w.u16(*j);
        w.0.push(target_code(*target));
        w.f32s(&v[..components(*target)]);
    }
    p.segments.iter().for_each(|&o| w.u32(o));
    w.0.extend_from_slice(&p.data);
    w.events(&p.events);
}

fn target_code(t: Target) -> u8 {
    match t {
        Target::Translation => 0,
        Target::Rotation => 1,
        Target::Scale => 2,
    }
}

/// Writes `asset` to a `.skl` file.
///
/// # Errors
/// [`Error::Invalid`] for an asset that breaks [`crate::validate`]'s rules (nothing is
/// written); [`Error::Io`] if the file cannot be written or would pass the output limit
/// ([`crate::max_output_bytes`]).
pub fn save(asset: &Asset, path: impl AsRef<Path>) -> Result<(), Error> {
    crate::check_for_writing(asset, path.as_ref())?;
    let bytes = to_bytes(asset);
    crate::check_output_size(path.as_ref(), bytes.len() as u64, "the asset")?;
    crate::write_file(path.as_ref(), &bytes)
}

/// Loads a `.skl` file.
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes`].
pub fn load(path: impl AsRef<Path>) -> Result<Asset, Error> {
    let path = path.as_ref();
    let bytes = crate::read_file(path)?;
    from_bytes(&bytes, path)
}

/// Reads `.skl` bytes.
///
/// # Errors
/// [`Error::Malformed`] with the byte offset for a wrong magic, a newer version, a
/// truncated file, a checksum mismatch or any count or value the content cannot hold;
/// [`Error::Build`] if the runtime rejects the skeleton, a skin, a mesh or a clip.
pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Asset, Error> {
    let bad = |offset: usize, expected: String| Error::Malformed {
        file: name.to_path_buf(),
        offset: offset as u64,
        expected,
    };
    if bytes.len() < HEADER {
        return Err(bad(
            bytes.len(),
            format!("a {HEADER}-byte .skl header (file is truncated)"),
        ));
    }
    if &bytes[..4] != MAGIC {
        return Err(bad(0, "the .skl magic \"SKLT\"".into()));
    }
    let version = u32::from_le_bytes(bytes[4..8].try_into().unwrap_or_default());
    if version == 0 || version > VERSION {
        return Err(bad(4, format!("format version 1 to {VERSION}; this file is version {version} (written by a newer skelett?)")));
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or_default());
    let crc = u32::from_le_bytes(bytes[16..20].try_into().unwrap_or_default());
    let payload = &bytes[HEADER..];
    if len != payload.len() as u64 {
        return Err(bad(
            8,
            format!(
                "a payload of {len} bytes as the header says, found {} (truncated or padded)",
                payload.len()
            ),
        ));
    }
    if crc32fast::hash(payload) != crc {
        return Err(bad(
            16,
            "a payload matching its CRC-32 (the file is corrupted)".into(),
        ));
    }
    let mut r = Reader {
        b: payload,
        pos: 0,
        base: HEADER,
        name,
    };
    read_asset(&mut r, version)
}

/// Values whose file form is their native form with every scalar in little-endian order.
trait LittleEndian {
    /// Swaps each scalar from little-endian to the machine's order (big-endian only).
    fn swap_from_le(&mut self);
}
impl LittleEndian for u16 {
    fn swap_from_le(&mut self) {
        *self = u16::from_le(*self);
    }
}
impl LittleEndian for u32 {
    fn swap_from_le(&mut self) {
        *self = u32::from_le(*self);
    }
}
macro_rules! float_le {
    ($($t:ty),*) => {$(
        impl LittleEndian for $t {
            fn swap_from_le(&mut self) {
                for x in bytemuck::cast_slice_mut::<$t, f32>(std::slice::from_mut(self)) {
                    *x = f32::from_bits(u32::from_le(x.to_bits()));
                }
            }
        }
    )*};
}
float_le!(f32, Vec2, Vec3, Vec4, Quat);

struct Writer(Vec<u8>);

impl Writer {
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32s(&mut self, v: &[f32]) {
        self.0.reserve(v.len() * 4);
        v.iter()
            .for_each(|x| self.0.extend_from_slice(&x.to_le_bytes()));
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn transform(&mut self, t: &Transform) {
        self.f32s(&t.translation.to_array());
        self.f32s(&t.rotation.to_array());
        self.f32s(&t.scale.to_array());
    }
    fn events(&mut self, events: &[ClipEvent]) {
        self.u32(events.len() as u32);
        for e in events {
            self.f32(e.time);
            self.str(&e.name);
            match &e.payload {
                Some(s) => {
                    self.0.push(1);
                    self.str(s);
                }
                None => self.0.push(0),
            }
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    base: usize,
    name: &'a Path,
}

impl<'a> Reader<'a> {
    fn bad(&self, expected: String) -> Error {
        Error::Malformed {
            file: self.name.to_path_buf(),
            offset: (self.base + self.pos) as u64,
            expected,
        }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        if n > self.b.len() - self.pos {
            return Err(self.bad(format!(
                "{n} bytes of {what}, but only {} remain",
                self.b.len() - self.pos
            )));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, Error> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A count of items of at least `item` bytes each, checked against what remains.
    fn count(&mut self, item: usize, what: &str) -> Result<usize, Error> {
        let n = self.u32(what)? as usize;
        let left = self.b.len() - self.pos;
        if n.saturating_mul(item) > left {
            return Err(self.bad(format!(
                "{what}: a count that fits the {left} bytes left, found {n} of {item} bytes \
                 each"
            )));
        }
        Ok(n)
    }
    fn f32(&mut self, what: &str) -> Result<f32, Error> {
        Ok(f32::from_bits(self.u32(what)?))
    }
    fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, Error> {
        self.pod(n, what)
    }
    /// `n` plain values stored little-endian, copied in bulk: on little-endian machines the
    /// file's bytes are the values' bytes, so this is a `memcpy` into a zeroed vector.
    fn pod<T: bytemuck::Pod + LittleEndian>(
        &mut self,
        n: usize,
        what: &str,
    ) -> Result<Vec<T>, Error> {
        let b = self.take(n.saturating_mul(std::mem::size_of::<T>()), what)?;
        let mut out = vec![T::zeroed(); n];
        bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(b);
        if cfg!(target_endian = "big") {
            out.iter_mut().for_each(LittleEndian::swap_from_le);
        }
        Ok(out)
    }
    fn str(&mut self, what: &str) -> Result<String, Error> {
        let n = self.count(1, what)?;
        let at = self.pos;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| Error::Malformed {
            file: self.name.to_path_buf(),
            offset: (self.base + at) as u64,
            expected: format!("UTF-8 text for {what}"),
        })
    }
    fn transform(&mut self, what: &str) -> Result<Transform, Error> {
        let v = self.f32s(10, what)?;
        Ok(Transform::new(
            Vec3::new(v[0], v[1], v[2]),
            Quat::from_xyzw(v[3], v[4], v[5], v[6]),
            Vec3::new(v[7], v[8], v[9]),
        ))
    }
}

fn read_asset(r: &mut Reader, version: u32) -> Result<Asset, Error> {
    let build = |r: &Reader, location: &str, e: skelett::Error| {
        Error::build(
            r.name.to_path_buf(),
            format!("{location} (byte {})", r.base + r.pos),
            e,
        )
    };
    let n = r.count(4 + 2 + 40, "joints")?;
    let mut joints = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.str("a joint name")?;
        let parent = r.u16("a parent index")?;
        let rest = r.transform("a rest transform")?;
        joints.push(RawJoint {
            name,
            parent: (parent != u16::MAX).then_some(parent as usize),
            rest,
        });
    }
    let root = r.f32s(16, "the root transform")?;
    let mut channels = Vec::new();
    if version >= 3 {
        for _ in 0..r.count(8, "morph channels")? {
            channels.push(MorphChannel {
                name: r.str("a morph channel name")?,
                rest: r.f32("a rest weight")?,
            });
        }
    }
    let skeleton = RawSkeleton {
        joints,
        root_transform: Mat4::from_cols_slice(&root),
    }
    .build()
    .and_then(|s| {
        if channels.is_empty() {
            Ok(s)
        } else {
            s.with_morph_channels(channels)
        }
    })
    .map_err(|e| build(r, "skeleton", e))?;
    let mut skins = Vec::new();
    for _ in 0..r.count(8, "skins")? {
        let name = r.str("a skin name")?;
        let k = r.count(2 + 64, "skin joints")?;
        let joints: Vec<u16> = (0..k)
            .map(|_| r.u16("a skin joint"))
            .collect::<Result<_, _>>()?;
        let ibm = r.f32s(k * 16, "inverse bind matrices")?;
        let skin = Skin::new(
            name,
            joints,
            ibm.chunks_exact(16).map(Mat4::from_cols_slice).collect(),
        )
        .and_then(|s| s.validate(&skeleton).map(|()| s))
        .map_err(|e| build(r, "skin", e))?;
        skins.push(skin);
    }
    let mut meshes = Vec::new();
    for _ in 0..r.count(12, "meshes")? {
        let name = r.str("a mesh name")?;
        let skin = r.u32("a skin index")? as usize;
        let mut primitives = Vec::new();
        for _ in 0..r.count(9, "primitives")? {
            let v = r.count(12, "vertices")?;
            let influences = r.u32("influences")? as usize;
            if influences == 0 || influences > 8 {
                return Err(r.bad("1 to 8 influences per vertex".into()));
            }
            let flags = r.u8("attribute flags")?;
            let m = v.saturating_mul(influences);
            // A struct literal evaluates its fields in the order written: the order `to_bytes`
            // writes them.
            primitives.push(MeshPrimitive {
                positions: r.pod(v, "positions")?,
                normals: (flags & 1 != 0).then(|| r.pod(v, "normals")).transpose()?,
                tangents: (flags & 2 != 0).then(|| r.pod(v, "tangents")).transpose()?,
                uvs: (flags & 4 != 0).then(|| r.pod(v, "uvs")).transpose()?,
                joints: r.pod(m, "joint indices")?,
                weights: r.f32s(m, "weights")?,
                indices: {
                    let ni = r.count(4, "indices")?;
                    r.pod(ni, "indices")?
                },
                base_color: Vec4::from_slice(&r.f32s(4, "the base colour")?),
                base_color_texture: (flags & 8 != 0)
                    .then(|| r.u32("a texture index").map(|t| t as usize))
                    .transpose()?,
                morph_targets: if version >= 3 {
                    r.morph_targets(v)?
                } else {
                    Vec::new()
                },
                influences,
            });
        }
        let morph_channels = if version >= 3 {
            let n = r.count(4, "morph channel indices")?;
            r.pod(n, "morph channel indices")?
        } else {
            Vec::new()
        };
        let morph_full_weights = if version >= 4 {
            let n = r.count(4, "morph full weights")?;
            r.f32s(n, "morph full weights")?
        } else {
            Vec::new()
        };
        let mesh = SkinnedMesh {
            name,
            skin,
            primitives,
            morph_channels,
            morph_full_weights,
        };
        let s = skins
            .get(skin)
            .ok_or_else(|| r.bad(format!("a skin index below {}", skins.len())))?;
        mesh.validate(s)
            .and_then(|()| mesh.validate_morph_channels(skeleton.morph_channel_count()))
            .map_err(|e| build(r, "mesh", e))?;
        meshes.push(mesh);
    }
    let mut clips = Vec::new();
    for _ in 0..r.count(16, "clips")? {
        if version >= 2 {
            match r.u8("a clip kind")? {
                0 => {}
                kind @ (1..=3) if kind == 1 || (kind == 2 && version >= 6) || version >= 7 => {
                    let layout = match kind {
                        1 => CompactLayout::Stream,
                        2 => CompactLayout::Seek,
                        _ => CompactLayout::Lanes,
                    };
                    let clip = read_compact(r, &skeleton, layout)?;
                    let clip = r.morph_tracks(clip, &skeleton, version)?;
                    clips.push(Arc::new(clip));
                    continue;
                }
                _ if version >= 7 => {
                    return Err(r.bad(
                        "a clip kind 0 (keys), 1 (compact), 2 (compact, seekable) or 3 \
                         (compact, lanes)"
                            .into(),
                    ))
                }
                _ if version >= 6 => {
                    return Err(
                        r.bad("a clip kind 0 (keys), 1 (compact) or 2 (compact, seekable)".into())
                    )
                }
                _ => return Err(r.bad("a clip kind 0 (keys) or 1 (compact)".into())),
            }
        }
        let name = r.str("a clip name")?;
        let start = r.f32("a start time")?;
        let duration = r.f32("a duration")?;
        let constant_channels = r.u32("a channel count")? as usize;
        let mut base = Vec::with_capacity(skeleton.len());
        for _ in 0..skeleton.len() {
            base.push(r.transform("the base pose")?);
        }
        let nt = r.count(12, "tracks")?;
        let mut tracks = Vec::with_capacity(nt);
        for _ in 0..nt {
            let joint = r.u16("a track joint")?;
            let target = match r.u8("a target")? {
                0 => Target::Translation,
                1 => Target::Rotation,
                2 => Target::Scale,
                _ => return Err(r.bad("a target 0, 1 or 2".into())),
            };
            let interpolation = match r.u8("an interpolation")? {
                0 => Interpolation::Step,
                1 => Interpolation::Linear,
                2 => Interpolation::CubicSpline,
                _ => return Err(r.bad("an interpolation 0, 1 or 2".into())),
            };
            let timeline = r.u32("a timeline")?;
            let value_start = r.u32("a value index")?;
            tracks.push(TrackPart {
                joint,
                target,
                interpolation,
                timeline,
                value_start,
            });
        }
        let nl = r.count(8, "timelines")?;
        let timelines = (0..nl)
            .map(|_| Ok((r.u32("a timeline start")?, r.u32("a timeline length")?)))
            .collect::<Result<Vec<_>, Error>>()?;
        let nk = r.count(4, "key times")?;
        let times = r.f32s(nk, "key times")?;
        let nv = r.count(12, "vector values")?;
        let vec3s = r
            .pod::<Vec3>(nv, "vector values")?
            .into_iter()
            .map(Vec3A::from)
            .collect();
        let nq = r.count(24, "rotation values")?;
        let quats = r.pod(nq, "rotation values")?;
        let slerp = r
            .pod::<Vec2>(nq, "slerp angles")?
            .into_iter()
            .map(|v| skelett::transform::SlerpSegment {
                angle: v.x,
                inv_sin: v.y,
            })
            .collect();
        let events = r.events()?;
        let clip = Clip::from_parts(ClipParts {
            skeleton: skeleton.id(),
            name,
            start,
            duration,
            base,
            tracks,
            timelines,
            times,
            vec3s,
            quats,
            slerp,
            events,
            constant_channels,
        })
        .map_err(|e| build(r, "clip", e))?;
        let clip = r.morph_tracks(clip, &skeleton, version)?;
        clips.push(Arc::new(clip));
    }
    let mut warnings = Vec::new();
    for _ in 0..r.count(4, "warnings")? {
        warnings.push(r.str("a warning")?);
    }
    let meters_per_unit = if version >= 2 {
        Some(r.f32("metres per unit")?).filter(|u| u.is_finite() && *u > 0.0)
    } else {
        None
    };
    if version >= 5 {
        for c in clips.iter_mut() {
            let rate = r.f32("a clip's frame rate")?;
            // The clip is not shared yet: no copy.
            Arc::make_mut(c).set_frame_rate(Some(rate));
        }
    }
    if r.pos != r.b.len() {
        return Err(r.bad("the end of the payload".into()));
    }
    let mut asset = Asset::read(r.name, skeleton, skins, meshes, clips, warnings)?;
    asset.meters_per_unit = meters_per_unit;
    Ok(asset)
}

impl Reader<'_> {
    /// A primitive's morph targets (version 3): count, then per target the attributes it
    /// has (bit 0 positions, 1 normals, 2 tangents) and `v` offsets for each.
    fn morph_targets(&mut self, v: usize) -> Result<Vec<MorphTarget>, Error> {
        let n = self.count(1, "morph targets")?;
        let mut targets = Vec::with_capacity(n);
        for _ in 0..n {
            let flags = self.u8("morph target attribute flags")?;
            if flags > 7 {
                return Err(self.bad("morph target attribute flags 0 to 7".into()));
            }
            let mut attr = |bit: u8, what: &str| {
                (flags & bit != 0)
                    .then(|| self.pod::<Vec3>(v, what))
                    .transpose()
            };
            targets.push(MorphTarget {
                positions: attr(1, "morph position offsets")?,
                normals: attr(2, "morph normal offsets")?,
                tangents: attr(4, "morph tangent offsets")?,
            });
        }
        Ok(targets)
    }

    /// A clip's morph weights (version 3, after the clip), attached by channel name: channels
    /// whose weight differs from the rest weight as one-key tracks, then the animated ones.
    fn morph_tracks(
        &mut self,
        clip: Clip,
        skeleton: &skelett::Skeleton,
        version: u32,
    ) -> Result<Clip, Error> {
        if version < 3 {
            return Ok(clip);
        }
        let names = skeleton.morph_channel_names();
        let base = self.f32s(names.len(), "morph base weights")?;
        let mut tracks = Vec::new();
        let mut animated = vec![false; names.len()];
        for _ in 0..self.count(9, "morph weight tracks")? {
            let channel = self.u32("a morph channel index")? as usize;
            let name = names
                .get(channel)
                .ok_or_else(|| self.bad(format!("a morph channel below {}", names.len())))?;
            animated[channel] = true;
            let interpolation = match self.u8("an interpolation")? {
                0 => Interpolation::Step,
                1 => Interpolation::Linear,
                2 => Interpolation::CubicSpline,
                _ => return Err(self.bad("an interpolation 0, 1 or 2".into())),
            };
            let n = self.count(4, "weight keys")?;
            let per = if interpolation == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            let times = self.f32s(n, "weight key times")?;
            let values = self.f32s(n.saturating_mul(per), "weight values")?;
            tracks.push(RawMorphTrack {
                channel: name.clone(),
                interpolation,
                times,
                values,
            });
        }
        // Channels no track animates keep a weight of their own where it is not the rest
        // weight: one-key tracks, which with_morph_tracks folds into the clip's base.
        for (c, name) in names.iter().enumerate() {
            let (b, rest) = (base[c], skeleton.morph_rest()[c]);
            if !animated[c] && b.to_bits() != rest.to_bits() {
                tracks.push(RawMorphTrack {
                    channel: name.clone(),
                    interpolation: Interpolation::Linear,
                    times: vec![0.0],
                    values: vec![b],
                });
            }
        }
        let at = format!(
            "clip {:?} morph weights (byte {})",
            clip.name(),
            self.base + self.pos
        );
        clip.with_morph_tracks(skeleton, tracks)
            .map_err(|e| Error::build(self.name.to_path_buf(), at, e))
    }

    fn events(&mut self) -> Result<Vec<ClipEvent>, Error> {
        let ne = self.count(9, "events")?;
        let mut events = Vec::with_capacity(ne);
        for _ in 0..ne {
            let time = self.f32("an event time")?;
            let name = self.str("an event name")?;
            let payload = if self.u8("a payload flag")? != 0 {
                Some(self.str("a payload")?)
            } else {
                None
            };
            events.push(ClipEvent {
                time,
                name,
                payload,
            });
        }
        Ok(events)
    }

    fn target(&mut self) -> Result<Target, Error> {
        match self.u8("a target")? {
            0 => Ok(Target::Translation),
            1 => Ok(Target::Rotation),
            2 => Ok(Target::Scale),
            _ => Err(self.bad("a target 0, 1 or 2".into())),
        }
    }
}

/// A compact clip (see [`write_compact`]), checked by [`Clip::from_compact_parts`].
fn read_compact(
    r: &mut Reader,
    skeleton: &skelett::Skeleton,
    layout: CompactLayout,
) -> Result<Clip, Error> {
    let name = r.str("a clip name")?;
    let start = r.f32("a start time")?;
    let duration = r.f32("a duration")?;
    let rate = r.f32("a grid rate")?;
    let frames = r.u32("a frame count")?;
    let last_span = r.f32("the last frame's span")?;
    let nt = r.u32("a track count")? as usize;
    let nc = r.u32("a constant count")? as usize;
    let nd = r.u32("a data length")? as usize;
    if nt.saturating_mul(31) > r.b.len() - r.pos || nc.saturating_mul(15) > r.b.len() - r.pos {
        return Err(r.bad(format!(
            "{nt} tracks and {nc} constants, more than the {} bytes left hold",
            r.b.len() - r.pos
        )));
    }
    let mut tracks = Vec::with_capacity(nt);
    for _ in 0..nt {
        let joint = r.u16("a track joint")?;
        let target = r.target()?;
        let step = r.u8("a step flag")? != 0;
        let n = components(target);
        let mut bits = [0u8; 4];
        bits[..n].copy_from_slice(r.take(n, "quantisation bits")?);
        let mut min = [0f32; 4];
        min[..n].copy_from_slice(&r.f32s(n, "quantisation minima")?);
        let mut scale = [0f32; 4];
        scale[..n].copy_from_slice(&r.f32s(n, "quantisation steps")?);
        let nlerp_dot = if target == Target::Rotation {
            r.f32("an nlerp threshold")?
        } else {
            2.0
        };
        tracks.push(CompactTrack {
            joint,
            target,
            step,
            bits,
            min,
            scale,
            nlerp_dot,
        });
    }
    let mut constants = Vec::with_capacity(nc);
    for _ in 0..nc {
        let joint = r.u16("a constant's joint")?;
        let target = r.target()?;
        let n = components(target);
        let mut v = [0f32; 4];
        v[..n].copy_from_slice(&r.f32s(n, "a constant value")?);
        constants.push((joint, target, v));
    }
    // The lanes layout has no segment offsets (its keys are in the data).
    let segments = if layout == CompactLayout::Lanes {
        0
    } else {
        frames.div_ceil(skelett::compress::SEG_LEN) as usize
    };
    if segments.saturating_mul(4) > r.b.len() - r.pos {
        return Err(r.bad(format!(
            "{segments} segment offsets for {frames} frames, more than the bytes left hold"
        )));
    }
    let offsets = (0..segments)
        .map(|_| r.u32("a segment offset"))
        .collect::<Result<Vec<_>, Error>>()?;
    let data = r.take(nd, "compressed keys")?.to_vec();
    let events = r.events()?;
    Clip::from_compact_parts(
        skeleton,
        CompactParts {
            name,
            start,
            duration,
            rate,
            frames,
            last_span,
            tracks,
            constants,
            segments: offsets,
            layout,
            data,
            events,
        },
    )
    .map_err(|e| Error::build(r.name.to_path_buf(), "compact clip", e))
}

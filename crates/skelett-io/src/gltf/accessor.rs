//! Reading glTF accessors, with every offset, stride and count checked before use.
//!
//! The `gltf` crate's own reader trusts counts and strides (it can underflow or index out of
//! range on hostile files), so skelett reads accessors itself: each element's bytes are
//! located and bounds-checked against the buffer view and the buffer, normalised integers are
//! turned into floats as the glTF specification defines, and sparse substitutions are applied.
//! The memory allocated is bounded: every decoded element is charged to a per-load budget
//! proportional to the buffers' size (see [`Reader::new`]), so a small file that references
//! its data many times, or declares huge zero-filled accessors, fails with an error instead of
//! exhausting memory.

use std::borrow::Cow;
use std::path::Path;

use gltf::accessor::{DataType, Dimensions};

use crate::Error;

/// The largest element count of an accessor that has no buffer view (all zeros).
pub(crate) const MAX_ZERO_FILLED: usize = 1 << 22;

pub(crate) struct Reader<'a, 'b> {
    file: &'a Path,
    buffers: &'a [Cow<'b, [u8]>],
    /// Bytes of decoded output still allowed for this load.
    budget: std::cell::Cell<usize>,
}

fn component_size(t: DataType) -> usize {
    match t {
        DataType::I8 | DataType::U8 => 1,
        DataType::I16 | DataType::U16 => 2,
        DataType::U32 | DataType::F32 => 4,
    }
}

fn dims(d: Dimensions) -> usize {
    match d {
        Dimensions::Scalar => 1,
        Dimensions::Vec2 => 2,
        Dimensions::Vec3 => 3,
        Dimensions::Vec4 => 4,
        Dimensions::Mat2 => 4,
        Dimensions::Mat3 => 9,
        Dimensions::Mat4 => 16,
    }
}

/// Reads one component at `b` as f32: floats as they are, normalised integers scaled to
/// [0, 1] or [-1, 1], other integers converted.
fn component(t: DataType, normalized: bool, b: &[u8]) -> f32 {
    match t {
        DataType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        DataType::U8 if normalized => b[0] as f32 / 255.0,
        DataType::I8 if normalized => (b[0] as i8 as f32 / 127.0).max(-1.0),
        DataType::U16 if normalized => u16::from_le_bytes([b[0], b[1]]) as f32 / 65535.0,
        DataType::I16 if normalized => {
            (i16::from_le_bytes([b[0], b[1]]) as f32 / 32767.0).max(-1.0)
        }
        DataType::U8 => b[0] as f32,
        DataType::I8 => b[0] as i8 as f32,
        DataType::U16 => u16::from_le_bytes([b[0], b[1]]) as f32,
        DataType::I16 => i16::from_le_bytes([b[0], b[1]]) as f32,
        DataType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32,
    }
}

fn component_u32(t: DataType, b: &[u8]) -> u32 {
    match t {
        DataType::U8 => b[0] as u32,
        DataType::U16 => u16::from_le_bytes([b[0], b[1]]) as u32,
        DataType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        DataType::I8 => b[0] as i8 as u32,
        DataType::I16 => i16::from_le_bytes([b[0], b[1]]) as u32,
        DataType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u32,
    }
}

/// Which component types an attribute accepts, and whether integers must be normalised.
#[derive(Clone, Copy)]
pub(crate) enum Accept {
    /// 32-bit floats only.
    Float,
    /// Floats or normalised integers of the listed types.
    FloatOrNormalized(&'static [DataType]),
    /// Unsigned integers of the listed types (not normalised).
    Unsigned(&'static [DataType]),
}

impl<'a, 'b> Reader<'a, 'b> {
    /// A reader over a document's buffers. The decoded output of a whole load may reach
    /// 64 MiB plus 16 times the buffers' size: generous for real files (each accessor is read
    /// about once, as f32 or u32 of at most 4 bytes per stored byte), fatal to amplification.
    pub fn new(file: &'a Path, buffers: &'a [Cow<'b, [u8]>]) -> Self {
        let total: usize = buffers.iter().map(|b| b.len()).sum();
        Self {
            file,
            buffers,
            budget: std::cell::Cell::new((64 << 20) + total.saturating_mul(16)),
        }
    }

    fn charge(&self, location: &str, bytes: usize) -> Result<(), Error> {
        let left = self.budget.get();
        if bytes > left {
            return Err(self.invalid(
                location.into(),
                format!(
                    "decoding it would exceed the load's memory budget ({left} bytes left): \
                     the file references far more data than it contains"
                ),
            ));
        }
        self.budget.set(left - bytes);
        Ok(())
    }

    fn invalid(&self, location: String, problem: String) -> Error {
        Error::Invalid {
            file: self.file.to_path_buf(),
            location,
            problem,
        }
    }

    /// Locates the bytes of a view: (slice of the buffer, stride), checked.
    pub(crate) fn view_bytes(
        &self,
        view: &gltf::buffer::View,
        location: &str,
    ) -> Result<&'a [u8], Error> {
        let buffer = &self.buffers[view.buffer().index()];
        let start = view.offset();
        let end = start
            .checked_add(view.length())
            .filter(|&e| e <= buffer.len());
        match end {
            Some(end) => Ok(&buffer[start..end]),
            None => Err(self.invalid(
                format!("{location}: bufferViews[{}]", view.index()),
                format!(
                    "bytes {start}..{} lie outside buffers[{}] of {} bytes",
                    start as u128 + view.length() as u128,
                    view.buffer().index(),
                    buffer.len()
                ),
            )),
        }
    }

    /// Reads `count` elements of `elem` bytes starting `offset` bytes into `view`, returning
    /// each element's byte slice through `f`.
    fn for_each_element(
        &self,
        view: &gltf::buffer::View,
        offset: usize,
        count: usize,
        elem: usize,
        location: &str,
        mut f: impl FnMut(&[u8]),
    ) -> Result<(), Error> {
        let bytes = self.view_bytes(view, location)?;
        let stride = view.stride().unwrap_or(elem);
        if stride < elem {
            return Err(self.invalid(
                format!("{location}: bufferViews[{}]", view.index()),
                format!("byteStride {stride} is smaller than the {elem}-byte element"),
            ));
        }
        if count == 0 {
            return Ok(());
        }
        let last = (count - 1)
            .checked_mul(stride)
            .and_then(|x| x.checked_add(offset))
            .and_then(|x| x.checked_add(elem));
        if last.is_none_or(|l| l > bytes.len()) {
            return Err(self.invalid(
                location.to_string(),
                format!(
                    "{count} elements of {elem} bytes at offset {offset} with stride {stride} \
                     overrun bufferViews[{}] of {} bytes",
                    view.index(),
                    bytes.len()
                ),
            ));
        }
        for i in 0..count {
            let at = offset + i * stride;
            f(&bytes[at..at + elem]);
        }
        Ok(())
    }

    fn check_type(
        &self,
        acc: &gltf::Accessor,
        location: &str,
        want_dims: &[usize],
        accept: Accept,
    ) -> Result<(), Error> {
        let d = dims(acc.dimensions());
        if !want_dims.contains(&d) {
            return Err(self.invalid(
                location.into(),
                format!(
                    "has {:?} elements, expected {} components",
                    acc.dimensions(),
                    want_dims
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            ));
        }
        let t = acc.data_type();
        let ok = match accept {
            Accept::Float => t == DataType::F32,
            Accept::FloatOrNormalized(ints) => {
                t == DataType::F32 || (ints.contains(&t) && acc.normalized())
            }
            Accept::Unsigned(ints) => ints.contains(&t),
        };
        if !ok {
            return Err(self.invalid(
                location.into(),
                format!(
                    "has component type {t:?}{}, which this attribute does not allow",
                    if acc.normalized() {
                        " (normalized)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Reads an accessor as flat f32 components (`count * dims` values).
    pub fn read_f32(
        &self,
        acc: &gltf::Accessor,
        location: &str,
        want_dims: &[usize],
        accept: Accept,
    ) -> Result<Vec<f32>, Error> {
        self.check_type(acc, location, want_dims, accept)?;
        let t = acc.data_type();
        let norm = acc.normalized();
        self.read(acc, location, |b, out: &mut Vec<f32>, n| {
            let cs = component_size(t);
            for c in 0..n {
                out.push(component(t, norm, &b[c * cs..]));
            }
        })
    }

    /// Reads an accessor as flat u32 components.
    pub fn read_u32(
        &self,
        acc: &gltf::Accessor,
        location: &str,
        want_dims: &[usize],
        accept: Accept,
    ) -> Result<Vec<u32>, Error> {
        self.check_type(acc, location, want_dims, accept)?;
        let t = acc.data_type();
        self.read(acc, location, |b, out: &mut Vec<u32>, n| {
            let cs = component_size(t);
            for c in 0..n {
                out.push(component_u32(t, &b[c * cs..]));
            }
        })
    }

    fn read<T: Copy + Default>(
        &self,
        acc: &gltf::Accessor,
        location: &str,
        push: impl Fn(&[u8], &mut Vec<T>, usize),
    ) -> Result<Vec<T>, Error> {
        let n = dims(acc.dimensions());
        let cs = component_size(acc.data_type());
        // Matrices of 1- and 2-byte components have column padding; skelett reads only
        // float matrices, where elements are tightly packed.
        let elem = n * cs;
        let count = acc.count();
        self.charge(
            location,
            count
                .saturating_mul(n)
                .saturating_mul(std::mem::size_of::<T>()),
        )?;
        let mut out = Vec::new();
        match acc.view() {
            Some(view) => {
                out.reserve(
                    count
                        .saturating_mul(n)
                        .min(self.view_bytes(&view, location)?.len()),
                );
                self.for_each_element(&view, acc.offset(), count, elem, location, |b| {
                    push(b, &mut out, n)
                })?;
            }
            None => {
                if count > MAX_ZERO_FILLED {
                    return Err(self.invalid(
                        location.into(),
                        format!("{count} zero-filled elements (no bufferView) exceed the limit of {MAX_ZERO_FILLED}"),
                    ));
                }
                out.resize(count * n, T::default());
            }
        }
        if let Some(sparse) = acc.sparse() {
            let sc = sparse.count();
            if sc > count {
                return Err(self.invalid(
                    format!("{location}.sparse"),
                    format!("{sc} substitutions for {count} elements"),
                ));
            }
            let idx = sparse.indices();
            let it = match idx.index_type() {
                gltf::accessor::sparse::IndexType::U8 => DataType::U8,
                gltf::accessor::sparse::IndexType::U16 => DataType::U16,
                gltf::accessor::sparse::IndexType::U32 => DataType::U32,
            };
            let mut indices = Vec::with_capacity(sc);
            let ilocation = format!("{location}.sparse.indices");
            self.for_each_element(
                &idx.view(),
                idx.offset(),
                sc,
                component_size(it),
                &ilocation,
                |b| indices.push(component_u32(it, b) as usize),
            )?;
            let mut values = Vec::with_capacity(sc * n);
            let vals = sparse.values();
            let vlocation = format!("{location}.sparse.values");
            self.for_each_element(&vals.view(), vals.offset(), sc, elem, &vlocation, |b| {
                push(b, &mut values, n)
            })?;
            for (k, &i) in indices.iter().enumerate() {
                if i >= count || (k > 0 && i <= indices[k - 1]) {
                    return Err(self.invalid(
                        ilocation,
                        format!("index {k} is {i}: indices must increase and stay below {count}"),
                    ));
                }
                out[i * n..i * n + n].copy_from_slice(&values[k * n..k * n + n]);
            }
        }
        Ok(out)
    }
}

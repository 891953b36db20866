//! The glTF container: GLB chunks or plain JSON, and the bytes of every buffer.
//!
//! The GLB header and chunks are parsed here rather than by the `gltf` crate so that every
//! length is checked against the file before it is used, and errors carry byte offsets. The
//! JSON goes to `gltf-json` (serde) and is validated by `gltf::Document`; buffers come from
//! the GLB's BIN chunk, `data:` URIs (base64) or files beside the `.gltf`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use base64::Engine;

use crate::Error;

const GLB_MAGIC: &[u8; 4] = b"glTF";
const CHUNK_JSON: u32 = 0x4E4F_534A;
const CHUNK_BIN: u32 = 0x004E_4942;

/// A parsed, validated glTF document with its buffers loaded.
pub(crate) struct Container<'a> {
    pub doc: gltf::Document,
    pub buffers: Vec<Cow<'a, [u8]>>,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Splits a GLB file into its JSON and optional BIN chunk.
fn split_glb<'a>(file: &Path, bytes: &'a [u8]) -> Result<(&'a [u8], Option<&'a [u8]>), Error> {
    let bad = |offset: usize, expected: String| Error::Malformed {
        file: file.to_path_buf(),
        offset: offset as u64,
        expected,
    };
    let version = u32_at(bytes, 4).ok_or_else(|| {
        bad(
            bytes.len(),
            "a 12-byte GLB header (file is truncated)".into(),
        )
    })?;
    if version != 2 {
        return Err(bad(4, format!("GLB version 2, found {version}")));
    }
    let total = u32_at(bytes, 8).ok_or_else(|| {
        bad(
            bytes.len(),
            "a 12-byte GLB header (file is truncated)".into(),
        )
    })? as usize;
    if total > bytes.len() {
        return Err(bad(
            8,
            format!(
                "a file of {total} bytes as the GLB header says, but it has {} (truncated)",
                bytes.len()
            ),
        ));
    }
    let bytes = &bytes[..total];
    let mut at = 12;
    let mut json = None;
    let mut bin = None;
    while at < bytes.len() {
        let (Some(len), Some(kind)) = (u32_at(bytes, at), u32_at(bytes, at + 4)) else {
            return Err(bad(at, "an 8-byte chunk header (file is truncated)".into()));
        };
        let start = at + 8;
        let end = start
            .checked_add(len as usize)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| {
                bad(
                    at,
                    format!(
                        "a chunk of {len} bytes, but only {} remain (truncated)",
                        bytes.len() - start.min(bytes.len())
                    ),
                )
            })?;
        match kind {
            CHUNK_JSON if json.is_none() && at == 12 => json = Some(&bytes[start..end]),
            CHUNK_JSON => return Err(bad(at + 4, "the JSON chunk only as the first chunk".into())),
            CHUNK_BIN if bin.is_none() && json.is_some() => bin = Some(&bytes[start..end]),
            CHUNK_BIN => return Err(bad(at + 4, "one BIN chunk, after the JSON chunk".into())),
            _ => {} // Unknown chunk types are skipped, as the specification requires.
        }
        at = end.next_multiple_of(4).max(end);
    }
    let json = json.ok_or_else(|| bad(12, "a JSON chunk first".into()))?;
    Ok((json, bin))
}

/// Parses `bytes` (GLB or JSON glTF); `base` is the folder external buffers are read from.
pub(crate) fn parse<'a>(
    file: &Path,
    bytes: &'a [u8],
    base: Option<&Path>,
) -> Result<Container<'a>, Error> {
    let (json, bin) = if bytes.starts_with(GLB_MAGIC) {
        split_glb(file, bytes)?
    } else {
        match bytes.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) if bytes[i] == b'{' => (bytes, None),
            Some(i) if i == 0 && bytes.len() >= 4 => {
                return Err(Error::Malformed {
                    file: file.to_path_buf(),
                    offset: 0,
                    expected: format!(
                        "the GLB magic \"glTF\" or a JSON object, found {:?}",
                        String::from_utf8_lossy(&bytes[..4])
                    ),
                })
            }
            _ => {
                return Err(Error::Malformed {
                    file: file.to_path_buf(),
                    offset: 0,
                    expected: "the GLB magic \"glTF\" or a JSON object".into(),
                })
            }
        }
    };
    let root = gltf::json::Root::from_slice(json).map_err(|e| Error::Syntax {
        file: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        expected: format!("valid glTF JSON: {e}"),
    })?;
    check_unvalidated(file, &root)?;
    // The `gltf` crate's validation has indexed unchecked before (see `check_unvalidated`);
    // should another such path remain, a panic there becomes an error, not a crash.
    let doc = std::panic::catch_unwind(move || gltf::Document::from_json(root))
        .map_err(|_| Error::Invalid {
            file: file.to_path_buf(),
            location: "document".into(),
            problem: "the glTF validator failed on this document (malformed references)".into(),
        })?
        .map_err(|e| invalid_doc(file, e))?;

    let mut buffers = Vec::new();
    // External buffers count against the input limit together with the file itself.
    let mut read = bytes.len() as u64;
    for buffer in doc.buffers() {
        let location = format!("buffers[{}]", buffer.index());
        let invalid = |problem: String| Error::Invalid {
            file: file.to_path_buf(),
            location: location.clone(),
            problem,
        };
        if matches!(buffer.source(), gltf::buffer::Source::Uri(u) if !u.starts_with("data:")) {
            read = read.saturating_add(buffer.length() as u64);
            if read > crate::max_input_bytes() {
                return Err(invalid(format!(
                    "declares {} bytes, which with the file and the buffers before it is \
                     above the input limit of {} bytes (skelett's --max-input-mb raises it)",
                    buffer.length(),
                    crate::max_input_bytes()
                )));
            }
        }
        let data: Cow<'a, [u8]> =
            match buffer.source() {
                gltf::buffer::Source::Bin => Cow::Borrowed(bin.ok_or_else(|| {
                    invalid("refers to the GLB BIN chunk, which is missing".into())
                })?),
                gltf::buffer::Source::Uri(uri) => {
                    Cow::Owned(read_uri(base, uri, buffer.length(), &invalid)?)
                }
            };
        if data.len() < buffer.length() {
            return Err(invalid(format!(
                "declares {} bytes but its data has {} (truncated)",
                buffer.length(),
                data.len()
            )));
        }
        buffers.push(data);
    }
    Ok(Container { doc, buffers })
}

/// The bytes of a buffer URI: a base64 `data:` URI, or a file beside the `.gltf`. External
/// files must be regular files inside the glTF's folder (no absolute paths, no `..`, no
/// other schemes), and only the `length` bytes the buffer declares are read, so a URI cannot
/// reach elsewhere on the machine, block on a device or pipe, or read without bound.
fn read_uri(
    base: Option<&Path>,
    uri: &str,
    length: usize,
    invalid: &dyn Fn(String) -> Error,
) -> Result<Vec<u8>, Error> {
    if let Some(rest) = uri.strip_prefix("data:") {
        let (meta, data) = rest
            .split_once(',')
            .ok_or_else(|| invalid("data URI without a comma".into()))?;
        if !meta.ends_with(";base64") {
            return Err(invalid(format!("data URI is not base64 ({meta:?})")));
        }
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| invalid(format!("data URI is not valid base64: {e}")));
    }
    let base = base.ok_or_else(|| {
        invalid(format!(
            "refers to the external file {uri:?}, but the glTF was given as bytes without a folder"
        ))
    })?;
    let decoded = percent_decode(uri);
    let relative = Path::new(&decoded);
    let safe = !decoded.contains(':')
        && relative.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
    if !safe {
        return Err(invalid(format!(
            "external buffer {uri:?} must be a relative path inside the glTF's folder"
        )));
    }
    let path: PathBuf = base.join(relative);
    let io = |source| Error::Io {
        file: path.clone(),
        source,
    };
    let meta = std::fs::metadata(&path).map_err(io)?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "external buffer {uri:?} is not a regular file"
        )));
    }
    let mut data = Vec::with_capacity(length.min(meta.len() as usize));
    use std::io::Read;
    std::fs::File::open(&path)
        .map_err(io)?
        .take(length as u64)
        .read_to_end(&mut data)
        .map_err(io)?;
    Ok(data)
}

/// Decodes `%XX` escapes in a relative URI.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks what `gltf::Document::from_json` leaves unchecked but the `gltf` crate then indexes
/// or unwraps (both found by fuzzing): animation channel targets (node index and path), and
/// mesh attribute accessor indices (its validation looks up POSITION's accessor unchecked).
fn check_unvalidated(file: &Path, root: &gltf::json::Root) -> Result<(), Error> {
    use gltf::json::validation::Checked;
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (p, prim) in mesh.primitives.iter().enumerate() {
            for (semantic, index) in &prim.attributes {
                if index.value() >= root.accessors.len() {
                    let name = match semantic {
                        Checked::Valid(s) => s.to_string(),
                        Checked::Invalid => "?".into(),
                    };
                    return Err(Error::Invalid {
                        file: file.to_path_buf(),
                        location: format!("meshes[{m}].primitives[{p}].attributes.{name}"),
                        problem: format!(
                            "accessor {} does not exist ({} accessors)",
                            index.value(),
                            root.accessors.len()
                        ),
                    });
                }
            }
        }
    }
    for (a, anim) in root.animations.iter().enumerate() {
        for (c, ch) in anim.channels.iter().enumerate() {
            let location = format!("animations[{a}].channels[{c}].target");
            if ch.target.node.value() >= root.nodes.len() {
                return Err(Error::Invalid {
                    file: file.to_path_buf(),
                    location,
                    problem: format!(
                        "node {} does not exist ({} nodes)",
                        ch.target.node.value(),
                        root.nodes.len()
                    ),
                });
            }
            if let Checked::Invalid = ch.target.path {
                return Err(Error::Invalid {
                    file: file.to_path_buf(),
                    location,
                    problem: "path must be translation, rotation, scale or weights".into(),
                });
            }
        }
    }
    Ok(())
}

fn invalid_doc(file: &Path, e: gltf::Error) -> Error {
    match e {
        gltf::Error::Validation(errors) => {
            let (path, first) = errors
                .first()
                .map(|(p, e)| (p.to_string(), e.to_string()))
                .unwrap_or_default();
            let more = if errors.len() > 1 {
                format!(" (and {} more problems)", errors.len() - 1)
            } else {
                String::new()
            };
            Error::Invalid {
                file: file.to_path_buf(),
                location: path,
                problem: format!("{first}{more}"),
            }
        }
        other => Error::Invalid {
            file: file.to_path_buf(),
            location: "document".into(),
            problem: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b.bin"), "a b.bin");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("x%2"), "x%2");
    }
}

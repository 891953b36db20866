//! The compressed forms of `.x` (`tzip`, `bzip`): MSZIP blocks inflated back to the text or
//! binary body they hold.
//!
//! ```text
//! bytes 0..16   "xof 0303bzip0032" (or tzip)
//! u32           size of the whole file once decompressed, its 16-byte header included
//! per block:    u16 decompressed size (at most 32768), u16 compressed size (with "CK"),
//!               "CK", raw DEFLATE (RFC 1951) ending in a final block
//! ```
//!
//! As in Microsoft's CAB format, a block may copy from the 32 KB the blocks before it
//! produced, so every block is inflated into the one output buffer after them (miniz_oxide's
//! decoder, told that the output does not wrap, reaches back across the block boundary).
//! The decompressed body is the file without its header: text from its first token for
//! `tzip`, the binary token stream for `bzip`. Every size is checked: a block must inflate to
//! exactly the size its header gives, and all blocks to the size the file gives, which may
//! pass neither the input limit nor [`MAX_RATIO`] times the compressed file's size: DEFLATE
//! can unpack a thousandfold, and a few megabytes must not become gigabytes (real `.x` files
//! compress 3 to 10 times).

use std::path::Path;

use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use crate::Error;

/// The largest block MSZIP writes.
const MAX_BLOCK: usize = 32 * 1024;

/// How many times its own size a compressed file may unpack to (with at least
/// [`MIN_ALLOWANCE`] bytes allowed whatever its size).
pub(super) const MAX_RATIO: u64 = 64;

/// What any compressed file may unpack to, however small.
const MIN_ALLOWANCE: u64 = 16 << 20;

/// Inflates the blocks of a compressed `.x` file (`bytes` is the whole file, header included).
pub(super) fn inflate(bytes: &[u8], file: &Path) -> Result<Vec<u8>, Error> {
    let bad = |offset: usize, expected: String| Error::Malformed {
        file: file.to_path_buf(),
        offset: offset as u64,
        expected,
    };
    let Some(size) = bytes.get(16..20) else {
        return Err(bad(
            16,
            "the decompressed size (4 bytes) after the header".into(),
        ));
    };
    let total = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as u64;
    let limit = crate::max_input_bytes().min(
        (bytes.len() as u64)
            .saturating_mul(MAX_RATIO)
            .max(MIN_ALLOWANCE),
    );
    let Some(want) = total.checked_sub(16).filter(|&w| total <= limit && w > 0) else {
        return Err(bad(
            16,
            format!(
                "a decompressed size from 17 bytes to {limit} bytes (the input limit, or \
                 {MAX_RATIO} times the file's size), found {total}"
            ),
        ));
    };
    let want = want as usize;
    let mut out: Vec<u8> = Vec::new();
    let mut decoder = Box::<DecompressorOxide>::default();
    let mut pos = 20;
    let mut block = 0usize;
    while pos < bytes.len() {
        let Some(h) = bytes.get(pos..pos + 6) else {
            return Err(bad(
                pos,
                format!(
                    "block {block}'s header (two sizes and \"CK\", 6 bytes; {} left)",
                    bytes.len() - pos
                ),
            ));
        };
        let unpacked = usize::from(u16::from_le_bytes([h[0], h[1]]));
        let packed = usize::from(u16::from_le_bytes([h[2], h[3]]));
        if unpacked == 0 || unpacked > MAX_BLOCK {
            return Err(bad(
                pos,
                format!("block {block}'s decompressed size, 1 to {MAX_BLOCK}, found {unpacked}"),
            ));
        }
        if &h[4..6] != b"CK" {
            return Err(bad(
                pos + 4,
                format!("block {block}'s MSZIP signature \"CK\""),
            ));
        }
        let end = pos + 4 + packed;
        if packed < 2 || end > bytes.len() {
            return Err(bad(
                pos + 2,
                format!(
                    "block {block}'s compressed size, 2 to the {} bytes left, found {packed}",
                    bytes.len() - pos - 4
                ),
            ));
        }
        if out.len() + unpacked > want {
            return Err(bad(
                pos,
                format!(
                    "blocks that decompress to the {want} bytes the file gives; block {block} \
                     would bring them to {}",
                    out.len() + unpacked
                ),
            ));
        }
        let start = out.len();
        out.resize(start + unpacked, 0);
        decoder.init();
        let (status, _, written) = decompress(
            &mut decoder,
            &bytes[pos + 6..end],
            &mut out,
            start,
            inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        );
        if status != TINFLStatus::Done || written != unpacked {
            let why = match status {
                TINFLStatus::Done => format!("ended after {written} bytes"),
                TINFLStatus::HasMoreOutput => "holds more than that".into(),
                TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                    format!("is cut short after {written} bytes")
                }
                _ => format!("is not valid DEFLATE data after {written} bytes"),
            };
            return Err(bad(
                pos + 6,
                format!("block {block} to inflate to {unpacked} bytes; it {why}"),
            ));
        }
        pos = end;
        block += 1;
    }
    if out.len() != want {
        return Err(bad(
            bytes.len(),
            format!(
                "blocks that decompress to the {want} bytes the file gives, found {} (the file \
                 ends early?)",
                out.len()
            ),
        ));
    }
    Ok(out)
}

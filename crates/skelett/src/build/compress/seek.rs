//! The seekable layout ([`CompactLayout::Seek`], format in `clip/compact.rs`) made from a
//! compact clip in the streamed layout: every segment's keys decoded to their integers, then
//! written again as offsets from the segment's smallest integer in fixed widths. The keys,
//! their frames, the dropped components and the quantisation stay as they are, so the clip
//! samples the same bits in either layout and the compressor's error measurement holds for
//! both.
//!
//! Its data goes to [`crate::compress::compress`] (the `layout` option) and to
//! [`crate::Clip::with_compact_layout`]; `play/sampling/compact_seek.rs` reads it.

use glam::IVec4;

use super::encode::{self, zigzag, Bits};
use crate::clip::compact::{stored, Compact, CompactLayout, SegHeader, SEG_LEN};
use crate::play::sampling::compact::SegDecoder;
use crate::play::sampling::compact_seek::SeekTrack;
use crate::Target;

/// Bits an unsigned integer up to `v` needs (0 for 0), as a header stores it.
fn width(v: u32) -> u8 {
    encode::width(v) as u8
}

/// `c` in `layout`: a copy when it already is; `None` when the seekable data would pass
/// the 2^32 bits a compact clip can index, or from the lanes layout to another.
pub(crate) fn relayout(c: &Compact, layout: CompactLayout) -> Option<Compact> {
    if c.layout == layout {
        return Some(c.clone());
    }
    let data = match (c.layout, layout) {
        (CompactLayout::Stream, CompactLayout::Seek) => seek_from_stream(c),
        (CompactLayout::Seek, CompactLayout::Stream) => stream_from_seek(c),
        (CompactLayout::Stream, CompactLayout::Lanes) => return super::lanes::lanes_from_stream(c),
        (CompactLayout::Seek, CompactLayout::Lanes) => {
            return super::lanes::lanes_from_stream(&relayout(c, CompactLayout::Stream)?)
        }
        // The lanes layout's values are rounded: the streams cannot be rebuilt from them.
        _ => return None,
    }?;
    let (segments, bits) = data;
    Some(Compact::new(
        layout,
        c.rate,
        c.frames,
        c.last_span,
        c.tracks.to_vec(),
        c.constants.to_vec(),
        segments,
        bits.into_padded_bytes(),
    ))
}

/// The seekable layout's segments and bits from `c`'s streamed data: each track's keys in each
/// segment decoded to integers, then written as offsets from their smallest.
fn seek_from_stream(c: &Compact) -> Option<(Vec<u32>, Bits)> {
    let limit = u64::from(u32::MAX) - 64;
    let mut bits = Bits::default();
    let mut segments = Vec::with_capacity(c.segments.len());
    let mut keys: Vec<(u32, IVec4)> = Vec::with_capacity(SEG_LEN as usize);
    for s in 0..c.segment_count() {
        segments.push(bits.len as u32);
        let mut pos = c.segments[s as usize];
        for tr in c.tracks.iter() {
            // Past what a compact clip indexes: refused (and not written further).
            if bits.len > limit {
                return None;
            }
            let rot = tr.target == Target::Rotation;
            let (header, _) = SegHeader::read(&c.data, pos, rot);
            let (mut dec, first) = SegDecoder::start(c, tr, s, pos);
            pos += c.track_bits(tr, s, pos);
            keys.clear();
            keys.push((0, IVec4::from_array(first.q)));
            while let Some(k) = dec.next(c) {
                keys.push((k.frame - s * SEG_LEN, IVec4::from_array(k.q)));
            }
            let (lanes, n) = stored(header.drop);
            let lo = keys.iter().fold(IVec4::MAX, |m, k| m.min(k.1));
            let hi = keys.iter().fold(IVec4::MIN, |m, k| m.max(k.1));
            let mut out = header;
            out.order2 = false;
            for k in 0..4 {
                out.widths[k] = if k < n {
                    width((hi[lanes[k]] - lo[lanes[k]]) as u32)
                } else {
                    0
                };
            }
            let (h, hb) = out.bits(rot);
            bits.push(h, hb);
            if out.sparse {
                let mask = keys[1..].iter().fold(0u32, |m, &(f, _)| m | 1 << (f - 1));
                bits.push(mask, c.segment_len(s) - 1);
            }
            for k in 0..n {
                bits.push(lo[lanes[k]] as u32, u32::from(tr.bits[lanes[k]]));
            }
            for &(_, q) in &keys {
                for k in 0..n {
                    bits.push(
                        (q[lanes[k]] - lo[lanes[k]]) as u32,
                        u32::from(out.widths[k]),
                    );
                }
            }
        }
    }
    (bits.len <= limit).then_some((segments, bits))
}

/// Back to the streamed layout: each track's keys in each segment as order-1 residuals (the
/// encoder also weighs order 2, which can be smaller; the keys are the same either way).
fn stream_from_seek(c: &Compact) -> Option<(Vec<u32>, Bits)> {
    let mut bits = Bits::default();
    let mut keys: Vec<IVec4> = Vec::with_capacity(SEG_LEN as usize);
    let mut segments = Vec::with_capacity(c.segments.len());
    for s in 0..c.segment_count() {
        segments.push(bits.len as u32);
        let len = c.segment_len(s);
        let mut pos = c.segments[s as usize];
        for tr in c.tracks.iter() {
            let rot = tr.target == Target::Rotation;
            let open = SeekTrack::open(c, tr, s, pos);
            pos += open.bits;
            keys.clear();
            keys.extend((0..open.count).map(|k| open.key(&c.data, k)));
            let (lanes, n) = stored(open.drop);
            let mut widest = [0u32; 4];
            for pair in keys.windows(2) {
                for k in 0..n {
                    widest[k] = widest[k].max(zigzag(pair[1][lanes[k]] - pair[0][lanes[k]]));
                }
            }
            let header = SegHeader {
                sparse: open.count < len,
                order2: false,
                drop: open.drop,
                negative: open.negative,
                widths: widest.map(width),
            };
            let (h, hb) = header.bits(rot);
            bits.push(h, hb);
            if header.sparse {
                bits.push(open.mask, len - 1);
            }
            for k in 0..n {
                bits.push(keys[0][lanes[k]] as u32, u32::from(tr.bits[lanes[k]]));
            }
            for pair in keys.windows(2) {
                for k in 0..n {
                    let r = zigzag(pair[1][lanes[k]] - pair[0][lanes[k]]);
                    bits.push(r, u32::from(header.widths[k]));
                }
            }
        }
    }
    (bits.len <= u64::from(u32::MAX) - 64).then_some((segments, bits))
}

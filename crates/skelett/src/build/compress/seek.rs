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

use super::encode::Bits;
use crate::clip::compact::{stored, Compact, CompactLayout, SegHeader};
use crate::play::sampling::compact::SegDecoder;
use crate::play::sampling::compact_seek::SeekTrack;
use crate::Target;

/// Bits an unsigned integer up to `v` needs (0 for 0).
fn width(v: u32) -> u8 {
    (32 - v.leading_zeros()) as u8
}

/// `c` in `layout`: a copy when it already is; `None` when the seekable data would pass
/// the 2^32 bits a compact clip can index.
pub(crate) fn relayout(c: &Compact, layout: CompactLayout) -> Option<Compact> {
    if c.layout == layout {
        return Some(c.clone());
    }
    let data = match layout {
        CompactLayout::Seek => seek_from_stream(c),
        CompactLayout::Stream => stream_from_seek(c),
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

/// The keys of one track in one segment, as the decoder of either layout returns them.
struct SegmentKeys {
    header: SegHeader,
    /// Frame within the segment and integers, per key (the first at frame 0).
    keys: Vec<(u32, IVec4)>,
}

/// Every (segment, track) of `c`'s streamed data, decoded; `begin` before each segment.
fn decode_stream(
    c: &Compact,
    mut begin: impl FnMut(),
    mut each: impl FnMut(u32, usize, SegmentKeys),
) {
    for s in 0..c.segment_count() {
        begin();
        let mut pos = c.segments[s as usize];
        for (i, tr) in c.tracks.iter().enumerate() {
            let rot = tr.target == Target::Rotation;
            let (header, _) = SegHeader::read(&c.data, pos, rot);
            let (mut dec, first) = SegDecoder::start(c, tr, s, pos);
            pos += c.track_bits(tr, s, pos);
            let first_frame = s * crate::clip::compact::SEG_LEN;
            let mut keys = vec![(0, IVec4::from_array(first.q))];
            while let Some(k) = dec.next(c) {
                keys.push((k.frame - first_frame, IVec4::from_array(k.q)));
            }
            each(s, i, SegmentKeys { header, keys });
        }
    }
}

fn seek_from_stream(c: &Compact) -> Option<(Vec<u32>, Bits)> {
    let bits = std::cell::RefCell::new(Bits::default());
    let mut segments = Vec::with_capacity(c.segments.len());
    let mut overflow = false;
    let begin = || {
        let len = bits.borrow().len;
        overflow |= len > u64::from(u32::MAX) - 64;
        segments.push(len as u32);
    };
    decode_stream(c, begin, |s, i, seg| {
        let mut bits = bits.borrow_mut();
        // Past what a compact clip indexes: stop writing (the result is refused below).
        if bits.len > u64::from(u32::MAX) - 64 {
            return;
        }
        let tr = &c.tracks[i];
        let rot = tr.target == Target::Rotation;
        let (lanes, n) = stored(seg.header.drop);
        let lo = seg.keys.iter().fold(IVec4::MAX, |m, k| m.min(k.1));
        let hi = seg.keys.iter().fold(IVec4::MIN, |m, k| m.max(k.1));
        let mut header = seg.header;
        header.order2 = false;
        for k in 0..4 {
            header.widths[k] = if k < n {
                width((hi[lanes[k]] - lo[lanes[k]]) as u32)
            } else {
                0
            };
        }
        let (h, hb) = header.bits(rot);
        bits.push(h, hb);
        if header.sparse {
            let len = c.segment_len(s);
            let mask = seg.keys[1..]
                .iter()
                .fold(0u32, |m, &(f, _)| m | 1 << (f - 1));
            bits.push(mask, len - 1);
        }
        for k in 0..n {
            bits.push(lo[lanes[k]] as u32, u32::from(tr.bits[lanes[k]]));
        }
        for &(_, q) in &seg.keys {
            for k in 0..n {
                bits.push(
                    (q[lanes[k]] - lo[lanes[k]]) as u32,
                    u32::from(header.widths[k]),
                );
            }
        }
    });
    let bits = bits.into_inner();
    (!overflow && bits.len <= u64::from(u32::MAX) - 64).then_some((segments, bits))
}

/// Back to the streamed layout: each track's keys in each segment as order-1 residuals (the
/// encoder also weighs order 2, which can be smaller; the keys are the same either way).
fn stream_from_seek(c: &Compact) -> Option<(Vec<u32>, Bits)> {
    let zigzag = |v: i32| ((v << 1) ^ (v >> 31)) as u32;
    let mut bits = Bits::default();
    let mut segments = Vec::with_capacity(c.segments.len());
    for s in 0..c.segment_count() {
        segments.push(bits.len as u32);
        let len = c.segment_len(s);
        let mut pos = c.segments[s as usize];
        for tr in c.tracks.iter() {
            let rot = tr.target == Target::Rotation;
            let open = SeekTrack::open(c, tr, s, pos);
            pos += open.bits;
            let keys: Vec<IVec4> = (0..open.count).map(|k| open.key(&c.data, k)).collect();
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

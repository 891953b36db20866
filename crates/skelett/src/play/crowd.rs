//! Updating many characters in turn: asking the CPU to load the next character's state
//! while the current one is updated.
//!
//! One character's update reads and writes a few kilobytes of its own (the animator's
//! layers, players and sampling caches, its local pose, the model matrices and the skinning
//! palette), spread over several heap blocks; the clips and the skeleton are shared and stay
//! in the caches. In a crowd of a thousand characters that own state has left the nearest
//! caches by the time the character's turn comes again, and an update waits on each block
//! in turn, since which block comes next is only known from the one before (the layers
//! name the slots, the slots the caches).
//! [`Animator::prefetch`](crate::animator::Animator::prefetch) starts all those loads at
//! once, from a list the animator keeps inline of the blocks its next update will touch
//! (noted at the end of each update);
//! [`prefetch`] does the same for a slice (the model matrices, the palette), and
//! [`for_each_prefetched`] runs a loop that prefetches item `i + 1` before it updates item
//! `i`. A prefetch is a hint: it changes no result (a test compares the bits), never faults
//! (x86's prefetch instructions do not, even on addresses no longer mapped), and costs a
//! few instructions per 64-byte line; on other targets it does nothing.
//!
//! ```text
//! for_each_prefetched(crowd):  prefetch(crowd[i + 1])  ─▶  update(crowd[i])  ─▶  i + 1
//!                              (animator's blocks, model, palette: loads start)
//! ```
//!
//! ozz-animation leaves this to its users; the `crowd_1024_prefetch` rows of
//! `benches/animator.rs` measure what it saves beside the plain loop.
//!
//! ```
//! use std::sync::Arc;
//! use glam::Mat4;
//! use skelett::*;
//! use skelett::animator::{Animator, PlayOptions};
//! # let skeleton = Arc::new(RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
//! #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap());
//! # let clip = Arc::new(RawClip { name: "walk".into(), start: 0.0, duration: 1.0,
//! #     channels: vec![RawChannel { joint: "root".into(), target: Target::Translation,
//! #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
//! #     values: RawValues::Vec3(vec![glam::Vec3::ZERO, glam::Vec3::X]) }] }.build(&skeleton).unwrap());
//! struct Character {
//!     animator: Animator,
//!     model: Vec<Mat4>,
//! }
//! let mut crowd: Vec<Character> = (0..100)
//!     .map(|_| {
//!         let mut animator = Animator::new(skeleton.clone());
//!         animator.play(0, clip.clone(), PlayOptions::default()).unwrap();
//!         Character { animator, model: vec![Mat4::IDENTITY; skeleton.len()] }
//!     })
//!     .collect();
//! crowd::for_each_prefetched(
//!     &mut crowd,
//!     |next| {
//!         next.animator.prefetch();
//!         crowd::prefetch(&next.model);
//!     },
//!     |c| {
//!         c.animator.update(1.0 / 60.0);
//!         local_to_model(&skeleton, c.animator.pose(), 0, &mut c.model).unwrap();
//!     },
//! );
//! # assert!(crowd.iter().all(|c| c.model[0].w_axis.x > 0.0));
//! ```
//!
//! With rayon, prefetch within each thread's share:
//! `crowd.par_chunks_mut(64).for_each(|c| crowd::for_each_prefetched(c, prefetch, update))`.

/// The most bytes one call of [`prefetch`] (and each block an animator lists) asks for: 256
/// lines of 64 bytes (257 where they do not start on a line). A character's buffers are a
/// few kilobytes; a prefetch of more would evict what it was meant to keep.
pub const PREFETCH_MAX_BYTES: usize = 16 * 1024;

/// Asks the CPU to load the memory of `data` (its first [`PREFETCH_MAX_BYTES`]) into the
/// caches, ahead of the code that will read or write it. Changes nothing; a no-op on targets
/// other than x86-64.
///
/// ```
/// let palette = vec![glam::Mat4::IDENTITY; 64];
/// skelett::crowd::prefetch(&palette);
/// ```
pub fn prefetch<T>(data: &[T]) {
    prefetch_bytes(data.as_ptr() as usize, std::mem::size_of_val(data));
}

/// Calls `update` on every item in order, and `prefetch` on each item but the first just
/// before `update` on the item before it, so that the next item's memory is on its way while
/// the current one is updated (see the [module docs](self)).
///
/// ```
/// let mut xs = vec![1, 2, 3];
/// let mut seen = vec![];
/// skelett::crowd::for_each_prefetched(&mut xs, |_| {}, |x| {
///     *x *= 10;
///     seen.push(*x);
/// });
/// assert_eq!(seen, [10, 20, 30]);
/// ```
pub fn for_each_prefetched<T>(
    items: &mut [T],
    prefetch: impl Fn(&T),
    mut update: impl FnMut(&mut T),
) {
    for i in 0..items.len() {
        if let Some(next) = items.get(i + 1) {
            prefetch(next);
        }
        update(&mut items[i]);
    }
}

/// The prefetch of `bytes` (at most [`PREFETCH_MAX_BYTES`]) from address `addr`, one
/// instruction per 64-byte line. The address is only a number here: it may name memory
/// freed since it was noted (an animator's list from its last update), which a prefetch
/// reads nothing from.
#[inline]
pub(crate) fn prefetch_bytes(addr: usize, bytes: usize) {
    let (first, lines) = line_span(addr, bytes);
    prefetch_lines(first, lines);
}

/// The first 64-byte line of `bytes` bytes from `addr` (at most [`PREFETCH_MAX_BYTES`]),
/// and how many lines they touch (0 for none). The last byte's address saturates at the top
/// of the address space, so the count never wraps, and `first + 64 (lines - 1)` never
/// overflows.
#[inline]
fn line_span(addr: usize, bytes: usize) -> (usize, usize) {
    let bytes = bytes.min(PREFETCH_MAX_BYTES);
    if bytes == 0 {
        return (addr & !63, 0);
    }
    let first = addr & !63;
    let last = addr.saturating_add(bytes - 1) & !63;
    (first, (last - first) / 64 + 1)
}

/// Prefetches `lines` lines of 64 bytes from the line at `first` (from [`line_span`]).
#[inline]
fn prefetch_lines(first: usize, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for k in 0..lines {
        // SAFETY: `prefetcht0` has no architectural effect but on the caches: it never
        // faults on an address, mapped or not (freed memory included), and reads no value
        // into the program; SSE, which it needs, is part of x86-64. The pointer is made from
        // an integer and never dereferenced. `first + 64 k` stays within `line_span`'s
        // saturated range, so it does not overflow.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (first + 64 * k) as *const i8,
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (first, lines);
}

/// Up to [`Regions::CAPACITY`] memory blocks to prefetch, kept inline so that reading them
/// needs no other block: each block's address and size (at most [`PREFETCH_MAX_BYTES`]),
/// 161 bytes in all. Noting is a store of each; the lines are worked out when prefetching.
#[derive(Clone, Copy, Default)]
pub(crate) struct Regions {
    addr: [usize; Regions::CAPACITY],
    bytes: [u16; Regions::CAPACITY],
    len: u8,
}

const _: () = assert!(PREFETCH_MAX_BYTES <= u16::MAX as usize);

impl std::fmt::Debug for Regions {
    /// The count only: the addresses differ from run to run.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Regions({} blocks)", self.len)
    }
}

impl Regions {
    /// Blocks noted at most; further ones are left out.
    pub const CAPACITY: usize = 16;

    /// No blocks.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Notes the memory of `data` (nothing for an empty slice; past the capacity, nothing).
    #[inline(always)]
    pub fn push<T>(&mut self, data: &[T]) {
        let n = self.len as usize;
        let bytes = std::mem::size_of_val(data);
        if bytes != 0 && n < Self::CAPACITY {
            self.addr[n] = data.as_ptr() as usize;
            self.bytes[n] = bytes.min(PREFETCH_MAX_BYTES) as u16;
            self.len += 1;
        }
    }

    /// Prefetches every noted block.
    #[inline]
    pub fn prefetch(&self) {
        let n = self.len as usize;
        for (&addr, &bytes) in self.addr[..n].iter().zip(&self.bytes[..n]) {
            prefetch_bytes(addr, bytes as usize);
        }
    }

    /// The noted blocks: (first line's address, lines), as prefetched.
    #[cfg(test)]
    pub fn blocks(&self) -> Vec<(usize, usize)> {
        let n = self.len as usize;
        self.addr[..n]
            .iter()
            .zip(&self.bytes[..n])
            .map(|(&a, &b)| line_span(a, b as usize))
            .collect()
    }

    /// Whether a noted block holds `addr`.
    #[cfg(test)]
    pub fn holds(&self, addr: usize) -> bool {
        self.blocks()
            .iter()
            .any(|&(a, l)| (a..a + 64 * l).contains(&addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_updated_once_in_order_after_the_next_is_prefetched() {
        use std::cell::RefCell;
        let log = RefCell::new(Vec::new());
        let mut items: Vec<u32> = (0..5).collect();
        for_each_prefetched(
            &mut items,
            |x| log.borrow_mut().push(('p', *x)),
            |x| {
                log.borrow_mut().push(('u', *x));
                *x += 100;
            },
        );
        let expected = [
            ('p', 1),
            ('u', 0),
            ('p', 2),
            ('u', 1),
            ('p', 3),
            ('u', 2),
            ('p', 4),
            ('u', 3),
            ('u', 4),
        ];
        assert_eq!(log.into_inner(), expected);
        assert_eq!(items, [100, 101, 102, 103, 104]);
        // Nothing to do on an empty slice.
        for_each_prefetched(&mut [] as &mut [u32], |_| panic!(), |_| panic!());
    }

    #[test]
    fn prefetching_any_address_is_harmless() {
        // Empty, zero-sized, unaligned and far larger than the cap.
        prefetch::<u8>(&[]);
        prefetch(&[(); 1000]);
        let big = vec![7u8; 1 << 20];
        prefetch(&big[3..]);
        // Memory freed since its address was noted, and addresses nothing maps: a prefetch
        // never faults.
        let mut r = Regions::default();
        {
            let gone = vec![1.0f32; 4096];
            r.push(&gone);
        }
        r.prefetch();
        prefetch_bytes(0, 4096);
        // The last lines of the address space (the count saturates instead of wrapping).
        prefetch_bytes(usize::MAX - 100, 4096);
        assert_eq!(big[5], 7);
    }

    #[test]
    fn line_spans_cover_every_byte_and_never_wrap() {
        assert_eq!(line_span(1000, 0).1, 0, "no bytes, no lines");
        assert_eq!(line_span(64, 64), (64, 1));
        assert_eq!(line_span(63, 2), (0, 2), "two bytes across a line boundary");
        assert_eq!(line_span(0, 1 << 20), (0, 256), "capped at 16 KiB");
        assert_eq!(line_span(1, 1 << 20), (0, 257), "unaligned: one line more");
        // The top of the address space: the last byte saturates, the count stays small.
        let top = usize::MAX - 100;
        let (first, lines) = line_span(top, 4096);
        assert_eq!((first, lines), (top & !63, 2));
        assert!(first.checked_add(64 * (lines - 1)).is_some());
        assert_eq!(line_span(usize::MAX, 1), (usize::MAX & !63, 1));
    }

    #[test]
    fn regions_note_up_to_their_capacity_and_cap_each_block() {
        let data = vec![0u64; 8192]; // 64 KiB
        let at = data.as_ptr() as usize;
        let mut r = Regions::default();
        r.push::<u64>(&[]);
        assert!(r.blocks().is_empty(), "an empty slice notes nothing");
        for _ in 0..Regions::CAPACITY + 3 {
            r.push(&data);
        }
        assert_eq!(r.blocks().len(), Regions::CAPACITY);
        let (first, lines) = line_span(at, PREFETCH_MAX_BYTES);
        assert!(r.blocks().iter().all(|&b| b == (first, lines)));
        r.clear();
        r.push(&data[..3]);
        assert_eq!(r.blocks(), [line_span(at, 24)]);
        assert!(r.holds(at) && r.holds(at + 23));
        assert_eq!(format!("{r:?}"), "Regions(1 blocks)");
    }
}

//! Updating many characters in turn: asking the CPU to load the next character's state
//! while the current one is updated.
//!
//! One character's update reads and writes a few kilobytes of its own (the animator's
//! layers, players and sampling caches, its local pose, the model matrices and the skinning
//! palette), spread over several heap blocks; the clips and the skeleton are shared and stay
//! in the caches. In a crowd of a thousand characters that own state has left the nearest
//! caches by the time the character's turn comes again, and an update waits on each block
//! in turn, since which block comes next is only known from the one before (the layers
//! name the slots, the slots the caches). [`Animator::prefetch`] starts all those loads at
//! once, from a list of the blocks the last update touched that the animator keeps inline;
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
/// lines of 64 bytes. A character's buffers are a few kilobytes; a prefetch of more would
/// evict what it was meant to keep.
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
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = bytes.min(PREFETCH_MAX_BYTES);
        if bytes == 0 {
            return;
        }
        // The lines of the first and the last byte, and every line between (no overflow:
        // the last byte's address saturates, and `first + 64 k` stays at most `last`).
        let first = addr & !63;
        let last = addr.saturating_add(bytes - 1) & !63;
        for k in 0..=(last - first) / 64 {
            // SAFETY: `prefetcht0` has no architectural effect but on the caches: it never
            // faults on an address, mapped or not (freed memory included), and reads no
            // value into the program; SSE, which it needs, is part of x86-64. The pointer is
            // made from an integer and never dereferenced.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    (first + 64 * k) as *const i8,
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (addr, bytes);
}

/// Up to [`Regions::CAPACITY`] memory blocks (address, bytes) to prefetch, kept inline so
/// that reading them needs no other block.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Regions {
    list: [(usize, u32); Regions::CAPACITY],
    len: u8,
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
        let bytes = std::mem::size_of_val(data);
        let n = self.len as usize;
        if bytes != 0 && n < Self::CAPACITY {
            self.list[n] = (data.as_ptr() as usize, bytes.min(PREFETCH_MAX_BYTES) as u32);
            self.len += 1;
        }
    }

    /// Prefetches every noted block.
    #[inline]
    pub fn prefetch(&self) {
        for &(addr, bytes) in &self.list[..self.len as usize] {
            prefetch_bytes(addr, bytes as usize);
        }
    }

    /// The noted blocks.
    #[cfg(test)]
    pub fn blocks(&self) -> &[(usize, u32)] {
        &self.list[..self.len as usize]
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
    fn regions_note_up_to_their_capacity_and_cap_each_block() {
        let data = vec![0u64; 8192]; // 64 KiB
        let mut r = Regions::default();
        r.push::<u64>(&[]);
        assert!(r.blocks().is_empty(), "an empty slice notes nothing");
        for _ in 0..Regions::CAPACITY + 3 {
            r.push(&data);
        }
        assert_eq!(r.blocks().len(), Regions::CAPACITY);
        assert!(r
            .blocks()
            .iter()
            .all(|&(a, b)| a == data.as_ptr() as usize && b as usize == PREFETCH_MAX_BYTES));
        r.clear();
        r.push(&data[..3]);
        assert_eq!(r.blocks(), [(data.as_ptr() as usize, 24)]);
    }
}

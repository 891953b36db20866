//! [`Animator::prefetch`]: the memory blocks the next update reads and writes, noted at the
//! end of each update in a list the animator keeps inline, and prefetched from that list (see
//! [`crate::crowd`]). An animator notes them only once asked to prefetch, so animators
//! updated alone pay one branch per update for it.

use std::sync::atomic::{AtomicBool, Ordering};

use super::layer::{SlotPoses, Source};
use super::Animator;
use crate::play::crowd::{prefetch_bytes, Regions};

/// The blocks the next update will touch (noted by the last), and whether the animator was
/// asked to prefetch.
#[derive(Debug, Default)]
pub(super) struct Hot {
    regions: Regions,
    /// Set by [`Animator::prefetch`] (through a shared reference, so atomic; relaxed, since
    /// it only decides whether later updates note their blocks).
    wanted: AtomicBool,
}

impl Clone for Hot {
    /// A clone keeps the wish but not the list: its blocks are its own, noted at its first
    /// update.
    fn clone(&self) -> Self {
        Hot {
            regions: Regions::default(),
            wanted: AtomicBool::new(self.wanted.load(Ordering::Relaxed)),
        }
    }
}

impl Animator {
    /// Asks the CPU to load what this animator's next update reads and writes: its own
    /// state and the heap blocks that update will touch (layers, players, sampling caches,
    /// the output it writes), all at once. Call it on the next character while updating the
    /// current one ([`crate::crowd::for_each_prefetched`]); it changes nothing else.
    ///
    /// The blocks are noted at the end of each update into a list the animator keeps inline
    /// (161 bytes of every animator), once it has been asked to prefetch: the first call
    /// turns the noting on for good (clones keep it on, with a list of their own, empty
    /// until their next update), so it prefetches only the animator's own state until the
    /// next update. An animator never asked does not note (one branch per update; the cost
    /// of noting is measured in the README's "Speed"). After a change to the layers or what
    /// they play, the list is that of the last update until the next: a prefetch of memory
    /// the animator no longer uses is wasted, not wrong.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skelett::*;
    /// # let skeleton = Arc::new(RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap());
    /// let mut animators = vec![animator::Animator::new(skeleton.clone()); 3];
    /// crowd::for_each_prefetched(&mut animators, |next| next.prefetch(), |a| {
    ///     a.update(1.0 / 60.0);
    /// });
    /// ```
    pub fn prefetch(&self) {
        if !self.hot.wanted.load(Ordering::Relaxed) {
            self.hot.wanted.store(true, Ordering::Relaxed);
        }
        prefetch_bytes(self as *const Self as usize, std::mem::size_of::<Self>());
        self.hot.regions.prefetch();
    }

    /// Notes the blocks the next update will touch, where [`Animator::prefetch`] was
    /// called: the layers, and of each layer that plays, its slots, the output the next
    /// update writes, its slot poses where they are rows and blended, the offsets of an
    /// inertial transition under way, its players' caches (and blend spaces' and trees'
    /// players and buffers); the identity pose where a layer is additive; the pose where a
    /// layer's output does not hold it; the model matrices where modifiers run. The first
    /// [`Regions::CAPACITY`] of them, in that order (the first layer's first).
    pub(super) fn note_hot(&mut self) {
        if !*self.hot.wanted.get_mut() {
            return;
        }
        let r = &mut self.hot.regions;
        r.clear();
        r.push(&self.layers);
        let mut additive = false;
        for l in self
            .layers
            .iter()
            .filter(|l| l.enabled && !l.slots.is_empty())
        {
            additive |= l.mode == super::BlendMode::Additive;
            r.push(&l.slots);
            // The output after `cur` (`evaluate` writes the oldest of the three), or the
            // older block output where the last update made its output in blocks.
            match (&l.soa, l.in_blocks & 1 != 0) {
                (Some(soa), true) => r.push(soa[l.soa_cur ^ 1].blocks()),
                _ => r.push(&l.outputs[if l.cur == 2 { 0 } else { l.cur + 1 }]),
            }
            // One slot at full weight samples straight into the output.
            let blended = l.slots.len() > 1 || l.slots[0].weight < 1.0;
            if let (SlotPoses::Rows(rows), true) = (&l.slot_poses, blended) {
                for p in rows.iter().take(l.slots.len()) {
                    r.push(p);
                }
            }
            if l.inertial.active() || l.inertial_pending.is_some() {
                l.inertial.note_blocks(r);
            }
            for s in &l.slots {
                match &s.source {
                    Source::Clip(p) => p.cache.note_blocks(r),
                    Source::Space(space) => {
                        r.push(&space.entries);
                        for (_, p) in &space.entries {
                            p.cache.note_blocks(r);
                        }
                    }
                    Source::Tree(tree) => tree.note_blocks(r),
                }
            }
        }
        if additive {
            r.push(&self.identity);
        }
        if self.held == super::Held::Own {
            r.push(&self.pose);
        }
        if !self.modifiers.is_empty() {
            r.push(&self.model);
        }
    }

    /// The blocks noted for prefetching: (first line's address, lines).
    #[cfg(test)]
    pub(super) fn hot_blocks(&self) -> Vec<(usize, usize)> {
        self.hot.regions.blocks()
    }

    /// Whether a noted block holds `addr`.
    #[cfg(test)]
    pub(super) fn hot_holds(&self, addr: usize) -> bool {
        self.hot.regions.holds(addr)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::animator::{Animator, Curve, PlayOptions};
    use crate::Skeleton;

    /// A chain of `n` joints and a clip turning each of them.
    fn rig(n: usize) -> (Arc<Skeleton>, Arc<crate::Clip>) {
        let (skeleton, [clip, _]) = super::super::test_rig::rig(n);
        (skeleton, clip)
    }

    fn address<T>(s: &[T]) -> usize {
        s.as_ptr() as usize
    }

    #[test]
    fn an_animator_notes_the_blocks_of_its_next_update_once_asked() {
        let (skeleton, clip) = rig(12);
        let mut a = Animator::new(skeleton);
        a.play(0, clip.clone(), PlayOptions::default()).unwrap();
        a.crossfade(0, clip, 1.0, Curve::Linear, PlayOptions::default())
            .unwrap();
        a.update(0.1);
        assert!(a.hot_blocks().is_empty(), "not asked: nothing noted");
        a.prefetch();
        assert!(a.hot_blocks().is_empty(), "noted at the next update");
        for rows in [false, true] {
            if rows {
                // Rows read: the next update makes rows, and notes the rows output.
                let _ = a.pose();
            }
            a.update(0.1);
            let l = &a.layers[0];
            // The output written next: rows, or blocks where the pose stays in blocks.
            let (next, just) = match (&l.soa, a.pose_soa().is_some()) {
                (Some(soa), true) => {
                    let next = soa[l.soa_cur ^ 1].blocks();
                    let just = address(soa[l.soa_cur].blocks());
                    (
                        address(next)..address(next) + std::mem::size_of_val(next),
                        just,
                    )
                }
                _ => {
                    let next = &l.outputs[(l.cur + 1) % 3][..];
                    let just = address(&l.outputs[l.cur]);
                    (
                        address(next)..address(next) + std::mem::size_of_val(next),
                        just,
                    )
                }
            };
            for (what, at) in [
                ("layers", address(&a.layers)),
                ("slots", address(&l.slots)),
                ("the output written next", next.start),
                ("its last byte", next.end - 1),
            ] {
                assert!(
                    a.hot_holds(at),
                    "{what} noted ({rows}): {:x?}",
                    a.hot_blocks()
                );
            }
            assert!(
                !a.hot_holds(just),
                "not the output just written (the pose, read before the next update)"
            );
        }
        // The output holds the pose (one layer covers everything): `pose` is not written.
        assert!(!a.hot_holds(address(&a.pose)));
        // A clone keeps the wish, not the other animator's blocks.
        let mut b = a.clone();
        assert!(b.hot_blocks().is_empty());
        b.update(0.1);
        assert!(b.hot_holds(address(&b.layers)));
        assert!(!b.hot_holds(address(&a.layers)) && !a.hot_holds(address(&b.layers)));
    }

    #[test]
    fn an_inertial_switch_and_an_additive_layer_are_noted() {
        let (skeleton, clip) = rig(12);
        let mut a = Animator::new(skeleton);
        a.play(0, clip.clone(), PlayOptions::default()).unwrap();
        a.prefetch();
        a.update(0.1);
        a.inertialize(0, clip.clone(), 0.5, PlayOptions::default())
            .unwrap();
        let add = a
            .add_layer(crate::animator::BlendMode::Additive, 0.5, None)
            .unwrap();
        a.play(add, clip, PlayOptions::default()).unwrap();
        a.update(0.1);
        assert!(a.layers[0].inertial.active());
        assert!(a.hot_holds(address(&a.identity)), "the additive neutral");
        let mut probe = crate::play::crowd::Regions::default();
        a.layers[0].inertial.note_blocks(&mut probe);
        for (first, _) in probe.blocks() {
            assert!(a.hot_holds(first), "the inertial offsets");
        }
        assert!(!probe.blocks().is_empty());
        // Two layers blend onto the rest pose: `pose` is written.
        assert!(a.hot_holds(address(&a.pose)));
    }

    /// A cache's per-timeline cursors are noted where a sample reads them: not for a clip
    /// whose tracks all lie in blocks on the union timeline (sampled through its lanes, where
    /// the CPU takes them: the cache keeps no such cursors), always for one with a track the
    /// lanes leave alone (a STEP one).
    #[test]
    fn caches_note_the_cursors_a_sample_reads() {
        use crate::{Interpolation, RawChannel, RawClip, RawValues, Target};
        let (skeleton, clip) = rig(12);
        let noted = |clip: &Arc<crate::Clip>| {
            let mut a = Animator::new(skeleton.clone());
            a.play(0, clip.clone(), PlayOptions::default()).unwrap();
            a.prefetch();
            a.update(0.1);
            let crate::play::animator::layer::Source::Clip(p) = &a.layers[0].slots[0].source else {
                panic!("a clip plays");
            };
            a.hot_holds(p.cache.heap_for_test())
        };
        let lanes = matches!(&clip.storage, crate::clip::Storage::Keyed(k) if !k.lanes.is_empty());
        assert_eq!(noted(&clip), !lanes, "lanes alone: no cursors read");
        let step = Arc::new(
            RawClip {
                name: "step".into(),
                start: 0.0,
                duration: 1.0,
                channels: vec![RawChannel {
                    joint: "j1".into(),
                    target: Target::Translation,
                    interpolation: Interpolation::Step,
                    times: vec![0.0, 0.5],
                    values: RawValues::Vec3(vec![glam::Vec3::ZERO, glam::Vec3::X]),
                }],
            }
            .build(&skeleton)
            .unwrap(),
        );
        assert!(
            noted(&step),
            "a STEP track's timeline is followed one track at a time"
        );
    }

    #[test]
    fn animators_and_graph_characters_stay_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Animator>();
        check::<crate::graph::GraphInstance>();
    }

    #[test]
    fn blend_spaces_and_trees_note_their_players() {
        use crate::animator::{BlendSpace1D, BlendTree, Transition, TreeNode, TreeShape};
        use crate::play::animator::layer::Source;
        let (skeleton, clip) = rig(12);
        let mut a = Animator::new(skeleton.clone());
        let space = BlendSpace1D::new(vec![(0.0, clip.clone()), (1.0, clip.clone())]);
        a.play_blend_space(0, space, Transition::Immediate).unwrap();
        a.prefetch();
        a.update(0.1);
        let Source::Space(space) = &a.layers[0].slots[0].source else {
            panic!("a blend space plays");
        };
        assert!(a.hot_holds(address(&space.entries)));
        // Two entries, each cache's blocks that a sample reads.
        let entry = &space.entries[1].1;
        let mut probe = crate::play::crowd::Regions::default();
        entry.cache.note_blocks(&mut probe);
        for (first, _) in probe.blocks() {
            assert!(a.hot_holds(first), "the second entry's cache");
        }

        // Children come before their parents; the last node is the root.
        let shape = TreeShape::new(
            vec![
                TreeNode::Clip(clip.clone()),
                TreeNode::Clip(clip),
                TreeNode::Lerp {
                    a: 0,
                    b: 1,
                    weight: crate::animator::TreeValue::Const(0.5),
                },
            ],
            1,
        )
        .unwrap();
        let tree = BlendTree::new(Arc::new(shape));
        a.play_tree(0, tree, Transition::Immediate, PlayOptions::default())
            .unwrap();
        a.update(0.1);
        let Source::Tree(tree) = &a.layers[0].slots[0].source else {
            panic!("a tree plays");
        };
        assert!(a.hot_holds(&**tree as *const _ as usize));
        assert!(a.hot_holds(address(&tree.players)));
    }
}

//! Evaluating layers: each layer samples its slots, blends them by weight (a blend space
//! blends its two neighbouring clips; on skeletons of eight joints or more the slots are
//! sampled and blended in blocks of eight joints, structure of arrays, with the slice
//! blend's bits, in blocks the updating thread shares between its animators), applies a
//! pending or running inertial transition, and
//! the layers are combined over the rest pose by override or additive blending with their
//! masks, into the animator's local pose.

use super::blocks::Held;
use super::layer::{Layer, SlotPoses, Source, MAX_SLOTS};
use super::{Animator, BlendMode};
use crate::play::pose::{blend_soa_over_rows, blend_soa_to_rows};
use crate::play::sampling::writes_blocks;
use crate::pose::{apply_additive, blend, blend_override, BlendInput, SoaBlendInput};
use crate::{SoaPose, Transform};
use std::cell::RefCell;

thread_local! {
    /// The slot poses in blocks of every animator this thread updates ([`SlotPoses`]): each
    /// update samples its slots into them and blends them out again, so nothing in them
    /// outlives an update but the identity of the clip whose static joints a block holds
    /// (`SoaPose`'s own bookkeeping, valid for any animator that samples that clip).
    static SLOT_BLOCKS: RefCell<Vec<SoaPose>> = const { RefCell::new(Vec::new()) };
}

impl Animator {
    /// Samples and blends every layer and combines them over the rest pose.
    pub(super) fn evaluate(&mut self, dt: f32) {
        // Nothing after the layers (root motion, modifiers) reads or writes the pose, and
        // the caller did not read the last one as rows: a layer that makes it alone may
        // leave it in blocks.
        let rows_read = self.lazy.reset();
        let blocks_ok = !rows_read && self.root.is_none() && self.modifiers.is_empty();
        // The fields apart, so the skeleton is borrowed while the rest is written (cloning
        // its `Arc` for that cost two atomic operations per update).
        let Animator {
            skeleton,
            layers,
            pose,
            held,
            identity,
            morph: morph_weights,
            morph_zero,
            ..
        } = self;
        let skeleton: &crate::Skeleton = skeleton;
        let rest = skeleton.rest_pose();
        let morph = skeleton.morph_channel_count() > 0;
        let mut first = true;
        // The pose is made again from nothing below.
        *held = Held::Own;
        for li in 0..layers.len() {
            let l = &mut layers[li];
            if !l.enabled {
                // Kept as it was: enabled again, it goes on from its last output.
                continue;
            }
            if l.slots.is_empty() {
                l.produced = false;
                continue;
            }
            let neutral: &[Transform] = if l.mode == BlendMode::Additive {
                &identity[..]
            } else {
                rest
            };
            // Slots fading in on an empty layer sum to less than 1: the layer then counts
            // for that much less, so a cross-fade from nothing starts from what is below.
            let total: f32 = l.slots.iter().map(|s| s.weight).sum();
            let weight = l.weight * total.min(1.0);
            let covers =
                first && l.mode == BlendMode::Override && weight >= 1.0 && l.mask.is_none();
            if covers && blocks_ok && in_blocks(layers, li) {
                evaluate_in_blocks(&mut layers[li], rest);
                let l = &mut layers[li];
                if morph {
                    let next = (l.cur + 1) % 3;
                    Animator::evaluate_layer_morph(
                        layers, morph_zero, skeleton, li, next, false, true,
                    );
                }
                let l = &mut layers[li];
                l.cur = (l.cur + 1) % 3;
                l.last_dt = dt;
                l.produced = true;
                *held = Held::Blocks(li);
                if morph {
                    Animator::combine_layer_morph(
                        &layers[li],
                        morph_weights,
                        skeleton,
                        weight,
                        true,
                        true,
                    );
                }
                // Nothing above plays (checked): the pose is this layer's. The layers above
                // are disabled or empty; the loop still marks the empty ones as not playing.
                first = false;
                continue;
            }
            let l = &mut layers[li];
            // The last two outputs where an inertial capture reads them.
            if l.in_blocks != 0 && l.inertial_pending.is_some() {
                l.rows_for_capture();
            }
            l.in_blocks = (l.in_blocks << 1) & 3;
            // Write into the oldest output; the other two are the last ones.
            let next = (l.cur + 1) % 3;
            let [o0, o1, o2] = &mut l.outputs;
            let (output, prev, prev2) = match next {
                0 => (o0, &*o2, &*o1),
                1 => (o1, &*o0, &*o2),
                _ => (o2, &*o1, &*o0),
            };
            let [row, extra] = &mut l.scratch;
            if l.slots.len() == 1 && l.slots[0].weight >= 1.0 {
                sample_slot(&mut l.slots[0].source, output, extra);
            } else {
                match &mut l.slot_poses {
                    SlotPoses::Blocks => SLOT_BLOCKS.with_borrow_mut(|bufs| {
                        size_slot_blocks(bufs, rest.len(), l.slots.len());
                        for (s, buf) in l.slots.iter_mut().zip(bufs.iter_mut()) {
                            match &mut s.source {
                                Source::Clip(p) if writes_blocks(&p.clip) => p.sample_soa(buf),
                                source => {
                                    sample_slot(source, row, extra);
                                    let _ = buf.copy_from(row);
                                }
                            }
                        }
                        let inputs: [SoaBlendInput; MAX_SLOTS] =
                            std::array::from_fn(|i| SoaBlendInput {
                                pose: &bufs[i],
                                weight: l.slots.get(i).map_or(0.0, |s| s.weight),
                            });
                        let _ = blend_soa_to_rows(&inputs[..l.slots.len()], neutral, output);
                    }),
                    SlotPoses::Rows(bufs) => {
                        for (s, buf) in l.slots.iter_mut().zip(bufs.iter_mut()) {
                            sample_slot(&mut s.source, buf, extra);
                        }
                        let mut inputs: [BlendInput; MAX_SLOTS] = [BlendInput {
                            pose: &[],
                            weight: 0.0,
                            mask: None,
                        };
                            MAX_SLOTS];
                        for (i, (s, buf)) in l.slots.iter().zip(bufs.iter()).enumerate() {
                            inputs[i] = BlendInput {
                                pose: buf,
                                weight: s.weight,
                                mask: None,
                            };
                        }
                        let _ = blend(&inputs[..l.slots.len()], neutral, output);
                    }
                }
            }
            let captured = l.inertial_pending.is_some();
            let had_output = l.produced;
            if let Some(duration) = l.inertial_pending.take() {
                if l.produced {
                    l.inertial.capture(prev, prev2, l.last_dt, output, duration);
                } else {
                    // Nothing played here before: there is no old pose to decay from.
                    l.inertial.duration = 0.0;
                }
            } else if l.inertial.active() {
                l.inertial.elapsed += dt;
            }
            if l.inertial.active() {
                l.inertial.apply(output);
            }
            if morph {
                Animator::evaluate_layer_morph(
                    layers, morph_zero, skeleton, li, next, captured, had_output,
                );
            }
            let l = &mut layers[li];
            l.cur = next;
            l.last_dt = dt;
            l.produced = true;
            if !covers && !first {
                // Blending onto the pose that a layer below holds: copied out first (only a
                // rows output can hold it here: the blocks path returns at once).
                if let Held::Output(layer, output) = std::mem::replace(held, Held::Own) {
                    pose.copy_from_slice(&layers[layer].outputs[output]);
                }
            }
            let l = &layers[li];
            let mask = l.mask.as_ref().map(|m| m.weights());
            let output = &l.outputs[next];
            if covers {
                // The first layer covers everything: no rest pose underneath, and its
                // output is the pose until something blends, strips or modifies it
                // (`Animator::own_pose` copies it then).
                *held = Held::Output(li, next);
            } else {
                if first {
                    pose.copy_from_slice(rest);
                }
                let _ = match l.mode {
                    BlendMode::Override => blend_override(pose, output, weight, mask),
                    BlendMode::Additive => apply_additive(pose, output, weight, mask),
                };
            }
            if morph {
                Animator::combine_layer_morph(l, morph_weights, skeleton, weight, first, covers);
            }
            first = false;
        }
        if first {
            pose.copy_from_slice(rest);
            morph_weights.copy_from_slice(skeleton.morph_rest());
        }
    }
}

/// The thread's slot blocks: all of them at its first update (no allocation later unless a
/// larger skeleton comes), the first `slots` sized for a skeleton of `joints`.
#[inline(always)]
fn size_slot_blocks(bufs: &mut Vec<SoaPose>, joints: usize, slots: usize) {
    if bufs.len() < MAX_SLOTS {
        bufs.resize_with(MAX_SLOTS, || SoaPose::identity(joints));
    }
    for buf in &mut bufs[..slots] {
        if buf.len() != joints {
            buf.reset_len(joints);
        }
    }
}

/// Whether layer `li`, which covers the pose, makes it in blocks (`blocks`): no inertial
/// transition on it, its slots all clips that sample into blocks, and no layer above it
/// playing (blending onto the pose).
#[inline(always)]
fn in_blocks(layers: &[Layer], li: usize) -> bool {
    let l = &layers[li];
    l.soa.is_some()
        && l.inertial_pending.is_none()
        && !l.inertial.active()
        && l.slots
            .iter()
            .all(|s| matches!(&s.source, Source::Clip(p) if writes_blocks(&p.clip)))
        && !layers[li + 1..]
            .iter()
            .any(|l| l.enabled && !l.slots.is_empty())
}

/// A layer whose output stays in blocks (`blocks`; its slots are clips that sample into
/// blocks, checked by the caller): its slots sampled (and blended, over `rest`) into its
/// older block output, which becomes the newer. The bits of the rows path's samples and
/// blend.
fn evaluate_in_blocks(l: &mut Layer, rest: &[Transform]) {
    let Some(soa) = l.soa.as_deref_mut() else {
        return;
    };
    let out = &mut soa[l.soa_cur ^ 1];
    if l.slots.len() == 1 && l.slots[0].weight >= 1.0 {
        if let Source::Clip(p) = &mut l.slots[0].source {
            p.sample_soa(out);
        }
    } else {
        SLOT_BLOCKS.with_borrow_mut(|bufs| {
            size_slot_blocks(bufs, rest.len(), l.slots.len());
            for (s, buf) in l.slots.iter_mut().zip(bufs.iter_mut()) {
                if let Source::Clip(p) = &mut s.source {
                    p.sample_soa(buf);
                }
            }
            let inputs: [SoaBlendInput; MAX_SLOTS] = std::array::from_fn(|i| SoaBlendInput {
                pose: &bufs[i],
                weight: l.slots.get(i).map_or(0.0, |s| s.weight),
            });
            let _ = blend_soa_over_rows(&inputs[..l.slots.len()], rest, out);
        });
    }
    l.soa_cur ^= 1;
    l.in_blocks = ((l.in_blocks << 1) | 1) & 3;
}

fn sample_slot(source: &mut Source, out: &mut [Transform], scratch: &mut [Transform]) {
    match source {
        Source::Clip(p) => p.sample(out),
        Source::Tree(t) => t.sample(out),
        Source::Space(space) => {
            let (a, b, w) = space.bracket();
            space.entries[a].1.sample(out);
            if a != b && w > 0.0 {
                space.entries[b].1.sample(scratch);
                blend_two(out, scratch, w);
            }
        }
    }
}

/// `out = lerp(out, other, w)` per joint, rotations on the shortest path (a blend space's two
/// neighbouring clips).
fn blend_two(out: &mut [Transform], other: &[Transform], w: f32) {
    for (a, b) in out.iter_mut().zip(other) {
        *a = Transform {
            translation: a.translation.lerp(b.translation, w),
            rotation: crate::transform::nlerp(a.rotation, b.rotation, w),
            scale: a.scale.lerp(b.scale, w),
        };
    }
}

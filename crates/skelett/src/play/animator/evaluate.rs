//! Evaluating layers: each layer samples its slots, blends them by weight (a blend space
//! blends its two neighbouring clips; on skeletons of eight joints or more the slots are
//! sampled and blended in blocks of eight joints, structure of arrays, with the slice
//! blend's bits, in blocks the updating thread shares between its animators), applies a
//! pending or running inertial transition, and
//! the layers are combined over the rest pose by override or additive blending with their
//! masks, into the animator's local pose.
//!
//! Blend spaces and trees of blends whose clips sample into blocks are sampled and mixed
//! in blocks too ([`sample_source_soa`]: `lerp_soa`, the row formulas eight joints at a
//! time, so the bits of `sample_slot`'s rows), each clip into the thread's scratch pose of
//! its place in the space or tree (a pose that a clip samples into again keeps its static
//! joints). A layer whose output stays in rows (a mask, a layer above, root motion, an
//! inertial transition) transposes the result once; one that makes the pose alone leaves it
//! in blocks (`blocks.rs`).

use super::blocks::Held;
use super::layer::{Layer, Slot, SlotPoses, Source, MAX_SLOTS};
use super::{Animator, BlendMode};
use crate::play::pose::{blend_soa_over_rows, blend_soa_to_rows, lerp_soa};
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
    /// The scratch poses of the blend spaces and trees this thread samples in blocks
    /// ([`sample_source_soa`]), alike.
    static SCRATCH_BLOCKS: RefCell<Vec<SoaPose>> = const { RefCell::new(Vec::new()) };
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
            if l.mode == BlendMode::Additive && identity.len() != rest.len() {
                // A lean animator's first additive layer (`Animator::new_lean`).
                identity.resize(rest.len(), Transform::IDENTITY);
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
            // Rows from here on (made now where a lean animator had none).
            l.ensure_rows(rest);
            // The last two outputs where an inertial capture reads them.
            if l.in_blocks != 0 && l.inertial_pending.is_some() {
                l.rows_for_capture(rest);
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
                let source = &mut l.slots[0].source;
                if matches!(l.slot_poses, SlotPoses::Blocks)
                    && !matches!(source, Source::Clip(_))
                    && samples_blocks(source)
                {
                    // A blend space or tree: blended in blocks, then transposed once.
                    with_slot_blocks(rest.len(), 1, |bufs| {
                        sample_source_soa(source, &mut bufs[0]);
                        let _ = bufs[0].write_to(output);
                    });
                } else {
                    sample_slot(source, output, extra);
                }
            } else {
                match &mut l.slot_poses {
                    SlotPoses::Blocks => blend_slots_in_blocks::<false>(
                        &mut l.slots,
                        rest.len(),
                        row,
                        extra,
                        |inputs| {
                            let _ = blend_soa_to_rows(inputs, neutral, output);
                        },
                    ),
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
                    super::own_rows_mut(pose, rest).copy_from_slice(&layers[layer].outputs[output]);
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
                let pose = super::own_rows_mut(pose, rest);
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
            super::own_rows_mut(pose, rest).copy_from_slice(rest);
            morph_weights.copy_from_slice(skeleton.morph_rest());
        }
    }
}

/// Runs `f` on the thread's slot poses ([`SLOT_BLOCKS`]), all [`MAX_SLOTS`] of them, the
/// first `slots` sized for a skeleton of `joints`. They are made at the thread's first
/// update (no allocation later unless a larger skeleton comes).
#[inline(always)]
fn with_slot_blocks<R>(joints: usize, slots: usize, f: impl FnOnce(&mut [SoaPose]) -> R) -> R {
    SLOT_BLOCKS.with_borrow_mut(|bufs| {
        sized(bufs, MAX_SLOTS, slots, joints);
        f(bufs)
    })
}

/// Makes `bufs` at least `len` poses long and its first `n` poses `joints` long (allocating
/// only to grow past the most poses or joints held); those `n`.
#[inline(always)]
fn sized(bufs: &mut Vec<SoaPose>, len: usize, n: usize, joints: usize) -> &mut [SoaPose] {
    if bufs.len() < len {
        bufs.resize_with(len, || SoaPose::identity(joints));
    }
    for buf in &mut bufs[..n] {
        if buf.len() != joints {
            buf.reset_len(joints);
        }
    }
    &mut bufs[..n]
}

/// Whether `source` samples into blocks ([`sample_source_soa`]): a clip that does, a blend
/// space whose two clips around its parameter do, a tree of blends whose clips do.
#[inline(always)]
fn samples_blocks(source: &Source) -> bool {
    match source {
        Source::Clip(p) => writes_blocks(&p.clip),
        blend => blend_samples_blocks(blend),
    }
}

/// [`samples_blocks`] for a blend space or tree (out of line: the clips' test stays short).
#[inline(never)]
fn blend_samples_blocks(source: &Source) -> bool {
    match source {
        Source::Clip(p) => writes_blocks(&p.clip),
        Source::Space(space) => {
            let (a, b, _) = space.bracket();
            writes_blocks(&space.entries[a].1.clip) && writes_blocks(&space.entries[b].1.clip)
        }
        Source::Tree(t) => t.samples_blocks(),
    }
}

/// Samples a source that [`samples_blocks`] into `out`: the bits [`sample_slot`] gives as
/// rows (a blend space's two clips mixed by [`lerp_soa`]'s nlerp, the row formula of
/// `blend_two`; a tree by `BlendTree::sample_soa`). A space's two clips and a tree's
/// children sample into the thread's scratch poses ([`SCRATCH_BLOCKS`], made or grown the
/// first time the thread plays a space, or a tree needing more than before), each into the
/// pose of its place in the space or tree, so a clip keeps sampling into the same pose
/// (unless another space or tree on the thread samples into it between).
fn sample_source_soa(source: &mut Source, out: &mut SoaPose) {
    let joints = out.len();
    match source {
        Source::Clip(p) => p.sample_soa(out),
        Source::Tree(t) => {
            let need = t.depth_blocks();
            SCRATCH_BLOCKS.with_borrow_mut(|bufs| {
                t.sample_soa(out, sized(bufs, need, need, joints));
            });
        }
        Source::Space(space) => {
            let (a, b, w) = space.bracket();
            if a == b || w <= 0.0 {
                return space.entries[a].1.sample_soa(out);
            }
            SCRATCH_BLOCKS.with_borrow_mut(|bufs| {
                if let [even, odd] = sized(bufs, 2, 2, joints) {
                    // Entry `i` into the pose of its parity (`b` is `a + 1`): a clip keeps its
                    // pose, and that pose its static joints, while the parameter moves.
                    let (from, to) = if a % 2 == 0 { (even, odd) } else { (odd, even) };
                    space.entries[a].1.sample_soa(from);
                    space.entries[b].1.sample_soa(to);
                    lerp_soa::<true>(out, Some(from), to, w);
                }
            });
        }
    }
}

/// Whether layer `li`, which covers the pose, makes it in blocks (`blocks`): no inertial
/// transition on it, its slots all sources that sample into blocks ([`samples_blocks`]),
/// and no layer above it playing (blending onto the pose).
#[inline(always)]
fn in_blocks(layers: &[Layer], li: usize) -> bool {
    let l = &layers[li];
    l.soa.is_some()
        && l.inertial_pending.is_none()
        && !l.inertial.active()
        && l.slots.iter().all(|s| samples_blocks(&s.source))
        && !layers[li + 1..]
            .iter()
            .any(|l| l.enabled && !l.slots.is_empty())
}

/// A layer whose output stays in blocks (`blocks`; its slots all sample into blocks,
/// checked by the caller): its slots sampled (and blended, over `rest`) into its
/// older block output, which becomes the newer. The bits of the rows path's samples and
/// blend.
fn evaluate_in_blocks(l: &mut Layer, rest: &[Transform]) {
    let Some(soa) = l.soa.as_deref_mut() else {
        return;
    };
    let out = &mut soa[l.soa_cur ^ 1];
    let slots = &mut l.slots;
    if slots.len() == 1 && slots[0].weight >= 1.0 {
        let source = &mut slots[0].source;
        if let Source::Clip(p) = source {
            p.sample_soa(out);
        } else {
            sample_source_soa(source, out);
        }
    } else {
        let [row, extra] = &mut l.scratch;
        blend_slots_in_blocks::<true>(slots, rest.len(), row, extra, |inputs| {
            let _ = blend_soa_over_rows(inputs, rest, out);
        });
    }
    l.soa_cur ^= 1;
    l.in_blocks = ((l.in_blocks << 1) | 1) & 3;
}

/// Samples every slot into the thread's slot blocks (a source that does not sample into
/// blocks as rows, through `row` and `extra`, copied in) and hands `blend` them with the
/// slots' weights. `CHECKED`: the caller knows that every slot samples into blocks.
#[inline(always)]
fn blend_slots_in_blocks<const CHECKED: bool>(
    slots: &mut [Slot],
    joints: usize,
    row: &mut [Transform],
    extra: &mut [Transform],
    blend: impl FnOnce(&[SoaBlendInput]),
) {
    with_slot_blocks(joints, slots.len(), |bufs| {
        for (s, buf) in slots.iter_mut().zip(bufs.iter_mut()) {
            match &mut s.source {
                Source::Clip(p) if CHECKED || writes_blocks(&p.clip) => p.sample_soa(buf),
                source if CHECKED || samples_blocks(source) => sample_source_soa(source, buf),
                source => {
                    sample_slot(source, row, extra);
                    let _ = buf.copy_from(row);
                }
            }
        }
        let input = |i: usize| SoaBlendInput {
            pose: &bufs[i],
            weight: slots[i].weight,
        };
        // A cross-fade's two slots (or three) as an array of their own: building all
        // `MAX_SLOTS` entries took about 40 instructions per update.
        match slots.len() {
            2 => blend(&[input(0), input(1)]),
            3 => blend(&[input(0), input(1), input(2)]),
            // Not `from_fn(input)`: sharing the closure moved the compiler's inlining of
            // this function and cost about 40 instructions per update (measured).
            n => {
                let inputs: [SoaBlendInput; MAX_SLOTS] = std::array::from_fn(|i| SoaBlendInput {
                    pose: &bufs[i],
                    weight: slots.get(i).map_or(0.0, |s| s.weight),
                });
                blend(&inputs[..n]);
            }
        }
    });
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use glam::Vec2;

    use super::super::test_rig::{bits, rig, turning};
    use super::super::{BlendSpace1D, BlendTree, Space2D, TreeNode, TreeShape, TreeValue, Wrap};
    use super::*;

    fn rows_of(p: &SoaPose) -> Vec<Transform> {
        (0..p.len()).map(|j| p.get(j)).collect()
    }

    /// A blend space and two blend trees (a 1D space lerped with a clip, a 2D space of
    /// three clips) sampled in blocks give the bits of their rows code (`sample_slot`'s
    /// `blend_two`, `BlendTree::sample`'s fold) at parameters between, on and beyond their
    /// clips and at several times. One clip moves and scales every joint but one (a clip
    /// with a single static joint, written lane by lane) and the others only turn them (all
    /// joints static in some component, written whole); the scratch poses take turns
    /// between clips as the parameters move.
    #[test]
    fn spaces_and_trees_in_blocks_are_their_rows() {
        let n = 11;
        let (skeleton, [ca, cb]) = rig(n);
        let full: Vec<usize> = (0..n).filter(|&i| i != 5).collect();
        let cc = turning(&skeleton, "c", 0.3, &full);
        // Three static joints of eleven: its whole base written by transposes.
        let most: Vec<usize> = (0..n).filter(|&i| ![1, 6, 9].contains(&i)).collect();
        let cd = turning(&skeleton, "d", -0.9, &most);
        let sources = || {
            let clip = |c: &Arc<crate::Clip>| TreeNode::Clip(c.clone());
            // Three levels of blends: a lerp of a 1D space (one child a lerp) and a clip.
            let lerp = TreeShape::new(
                vec![
                    clip(&ca),
                    clip(&cb),
                    clip(&cd),
                    clip(&cc),
                    TreeNode::Lerp {
                        a: 1,
                        b: 2,
                        weight: TreeValue::Parameter(1),
                    },
                    TreeNode::Space1D {
                        parameter: 0,
                        children: vec![(0.0, 0), (1.0, 4)],
                    },
                    TreeNode::Lerp {
                        a: 5,
                        b: 3,
                        weight: TreeValue::Parameter(1),
                    },
                ],
                2,
            )
            .unwrap();
            let plane = TreeShape::new(
                vec![
                    clip(&ca),
                    clip(&cb),
                    clip(&cc),
                    clip(&cd),
                    TreeNode::Space2D {
                        x: 0,
                        y: 1,
                        mode: Space2D::Cartesian,
                        children: vec![(Vec2::ZERO, 0), (Vec2::X, 1), (Vec2::Y, 2), (Vec2::ONE, 3)],
                    },
                ],
                2,
            )
            .unwrap();
            let space = BlendSpace1D::new(vec![
                (0.0, ca.clone()),
                (1.0, cb.clone()),
                (2.5, cc.clone()),
                (3.2, cd.clone()),
            ]);
            [
                Source::Space(space),
                Source::Tree(Box::new(BlendTree::new(Arc::new(lerp)))),
                Source::Tree(Box::new(BlendTree::new(Arc::new(plane)))),
            ]
        };
        let (mut in_rows, mut in_blocks) = (sources(), sources());
        let blocks = samples_blocks(&in_blocks[0]);
        assert_eq!(
            blocks,
            writes_blocks(&ca),
            "the space samples into blocks with its clips"
        );
        for s in &in_blocks[1..] {
            assert_eq!(
                samples_blocks(s),
                blocks,
                "trees of blends sample into blocks"
            );
        }
        if !blocks {
            return;
        }
        let (mut rows, mut extra) = (vec![Transform::IDENTITY; n], vec![Transform::IDENTITY; n]);
        let mut out = SoaPose::identity(n);
        let mut compared = 0;
        for p in [-1.0f32, 0.0, 0.3, 1.0, 1.7, 2.5, 3.0, 3.6, 0.6] {
            for q in [0.0f32, 0.45, 1.0] {
                for at in [0.0f64, 0.25, 0.61, 0.999] {
                    for (r, b) in in_rows.iter_mut().zip(in_blocks.iter_mut()) {
                        for s in [&mut *r, &mut *b] {
                            match s {
                                Source::Space(space) => {
                                    space.parameter = p;
                                    for (_, player) in &mut space.entries {
                                        player.set_fresh(at * player.clip.duration() as f64);
                                    }
                                }
                                Source::Tree(t) => {
                                    t.restart(at, 1.0, Wrap::Loop);
                                    t.set_parameter(0, p * 0.4);
                                    t.set_parameter(1, q);
                                }
                                Source::Clip(_) => unreachable!(),
                            }
                        }
                        sample_slot(r, &mut rows, &mut extra);
                        sample_source_soa(b, &mut out);
                        assert_eq!(bits(&rows_of(&out)), bits(&rows), "p {p} q {q} at {at}");
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, 9 * 3 * 4 * 3);
    }

    /// A tree with an additive or layered node samples as rows: it does not take blocks,
    /// where one of blends over the same clips does.
    #[test]
    fn trees_with_additive_or_layered_nodes_stay_in_rows() {
        let (_, [ca, cb]) = rig(9);
        let w = TreeValue::Const(0.5);
        for (node, blocks) in [
            (
                TreeNode::Additive {
                    base: 0,
                    add: 1,
                    weight: w,
                },
                false,
            ),
            (
                TreeNode::Layered {
                    base: 0,
                    overlay: 1,
                    mask: None,
                    weight: w,
                },
                false,
            ),
            (
                TreeNode::Lerp {
                    a: 0,
                    b: 1,
                    weight: w,
                },
                writes_blocks(&ca),
            ),
        ] {
            let nodes = vec![TreeNode::Clip(ca.clone()), TreeNode::Clip(cb.clone()), node];
            let shape = TreeShape::new(nodes, 0).unwrap();
            let tree = Source::Tree(Box::new(BlendTree::new(Arc::new(shape))));
            assert_eq!(samples_blocks(&tree), blocks);
        }
    }
}

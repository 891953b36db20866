//! Morph weights through the animator: each layer samples its slots' weight tracks, blends
//! them by the slots' weights, applies its inertial offsets, and the layers combine into
//! [`Animator::morph_weights`] as the joints combine into the pose, so a face follows the same
//! cross-fades, blend spaces, trees and layers as the body. Runs only for a skeleton with
//! morph channels; without any it costs nothing.

use super::layer::{Layer, Source, MAX_SLOTS};
use super::{Animator, BlendMode};
use crate::Skeleton;

/// A layer's morph-weight buffers: one per slot and one for blend spaces' second clip, and
/// the last three outputs (rotated with the joints' outputs).
#[derive(Clone, Debug)]
pub(crate) struct LayerMorph {
    pub buffers: Vec<Vec<f32>>,
    pub outputs: [Vec<f32>; 3],
}

impl LayerMorph {
    pub fn new(rest: &[f32]) -> Self {
        LayerMorph {
            buffers: vec![rest.to_vec(); MAX_SLOTS + 1],
            outputs: [rest.to_vec(), rest.to_vec(), rest.to_vec()],
        }
    }
}

/// Samples one slot's morph weights into `out`.
pub(super) fn sample_slot(source: &mut Source, out: &mut [f32], scratch: &mut [f32]) {
    match source {
        Source::Clip(p) => p.sample_weights(out),
        Source::Tree(t) => t.sample_weights(out),
        Source::Space(space) => {
            let (a, b, w) = space.bracket();
            space.entries[a].1.sample_weights(out);
            if a != b && w > 0.0 {
                space.entries[b].1.sample_weights(scratch);
                lerp(out, scratch, w);
            }
        }
    }
}

/// `out = out + (other - out) * t`.
pub(super) fn lerp(out: &mut [f32], other: &[f32], t: f32) {
    for (a, &b) in out.iter_mut().zip(other) {
        *a += (b - *a) * t;
    }
}

/// Weighted average of `inputs` (negative weights count as 0); `neutral` where they sum to 0.
fn blend(inputs: &[(&[f32], f32)], neutral: &[f32], out: &mut [f32]) {
    let total: f32 = inputs.iter().map(|x| x.1.max(0.0)).sum();
    if total <= 1e-6 {
        out.copy_from_slice(neutral);
        return;
    }
    out.fill(0.0);
    for &(w, weight) in inputs {
        let k = weight.max(0.0) / total;
        if k == 0.0 {
            continue;
        }
        for (o, &x) in out.iter_mut().zip(w) {
            *o += x * k;
        }
    }
}

impl Animator {
    /// Samples and blends layer `li`'s slots' morph weights into its output `next`, with its
    /// inertial offsets; `captured`: the joints' inertial transition was captured this update
    /// (with `prev` and `prev2` the outputs before it).
    pub(super) fn evaluate_layer_morph(
        layers: &mut [Layer],
        morph_zero: &[f32],
        skeleton: &Skeleton,
        li: usize,
        next: usize,
        captured: bool,
        had_output: bool,
    ) {
        let l = &mut layers[li];
        let neutral_zero = l.mode == BlendMode::Additive;
        let [o0, o1, o2] = &mut l.morph.outputs;
        let (output, prev, prev2) = match next {
            0 => (o0, &*o2, &*o1),
            1 => (o1, &*o0, &*o2),
            _ => (o2, &*o1, &*o0),
        };
        if l.slots.len() == 1 && l.slots[0].weight >= 1.0 {
            sample_slot(
                &mut l.slots[0].source,
                output,
                &mut l.morph.buffers[MAX_SLOTS],
            );
        } else {
            let (bufs, extra) = l.morph.buffers.split_at_mut(MAX_SLOTS);
            for (s, buf) in l.slots.iter_mut().zip(bufs.iter_mut()) {
                sample_slot(&mut s.source, buf, &mut extra[0]);
            }
            let mut inputs: [(&[f32], f32); MAX_SLOTS] = [(&[], 0.0); MAX_SLOTS];
            for (i, (s, buf)) in l.slots.iter().zip(bufs.iter()).enumerate() {
                inputs[i] = (buf, s.weight);
            }
            let neutral = if neutral_zero {
                morph_zero
            } else {
                skeleton.morph_rest()
            };
            blend(&inputs[..l.slots.len()], neutral, output);
        }
        if captured && had_output {
            l.inertial.capture_weights(prev, prev2, l.last_dt, output);
        }
        if l.inertial.active() {
            l.inertial.apply_weights(output);
        }
    }

    /// Combines layer `li`'s morph output into the animator's weights, as its joints were
    /// combined into the pose (`first`: no layer below; `covers`: it replaces everything).
    pub(super) fn combine_layer_morph(
        l: &Layer,
        morph: &mut [f32],
        skeleton: &Skeleton,
        weight: f32,
        first: bool,
        covers: bool,
    ) {
        let output = &l.morph.outputs[l.cur];
        if covers {
            morph.copy_from_slice(output);
            return;
        }
        if first {
            morph.copy_from_slice(skeleton.morph_rest());
        }
        let mask = l.mask.as_ref().map(|m| m.morph_weights());
        for (c, (o, &x)) in morph.iter_mut().zip(output).enumerate() {
            let m = match mask {
                Some(m) => weight * m.get(c).copied().unwrap_or(0.0),
                None => weight,
            };
            match l.mode {
                BlendMode::Override => *o += (x - *o) * m,
                BlendMode::Additive => *o += x * m,
            }
        }
    }
}

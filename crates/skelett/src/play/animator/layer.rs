//! Layers and their slots: what each layer plays ([`Source`]: a player or a blend space),
//! with weights that fade ([`Fade`]), queued clips, and the buffers the layer samples and
//! blends into. Starting a clip on a layer under a [`Transition`] and fading happen here;
//! advancing is in `advance.rs`, sampling and blending in `evaluate.rs`.

use std::sync::Arc;

use super::inertial::Inertial;
use super::{BlendMode, BlendSpace1D, BlendTree, Curve, PlayOptions, Player, Transition, When};
use crate::{Clip, JointMask, Pose, SoaPose, SOA_LANES};

/// What a slot plays.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    Clip(Player),
    Space(BlendSpace1D),
    Tree(Box<BlendTree>),
}

impl Source {
    /// The clip a notification names for this source: the player's, or a blend's first.
    pub(crate) fn first_clip(&self) -> Option<Arc<Clip>> {
        match self {
            Source::Clip(p) => Some(p.clip.clone()),
            Source::Space(b) => b.entries.first().map(|(_, p)| p.clip.clone()),
            Source::Tree(t) => t.players.first().map(|p| p.clip.clone()),
        }
    }

    /// The unwrapped normalised position (1 per cycle) of a clip or tree.
    pub(crate) fn normalized_position(&self) -> Option<f64> {
        match self {
            Source::Clip(p) => {
                let d = p.clip.duration() as f64;
                Some(if d > 0.0 { p.position() / d } else { 1.0 })
            }
            Source::Tree(t) => Some(t.normalized_position()),
            Source::Space(_) => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Fade {
    pub(super) from: f32,
    pub(super) to: f32,
    pub(super) duration: f32,
    pub(super) elapsed: f32,
    pub(super) curve: Curve,
}

#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub(crate) source: Source,
    /// The owner's name for the source (the graph's state index); tagged sources that leave
    /// the layer go to [`Layer::spare`] for reuse instead of being dropped.
    pub(crate) tag: Option<u32>,
    pub(crate) weight: f32,
    pub(super) fade: Option<Fade>,
    pub(super) sync: Option<u32>,
    /// Unwrapped positions before and after this update's advance (per blend-space entry
    /// for spaces: the first entry's).
    pub(super) advanced: (f64, f64),
}

#[derive(Clone, Debug)]
pub(super) struct Queued {
    pub(super) clip: Arc<Clip>,
    pub(super) when: When,
    pub(super) transition: Transition,
    pub(super) options: PlayOptions,
}

/// The most slots a layer keeps. A cross-fade that needs one more drops the faintest slot,
/// and the others take its weight in proportion: the layer keeps its total weight, and the
/// pose changes by the dropped slot's share only.
pub const MAX_SLOTS: usize = 4;

#[derive(Clone, Debug)]
pub(crate) struct Layer {
    pub(super) weight: f32,
    pub(super) mode: BlendMode,
    pub(super) mask: Option<JointMask>,
    pub(crate) slots: Vec<Slot>,
    /// Tagged sources that left the layer, kept for reuse (see [`Slot::tag`]).
    pub(crate) spare: Vec<(u32, Source)>,
    pub(super) queue: Vec<Queued>,
    /// Where the slots are sampled before they are blended: rows of the layer's own on
    /// skeletons under eight joints, else the updating thread's blocks.
    pub(super) slot_poses: SlotPoses,
    /// Poses as rows for what does not sample into blocks: `scratch[0]` takes such a slot
    /// (a tree, a blend space, a compact clip) before its copy into blocks, `scratch[1]` a
    /// blend space's second clip.
    pub(super) scratch: [Pose; 2],
    /// The layer's last three outputs, rotated instead of copied: `outputs[cur]` is the
    /// newest (inertial transitions need the two before the switch). An update that leaves
    /// the pose in blocks ([`super::blocks`]) writes `soa` instead and skips its output
    /// (`cur` moves on all the same); `in_blocks` says which.
    pub(super) outputs: [Pose; 3],
    pub(super) cur: usize,
    /// The last two outputs made in blocks, `soa[soa_cur]` the newer (skeletons of eight
    /// joints or more; `None` on shorter ones, which never take that path).
    pub(super) soa: Option<Box<[SoaPose; 2]>>,
    pub(super) soa_cur: usize,
    /// Which of the last two outputs are in `soa` instead of `outputs`: bit 0 the newest
    /// (`outputs[cur]`'s place), bit 1 the one before.
    pub(super) in_blocks: u8,
    pub(super) last_dt: f32,
    pub(super) inertial: Inertial,
    pub(super) inertial_pending: Option<f32>,
    /// The layer had something playing at the last update (its outputs are current).
    pub(super) produced: bool,
    /// The same buffers and outputs for morph weights.
    pub(super) morph: super::morph::LayerMorph,
    /// A disabled layer keeps its players, fades, queue and times but neither advances,
    /// fires events nor contributes to the pose ([`super::Animator::set_layer_enabled`]).
    pub(super) enabled: bool,
}

/// Where a layer samples its slots before blending them, [`MAX_SLOTS`] poses.
///
/// Skeletons of eight joints or more sample and blend their slots in blocks of eight joints
/// ([`crate::SoaPose`]; `blend_soa`'s kernel, the result transposed once on its way out),
/// with the slice blend's bits, into the updating thread's own blocks
/// (`evaluate::SLOT_BLOCKS`), shared by every animator that thread updates: they are
/// sampled and blended within one update and hold nothing from one update to the next, so a
/// crowd's characters reuse blocks that are already in the cache instead of each bringing in
/// its own (3-8 % of a character's update in crowds of 1024; about 7.7 KB less per
/// robot_quaternius animator). Shorter skeletons, which fill less than one block and which
/// the slice blend takes joint by joint, keep rows of their own.
#[derive(Clone, Debug)]
pub(crate) enum SlotPoses {
    Blocks,
    Rows(Vec<Pose>),
}

impl SlotPoses {
    /// The slot poses for a skeleton whose rest pose is `rest`.
    pub(super) fn new(rest: &Pose) -> SlotPoses {
        if rest.len() >= SOA_LANES {
            SlotPoses::Blocks
        } else {
            SlotPoses::Rows(vec![rest.clone(); MAX_SLOTS])
        }
    }
}

/// A layer weight: 0..=1 for override layers, -1..=1 for additive ones; NaN as 0.
pub(super) fn layer_weight(mode: BlendMode, w: f32) -> f32 {
    let lo = if mode == BlendMode::Additive {
        -1.0
    } else {
        0.0
    };
    if w.is_nan() {
        0.0
    } else {
        w.clamp(lo, 1.0)
    }
}

impl Layer {
    /// Removes slot `i`, keeping its source for reuse when tagged.
    fn remove(&mut self, i: usize) {
        let s = self.slots.remove(i);
        if let Some(tag) = s.tag {
            self.spare.push((tag, s.source));
        }
    }

    /// Removes every slot (tagged sources kept for reuse).
    pub(super) fn clear(&mut self) {
        while !self.slots.is_empty() {
            self.remove(self.slots.len() - 1);
        }
    }

    /// Removes the slots for which `keep` is false.
    fn retain(&mut self, keep: impl Fn(&Slot) -> bool) {
        let mut i = 0;
        while i < self.slots.len() {
            if keep(&self.slots[i]) {
                i += 1;
            } else {
                self.remove(i);
            }
        }
    }

    /// Makes `source` the layer's only slot, at full weight.
    fn replace(&mut self, source: Source, sync: Option<u32>, tag: Option<u32>) {
        self.clear();
        self.slots.push(Slot {
            source,
            tag,
            weight: 1.0,
            fade: None,
            sync,
            advanced: (0.0, 0.0),
        });
    }

    /// Starts `source` on this layer with `transition`.
    pub(super) fn start(
        &mut self,
        source: Source,
        sync: Option<u32>,
        transition: Transition,
        tag: Option<u32>,
    ) {
        match transition {
            Transition::Immediate => {
                self.replace(source, sync, tag);
                self.inertial.duration = 0.0;
            }
            Transition::Crossfade(duration, curve) => {
                let duration = if duration.is_finite() {
                    duration.max(0.0)
                } else {
                    0.0
                };
                self.fade_all_out(duration, curve);
                if self.slots.len() >= MAX_SLOTS {
                    // Drop the faintest slot to make room; the others take its weight in
                    // proportion, so the layer keeps its total weight (and does not sink
                    // toward what is below it until the fades end).
                    if let Some(i) = (0..self.slots.len())
                        .min_by(|&a, &b| self.slots[a].weight.total_cmp(&self.slots[b].weight))
                    {
                        let total: f32 = self.slots.iter().map(|s| s.weight).sum();
                        let left = total - self.slots[i].weight;
                        self.remove(i);
                        if left > 0.0 && total > left {
                            let k = total / left;
                            for s in &mut self.slots {
                                s.weight *= k;
                                if let Some(f) = &mut s.fade {
                                    f.from *= k;
                                }
                            }
                        }
                    }
                }
                self.slots.push(Slot {
                    source,
                    tag,
                    weight: if duration > 0.0 { 0.0 } else { 1.0 },
                    fade: (duration > 0.0).then_some(Fade {
                        from: 0.0,
                        to: 1.0,
                        duration,
                        elapsed: 0.0,
                        curve,
                    }),
                    sync,
                    advanced: (0.0, 0.0),
                });
                if duration == 0.0 {
                    self.retain(|s| s.fade.is_none());
                }
            }
            Transition::Inertial(duration) => {
                self.replace(source, sync, tag);
                self.inertial_pending = Some(if duration.is_finite() {
                    duration.max(0.0)
                } else {
                    0.0
                });
            }
        }
    }

    /// Fades everything on the layer out (nothing fades in): at once for
    /// [`Transition::Immediate`], over the duration otherwise.
    pub(super) fn fade_out(&mut self, transition: Transition) {
        let (duration, curve) = match transition {
            Transition::Immediate => (0.0, Curve::Linear),
            Transition::Crossfade(d, c) => (d, c),
            Transition::Inertial(d) => (d, Curve::SmoothStep),
        };
        if !(duration.is_finite() && duration > 0.0) {
            self.clear();
            return;
        }
        self.fade_all_out(duration, curve);
    }

    /// Every slot fades from its current weight to 0 over `duration`.
    fn fade_all_out(&mut self, duration: f32, curve: Curve) {
        for s in &mut self.slots {
            s.fade = Some(Fade {
                from: s.weight,
                to: 0.0,
                duration,
                elapsed: 0.0,
                curve,
            });
        }
    }

    /// Moves every slot's fading weight on by `dt` and drops the slots that faded out. Each
    /// fade-in that completes, and an inertial transition whose offsets end in this step,
    /// goes to `finished` as (how far into the step, 0..=1; the clip that came in).
    pub(super) fn fade(&mut self, dt: f32, finished: &mut Vec<(f32, Arc<Clip>)>) {
        let at = |left: f32| {
            if dt > 0.0 {
                (left / dt).clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        for s in &mut self.slots {
            if let Some(f) = &mut s.fade {
                let left = f.duration - f.elapsed;
                f.elapsed += dt;
                let x = if f.duration > 0.0 {
                    f.elapsed / f.duration
                } else {
                    1.0
                };
                s.weight = f.from + (f.to - f.from) * f.curve.at(x);
                if x >= 1.0 {
                    s.weight = f.to;
                    if f.to > 0.0 {
                        if let Some(c) = s.source.first_clip() {
                            finished.push((at(left), c));
                        }
                    }
                    s.fade = None;
                }
            }
        }
        // The inertial offsets advance in `evaluate` (not on the step that captures them).
        let i = &self.inertial;
        if self.inertial_pending.is_none() && i.active() && i.elapsed + dt >= i.duration {
            if let Some(c) = self.slots.last().and_then(|s| s.source.first_clip()) {
                finished.push((at(i.duration - i.elapsed), c));
            }
        }
        self.retain(|s| s.weight > 0.0 || s.fade.is_some());
    }
}

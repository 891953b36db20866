//! Layers and their slots: what each layer plays ([`Source`]: a player or a blend space),
//! with weights that fade ([`Fade`]), queued clips, and the buffers the layer samples and
//! blends into. Starting a clip on a layer under a [`Transition`] and fading happen here;
//! advancing is in `advance.rs`, sampling and blending in `evaluate.rs`.

use std::sync::Arc;

use super::inertial::Inertial;
use super::{BlendMode, BlendSpace1D, Curve, PlayOptions, Player, Transition, When};
use crate::{Clip, JointMask, Pose};

/// What a slot plays.
#[derive(Clone, Debug)]
pub(super) enum Source {
    Clip(Player),
    Space(BlendSpace1D),
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
pub(super) struct Slot {
    pub(super) source: Source,
    pub(super) weight: f32,
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

/// The most slots a layer keeps; a transition that needs one more drops the faintest.
pub const MAX_SLOTS: usize = 4;

#[derive(Clone, Debug)]
pub(super) struct Layer {
    pub(super) weight: f32,
    pub(super) mode: BlendMode,
    pub(super) mask: Option<JointMask>,
    pub(super) slots: Vec<Slot>,
    pub(super) queue: Vec<Queued>,
    /// One pose per slot, and one more for blend spaces' second clip.
    pub(super) buffers: Vec<Pose>,
    /// The layer's last three outputs, rotated instead of copied: `outputs[cur]` is the
    /// newest (inertial transitions need the two before the switch).
    pub(super) outputs: [Pose; 3],
    pub(super) cur: usize,
    pub(super) last_dt: f32,
    pub(super) inertial: Inertial,
    pub(super) inertial_pending: Option<f32>,
    /// The layer had something playing at the last update (its outputs are current).
    pub(super) produced: bool,
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
    /// Makes `source` the layer's only slot, at full weight.
    fn replace(&mut self, source: Source, sync: Option<u32>) {
        self.slots.clear();
        self.slots.push(Slot {
            source,
            weight: 1.0,
            fade: None,
            sync,
            advanced: (0.0, 0.0),
        });
    }

    /// Starts `source` on this layer with `transition`.
    pub(super) fn start(&mut self, source: Source, sync: Option<u32>, transition: Transition) {
        match transition {
            Transition::Immediate => {
                self.replace(source, sync);
                self.inertial.duration = 0.0;
            }
            Transition::Crossfade(duration, curve) => {
                let duration = if duration.is_finite() {
                    duration.max(0.0)
                } else {
                    0.0
                };
                for s in &mut self.slots {
                    s.fade = Some(Fade {
                        from: s.weight,
                        to: 0.0,
                        duration,
                        elapsed: 0.0,
                        curve,
                    });
                }
                if self.slots.len() >= MAX_SLOTS {
                    // Drop the faintest slot to make room.
                    if let Some(i) = (0..self.slots.len())
                        .min_by(|&a, &b| self.slots[a].weight.total_cmp(&self.slots[b].weight))
                    {
                        self.slots.remove(i);
                    }
                }
                self.slots.push(Slot {
                    source,
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
                    self.slots.retain(|s| s.fade.is_none());
                }
            }
            Transition::Inertial(duration) => {
                self.replace(source, sync);
                self.inertial_pending = Some(if duration.is_finite() {
                    duration.max(0.0)
                } else {
                    0.0
                });
            }
        }
    }

    /// Moves every slot's fading weight on by `dt` and drops the slots that faded out.
    pub(super) fn fade(&mut self, dt: f32) {
        for s in &mut self.slots {
            if let Some(f) = &mut s.fade {
                f.elapsed += dt;
                let x = if f.duration > 0.0 {
                    f.elapsed / f.duration
                } else {
                    1.0
                };
                s.weight = f.from + (f.to - f.from) * f.curve.at(x);
                if x >= 1.0 {
                    s.weight = f.to;
                    s.fade = None;
                }
            }
        }
        self.slots.retain(|s| s.weight > 0.0 || s.fade.is_some());
    }
}

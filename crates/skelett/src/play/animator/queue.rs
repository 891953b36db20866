//! Queued clips: [`Animator::queue`] lines a clip up on a layer, and after each update's
//! advance [`Animator::run_queues`] starts the first one whose moment (the current clip's
//! end or a local time) was crossed.

use std::sync::Arc;

use super::layer::{Queued, Source};
use super::{Animator, PlayOptions, Transition, When, Wrap};
use crate::{Clip, Error};

impl Animator {
    /// Queues `clip` on `layer`: it starts `when` the current clip ends or reaches a time,
    /// with `transition`. Queued clips start one after another.
    ///
    /// # Errors
    /// As [`Animator::play`].
    pub fn queue(
        &mut self,
        layer: usize,
        clip: Arc<Clip>,
        when: When,
        transition: Transition,
        options: PlayOptions,
    ) -> Result<(), Error> {
        super::control::check_clip(&self.skeleton, &clip)?;
        self.layer(layer)?.queue.push(Queued {
            clip,
            when,
            transition,
            options,
        });
        Ok(())
    }

    /// Starts queued clips whose moment came during this update's advance.
    pub(super) fn run_queues(&mut self) {
        for li in 0..self.layers.len() {
            if !self.layers[li].enabled {
                continue;
            }
            let Some(q) = self.layers[li].queue.first().cloned() else {
                continue;
            };
            let l = &self.layers[li];
            let current = l.slots.iter().rev().find_map(|s| match &s.source {
                Source::Clip(p) => Some((p, s.advanced)),
                _ => None,
            });
            let due = match current {
                None => true,
                Some((p, (a, b))) => {
                    let d = p.clip.duration() as f64;
                    match q.when {
                        When::End => {
                            p.finished()
                                || (d > 0.0 && p.wrap != Wrap::Once && {
                                    let (ca, cb) = ((a / d).floor(), (b / d).floor());
                                    if b >= a {
                                        cb > ca
                                    } else {
                                        cb < ca || (b / d).fract() == 0.0 && b < a
                                    }
                                })
                        }
                        When::At(t) => {
                            let t = t as f64;
                            if d <= 0.0 {
                                true
                            } else {
                                let (lo, hi) = if b >= a { (a, b) } else { (b, a) };
                                let k0 = ((lo - t) / d).ceil();
                                t + k0 * d <= hi && (a != b)
                            }
                        }
                    }
                }
            };
            if due {
                self.layers[li].queue.remove(0);
                let p = self.new_player(q.clip, &q.options);
                let _ = self.start(li, Source::Clip(p), q.options.sync_group, q.transition);
            }
        }
    }
}

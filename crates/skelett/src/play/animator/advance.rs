//! Advancing players: sync groups follow their heaviest player (the leader) by normalised
//! time, other players advance by their own speed, blend spaces move every entry by the
//! same fraction; every crossing of a clip event becomes a [`FiredEvent`], in the order
//! crossed.

use std::sync::Arc;

use super::layer::Source;
use super::player::Crossing;
use super::{Animator, FiredEvent, Player};
use crate::Clip;

/// The most sync groups an update leads; slots of further groups play at their own speed.
pub(super) const MAX_GROUPS: usize = 8;

/// A sync group's leader in an update: the group, the layer and slot of its heaviest
/// player, that player's weight, and once it has stepped its normalised position (a tree's
/// phase).
#[derive(Clone, Copy, Debug)]
pub(super) struct Leader {
    group: u32,
    layer: usize,
    slot: usize,
    weight: f32,
    pos: f64,
}

impl Animator {
    /// Advances every player: sync groups by their leader's normalised time, the rest by
    /// their own speed; collects events.
    pub(super) fn advance(&mut self, dt: f32) {
        let policy = self.policy;
        let notify = self.notify;
        // Leaders of sync groups, found first: their new normalised positions drive their
        // groups.
        let leaders = &mut self.leaders;
        leaders.clear();
        for (li, l) in self.layers.iter().enumerate().filter(|(_, l)| l.enabled) {
            for (si, s) in l.slots.iter().enumerate() {
                let Some(group) = s.sync else {
                    continue;
                };
                // Paused or zero-length players follow; they do not lead.
                let can_lead = match &s.source {
                    Source::Clip(p) => !p.paused && p.clip.duration() > 0.0,
                    Source::Tree(t) => !t.paused,
                    Source::Space(_) => false,
                };
                if !can_lead {
                    continue;
                }
                let weight = l.weight * s.weight;
                let leader = Leader {
                    group,
                    layer: li,
                    slot: si,
                    weight,
                    pos: 0.0,
                };
                match leaders.iter().position(|x| x.group == group) {
                    Some(k) if weight > leaders[k].weight => leaders[k] = leader,
                    Some(_) => {}
                    None if leaders.len() < MAX_GROUPS => leaders.push(leader),
                    None => {}
                }
            }
        }
        for leader in leaders.iter_mut() {
            let (li, si) = (leader.layer, leader.slot);
            let l = &mut self.layers[li];
            let weight = l.weight * l.slots[si].weight;
            let fires = weight >= policy.min_weight;
            if let Source::Tree(t) = &mut l.slots[si].source {
                let delta = t.own_step(dt);
                let (a, b) = t.advance(
                    delta,
                    (fires, notify),
                    &mut self.crossings,
                    &mut self.events,
                    li,
                    weight,
                );
                l.slots[si].advanced = (a, b);
                leader.pos = b;
            } else if let Source::Clip(p) = &mut l.slots[si].source {
                let d = p.clip.duration() as f64;
                let delta = own_step(p, dt);
                let out = (&mut self.crossings, &mut self.events);
                let (a, b) = step(p, delta, (fires, notify), out, li, weight, Some(delta));
                l.slots[si].advanced = (a, b);
                leader.pos = if d > 0.0 { b / d } else { 0.0 };
            }
        }
        let leaders = &self.leaders[..];
        for (li, l) in self
            .layers
            .iter_mut()
            .enumerate()
            .filter(|(_, l)| l.enabled)
        {
            let lw = l.weight;
            for (si, s) in l.slots.iter_mut().enumerate() {
                let weight = lw * s.weight;
                let is_leader = leaders.iter().any(|x| x.layer == li && x.slot == si);
                if is_leader {
                    continue;
                }
                let group = s
                    .sync
                    .and_then(|g| leaders.iter().find(|x| x.group == g))
                    .map(|x| x.pos);
                match &mut s.source {
                    Source::Tree(t) => {
                        let fires = weight >= policy.min_weight
                            && !(group.is_some() && policy.sync_leader_only);
                        let delta = match group {
                            Some(_) if t.paused => 0.0,
                            Some(nb) => nb - t.phase,
                            None => t.own_step(dt),
                        };
                        let out = (&mut self.crossings, &mut self.events);
                        s.advanced = t.advance(delta, (fires, notify), out.0, out.1, li, weight);
                    }
                    Source::Clip(p) => {
                        let d = p.clip.duration() as f64;
                        let fires = weight >= policy.min_weight
                            && !(group.is_some() && policy.sync_leader_only);
                        let delta = match group {
                            Some(_) if p.paused => 0.0,
                            // Followers move to their leader's normalised position.
                            Some(nb) => nb * d - p.position(),
                            None => own_step(p, dt),
                        };
                        let out = (&mut self.crossings, &mut self.events);
                        s.advanced = step(p, delta, (fires, notify), out, li, weight, None);
                    }
                    Source::Space(space) => {
                        // Normalised rate from the blended duration; every entry keeps the
                        // same phase; events from the heaviest entry.
                        let (ia, ib, w) = space.bracket();
                        let da = space.entries[ia].1.clip.duration() as f64;
                        let db = space.entries[ib].1.clip.duration() as f64;
                        let blended = da * (1.0 - w as f64) + db * w as f64;
                        let heaviest = if w > 0.5 { ib } else { ia };
                        let lead = &space.entries[heaviest].1;
                        let speed = if lead.paused { 0.0 } else { lead.speed as f64 };
                        let nd = if blended > 0.0 {
                            dt as f64 * speed / blended
                        } else {
                            0.0
                        };
                        for (i, (_, p)) in space.entries.iter_mut().enumerate() {
                            let d = p.clip.duration() as f64;
                            let fires = i == heaviest && weight >= policy.min_weight;
                            let out = (&mut self.crossings, &mut self.events);
                            let (a, b) = step(p, nd * d, (fires, notify), out, li, weight, None);
                            if i == 0 {
                                s.advanced = (a, b);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[inline(always)]
fn push_events(
    out: &mut Vec<FiredEvent>,
    crossings: &[Crossing],
    layer: usize,
    clip: &Arc<Clip>,
    weight: f32,
    delta: f64,
) {
    for c in crossings {
        out.push(FiredEvent {
            layer,
            clip: clip.clone(),
            index: c.event,
            kind: c.kind,
            at: if delta != 0.0 {
                (c.distance / delta.abs()).clamp(0.0, 1.0) as f32
            } else {
                0.0
            },
            backward: c.backward,
            weight,
        });
    }
}

/// The step a player takes on its own: `dt` at its speed, nothing while paused.
fn own_step(p: &Player, dt: f32) -> f64 {
    if p.paused {
        0.0
    } else {
        dt as f64 * p.speed as f64
    }
}

/// Advances `p` by `delta` seconds of clip time and, when it `fires`, turns the events it
/// crossed (and with `notify` its seams and ends) into [`FiredEvent`]s (their place in the
/// update measured against `span`, or the distance actually moved when `None`). Returns the
/// unwrapped positions before and after.
#[inline(always)]
fn step(
    p: &mut Player,
    delta: f64,
    (fires, notify): (bool, bool),
    (crossings, events): (&mut Vec<Crossing>, &mut Vec<FiredEvent>),
    layer: usize,
    weight: f32,
    span: Option<f64>,
) -> (f64, f64) {
    crossings.clear();
    let (a, b) = p.advance(delta, fires.then_some(&mut *crossings), notify);
    push_events(
        events,
        crossings,
        layer,
        &p.clip,
        weight,
        span.unwrap_or(b - a),
    );
    (a, b)
}

//! Planted feet: where the source's feet stand still on the ground ([`foot_contacts`]), and
//! the target's feet held where they landed through those contacts (the bake's foot pass,
//! [`BakeOptions::plant_feet`](super::BakeOptions::plant_feet)).
//!
//! A target with other proportions than the source takes other strides for the same joint
//! rotations: its hips, moved by the source's displacement scaled by the ratio of hip
//! heights, do not travel exactly as far as its legs push, and a foot on the ground slides.
//! The foot pass finds each contact in the source (a foot near the floor below it and
//! nearly still), takes where the target's foot touches down, and holds it there across the
//! floor until the source lifts it, by two-bone IK on the target's leg
//! ([`crate::ik::pin_feet`]). Its height in the contact is the target foot's own standing
//! height (its rest pose's, above the floor at scene y = 0) plus the source's lift above its
//! standing height, scaled: a character whose legs are shorter or longer for its hip height
//! than the source's neither floats nor sinks. The foot's rotation stays as retargeted. Legs
//! ease into a contact and back out of it over [`EASE_OUT`] seconds.
//!
//! The contacts are found here rather than with [`crate::contacts::Contacts`], which samples
//! a looping cycle at 120 points against its whole height range: a capture runs for minutes
//! over floors of several heights, so each frame is judged against the floor below it
//! within a second, and by the foot's speed.
//!
//! Where data comes from and goes: the source's legs from the same humanoid guess the
//! automatic map uses; the target's legs are the joints the map drives from them; poses from
//! the bake's first pass; the corrected poses go back into the bake.

use glam::{Mat4, Vec3};

use super::rig;
use crate::ik::{drop_to_reach, end_point, pin_feet, Feet, Leg, Pin, TwoBoneChain};
use crate::{Clip, Error, JointIndex, Skeleton, Transform};

/// How long a leg takes to ease from the retargeted motion to its pinned place before a
/// contact, and back after it, seconds.
pub const EASE_OUT: f32 = 0.15;

/// One foot contact of a clip: `foot` (a joint of the clip's skeleton) stands still on the
/// ground from `start` to `end` (clip seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FootContact {
    /// The foot joint (ankle).
    pub foot: JointIndex,
    /// When it touches down.
    pub start: f32,
    /// When it lifts.
    pub end: f32,
}

/// A foot is on the ground while its height is within this fraction of the leg's length
/// above the lowest it comes within [`FLOOR_WINDOW`] seconds...
const LOW: f32 = 0.1;
/// ...and it moves slower than this many leg lengths per second.
const STILL: f32 = 0.5;
/// Half the window the floor under a foot is looked for in, seconds: a capture on a
/// playground or a stair has floors at several heights.
const FLOOR_WINDOW: f32 = 0.5;
/// Shorter contacts are noise; shorter gaps between two contacts are joined.
const SHORTEST: f32 = 0.1;
const GAP: f32 = 0.05;

/// A leg: thigh, shin and foot, and its rest length (scene units).
type LegJoints = ([JointIndex; 3], f32);

/// The feet of a humanoid skeleton (by the same guess as [`super::JointMap::auto`]): per
/// side the thigh, shin and foot, with the leg's rest length.
fn legs(sk: &Skeleton) -> Vec<LegJoints> {
    hips_and_legs(sk).map_or_else(Vec::new, |h| h.1)
}

/// The hips and the legs of [`legs`].
fn hips_and_legs(sk: &Skeleton) -> Option<(JointIndex, Vec<LegJoints>)> {
    let rest = super::rest_world_positions(sk);
    let rig = rig::guess(sk, &rest)?;
    let legs = rig
        .legs
        .iter()
        .filter_map(|l| {
            let (u, m, e) = (l.upper?, l.lower?, l.end?);
            let p = |j: JointIndex| rest[j as usize];
            let length = p(u).distance(p(m)) + p(m).distance(p(e));
            (length > 0.0 && length.is_finite()).then_some(([u, m, e], length))
        })
        .collect();
    Some((rig.hips, legs))
}

/// The contacts in a foot's path: `positions` (scene space, +Y up) at `times`, for a leg of
/// `length`. Frame ranges, inclusive.
fn contacts_in(times: &[f32], positions: &[Vec3], length: f32) -> Vec<(usize, usize)> {
    let n = times.len().min(positions.len());
    let mut on = vec![false; n];
    let mut lo = 0;
    let mut hi = 0;
    for f in 0..n {
        while times[lo] < times[f] - FLOOR_WINDOW {
            lo += 1;
        }
        while hi + 1 < n && times[hi + 1] <= times[f] + FLOOR_WINDOW {
            hi += 1;
        }
        let floor = positions[lo..=hi]
            .iter()
            .map(|p| p.y)
            .fold(f32::INFINITY, f32::min);
        let (a, b) = (f.saturating_sub(1), (f + 1).min(n - 1));
        let dt = times[b] - times[a];
        let speed = if dt > 0.0 {
            positions[b].distance(positions[a]) / dt
        } else {
            0.0
        };
        on[f] = positions[f].y - floor <= LOW * length && speed <= STILL * length;
    }
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut f = 0;
    while f < n {
        if !on[f] {
            f += 1;
            continue;
        }
        let start = f;
        while f + 1 < n && on[f + 1] {
            f += 1;
        }
        match runs.last_mut() {
            Some(last) if times[start] - times[last.1] <= GAP => last.1 = f,
            _ => runs.push((start, f)),
        }
        f += 1;
    }
    runs.retain(|&(a, b)| times[b] - times[a] >= SHORTEST);
    runs
}

/// The foot contacts of `clip` on its humanoid `skeleton`: for each leg (found as the
/// automatic joint map finds them), the spans in which its foot is near the floor below it
/// (within a tenth of the leg's length of the lowest it comes within half a second) and
/// nearly still (under half a leg's length per second), sampled at the clip's key times.
/// Sorted by foot, then time.
///
/// # Errors
/// [`Error::NotHumanoid`] when the skeleton has no recognisable legs; sampling errors.
pub fn foot_contacts(skeleton: &Skeleton, clip: &Clip) -> Result<Vec<FootContact>, Error> {
    let legs = legs(skeleton);
    if legs.is_empty() {
        return Err(Error::NotHumanoid {
            problem: "no two legs (thigh, shin and foot each) by name or by the rest pose's layout"
                .into(),
        });
    }
    let times = super::bake::frame_times(clip, None)?;
    let mut pose = crate::Pose::rest(skeleton);
    let mut model = vec![Mat4::IDENTITY; skeleton.len()];
    let mut cache = crate::SamplingCache::for_clip(clip);
    let root = skeleton.root_transform();
    let mut paths = vec![Vec::with_capacity(times.len()); legs.len()];
    for &t in &times {
        crate::sample(clip, t, &mut cache, &mut pose)?;
        crate::local_to_model(skeleton, &pose, 0, &mut model)?;
        for (path, (joints, _)) in paths.iter_mut().zip(&legs) {
            path.push(root.transform_point3(model[joints[2] as usize].w_axis.truncate()));
        }
    }
    let mut out = Vec::new();
    for (path, (joints, length)) in paths.iter().zip(&legs) {
        for (a, b) in contacts_in(&times, path, *length) {
            out.push(FootContact {
                foot: joints[2],
                start: times[a],
                end: times[b],
            });
        }
    }
    Ok(out)
}

/// The foot pass of a bake: which target legs follow which source feet.
pub(super) struct FootPass {
    /// Per leg: the source foot and its leg's length (source scene units).
    source: Vec<(JointIndex, f32)>,
    /// Per leg: the target foot's height above the floor in its rest pose (scene units):
    /// where a standing foot's ankle is.
    standing: Vec<f32>,
    /// The target's legs, in the same order.
    feet: Feet,
}

impl FootPass {
    /// The legs the pass can hold: source legs whose thigh, shin and foot drive target
    /// joints that form a leg (the foot below the shin, or a foot control elsewhere, as
    /// robot_quaternius's, reached by the shin's end at rest). `None` when there are none.
    pub(super) fn new(
        source: &Skeleton,
        target: &Skeleton,
        by_target: &[Option<JointIndex>],
    ) -> Option<FootPass> {
        let target_of = |s: JointIndex| (0..by_target.len()).find(|&k| by_target[k] == Some(s));
        let mut sources = Vec::new();
        let mut standing = Vec::new();
        let mut legs = Vec::new();
        let target_rest = super::rest_world_positions(target);
        let (hips, source_legs) = hips_and_legs(source)?;
        for ([u, m, e], length) in source_legs {
            let (Some(tu), Some(tm), Some(te)) = (target_of(u), target_of(m), target_of(e)) else {
                continue;
            };
            let [tu, tm, te] = [tu, tm, te].map(|k| k as JointIndex);
            let chain = TwoBoneChain::new(target, [tu, tm, te])
                .or_else(|_| TwoBoneChain::reaching_joint(target, [tu, tm], te));
            let Ok(chain) = chain else {
                continue;
            };
            let Ok(leg) = Leg::new(target, chain, te, Vec3::ZERO) else {
                continue;
            };
            sources.push((e, length));
            standing.push(target_rest[te as usize].y);
            legs.push(leg);
        }
        let up = target.root_transform().inverse().transform_vector3(Vec3::Y);
        // The pelvis goes down where a leg cannot reach its pin otherwise; a target whose
        // hips are not above its legs keeps it where it is.
        let pelvis = target_of(hips).map(|k| k as JointIndex);
        let feet = Feet::new(target, legs.clone(), pelvis, up)
            .or_else(|_| Feet::new(target, legs, None, up))
            .ok()?;
        (!sources.is_empty()).then_some(FootPass {
            source: sources,
            standing,
            feet,
        })
    }

    /// The source feet whose contacts the pass follows.
    pub(super) fn source_feet(&self) -> impl Iterator<Item = JointIndex> + '_ {
        self.source.iter().map(|s| s.0)
    }

    /// The target feet, in the same order.
    pub(super) fn target_feet(&self) -> impl Iterator<Item = JointIndex> + '_ {
        self.feet.legs().iter().map(|l| l.foot())
    }

    /// Holds the target's feet through the source's contacts. `source_paths[i]` and
    /// `target_paths[i]` are leg `i`'s source and target foot positions (scene space) at
    /// `times`; `poses` holds the target's poses at those times, one after the other, and
    /// is corrected in place. Returns the number of contacts held.
    pub(super) fn run(
        &self,
        target: &Skeleton,
        times: &[f32],
        source_paths: &[Vec<Vec3>],
        target_paths: &[Vec<Vec3>],
        scale: f32,
        poses: &mut [Transform],
    ) -> Result<usize, Error> {
        let n = times.len();
        let legs = self.source.len();
        // Per leg and frame: the scene-space goal of the foot, if held.
        let mut goals: Vec<Vec<Option<Vec3>>> = vec![vec![None; n]; legs];
        let mut held = 0;
        let smooth = |s: f32| {
            let s = s.clamp(0.0, 1.0);
            s * s * (3.0 - 2.0 * s)
        };
        for (i, &(_, length)) in self.source.iter().enumerate() {
            let path = &target_paths[i];
            let runs = contacts_in(times, &source_paths[i], length);
            held += runs.len();
            // How high the source's ankle is when it stands: its median over the contacts.
            let mut heights: Vec<f32> = runs
                .iter()
                .flat_map(|&(a, b)| source_paths[i][a..=b].iter().map(|p| p.y))
                .collect();
            heights.sort_by(f32::total_cmp);
            let Some(&source_standing) = heights.get(heights.len() / 2) else {
                continue;
            };
            // In a contact the foot stays where it landed across the floor, and stands as
            // high above it as the target's foot does at rest (plus the source's own lift
            // from standing, scaled): a foot neither floats nor sinks.
            let mut offset = vec![Vec3::ZERO; n];
            for &(a, b) in &runs {
                let landed = path[a];
                for f in a..=b {
                    let y = self.standing[i] + (source_paths[i][f].y - source_standing) * scale;
                    goals[i][f] = Some(Vec3::new(landed.x, y, landed.z));
                }
                // Ease into the contact and back out of it, toward the retargeted motion.
                let (into, out) = (goals[i][a].unwrap_or(path[a]) - path[a], {
                    goals[i][b].unwrap_or(path[b]) - path[b]
                });
                for f in (0..a).rev() {
                    let s = (times[a] - times[f]) / EASE_OUT;
                    if s >= 1.0 || goals[i][f].is_some() {
                        break;
                    }
                    offset[f] += into * (1.0 - smooth(s));
                }
                for f in b + 1..n {
                    let s = (times[f] - times[b]) / EASE_OUT;
                    if s >= 1.0 {
                        break;
                    }
                    offset[f] += out * (1.0 - smooth(s));
                }
            }
            for f in 0..n {
                if goals[i][f].is_none() && offset[f] != Vec3::ZERO {
                    goals[i][f] = Some(path[f] + offset[f]);
                }
            }
        }
        let to_model = target.root_transform().inverse();
        let nt = target.len();
        let mut model = vec![Mat4::IDENTITY; target.len()];
        // How far the pelvis must go down for every held leg to reach (model units, along
        // -up), per frame; then widened and smoothed over PELVIS_EASE either side so that
        // it eases in and out and is never less than a frame needs.
        let mut drop = vec![0.0f32; n];
        if self.feet.pelvis().is_some() {
            for (f, d) in drop.iter_mut().enumerate() {
                if goals.iter().all(|g| g[f].is_none()) {
                    continue;
                }
                let pose = &poses[f * nt..(f + 1) * nt];
                crate::local_to_model(target, pose, 0, &mut model)?;
                for (leg, g) in self.feet.legs().iter().zip(&goals) {
                    if let Some(goal) = g[f] {
                        *d = d.max(pelvis_drop(
                            leg,
                            to_model.transform_point3(goal),
                            self.feet.up(),
                            &model,
                        ));
                    }
                }
            }
            drop = ease(times, &drop, PELVIS_EASE);
        }
        let mut pins = vec![
            Pin {
                sole: Vec3::ZERO,
                weight: 0.0
            };
            legs
        ];
        for f in 0..n {
            if goals.iter().all(|g| g[f].is_none()) && drop[f] == 0.0 {
                continue;
            }
            let pose = &mut poses[f * nt..(f + 1) * nt];
            crate::local_to_model(target, pose, 0, &mut model)?;
            if let (Some(p), true) = (self.feet.pelvis(), drop[f] > 0.0) {
                let offset = -self.feet.up() * drop[f];
                let delta = match target.parent(p) {
                    Some(parent) => model[parent as usize].inverse().transform_vector3(offset),
                    None => offset,
                };
                if delta.is_finite() {
                    pose[p as usize].translation += delta;
                    // Feet that hang elsewhere (control joints at the root) go down with
                    // the legs they end.
                    for leg in self.feet.legs() {
                        let foot = leg.foot();
                        if target.is_below(foot, p) {
                            continue;
                        }
                        let d = match target.parent(foot) {
                            Some(q) => model[q as usize].inverse().transform_vector3(offset),
                            None => offset,
                        };
                        if d.is_finite() {
                            pose[foot as usize].translation += d;
                        }
                    }
                    crate::local_to_model(target, pose, 0, &mut model)?;
                }
            }
            for (pin, g) in pins.iter_mut().zip(&goals) {
                *pin = match g[f] {
                    Some(goal) => Pin {
                        sole: to_model.transform_point3(goal),
                        weight: 1.0,
                    },
                    None => Pin {
                        sole: Vec3::ZERO,
                        weight: 0.0,
                    },
                };
            }
            pin_feet(&self.feet, &pins, target, pose, &mut model)?;
        }
        Ok(held)
    }
}

/// Half the window the pelvis drop is eased over, seconds.
const PELVIS_EASE: f32 = 0.15;
/// Legs are held at most this fraction of their length from the hip.
const REACH: f32 = 0.995;

/// How far the pelvis must go down (along `-up`, model space) for `leg`'s foot to reach
/// `goal` (model space) at [`REACH`] of the leg's length; at most half that length.
fn pelvis_drop(leg: &Leg, goal: Vec3, up: Vec3, model: &[Mat4]) -> f32 {
    let [s, _, _] = leg.chain().joints();
    let hip = model[s as usize].w_axis.truncate();
    let foot = model[leg.foot() as usize];
    // The chain's end goes where the foot's offset from it allows.
    let end = end_point(leg.chain(), model);
    let end_goal = goal + (end - foot.transform_point3(leg.sole()));
    let reach = REACH * leg.length(model);
    drop_to_reach(hip, end_goal, up, reach).clamp(0.0, 0.5 * reach)
}

/// `values` at `times`, each replaced by the largest within `half` seconds, then averaged
/// over `half` seconds either side: a smooth curve never below the input.
fn ease(times: &[f32], values: &[f32], half: f32) -> Vec<f32> {
    let window = |f: usize| {
        let lo = times.partition_point(|&t| t < times[f] - half);
        let hi = times.partition_point(|&t| t <= times[f] + half);
        lo..hi.max(lo + 1)
    };
    let widened: Vec<f32> = (0..values.len())
        .map(|f| values[window(f)].iter().fold(0.0, |a: f32, &b| a.max(b)))
        .collect();
    (0..values.len())
        .map(|f| {
            let w = &widened[window(f)];
            w.iter().sum::<f32>() / w.len() as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_path_has_one_contact_per_stance() {
        // A foot of a 1-long leg at 100 frames per second: 0.4 s planted, 0.3 s swinging
        // (lifted 0.3, moving 1 forward), planted again.
        let times: Vec<f32> = (0..=110).map(|i| i as f32 / 100.0).collect();
        let path: Vec<Vec3> = times
            .iter()
            .map(|&t| {
                if t < 0.4 {
                    Vec3::ZERO
                } else if t < 0.7 {
                    let s = (t - 0.4) / 0.3;
                    Vec3::new(0.0, 0.3 * (s * std::f32::consts::PI).sin(), s)
                } else {
                    Vec3::Z
                }
            })
            .collect();
        let runs = contacts_in(&times, &path, 1.0);
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert!(runs[0].0 == 0 && (38..=40).contains(&runs[0].1), "{runs:?}");
        assert!(
            (70..=72).contains(&runs[1].0) && runs[1].1 == 110,
            "{runs:?}"
        );
    }
}

//! Contact events: footsteps found from the animation itself.
//!
//! [`footstep_events`] looks for the joints that touch the ground (named like feet, toes or
//! ankles; for quadrupeds also hands, paws or wrists that come down to the floor), samples
//! their height over a looping clip, and places a `footstep` event at each touchdown: the
//! frame a contact joint comes down into the lowest fifth of its height range. Add them
//! with [`Clip::with_events`](crate::Clip::with_events) and the animator fires them like
//! any other event.
//!
//! ```no_run
//! # fn f(skeleton: &skelett::Skeleton, walk: skelett::Clip) -> Result<(), skelett::Error> {
//! let steps = skelett::contacts::footstep_events(skeleton, &walk);
//! let walk = walk.with_events(steps)?; // "footstep" events, payload "left foot", "right hand", ...
//! # Ok(()) }
//! ```

use glam::Mat4;

use crate::{local_to_model, sample_uncached, Clip, ClipEvent, JointIndex, Pose, Skeleton};

/// Contact candidates: the last joint of each chain named like a foot, toe or ankle, or
/// like a hand, paw or wrist (quadrupeds' front feet; [`footstep_events`] keeps only those that
/// reach the ground). Without any, the two lowest leaf joints of the rest pose.
fn feet(sk: &Skeleton) -> Vec<JointIndex> {
    let kind = |j: JointIndex| {
        let n = sk.name(j).to_ascii_lowercase();
        if n.contains("foot") || n.contains("toe") || n.contains("ankle") {
            1
        } else if n.contains("hand") || n.contains("paw") || n.contains("wrist") {
            2
        } else {
            0
        }
    };
    let n = sk.len() as JointIndex;
    let same_below =
        |j: JointIndex| (0..n).any(|c| c != j && kind(c) == kind(j) && is_below(sk, c, j));
    let named: Vec<JointIndex> = (0..n).filter(|&j| kind(j) != 0 && !same_below(j)).collect();
    if named.iter().any(|&j| kind(j) == 1) {
        return named;
    }
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    if local_to_model(sk, sk.rest_pose(), 0, &mut model).is_err() {
        return Vec::new();
    }
    let mut leaves: Vec<JointIndex> = (0..n)
        .filter(|&j| !(0..n).any(|c| sk.parent(c) == Some(j)))
        .collect();
    let root = sk.root_transform();
    leaves.sort_by(|&a, &b| {
        let h = |j: JointIndex| root.transform_point3(model[j as usize].w_axis.truncate()).y;
        h(a).total_cmp(&h(b))
    });
    leaves.truncate(2);
    leaves
}

/// "left foot", "right hand", ... from a joint's name, or the name itself.
fn contact_name(name: &str) -> String {
    let n = name.to_ascii_lowercase();
    let side = if n.contains("left") || n.starts_with("l_") {
        "left"
    } else if n.contains("right") || n.starts_with("r_") {
        "right"
    } else {
        return name.to_string();
    };
    let part = if n.contains("hand") || n.contains("paw") || n.contains("wrist") {
        "hand"
    } else {
        "foot"
    };
    format!("{side} {part}")
}

fn is_below(sk: &Skeleton, mut j: JointIndex, ancestor: JointIndex) -> bool {
    while let Some(p) = sk.parent(j) {
        if p == ancestor {
            return true;
        }
        j = p;
    }
    false
}

/// Footstep events on a looping locomotion clip: for each foot, the times its height (scene
/// space, sampled at 120 points of the cycle) comes down into the lowest fifth of its range,
/// at most one per half cycle. Payload: "left foot", "right hand" (a quadruped's front foot)
/// or the joint's name.
pub fn footstep_events(sk: &Skeleton, clip: &Clip) -> Vec<ClipEvent> {
    let feet = feet(sk);
    let steps = 120usize;
    let root = sk.root_transform();
    let mut pose = Pose::rest(sk);
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let mut heights = vec![Vec::with_capacity(steps); feet.len()];
    for i in 0..steps {
        let t = clip.start() + clip.duration() * i as f32 / steps as f32;
        if sample_uncached(clip, t, &mut pose).is_err()
            || local_to_model(sk, &pose, 0, &mut model).is_err()
        {
            return Vec::new();
        }
        for (k, &f) in feet.iter().enumerate() {
            heights[k].push(root.transform_point3(model[f as usize].w_axis.truncate()).y);
        }
    }
    let range = |h: &[f32]| {
        h.iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            })
    };
    // The floor is the lowest any candidate gets; a candidate that stays above the lowest
    // 35% of the candidates' overall height range (a walking human's hand, about 70%) is not
    // a foot. The Fox's front paws (joints at the wrist) come down to about 30%.
    let (floor, top) = heights
        .iter()
        .map(|h| range(h))
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), (lo, hi)| {
            (a.min(lo), b.max(hi))
        });
    let mut events = Vec::new();
    for (k, &f) in feet.iter().enumerate() {
        let h = &heights[k];
        let (lo, hi) = range(h);
        if hi - lo <= 1e-6 || !(hi - lo).is_finite() || lo > floor + 0.35 * (top - floor) {
            continue;
        }
        let payload = contact_name(sk.name(f));
        // Touchdown: the frame the foot comes down into the lowest fifth of its range.
        let band = lo + 0.2 * (hi - lo);
        let mut last: Option<usize> = None;
        for i in 0..steps {
            let prev = h[(i + steps - 1) % steps];
            if h[i] <= band && prev > band && last.is_none_or(|l| i - l > steps / 2) {
                last = Some(i);
                events.push(ClipEvent {
                    time: clip.start() + clip.duration() * i as f32 / steps as f32,
                    name: "footstep".into(),
                    payload: Some(payload.clone()),
                });
            }
        }
    }
    events.sort_by(|a, b| a.time.total_cmp(&b.time));
    events
}

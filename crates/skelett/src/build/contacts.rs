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

use glam::{Mat4, Vec3};

use crate::{local_to_model, sample_uncached, Clip, ClipEvent, JointIndex, Pose, Skeleton};

/// Contact candidates: the last joint of each chain named like a foot, toe or ankle, or
/// like a hand, paw or wrist (quadrupeds' front feet; [`footstep_events`] keeps only those that
/// reach the ground). Without any, the two lowest leaf joints of the rest pose.
pub(crate) fn feet(sk: &Skeleton) -> Vec<JointIndex> {
    let kind = |j: JointIndex| contact_kind(sk.name(j));
    let n = sk.len() as JointIndex;
    let same_below =
        |j: JointIndex| (0..n).any(|c| c != j && kind(c) == kind(j) && sk.is_below(c, j));
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

/// What a joint's name says it touches the ground with: 1 a foot, toe or ankle; 2 a hand,
/// paw or wrist (a quadruped's front foot); 0 neither.
pub(crate) fn contact_kind(name: &str) -> u8 {
    let n = name.to_ascii_lowercase();
    if n.contains("foot") || n.contains("toe") || n.contains("ankle") {
        1
    } else if n.contains("hand") || n.contains("paw") || n.contains("wrist") {
        2
    } else {
        0
    }
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

/// How much each of some joints is in contact with the floor over a clip: 1 while it is in
/// the lowest fifth of its height range over the clip (where [`footstep_events`] puts a
/// touchdown), 0 above two fifths, smooth between; sampled at 120 points of the cycle and
/// looked up by time. Foot placement ([`crate::ik::place_feet`]) weighs each foot's tilt
/// to the ground by it. Built once per clip and character, offline.
///
/// ```no_run
/// # fn f(skeleton: &skelett::Skeleton, walk: &skelett::Clip, feet: &[skelett::JointIndex]) {
/// let contacts = skelett::contacts::Contacts::new(skeleton, walk, feet);
/// let mut weights = [0.0; 2];
/// contacts.weights_at(0.25, &mut weights); // [left, right]: 1 planted, 0 in the air
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Contacts {
    joints: Vec<JointIndex>,
    start: f32,
    duration: f32,
    /// `STEPS` values per joint, joint after joint.
    values: Vec<f32>,
}

const STEPS: usize = 120;

impl Contacts {
    /// The contact curves of `joints` (scene-space height, up is +Y of
    /// [`Skeleton::root_transform`]'s scene) over `clip`. A joint whose height does not
    /// change is in contact throughout; one that cannot be sampled has no contact.
    pub fn new(sk: &Skeleton, clip: &Clip, joints: &[JointIndex]) -> Self {
        let points: Vec<(JointIndex, Vec3)> = joints.iter().map(|&j| (j, Vec3::ZERO)).collect();
        Self::at_points(sk, clip, &points)
    }

    /// The contact curves of points fixed to joints (a joint and a point in its local
    /// space, such as a foot's sole): as [`Contacts::new`] for the points' heights. A point
    /// whose height changes by less than 2 % of the skeleton's rest height over the clip (a
    /// foot planted through an idle) is in contact throughout.
    pub fn at_points(sk: &Skeleton, clip: &Clip, points: &[(JointIndex, Vec3)]) -> Self {
        let heights = heights(sk, clip, points).unwrap_or_default();
        let still = 0.02 * rest_height(sk);
        let mut values = vec![0.0; points.len() * STEPS];
        for (k, h) in heights.iter().enumerate() {
            let (lo, hi) = range(h);
            for (i, v) in values[k * STEPS..(k + 1) * STEPS].iter_mut().enumerate() {
                *v = if hi - lo <= still || !(hi - lo).is_finite() {
                    1.0
                } else {
                    let x = ((h[i] - lo) / (hi - lo) - 0.2) / 0.2;
                    let x = x.clamp(0.0, 1.0);
                    1.0 - x * x * (3.0 - 2.0 * x)
                };
            }
        }
        Contacts {
            joints: points.iter().map(|p| p.0).collect(),
            start: clip.start(),
            duration: clip.duration(),
            values,
        }
    }

    /// The joints, in the order of [`Contacts::weights_at`].
    pub fn joints(&self) -> &[JointIndex] {
        &self.joints
    }

    /// The contact of joint `k` (its position in [`Contacts::joints`]) at clip time `time`
    /// (wrapped into the clip; linear between samples); 0 for a `k` past the joints.
    pub fn weight(&self, k: usize, time: f32) -> f32 {
        let Some(curve) = self.values.get(k * STEPS..(k + 1) * STEPS) else {
            return 0.0;
        };
        if self.duration.is_nan() || self.duration <= 0.0 || !time.is_finite() {
            return curve[0];
        }
        let x = ((time - self.start) / self.duration).rem_euclid(1.0) * STEPS as f32;
        let i = (x as usize).min(STEPS - 1);
        let f = x - i as f32;
        curve[i] * (1.0 - f) + curve[(i + 1) % STEPS] * f
    }

    /// The contact of every joint at `time`, into `out` (as many as fit).
    pub fn weights_at(&self, time: f32, out: &mut [f32]) {
        for (k, o) in out.iter_mut().enumerate().take(self.joints.len()) {
            *o = self.weight(k, time);
        }
    }
}

/// How tall the skeleton's rest pose is (scene space).
fn rest_height(sk: &Skeleton) -> f32 {
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    if local_to_model(sk, sk.rest_pose(), 0, &mut model).is_err() {
        return 0.0;
    }
    let root = sk.root_transform();
    let (lo, hi) = range(
        &model
            .iter()
            .map(|m| root.transform_point3(m.w_axis.truncate()).y)
            .collect::<Vec<_>>(),
    );
    if (hi - lo).is_finite() {
        hi - lo
    } else {
        0.0
    }
}

/// Scene-space heights of points fixed to joints at `STEPS` points of the clip.
fn heights(sk: &Skeleton, clip: &Clip, joints: &[(JointIndex, Vec3)]) -> Option<Vec<Vec<f32>>> {
    let root = sk.root_transform();
    let mut pose = Pose::rest(sk);
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let mut heights = vec![Vec::with_capacity(STEPS); joints.len()];
    for i in 0..STEPS {
        let t = clip.start() + clip.duration() * i as f32 / STEPS as f32;
        sample_uncached(clip, t, &mut pose).ok()?;
        local_to_model(sk, &pose, 0, &mut model).ok()?;
        for (k, &(f, point)) in joints.iter().enumerate() {
            let m = model.get(f as usize)?;
            heights[k].push(root.transform_point3(m.transform_point3(point)).y);
        }
    }
    Some(heights)
}

fn range(h: &[f32]) -> (f32, f32) {
    h.iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        })
}

/// Footstep events on a looping locomotion clip: for each foot, the times its height (scene
/// space, sampled at 120 points of the cycle) comes down into the lowest fifth of its range,
/// at most one per half cycle. Payload: "left foot", "right hand" (a quadruped's front foot)
/// or the joint's name.
pub fn footstep_events(sk: &Skeleton, clip: &Clip) -> Vec<ClipEvent> {
    let feet = feet(sk);
    let steps = STEPS;
    let points: Vec<(JointIndex, Vec3)> = feet.iter().map(|&j| (j, Vec3::ZERO)).collect();
    let Some(heights) = heights(sk, clip, &points) else {
        return Vec::new();
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

//! Inertialization (Bollo, GDC 2016): switch to the target clip at once and decay the
//! difference between the old pose and the new one over the transition, instead of
//! evaluating both clips as a cross-fade does.
//!
//! At the switch, each joint's offset (old minus target: a translation difference, a rotation
//! as a scaled axis, a scale difference) and its velocity (from the last two output poses)
//! are captured; every later pose is the target plus the offset decayed by a quintic that
//! reaches zero with zero velocity and acceleration at the end of the transition. Only the
//! target clip is sampled.

use glam::{Quat, Vec3};

use crate::Transform;

/// A quintic decay of one vector offset along its initial direction.
#[derive(Clone, Copy, Debug, Default)]
struct Decay {
    dir: Vec3,
    /// x(t) = ((((a t + b) t + c) t + d) t + v0) t + x0, for t < t1.
    coef: [f32; 6],
    t1: f32,
}

impl Decay {
    fn new(x0: Vec3, v: Vec3, duration: f32) -> Self {
        let mag = x0.length();
        if mag < 1e-9 || duration <= 0.0 {
            return Self::default();
        }
        let dir = x0 / mag;
        // Velocity along the offset; moving away from zero is not carried on.
        let v0 = v.dot(dir).min(0.0);
        let mut t1 = duration;
        if v0 < 0.0 {
            t1 = t1.min(-5.0 * mag / v0);
        }
        let t1 = t1.max(1e-4);
        let a0 = (-8.0 * v0 * t1 - 20.0 * mag) / (t1 * t1);
        let t2 = t1 * t1;
        let t3 = t2 * t1;
        let a = -(a0 * t2 + 6.0 * v0 * t1 + 12.0 * mag) / (2.0 * t3 * t2);
        let b = (3.0 * a0 * t2 + 16.0 * v0 * t1 + 30.0 * mag) / (2.0 * t2 * t2);
        let c = -(3.0 * a0 * t2 + 12.0 * v0 * t1 + 20.0 * mag) / (2.0 * t3);
        Self {
            dir,
            coef: [a, b, c, a0 / 2.0, v0, mag],
            t1,
        }
    }

    fn at(&self, t: f32) -> Vec3 {
        if t >= self.t1 {
            return Vec3::ZERO;
        }
        let [a, b, c, d, v0, x0] = self.coef;
        self.dir * (((((a * t + b) * t + c) * t + d) * t + v0) * t + x0)
    }
}

/// The offsets of one inertial transition, per joint.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inertial {
    translation: Vec<Decay>,
    rotation: Vec<Decay>,
    scale: Vec<Decay>,
    /// Morph weights' offsets (in `x`).
    weights: Vec<Decay>,
    pub elapsed: f32,
    pub duration: f32,
}

fn scaled_axis(q: Quat) -> Vec3 {
    let q = if q.w < 0.0 { -q } else { q };
    let v = Vec3::new(q.x, q.y, q.z);
    let s = v.length();
    if s < 1e-9 {
        return Vec3::ZERO;
    }
    v / s * (2.0 * s.atan2(q.w))
}

impl Inertial {
    /// Room for `joints` joints and `channels` morph weights, so that capturing allocates
    /// nothing.
    pub fn with_capacity(joints: usize, channels: usize) -> Self {
        Self {
            translation: Vec::with_capacity(joints),
            rotation: Vec::with_capacity(joints),
            scale: Vec::with_capacity(joints),
            weights: Vec::with_capacity(channels),
            elapsed: 0.0,
            duration: 0.0,
        }
    }

    /// Captures the offsets from `target` to `prev` (the last output), with the velocity of
    /// the output from `prev2` to `prev` over `dt`.
    pub fn capture(
        &mut self,
        prev: &[Transform],
        prev2: &[Transform],
        dt: f32,
        target: &[Transform],
        duration: f32,
    ) {
        let n = target.len();
        let inv_dt = if dt > 0.0 { 1.0 / dt } else { 0.0 };
        self.translation.clear();
        self.rotation.clear();
        self.scale.clear();
        for j in 0..n {
            let (p, p2, t) = (&prev[j], &prev2[j], &target[j]);
            self.translation.push(Decay::new(
                p.translation - t.translation,
                (p.translation - p2.translation) * inv_dt,
                duration,
            ));
            let x0 = scaled_axis(t.rotation.conjugate() * p.rotation);
            let x_before = scaled_axis(t.rotation.conjugate() * p2.rotation);
            self.rotation
                .push(Decay::new(x0, (x0 - x_before) * inv_dt, duration));
            self.scale.push(Decay::new(
                p.scale - t.scale,
                (p.scale - p2.scale) * inv_dt,
                duration,
            ));
        }
        self.elapsed = 0.0;
        self.duration = duration;
    }

    /// Captures the morph weights' offsets from `target` to `prev`, as [`Inertial::capture`]
    /// does for joints (call it after that, which sets the duration).
    pub fn capture_weights(&mut self, prev: &[f32], prev2: &[f32], dt: f32, target: &[f32]) {
        let inv_dt = if dt > 0.0 { 1.0 / dt } else { 0.0 };
        self.weights.clear();
        for ((&p, &p2), &t) in prev.iter().zip(prev2).zip(target) {
            self.weights.push(Decay::new(
                Vec3::new(p - t, 0.0, 0.0),
                Vec3::new((p - p2) * inv_dt, 0.0, 0.0),
                self.duration,
            ));
        }
    }

    /// Adds the decayed morph-weight offsets to `weights` (the target's).
    pub fn apply_weights(&self, weights: &mut [f32]) {
        let t = self.elapsed;
        for (w, d) in weights.iter_mut().zip(&self.weights) {
            *w += d.at(t).x;
        }
    }

    /// Notes the offsets' memory (for [`super::Animator::prefetch`]).
    pub fn note_blocks(&self, r: &mut crate::play::crowd::Regions) {
        r.push(&self.translation);
        r.push(&self.rotation);
        r.push(&self.scale);
        r.push(&self.weights);
    }

    /// `true` while offsets remain.
    pub fn active(&self) -> bool {
        self.elapsed < self.duration
    }

    /// Adds the decayed offsets at the current elapsed time to `pose` (the target's pose).
    pub fn apply(&self, pose: &mut [Transform]) {
        let t = self.elapsed;
        for (j, x) in pose.iter_mut().enumerate().take(self.translation.len()) {
            x.translation += self.translation[j].at(t);
            let r = self.rotation[j].at(t);
            if r != Vec3::ZERO {
                x.rotation = (x.rotation * Quat::from_scaled_axis(r)).normalize();
            }
            x.scale += self.scale[j].at(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_starts_at_the_offset_and_ends_at_rest() {
        let d = Decay::new(Vec3::new(1.0, 0.0, 0.0), Vec3::new(-0.5, 0.0, 0.0), 0.5);
        assert!((d.at(0.0) - Vec3::X).length() < 1e-6);
        assert!(d.at(0.5).length() < 1e-6);
        // Monotone towards zero and never overshooting it.
        let mut last = 1.0;
        for i in 1..=50 {
            let x = d.at(i as f32 * 0.01).x;
            assert!(x <= last + 1e-6 && x >= -1e-3, "{i}: {x}");
            last = x;
        }
        // Close to the end the offset is tiny and flat.
        assert!(d.at(0.49).length() < 1e-4);
    }
}

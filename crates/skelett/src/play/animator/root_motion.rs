//! Root motion: the root joint's horizontal travel and yaw over an update, taken from layer
//! 0's players by weight (cut at loop boundaries so turning walks keep turning), and removed
//! from the pose so the game moves the character instead.

use glam::{Quat, Vec3};

use super::layer::Source;
use super::{Animator, Player, RootMotion, RootMotionConfig, Wrap};
use crate::{sample_joint, Transform};

impl Animator {
    /// The root motion of this update from layer 0's players, by weight.
    pub(super) fn root_motion(&self, cfg: &RootMotionConfig) -> RootMotion {
        let Some(l) = self.layers.first().filter(|l| l.enabled) else {
            return RootMotion::default();
        };
        let mut out = RootMotion::default();
        let mut wsum = 0.0;
        let mut add = |p: &Player, (a, b): (f64, f64), w: f32| {
            if w <= 0.0 {
                return;
            }
            let m = player_root_motion(p, a, b, cfg);
            out.translation += m.translation * w;
            out.yaw += m.yaw * w;
            wsum += w;
        };
        for s in &l.slots {
            match &s.source {
                Source::Clip(p) => add(p, s.advanced, s.weight),
                Source::Tree(t) => {
                    for ((p, w), span) in t.players().zip(&t.advanced) {
                        add(p, *span, w * s.weight);
                    }
                }
                Source::Space(b) => {
                    for (p, w) in b.players() {
                        let d = p.clip.duration() as f64;
                        // Every entry moved by the same fraction; recover its own span.
                        let (a0, b0) = s.advanced;
                        let d0 = b.entries[0].1.clip.duration() as f64;
                        let scale = if d0 > 0.0 { d / d0 } else { 0.0 };
                        add(p, (a0 * scale, b0 * scale), w * s.weight);
                    }
                }
            }
        }
        if wsum > 0.0 {
            out.translation /= wsum;
            out.yaw /= wsum;
        }
        out
    }
}

/// Yaw of `q` about `up`, measured from `forward`.
fn yaw_of(q: Quat, cfg: &RootMotionConfig) -> f32 {
    let f = q * cfg.forward;
    let flat = f - cfg.up * f.dot(cfg.up);
    if flat.length_squared() < 1e-12 {
        return 0.0;
    }
    let side = cfg.up.cross(cfg.forward);
    flat.dot(side).atan2(flat.dot(cfg.forward))
}

fn wrap_angle(a: f32) -> f32 {
    (a + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI
}

/// Root motion of one player moving from unwrapped position `a` to `b`, in the character's
/// frame at `a`. The travel is cut at loop boundaries; each piece's net displacement is
/// expressed in the root's frame at the piece's start and turned by the yaw accumulated so
/// far, so a turning walk keeps turning across loops. Whole cycles in one step are added
/// cycle by cycle (at most 100 000 per update).
fn player_root_motion(p: &Player, a: f64, b: f64, cfg: &RootMotionConfig) -> RootMotion {
    let clip = &p.clip;
    let d = clip.duration() as f64;
    let at = |local: f64| sample_joint(clip, cfg.joint, clip.start() + local as f32);
    let flat = |v: Vec3| v - cfg.up * v.dot(cfg.up);
    let mut out = RootMotion::default();
    // One piece from local time l0 to l1 (same cycle).
    let piece = |l0: f64, l1: f64, out: &mut RootMotion| {
        let (t0, t1) = (at(l0), at(l1));
        let y0 = yaw_of(t0.rotation, cfg);
        let frame = Quat::from_axis_angle(cfg.up, out.yaw - y0);
        out.translation += frame * flat(t1.translation - t0.translation);
        out.yaw += wrap_angle(yaw_of(t1.rotation, cfg) - y0);
    };
    if p.wrap != Wrap::Loop || d <= 0.0 || a == b {
        piece(p.local_at(a), p.local_at(b), &mut out);
        return out;
    }
    let forward = b > a;
    let (ca, cb) = ((a / d).floor(), (b / d).floor());
    let la = a - ca * d;
    let lb = b - cb * d;
    if ca == cb {
        piece(la, lb, &mut out);
        return out;
    }
    // To the boundary of the first cycle, whole cycles, then into the last one.
    let cycles = ((cb - ca).abs() - 1.0).min(100_000.0) as usize;
    if forward {
        piece(la, d, &mut out);
        for _ in 0..cycles {
            piece(0.0, d, &mut out);
        }
        piece(0.0, lb, &mut out);
    } else {
        piece(la, 0.0, &mut out);
        for _ in 0..cycles {
            piece(d, 0.0, &mut out);
        }
        piece(d, lb, &mut out);
    }
    out
}

/// Removes the root's horizontal translation and yaw from its transform.
pub(super) fn strip_root(root: &mut Transform, cfg: &RootMotionConfig) {
    root.translation = cfg.up * root.translation.dot(cfg.up);
    let yaw = yaw_of(root.rotation, cfg);
    root.rotation = (Quat::from_axis_angle(cfg.up, -yaw) * root.rotation).normalize();
}

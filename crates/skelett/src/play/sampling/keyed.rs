//! Evaluating keyed channels: the per-channel path for STEP and CUBICSPLINE keys (and any
//! channel, slowly), glTF's cubic Hermite spline, and slerp with a precomputed angle. The
//! LINEAR fast loops are in `mod.rs`; compact (compressed) tracks in `compact.rs`.

use glam::{Quat, Vec4};

use crate::clip::{Interpolation, Keys, Target, Track};
use crate::transform::SlerpSegment;
use crate::Transform;

impl Keys {
    /// Evaluates a STEP or CUBICSPLINE channel (or any channel, slowly) in segment `k`
    /// (keys `k` and `k + 1`) at `u` in 0..=1 through the segment, which is time `t`.
    #[inline]
    pub(crate) fn eval_track(&self, track: &Track, k: usize, u: f32, t: f32, out: &mut Transform) {
        let ts = track.time_start as usize;
        let vs = track.value_start as usize;
        let t1 = self.times[ts + k + 1];
        let dt = t1 - self.times[ts + k];
        // STEP switches exactly at the next key's time (u may round to just below 1 there).
        let step_key = if t >= t1 { k + 1 } else { k };
        match (track.target, track.interpolation) {
            (Target::Rotation, Interpolation::Linear) => {
                let seg = self.slerp[vs + k];
                out.rotation =
                    slerp_weights_apply(self.quats[vs + k], self.quats[vs + k + 1], seg, u);
            }
            (Target::Rotation, Interpolation::Step) => {
                out.rotation = self.quats[vs + step_key];
            }
            (Target::Rotation, Interpolation::CubicSpline) => {
                let q = |i: usize| Vec4::from(self.quats[vs + i]);
                let v = hermite(
                    q(3 * k + 1),
                    q(3 * k + 2),
                    q(3 * k + 3),
                    q(3 * k + 4),
                    dt,
                    u,
                );
                out.rotation = Quat::from_vec4(v.normalize_or(Vec4::W));
            }
            (target, interp) => {
                let v = match interp {
                    Interpolation::Linear => {
                        self.vec3s[vs + k].lerp(self.vec3s[vs + k + 1], u).into()
                    }
                    Interpolation::Step => self.vec3s[vs + step_key].into(),
                    Interpolation::CubicSpline => {
                        let p = |i: usize| self.vec3s[vs + i].extend(0.0);
                        hermite(
                            p(3 * k + 1),
                            p(3 * k + 2),
                            p(3 * k + 3),
                            p(3 * k + 4),
                            dt,
                            u,
                        )
                        .truncate()
                    }
                };
                if target == Target::Translation {
                    out.translation = v;
                } else {
                    out.scale = v;
                }
            }
        }
    }
}

/// Slerp from `a` to `b` (same hemisphere) with the segment's precomputed angle.
#[inline(always)]
pub(crate) fn slerp_weights_apply(a: Quat, b: Quat, seg: SlerpSegment, u: f32) -> Quat {
    let w0 = crate::transform::sin_0_half_pi((1.0 - u) * seg.angle) * seg.inv_sin;
    let w1 = crate::transform::sin_0_half_pi(u * seg.angle) * seg.inv_sin;
    Quat::from_vec4(Vec4::from(a) * w0 + Vec4::from(b) * w1)
}

/// glTF's cubic Hermite spline between value `v0` (out-tangent `b0`) and value `v1`
/// (in-tangent `a1`), tangents per second, over a segment `dt` seconds long, at `u` in 0..1.
#[inline(always)]
fn hermite(v0: Vec4, b0: Vec4, a1: Vec4, v1: Vec4, dt: f32, u: f32) -> Vec4 {
    let u2 = u * u;
    let u3 = u2 * u;
    v0 * (2.0 * u3 - 3.0 * u2 + 1.0)
        + b0 * (dt * (u3 - 2.0 * u2 + u))
        + v1 * (-2.0 * u3 + 3.0 * u2)
        + a1 * (dt * (u3 - u2))
}

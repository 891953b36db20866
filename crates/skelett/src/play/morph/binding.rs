//! From channel weights to target weights: which morph channel weighs each target of a mesh,
//! and how (linearly, or as one of a channel's in-between shapes).
//!
//! ```text
//! SkinnedMesh::morph_channels + morph_full_weights ──MorphBinding::new──▶ binding
//! channel weights (Animator::morph_weights) ──MorphBinding::target_weights──▶ one per target
//!                                              (read by morph() and the GPU skinner)
//! ```
//!
//! A target with full weight 1 that is its channel's only target in the mesh takes the
//! channel's weight as it is (glTF's model, and most FBX blend channels). The other targets
//! of a channel (FBX/Maya in-between shapes, or a single shape whose `FullWeights` is not
//! 100) form a *group*: their full weights and the base at 0 are knots on the channel's
//! weight axis, and a channel weight `w` blends the two knots of the segment it falls in,
//! `(1 - t)` of the lower and `t` of the upper, `t = (w - lo) / (hi - lo)`. Past the last
//! knot on either side the outermost segment extrapolates, so a channel keyed to 1.5 or -0.3
//! moves on as Maya evaluates it (ufbx evaluates it the same way; skelett's tests check the
//! vertices against Maya's own OBJ export). This is the piecewise-linear in-between model of
//! Maya's blendShape node; nothing in glam or the mesh crates does it, so it is written here.

use crate::Error;

/// How a mesh's morph targets read the skeleton's morph channels ([`crate::SkinnedMesh`]'s
/// `morph_channels` and `morph_full_weights`, prepared for evaluation).
///
/// ```
/// use skelett::morph::MorphBinding;
/// // Channel 0 drives two in-between shapes: target 0 full at 0.5, target 1 full at 1.
/// // Channel 1 drives target 2 as glTF does.
/// let binding = MorphBinding::new(&[0, 0, 1], &[0.5, 1.0, 1.0])?;
/// let mut t = [0.0; 3];
/// binding.target_weights(&[0.25, 0.7], &mut t)?;
/// assert_eq!(t, [0.5, 0.0, 0.7]); // halfway from the base to the first shape
/// binding.target_weights(&[0.75, 0.0], &mut t)?;
/// assert_eq!(t, [0.5, 0.5, 0.0]); // halfway between the two shapes
/// # Ok::<(), skelett::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MorphBinding {
    channels: Vec<u32>,
    full: Vec<f32>,
    /// Targets that take their channel's weight as it is.
    direct: Vec<u32>,
    groups: Vec<Group>,
    /// One past the highest channel read.
    needed: usize,
}

/// The targets of one channel evaluated piecewise-linearly.
#[derive(Clone, Debug, PartialEq)]
struct Group {
    channel: u32,
    /// Knots sorted by weight, the base included as `(0.0, None)`.
    knots: Vec<(f32, Option<u32>)>,
    /// Index of the base in `knots`.
    zero: usize,
}

impl MorphBinding {
    /// Target `k` reads channel `channels[k]` and is fully applied at that channel's weight
    /// `full_weights[k]` (empty: every target at 1).
    ///
    /// # Errors
    /// [`Error::Mesh`] if `full_weights` is neither empty nor one per target, holds a zero or
    /// non-finite weight, or gives two targets of one channel the same weight.
    pub fn new(channels: &[u32], full_weights: &[f32]) -> Result<Self, Error> {
        let bad = |problem: String| Error::Mesh {
            mesh: String::new(),
            problem,
        };
        if !full_weights.is_empty() && full_weights.len() != channels.len() {
            return Err(bad(format!(
                "{} morph full weights for {} morph targets",
                full_weights.len(),
                channels.len()
            )));
        }
        let full: Vec<f32> = if full_weights.is_empty() {
            vec![1.0; channels.len()]
        } else {
            full_weights.to_vec()
        };
        if let Some(k) = full.iter().position(|w| !w.is_finite() || *w == 0.0) {
            return Err(bad(format!(
                "morph target {k}'s full weight is {}; it must be finite and non-zero",
                full[k]
            )));
        }
        let mut direct = Vec::new();
        let mut groups: Vec<Group> = Vec::new();
        for (k, (&c, &f)) in channels.iter().zip(&full).enumerate() {
            let shared = channels.iter().filter(|&&o| o == c).count() > 1;
            if f == 1.0 && !shared {
                direct.push(k as u32);
                continue;
            }
            let g = match groups.iter_mut().position(|g| g.channel == c) {
                Some(i) => &mut groups[i],
                None => {
                    groups.push(Group {
                        channel: c,
                        knots: vec![(0.0, None)],
                        zero: 0,
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            if g.knots.iter().any(|&(w, _)| w == f) {
                return Err(bad(format!(
                    "morph target {k} of channel {c} shares its full weight {f} with another"
                )));
            }
            g.knots.push((f, Some(k as u32)));
        }
        for g in &mut groups {
            g.knots.sort_by(|a, b| a.0.total_cmp(&b.0));
            g.zero = g.knots.iter().position(|k| k.1.is_none()).unwrap_or(0);
        }
        Ok(MorphBinding {
            needed: channels.iter().map(|&c| c as usize + 1).max().unwrap_or(0),
            channels: channels.to_vec(),
            full,
            direct,
            groups,
        })
    }

    /// Number of targets.
    pub fn target_count(&self) -> usize {
        self.channels.len()
    }

    /// For each target, the channel whose weight it reads.
    pub fn channels(&self) -> &[u32] {
        &self.channels
    }

    /// For each target, the channel weight at which it is fully applied.
    pub fn full_weights(&self) -> &[f32] {
        &self.full
    }

    /// Whether some channel drives its targets piecewise-linearly (in-between shapes, or a
    /// full weight other than 1); without any, each target's weight is its channel's.
    pub fn has_in_betweens(&self) -> bool {
        !self.groups.is_empty()
    }

    /// How many channel weights [`MorphBinding::target_weights`] needs: one past the highest
    /// channel a target reads.
    pub fn channels_needed(&self) -> usize {
        self.needed
    }

    /// Writes each target's weight for the skeleton's channel `weights` into `out` (one per
    /// target) and returns how many are non-zero. NaN channel weights count as 0.
    /// Allocation-free.
    ///
    /// # Errors
    /// [`Error::Length`] if `weights` does not reach the highest channel read or `out` is not
    /// one per target; nothing is written then.
    pub fn target_weights(&self, weights: &[f32], out: &mut [f32]) -> Result<usize, Error> {
        crate::error::check_len("weights", self.needed, weights.len())?;
        crate::error::check_len("target weights", self.channels.len(), out.len())?;
        let read = |c: u32| {
            let w = weights[c as usize];
            if w.is_nan() {
                0.0
            } else {
                w
            }
        };
        for &k in &self.direct {
            out[k as usize] = read(self.channels[k as usize]);
        }
        for g in &self.groups {
            for &(_, k) in &g.knots {
                if let Some(k) = k {
                    out[k as usize] = 0.0;
                }
            }
            let w = read(g.channel);
            if w == 0.0 {
                continue;
            }
            let (a, b) = g.segment(w);
            let (lo, hi) = (g.knots[a], g.knots[b]);
            let t = (w - lo.0) / (hi.0 - lo.0);
            if let Some(k) = lo.1 {
                out[k as usize] = 1.0 - t;
            }
            if let Some(k) = hi.1 {
                out[k as usize] = t;
            }
        }
        Ok(out.iter().filter(|&&w| w != 0.0).count())
    }
}

impl Group {
    /// The two adjacent knots whose segment evaluates channel weight `w` (non-zero): the one
    /// containing it on `w`'s side of the base, or the outermost one on that side (or, with
    /// no knot on that side, the innermost on the other) to extrapolate.
    fn segment(&self, w: f32) -> (usize, usize) {
        let (z, last) = (self.zero, self.knots.len() - 1);
        if w > 0.0 {
            if z == last {
                return (z - 1, z);
            }
            let i = (z + 1..=last)
                .find(|&i| self.knots[i].0 > w)
                .unwrap_or(last);
            (i - 1, i)
        } else {
            if z == 0 {
                return (0, 1);
            }
            let i = (0..z).rev().find(|&i| self.knots[i].0 < w).unwrap_or(0);
            (i, i + 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(b: &MorphBinding, w: f32) -> Vec<f32> {
        let mut out = vec![9.0; b.target_count()];
        b.target_weights(&[w], &mut out).unwrap();
        out
    }

    #[test]
    fn a_single_target_at_one_is_the_channel_weight_everywhere() {
        let b = MorphBinding::new(&[0], &[]).unwrap();
        for w in [-2.0, -0.5, 0.0, 0.3, 1.0, 1.7] {
            assert_eq!(eval(&b, w), [w]);
        }
        assert!(!b.has_in_betweens());
    }

    #[test]
    fn a_single_target_at_another_weight_scales() {
        let b = MorphBinding::new(&[0], &[0.5]).unwrap();
        for w in [-1.0f32, 0.25, 0.5, 2.0] {
            assert!((eval(&b, w)[0] - w / 0.5).abs() < 1e-6);
        }
    }

    #[test]
    fn in_betweens_on_both_sides_blend_neighbours_and_extrapolate_the_ends() {
        // Maya's MoveToSide: -0.499, -0.249, 1.0.
        let b = MorphBinding::new(&[0, 0, 0], &[-0.499, -0.249, 1.0]).unwrap();
        let close = |a: Vec<f32>, e: [f32; 3]| {
            assert!(
                a.iter().zip(e).all(|(a, e)| (a - e).abs() < 1e-5),
                "{a:?} vs {e:?}"
            );
        };
        close(eval(&b, 0.5), [0.0, 0.0, 0.5]);
        close(eval(&b, 2.0), [0.0, 0.0, 2.0]);
        close(eval(&b, -0.249), [0.0, 1.0, 0.0]);
        close(eval(&b, -0.1245), [0.0, 0.5, 0.0]);
        close(eval(&b, -0.374), [0.5, 0.5, 0.0]);
        // Past the outermost negative shape: the segment (-0.499, -0.249) extrapolated.
        let t = (-1.0 - -0.499) / (-0.249 - -0.499);
        close(eval(&b, -1.0), [1.0 - t, t, 0.0]);
        close(eval(&b, 0.0), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn only_negative_shapes_extrapolate_towards_positive_weights() {
        let b = MorphBinding::new(&[0], &[-1.0]).unwrap();
        assert!((eval(&b, 0.5)[0] + 0.5).abs() < 1e-6);
        assert!((eval(&b, -0.5)[0] - 0.5).abs() < 1e-6);
    }

    #[test]
    fn bad_full_weights_are_refused() {
        assert!(MorphBinding::new(&[0, 0], &[0.5, 0.5]).is_err());
        assert!(MorphBinding::new(&[0], &[0.0]).is_err());
        assert!(MorphBinding::new(&[0], &[f32::NAN]).is_err());
        assert!(MorphBinding::new(&[0, 1], &[1.0]).is_err());
        assert!(MorphBinding::new(&[0, 1], &[0.5, 0.5]).is_ok());
    }

    #[test]
    fn short_inputs_are_length_errors() {
        let b = MorphBinding::new(&[0, 2], &[]).unwrap();
        assert!(b.target_weights(&[1.0, 1.0], &mut [0.0; 2]).is_err());
        assert!(b.target_weights(&[1.0; 3], &mut [0.0; 1]).is_err());
        assert_eq!(
            b.target_weights(&[1.0, 0.0, f32::NAN], &mut [0.0; 2])
                .unwrap(),
            1
        );
    }
}

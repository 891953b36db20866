//! Morph-weight tracks: the scalar channels a clip animates beside its joints.
//!
//! A morph-target weight ("blend shape" value) is one float per channel of the skeleton
//! ([`crate::Skeleton::with_morph_channels`]). Importers collect a clip's weight curves as
//! [`RawMorphTrack`]s (glTF `weights` channels, FBX blend-shape channels) and attach them with
//! [`Clip::with_morph_tracks`], which binds each to its channel by name and validates it.
//! [`crate::sample_morph_weights`] (in `play/sampling/morph.rs`) evaluates them; the
//! [`crate::animator::Animator`] blends them beside the joints; [`crate::morph`] turns them
//! into vertex offsets.
//!
//! Weight tracks are few and small next to joint tracks (one float per key), so both clip
//! storages keep them at full precision: a compact clip ([`crate::compress`]) carries its
//! source's weight tracks unchanged.

use super::{Clip, Interpolation};
use crate::{Error, Skeleton};

/// One morph-weight curve as an importer produces it.
#[derive(Clone, Debug, PartialEq)]
pub struct RawMorphTrack {
    /// The skeleton's morph channel it animates ([`crate::MorphChannel::name`]).
    pub channel: String,
    /// How values between keys are computed (glTF's STEP, LINEAR, CUBICSPLINE).
    pub interpolation: Interpolation,
    /// Key times in seconds, strictly increasing (at least one).
    pub times: Vec<f32>,
    /// One weight per key; for [`Interpolation::CubicSpline`] three per key, as glTF stores
    /// them: in-tangent, value, out-tangent. Weights may leave 0..=1 (glTF allows it).
    pub values: Vec<f32>,
}

/// A bound, validated morph-weight track of a [`Clip`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MorphTrack {
    pub channel: u32,
    pub interpolation: Interpolation,
    pub times: Box<[f32]>,
    pub values: Box<[f32]>,
}

/// A clip's morph weights: the weight of every channel where no track moves it (the
/// skeleton's rest weights with one-key tracks folded in), and the animated tracks.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MorphWeights {
    pub base: Box<[f32]>,
    pub tracks: Box<[MorphTrack]>,
}

/// One morph-weight track of a [`Clip`], borrowed (see [`Clip::morph_tracks`]).
#[derive(Clone, Copy, Debug)]
pub struct MorphTrackView<'a> {
    /// The skeleton's morph channel it animates.
    pub channel: usize,
    /// How values between keys are computed.
    pub interpolation: Interpolation,
    /// Key times (at least two).
    pub times: &'a [f32],
    /// One weight per key (three per key, in-tangent, value, out-tangent, for cubic).
    pub values: &'a [f32],
}

impl Clip {
    /// The clip with morph-weight tracks bound to `skeleton`'s morph channels by name
    /// (replacing any it had). One-key tracks become the channel's constant weight in this
    /// clip; channels without a track keep the skeleton's rest weight.
    ///
    /// ```
    /// use skelett::*;
    /// let skeleton = RawSkeleton { joints: vec![RawJoint { name: "head".into(), parent: None,
    ///     rest: Transform::IDENTITY }], ..Default::default() }.build()?
    ///     .with_morph_channels(vec![MorphChannel { name: "smile".into(), rest: 0.0 }])?;
    /// let clip = RawClip { name: "grin".into(), duration: 1.0, ..Default::default() }
    ///     .build(&skeleton)?
    ///     .with_morph_tracks(&skeleton, vec![RawMorphTrack {
    ///         channel: "smile".into(), interpolation: Interpolation::Linear,
    ///         times: vec![0.0, 1.0], values: vec![0.0, 1.0] }])?;
    /// let mut w = [0.0];
    /// sample_morph_weights(&clip, 0.25, &mut w)?;
    /// assert_eq!(w, [0.25]);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::SkeletonMismatch`] if the clip was built for another skeleton;
    /// [`Error::Morph`] naming the track for an unknown channel, a channel animated twice,
    /// no keys, times not finite and strictly increasing, a value count that does not match
    /// the keys, or a value that is not finite.
    pub fn with_morph_tracks(
        mut self,
        skeleton: &Skeleton,
        tracks: Vec<RawMorphTrack>,
    ) -> Result<Clip, Error> {
        if !self.fits(skeleton) {
            return Err(Error::SkeletonMismatch {
                clip: self.joint_count(),
                skeleton: skeleton.len(),
            });
        }
        let mut base: Box<[f32]> = skeleton.morph_rest().into();
        let mut out = Vec::with_capacity(tracks.len());
        let mut taken = vec![false; base.len()];
        for (i, t) in tracks.into_iter().enumerate() {
            let err = |problem: String| Error::Morph {
                what: format!(
                    "clip {:?}, weight track {i} (channel {:?})",
                    self.name, t.channel
                ),
                problem,
            };
            let Some(channel) = skeleton.find_morph_channel(&t.channel) else {
                return Err(err("the skeleton has no such morph channel".into()));
            };
            if std::mem::replace(&mut taken[channel], true) {
                return Err(err("another track animates the same channel".into()));
            }
            let n = t.times.len();
            if n == 0 {
                return Err(err("no keys".into()));
            }
            if let Some(k) = t.times.iter().position(|x| !x.is_finite()) {
                return Err(err(format!("key {k} has time {}", t.times[k])));
            }
            if let Some(k) = t.times.windows(2).position(|w| w[1] <= w[0]) {
                return Err(err(format!(
                    "key times are not strictly increasing at key {} ({} after {})",
                    k + 1,
                    t.times[k + 1],
                    t.times[k]
                )));
            }
            let per = if t.interpolation == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            if t.values.len() != n * per {
                return Err(err(format!(
                    "{} values for {n} keys (need {})",
                    t.values.len(),
                    n * per
                )));
            }
            if let Some(k) = t.values.iter().position(|x| !x.is_finite()) {
                return Err(err(format!("value {k} is {}", t.values[k])));
            }
            if n == 1 {
                base[channel] = t.values[per / 2];
                continue;
            }
            out.push(MorphTrack {
                channel: channel as u32,
                interpolation: t.interpolation,
                times: t.times.into(),
                values: t.values.into(),
            });
        }
        self.morph = MorphWeights {
            base,
            tracks: out.into(),
        };
        Ok(self)
    }

    /// Number of morph-weight channels the clip writes (its skeleton's channel count).
    #[inline]
    pub fn morph_channel_count(&self) -> usize {
        self.morph.base.len()
    }

    /// The clip's animated morph-weight tracks (two keys or more), in the order given to
    /// [`Clip::with_morph_tracks`].
    pub fn morph_tracks(&self) -> impl ExactSizeIterator<Item = MorphTrackView<'_>> + '_ {
        self.morph.tracks.iter().map(|t| MorphTrackView {
            channel: t.channel as usize,
            interpolation: t.interpolation,
            times: &t.times,
            values: &t.values,
        })
    }

    /// The weight of every morph channel where no track of this clip moves it.
    pub fn morph_base(&self) -> &[f32] {
        &self.morph.base
    }

    /// Whether the clip animates any morph weight (a track, or a constant that differs from
    /// the skeleton's rest weight is not counted: only tracks).
    pub fn animates_morph_weights(&self) -> bool {
        !self.morph.tracks.is_empty()
    }
}

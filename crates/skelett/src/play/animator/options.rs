//! The animator's vocabulary: how layers combine ([`BlendMode`]), how weights fade
//! ([`Curve`]), how clips start and take over ([`PlayOptions`], [`Transition`], [`When`]),
//! which events fire ([`EventPolicy`]) and what an update returns ([`UpdateResult`]:
//! [`FiredEvent`]s and [`RootMotion`]). Plain data, used by every other stage.

use std::sync::Arc;

use glam::Vec3;

use super::Wrap;
use crate::{Clip, JointIndex, RotationInterpolation};

/// How a layer combines with the layers below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum BlendMode {
    /// Replaces what is below on the joints of its mask, by its weight.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "override"))]
    Override,
    /// Adds its pose (an additive delta, see [`crate::make_additive`]) on top, by its weight.
    #[cfg_attr(feature = "serde", serde(rename = "additive"))]
    Additive,
}

/// The shape of a weight fade over a transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Curve {
    /// Constant rate.
    #[cfg_attr(feature = "serde", serde(rename = "linear"))]
    Linear,
    /// Slow at both ends (3x² - 2x³).
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "smoothstep"))]
    SmoothStep,
    /// Slow start (x²).
    #[cfg_attr(feature = "serde", serde(rename = "ease_in"))]
    EaseIn,
    /// Slow end (1 - (1-x)²).
    #[cfg_attr(feature = "serde", serde(rename = "ease_out"))]
    EaseOut,
}

impl Curve {
    /// The curve at `x` in 0..=1.
    pub fn at(self, x: f32) -> f32 {
        let x = x.clamp(0.0, 1.0);
        match self {
            Curve::Linear => x,
            Curve::SmoothStep => x * x * (3.0 - 2.0 * x),
            Curve::EaseIn => x * x,
            Curve::EaseOut => 1.0 - (1.0 - x) * (1.0 - x),
        }
    }
}

/// How a clip starts playing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayOptions {
    /// Playback speed; negative plays backwards.
    pub speed: f32,
    /// What happens at the clip's ends.
    pub wrap: Wrap,
    /// Players in the same group advance by normalised time, following the heaviest one;
    /// a player joining a group takes the group's current phase. An animator keeps up to 8
    /// groups in sync per update; players of further groups advance on their own.
    pub sync_group: Option<u32>,
    /// Where to start, as a fraction of the clip (ignored when joining a running group).
    pub start: f32,
    /// How this clip's rotation keys are interpolated: slerp (the default) or the cheaper
    /// nlerp ([`RotationInterpolation`] gives the error of each). For clips played directly
    /// (`play`, `crossfade`, `inertialize`, `queue`); blend trees, blend spaces and graph
    /// states slerp.
    pub rotation: RotationInterpolation,
}

impl Default for PlayOptions {
    fn default() -> Self {
        Self {
            speed: 1.0,
            wrap: Wrap::Loop,
            sync_group: None,
            start: 0.0,
            rotation: RotationInterpolation::Slerp,
        }
    }
}

/// When a queued clip starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    /// When the layer's current clip reaches its end (the end of a loop cycle, or the end of
    /// a one-shot clip).
    End,
    /// When the layer's current clip reaches this local time (seconds from its first frame).
    At(f32),
}

/// How a clip takes over a layer (see [`Animator::play_with`](super::Animator::play_with)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Transition {
    /// At once.
    Immediate,
    /// A cross-fade of this many seconds.
    Crossfade(f32, Curve),
    /// An inertial transition of this many seconds.
    Inertial(f32),
}

/// Which events an update reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventPolicy {
    /// Events fire only from players whose effective weight (layer weight times slot weight)
    /// is at least this.
    pub min_weight: f32,
    /// In a sync group only the leader (the heaviest player) fires.
    pub sync_leader_only: bool,
}

impl Default for EventPolicy {
    fn default() -> Self {
        Self {
            min_weight: 0.5,
            sync_leader_only: true,
        }
    }
}

/// What a [`FiredEvent`] reports: one of the clip's own events, or a playback notification
/// (with [`Animator::set_notifications`](super::Animator::set_notifications) on).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// One of the clip's events ([`FiredEvent::index`] in [`Clip::events`]).
    Clip,
    /// A looping or ping-ponging player passed a seam: from the clip's end back to its start
    /// (`at_end`), or, playing backwards or bouncing there, at its start.
    Looped {
        /// The seam is the clip's end (else its start).
        at_end: bool,
    },
    /// A player that plays once reached its end (`at_end`), or its start playing backwards.
    Ended {
        /// It ended at the clip's end (else at its start).
        at_end: bool,
    },
    /// A transition on the layer finished: the clip (or blend) faded in reached its full
    /// weight, or an inertial transition's offsets decayed away.
    TransitionFinished,
}

/// An event crossed during an update.
#[derive(Clone, Debug)]
pub struct FiredEvent {
    /// The layer it came from.
    pub layer: usize,
    /// The clip it belongs to (for a transition: the clip that came in; a blend's first).
    pub clip: Arc<Clip>,
    /// Its index in [`Clip::events`] ([`usize::MAX`] for a notification).
    pub index: usize,
    /// A clip event or a playback notification.
    pub kind: EventKind,
    /// How far into the update it was crossed, 0..=1 (events are sorted by it).
    pub at: f32,
    /// `true` when crossed while playing backwards.
    pub backward: bool,
    /// The effective weight of the player that fired it.
    pub weight: f32,
}

impl FiredEvent {
    /// The event's name; for notifications `looped`, `ended` or `transition_finished`.
    pub fn name(&self) -> &str {
        match self.kind {
            EventKind::Clip => self.clip.events().get(self.index).map_or("", |e| &e.name),
            EventKind::Looped { .. } => "looped",
            EventKind::Ended { .. } => "ended",
            EventKind::TransitionFinished => "transition_finished",
        }
    }

    /// The event's time in its clip's time base; for a seam or an end, the clip's end or
    /// start; for a finished transition, the clip's start.
    pub fn time(&self) -> f32 {
        match self.kind {
            EventKind::Clip => self.clip.events().get(self.index).map_or(0.0, |e| e.time),
            EventKind::Looped { at_end: true } | EventKind::Ended { at_end: true } => {
                self.clip.end()
            }
            _ => self.clip.start(),
        }
    }

    /// The event's payload (none for notifications).
    pub fn payload(&self) -> Option<&str> {
        match self.kind {
            EventKind::Clip => self.clip.events().get(self.index)?.payload.as_deref(),
            _ => None,
        }
    }
}

/// Root motion settings: which joint carries the character's motion and which way is up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RootMotionConfig {
    /// The joint whose horizontal translation and yaw are taken out of the pose.
    pub joint: JointIndex,
    /// The up axis (unit vector) of the skeleton's model space.
    pub up: Vec3,
    /// The forward axis (unit, perpendicular to `up`) yaw is measured from.
    pub forward: Vec3,
}

impl Default for RootMotionConfig {
    fn default() -> Self {
        Self {
            joint: 0,
            up: Vec3::Y,
            forward: Vec3::Z,
        }
    }
}

/// The root's motion during one update, taken out of the pose.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RootMotion {
    /// Horizontal translation, in the character's frame at the start of the update.
    pub translation: Vec3,
    /// Rotation about the up axis, radians.
    pub yaw: f32,
}

/// What an update produced.
#[derive(Debug)]
pub struct UpdateResult<'a> {
    /// Events crossed, in the order they were crossed.
    pub events: &'a [FiredEvent],
    /// The root's motion (zero without [`Animator::set_root_motion`](super::Animator::set_root_motion)).
    pub root_motion: RootMotion,
}

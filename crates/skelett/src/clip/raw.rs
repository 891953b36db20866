//! Raw clips: the editable form importers produce (channels that name their joint, keys as
//! plain arrays), and the options and report of building one. Building is on the building
//! side (`build/raw_clip.rs`).

use glam::{Quat, Vec3};

use super::channel::{Interpolation, Target};

/// Key values of a raw channel.
///
/// For [`Interpolation::CubicSpline`] every key has three entries, in glTF's order: in-tangent,
/// value, out-tangent. Tangents are per second.
#[derive(Clone, Debug, PartialEq)]
pub enum RawValues {
    /// Translation or scale values.
    Vec3(Vec<Vec3>),
    /// Rotation values (normalised when the clip is built).
    Quat(Vec<Quat>),
}

impl RawValues {
    /// Number of entries (3 per key for cubic channels).
    pub fn len(&self) -> usize {
        match self {
            RawValues::Vec3(v) => v.len(),
            RawValues::Quat(v) => v.len(),
        }
    }

    /// `true` without entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One channel of a [`RawClip`].
#[derive(Clone, Debug, PartialEq)]
pub struct RawChannel {
    /// The name of the joint it animates.
    pub joint: String,
    /// What it animates; must agree with [`RawValues`]'s kind.
    pub target: Target,
    /// How values between keys are computed.
    pub interpolation: Interpolation,
    /// Key times in seconds, strictly increasing.
    pub times: Vec<f32>,
    /// Key values: one per key, or three for cubic splines.
    pub values: RawValues,
}

/// An editable clip, as importers produce it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RawClip {
    /// The clip's name.
    pub name: String,
    /// Time of the clip's first frame, in seconds (the source's time base).
    pub start: f32,
    /// Length in seconds.
    pub duration: f32,
    /// The channels, in any order.
    pub channels: Vec<RawChannel>,
}

/// What [`RawClip::build_with`] does with channels whose joint the skeleton lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UnboundChannels {
    /// Fail with [`Error::UnboundChannels`](crate::Error::UnboundChannels), naming every such
    /// joint.
    #[default]
    Error,
    /// Leave them out and list them in [`BuildReport::unbound`].
    Skip,
}

/// Options of [`RawClip::build_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BuildOptions {
    /// What to do with channels that target joints the skeleton lacks.
    pub unbound: UnboundChannels,
    /// Keep every key, even those the lossless reduction would remove (for comparing a
    /// reduced clip with the full one).
    pub keep_redundant_keys: bool,
}

/// What building a clip did, beyond the clip itself.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct BuildReport {
    /// Joint names whose channels were skipped (with [`UnboundChannels::Skip`]).
    pub unbound: Vec<String>,
    /// Keys in the raw clip.
    pub keys_in: usize,
    /// Keys kept (including the one key of each constant channel).
    pub keys_out: usize,
    /// Channels that were constant and became part of the clip's base pose.
    pub constant_channels: usize,
    /// Channels equal to the rest pose that were dropped altogether.
    pub rest_channels: usize,
}

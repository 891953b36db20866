//! What a channel animates ([`Target`]) and how values between its keys are computed
//! ([`Interpolation`]): the words raw and built clips, errors and exporters share.

/// What a channel animates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// The joint's local translation.
    Translation,
    /// The joint's local rotation.
    Rotation,
    /// The joint's local scale.
    Scale,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Target::Translation => "translation",
            Target::Rotation => "rotation",
            Target::Scale => "scale",
        })
    }
}

/// How values between two keys are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Interpolation {
    /// The value of the key at or before the time.
    Step,
    /// Linear for translations and scales, shortest-path slerp for rotations.
    Linear,
    /// Cubic Hermite spline with an in- and an out-tangent per key, as glTF's CUBICSPLINE;
    /// rotations are re-normalised after interpolation.
    CubicSpline,
}

impl std::fmt::Display for Interpolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Interpolation::Step => "step",
            Interpolation::Linear => "linear",
            Interpolation::CubicSpline => "cubic",
        })
    }
}

//! The runtime crate's error type.
//!
//! Every fallible function in `skelett` returns [`Error`](enum@Error). Build-time errors (skeletons, clips,
//! meshes) name the joint, channel or key at fault; hot-path errors are only length mismatches,
//! checked once before any output is written.

use thiserror::Error;

/// What went wrong in the runtime crate.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A slice passed to a hot-path function is shorter than the data it must hold.
    #[error("{what}: expected at least {expected} entries, got {got}")]
    Length {
        /// Which argument.
        what: &'static str,
        /// Entries required.
        expected: usize,
        /// Entries given.
        got: usize,
    },
    /// A skeleton has more joints than a [`crate::JointIndex`] can address.
    #[error("skeleton has {0} joints; at most {max} are supported", max = crate::MAX_JOINTS)]
    TooManyJoints(usize),
    /// A joint names a parent index outside the skeleton.
    #[error(
        "joint {joint} ({name:?}) has parent index {parent}, but the skeleton has {count} joints"
    )]
    ParentOutOfRange {
        /// Index of the joint in the raw skeleton.
        joint: usize,
        /// Its name.
        name: String,
        /// The parent index it names.
        parent: usize,
        /// Number of joints.
        count: usize,
    },
    /// The parent links form a cycle.
    #[error("joints form a parent cycle: {}", .0.join(" -> "))]
    JointCycle(Vec<String>),
    /// Two joints share a name, so clips could not be bound to them by name.
    #[error("joint name {0:?} is used by more than one joint")]
    DuplicateJointName(String),
    /// A rest-pose transform or root transform has a NaN or infinite component, or a zero
    /// rotation quaternion.
    #[error("joint {0:?} has a non-finite rest transform or a zero rotation")]
    NonFiniteRest(String),
    /// A clip's channel is malformed.
    #[error("clip {clip:?}, channel {channel} ({joint:?} {target}): {problem}")]
    Channel {
        /// The clip's name.
        clip: String,
        /// Index of the channel in the raw clip.
        channel: usize,
        /// The joint it targets.
        joint: String,
        /// What it animates.
        target: crate::clip::channel::Target,
        /// What is wrong.
        problem: String,
    },
    /// A clip's start or duration is not finite or negative.
    #[error("clip {clip:?}: {problem}")]
    ClipRange {
        /// The clip's name.
        clip: String,
        /// What is wrong.
        problem: String,
    },
    /// Channels of a clip name joints the skeleton does not have.
    #[error("clip {clip:?}: {} channel(s) target joints missing from the skeleton: {}", .joints.len(), .joints.join(", "))]
    UnboundChannels {
        /// The clip's name.
        clip: String,
        /// Every joint name that did not match, once each.
        joints: Vec<String>,
    },
    /// A clip was built for a skeleton with a different joint count.
    #[error("clip was built for {clip} joints, skeleton has {skeleton}")]
    SkeletonMismatch {
        /// Joints the clip was built for.
        clip: usize,
        /// Joints of the skeleton given.
        skeleton: usize,
    },
    /// An animator call named a layer it does not have.
    #[error("the animator has {layers} layer(s); there is no layer {layer}")]
    NoSuchLayer {
        /// The layer asked for.
        layer: usize,
        /// Layers the animator has.
        layers: usize,
    },
    /// An animator call named a pose modifier it does not have.
    #[error("the animator has {count} modifier(s); there is no modifier {index}")]
    NoSuchModifier {
        /// The modifier asked for.
        index: usize,
        /// Modifiers the animator has.
        count: usize,
    },
    /// An animator call that needs something playing found the layer empty.
    #[error("layer {0} has nothing playing")]
    NothingPlaying(usize),
    /// An IK or pose-modifier input is NaN or infinite (nothing was written).
    #[error("{what} is not finite")]
    NotFinite {
        /// Which input.
        what: &'static str,
    },
    /// Joints given as a chain are not each below the one before.
    #[error("joint {child} is not below joint {ancestor} in the skeleton")]
    NotAChain {
        /// The joint that should be above.
        ancestor: crate::JointIndex,
        /// The joint that should be below it.
        child: crate::JointIndex,
    },
    /// A joint index past the skeleton's joints.
    #[error("there is no joint {joint}: the skeleton has {joints}")]
    NoSuchJoint {
        /// The index given.
        joint: crate::JointIndex,
        /// Joints the skeleton has.
        joints: usize,
    },
    /// A joint name the skeleton does not have.
    #[error("the skeleton has no joint named {0:?}")]
    NoSuchJointName(String),
    /// A joint limit given for an IK chain is not a limit.
    #[error("the limit of joint {joint} is invalid: {why}")]
    BadLimit {
        /// The joint the limit was given for.
        joint: crate::JointIndex,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Foot placement handles at most [`crate::ik::MAX_LEGS`] legs.
    #[error("foot placement handles at most 8 legs, got {0}")]
    TooManyLegs(usize),
    /// [`crate::ik::Feet::guess`] found no leg: no joint named like a foot (or a hand, paw)
    /// low in the rest pose with a knee and a hip above it.
    #[error("no legs found: no joint named like a foot, toe, ankle, hand or paw stands low in the rest pose with a knee and a hip above it (feet that are control joints at the root, as robot_quaternius's Foot.L, need their legs named: TwoBoneChain::reaching_joint, or a play script's feet legs)")]
    NoLegs,
    /// An IK chain needs at least two joints (one bone).
    #[error("an IK chain needs at least 2 joints, got {0}")]
    ChainTooShort(usize),
    /// A ground for foot placement is malformed, or a ground query answered something that
    /// is not a ground.
    #[error("bad ground: {what}")]
    BadGround {
        /// What it answered.
        what: &'static str,
    },
    /// A clip was built for a skeleton with another joint layout (names and parents) than
    /// the one it is played on.
    #[error("clip {clip:?} was built for another skeleton (layout {built_for}, {clip_joints} joints) than this one (layout {skeleton}, {skeleton_joints} joints): bind it by joint name (Clip::rebind, `skelett retarget --by-name`) or retarget it (skelett::retarget, `skelett retarget`)")]
    OtherSkeleton {
        /// The clip's name.
        clip: String,
        /// The layout the clip was built for.
        built_for: crate::SkeletonId,
        /// Its joint count.
        clip_joints: usize,
        /// The layout of the skeleton given.
        skeleton: crate::SkeletonId,
        /// Its joint count.
        skeleton_joints: usize,
    },
    /// Binding a clip by name onto another skeleton found none of its animated joints there.
    #[error("clip {clip:?}: none of its {count} animated joints is in the target skeleton (first: {first:?}); the skeletons name their joints differently: retarget with a joint map (skelett::retarget)")]
    NothingBound {
        /// The clip's name.
        clip: String,
        /// How many joints it animates.
        count: usize,
        /// The first of them, by name.
        first: String,
    },
    /// A retargeting joint map names a joint the skeleton lacks.
    #[error("joint map: the {side} skeleton has no joint {joint:?}")]
    MapUnknownJoint {
        /// `"source"` or `"target"`.
        side: &'static str,
        /// The name given.
        joint: String,
    },
    /// A retargeting joint map maps two source joints onto one target joint.
    #[error("joint map: target joint {target:?} is mapped from both {first:?} and {second:?}")]
    MapDuplicateTarget {
        /// The target joint.
        target: String,
        /// The first source joint mapped onto it.
        first: String,
        /// The second.
        second: String,
    },
    /// A skeleton has no humanoid layout where one is needed (a built T-pose, foot
    /// contacts): no two legs found by name or layout.
    #[error("retarget: no humanoid layout found: {problem}")]
    NotHumanoid {
        /// What was looked for and not found.
        problem: String,
    },
    /// Two skeletons share no chain to retarget along.
    #[error("retarget: {problem}")]
    NoCommonChain {
        /// What was missing, naming the joints looked for.
        problem: String,
    },
    /// A graph parameter was given a value of another type, or does not exist.
    #[error("graph parameter {name:?}: {problem}")]
    Parameter {
        /// The parameter's name (or index, when there is none).
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// Morph channels, morph-weight tracks or morph targets are malformed.
    #[error("morph {what}: {problem}")]
    Morph {
        /// What is at fault: a channel, a clip's weight track, a mesh's target.
        what: String,
        /// What is wrong.
        problem: String,
    },
    /// A mesh or skin is malformed.
    #[error("mesh {mesh:?}: {problem}")]
    Mesh {
        /// The mesh's name.
        mesh: String,
        /// What is wrong.
        problem: String,
    },
}

/// Checks that `got >= expected`.
#[inline]
pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if got < expected {
        Err(Error::Length {
            what,
            expected,
            got,
        })
    } else {
        Ok(())
    }
}

//! Poses: one local transform per joint, owned by a character.
//!
//! [`crate::sample`] writes a pose, blending (with the animator) combines poses, and
//! [`crate::local_to_model`] turns one into model-space matrices. A [`Pose`] is a plain
//! `Vec<Transform>` with a constructor from a skeleton's rest pose; every hot-path function
//! takes `&[Transform]`/`&mut [Transform]`, so any slice works as well.

use std::ops::{Deref, DerefMut};

use crate::{Skeleton, Transform};

/// Local joint transforms of one skeleton, in joint order.
///
/// ```
/// # use skelett::*;
/// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
/// let pose = Pose::rest(&skeleton);
/// assert_eq!(pose.len(), skeleton.len());
/// assert_eq!(&pose[..], skeleton.rest_pose());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pose(pub Vec<Transform>);

impl Pose {
    /// The skeleton's rest pose.
    pub fn rest(skeleton: &Skeleton) -> Self {
        Self(skeleton.rest_pose().to_vec())
    }

    /// `n` identity transforms.
    pub fn identity(n: usize) -> Self {
        Self(vec![Transform::IDENTITY; n])
    }
}

impl Deref for Pose {
    type Target = [Transform];
    fn deref(&self) -> &[Transform] {
        &self.0
    }
}

impl DerefMut for Pose {
    fn deref_mut(&mut self) -> &mut [Transform] {
        &mut self.0
    }
}

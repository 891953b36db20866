//! Binding by name: a clip built for one skeleton, rebuilt for another whose joints have the
//! same names (the DirectX and RiTE case: animations kept in their own files and put on any
//! model that shares the frame names). No pose is changed: every channel is copied onto the
//! joint of the same name; joints the clip does not animate keep the target's rest pose.

use crate::clip::{BuildOptions, ChannelValues, UnboundChannels};
use crate::{Clip, Error, Interpolation, RawChannel, RawClip, RawValues, Skeleton, Target};

/// What [`Clip::rebind`] did with the clip's joints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BindReport {
    /// Joints the clip animates (or poses away from the source's rest) that the target has:
    /// their channels were copied.
    pub bound: Vec<String>,
    /// Joints the clip animates that the target lacks: their channels were left out.
    pub unbound: Vec<String>,
    /// Target joints the clip does not move: they keep the target's rest pose.
    pub unanimated: Vec<String>,
}

impl Clip {
    /// This clip, built for `from`, rebuilt for `onto` by joint name: every animated channel
    /// and every pose the clip holds away from `from`'s rest pose is copied onto the joint of
    /// the same name; the report lists what the target lacks and what it keeps at rest.
    /// Events are kept. A compact clip comes back keyed (its decoded keys; compress it again
    /// for the new skeleton).
    ///
    /// Use it where the skeletons share their joint names but not their layout (another
    /// joint order, extra or missing joints); where names or proportions differ, retarget
    /// ([`crate::retarget`]).
    ///
    /// ```
    /// use skelett::*;
    /// let joint = |name: &str, parent| RawJoint { name: name.into(), parent, rest: Transform::IDENTITY };
    /// let from = RawSkeleton { joints: vec![joint("hip", None), joint("knee", Some(0))], ..Default::default() }.build()?;
    /// // Another file's skeleton: other joint order, an extra joint, no knee.
    /// let onto = RawSkeleton { joints: vec![joint("root", None), joint("hip", Some(0))], ..Default::default() }.build()?;
    /// let clip = RawClip { name: "swing".into(), start: 0.0, duration: 1.0, channels: vec![
    ///     RawChannel { joint: "hip".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
    ///                  times: vec![0.0, 1.0], values: RawValues::Quat(vec![glam::Quat::IDENTITY, glam::Quat::from_rotation_x(1.0)]) },
    ///     RawChannel { joint: "knee".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
    ///                  times: vec![0.0, 1.0], values: RawValues::Quat(vec![glam::Quat::IDENTITY, glam::Quat::from_rotation_x(0.5)]) },
    /// ]}.build(&from)?;
    /// let (bound, report) = clip.rebind(&from, &onto)?;
    /// assert!(bound.fits(&onto) && !clip.fits(&onto));
    /// assert_eq!(report.unbound, ["knee"]);
    /// assert_eq!(report.unanimated, ["root"]);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OtherSkeleton`] if the clip was not built for `from`; [`Error::NothingBound`]
    /// if the clip animates joints but `onto` has none of them.
    pub fn rebind(&self, from: &Skeleton, onto: &Skeleton) -> Result<(Clip, BindReport), Error> {
        if !self.fits(from) {
            return Err(Error::OtherSkeleton {
                clip: self.name.clone(),
                built_for: self.skeleton,
                clip_joints: self.joint_count(),
                skeleton: from.id(),
                skeleton_joints: from.len(),
            });
        }
        let keyed = self.decompressed();
        let mut channels = Vec::new();
        let n = from.len();
        // Which (joint, target) pairs a track writes: the base pose holds the rest.
        let mut tracked = vec![[false; 3]; n];
        for i in 0..keyed.track_count() {
            let Some(ch) = keyed.channel(i) else { break };
            tracked[ch.joint as usize][slot(ch.target)] = true;
            channels.push(RawChannel {
                joint: from.name(ch.joint).to_owned(),
                target: ch.target,
                interpolation: ch.interpolation,
                times: ch.times.to_vec(),
                values: match ch.values {
                    ChannelValues::Quat(q) => RawValues::Quat(q.to_vec()),
                    ChannelValues::Vec3(v) => {
                        RawValues::Vec3(v.iter().map(|&x| x.into()).collect())
                    }
                },
            });
        }
        // Poses the clip holds constant away from the source's rest pose.
        let rest = from.rest_pose();
        for (j, (b, r)) in keyed.base.iter().zip(rest).enumerate() {
            let name = || from.name(j as crate::JointIndex).to_owned();
            let one = |target, values| RawChannel {
                joint: name(),
                target,
                interpolation: Interpolation::Linear,
                times: vec![self.start],
                values,
            };
            if !tracked[j][0] && b.translation != r.translation {
                channels.push(one(
                    Target::Translation,
                    RawValues::Vec3(vec![b.translation]),
                ));
            }
            if !tracked[j][1] && b.rotation != r.rotation {
                channels.push(one(Target::Rotation, RawValues::Quat(vec![b.rotation])));
            }
            if !tracked[j][2] && b.scale != r.scale {
                channels.push(one(Target::Scale, RawValues::Vec3(vec![b.scale])));
            }
        }
        let mut names: Vec<String> = channels.iter().map(|c| c.joint.clone()).collect();
        names.sort_unstable();
        names.dedup();
        let raw = RawClip {
            name: self.name.clone(),
            start: self.start,
            duration: self.duration,
            channels,
        };
        let (clip, built) = raw.build_with(
            onto,
            &BuildOptions {
                unbound: UnboundChannels::Skip,
                ..Default::default()
            },
        )?;
        let animated: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
        if !names.is_empty() && built.unbound.len() == names.len() {
            return Err(Error::NothingBound {
                clip: self.name.clone(),
                count: names.len(),
                first: names[0].clone(),
            });
        }
        let report = BindReport {
            bound: names
                .iter()
                .filter(|n| onto.find(n).is_some())
                .cloned()
                .collect(),
            unbound: built.unbound,
            unanimated: onto
                .names()
                .iter()
                .filter(|n| !animated.contains(n.as_str()))
                .cloned()
                .collect(),
        };
        let clip = clip.with_events(self.events.to_vec())?;
        Ok((clip, report))
    }
}

fn slot(t: Target) -> usize {
    match t {
        Target::Translation => 0,
        Target::Rotation => 1,
        Target::Scale => 2,
    }
}

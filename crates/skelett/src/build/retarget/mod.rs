//! Retargeting: playing a clip made for one skeleton on another, with other joint names,
//! proportions, rest poses (T-pose against A-pose) and joint counts.
//!
//! ```text
//! source Skeleton ─┐                          ┌─ per frame: retarget(&source_pose, &mut target_pose)
//! target Skeleton ─┼─ JointMap::auto ─▶ Retargeter::new ─┤   (no allocation: a live capture stream)
//!  (or a map file) ┘   (names, parts)   (reference poses, │
//!                                        alignment, plan) └─ offline: bake(&clip) ─▶ Clip for the target
//! ```
//!
//! How a pose moves across:
//! 1. **A common reference pose.** The source's reference is its rest pose or any pose the
//!    user names (a frame of the clip: `--reference-frame`). The target's rest pose is then
//!    *aligned* to it: joint by joint from the hips out, each mapped target joint turns so
//!    that the directions to its mapped children point where the source's do (one child: the
//!    shortest arc; several, as at the hips and chest: the best fit of all, Horn's method).
//!    A target in A-pose is thus brought into the source's T-pose, a character facing +X
//!    turned to face the source's way.
//! 2. **World-space rotation changes.** Per frame, each mapped source joint's change from its
//!    reference, in world (scene) space, `D = world(pose) · world(reference)⁻¹`, is applied
//!    to the target joint's aligned reference: `world_t = D · world_t(reference)`, and made
//!    local again under the target parent. Limb directions of the target therefore follow
//!    the source's, whatever the joints' local axes. Unmapped target joints keep their
//!    reference pose; an unmapped joint inside a chain with no branches (three spine joints
//!    driven by two) takes the rotation change part way between its mapped neighbours.
//! 3. **Translations.** The topmost mapped joints (the hips, and root-level IK controls such
//!    as robot_quaternius's feet) move by the source's world displacement from its
//!    reference, scaled by the ratio of hip heights (or [`Options::root_scale`]): root
//!    motion follows. Other joints keep the target's bone lengths, plus any change the
//!    source makes to its own (squash and stretch), turned into the target's frames.
//!
//! Where data comes from and goes: skeletons from any importer; the map from
//! [`JointMap::auto`] or a JSON file (`skelett_io::retarget_map`); poses from
//! [`crate::sample`] or a capture; the baked [`Clip`] carries the target's
//! [`crate::SkeletonId`] and can be compressed, saved and played like any other.
//!
//! Binding by name alone, for skeletons that share joint names but not layout, is
//! [`Clip::rebind`].

mod bake;
mod bind;
mod map;
mod names;
mod rig;

pub use bake::BakeOptions;
pub use bind::BindReport;
pub use map::{Found, JointMap, MapPair};
pub use names::{normalize, NameKey, Side};

use glam::{Quat, Vec3};

use crate::{Clip, Error, JointIndex, Skeleton, SkeletonId, Transform};

const NO_PARENT: JointIndex = JointIndex::MAX;

/// Options of [`Retargeter::new`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// The source pose both skeletons are aligned to (local transforms, one per source
    /// joint); the source's rest pose when `None`.
    pub source_reference: Option<Vec<Transform>>,
    /// The target pose to start the alignment from; the target's rest pose when `None`.
    pub target_reference: Option<Vec<Transform>>,
    /// Leave the target's reference pose as it is (no alignment to the source's): for
    /// skeletons whose reference poses already match.
    pub no_align: bool,
    /// The factor for the root's translation; the ratio of hip heights above the lowest
    /// joint in the reference poses when `None`.
    pub root_scale: Option<f32>,
}

/// How one target joint is driven.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Plan {
    /// Keeps its reference local transform.
    Rest,
    /// Follows a source joint's world rotation change.
    Mapped { src: JointIndex, mv: Move },
    /// Part way between two source joints' rotation changes.
    Between {
        a: JointIndex,
        b: JointIndex,
        t: f32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Move {
    /// The reference translation.
    Reference,
    /// The source's world displacement, scaled.
    Root,
    /// The reference translation plus the source's local change, turned from the source
    /// parent's reference frame into the target parent's.
    Delta(Quat, f32),
}

/// A joint's transform in scene space (rotation, position, accumulated scale).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldJoint {
    /// Rotation.
    pub rotation: Quat,
    /// Position.
    pub position: Vec3,
    /// Scale accumulated down the hierarchy (exact for uniform scales).
    pub scale: Vec3,
}

impl WorldJoint {
    const IDENTITY: Self = WorldJoint {
        rotation: Quat::IDENTITY,
        position: Vec3::ZERO,
        scale: Vec3::ONE,
    };

    #[inline(always)]
    fn child(&self, local: &Transform) -> WorldJoint {
        WorldJoint {
            rotation: self.rotation * local.rotation,
            position: self.position + self.rotation * (self.scale * local.translation),
            scale: self.scale * local.scale,
        }
    }

    fn of_root(sk: &Skeleton) -> WorldJoint {
        let (scale, rotation, position) = sk.root_transform().to_scale_rotation_translation();
        WorldJoint {
            rotation: rotation.normalize(),
            position,
            scale,
        }
    }
}

/// Scene-space transforms of every joint of `sk` in pose `local`, into `out`.
fn world_pose(sk: &Skeleton, root: &WorldJoint, local: &[Transform], out: &mut [WorldJoint]) {
    let parents = sk.parents();
    for j in 0..sk.len() {
        let p = parents[j];
        let parent = if p == NO_PARENT {
            root
        } else {
            &out[p as usize]
        };
        out[j] = parent.child(&local[j]);
    }
}

/// Rest-pose joint positions of `sk` in scene space.
pub(crate) fn rest_world_positions(sk: &Skeleton) -> Vec<Vec3> {
    let mut w = vec![WorldJoint::IDENTITY; sk.len()];
    world_pose(sk, &WorldJoint::of_root(sk), sk.rest_pose(), &mut w);
    w.iter().map(|j| j.position).collect()
}

/// Retargets poses from one skeleton to another: built once per pair of skeletons (and map),
/// then [`Retargeter::retarget`] per frame or [`Retargeter::bake`] per clip.
///
/// ```
/// use skelett::*;
/// use skelett::retarget::{JointMap, Options, Retargeter};
/// use glam::{Quat, Vec3};
/// let joint = |name: &str, parent, y: f32| RawJoint { name: name.into(), parent,
///     rest: Transform::new(Vec3::new(0.0, y, 0.0), Quat::IDENTITY, Vec3::ONE) };
/// let source = RawSkeleton { joints: vec![joint("Hips", None, 1.0), joint("Spine", Some(0), 0.2)], ..Default::default() }.build()?;
/// let target = RawSkeleton { joints: vec![joint("pelvis", None, 2.0), joint("spine_01", Some(0), 0.5)], ..Default::default() }.build()?;
/// let map = JointMap::from_pairs([("Hips", "pelvis"), ("Spine", "spine_01")]);
/// let r = Retargeter::new(&source, &target, &map, &Options::default())?;
/// let mut pose = source.rest_pose().to_vec();
/// pose[1].rotation = Quat::from_rotation_z(0.5); // bend the spine
/// let mut out = target.rest_pose().to_vec();
/// r.retarget(&pose, &mut out, &mut r.scratch())?;
/// assert!(out[1].rotation.angle_between(Quat::from_rotation_z(0.5)) < 1e-5);
/// # Ok::<(), skelett::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Retargeter {
    source: SkeletonId,
    target: SkeletonId,
    source_parents: Box<[JointIndex]>,
    target_parents: Box<[JointIndex]>,
    source_root: WorldJoint,
    target_root: WorldJoint,
    /// Per source joint: the reference pose (local) and the inverse of its world rotation.
    source_ref: Box<[Transform]>,
    source_ref_inv: Box<[Quat]>,
    source_ref_pos: Box<[Vec3]>,
    /// Per target joint: the aligned reference pose (local) and its world rotation.
    target_ref: Box<[Transform]>,
    target_ref_rot: Box<[Quat]>,
    target_ref_pos: Box<[Vec3]>,
    plan: Box<[Plan]>,
    scale: f32,
    map: Box<[Option<JointIndex>]>,
}

/// Working memory of [`Retargeter::retarget`] (allocated once, by [`Retargeter::scratch`]).
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    source: Vec<WorldJoint>,
    target: Vec<WorldJoint>,
    delta: Vec<Quat>,
}

impl Retargeter {
    /// Prepares retargeting from `source` to `target` along `map`: resolves the map, aligns
    /// the target's reference pose to the source's, and works out how each target joint is
    /// driven.
    ///
    /// # Errors
    /// The map's ([`JointMap::resolve`]); [`Error::Length`] for a reference pose of the wrong
    /// length; [`Error::NoCommonChain`] for a map that pairs no joints or a root scale that is
    /// not a positive number.
    pub fn new(
        source: &Skeleton,
        target: &Skeleton,
        map: &JointMap,
        options: &Options,
    ) -> Result<Retargeter, Error> {
        let by_target = map.resolve(source, target)?;
        if by_target.iter().all(Option::is_none) {
            return Err(Error::NoCommonChain {
                problem: "the joint map pairs no joints".into(),
            });
        }
        let (ns, nt) = (source.len(), target.len());
        let source_ref: Vec<Transform> = match &options.source_reference {
            Some(p) => {
                crate::error::check_len("source reference pose", ns, p.len())?;
                p[..ns].to_vec()
            }
            None => source.rest_pose().to_vec(),
        };
        let mut target_ref: Vec<Transform> = match &options.target_reference {
            Some(p) => {
                crate::error::check_len("target reference pose", nt, p.len())?;
                p[..nt].to_vec()
            }
            None => target.rest_pose().to_vec(),
        };
        let source_root = WorldJoint::of_root(source);
        let target_root = WorldJoint::of_root(target);
        let mut sw = vec![WorldJoint::IDENTITY; ns];
        world_pose(source, &source_root, &source_ref, &mut sw);
        let mut tw = vec![WorldJoint::IDENTITY; nt];
        world_pose(target, &target_root, &target_ref, &mut tw);

        let by_part: Vec<bool> = (0..nt)
            .map(|t| {
                map.pairs.iter().any(|p| {
                    p.target == target.name(t as JointIndex) && p.found == map::Found::Part
                })
            })
            .collect();
        let is_below = |sk: &Skeleton, a: JointIndex, mut j: JointIndex| {
            while let Some(p) = sk.parent(j) {
                if p == a {
                    return true;
                }
                j = p;
            }
            false
        };
        // The nearest mapped ancestor of each target joint.
        let mut mapped_above: Vec<Option<JointIndex>> = vec![None; nt];
        for k in 0..nt {
            if let Some(p) = target.parent(k as JointIndex) {
                mapped_above[k] = if by_target[p as usize].is_some() {
                    Some(p)
                } else {
                    mapped_above[p as usize]
                };
            }
        }

        // 1. Align the target's reference to the source's, parents first.
        if !options.no_align {
            let scene_size = extent(&sw.iter().map(|w| w.position).collect::<Vec<_>>()).max(1e-9);
            for k in 0..nt {
                let Some(src) = by_target[k] else { continue };
                let kids: Vec<usize> = (k + 1..nt)
                    .filter(|&m| by_target[m].is_some() && mapped_above[m] == Some(k as JointIndex))
                    .collect();
                let any_part = kids.iter().any(|&m| by_part[m]);
                let mut pairs: Vec<(Vec3, Vec3)> = Vec::new();
                for &m in &kids {
                    if any_part && !by_part[m] {
                        continue;
                    }
                    let ms = by_target[m].unwrap_or(src);
                    if !is_below(source, src, ms) {
                        continue;
                    }
                    let vt = tw[m].position - tw[k].position;
                    let vs = sw[ms as usize].position - sw[src as usize].position;
                    let tsize =
                        extent(&tw.iter().map(|w| w.position).collect::<Vec<_>>()).max(1e-9);
                    if vt.length() > 1e-4 * tsize && vs.length() > 1e-4 * scene_size {
                        pairs.push((vt.normalize(), vs.normalize()));
                    }
                }
                let Some(turn) = best_rotation(&pairs) else {
                    continue;
                };
                let p = target.parents()[k];
                let parent_rot = if p == NO_PARENT {
                    target_root.rotation
                } else {
                    tw[p as usize].rotation
                };
                let world = (turn * tw[k].rotation).normalize();
                target_ref[k].rotation = (parent_rot.inverse() * world).normalize();
                world_pose(target, &target_root, &target_ref, &mut tw);
            }
        }

        // 2. How each target joint is driven.
        let mut plan = vec![Plan::Rest; nt];
        let tparents = target.parents();
        let mut children = vec![0usize; nt];
        for k in 0..nt {
            if tparents[k] != NO_PARENT {
                children[tparents[k] as usize] += 1;
            }
        }
        for k in 0..nt {
            plan[k] = match by_target[k] {
                Some(src) => {
                    let mv = match mapped_above[k] {
                        None => Move::Root,
                        Some(_) => {
                            let pk = tparents[k];
                            let pj = source.parent(src);
                            match (pk != NO_PARENT, pj) {
                                (true, Some(pj)) if by_target[pk as usize] == Some(pj) => {
                                    let (ws, wt) = (sw[pj as usize], tw[pk as usize]);
                                    Move::Delta(
                                        (wt.rotation.inverse() * ws.rotation).normalize(),
                                        // Source parent units into target parent units; the
                                        // root scale is applied per frame.
                                        ws.scale.element_sum() / wt.scale.element_sum(),
                                    )
                                }
                                _ => Move::Reference,
                            }
                        }
                    };
                    Plan::Mapped { src, mv }
                }
                None => {
                    // Inside an unbranched run from a mapped joint down to the next?
                    let mut plan_k = Plan::Rest;
                    if let Some(a) = mapped_above[k] {
                        let mut run_ok = true;
                        let mut j = k;
                        while j != a as usize {
                            j = tparents[j] as usize;
                            if children[j] != 1 {
                                run_ok = false;
                            }
                        }
                        if run_ok && children[k] == 1 {
                            // Walk down the single children to the next mapped joint.
                            let mut d = k;
                            let mut steps = 0;
                            let found = loop {
                                let next = (d + 1..nt).find(|&c| tparents[c] as usize == d);
                                match next {
                                    Some(c) if by_target[c].is_some() => break Some(c),
                                    Some(c) if children[c] == 1 => {
                                        d = c;
                                        steps += 1;
                                    }
                                    _ => break None,
                                }
                                if steps > nt {
                                    break None;
                                }
                            };
                            if let (Some(d), Some(sa)) = (found, by_target[a as usize]) {
                                if let Some(sd) = by_target[d] {
                                    let da = target.depth(a) as f32;
                                    let t = (target.depth(k as JointIndex) as f32 - da)
                                        / (target.depth(d as JointIndex) as f32 - da);
                                    plan_k = Plan::Between { a: sa, b: sd, t };
                                }
                            }
                        }
                    }
                    plan_k
                }
            };
        }

        // 3. The root's scale: hip heights above the lowest joint.
        let scale = match options.root_scale {
            Some(s) if s.is_finite() && s > 0.0 => s,
            Some(s) => {
                return Err(Error::NoCommonChain {
                    problem: format!("root scale {s} is not a positive number"),
                })
            }
            None => {
                let hips = (0..nt)
                    .find(|&k| matches!(plan[k], Plan::Mapped { mv: Move::Root, .. }) && by_part[k])
                    .or_else(|| {
                        (0..nt).find(|&k| matches!(plan[k], Plan::Mapped { mv: Move::Root, .. }))
                    });
                match hips {
                    Some(k) => {
                        let src = by_target[k].unwrap_or(0) as usize;
                        let lo_s = sw
                            .iter()
                            .map(|w| w.position.y)
                            .fold(f32::INFINITY, f32::min);
                        let lo_t = tw
                            .iter()
                            .map(|w| w.position.y)
                            .fold(f32::INFINITY, f32::min);
                        let hs = sw[src].position.y - lo_s;
                        let ht = tw[k].position.y - lo_t;
                        if hs > 1e-9 && ht > 1e-9 {
                            ht / hs
                        } else {
                            let es = extent(&sw.iter().map(|w| w.position).collect::<Vec<_>>());
                            let et = extent(&tw.iter().map(|w| w.position).collect::<Vec<_>>());
                            if es > 1e-9 && et > 1e-9 {
                                et / es
                            } else {
                                1.0
                            }
                        }
                    }
                    None => 1.0,
                }
            }
        };

        Ok(Retargeter {
            source: source.id(),
            target: target.id(),
            source_parents: source.parents().into(),
            target_parents: target.parents().into(),
            source_root,
            target_root,
            source_ref_inv: sw.iter().map(|w| w.rotation.inverse()).collect(),
            source_ref_pos: sw.iter().map(|w| w.position).collect(),
            source_ref: source_ref.into(),
            target_ref_rot: tw.iter().map(|w| w.rotation).collect(),
            target_ref_pos: tw.iter().map(|w| w.position).collect(),
            target_ref: target_ref.into(),
            plan: plan.into(),
            scale,
            map: by_target.into(),
        })
    }

    /// Working memory for [`Retargeter::retarget`]: allocate once per stream.
    pub fn scratch(&self) -> Scratch {
        Scratch {
            source: vec![WorldJoint::IDENTITY; self.source_parents.len()],
            target: vec![WorldJoint::IDENTITY; self.target_parents.len()],
            delta: vec![Quat::IDENTITY; self.source_parents.len()],
        }
    }

    /// The factor applied to the root's translation.
    pub fn root_scale(&self) -> f32 {
        self.scale
    }

    /// The target's reference pose after alignment to the source's (local transforms).
    pub fn target_reference(&self) -> &[Transform] {
        &self.target_ref
    }

    /// For each target joint, the source joint that drives it.
    pub fn mapping(&self) -> &[Option<JointIndex>] {
        &self.map
    }

    /// The ids of the source and target skeletons.
    pub fn skeletons(&self) -> (SkeletonId, SkeletonId) {
        (self.source, self.target)
    }

    /// Retargets one source pose (local transforms) into a target pose. Allocates nothing.
    ///
    /// # Errors
    /// [`Error::Length`] if `source_pose`, `target_pose` or `scratch` is shorter than its
    /// skeleton.
    pub fn retarget(
        &self,
        source_pose: &[Transform],
        target_pose: &mut [Transform],
        scratch: &mut Scratch,
    ) -> Result<(), Error> {
        let (ns, nt) = (self.source_parents.len(), self.target_parents.len());
        crate::error::check_len("source pose", ns, source_pose.len())?;
        crate::error::check_len("target pose", nt, target_pose.len())?;
        crate::error::check_len("scratch (source)", ns, scratch.source.len())?;
        crate::error::check_len("scratch (target)", nt, scratch.target.len())?;
        crate::error::check_len("scratch (deltas)", ns, scratch.delta.len())?;
        let sw = &mut scratch.source[..ns];
        let delta = &mut scratch.delta[..ns];
        for j in 0..ns {
            let p = self.source_parents[j];
            let parent = if p == NO_PARENT {
                &self.source_root
            } else {
                &sw[p as usize]
            };
            let w = parent.child(&source_pose[j]);
            sw[j] = w;
            delta[j] = w.rotation * self.source_ref_inv[j];
        }
        let tw = &mut scratch.target[..nt];
        for k in 0..nt {
            let p = self.target_parents[k];
            let parent = if p == NO_PARENT {
                self.target_root
            } else {
                tw[p as usize]
            };
            let reference = &self.target_ref[k];
            let local = match self.plan[k] {
                Plan::Rest => *reference,
                Plan::Mapped { src, mv } => {
                    let s = src as usize;
                    let world = delta[s] * self.target_ref_rot[k];
                    let rotation = (parent.rotation.inverse() * world).normalize();
                    let sref = &self.source_ref[s];
                    let scale = reference.scale * source_pose[s].scale / sref.scale;
                    let translation = match mv {
                        Move::Reference => reference.translation,
                        Move::Delta(turn, units) => {
                            reference.translation
                                + turn
                                    * (source_pose[s].translation - sref.translation)
                                    * (units * self.scale)
                        }
                        Move::Root => {
                            let goal = self.target_ref_pos[k]
                                + (sw[s].position - self.source_ref_pos[s]) * self.scale;
                            parent.rotation.inverse() * (goal - parent.position) / parent.scale
                        }
                    };
                    Transform {
                        translation,
                        rotation,
                        scale: if scale.is_finite() {
                            scale
                        } else {
                            reference.scale
                        },
                    }
                }
                Plan::Between { a, b, t } => {
                    let d = crate::transform::slerp(delta[a as usize], delta[b as usize], t);
                    let world = d * self.target_ref_rot[k];
                    Transform {
                        rotation: (parent.rotation.inverse() * world).normalize(),
                        ..*reference
                    }
                }
            };
            target_pose[k] = local;
            tw[k] = parent.child(&local);
        }
        Ok(())
    }
}

/// The largest distance between two points' bounding-box corners.
fn extent(points: &[Vec3]) -> f32 {
    let (lo, hi) = points.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), &p| (lo.min(p), hi.max(p)),
    );
    if points.is_empty() {
        0.0
    } else {
        (hi - lo).length()
    }
}

/// The rotation that best turns each `a` onto its `b` (unit vectors): the shortest arc for
/// one pair, Horn's quaternion method for several. `None` without pairs.
fn best_rotation(pairs: &[(Vec3, Vec3)]) -> Option<Quat> {
    let (a0, b0) = *pairs.first()?;
    let arc = Quat::from_rotation_arc(a0, b0);
    if pairs.len() == 1 {
        return Some(arc);
    }
    // S = sum a b^T; the eigenvector of N's largest eigenvalue is the rotation (w, x, y, z).
    let mut s = [[0.0f64; 3]; 3];
    for (a, b) in pairs {
        let a = [a.x as f64, a.y as f64, a.z as f64];
        let b = [b.x as f64, b.y as f64, b.z as f64];
        for i in 0..3 {
            for j in 0..3 {
                s[i][j] += a[i] * b[j];
            }
        }
    }
    let [[sxx, sxy, sxz], [syx, syy, syz], [szx, szy, szz]] = s;
    let n = [
        [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz],
    ];
    // Power iteration on N + c I (c makes it positive definite: |eigenvalues| <= sum |a||b|),
    // started from the shortest arc of the first pair.
    let c = pairs.len() as f64 + 1.0;
    let mut q = [arc.w as f64, arc.x as f64, arc.y as f64, arc.z as f64];
    for _ in 0..200 {
        let mut next = [0.0f64; 4];
        for i in 0..4 {
            next[i] = c * q[i] + (0..4).map(|j| n[i][j] * q[j]).sum::<f64>();
        }
        let len = next.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(len > 1e-300) {
            return Some(arc);
        }
        let next = next.map(|x| x / len);
        let change: f64 = next.iter().zip(&q).map(|(a, b)| (a - b).abs()).sum();
        q = next;
        if change < 1e-12 {
            break;
        }
    }
    let r = Quat::from_xyzw(q[1] as f32, q[2] as f32, q[3] as f32, q[0] as f32).normalize();
    r.is_finite().then_some(r).or(Some(arc))
}

impl Retargeter {
    /// Retargets a whole clip of the source skeleton into a clip of the target skeleton:
    /// see [`BakeOptions`].
    ///
    /// # Errors
    /// [`Error::OtherSkeleton`] if `clip` is not the source skeleton's or the skeletons are
    /// not the ones the retargeter was made for; building errors of the baked clip.
    pub fn bake(
        &self,
        clip: &Clip,
        source: &Skeleton,
        target: &Skeleton,
        options: &BakeOptions,
    ) -> Result<Clip, Error> {
        bake::bake(self, clip, source, target, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn horn_recovers_a_rotation() {
        let r = Quat::from_euler(glam::EulerRot::YXZ, 0.7, -0.3, 1.1);
        let a = [
            Vec3::X,
            Vec3::new(0.0, 1.0, 1.0).normalize(),
            Vec3::new(-1.0, -2.0, 0.5).normalize(),
        ];
        let pairs: Vec<_> = a.iter().map(|&v| (v, r * v)).collect();
        let got = best_rotation(&pairs).unwrap();
        assert!(got.angle_between(r) < 1e-4, "{got:?} vs {r:?}");
        // One pair: the shortest arc.
        let one = best_rotation(&pairs[..1]).unwrap();
        assert!(((one * Vec3::X) - r * Vec3::X).length() < 1e-5);
    }
}

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
//! 3. **Translations.** The topmost mapped joints (the hips) move across the floor by the
//!    source's world displacement from its reference, and stand at the source's height above
//!    the floor, both scaled by the ratio of hip heights (or [`Options::root_scale`]): root
//!    motion follows. The floor is scene y = 0 in both scenes (where glTF, FBX and BVH
//!    files put it). Mapped joints that hang elsewhere in the target than in the source
//!    (robot_quaternius's feet, IK controls at the root) ride on the joint the source hangs
//!    them from. Other joints keep the target's bone lengths, plus any change the
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
mod feet;
mod map;
mod names;
mod rig;
mod t_pose;

pub use bake::BakeOptions;
pub use bind::BindReport;
pub use feet::{foot_contacts, FootContact, EASE_OUT};
pub use map::{Found, JointMap, MapPair};
pub use names::{normalize, NameKey, Side};
pub use t_pose::t_pose;

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
    /// The axis bones point along in the target's joint frames (+Y for Blender and the
    /// glTF files it exports), used to align mapped joints that have no mapped child to aim
    /// at (a leg that is one bone without a foot joint) with the source bone's direction to
    /// its first child. `None`: such joints keep their reference rotation.
    pub bone_axis: Option<Vec3>,
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
    /// Where the anchor joint (evaluated first) carries it: the offset in the anchor's frame.
    Attached(JointIndex, Vec3),
}

/// A bone kept pointing where the source's bone points: the direction child's offset in
/// the joint's own frame (reference pose), and the source joint it follows.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Aim {
    offset: Vec3,
    child: JointIndex,
    /// The target child, when it is a direct child whose translation follows the source's
    /// (its offset is then computed per frame).
    direct: Option<JointIndex>,
}

/// `true` when unmapped joint `k` lies inside an unbranched run below its nearest mapped
/// ancestor: every joint from that ancestor down to `k` has exactly one child.
fn is_chain_run(
    k: usize,
    mapped_above: &[Option<JointIndex>],
    children: &[usize],
    parents: &[JointIndex],
) -> bool {
    let Some(a) = mapped_above[k] else {
        return false;
    };
    if children[k] != 1 {
        return false;
    }
    let mut j = k;
    while j != a as usize {
        j = parents[j] as usize;
        if children[j] != 1 {
            return false;
        }
    }
    true
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

    /// The local transform (under `parent`, keeping `scale`) that puts this joint where
    /// turning it rigidly by `turn` about `pivot` takes it; `None` if not finite.
    fn turned_about(
        &self,
        pivot: Vec3,
        turn: Quat,
        parent: &WorldJoint,
        scale: Vec3,
    ) -> Option<Transform> {
        let to_parent = parent.rotation.inverse();
        let position = pivot + turn * (self.position - pivot);
        let local = Transform {
            translation: to_parent * (position - parent.position) / parent.scale,
            rotation: (to_parent * turn * self.rotation).normalize(),
            scale,
        };
        local.is_finite().then_some(local)
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

/// Whether `skeleton` has a layout the automatic map, [`t_pose`] and [`foot_contacts`] can
/// read as a humanoid's: two legs, by name or by the rest pose's layout (found as
/// [`JointMap::auto`] finds them). Without one, joints pair by name alone.
pub fn is_humanoid(skeleton: &Skeleton) -> bool {
    rig::guess(skeleton, &rest_world_positions(skeleton)).is_some()
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
    aims: Box<[Option<Aim>]>,
    order: Box<[JointIndex]>,
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
        let tparents = target.parents();
        // The target joint each source joint drives (the first, if several).
        let mut target_of: Vec<Option<JointIndex>> = vec![None; ns];
        for (k, s) in by_target.iter().enumerate() {
            if let Some(s) = s {
                target_of[*s as usize].get_or_insert(k as JointIndex);
            }
        }
        // Each mapped target joint's anchor: the target joint driven by the nearest mapped
        // ancestor of its source joint (the source's hierarchy decides what hangs from what).
        let anchor: Vec<Option<JointIndex>> = (0..nt)
            .map(|k| {
                let mut j = by_target[k]?;
                while let Some(p) = source.parent(j) {
                    if let Some(a) = target_of[p as usize] {
                        return (a as usize != k).then_some(a);
                    }
                    j = p;
                }
                None
            })
            .collect();
        // Mapped joints whose anchor is not above them in the target (robot_quaternius's
        // root-level feet under the shins): placed from their anchor, after it.
        let attached: Vec<bool> = (0..nt)
            .map(|k| anchor[k].is_some_and(|a| !target.is_below(k as JointIndex, a)))
            .collect();
        // The nearest mapped ancestor of each target joint, in the target's hierarchy.
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
        // Direction children: the mapped joints anchored to each joint (by body part where
        // any is).
        let kids: Vec<Vec<usize>> = (0..nt)
            .map(|k| {
                let all: Vec<usize> = (0..nt)
                    .filter(|&m| anchor[m] == Some(k as JointIndex))
                    .collect();
                let any_part = all.iter().any(|&m| by_part[m]);
                all.into_iter()
                    .filter(|&m| !any_part || by_part[m])
                    .collect()
            })
            .collect();

        let sides_t: Vec<Side> = target.names().iter().map(|n| normalize(n).side).collect();
        // 1. Align the target's reference to the source's, parents first.
        let source_size = extent(&sw.iter().map(|w| w.position).collect::<Vec<_>>()).max(1e-9);
        let target_size = extent(&tw.iter().map(|w| w.position).collect::<Vec<_>>()).max(1e-9);
        if !options.no_align {
            for k in 0..nt {
                let Some(src) = by_target[k] else { continue };
                let mut pairs: Vec<(Vec3, Vec3)> = Vec::new();
                let mut center = (Vec3::ZERO, Vec3::ZERO);
                let mut sides = [None, None];
                for &m in &kids[k] {
                    let ms = by_target[m].unwrap_or(src);
                    let vt = tw[m].position - tw[k].position;
                    let vs = sw[ms as usize].position - sw[src as usize].position;
                    if vt.length() > 1e-4 * target_size && vs.length() > 1e-4 * source_size {
                        pairs.push((vt.normalize(), vs.normalize()));
                        match sides_t[m] {
                            Side::Center => {
                                center.0 += vt.normalize();
                                center.1 += vs.normalize();
                            }
                            Side::Left => {
                                sides[0] = Some((tw[m].position, sw[ms as usize].position))
                            }
                            Side::Right => {
                                sides[1] = Some((tw[m].position, sw[ms as usize].position))
                            }
                        }
                    }
                }
                // Where a joint has a middle child and a left and right one (hips, chest):
                // the middle direction exactly, the left-right line as near as it goes; a
                // best fit of all directions would let long legs or arms outvote the spine.
                // The topmost mapped joints (the hips) only turn about the vertical: both
                // characters stand upright in their reference poses, and a hips joint may
                // sit anywhere (greenman's is behind the body, the barbarian's below its
                // legs), so the direction to the spine says little.
                let top = mapped_above[k].is_none() && !attached[k];
                let frame = match (center.0.length() > 1e-6 && center.1.length() > 1e-6, sides) {
                    // ... unless the way to the spine is upright in both (a hips joint
                    // proper): then it tilts too.
                    (true, [Some(l), Some(r)])
                        if top && center.0.normalize().y > 0.7 && center.1.normalize().y > 0.7 =>
                    {
                        Some(two_axis_rotation(
                            (center.0.normalize(), center.1.normalize()),
                            (l.0 - r.0, l.1 - r.1),
                        ))
                    }
                    (_, [Some(l), Some(r)]) if top => Some(two_axis_rotation(
                        (Vec3::Y, Vec3::Y),
                        (l.0 - r.0, l.1 - r.1),
                    )),
                    (true, [Some(l), Some(r)]) => Some(two_axis_rotation(
                        (center.0.normalize(), center.1.normalize()),
                        (l.0 - r.0, l.1 - r.1),
                    )),
                    _ => None,
                };
                // A leaf-like joint: its bone axis against the source bone.
                if pairs.is_empty() && !top {
                    if let (Some(axis), Some(child)) = (
                        options.bone_axis,
                        (src as usize + 1..ns).find(|&c| source.parents()[c] == src),
                    ) {
                        let vt = tw[k].rotation * axis;
                        let vs = sw[child].position - sw[src as usize].position;
                        if vt.length() > 1e-6 && vs.length() > 1e-4 * source_size {
                            pairs.push((vt.normalize(), vs.normalize()));
                        }
                    }
                }
                let fit = if top { None } else { best_rotation(&pairs) };
                let Some(turn) = frame.or(fit) else { continue };
                let p = tparents[k];
                let parent_rot = if p == NO_PARENT {
                    target_root.rotation
                } else {
                    tw[p as usize].rotation
                };
                let world = (turn * tw[k].rotation).normalize();
                target_ref[k].rotation = (parent_rot.inverse() * world).normalize();
                // Mapped joints that hang elsewhere but ride on this one or a joint below it
                // (robot_quaternius's foot controls at the root, anchored to the shins) turn
                // with it, rigidly: their place in their anchor's frame stays the rest
                // pose's, so the shin keeps pointing at its foot.
                let pivot = tw[k].position;
                for m in 0..nt {
                    let rides = attached[m]
                        && anchor[m].is_some_and(|a| {
                            a as usize == k || target.is_below(a, k as JointIndex)
                        });
                    if !rides {
                        continue;
                    }
                    let p = tparents[m];
                    let parent = if p == NO_PARENT {
                        target_root
                    } else {
                        tw[p as usize]
                    };
                    if let Some(local) =
                        tw[m].turned_about(pivot, turn, &parent, target_ref[m].scale)
                    {
                        target_ref[m] = local;
                    }
                }
                world_pose(target, &target_root, &target_ref, &mut tw);
            }
        }
        // 2. How each target joint is driven.
        let mut plan = vec![Plan::Rest; nt];
        let mut aims: Vec<Option<Aim>> = vec![None; nt];
        let mut children = vec![0usize; nt];
        for k in 0..nt {
            if tparents[k] != NO_PARENT {
                children[tparents[k] as usize] += 1;
            }
        }
        for k in 0..nt {
            plan[k] = match by_target[k] {
                Some(src) => {
                    let mv = if attached[k] {
                        let a = anchor[k].unwrap_or(0) as usize;
                        let offset = tw[a].rotation.inverse() * (tw[k].position - tw[a].position)
                            / tw[a].scale;
                        Move::Attached(a as JointIndex, offset)
                    } else {
                        match mapped_above[k] {
                            None => Move::Root,
                            Some(_) => {
                                let pk = tparents[k];
                                match (pk != NO_PARENT, source.parent(src)) {
                                    (true, Some(pj)) if by_target[pk as usize] == Some(pj) => {
                                        let (ws, wt) = (sw[pj as usize], tw[pk as usize]);
                                        Move::Delta(
                                            (wt.rotation.inverse() * ws.rotation).normalize(),
                                            // Source parent units into target parent units;
                                            // the root scale is applied per frame.
                                            ws.scale.element_sum() / wt.scale.element_sum(),
                                        )
                                    }
                                    _ => Move::Reference,
                                }
                            }
                        }
                    };
                    // One direction child whose place follows from this joint alone: keep
                    // the bone pointing where the source's points each frame.
                    if let [m] = kids[k][..] {
                        let rigid = attached[m] && anchor[m] == Some(k as JointIndex) || {
                            let mut j = tparents[m];
                            let mut ok = target.is_below(m as JointIndex, k as JointIndex);
                            while ok && j != NO_PARENT && j as usize != k {
                                ok = by_target[j as usize].is_none()
                                    && !is_chain_run(
                                        j as usize,
                                        &mapped_above,
                                        &children,
                                        tparents,
                                    );
                                j = tparents[j as usize];
                            }
                            ok
                        };
                        let offset = tw[k].rotation.inverse() * (tw[m].position - tw[k].position);
                        if rigid && offset.length() > 1e-4 * target_size {
                            if let Some(ms) = by_target[m] {
                                let direct = (tparents[m] as usize == k).then_some(m as JointIndex);
                                aims[k] = Some(Aim {
                                    offset,
                                    child: ms,
                                    direct,
                                });
                            }
                        }
                    }
                    Plan::Mapped { src, mv }
                }
                None => {
                    // Inside an unbranched run from a mapped joint down to the next?
                    let mut plan_k = Plan::Rest;
                    if let Some(a) = mapped_above[k] {
                        if is_chain_run(k, &mapped_above, &children, tparents) {
                            let mut d = k;
                            let found = loop {
                                let next = (d + 1..nt).find(|&c| tparents[c] as usize == d);
                                match next {
                                    Some(c) if by_target[c].is_some() => break Some(c),
                                    Some(c) if children[c] == 1 => d = c,
                                    _ => break None,
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
        // Evaluation order: parents before children, anchors before what they place.
        let order = {
            let mut indeg = vec![0usize; nt];
            let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); nt];
            for k in 0..nt {
                if tparents[k] != NO_PARENT {
                    out_edges[tparents[k] as usize].push(k);
                    indeg[k] += 1;
                }
                if let Plan::Mapped {
                    mv: Move::Attached(a, _),
                    ..
                } = plan[k]
                {
                    out_edges[a as usize].push(k);
                    indeg[k] += 1;
                }
            }
            let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..nt)
                .filter(|&k| indeg[k] == 0)
                .map(std::cmp::Reverse)
                .collect();
            let mut order: Vec<JointIndex> = Vec::with_capacity(nt);
            while let Some(std::cmp::Reverse(k)) = ready.pop() {
                order.push(k as JointIndex);
                for &c in &out_edges[k] {
                    indeg[c] -= 1;
                    if indeg[c] == 0 {
                        ready.push(std::cmp::Reverse(c));
                    }
                }
            }
            if order.len() < nt {
                // A joint placed from its own descendant: place it from the reference instead.
                for p in plan.iter_mut() {
                    if let Plan::Mapped {
                        src,
                        mv: Move::Attached(..),
                    } = *p
                    {
                        *p = Plan::Mapped {
                            src,
                            mv: Move::Reference,
                        };
                    }
                }
                (0..nt as JointIndex).collect::<Box<[JointIndex]>>()
            } else {
                order.into()
            }
        };

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
            aims: aims.into(),
            order,
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

    /// The local translation of target joint `k` driven by source joint `src` in
    /// [`Move::Delta`] mode: its reference plus the source's change, turned and scaled.
    #[inline(always)]
    fn translation_delta(
        &self,
        k: usize,
        src: JointIndex,
        turn: Quat,
        units: f32,
        source_pose: &[Transform],
    ) -> Vec3 {
        let s = src as usize;
        self.target_ref[k].translation
            + turn
                * (source_pose[s].translation - self.source_ref[s].translation)
                * (units * self.scale)
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
        for &k in self.order.iter() {
            let k = k as usize;
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
                    let mut world = delta[s] * self.target_ref_rot[k];
                    if let Some(aim) = self.aims[k] {
                        let want = sw[aim.child as usize].position - sw[s].position;
                        let offset = match aim.direct.map(|m| self.plan[m as usize]) {
                            Some(Plan::Mapped {
                                src: ms,
                                mv: Move::Delta(turn, units),
                            }) => {
                                let m = aim.direct.unwrap_or(0) as usize;
                                let t = self.translation_delta(m, ms, turn, units, source_pose);
                                reference.scale * t
                            }
                            _ => aim.offset,
                        };
                        let have = world * offset;
                        let (lw, lh) = (want.length_squared(), have.length_squared());
                        if lw > 0.0 && lh > 0.0 {
                            let arc = Quat::from_rotation_arc(have / lh.sqrt(), want / lw.sqrt());
                            world = arc * world;
                        }
                    }
                    let rotation = (parent.rotation.inverse() * world).normalize();
                    let sref = &self.source_ref[s];
                    let scale = reference.scale * source_pose[s].scale / sref.scale;
                    let translation = match mv {
                        Move::Reference => reference.translation,
                        Move::Delta(turn, units) => {
                            self.translation_delta(k, src, turn, units, source_pose)
                        }
                        Move::Attached(a, offset) => {
                            let a = tw[a as usize];
                            let at = a.position + a.rotation * (a.scale * offset);
                            parent.rotation.inverse() * (at - parent.position) / parent.scale
                        }
                        Move::Root => {
                            // Across the floor: the displacement from the reference; up:
                            // the height above the floor (scene y = 0 in both scenes).
                            let mut goal = self.target_ref_pos[k]
                                + (sw[s].position - self.source_ref_pos[s]) * self.scale;
                            goal.y = sw[s].position.y * self.scale;
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

/// The rotation that turns `primary.0` onto `primary.1` exactly, then about that axis so
/// that `secondary.0` comes as near `secondary.1` as it can.
fn two_axis_rotation(primary: (Vec3, Vec3), secondary: (Vec3, Vec3)) -> Quat {
    let first = Quat::from_rotation_arc(primary.0, primary.1);
    let axis = primary.1;
    let a = first * secondary.0;
    let (a, b) = (
        a - axis * a.dot(axis),
        secondary.1 - axis * secondary.1.dot(axis),
    );
    if a.length_squared() < 1e-12 || b.length_squared() < 1e-12 {
        return first;
    }
    let angle = axis.dot(a.cross(b)).atan2(a.dot(b));
    (Quat::from_axis_angle(axis, angle) * first).normalize()
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
        if len.is_nan() || len <= 1e-300 {
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

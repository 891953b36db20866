//! Chains of any length (a tail, a tentacle, a spine, a finger, a crane arm) brought to a
//! target by FABRIK or CCD, with a [`Limit`] per joint.
//!
//! Both solvers work on the chain joints' model-space positions and turn one joint at a time
//! about its own origin: **CCD** (cyclic coordinate descent) turns each joint, from the end
//! up, so that the end points at the target; **FABRIK** (forward and backward reaching,
//! Aristidis and Lasenby 2011) moves the joint positions along the chain toward the target
//! and back to the root, then turns each joint, from the root down, so that its child lands
//! on the new position. After every turn the joint's local rotation is clamped to its limit
//! and the turn actually made is carried down the chain, so limits hold after every step and
//! the model matrices stay those of the written pose.
//!
//! CCD favours the joints near the end (a curling tail) and never moves the end away from
//! the target, but it can crawl: a chain whose first bones are much shorter than the rest,
//! asked to reach behind itself, gains little per iteration. FABRIK spreads the bend along
//! the chain (a smooth arc), converges in a few iterations from any start, and is the better
//! default. Neither needs a pole; a chain that must bend one way takes hinge limits.
//! Both converge slowly to targets at the edge of the reachable shell (the chain fully
//! stretched, or folded back onto its longest bone); [`Reach::iterations`] bounds the cost.
//! A target out of reach leaves the chain straight, pointing at it, in one pass.

use glam::{Mat4, Quat, Vec3};

use super::limit::{bad_limit, Limit};
use super::{
    arc, check_descendant, finite, finite_vec, in_range, turn_local, turn_model, IkReport,
};
use crate::error::check_len;
use crate::{Error, JointIndex, Skeleton, Transform};

/// Chains up to this many joints solve with stack buffers; longer ones allocate one buffer
/// per solve.
const STACK: usize = 32;

/// A chain of joints of a skeleton, each below the one before (joints between them, not in
/// the chain, are carried along), with a limit per joint. Built once, used by any number of
/// solves.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    joints: Vec<JointIndex>,
    limits: Vec<Limit>,
    /// The joints' rest rotations: limits are relative to them.
    rest: Vec<Quat>,
    /// One more than the largest index.
    len: usize,
}

impl Chain {
    /// The chain `joints` of `skeleton`, root first, without limits.
    ///
    /// # Errors
    /// [`Error::ChainTooShort`] for fewer than two joints; [`Error::NoSuchJoint`];
    /// [`Error::NotAChain`] if a joint is not below the one before.
    pub fn new(skeleton: &Skeleton, joints: &[JointIndex]) -> Result<Self, Error> {
        if joints.len() < 2 {
            return Err(Error::ChainTooShort(joints.len()));
        }
        in_range(skeleton, joints[0])?;
        for pair in joints.windows(2) {
            check_descendant(skeleton, pair[0], pair[1])?;
        }
        let rest = joints
            .iter()
            .map(|&j| skeleton.rest_pose()[j as usize].rotation.normalize())
            .collect();
        Ok(Chain {
            joints: joints.to_vec(),
            limits: vec![Limit::Free; joints.len()],
            rest,
            len: 1 + *joints.iter().max().unwrap_or(&0) as usize,
        })
    }

    /// The chain of the joints named `names`, root first.
    ///
    /// # Errors
    /// [`Error::NoSuchJointName`] for a name the skeleton lacks; otherwise as [`Chain::new`].
    pub fn by_name(skeleton: &Skeleton, names: &[&str]) -> Result<Self, Error> {
        let joints = names
            .iter()
            .map(|n| {
                skeleton
                    .find(n)
                    .ok_or_else(|| Error::NoSuchJointName(n.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(skeleton, &joints)
    }

    /// The chain from `root` down to `end`, every joint between included.
    ///
    /// # Errors
    /// As [`Chain::new`], and [`Error::NotAChain`] if `end` is not below `root`.
    pub fn between(skeleton: &Skeleton, root: JointIndex, end: JointIndex) -> Result<Self, Error> {
        check_descendant(skeleton, root, end)?;
        let mut joints = vec![end];
        let mut j = end;
        while let Some(p) = skeleton.parent(j) {
            joints.push(p);
            if p == root {
                break;
            }
            j = p;
        }
        joints.reverse();
        Self::new(skeleton, &joints)
    }

    /// Sets the limit of the chain's joint at `position` (0 is the root).
    ///
    /// # Errors
    /// [`Error::BadLimit`] for a position past the chain, a NaN, a zero axis or a range
    /// whose ends are swapped or outside -π..=π.
    pub fn set_limit(&mut self, position: usize, limit: Limit) -> Result<(), Error> {
        let Some(&joint) = self.joints.get(position) else {
            return Err(bad_limit(
                *self.joints.last().unwrap_or(&0),
                "its position is past the chain's end",
            ));
        };
        self.limits[position] = limit.checked().map_err(|why| bad_limit(joint, why))?;
        Ok(())
    }

    /// The chain with the limit of the joint at `position` set (see [`Chain::set_limit`]).
    ///
    /// # Errors
    /// As [`Chain::set_limit`].
    pub fn with_limit(mut self, position: usize, limit: Limit) -> Result<Self, Error> {
        self.set_limit(position, limit)?;
        Ok(self)
    }

    /// The joints, root first.
    pub fn joints(&self) -> &[JointIndex] {
        &self.joints
    }

    /// The limits, one per joint.
    pub fn limits(&self) -> &[Limit] {
        &self.limits
    }

    /// The joints' rest rotations, which the limits are relative to.
    pub fn rest_rotations(&self) -> &[Quat] {
        &self.rest
    }
}

/// Where a chain's end should go, and how hard to try.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reach {
    /// Model-space position for the chain's last joint.
    pub target: Vec3,
    /// 0 leaves the pose bit for bit, 1 applies the solution; between, each joint's local
    /// rotation is interpolated (then clamped to its limit). Clamped to 0..=1.
    pub weight: f32,
    /// Most iterations (each a full pass over the chain).
    pub iterations: u32,
    /// Stop once the end is this close to the target, as a fraction of the chain's length.
    pub tolerance: f32,
}

impl Reach {
    /// Reach `target` at full weight, up to 16 iterations, within 1e-4 of the chain's
    /// length.
    pub fn new(target: Vec3) -> Self {
        Reach {
            target,
            weight: 1.0,
            iterations: 16,
            tolerance: 1e-4,
        }
    }
}

/// Which solver.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Fabrik,
    Ccd,
}

/// Solves `chain` toward `reach.target` by FABRIK, writing the chain joints' local rotations
/// to `local` and their model matrices to `model` (which must hold the model matrices of
/// `local`, from [`crate::local_to_model`]). Every joint of the chain is inside its limit
/// afterwards, even one that was outside it in the input pose (weight above 0).
///
/// ```
/// # use skelett::*;
/// # use skelett::ik::*;
/// # use glam::{Mat4, Quat, Vec3};
/// // A tail of five joints, 0.25 apart along +X.
/// let joints = (0..5usize).map(|i| RawJoint {
///     name: format!("tail{i}"), parent: i.checked_sub(1),
///     rest: Transform::new(Vec3::new(if i == 0 { 0.0 } else { 0.25 }, 0.0, 0.0),
///                          Quat::IDENTITY, Vec3::ONE),
/// }).collect();
/// let skeleton = RawSkeleton { joints, ..Default::default() }.build()?;
/// let chain = Chain::new(&skeleton, &[0, 1, 2, 3, 4])?;
/// let mut pose = Pose::rest(&skeleton);
/// let mut model = vec![Mat4::IDENTITY; 5];
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// let target = Vec3::new(0.5, 0.6, 0.0);
/// let report = fabrik(&chain, &Reach::new(target), &mut pose, &mut model)?;
/// assert!(report.reached);
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// assert!(model[4].w_axis.truncate().distance(target) < 1e-3);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::NotFinite`] for a NaN or infinite target, weight or tolerance, or chain model
/// matrices (nothing is written then); [`Error::Length`] if `local` or `model` does not
/// reach the chain's joints.
pub fn fabrik(
    chain: &Chain,
    reach: &Reach,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<IkReport, Error> {
    solve(Method::Fabrik, chain, reach, local, model)
}

/// Solves `chain` toward `reach.target` by CCD; otherwise as [`fabrik`].
///
/// ```
/// # use skelett::*;
/// # use skelett::ik::*;
/// # use glam::{Mat4, Quat, Vec3};
/// // A finger: three joints along +X, each bending only about Z, 0 to 90 degrees.
/// let joints = (0..4usize).map(|i| RawJoint {
///     name: format!("f{i}"), parent: i.checked_sub(1),
///     rest: Transform::new(Vec3::new(if i == 0 { 0.0 } else { 1.0 }, 0.0, 0.0),
///                          Quat::IDENTITY, Vec3::ONE),
/// }).collect();
/// let skeleton = RawSkeleton { joints, ..Default::default() }.build()?;
/// let hinge = Limit::Hinge { axis: Vec3::Z, min: 0.0, max: std::f32::consts::FRAC_PI_2 };
/// let chain = Chain::new(&skeleton, &[0, 1, 2, 3])?
///     .with_limit(0, hinge)?.with_limit(1, hinge)?.with_limit(2, hinge)?;
/// let mut pose = Pose::rest(&skeleton);
/// let mut model = vec![Mat4::IDENTITY; 4];
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// // Curl toward a point above the finger.
/// ccd(&chain, &Reach::new(Vec3::new(1.0, 1.5, 0.0)), &mut pose, &mut model)?;
/// for j in 0..3 {
///     assert!(hinge.contains(pose[j].rotation, 1e-4));
/// }
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// As [`fabrik`].
pub fn ccd(
    chain: &Chain,
    reach: &Reach,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<IkReport, Error> {
    solve(Method::Ccd, chain, reach, local, model)
}

fn solve(
    method: Method,
    chain: &Chain,
    reach: &Reach,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<IkReport, Error> {
    check_len("local", chain.len, local.len())?;
    check_len("model", chain.len, model.len())?;
    finite_vec("chain target", reach.target)?;
    finite("chain weight", reach.weight)?;
    finite("chain tolerance", reach.tolerance)?;
    for &j in &chain.joints {
        if !model[j as usize].is_finite() || !local[j as usize].rotation.is_finite() {
            return Err(Error::NotFinite {
                what: "chain's pose or model matrices",
            });
        }
    }
    let n = chain.joints.len();
    let last = n - 1;
    let pos = |model: &[Mat4], i: usize| model[chain.joints[i] as usize].w_axis.truncate();
    let mut lengths_stack = [0.0f32; STACK];
    let mut lengths_heap;
    let lengths: &mut [f32] = if n <= STACK {
        &mut lengths_stack[..n]
    } else {
        lengths_heap = vec![0.0; n];
        &mut lengths_heap
    };
    let mut total = 0.0;
    for (i, l) in lengths[..last].iter_mut().enumerate() {
        *l = pos(model, i).distance(pos(model, i + 1));
        total += *l;
    }
    let tolerance = reach.tolerance.max(0.0) * total.max(f32::MIN_POSITIVE);
    let weight = reach.weight.clamp(0.0, 1.0);
    if weight == 0.0 {
        let distance = pos(model, last).distance(reach.target);
        return Ok(IkReport {
            reached: distance <= tolerance,
            distance,
        });
    }

    // The input rotations, for weights below 1.
    let mut input_stack = [Quat::IDENTITY; STACK];
    let mut input_heap;
    let input: &mut [Quat] = if n <= STACK {
        &mut input_stack[..n]
    } else {
        input_heap = vec![Quat::IDENTITY; n];
        &mut input_heap
    };
    for (i, q) in input.iter_mut().enumerate() {
        *q = local[chain.joints[i] as usize].rotation;
    }

    // Every limited joint inside its limit first, root down.
    for (i, limit) in chain.limits.iter().enumerate() {
        if *limit != Limit::Free {
            let q = local[chain.joints[i] as usize].rotation;
            set_rotation(chain, i, q, local, model);
        }
    }

    let mut positions_stack = [Vec3::ZERO; STACK];
    let mut positions_heap;
    let p: &mut [Vec3] = if n <= STACK {
        &mut positions_stack[..n]
    } else {
        positions_heap = vec![Vec3::ZERO; n];
        &mut positions_heap
    };
    let target = reach.target;
    for _ in 0..reach.iterations {
        if pos(model, last).distance(target) <= tolerance {
            break;
        }
        let root = pos(model, 0);
        if root.distance(target) >= total {
            // Out of reach (both solvers): the straight line toward the target.
            let dir = (target - root).try_normalize().unwrap_or(Vec3::ZERO);
            p[0] = root;
            for i in 0..last {
                p[i + 1] = p[i] + dir * lengths[i];
            }
            turn_onto(chain, p, local, model);
            continue;
        }
        match method {
            Method::Ccd => {
                for i in (0..last).rev() {
                    let pivot = pos(model, i);
                    turn_toward(
                        chain,
                        i,
                        pos(model, last) - pivot,
                        target - pivot,
                        local,
                        model,
                    );
                }
            }
            Method::Fabrik => {
                for (i, x) in p.iter_mut().enumerate() {
                    *x = pos(model, i);
                }
                p[last] = target;
                for i in (0..last).rev() {
                    let d = (p[i] - p[i + 1]).try_normalize().unwrap_or(Vec3::ZERO);
                    p[i] = p[i + 1] + d * lengths[i];
                }
                p[0] = root;
                for i in 0..last {
                    let d = (p[i + 1] - p[i]).try_normalize().unwrap_or(Vec3::ZERO);
                    p[i + 1] = p[i] + d * lengths[i];
                }
                turn_onto(chain, p, local, model);
            }
        }
    }
    let distance = pos(model, last).distance(target);
    let report = IkReport {
        reached: distance <= tolerance,
        distance,
    };
    if weight < 1.0 {
        // Each joint part of the way from its input rotation to the solved one, root down.
        for (i, from) in input.iter().enumerate() {
            let j = chain.joints[i] as usize;
            let q = from.slerp(local[j].rotation, weight);
            set_rotation(chain, i, q, local, model);
        }
    }
    Ok(report)
}

/// Turns each joint of the chain, root down, so that its child lands on `p` (as near as its
/// limit allows).
fn turn_onto(chain: &Chain, p: &[Vec3], local: &mut [Transform], model: &mut [Mat4]) {
    let pos = |model: &[Mat4], i: usize| model[chain.joints[i] as usize].w_axis.truncate();
    for i in 0..chain.joints.len() - 1 {
        let here = pos(model, i);
        let child = pos(model, i + 1);
        turn_toward(chain, i, child - here, p[i + 1] - here, local, model);
    }
}

/// Turns the chain's joint at `i` by the model-space shortest arc from `from` to `to`
/// (within its limit) and carries the turn down the chain.
fn turn_toward(
    chain: &Chain,
    i: usize,
    from: Vec3,
    to: Vec3,
    local: &mut [Transform],
    model: &mut [Mat4],
) {
    let (Some(from), Some(to)) = (from.try_normalize(), to.try_normalize()) else {
        return;
    };
    let j = chain.joints[i] as usize;
    let mut turned = local[j];
    turn_local(&mut turned, &model[j], arc(from, to));
    set_rotation(chain, i, turned.rotation, local, model);
}

/// Sets the local rotation of the chain's joint at `i` to `q` clamped to its limit, and
/// turns the model matrices of it and of the chain's joints below it to match.
fn set_rotation(chain: &Chain, i: usize, q: Quat, local: &mut [Transform], model: &mut [Mat4]) {
    let j = chain.joints[i] as usize;
    let rest = chain.rest[i];
    let q = match chain.limits[i] {
        Limit::Free => q.normalize(),
        limit => (rest * limit.clamp(rest.conjugate() * q)).normalize(),
    };
    let old = local[j].rotation;
    local[j].rotation = q;
    let delta = old.conjugate() * q;
    let c = model_turn(&model[j], delta);
    let pivot = model[j].w_axis.truncate();
    for &k in &chain.joints[i..] {
        model[k as usize] = turn_model(&model[k as usize], pivot, c);
    }
}

/// The model-space turn (about the joint's origin) that a local rotation change `delta`
/// (`new = old · delta`) makes of a joint whose model matrix is `m`: `M delta M⁻¹`, whose
/// axis is `M a` (rescaled; `-M a` for a mirrored frame) for `delta`'s axis `a`. The inverse
/// of the conversion in `turn_local`; exact for rigid, uniformly scaled and mirrored frames.
#[inline]
fn model_turn(m: &Mat4, delta: Quat) -> Quat {
    let a = Vec3::new(delta.x, delta.y, delta.z);
    let len2 = a.length_squared();
    if len2 == 0.0 {
        return Quat::IDENTITY;
    }
    let m3 = glam::Mat3::from_mat4(*m);
    let v = if m3.determinant() < 0.0 {
        -(m3 * a)
    } else {
        m3 * a
    };
    let v_len2 = v.length_squared();
    let axis = if v_len2 > 0.0 && v_len2.is_finite() {
        v * (len2 / v_len2).sqrt()
    } else {
        a
    };
    Quat::from_xyzw(axis.x, axis.y, axis.z, delta.w)
}

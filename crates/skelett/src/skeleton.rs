//! Skeletons: the joint hierarchy every clip, pose and mesh of a character refers to.
//!
//! Importers fill a [`RawSkeleton`] (joints in any order, parents by index, names as
//! strings); [`RawSkeleton::build`] validates it and produces an immutable [`Skeleton`] whose
//! joints are ordered parents-first, so that [`crate::local_to_model`] is one forward pass.
//! The order the source had is kept as a remap ([`Skeleton::source_index`]).
//!
//! A skeleton also carries the transform of whatever sits above its root joints in the source
//! scene ([`Skeleton::root_transform`]): model space, in which the hierarchy functions work, is
//! put back into scene space by multiplying with it.

use std::collections::{BinaryHeap, HashMap};

use glam::Mat4;

use crate::{Error, Transform};

/// Index of a joint in a [`Skeleton`]. Parents always have smaller indices than their children.
pub type JointIndex = u16;

/// The largest joint count a skeleton may have.
pub const MAX_JOINTS: usize = JointIndex::MAX as usize;

const NO_PARENT: JointIndex = JointIndex::MAX;

/// One joint of a [`RawSkeleton`].
#[derive(Clone, Debug, PartialEq)]
pub struct RawJoint {
    /// Unique name; clips and meshes are bound to joints by it.
    pub name: String,
    /// Index of the parent joint in [`RawSkeleton::joints`], `None` for a root.
    pub parent: Option<usize>,
    /// Local transform in the rest (bind) pose.
    pub rest: Transform,
}

/// An editable skeleton, as an importer produces it: joints in any order.
#[derive(Clone, Debug, PartialEq)]
pub struct RawSkeleton {
    /// The joints; parents may come after their children.
    pub joints: Vec<RawJoint>,
    /// The transform from model space to the source's scene space (non-joint ancestors).
    pub root_transform: Mat4,
}

impl Default for RawSkeleton {
    fn default() -> Self {
        Self {
            joints: Vec::new(),
            root_transform: Mat4::IDENTITY,
        }
    }
}

/// An immutable skeleton: joint names, parents (before children), rest pose.
///
/// ```
/// use skelett::{RawSkeleton, RawJoint, Transform};
/// let raw = RawSkeleton {
///     joints: vec![
///         RawJoint { name: "hand".into(), parent: Some(1), rest: Transform::IDENTITY },
///         RawJoint { name: "arm".into(), parent: None, rest: Transform::IDENTITY },
///     ],
///     ..Default::default()
/// };
/// let skeleton = raw.build().unwrap();
/// assert_eq!(skeleton.name(0), "arm"); // parents first
/// assert_eq!(skeleton.parent(1), Some(0));
/// assert_eq!(skeleton.find("hand"), Some(1));
/// assert_eq!(skeleton.source_index(1), 0); // "hand" was joint 0 in the raw skeleton
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Skeleton {
    names: Box<[String]>,
    parents: Box<[JointIndex]>,
    rest: Box<[Transform]>,
    source_index: Box<[u32]>,
    root_transform: Mat4,
    by_name: HashMap<String, JointIndex>,
    id: SkeletonId,
    /// Morph-target weight channels animated beside the joints ([`Skeleton::with_morph_channels`]).
    morph_names: Box<[String]>,
    /// Their weights where nothing animates them (glTF's `mesh.weights`).
    morph_rest: Box<[f32]>,
}

/// A morph-target weight channel of a [`Skeleton`] (a "blend shape channel"): one scalar that
/// clips animate beside the joints and that meshes read to weigh their morph targets. A
/// skeleton's channels are the asset's shared vocabulary, as its joints are: clips bind their
/// weight tracks to them by name, meshes bind their targets by index
/// ([`crate::SkinnedMesh::morph_channels`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MorphChannel {
    /// Unique name (importers use `mesh/target`, see their module docs).
    pub name: String,
    /// The weight where no clip animates it (glTF's `mesh.weights`; 0 for most sources).
    pub rest: f32,
}

/// The identity of a skeleton's joint layout: a 64-bit hash of its joint names and parents,
/// in joint order.
///
/// Every [`crate::Clip`] records the id of the skeleton it was built for
/// ([`crate::Clip::skeleton_id`]); the [`crate::animator::Animator`] refuses a clip whose id
/// is not its skeleton's. Two skeletons loaded from different files have the same id when
/// their joints have the same names and parents in the same order (the DirectX and RiTE case
/// of animations kept apart from their model), whatever their rest poses or units; a clip of
/// any other skeleton must be bound by name ([`crate::Clip::rebind`]) or retargeted
/// ([`crate::retarget`]) first.
///
/// ```
/// use skelett::{RawSkeleton, RawJoint, Transform};
/// let joint = |name: &str, parent| RawJoint { name: name.into(), parent, rest: Transform::IDENTITY };
/// let a = RawSkeleton { joints: vec![joint("hip", None), joint("knee", Some(0))], ..Default::default() }.build()?;
/// let b = a.scaled(0.01);
/// let c = RawSkeleton { joints: vec![joint("hip", None), joint("shin", Some(0))], ..Default::default() }.build()?;
/// assert_eq!(a.id(), b.id());
/// assert_ne!(a.id(), c.id());
/// # Ok::<(), skelett::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SkeletonId(pub u64);

impl std::fmt::Display for SkeletonId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl SkeletonId {
    /// The id of a layout: FNV-1a over each joint's name, a separator and its parent index
    /// (stable across runs, platforms and versions).
    pub fn of_layout<'a>(joints: impl IntoIterator<Item = (&'a str, Option<JointIndex>)>) -> Self {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(PRIME);
            }
        };
        for (name, parent) in joints {
            eat(name.as_bytes());
            eat(&[0xff]);
            eat(&parent.map_or(NO_PARENT, |p| p).to_le_bytes());
        }
        SkeletonId(h)
    }
}

impl RawSkeleton {
    /// Validates the skeleton and orders its joints parents-first.
    ///
    /// The order is the source's wherever the source already puts parents first; otherwise
    /// joints move only as far as needed (a stable topological sort).
    ///
    /// # Errors
    /// [`Error::TooManyJoints`], [`Error::ParentOutOfRange`], [`Error::JointCycle`],
    /// [`Error::DuplicateJointName`], [`Error::NonFiniteRest`].
    pub fn build(&self) -> Result<Skeleton, Error> {
        let n = self.joints.len();
        if n > MAX_JOINTS {
            return Err(Error::TooManyJoints(n));
        }
        let mut by_name = HashMap::with_capacity(n);
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut roots = BinaryHeap::new();
        for (i, j) in self.joints.iter().enumerate() {
            if !j.rest.is_finite() || j.rest.rotation.length_squared() < 1e-12 {
                return Err(Error::NonFiniteRest(j.name.clone()));
            }
            match j.parent {
                Some(p) if p >= n => {
                    return Err(Error::ParentOutOfRange {
                        joint: i,
                        name: j.name.clone(),
                        parent: p,
                        count: n,
                    })
                }
                Some(p) => children[p].push(i),
                None => roots.push(std::cmp::Reverse(i)),
            }
            if by_name.insert(j.name.clone(), 0).is_some() {
                return Err(Error::DuplicateJointName(j.name.clone()));
            }
        }
        if !self.root_transform.is_finite() {
            return Err(Error::NonFiniteRest("<root transform>".into()));
        }
        // Kahn's algorithm, always emitting the lowest source index that is ready.
        let mut order = Vec::with_capacity(n);
        let mut ready = roots;
        while let Some(std::cmp::Reverse(i)) = ready.pop() {
            order.push(i);
            for &c in &children[i] {
                ready.push(std::cmp::Reverse(c));
            }
        }
        if order.len() < n {
            return Err(Error::JointCycle(self.find_cycle(&order)));
        }
        let mut new_index = vec![0usize; n];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let mut names = Vec::with_capacity(n);
        let mut parents = Vec::with_capacity(n);
        let mut rest: Vec<Transform> = Vec::with_capacity(n);
        for (new, &old) in order.iter().enumerate() {
            let j = &self.joints[old];
            names.push(j.name.clone());
            parents.push(j.parent.map_or(NO_PARENT, |p| new_index[p] as JointIndex));
            if let Some(slot) = by_name.get_mut(&j.name) {
                *slot = new as JointIndex;
            }
            // Rest rotations are stored as unit quaternions (the hierarchy relies on it); ones
            // already unit to f32 precision are kept bit for bit (so rebuilding is exact).
            let q = j.rest.rotation;
            let rotation = if (q.length_squared() - 1.0).abs() > 4.0 * f32::EPSILON {
                q.normalize()
            } else {
                q
            };
            rest.push(Transform { rotation, ..j.rest });
        }
        let id = SkeletonId::of_layout(
            names
                .iter()
                .zip(&parents)
                .map(|(n, &p)| (n.as_str(), (p != NO_PARENT).then_some(p))),
        );
        Ok(Skeleton {
            names: names.into(),
            parents: parents.into(),
            rest: rest.into(),
            source_index: order.iter().map(|&i| i as u32).collect(),
            root_transform: self.root_transform,
            id,
            by_name,
            morph_names: Box::new([]),
            morph_rest: Box::new([]),
        })
    }

    /// Names the joints of one cycle among the joints not reachable from a root.
    fn find_cycle(&self, placed: &[usize]) -> Vec<String> {
        let mut done = vec![false; self.joints.len()];
        for &i in placed {
            done[i] = true;
        }
        let start = done.iter().position(|d| !d).unwrap_or(0);
        // Walk up from an unplaced joint: every joint above it is unplaced too, so the walk
        // enters a cycle within n steps; collect the cycle from its first repeated joint.
        let mut seen = vec![usize::MAX; self.joints.len()];
        let mut path = Vec::new();
        let mut i = start;
        while seen[i] == usize::MAX {
            seen[i] = path.len();
            path.push(i);
            match self.joints[i].parent {
                Some(p) => i = p,
                None => break,
            }
        }
        let from = if seen[i] != usize::MAX { seen[i] } else { 0 };
        let mut names: Vec<String> = path[from..]
            .iter()
            .map(|&j| self.joints[j].name.clone())
            .collect();
        if let Some(first) = names.first().cloned() {
            names.push(first);
        }
        names
    }
}

impl Skeleton {
    /// The identity of this skeleton's joint layout (names and parents), which clips built
    /// for it carry.
    #[inline]
    pub fn id(&self) -> SkeletonId {
        self.id
    }

    /// Number of joints.
    #[inline]
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// `true` when the skeleton has no joints.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Name of joint `j`.
    ///
    /// # Panics
    /// If `j` is out of range.
    pub fn name(&self, j: JointIndex) -> &str {
        &self.names[j as usize]
    }

    /// All joint names, in joint order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Parent of joint `j`, `None` for a root.
    ///
    /// # Panics
    /// If `j` is out of range.
    #[inline]
    pub fn parent(&self, j: JointIndex) -> Option<JointIndex> {
        let p = self.parents[j as usize];
        (p != NO_PARENT).then_some(p)
    }

    /// Parent indices of all joints, [`JointIndex::MAX`] for roots. Every parent index is
    /// smaller than its child's.
    #[inline]
    pub fn parents(&self) -> &[JointIndex] {
        &self.parents
    }

    /// The joint called `name`.
    pub fn find(&self, name: &str) -> Option<JointIndex> {
        self.by_name.get(name).copied()
    }

    /// The rest (bind) pose, as local transforms.
    #[inline]
    pub fn rest_pose(&self) -> &[Transform] {
        &self.rest
    }

    /// The transform from model space to the source scene's space: the accumulated transform
    /// of the non-joint nodes above the root joints.
    #[inline]
    pub fn root_transform(&self) -> Mat4 {
        self.root_transform
    }

    /// The index joint `j` had in the [`RawSkeleton`] it was built from.
    pub fn source_index(&self, j: JointIndex) -> usize {
        self.source_index[j as usize] as usize
    }

    /// For each raw joint index, its index in this skeleton (the inverse of
    /// [`Skeleton::source_index`]).
    pub fn joint_of_source(&self) -> Vec<JointIndex> {
        let mut out = vec![0; self.len()];
        for (j, &s) in self.source_index.iter().enumerate() {
            out[s as usize] = j as JointIndex;
        }
        out
    }

    /// `true` when `joint` hangs below `ancestor` (a strict descendant: a joint is not below
    /// itself).
    ///
    /// ```
    /// # use skelett::*;
    /// let j = |name: &str, parent| RawJoint { name: name.into(), parent, rest: Transform::IDENTITY };
    /// let sk = RawSkeleton { joints: vec![j("hips", None), j("spine", Some(0)), j("head", Some(1))],
    ///     ..Default::default() }.build()?;
    /// assert!(sk.is_below(2, 0) && !sk.is_below(0, 2) && !sk.is_below(1, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn is_below(&self, joint: JointIndex, ancestor: JointIndex) -> bool {
        let mut j = joint;
        while let Some(p) = self.parent(j) {
            if p == ancestor {
                return true;
            }
            j = p;
        }
        false
    }

    /// Depth-first children lists are not stored; this returns the joints of the sub-tree
    /// rooted at `j` (including `j`), in joint order.
    pub fn subtree(&self, j: JointIndex) -> Vec<JointIndex> {
        let mut inside = vec![false; self.len()];
        let mut out = Vec::new();
        for k in j as usize..self.len() {
            let is_in = k == j as usize
                || (self.parents[k] != NO_PARENT && inside[self.parents[k] as usize]);
            if is_in {
                inside[k] = true;
                out.push(k as JointIndex);
            }
        }
        out
    }

    /// The same skeleton with morph-target weight channels: the weights clips animate beside
    /// the joints and meshes read ([`crate::morph`]). Replaces any channels it had. The id
    /// ([`Skeleton::id`]) then covers the channel names too (a skeleton without channels keeps
    /// the id of its joints alone), so clips bound to one set of channels are not played on
    /// another.
    ///
    /// ```
    /// use skelett::{MorphChannel, RawJoint, RawSkeleton, Transform};
    /// let skeleton = RawSkeleton { joints: vec![RawJoint { name: "head".into(), parent: None,
    ///     rest: Transform::IDENTITY }], ..Default::default() }.build()?;
    /// let plain = skeleton.id();
    /// let face = skeleton.with_morph_channels(vec![
    ///     MorphChannel { name: "face/jawOpen".into(), rest: 0.0 },
    ///     MorphChannel { name: "face/smile".into(), rest: 0.25 },
    /// ])?;
    /// assert_eq!(face.morph_channel_count(), 2);
    /// assert_eq!(face.find_morph_channel("face/smile"), Some(1));
    /// assert_eq!(face.morph_rest(), &[0.0, 0.25]);
    /// assert_ne!(face.id(), plain);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Morph`] for a duplicate name or a non-finite rest weight.
    pub fn with_morph_channels(mut self, channels: Vec<MorphChannel>) -> Result<Self, Error> {
        let mut seen = std::collections::HashSet::new();
        for c in &channels {
            if !seen.insert(c.name.as_str()) {
                return Err(Error::Morph {
                    what: format!("channel {:?}", c.name),
                    problem: "the name is used twice".into(),
                });
            }
            if !c.rest.is_finite() {
                return Err(Error::Morph {
                    what: format!("channel {:?}", c.name),
                    problem: format!("rest weight {} is not finite", c.rest),
                });
            }
        }
        self.morph_rest = channels.iter().map(|c| c.rest).collect();
        self.morph_names = channels.into_iter().map(|c| c.name).collect();
        let joints = SkeletonId::of_layout(
            self.names
                .iter()
                .zip(self.parents.iter())
                .map(|(n, &p)| (n.as_str(), (p != NO_PARENT).then_some(p))),
        );
        self.id = if self.morph_names.is_empty() {
            joints
        } else {
            // The channel names continue the joints' hash, after a marker no name contains.
            SkeletonId::of_layout(
                self.names
                    .iter()
                    .zip(self.parents.iter())
                    .map(|(n, &p)| (n.as_str(), (p != NO_PARENT).then_some(p)))
                    .chain(std::iter::once(("\u{0}morph", None)))
                    .chain(self.morph_names.iter().map(|n| (n.as_str(), None))),
            )
        };
        Ok(self)
    }

    /// Number of morph-target weight channels.
    #[inline]
    pub fn morph_channel_count(&self) -> usize {
        self.morph_names.len()
    }

    /// The morph channels' names, in channel order.
    pub fn morph_channel_names(&self) -> &[String] {
        &self.morph_names
    }

    /// The morph channels, in channel order.
    pub fn morph_channels(&self) -> Vec<MorphChannel> {
        self.morph_names
            .iter()
            .zip(self.morph_rest.iter())
            .map(|(n, &r)| MorphChannel {
                name: n.clone(),
                rest: r,
            })
            .collect()
    }

    /// The morph weights where nothing animates them, one per channel (what
    /// [`crate::sample_morph_weights`] writes for channels a clip leaves alone).
    #[inline]
    pub fn morph_rest(&self) -> &[f32] {
        &self.morph_rest
    }

    /// The index of the morph channel named `name`.
    pub fn find_morph_channel(&self, name: &str) -> Option<usize> {
        self.morph_names.iter().position(|n| n == name)
    }

    /// The same skeleton with every length multiplied by `factor` (rest translations and the
    /// root transform's translation), for unit conversion.
    pub fn scaled(&self, factor: f32) -> Skeleton {
        let mut s = self.clone();
        for r in s.rest.iter_mut() {
            r.translation *= factor;
        }
        s.root_transform.w_axis.x *= factor;
        s.root_transform.w_axis.y *= factor;
        s.root_transform.w_axis.z *= factor;
        s
    }

    /// Each joint's rest (bind) pose in model space: its rest transform composed with its
    /// ancestors', root first. Multiply by [`Skeleton::root_transform`] on the left for the
    /// source scene's space. Computed on each call (one matrix product per joint).
    ///
    /// ```
    /// use glam::{Mat4, Vec3};
    /// use skelett::{RawJoint, RawSkeleton, Transform};
    /// let skeleton = RawSkeleton { joints: vec![
    ///     RawJoint { name: "hip".into(), parent: None, rest: Transform::new(Vec3::Y, Default::default(), Vec3::ONE) },
    ///     RawJoint { name: "knee".into(), parent: Some(0), rest: Transform::new(Vec3::X, Default::default(), Vec3::ONE) },
    /// ], ..Default::default() }.build()?;
    /// let model = skeleton.rest_model();
    /// assert_eq!(model[1].w_axis.truncate(), Vec3::new(1.0, 1.0, 0.0));
    /// let inverse = skeleton.inverse_rest_model();
    /// assert!((inverse[1] * model[1]).abs_diff_eq(Mat4::IDENTITY, 1e-6));
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn rest_model(&self) -> Vec<Mat4> {
        let mut model = vec![Mat4::IDENTITY; self.len()];
        // Both slices have the skeleton's length, the only error local_to_model has.
        let _ = crate::local_to_model(self, &self.rest, 0, &mut model);
        model
    }

    /// Each joint's inverse rest (bind) pose in model space: the per-bone inverse world
    /// matrices the Animation Cycle Data article keeps, and the inverse bind matrices of a
    /// skin whose source stores none ([`crate::inverse_bind_matrices`]). A joint whose rest
    /// pose has a zero scale has no inverse; its matrix is then not finite.
    pub fn inverse_rest_model(&self) -> Vec<Mat4> {
        self.rest_model().iter().map(Mat4::inverse).collect()
    }

    /// Depth of joint `j` (roots have depth 0).
    pub fn depth(&self, j: JointIndex) -> usize {
        let mut d = 0;
        let mut k = j;
        while let Some(p) = self.parent(k) {
            d += 1;
            k = p;
        }
        d
    }
}

/// A skeleton of roots named "0", "1", ... with `rest` as rest pose, for building clips whose
/// channels name joints by index ([`crate::Clip::decompressed`]).
pub(crate) fn numbered(rest: &[Transform]) -> Result<Skeleton, Error> {
    let joints = rest
        .iter()
        .enumerate()
        .map(|(j, t)| RawJoint {
            name: j.to_string(),
            parent: None,
            rest: *t,
        })
        .collect();
    RawSkeleton {
        joints,
        ..Default::default()
    }
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn joint(name: &str, parent: Option<usize>) -> RawJoint {
        RawJoint {
            name: name.into(),
            parent,
            rest: Transform::IDENTITY,
        }
    }

    #[test]
    fn sorts_parents_first_stably() {
        let raw = RawSkeleton {
            joints: vec![
                joint("c", Some(2)),
                joint("root", None),
                joint("b", Some(1)),
                joint("d", Some(1)),
            ],
            ..Default::default()
        };
        let s = raw.build().unwrap();
        assert_eq!(s.names(), ["root", "b", "c", "d"]);
        assert_eq!(s.parents(), [NO_PARENT, 0, 1, 0]);
        assert_eq!(
            (0..4).map(|j| s.source_index(j)).collect::<Vec<_>>(),
            [1, 2, 0, 3]
        );
        assert_eq!(s.joint_of_source(), [2, 0, 1, 3]);
        assert_eq!(s.subtree(1), [1, 2]);
        assert_eq!(s.depth(2), 2);
    }

    #[test]
    fn rejects_cycles_naming_the_joints() {
        let raw = RawSkeleton {
            joints: vec![
                joint("root", None),
                joint("a", Some(2)),
                joint("b", Some(1)),
            ],
            ..Default::default()
        };
        match raw.build() {
            Err(Error::JointCycle(names)) => {
                assert!(names.contains(&"a".to_string()) && names.contains(&"b".to_string()));
                assert!(!names.contains(&"root".to_string()));
            }
            other => panic!("expected a cycle error, got {other:?}"),
        }
        let selfloop = RawSkeleton {
            joints: vec![joint("x", Some(0))],
            ..Default::default()
        };
        assert!(matches!(selfloop.build(), Err(Error::JointCycle(_))));
    }

    #[test]
    fn rejects_bad_parents_names_and_rests() {
        let out = RawSkeleton {
            joints: vec![joint("a", Some(5))],
            ..Default::default()
        };
        assert!(matches!(
            out.build(),
            Err(Error::ParentOutOfRange { parent: 5, .. })
        ));
        let dup = RawSkeleton {
            joints: vec![joint("a", None), joint("a", Some(0))],
            ..Default::default()
        };
        assert_eq!(dup.build(), Err(Error::DuplicateJointName("a".into())));
        let mut nan = RawSkeleton {
            joints: vec![joint("a", None)],
            ..Default::default()
        };
        nan.joints[0].rest.translation.x = f32::NAN;
        assert!(matches!(nan.build(), Err(Error::NonFiniteRest(_))));
    }

    proptest! {
        /// Any forest, shuffled, builds into a parent-first order that keeps every edge.
        #[test]
        fn any_shuffled_forest_builds_parent_first(
            parents in proptest::collection::vec(proptest::option::of(0usize..1000), 1..60),
            seed in 0u64..1000,
        ) {
            // Make a forest: joint i's parent is some joint before it.
            let n = parents.len();
            let tree: Vec<Option<usize>> = parents.iter().enumerate()
                .map(|(i, p)| if i == 0 { None } else { p.map(|p| p % i) }).collect();
            // Shuffle it with a simple LCG permutation.
            let mut perm: Vec<usize> = (0..n).collect();
            let mut s = seed;
            for i in (1..n).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                perm.swap(i, (s >> 33) as usize % (i + 1));
            }
            let mut pos = vec![0; n];
            for (new, &old) in perm.iter().enumerate() { pos[old] = new; }
            let mut joints = vec![joint("", None); n];
            for old in 0..n {
                joints[pos[old]] = joint(&format!("j{old}"), tree[old].map(|p| pos[p]));
            }
            let raw = RawSkeleton { joints, ..Default::default() };
            let s = raw.build().unwrap();
            prop_assert_eq!(s.len(), n);
            for j in 0..n as JointIndex {
                if let Some(p) = s.parent(j) {
                    prop_assert!(p < j);
                    let raw_parent = raw.joints[s.source_index(j)].parent.unwrap();
                    prop_assert_eq!(s.source_index(p), raw_parent);
                } else {
                    prop_assert!(raw.joints[s.source_index(j)].parent.is_none());
                }
                prop_assert_eq!(s.find(s.name(j)), Some(j));
            }
        }
    }
}

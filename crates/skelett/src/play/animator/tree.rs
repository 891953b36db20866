//! Blend trees: clips combined by nodes that parameters drive (1D and 2D blend spaces, lerp,
//! additive and layered nodes), played in phase as one source of a layer.
//!
//! A tree is built once from [`TreeNode`]s ([`TreeShape::new`], shared behind an `Arc`) and
//! instantiated per character ([`BlendTree::new`]), which owns the players, the parameter
//! values and the scratch poses, so an update allocates nothing (in blocks, below, the
//! scratch poses are the updating thread's, made the first time it needs as many). Each
//! update:
//!
//! 1. **weights**, top down: every node hands its weight to its children (a blend space by
//!    its [`weights_1d`]/[`weights_2d`], an additive or layered node gives its second child
//!    the node's weight parameter);
//! 2. **advance**: all clips share one normalised phase, moved by `dt` over the tree's cycle
//!    length (the clips' lengths averaged by their weights), so a walk and a run stay in step
//!    (Unity's blend trees do the same); events fire from the heaviest clip only;
//! 3. **sample**, bottom up: clips of zero weight are not sampled; a blend averages its
//!    children (rotations summed on the shortest path and normalised once, like
//!    [`crate::blend`]), an additive node applies its second child as a delta
//!    ([`crate::apply_additive`]), a layered node overrides its first with its second under
//!    a joint mask ([`crate::blend_override`]).
//!
//! Trees of blends (no additive or layered node) whose clips sample into blocks (keyed
//! clips on a CPU with AVX) are evaluated in blocks of eight joints on skeletons of eight
//! joints or more ([`BlendTree::sample_soa`]): the same weights and the same operations
//! as the rows (a property test checks the bits), eight joints per instruction, each child
//! sampled into the scratch pose of its place in the tree. The others, and shorter
//! skeletons, use rows.
//!
//! The graph (`play/graph`) builds one tree per blend state; the animator's layers play
//! them beside clips and 1D blend spaces ([`super::Animator::play_tree`]).

use std::sync::Arc;

use glam::{Vec2, Vec4};

use super::player::Crossing;
use super::{FiredEvent, Player, Wrap};
use crate::play::pose::{lerp_soa, normalise_rotations_soa};
use crate::play::sampling::writes_blocks;
use crate::pose::{apply_additive, blend_override, JointMask};
use crate::{Clip, Error, Pose, SoaPose, Transform};

/// A node weight: a constant or one of the tree's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TreeValue {
    /// A fixed value.
    Const(f32),
    /// The tree parameter at this index ([`BlendTree::set_parameter`]).
    Parameter(usize),
}

/// How a 2D blend space weighs its clips.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Space2D {
    /// Gradient-band interpolation in polar coordinates (Johansen 2009), as Unity's
    /// "freeform directional" and Unreal's directional locomotion: clips at the same angle
    /// and different speeds, or at the same speed and different angles, blend by speed and
    /// by angle. Put an idle at the origin.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "directional"))]
    Directional,
    /// Gradient-band interpolation in cartesian coordinates (Unity's "freeform
    /// cartesian"): for parameters that are not a direction and a speed.
    #[cfg_attr(feature = "serde", serde(rename = "cartesian"))]
    Cartesian,
}

/// One node of a blend tree. Children are indices of *earlier* nodes in the list given to
/// [`TreeShape::new`]; the last node is the root.
#[derive(Clone, Debug)]
pub enum TreeNode {
    /// A clip, played in the tree's phase.
    Clip(Arc<Clip>),
    /// A 1D blend space: children at positions on a line, the parameter picks the two
    /// around it (clamped at the ends).
    Space1D {
        /// The parameter's index.
        parameter: usize,
        /// (position, child), any order; positions distinct.
        children: Vec<(f32, usize)>,
    },
    /// A 2D blend space: children at points of the plane of two parameters.
    Space2D {
        /// The parameters giving x and y.
        x: usize,
        /// See `x`.
        y: usize,
        /// How the weights are found.
        mode: Space2D,
        /// (point, child); points distinct.
        children: Vec<(Vec2, usize)>,
    },
    /// `a` and `b` blended by a weight in 0..=1 (0 is `a`).
    Lerp {
        /// First child.
        a: usize,
        /// Second child.
        b: usize,
        /// The blend, clamped to 0..=1.
        weight: TreeValue,
    },
    /// `add` (an additive delta, [`crate::make_additive`]) applied on top of `base` by a
    /// weight (-1..=1; negative subtracts).
    Additive {
        /// The pose the delta goes on.
        base: usize,
        /// The delta.
        add: usize,
        /// Its weight.
        weight: TreeValue,
    },
    /// `overlay` replaces `base` on the joints of `mask` by a weight in 0..=1 (an upper-body
    /// wave over a walk).
    Layered {
        /// The pose underneath.
        base: usize,
        /// The pose on top.
        overlay: usize,
        /// One weight per joint (none: every joint).
        mask: Option<JointMask>,
        /// Its weight.
        weight: TreeValue,
    },
}

impl TreeNode {
    fn children(&self, out: &mut Vec<usize>) {
        out.clear();
        match self {
            TreeNode::Clip(_) => {}
            TreeNode::Space1D { children, .. } => out.extend(children.iter().map(|c| c.1)),
            TreeNode::Space2D { children, .. } => out.extend(children.iter().map(|c| c.1)),
            TreeNode::Lerp { a, b, .. } => out.extend([*a, *b]),
            TreeNode::Additive { base, add, .. } => out.extend([*base, *add]),
            TreeNode::Layered { base, overlay, .. } => out.extend([*base, *overlay]),
        }
    }
}

/// A checked blend tree, shared by every character that plays it.
#[derive(Clone, Debug)]
pub struct TreeShape {
    nodes: Vec<TreeNode>,
    /// Per node: where its children's weights start in the weight buffer.
    offsets: Vec<usize>,
    /// Per node: its clip's player index, for clip nodes.
    leaf: Vec<Option<usize>>,
    clips: Vec<Arc<Clip>>,
    parameters: usize,
    /// Scratch poses the evaluation needs (the tree's depth).
    depth: usize,
    /// Scratch poses the evaluation in blocks needs (two per level of blends).
    depth_blocks: usize,
    slots: usize,
}

impl TreeShape {
    /// Checks `nodes` (the last one is the root) for a tree of `parameters` parameters.
    ///
    /// # Errors
    /// [`Error::ClipRange`] naming the node: no nodes, a child that is not an earlier node
    /// or is used twice, a node no path from the root reaches, a parameter index out of
    /// range, an empty or non-finite blend space, two children at one point, or a mask of
    /// another length than the clips' skeleton.
    pub fn new(nodes: Vec<TreeNode>, parameters: usize) -> Result<Self, Error> {
        let bad = |i: usize, problem: String| Error::ClipRange {
            clip: format!("blend tree node {i}"),
            problem,
        };
        if nodes.is_empty() {
            return Err(bad(0, "the tree has no nodes".into()));
        }
        let root = nodes.len() - 1;
        let mut used = vec![false; nodes.len()];
        used[root] = true;
        let mut kids = Vec::new();
        let mut offsets = Vec::with_capacity(nodes.len());
        let mut slots = 0;
        let mut leaf = vec![None; nodes.len()];
        let mut clips = Vec::new();
        let joints = nodes.iter().find_map(|n| match n {
            TreeNode::Clip(c) => Some(c.joint_count()),
            _ => None,
        });
        let check_value = |i: usize, v: &TreeValue| match *v {
            TreeValue::Parameter(p) if p >= parameters => Err(bad(
                i,
                format!("parameter {p} is out of range ({parameters} parameters)"),
            )),
            TreeValue::Const(c) if !c.is_finite() => {
                Err(bad(i, format!("weight {c} is not finite")))
            }
            _ => Ok(()),
        };
        for (i, n) in nodes.iter().enumerate() {
            n.children(&mut kids);
            offsets.push(slots);
            slots += kids.len();
            for &k in &kids {
                if k >= i {
                    return Err(bad(i, format!("child {k} is not an earlier node")));
                }
                if std::mem::replace(&mut used[k], true) {
                    return Err(bad(i, format!("child {k} is used twice")));
                }
            }
            match n {
                TreeNode::Clip(c) => {
                    if Some(c.joint_count()) != joints {
                        return Err(bad(i, "clips of different skeletons".into()));
                    }
                    leaf[i] = Some(clips.len());
                    clips.push(c.clone());
                }
                TreeNode::Space1D {
                    parameter,
                    children,
                } => {
                    check_value(i, &TreeValue::Parameter(*parameter))?;
                    if children.is_empty() {
                        return Err(bad(i, "a blend space needs at least one child".into()));
                    }
                    let mut at: Vec<f32> = children.iter().map(|c| c.0).collect();
                    if at.iter().any(|a| !a.is_finite()) {
                        return Err(bad(i, "a position is not finite".into()));
                    }
                    at.sort_by(f32::total_cmp);
                    if at.windows(2).any(|w| w[0] == w[1]) {
                        return Err(bad(i, "two children at one position".into()));
                    }
                }
                TreeNode::Space2D { x, y, children, .. } => {
                    check_value(i, &TreeValue::Parameter(*x))?;
                    check_value(i, &TreeValue::Parameter(*y))?;
                    if children.is_empty() {
                        return Err(bad(i, "a blend space needs at least one child".into()));
                    }
                    for (a, c) in children.iter().enumerate() {
                        if !c.0.is_finite() {
                            return Err(bad(i, format!("point {} is not finite", c.0)));
                        }
                        if children[..a].iter().any(|d| d.0 == c.0) {
                            return Err(bad(i, format!("two children at {}", c.0)));
                        }
                    }
                }
                TreeNode::Lerp { weight, .. } | TreeNode::Additive { weight, .. } => {
                    check_value(i, weight)?
                }
                TreeNode::Layered { mask, weight, .. } => {
                    check_value(i, weight)?;
                    if let (Some(m), Some(j)) = (mask, joints) {
                        if m.weights().len() != j {
                            return Err(bad(
                                i,
                                format!(
                                    "the mask has {} weights for {j} joints",
                                    m.weights().len()
                                ),
                            ));
                        }
                    }
                }
            }
        }
        if let Some(i) = used.iter().position(|u| !u) {
            return Err(bad(i, "no path from the root reaches this node".into()));
        }
        if clips.is_empty() {
            return Err(bad(root, "the tree has no clips".into()));
        }
        // Scratch depth: a node evaluates its first child into its own output and the others
        // into one scratch pose each in turn.
        let mut depth = vec![0usize; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            n.children(&mut kids);
            depth[i] = kids
                .iter()
                .enumerate()
                .map(|(k, &c)| depth[c] + usize::from(k > 0))
                .max()
                .unwrap_or(0);
        }
        // In blocks, a blend of two or more live children takes each child into a scratch
        // pose of the child's own (one per child), so that a clip keeps sampling into the
        // same pose (which keeps its static joints); the children evaluate with the scratch
        // after those.
        let mut depth_blocks = vec![0usize; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            n.children(&mut kids);
            if !kids.is_empty() {
                depth_blocks[i] =
                    kids.len() + kids.iter().map(|&c| depth_blocks[c]).max().unwrap_or(0);
            }
        }
        Ok(Self {
            depth: depth[root],
            depth_blocks: depth_blocks[root],
            nodes,
            offsets,
            leaf,
            clips,
            parameters,
            slots,
        })
    }

    /// The nodes.
    pub fn nodes(&self) -> &[TreeNode] {
        &self.nodes
    }

    /// The clips, in node order.
    pub fn clips(&self) -> &[Arc<Clip>] {
        &self.clips
    }

    /// How many parameters the tree reads.
    pub fn parameter_count(&self) -> usize {
        self.parameters
    }
}

/// One character's instance of a [`TreeShape`]: its players, parameter values, phase and
/// scratch poses. See [`TreeShape`] for the nodes, [`BlendTree::set_parameter`] for the
/// parameters.
///
/// ```
/// use std::sync::Arc;
/// use skelett::*;
/// use skelett::animator::*;
/// # use glam::{Vec2, Vec3};
/// # let skeleton = Arc::new(RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap());
/// # let make = |name: &str, v: Vec3| Arc::new(RawClip { name: name.into(), start: 0.0, duration: 1.0,
/// #     channels: vec![RawChannel { joint: "root".into(), target: Target::Translation,
/// #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
/// #     values: RawValues::Vec3(vec![v, v]) }] }.build(&skeleton).unwrap());
/// // Idle at the origin, walks forward and to the right; parameters 0 and 1 are x and y.
/// let shape = Arc::new(TreeShape::new(vec![
///     TreeNode::Clip(make("idle", Vec3::ZERO)),
///     TreeNode::Clip(make("forward", Vec3::Z)),
///     TreeNode::Clip(make("right", Vec3::X)),
///     TreeNode::Space2D { x: 0, y: 1, mode: Space2D::Directional, children: vec![
///         (Vec2::ZERO, 0), (Vec2::new(0.0, 1.0), 1), (Vec2::new(1.0, 0.0), 2)] },
/// ], 2)?);
/// let mut animator = Animator::new(skeleton);
/// animator.play_tree(0, BlendTree::new(shape), Transition::Immediate, PlayOptions::default())?;
/// animator.set_tree_parameter(0, 1, 1.0)?; // straight forward
/// animator.update(0.1);
/// assert!((animator.pose()[0].translation - Vec3::Z).length() < 1e-6);
/// # Ok::<(), skelett::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct BlendTree {
    shape: Arc<TreeShape>,
    pub(super) players: Vec<Player>,
    params: Vec<f32>,
    /// Per node: its share of the tree's output (the product of the weights above it).
    node_weight: Vec<f32>,
    /// Per node's children (at the node's offset): their local weights.
    child_weight: Vec<f32>,
    /// Unwrapped normalised position (1 per cycle).
    pub(super) phase: f64,
    pub(super) speed: f32,
    pub(super) paused: bool,
    pub(super) wrap: Wrap,
    scratch: Vec<Pose>,
    /// Morph-weight scratch, one per level as `scratch`.
    wscratch: Vec<Vec<f32>>,
    /// Per player: the unwrapped positions before and after the last advance (root motion).
    pub(super) advanced: Vec<(f64, f64)>,
    weights_fresh: bool,
    /// Whether the tree samples into blocks ([`BlendTree::sample_soa`]): blend nodes only
    /// (no additive or layered node) over clips that sample into blocks.
    blocks: bool,
}

impl BlendTree {
    /// Notes the blocks an update of the tree touches, for [`super::Animator::prefetch`]:
    /// the tree, its weights and players, their caches, the first scratch pose.
    pub(super) fn note_blocks(&self, r: &mut crate::play::crowd::Regions) {
        r.push(std::slice::from_ref(self));
        r.push(&self.players);
        r.push(&self.node_weight);
        r.push(&self.child_weight);
        if let Some(p) = self.scratch.first() {
            r.push(p);
        }
        for p in &self.players {
            p.cache.note_blocks(r);
        }
    }

    /// A fresh instance at phase 0, speed 1, looping, parameters 0.
    pub fn new(shape: Arc<TreeShape>) -> Self {
        let joints = shape.clips[0].joint_count();
        let n = shape.nodes.len();
        Self {
            players: shape.clips.iter().map(|c| Player::new(c.clone())).collect(),
            params: vec![0.0; shape.parameters],
            node_weight: vec![0.0; n],
            child_weight: vec![0.0; shape.slots],
            phase: 0.0,
            speed: 1.0,
            paused: false,
            wrap: Wrap::Loop,
            scratch: vec![Pose(vec![Transform::IDENTITY; joints]); shape.depth],
            wscratch: vec![vec![0.0; shape.clips[0].morph_channel_count()]; shape.depth],
            advanced: vec![(0.0, 0.0); shape.clips.len()],
            weights_fresh: false,
            blocks: shape
                .nodes
                .iter()
                .all(|n| !matches!(n, TreeNode::Additive { .. } | TreeNode::Layered { .. }))
                && shape.clips.iter().all(|c| writes_blocks(c)),
            shape,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &Arc<TreeShape> {
        &self.shape
    }

    /// Sets parameter `index` (non-finite values read as 0; out of range: ignored).
    pub fn set_parameter(&mut self, index: usize, value: f32) {
        if let Some(p) = self.params.get_mut(index) {
            *p = if value.is_finite() { value } else { 0.0 };
            self.weights_fresh = false;
        }
    }

    /// Sets the speed (non-finite: 0).
    pub(crate) fn set_speed(&mut self, speed: f32) {
        self.speed = if speed.is_finite() { speed } else { 0.0 };
    }

    /// Sets the first parameters from `values` (the graph passes all of its own).
    pub(crate) fn set_parameters(&mut self, values: &[f32]) {
        let n = self.params.len().min(values.len());
        self.params[..n].copy_from_slice(&values[..n]);
        self.weights_fresh = false;
    }

    /// The parameter values.
    pub fn parameters(&self) -> &[f32] {
        &self.params
    }

    /// The players with their shares of the output (after the last update's weights).
    pub fn players(&self) -> impl Iterator<Item = (&Player, f32)> {
        self.shape
            .leaf
            .iter()
            .enumerate()
            .filter_map(|(n, l)| l.map(|p| (&self.players[p], self.node_weight[n])))
    }

    /// The unwrapped normalised position (grows by 1 per cycle; capped at 1 when playing
    /// once).
    pub fn normalized_position(&self) -> f64 {
        if self.wrap == Wrap::Once {
            self.phase.clamp(0.0, 1.0)
        } else {
            self.phase
        }
    }

    /// Back to phase `start` (normalised), speed 1, not paused; players reset.
    pub(crate) fn restart(&mut self, start: f64, speed: f32, wrap: Wrap) {
        self.phase = start;
        self.speed = speed;
        self.wrap = wrap;
        self.paused = false;
        for p in &mut self.players {
            p.wrap = wrap;
            p.speed = speed;
            p.paused = false;
            p.cache.invalidate();
            p.set_fresh(start * p.clip.duration() as f64);
        }
        self.weights_fresh = false;
    }

    /// Computes every node's weight from the parameters, top down.
    pub(super) fn update_weights(&mut self) {
        if self.weights_fresh {
            return;
        }
        let shape = &*self.shape;
        let root = shape.nodes.len() - 1;
        self.node_weight.fill(0.0);
        self.node_weight[root] = 1.0;
        let param = |v: TreeValue| match v {
            TreeValue::Const(c) => c,
            TreeValue::Parameter(p) => self.params[p],
        };
        for i in (0..=root).rev() {
            let w = self.node_weight[i];
            let o = shape.offsets[i];
            match &shape.nodes[i] {
                TreeNode::Clip(_) => {}
                TreeNode::Space1D {
                    parameter,
                    children,
                } => {
                    let out = &mut self.child_weight[o..o + children.len()];
                    weights_1d(children.iter().map(|c| c.0), self.params[*parameter], out);
                    for (c, cw) in children.iter().zip(out.iter()) {
                        self.node_weight[c.1] = w * cw;
                    }
                }
                TreeNode::Space2D {
                    x,
                    y,
                    mode,
                    children,
                } => {
                    let out = &mut self.child_weight[o..o + children.len()];
                    let p = Vec2::new(self.params[*x], self.params[*y]);
                    weights_2d(children.iter().map(|c| c.0), p, *mode, out);
                    for (c, cw) in children.iter().zip(out.iter()) {
                        self.node_weight[c.1] = w * cw;
                    }
                }
                TreeNode::Lerp { a, b, weight } => {
                    let t = clamp01(param(*weight));
                    self.child_weight[o] = 1.0 - t;
                    self.child_weight[o + 1] = t;
                    self.node_weight[*a] = w * (1.0 - t);
                    self.node_weight[*b] = w * t;
                }
                TreeNode::Additive { base, add, weight } => {
                    let t = param(*weight);
                    let t = if t.is_finite() {
                        t.clamp(-1.0, 1.0)
                    } else {
                        0.0
                    };
                    self.child_weight[o] = 1.0;
                    self.child_weight[o + 1] = t;
                    self.node_weight[*base] = w;
                    self.node_weight[*add] = w * t.abs();
                }
                TreeNode::Layered {
                    base,
                    overlay,
                    weight,
                    ..
                } => {
                    let t = clamp01(param(*weight));
                    self.child_weight[o] = 1.0;
                    self.child_weight[o + 1] = t;
                    self.node_weight[*base] = w;
                    self.node_weight[*overlay] = w * t;
                }
            }
        }
        self.weights_fresh = true;
    }

    /// The cycle length in seconds: the clips' lengths averaged by their weights.
    fn cycle(&self) -> f64 {
        let (mut sum, mut wsum) = (0.0f64, 0.0f64);
        for (n, l) in self.shape.leaf.iter().enumerate() {
            if let Some(p) = l {
                let w = self.node_weight[n] as f64;
                sum += w * self.players[*p].clip.duration() as f64;
                wsum += w;
            }
        }
        if wsum > 0.0 {
            sum / wsum
        } else {
            self.players[0].clip.duration() as f64
        }
    }

    /// The player with the largest share (the first of equals): it fires the events.
    pub(super) fn heaviest(&self) -> usize {
        let mut best = (0, -1.0f32);
        for (n, l) in self.shape.leaf.iter().enumerate() {
            if let Some(p) = l {
                if self.node_weight[n] > best.1 {
                    best = (*p, self.node_weight[n]);
                }
            }
        }
        best.0
    }

    /// The normalised step `dt` seconds make at the tree's own speed.
    pub(super) fn own_step(&mut self, dt: f32) -> f64 {
        self.update_weights();
        let cycle = self.cycle();
        if self.paused || cycle <= 0.0 {
            0.0
        } else {
            dt as f64 * self.speed as f64 / cycle
        }
    }

    /// Moves the phase by `delta` (normalised) and every player with it; the heaviest
    /// player's crossings become events (when `fires`). Returns the phases before and after.
    pub(super) fn advance(
        &mut self,
        delta: f64,
        (fires, notify): (bool, bool),
        crossings: &mut Vec<Crossing>,
        events: &mut Vec<FiredEvent>,
        layer: usize,
        weight: f32,
    ) -> (f64, f64) {
        self.update_weights();
        let a = self.phase;
        let mut b = a + if delta.is_finite() { delta } else { 0.0 };
        if self.wrap == Wrap::Once {
            b = b.clamp(0.0, 1.0);
        }
        self.phase = b;
        let heaviest = self.heaviest();
        for (i, p) in self.players.iter_mut().enumerate() {
            let d = p.clip.duration() as f64;
            let step = b * d - p.position();
            crossings.clear();
            let fire = fires && i == heaviest;
            let r = p.advance(step, fire.then_some(&mut *crossings), notify);
            self.advanced[i] = r;
            if fire {
                let span = (r.1 - r.0).abs();
                for c in crossings.iter() {
                    events.push(FiredEvent {
                        layer,
                        clip: p.clip.clone(),
                        index: c.event,
                        kind: c.kind,
                        at: if span > 0.0 {
                            (c.distance / span).clamp(0.0, 1.0) as f32
                        } else {
                            0.0
                        },
                        backward: c.backward,
                        weight,
                    });
                }
            }
        }
        (a, b)
    }

    /// Samples the tree into `out` (one transform per joint).
    pub(super) fn sample(&mut self, out: &mut [Transform]) {
        self.update_weights();
        let root = self.shape.nodes.len() - 1;
        let tree = Fold {
            shape: &self.shape,
            child_weight: &self.child_weight,
        };
        tree.eval_rows(&mut self.players, root, out, &mut self.scratch);
    }

    /// Whether [`BlendTree::sample_soa`] can sample the tree: its nodes are clips and blends
    /// (1D and 2D spaces, lerps) and its clips sample into blocks (keyed clips on a CPU with
    /// AVX). Trees with additive or layered nodes sample as rows.
    pub(super) fn samples_blocks(&self) -> bool {
        self.blocks
    }

    /// Scratch poses [`BlendTree::sample_soa`] needs (one per child of each blend on the
    /// way down).
    pub(super) fn depth_blocks(&self) -> usize {
        self.shape.depth_blocks
    }

    /// [`BlendTree::sample`] into blocks, for a tree that [`BlendTree::samples_blocks`]: the
    /// same bits (the clips sampled into blocks, folded by [`crate::play::pose::lerp_soa`]
    /// and normalised by [`crate::play::pose::normalise_rotations_soa`], the row formulas
    /// eight joints at a time). `scratch` holds [`BlendTree::depth_blocks`] poses of the
    /// clips' joints.
    pub(super) fn sample_soa(&mut self, out: &mut SoaPose, scratch: &mut [SoaPose]) {
        self.update_weights();
        let root = self.shape.nodes.len() - 1;
        let tree = Fold {
            shape: &self.shape,
            child_weight: &self.child_weight,
        };
        tree.eval(&mut self.players, root, out, scratch);
    }

    /// Samples the tree's morph weights into `out`, weighted as [`BlendTree::sample`] weighs
    /// the joints (call it after that, which updates the weights).
    pub(super) fn sample_weights(&mut self, out: &mut [f32]) {
        let root = self.shape.nodes.len() - 1;
        let mut scratch = std::mem::take(&mut self.wscratch);
        self.eval_weights(root, out, &mut scratch);
        self.wscratch = scratch;
    }

    fn eval_weights(&self, node: usize, out: &mut [f32], scratch: &mut [Vec<f32>]) {
        let shape = &self.shape;
        let o = shape.offsets[node];
        let blend = |children: &mut dyn Iterator<Item = usize>,
                     out: &mut [f32],
                     scratch: &mut [Vec<f32>]| {
            let mut total = 0.0f32;
            for (k, c) in children.enumerate() {
                let w = self.child_weight[o + k];
                if w <= 0.0 {
                    continue;
                }
                if total == 0.0 {
                    self.eval_weights(c, out, scratch);
                    total = w;
                    continue;
                }
                let Some((buf, rest)) = scratch.split_first_mut() else {
                    return;
                };
                self.eval_weights(c, buf, rest);
                total += w;
                super::morph::lerp(out, buf, w / total);
            }
        };
        match &shape.nodes[node] {
            TreeNode::Clip(_) => {
                if let Some(p) = shape.leaf[node] {
                    self.players[p].sample_weights(out);
                }
            }
            TreeNode::Space1D { children, .. } => {
                blend(&mut children.iter().map(|c| c.1), out, scratch)
            }
            TreeNode::Space2D { children, .. } => {
                blend(&mut children.iter().map(|c| c.1), out, scratch)
            }
            TreeNode::Lerp { a, b, .. } => blend(&mut [*a, *b].into_iter(), out, scratch),
            TreeNode::Additive { base, add, .. }
            | TreeNode::Layered {
                base, overlay: add, ..
            } => {
                self.eval_weights(*base, out, scratch);
                let w = self.child_weight[o + 1];
                if w == 0.0 {
                    return;
                }
                let Some((buf, rest)) = scratch.split_first_mut() else {
                    return;
                };
                self.eval_weights(*add, buf, rest);
                match &shape.nodes[node] {
                    TreeNode::Layered { mask, .. } => {
                        let m = mask.as_ref().map(|m| m.morph_weights());
                        for (c, (a, &b)) in out.iter_mut().zip(buf.iter()).enumerate() {
                            let k = m.map_or(1.0, |m| m.get(c).copied().unwrap_or(0.0)) * w;
                            *a += (b - *a) * k;
                        }
                    }
                    _ => {
                        for (a, &b) in out.iter_mut().zip(buf.iter()) {
                            *a += b * w;
                        }
                    }
                }
            }
        }
    }
}

/// The children of non-zero weight (`weights` holds the node's children's weights, in
/// order): each child's position among them, the child, and what it is folded in at:
/// `None` for the first, then `w / total` of the weights so far (a running weighted
/// average). The rows and the blocks fold alike.
fn folds<'a>(
    weights: &'a [f32],
    children: impl Iterator<Item = usize> + 'a,
) -> impl Iterator<Item = (usize, usize, Option<f32>)> + 'a {
    let mut total = 0.0f32;
    children.enumerate().filter_map(move |(k, c)| {
        let w = weights[k];
        if w <= 0.0 {
            return None;
        }
        let first = total == 0.0;
        total += w;
        Some((k, c, (!first).then_some(w / total)))
    })
}

/// A tree's shape and weights, to evaluate it ([`BlendTree::sample`] as rows,
/// [`BlendTree::sample_soa`] in blocks) while its players are written.
struct Fold<'a> {
    shape: &'a TreeShape,
    child_weight: &'a [f32],
}

impl Fold<'_> {
    /// The tree's output at `node` into `out` (rows), with `scratch` for the children
    /// after each blend's first.
    fn eval_rows(
        &self,
        players: &mut [Player],
        node: usize,
        out: &mut [Transform],
        scratch: &mut [Pose],
    ) {
        let o = self.shape.offsets[node];
        match &self.shape.nodes[node] {
            TreeNode::Clip(_) => {
                if let Some(p) = self.shape.leaf[node] {
                    players[p].sample(out);
                }
            }
            TreeNode::Space1D { children, .. } => {
                self.blend_rows(players, children.iter().map(|c| c.1), o, out, scratch)
            }
            TreeNode::Space2D { children, .. } => {
                self.blend_rows(players, children.iter().map(|c| c.1), o, out, scratch)
            }
            TreeNode::Lerp { a, b, .. } => {
                self.blend_rows(players, [*a, *b].into_iter(), o, out, scratch)
            }
            TreeNode::Additive { base, add, .. }
            | TreeNode::Layered {
                base, overlay: add, ..
            } => {
                self.eval_rows(players, *base, out, scratch);
                let w = self.child_weight[o + 1];
                if w == 0.0 {
                    return;
                }
                let Some((buf, rest)) = scratch.split_first_mut() else {
                    return;
                };
                self.eval_rows(players, *add, buf, rest);
                let _ = match &self.shape.nodes[node] {
                    TreeNode::Layered { mask, .. } => {
                        blend_override(out, buf, w, mask.as_ref().map(|m| m.weights()))
                    }
                    _ => apply_additive(out, buf, w, None),
                };
            }
        }
    }

    /// A weighted average of children: the first of non-zero weight into `out`, each next
    /// into scratch and folded in; rotations summed on the shortest path, normalised once.
    fn blend_rows(
        &self,
        players: &mut [Player],
        children: impl Iterator<Item = usize>,
        offset: usize,
        out: &mut [Transform],
        scratch: &mut [Pose],
    ) {
        let mut count = 0;
        for (_, c, t) in folds(&self.child_weight[offset..], children) {
            count += 1;
            let Some(t) = t else {
                self.eval_rows(players, c, out, scratch);
                continue;
            };
            let Some((buf, rest)) = scratch.split_first_mut() else {
                return;
            };
            self.eval_rows(players, c, buf, rest);
            for (a, b) in out.iter_mut().zip(buf.iter()) {
                a.translation = a.translation.lerp(b.translation, t);
                a.scale = a.scale.lerp(b.scale, t);
                let (qa, mut qb) = (Vec4::from(a.rotation), Vec4::from(b.rotation));
                if qa.dot(qb) < 0.0 {
                    qb = -qb;
                }
                a.rotation = glam::Quat::from_vec4(qa.lerp(qb, t));
            }
        }
        if count > 1 {
            for a in out.iter_mut() {
                let v = Vec4::from(a.rotation);
                a.rotation = glam::Quat::from_vec4(v * v.length_recip());
            }
        }
    }

    /// [`Fold::eval_rows`] in blocks. Additive and layered nodes are not evaluated here
    /// ([`BlendTree::samples_blocks`] is false for trees with them): they leave `out` as is.
    fn eval(
        &self,
        players: &mut [Player],
        node: usize,
        out: &mut SoaPose,
        scratch: &mut [SoaPose],
    ) {
        let o = self.shape.offsets[node];
        match &self.shape.nodes[node] {
            TreeNode::Clip(_) => {
                if let Some(p) = self.shape.leaf[node] {
                    players[p].sample_soa(out);
                }
            }
            TreeNode::Space1D { children, .. } => {
                self.blend(players, children.iter().map(|c| c.1), o, out, scratch)
            }
            TreeNode::Space2D { children, .. } => {
                self.blend(players, children.iter().map(|c| c.1), o, out, scratch)
            }
            TreeNode::Lerp { a, b, .. } => {
                self.blend(players, [*a, *b].into_iter(), o, out, scratch)
            }
            TreeNode::Additive { .. } | TreeNode::Layered { .. } => {
                debug_assert!(false, "trees with additive or layered nodes sample as rows")
            }
        }
    }

    /// [`Fold::blend_rows`] in blocks, with the same weights and operations: a single
    /// child of non-zero weight straight into `out`; else each live child into the scratch
    /// pose of its position among the node's children, folded into `out` ([`lerp_soa`], the
    /// first fold from the first live child's pose), normalised once. A clip thus samples
    /// into the same pose update after update while the weights keep it live (and that pose
    /// keeps its static joints), unless another blend on the thread takes the pose between.
    fn blend(
        &self,
        players: &mut [Player],
        children: impl Iterator<Item = usize> + Clone,
        offset: usize,
        out: &mut SoaPose,
        scratch: &mut [SoaPose],
    ) {
        let weights = &self.child_weight[offset..];
        let mut live = folds(weights, children.clone());
        if let (Some((_, only, _)), None) = (live.next(), live.next()) {
            return self.eval(players, only, out, scratch);
        }
        let n = children.clone().count();
        if scratch.len() < n {
            return;
        }
        let (own, rest) = scratch.split_at_mut(n);
        let mut first = None;
        for (k, c, t) in folds(weights, children) {
            self.eval(players, c, &mut own[k], rest);
            match t {
                None => first = Some(k),
                Some(t) => {
                    let from = first.take().map(|f| &own[f]);
                    lerp_soa::<false>(out, from, &own[k], t);
                }
            }
        }
        normalise_rotations_soa(out);
    }
}

fn clamp01(v: f32) -> f32 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, 1.0)
    }
}

/// Weights of a 1D blend space at `p`: the two positions around `p` share 1 linearly, the
/// others get 0; beyond the ends the nearest end gets 1. `positions` may come in any order
/// (distinct); `out` gets one weight per position.
///
/// ```
/// use skelett::animator::weights_1d;
/// let mut w = [0.0; 3];
/// weights_1d([0.0, 1.0, 3.0].into_iter(), 2.0, &mut w);
/// assert_eq!(w, [0.0, 0.5, 0.5]);
/// ```
pub fn weights_1d(positions: impl Iterator<Item = f32> + Clone, p: f32, out: &mut [f32]) {
    out.fill(0.0);
    let p = if p.is_finite() { p } else { 0.0 };
    // The nearest position at or below p, and the nearest above; the ends. Each is
    // (index, position).
    type At = Option<(usize, f32)>;
    let (mut lo, mut hi, mut min, mut max): (At, At, At, At) = (None, None, None, None);
    for (i, x) in positions.enumerate().take(out.len()) {
        if x <= p && lo.is_none_or(|l| x > l.1) {
            lo = Some((i, x));
        }
        if x > p && hi.is_none_or(|h| x < h.1) {
            hi = Some((i, x));
        }
        if min.is_none_or(|m| x < m.1) {
            min = Some((i, x));
        }
        if max.is_none_or(|m| x > m.1) {
            max = Some((i, x));
        }
    }
    match (lo, hi) {
        (Some((a, xa)), Some((b, xb))) => {
            let t = ((p - xa) / (xb - xa)).clamp(0.0, 1.0);
            out[a] = 1.0 - t;
            out[b] += t;
        }
        (Some(_), None) => {
            if let Some((i, _)) = max {
                out[i] = 1.0;
            }
        }
        (None, _) => {
            if let Some((i, _)) = min {
                out[i] = 1.0;
            }
        }
    }
}

/// Weights of a 2D blend space at `p` by gradient-band interpolation (Johansen 2009): each
/// point's influence is the least, over the other points, of how far `p` is from passing
/// the other point on the line between them (cartesian), or on a line in (speed, angle) space
/// ([`Space2D::Directional`]); the influences are normalised to sum to 1.
///
/// The weights are non-negative, sum to 1, are exactly one-hot at each point, and change
/// continuously with `p` (property-tested in `tests/graph.rs`).
///
/// ```
/// use glam::Vec2;
/// use skelett::animator::{weights_2d, Space2D};
/// let points = [Vec2::ZERO, Vec2::new(0.0, 1.0), Vec2::new(1.0, 0.0), Vec2::new(-1.0, 0.0)];
/// let mut w = [0.0; 4];
/// weights_2d(points.into_iter(), Vec2::new(0.0, 1.0), Space2D::Directional, &mut w);
/// assert_eq!(w, [0.0, 1.0, 0.0, 0.0]);
/// weights_2d(points.into_iter(), Vec2::new(0.0, 0.5), Space2D::Directional, &mut w);
/// assert!((w[0] - 0.5).abs() < 1e-6 && (w[1] - 0.5).abs() < 1e-6);
/// ```
pub fn weights_2d(
    points: impl Iterator<Item = Vec2> + Clone,
    p: Vec2,
    mode: Space2D,
    out: &mut [f32],
) {
    let p = if p.is_finite() { p } else { Vec2::ZERO };
    let n = out.len();
    let mut sum = 0.0f32;
    for (i, pi) in points.clone().enumerate().take(n) {
        let mut h = f32::INFINITY;
        for (j, pj) in points.clone().enumerate().take(n) {
            if i == j {
                continue;
            }
            let (ip, ij) = match mode {
                Space2D::Cartesian => (p - pi, pj - pi),
                Space2D::Directional => polar_pair(pi, pj, p),
            };
            let len2 = ij.length_squared();
            if len2 > 0.0 {
                h = h.min(1.0 - ip.dot(ij) / len2);
            }
        }
        let h = if h.is_finite() { h.max(0.0) } else { 1.0 };
        out[i] = h;
        sum += h;
    }
    if sum > 0.0 {
        out.iter_mut().for_each(|w| *w /= sum);
    } else {
        // Unreachable for distinct points (the nearest point always has at least 1/2), kept
        // so that degenerate input still gives weights summing to 1.
        out.fill(0.0);
        if let Some((i, _)) = points.enumerate().take(n).min_by(|a, b| {
            (a.1 - p)
                .length_squared()
                .total_cmp(&(b.1 - p).length_squared())
        }) {
            out[i] = 1.0;
        }
    }
}

/// The angle scale of the polar gradient band: one radian counts as much as a change of
/// speed by the pair's mean speed times this.
const ANGLE_WEIGHT: f32 = 2.0;

/// The (from `pi` to `p`, from `pi` to `pj`) vectors in polar gradient-band space: x the
/// change of magnitude over the pair's mean magnitude, y the signed angle times
/// [`ANGLE_WEIGHT`]. A point at the origin has no direction: pairs with it blend by
/// magnitude only.
fn polar_pair(pi: Vec2, pj: Vec2, p: Vec2) -> (Vec2, Vec2) {
    let (ri, rj, r) = (pi.length(), pj.length(), p.length());
    let mean = 0.5 * (ri + rj);
    let mean = if mean > 0.0 { mean } else { 1.0 };
    const TINY: f32 = 1e-6;
    if ri <= TINY || rj <= TINY {
        return (
            Vec2::new((r - ri) / mean, 0.0),
            Vec2::new((rj - ri) / mean, 0.0),
        );
    }
    let angle = |a: Vec2, b: Vec2| a.perp_dot(b).atan2(a.dot(b));
    let aij = angle(pi, pj);
    let aip = if r <= TINY { 0.0 } else { angle(pi, p) };
    (
        Vec2::new((r - ri) / mean, aip * ANGLE_WEIGHT),
        Vec2::new((rj - ri) / mean, aij * ANGLE_WEIGHT),
    )
}

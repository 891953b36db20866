//! The animator: per-character playback state driving sampling and blending every frame.
//!
//! ```text
//!                 ┌ layer 0 (override, weight, mask) ─ slots: player / blend space, fading ┐
//! update(dt) ──▶  ├ layer 1 (additive, weight, mask) ─ ...                                  ├─▶ pose
//!   fades, queue, └ ...                                                                     ┘   (local)
//!   sync groups,     each slot: advance ─▶ events;  sample ─▶ blend slots ─▶ (inertial offset)
//!   events,          layers combined over the rest pose: override / additive, with masks
//!   root motion   ──▶ UpdateResult { events, root_motion }
//!   modifiers     ──▶ pose bent by IK (two-bone, aim, chains, feet), model matrices
//! ```
//!
//! A layer holds *slots*: a [`Player`] or a [`BlendSpace1D`], each with a weight that may be
//! fading. [`Animator::crossfade`] fades every slot of the layer out from its current weight
//! and a new one in, so a transition interrupted by another continues from where it was,
//! without a pop (past [`MAX_SLOTS`] the faintest slot is dropped: the pose moves by its
//! share). Slots whose weights sum to less than 1 (a cross-fade onto an empty layer) make
//! the layer count for that much less: it is blended over what is below it (the rest pose
//! for the first layer) by that sum. [`Animator::inertialize`] instead switches at once and decays the pose
//! difference ([`inertial`]). Players in the same sync group advance by normalised time,
//! following the heaviest one, so a walk and a run keep their feet in phase.
//!
//! [`Animator::update`] runs the stages in this order, one file each:
//!
//! | stage | file |
//! |---|---|
//! | the vocabulary: modes, curves, options, transitions, events, results | `options.rs` |
//! | starting clips (`play_with` behind `play`, `crossfade`, `inertialize`), stop, pause, speed, seek | `control.rs` |
//! | layers, slots and their fades | `layer.rs` |
//! | advancing players, sync groups, events | `advance.rs` (one player: `player.rs`) |
//! | queued clips | `queue.rs` |
//! | root motion | `root_motion.rs` |
//! | sampling, blending and combining layers | `evaluate.rs` (inertial offsets: `inertial.rs`) |
//! | 1D blend spaces | `blend_space.rs` |
//! | blend trees: 1D and 2D blend spaces, lerp, additive and layered nodes | `tree.rs` |
//! | pose modifiers (IK) after blending, with fading weights | `modifiers.rs` |
//! | the blocks an update touches, for [`Animator::prefetch`] in crowds | `prefetch.rs` |
//! | the pose left in blocks of eight joints where one layer makes it | `blocks.rs` |
//!
//! The animator writes a local pose ([`Animator::pose`]); the caller runs
//! [`Animator::local_to_model`] (or [`crate::local_to_model`] on the pose) and
//! [`crate::skinning_palette`]. Where one layer of clips, blend spaces or trees of blends
//! makes the whole pose and the caller does not read it as rows, the update leaves it in
//! blocks ([`Animator::pose_soa`]), which [`Animator::local_to_model`] reads as they are
//! (`blocks.rs`). Clips and the skeleton stay shared behind `Arc`; after the layers are set
//! up, an update allocates nothing (event and scratch buffers are reused), except a
//! thread's first update of a skeleton larger than any it has updated before, or of a blend
//! space or tree needing more scratch poses than before (the slot blocks and scratch poses
//! it shares between its animators, see `layer::SlotPoses` and `evaluate.rs`, are made or
//! grown then, once), and a lean animator's first update on a path that needs rows
//! ([`Animator::new_lean`]).
//!
//! ```
//! use std::sync::Arc;
//! use skelett::*;
//! use skelett::animator::*;
//! # use glam::{Mat4, Vec3};
//! # let skeleton = Arc::new(RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
//! #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap());
//! # let make = |name: &str, x: f32| Arc::new(RawClip { name: name.into(), start: 0.0, duration: 1.0,
//! #     channels: vec![RawChannel { joint: "root".into(), target: Target::Translation,
//! #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
//! #     values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::X * x]) }] }.build(&skeleton).unwrap()
//! #     .with_events(vec![ClipEvent { time: 0.5, name: "step".into(), payload: None }]).unwrap());
//! let (walk, run) = (make("walk", 1.0), make("run", 2.0));
//! let mut animator = Animator::new(skeleton.clone());
//! animator.play(0, walk, PlayOptions::default())?;
//! let r = animator.update(0.6);
//! assert_eq!(r.events.len(), 1);
//! assert_eq!(r.events[0].name(), "step");
//! animator.crossfade(0, run, 0.2, Curve::SmoothStep, PlayOptions::default())?;
//! animator.update(0.1);
//! let x = animator.pose()[0].translation.x; // between walk's and run's
//! # assert!(x > 0.0);
//! # Ok::<(), skelett::Error>(())
//! ```

mod advance;
mod blend_space;
mod blocks;
mod control;
mod evaluate;
pub mod inertial;
mod layer;
mod modifiers;
mod morph;
mod options;
mod player;
mod prefetch;
mod queue;
mod root_motion;
mod tree;

#[cfg(test)]
mod test_rig {
    use std::sync::Arc;

    use glam::{Quat, Vec3};

    use crate::{
        Clip, Interpolation, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues, Skeleton,
        Target, Transform,
    };

    /// Every float of `t`, as bits (for comparisons that must be exact).
    pub(super) fn bits(t: &[Transform]) -> Vec<u32> {
        t.iter()
            .flat_map(|t| {
                t.translation
                    .to_array()
                    .into_iter()
                    .chain(t.rotation.to_array())
                    .chain(t.scale.to_array())
            })
            .map(f32::to_bits)
            .collect()
    }

    /// A chain of `n` joints, and two clips turning and moving them differently.
    pub(super) fn rig(n: usize) -> (Arc<Skeleton>, [Arc<Clip>; 2]) {
        let skeleton = chain(n);
        let clips = [
            turning(&skeleton, "a", 0.7, &[]),
            turning(&skeleton, "b", -0.5, &[]),
        ];
        (skeleton, clips)
    }

    /// A clip turning every joint of `skeleton` (a chain of [`chain`]) by angles from `a`,
    /// moving `j2`, and moving and scaling the joints `full` names too.
    pub(super) fn turning(skeleton: &Skeleton, name: &str, a: f32, full: &[usize]) -> Arc<Clip> {
        let n = skeleton.len();
        let mut channels: Vec<RawChannel> = (0..n)
            .map(|i| RawChannel {
                joint: format!("j{i}"),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                times: vec![0.0, 0.4, 1.0],
                values: RawValues::Quat(vec![
                    Quat::IDENTITY,
                    Quat::from_rotation_z(a + 0.1 * i as f32),
                    Quat::from_rotation_x(-a),
                ]),
            })
            .collect();
        channels.push(RawChannel {
            joint: "j2".into(),
            target: Target::Translation,
            interpolation: Interpolation::Linear,
            times: vec![0.0, 1.0],
            values: RawValues::Vec3(vec![Vec3::Y, Vec3::new(a, 1.0, 0.0)]),
        });
        for &i in full {
            if i != 2 {
                channels.push(RawChannel {
                    joint: format!("j{i}"),
                    target: Target::Translation,
                    interpolation: Interpolation::Linear,
                    times: vec![0.0, 0.7],
                    values: RawValues::Vec3(vec![Vec3::Y, Vec3::new(0.0, 1.0, a * i as f32)]),
                });
            }
            channels.push(RawChannel {
                joint: format!("j{i}"),
                target: Target::Scale,
                interpolation: Interpolation::Linear,
                times: vec![0.0, 0.5, 1.0],
                values: RawValues::Vec3(vec![Vec3::ONE, Vec3::splat(1.0 + a * 0.2), Vec3::ONE]),
            });
        }
        let raw = RawClip {
            name: name.into(),
            start: 0.0,
            duration: 1.0,
            channels,
        };
        Arc::new(raw.build(skeleton).unwrap())
    }

    /// A chain of `n` joints `j0..`, each one up from its parent.
    pub(super) fn chain(n: usize) -> Arc<Skeleton> {
        Arc::new(
            RawSkeleton {
                joints: (0..n)
                    .map(|i| RawJoint {
                        name: format!("j{i}"),
                        parent: i.checked_sub(1),
                        rest: Transform::new(Vec3::Y, Quat::IDENTITY, Vec3::ONE),
                    })
                    .collect(),
                ..Default::default()
            }
            .build()
            .unwrap(),
        )
    }
}

use std::sync::Arc;

use glam::{Mat4, Vec3};

pub use blend_space::BlendSpace1D;
pub use layer::MAX_SLOTS;
pub use modifiers::{ChainSolver, Modifier, SharedGround};
pub use options::{
    BlendMode, Curve, EventKind, EventPolicy, FiredEvent, PlayOptions, RootMotion,
    RootMotionConfig, Transition, UpdateResult, When,
};
pub use player::{Player, Wrap, MAX_EVENTS_PER_UPDATE};
pub use tree::{weights_1d, weights_2d, BlendTree, Space2D, TreeNode, TreeShape, TreeValue};

use self::blocks::{Held, LazyRows};
use self::inertial::Inertial;
use self::layer::SlotPoses;
pub(crate) use self::layer::Source;
use self::layer::{layer_weight, Layer};
use self::morph::LayerMorph;
use self::player::Crossing;
use crate::pose::JointMask;
use crate::{Error, Pose, Skeleton, SoaPose, Transform};

/// The animator's own rows of the pose: `pose`, or the skeleton's rest pose where a lean
/// animator has not made them (nothing wrote them yet, so they would be the rest pose).
fn own_rows<'a>(pose: &'a Pose, skeleton: &'a Skeleton) -> &'a [Transform] {
    if pose.len() == skeleton.len() {
        pose
    } else {
        skeleton.rest_pose()
    }
}

/// `pose` to write, made first (the rest pose) where a lean animator has not made it.
fn own_rows_mut<'a>(pose: &'a mut Pose, rest: &[Transform]) -> &'a mut [Transform] {
    if pose.len() != rest.len() {
        pose.0 = rest.to_vec();
    }
    pose
}

/// The last update's pose: where `held` says ([`Animator::pose`]; a function of the
/// fields, so that it can be read while another field is written).
#[inline(always)]
fn held_pose<'a>(
    layers: &'a [Layer],
    pose: &'a [Transform],
    held: Held,
    lazy: &'a LazyRows,
) -> &'a [Transform] {
    match held {
        Held::Output(layer, output) => &layers[layer].outputs[output],
        Held::Blocks(layer) => lazy.get(layers[layer].newest_blocks()),
        Held::Own => pose,
    }
}

/// Per-character animation state: layers of players, transitions, sync groups, events and
/// root motion. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Animator {
    skeleton: Arc<Skeleton>,
    layers: Vec<Layer>,
    /// The pose of the last update, unless [`Animator::held`] names a layer output that
    /// holds it.
    pose: Pose,
    /// Where the last update's pose is when it is not in `pose`: the rows output (layer,
    /// output) of a first layer that covered everything (override, full weight, no mask)
    /// with nothing blended, stripped or modified after it, or that layer's blocks
    /// ([`blocks`]). Its output then is the pose, and the update does not copy it (a pose's
    /// worth of memory written and read less per character and frame: 3-6 % of a
    /// character's update). Anything about to change that output or the layers' order, or
    /// to write `pose`, copies it first ([`Animator::own_pose`]).
    held: Held,
    /// Rows written from the blocks when [`Animator::pose`] is asked for them.
    lazy: LazyRows,
    identity: Vec<Transform>,
    events: Vec<FiredEvent>,
    crossings: Vec<Crossing>,
    /// This update's sync group leaders (reused; `advance.rs`).
    leaders: Vec<advance::Leader>,
    /// The events of the last update were handed out; the next call that adds any clears
    /// them first.
    events_stale: bool,
    policy: EventPolicy,
    root: Option<RootMotionConfig>,
    /// Pose modifiers (IK) after blending, with their fading weights.
    modifiers: Vec<modifiers::Slot>,
    /// Model matrices of the pose, kept for the modifiers.
    model: Vec<Mat4>,
    /// Morph weights of the last update, one per skeleton morph channel.
    morph: Vec<f32>,
    /// Playback notifications (loops, ends, finished transitions) join the events.
    notify: bool,
    /// Transitions finished in this update's fades (reused).
    finished: Vec<(f32, Arc<crate::Clip>)>,
    /// Zero morph weights: additive layers' neutral.
    morph_zero: Vec<f32>,
    /// The blocks the next update will touch, for [`Animator::prefetch`].
    hot: prefetch::Hot,
    /// Made by [`Animator::new_lean`]: buffers for paths in rows are made when first needed.
    lean: bool,
}

impl Animator {
    /// An animator with one override layer of weight 1 and nothing playing (rest pose).
    ///
    /// The buffers an update's paths need are made now (rows of poses for layers that
    /// blend onto others, masks, fades from nothing, inertial transitions and readers of
    /// [`Animator::pose`]; model matrices for modifiers; room for 64 events per update), so
    /// that an update takes those paths without allocating (a clone's event, inertial and
    /// sync-leader buffers start empty, and grow once). [`Animator::new_lean`] makes them when first
    /// needed instead.
    pub fn new(skeleton: Arc<Skeleton>) -> Self {
        Self::with_buffers(skeleton, false)
    }

    /// An animator as [`Animator::new`] makes it, but with the buffers of the paths an
    /// update in blocks does not take (see [`Animator::pose_soa`]) made the first time
    /// something needs them: rows of poses for the layers' outputs and scratch (an update
    /// taking a path in rows), the rows [`Animator::pose`] writes from blocks (its first
    /// call), the animator's own rows of the pose (where layers blend, root motion or
    /// modifiers write it), the identity pose of additive layers, model matrices
    /// ([`Animator::add_modifier`], [`Animator::update_model`]), an inertial transition's
    /// offsets, the event buffers (grown to the most events an update or a seek has fired),
    /// the list of sync group leaders, a layer's third and fourth slots and its queue. An update or a play may therefore
    /// allocate the first time it takes such a path; after that it allocates no more than
    /// [`Animator::new`]'s.
    ///
    /// For crowds of characters that play clips in blocks: an animator of CesiumMan's 19
    /// joints playing a cross-fade then holds 3.4 KB of heap instead of 20.8,
    /// robot_quaternius's 43 5.3 KB instead of 36.4, and a crowd's update streams through
    /// less memory between its characters' blocks (measured in the README's "Speed"). The
    /// poses and events are the same bits either way.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skelett::{*, animator::*};
    /// # let skeleton = Arc::new(RawSkeleton { joints: (0..10).map(|i| RawJoint { name: format!("j{i}"),
    /// #     parent: (i > 0).then(|| i - 1), rest: Transform::IDENTITY }).collect(), ..Default::default() }.build().unwrap());
    /// # let clip = Arc::new(RawClip { name: "walk".into(), start: 0.0, duration: 1.0,
    /// #     channels: vec![RawChannel { joint: "j3".into(), target: Target::Translation,
    /// #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
    /// #     values: RawValues::Vec3(vec![glam::Vec3::ZERO, glam::Vec3::X]) }] }.build(&skeleton).unwrap());
    /// let mut crowd: Vec<Animator> = (0..100).map(|_| Animator::new_lean(skeleton.clone())).collect();
    /// let mut full = Animator::new(skeleton.clone());
    /// for a in crowd.iter_mut().chain([&mut full]) {
    ///     a.play(0, clip.clone(), PlayOptions::default())?;
    ///     a.update(0.25);
    /// }
    /// assert_eq!(crowd[7].pose(), full.pose());
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn new_lean(skeleton: Arc<Skeleton>) -> Self {
        Self::with_buffers(skeleton, true)
    }

    /// [`Animator::new`], or with `lean` [`Animator::new_lean`].
    fn with_buffers(skeleton: Arc<Skeleton>, lean: bool) -> Self {
        let n = skeleton.len();
        let full = if lean { 0 } else { n };
        let events = if lean { 0 } else { 64 };
        let skeleton_morph_rest: Vec<f32> = skeleton.morph_rest().to_vec();
        let mut a = Self {
            // A lean animator's rows are made where something first writes them
            // (`own_rows_mut`); until then the rest pose stands in (`own_rows`).
            pose: if lean {
                Pose(Vec::new())
            } else {
                Pose::rest(&skeleton)
            },
            held: Held::Own,
            lazy: LazyRows::new(full),
            identity: vec![Transform::IDENTITY; full],
            skeleton,
            layers: Vec::new(),
            events: Vec::with_capacity(events),
            crossings: Vec::with_capacity(events),
            leaders: Vec::with_capacity(if lean { 0 } else { advance::MAX_GROUPS }),
            events_stale: false,
            policy: EventPolicy::default(),
            root: None,
            modifiers: Vec::new(),
            model: vec![Mat4::IDENTITY; full],
            morph_zero: vec![0.0; skeleton_morph_rest.len()],
            morph: skeleton_morph_rest,
            notify: false,
            finished: Vec::with_capacity(if lean { 0 } else { 8 }),
            hot: Default::default(),
            lean,
        };
        // A layer without a mask always fits the skeleton.
        let _ = a.add_layer(BlendMode::Override, 1.0, None);
        a
    }

    /// The skeleton.
    pub fn skeleton(&self) -> &Arc<Skeleton> {
        &self.skeleton
    }

    /// Adds a layer on top of the others and returns its index.
    ///
    /// # Errors
    /// [`Error::Length`] if the mask does not have one weight per joint.
    pub fn add_layer(
        &mut self,
        mode: BlendMode,
        weight: f32,
        mask: Option<JointMask>,
    ) -> Result<usize, Error> {
        self.check_mask(mask.as_ref())?;
        let rest = Pose::rest(&self.skeleton);
        // A lean animator's layer makes its rows when first needed (`Layer::ensure_rows`),
        // but on skeletons too short for blocks, which always take rows.
        let rows = if self.lean && rest.len() >= crate::SOA_LANES {
            Pose(Vec::new())
        } else {
            rest.clone()
        };
        // A lean animator's inertial offsets grow at its first inertial transition, its
        // slots past a cross-fade's two at the first play that needs a third, its queue at
        // the first clip queued: memory that no update reads would otherwise lie between
        // the blocks a crowd's update touches.
        let (joints, channels, slots, queue) = if self.lean {
            (0, 0, 2, 0)
        } else {
            let n = self.skeleton.len();
            (n, self.skeleton.morph_channel_count(), MAX_SLOTS, 4)
        };
        if self.lean {
            // One layer's room at a time (a push would make room for four: 2 KB on
            // CesiumMan, three quarters of it never read).
            self.layers.reserve_exact(1);
        }
        self.layers.push(Layer {
            weight: layer_weight(mode, weight),
            mode,
            mask,
            slots: Vec::with_capacity(slots),
            spare: Vec::new(),
            queue: Vec::with_capacity(queue),
            slot_poses: SlotPoses::new(&rest),
            scratch: [rows.clone(), rows.clone()],
            soa: (rest.len() >= crate::SOA_LANES).then(|| {
                let soa = SoaPose::from_transforms(&rest);
                Box::new([soa.clone(), soa])
            }),
            soa_cur: 0,
            in_blocks: 0,
            outputs: [rows.clone(), rows.clone(), rows],
            cur: 0,
            last_dt: 0.0,
            inertial: Inertial::with_capacity(joints, channels),
            morph: LayerMorph::new(self.skeleton.morph_rest()),
            inertial_pending: None,
            produced: false,
            enabled: true,
        });
        Ok(self.layers.len() - 1)
    }

    /// A mask must have one weight per joint.
    fn check_mask(&self, mask: Option<&JointMask>) -> Result<(), Error> {
        match mask {
            Some(m) if m.weights().len() != self.skeleton.len() => Err(Error::Length {
                what: "layer mask",
                expected: self.skeleton.len(),
                got: m.weights().len(),
            }),
            _ => Ok(()),
        }
    }

    /// Number of layers.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    fn layer(&mut self, layer: usize) -> Result<&mut Layer, Error> {
        let layers = self.layers.len();
        self.layers
            .get_mut(layer)
            .ok_or(Error::NoSuchLayer { layer, layers })
    }

    /// Removes a layer: what it played, its queue and its state go with it, and the layers
    /// above it move down one index. Removing every layer leaves the rest pose.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skelett::{*, animator::*};
    /// # let skeleton = Arc::new(RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap());
    /// let mut animator = Animator::new(skeleton);
    /// let wave = animator.add_layer(BlendMode::Additive, 1.0, None)?;
    /// let look = animator.add_layer(BlendMode::Override, 0.5, None)?;
    /// animator.remove_layer(wave)?;
    /// assert_eq!(animator.layer_count(), 2); // `look` is layer 1 now
    /// assert!(animator.remove_layer(look).is_err());
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`] if there is no such layer (nothing changes then).
    pub fn remove_layer(&mut self, layer: usize) -> Result<(), Error> {
        self.layer(layer)?;
        self.own_pose();
        self.layers.remove(layer);
        Ok(())
    }

    /// Enables or disables a layer without losing its state (DirectX's track enable): a
    /// disabled layer's players keep their times, fades, sync groups and queued clips, but
    /// do not advance, fire events, give root motion or contribute to the pose; enabled
    /// again, it goes on from where it stopped.
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`] if there is no such layer.
    pub fn set_layer_enabled(&mut self, layer: usize, enabled: bool) -> Result<(), Error> {
        self.layer(layer)?.enabled = enabled;
        Ok(())
    }

    /// Whether a layer is enabled (`None`: no such layer).
    pub fn layer_enabled(&self, layer: usize) -> Option<bool> {
        self.layers.get(layer).map(|l| l.enabled)
    }

    /// Sets a layer's weight: 0..=1 for override layers; -1..=1 for additive ones, where a
    /// negative weight subtracts the layer's delta.
    pub fn set_layer_weight(&mut self, layer: usize, weight: f32) -> Result<(), Error> {
        let l = self.layer(layer)?;
        l.weight = layer_weight(l.mode, weight);
        Ok(())
    }

    /// Sets or clears a layer's joint mask.
    pub fn set_layer_mask(&mut self, layer: usize, mask: Option<JointMask>) -> Result<(), Error> {
        self.check_mask(mask.as_ref())?;
        self.layer(layer)?.mask = mask;
        Ok(())
    }

    /// Which events updates report.
    pub fn set_event_policy(&mut self, policy: EventPolicy) {
        self.policy = policy;
    }

    /// Turns playback notifications on or off (off by default): with them, updates also
    /// report, in the same stream and order as clip events and exactly once each, a looping
    /// player passing its seam ([`EventKind::Looped`]; a ping-pong's every turn), a player
    /// that plays once reaching its end ([`EventKind::Ended`]), and a cross-fade or inertial
    /// transition finishing ([`EventKind::TransitionFinished`]): the Animation Cycle Data
    /// article's "passed its end" and DirectX's end callbacks. Loops and ends follow the
    /// [`EventPolicy`] as clip events do (the sync leader, players weighted enough).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skelett::{*, animator::*};
    /// # use glam::Vec3;
    /// # let skeleton = Arc::new(RawSkeleton { joints: vec![RawJoint { name: "root".into(), parent: None,
    /// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap());
    /// # let clip = Arc::new(RawClip { name: "walk".into(), start: 0.0, duration: 1.0,
    /// #     channels: vec![RawChannel { joint: "root".into(), target: Target::Translation,
    /// #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
    /// #     values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::X]) }] }.build(&skeleton).unwrap());
    /// let mut animator = Animator::new(skeleton);
    /// animator.set_notifications(true);
    /// animator.play(0, clip, PlayOptions::default())?;
    /// let r = animator.update(2.5); // two and a half loops of a 1 s clip
    /// let names: Vec<&str> = r.events.iter().map(|e| e.name()).collect();
    /// assert_eq!(names, ["looped", "looped"]);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn set_notifications(&mut self, on: bool) {
        self.notify = on;
    }

    /// Takes the root's horizontal motion and yaw out of the pose and reports them per update
    /// (from layer 0's players, by their weights); `None` leaves the pose as sampled.
    ///
    /// # Errors
    /// [`Error::Length`] if the joint is not in the skeleton (nothing changes then).
    pub fn set_root_motion(&mut self, config: Option<RootMotionConfig>) -> Result<(), Error> {
        if let Some(c) = &config {
            crate::error::check_len(
                "skeleton (root motion joint)",
                c.joint as usize + 1,
                self.skeleton.len(),
            )?;
        }
        self.root = config.map(|c| RootMotionConfig {
            up: c.up.normalize_or(Vec3::Y),
            forward: (c.forward - c.up * c.forward.dot(c.up)).normalize_or(Vec3::Z),
            ..c
        });
        Ok(())
    }

    /// The players of `layer` with their current weights (blend spaces' players weighted by
    /// the space's blend times the slot's weight). A blend space's two clips are blended with
    /// each other first (lerp and nlerp), and that pose with the layer's other slots: where a
    /// space shares its layer, the pose is not the blend of these players' samples.
    pub fn players(&self, layer: usize) -> Vec<(&Player, f32)> {
        let Some(l) = self.layers.get(layer) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for s in &l.slots {
            match &s.source {
                Source::Clip(p) => out.push((p, s.weight)),
                Source::Space(b) => out.extend(b.players().map(|(p, w)| (p, w * s.weight))),
                Source::Tree(t) => out.extend(t.players().map(|(p, w)| (p, w * s.weight))),
            }
        }
        out
    }

    /// The pose of the last update (local transforms).
    ///
    /// Where the update left the pose in blocks ([`Animator::pose_soa`]), the first call
    /// after it writes rows from them (the same bits; a buffer the animator keeps, so no
    /// allocation after a lean animator's first call), and calling it makes the next update
    /// make rows itself, as a caller that reads rows every frame wants. A caller that needs model matrices is faster with
    /// [`Animator::local_to_model`], which reads the pose where it is.
    pub fn pose(&self) -> &[Transform] {
        self.lazy.note_read();
        let own = own_rows(&self.pose, &self.skeleton);
        held_pose(&self.layers, own, self.held, &self.lazy)
    }

    /// Copies the pose into `pose` where a layer output holds it ([`Animator::held`]),
    /// before that output or the layers' order changes, or `pose` is written.
    pub(super) fn own_pose(&mut self) {
        let pose = own_rows_mut(&mut self.pose, self.skeleton.rest_pose());
        match std::mem::replace(&mut self.held, Held::Own) {
            Held::Output(layer, output) => {
                pose.copy_from_slice(&self.layers[layer].outputs[output]);
            }
            Held::Blocks(layer) => {
                let _ = self.layers[layer].newest_blocks().write_to(pose);
            }
            Held::Own => {}
        }
    }

    /// The morph weights of the last update, one per morph channel of the skeleton
    /// ([`Skeleton::morph_channel_names`]): the clips' weight tracks sampled, blended and
    /// layered as the joints are (cross-fades, blend spaces and trees, inertial transitions,
    /// override and additive layers with the masks' morph weights). Pass them to
    /// [`crate::morph::morph`]. Empty for a skeleton without morph channels.
    pub fn morph_weights(&self) -> &[f32] {
        &self.morph
    }

    /// Advances every layer by `dt` seconds and computes the new pose; returns the events
    /// crossed (in the order they were crossed) and the root motion.
    pub fn update(&mut self, dt: f32) -> UpdateResult<'_> {
        let dt = if dt.is_finite() { dt.max(0.0) } else { 0.0 };
        if std::mem::replace(&mut self.events_stale, true) {
            self.events.clear();
        }
        // Events of seeks with fire_events since the last update stay at the front.
        let seeded = self.events.len();
        let mut root = RootMotion::default();
        for (li, l) in self.layers.iter_mut().enumerate() {
            if !l.enabled {
                continue;
            }
            self.finished.clear();
            l.fade(dt, &mut self.finished);
            if self.notify {
                for (at, clip) in self.finished.drain(..) {
                    self.events.push(FiredEvent {
                        layer: li,
                        clip,
                        index: usize::MAX,
                        kind: EventKind::TransitionFinished,
                        at,
                        backward: false,
                        weight: l.weight,
                    });
                }
            }
        }
        self.advance(dt);
        self.events[seeded..].sort_by(|a, b| a.at.total_cmp(&b.at));
        self.run_queues();
        if let Some(cfg) = self.root {
            root = self.root_motion(&cfg);
        }
        self.evaluate(dt);
        if let Some(cfg) = self.root {
            self.own_pose();
            root_motion::strip_root(&mut self.pose[cfg.joint as usize], &cfg);
        }
        self.run_modifiers(dt);
        self.note_hot();
        UpdateResult {
            events: &self.events,
            root_motion: root,
        }
    }
}

//! The animator: per-character playback state driving sampling and blending every frame.
//!
//! ```text
//!                 ┌ layer 0 (override, weight, mask) ─ slots: player / blend space, fading ┐
//! update(dt) ──▶  ├ layer 1 (additive, weight, mask) ─ ...                                  ├─▶ pose
//!   fades, queue, └ ...                                                                     ┘   (local)
//!   sync groups,     each slot: advance ─▶ events;  sample ─▶ blend slots ─▶ (inertial offset)
//!   events,          layers combined over the rest pose: override / additive, with masks
//!   root motion   ──▶ UpdateResult { events, root_motion }
//! ```
//!
//! A layer holds *slots*: a [`Player`] or a [`BlendSpace1D`], each with a weight that may be
//! fading. [`Animator::crossfade`] fades every slot of the layer out from its current weight
//! and a new one in, so a transition interrupted by another continues from where it was,
//! without a pop. [`Animator::inertialize`] instead switches at once and decays the pose
//! difference ([`inertial`]). Players in the same sync group advance by normalised time,
//! following the heaviest one, so a walk and a run keep their feet in phase.
//!
//! The animator writes a local pose ([`Animator::pose`]); the caller runs
//! [`crate::local_to_model`] and [`crate::skinning_palette`]. Clips and the skeleton stay
//! shared behind `Arc`; after the layers are set up, an update allocates nothing (event and
//! scratch buffers are reused).
//!
//! ```
//! use std::sync::Arc;
//! use skelett::*;
//! use skelett::animator::*;
//! # use glam::Vec3;
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

pub mod inertial;
mod player;

use std::sync::Arc;

use glam::{Quat, Vec3};

pub use player::{Player, Wrap, MAX_EVENTS_PER_UPDATE};

use self::inertial::Inertial;
use self::player::Crossing;
use crate::pose::{apply_additive, blend, blend_override, BlendInput, JointMask};
use crate::{sample_joint, Clip, Error, JointIndex, Pose, Skeleton, Transform};

/// How a layer combines with the layers below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlendMode {
    /// Replaces what is below on the joints of its mask, by its weight.
    #[default]
    Override,
    /// Adds its pose (an additive delta, see [`crate::make_additive`]) on top, by its weight.
    Additive,
}

/// The shape of a weight fade over a transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Curve {
    /// Constant rate.
    Linear,
    /// Slow at both ends (3x² - 2x³).
    #[default]
    SmoothStep,
    /// Slow start (x²).
    EaseIn,
    /// Slow end (1 - (1-x)²).
    EaseOut,
}

impl Curve {
    /// The curve at `x` in 0..=1.
    pub fn at(self, x: f32) -> f32 {
        let x = x.clamp(0.0, 1.0);
        match self {
            Curve::Linear => x,
            Curve::SmoothStep => x * x * (3.0 - 2.0 * x),
            Curve::EaseIn => x * x,
            Curve::EaseOut => 1.0 - (1.0 - x) * (1.0 - x),
        }
    }
}

/// How a clip starts playing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayOptions {
    /// Playback speed; negative plays backwards.
    pub speed: f32,
    /// What happens at the clip's ends.
    pub wrap: Wrap,
    /// Players in the same group advance by normalised time, following the heaviest one;
    /// a player joining a group takes the group's current phase. An animator keeps up to 8
    /// groups in sync per update; players of further groups advance on their own.
    pub sync_group: Option<u32>,
    /// Where to start, as a fraction of the clip (ignored when joining a running group).
    pub start: f32,
}

impl Default for PlayOptions {
    fn default() -> Self {
        Self {
            speed: 1.0,
            wrap: Wrap::Loop,
            sync_group: None,
            start: 0.0,
        }
    }
}

/// When a queued clip starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    /// When the layer's current clip reaches its end (the end of a loop cycle, or the end of
    /// a one-shot clip).
    End,
    /// When the layer's current clip reaches this local time (seconds from its first frame).
    At(f32),
}

/// How a queued clip takes over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Transition {
    /// At once.
    Immediate,
    /// A cross-fade of this many seconds.
    Crossfade(f32, Curve),
    /// An inertial transition of this many seconds.
    Inertial(f32),
}

/// Which events an update reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventPolicy {
    /// Events fire only from players whose effective weight (layer weight times slot weight)
    /// is at least this.
    pub min_weight: f32,
    /// In a sync group only the leader (the heaviest player) fires.
    pub sync_leader_only: bool,
}

impl Default for EventPolicy {
    fn default() -> Self {
        Self {
            min_weight: 0.5,
            sync_leader_only: true,
        }
    }
}

/// An event crossed during an update.
#[derive(Clone, Debug)]
pub struct FiredEvent {
    /// The layer it came from.
    pub layer: usize,
    /// The clip it belongs to.
    pub clip: Arc<Clip>,
    /// Its index in [`Clip::events`].
    pub index: usize,
    /// How far into the update it was crossed, 0..=1 (events are sorted by it).
    pub at: f32,
    /// `true` when crossed while playing backwards.
    pub backward: bool,
    /// The effective weight of the player that fired it.
    pub weight: f32,
}

impl FiredEvent {
    /// The event's name.
    pub fn name(&self) -> &str {
        &self.clip.events()[self.index].name
    }

    /// The event's time in its clip's time base.
    pub fn time(&self) -> f32 {
        self.clip.events()[self.index].time
    }

    /// The event's payload.
    pub fn payload(&self) -> Option<&str> {
        self.clip.events()[self.index].payload.as_deref()
    }
}

/// Root motion settings: which joint carries the character's motion and which way is up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RootMotionConfig {
    /// The joint whose horizontal translation and yaw are taken out of the pose.
    pub joint: JointIndex,
    /// The up axis (unit vector) of the skeleton's model space.
    pub up: Vec3,
    /// The forward axis (unit, perpendicular to `up`) yaw is measured from.
    pub forward: Vec3,
}

impl Default for RootMotionConfig {
    fn default() -> Self {
        Self {
            joint: 0,
            up: Vec3::Y,
            forward: Vec3::Z,
        }
    }
}

/// The root's motion during one update, taken out of the pose.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RootMotion {
    /// Horizontal translation, in the character's frame at the start of the update.
    pub translation: Vec3,
    /// Rotation about the up axis, radians.
    pub yaw: f32,
}

/// What an update produced.
#[derive(Debug)]
pub struct UpdateResult<'a> {
    /// Events crossed, in the order they were crossed.
    pub events: &'a [FiredEvent],
    /// The root's motion (zero without [`Animator::set_root_motion`]).
    pub root_motion: RootMotion,
}

/// A one-dimensional blend space: clips placed on a line (walk, jog and run at their
/// speeds), blended by a parameter and played in sync by normalised time.
#[derive(Clone, Debug)]
pub struct BlendSpace1D {
    entries: Vec<(f32, Player)>,
    parameter: f32,
}

impl BlendSpace1D {
    /// Places each clip at its position (sorted by position; at least one clip).
    pub fn new(mut clips: Vec<(f32, Arc<Clip>)>) -> Self {
        clips.sort_by(|a, b| a.0.total_cmp(&b.0));
        let parameter = clips.first().map_or(0.0, |c| c.0);
        Self {
            entries: clips
                .into_iter()
                .map(|(p, c)| (p, Player::new(c)))
                .collect(),
            parameter,
        }
    }

    /// The parameter (clamped to the clips' positions when blending).
    pub fn parameter(&self) -> f32 {
        self.parameter
    }

    /// The two entries around the parameter and the weight of the second.
    fn bracket(&self) -> (usize, usize, f32) {
        let n = self.entries.len();
        if n <= 1 {
            return (0, 0, 0.0);
        }
        let p = self.parameter;
        let i = self.entries.partition_point(|e| e.0 <= p);
        if i == 0 {
            return (0, 0, 0.0);
        }
        if i == n {
            return (n - 1, n - 1, 0.0);
        }
        let (a, b) = (self.entries[i - 1].0, self.entries[i].0);
        let w = if b > a { (p - a) / (b - a) } else { 0.0 };
        (i - 1, i, w.clamp(0.0, 1.0))
    }

    /// The players and their weights.
    pub fn players(&self) -> impl Iterator<Item = (&Player, f32)> {
        let (a, b, w) = self.bracket();
        self.entries.iter().enumerate().map(move |(i, (_, p))| {
            let wi = if a == b {
                if i == a {
                    1.0
                } else {
                    0.0
                }
            } else if i == a {
                1.0 - w
            } else if i == b {
                w
            } else {
                0.0
            };
            (p, wi)
        })
    }
}

/// What a slot plays.
#[derive(Clone, Debug)]
enum Source {
    Clip(Player),
    Space(BlendSpace1D),
}

#[derive(Clone, Copy, Debug)]
struct Fade {
    from: f32,
    to: f32,
    duration: f32,
    elapsed: f32,
    curve: Curve,
}

#[derive(Clone, Debug)]
struct Slot {
    source: Source,
    weight: f32,
    fade: Option<Fade>,
    sync: Option<u32>,
    /// Unwrapped positions before and after this update's advance (per blend-space entry
    /// for spaces: the first entry's).
    advanced: (f64, f64),
}

#[derive(Clone, Debug)]
struct Queued {
    clip: Arc<Clip>,
    when: When,
    transition: Transition,
    options: PlayOptions,
}

/// The most slots a layer keeps; a transition that needs one more drops the faintest.
pub const MAX_SLOTS: usize = 4;

#[derive(Clone, Debug)]
struct Layer {
    weight: f32,
    mode: BlendMode,
    mask: Option<JointMask>,
    slots: Vec<Slot>,
    queue: Vec<Queued>,
    /// One pose per slot, and one more for blend spaces' second clip.
    buffers: Vec<Pose>,
    /// The layer's last three outputs, rotated instead of copied: `outputs[cur]` is the
    /// newest (inertial transitions need the two before the switch).
    outputs: [Pose; 3],
    cur: usize,
    last_dt: f32,
    inertial: Inertial,
    inertial_pending: Option<f32>,
    /// The layer had something playing at the last update (its outputs are current).
    produced: bool,
}

/// Per-character animation state: layers of players, transitions, sync groups, events and
/// root motion. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Animator {
    skeleton: Arc<Skeleton>,
    layers: Vec<Layer>,
    pose: Pose,
    identity: Vec<Transform>,
    events: Vec<FiredEvent>,
    crossings: Vec<Crossing>,
    /// The events of the last update were handed out; the next call that adds any clears
    /// them first.
    events_stale: bool,
    policy: EventPolicy,
    root: Option<RootMotionConfig>,
}

fn check_clip(skeleton: &Skeleton, clip: &Clip) -> Result<(), Error> {
    if clip.joint_count() != skeleton.len() {
        return Err(Error::SkeletonMismatch {
            clip: clip.joint_count(),
            skeleton: skeleton.len(),
        });
    }
    Ok(())
}

impl Animator {
    /// An animator with one override layer of weight 1 and nothing playing (rest pose).
    pub fn new(skeleton: Arc<Skeleton>) -> Self {
        let n = skeleton.len();
        let mut a = Self {
            pose: Pose::rest(&skeleton),
            identity: vec![Transform::IDENTITY; n],
            skeleton,
            layers: Vec::new(),
            events: Vec::with_capacity(64),
            crossings: Vec::with_capacity(64),
            events_stale: false,
            policy: EventPolicy::default(),
            root: None,
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
        if let Some(m) = &mask {
            if m.weights().len() != self.skeleton.len() {
                return Err(Error::Length {
                    what: "layer mask",
                    expected: self.skeleton.len(),
                    got: m.weights().len(),
                });
            }
        }
        let rest = Pose::rest(&self.skeleton);
        self.layers.push(Layer {
            weight: layer_weight(mode, weight),
            mode,
            mask,
            slots: Vec::with_capacity(MAX_SLOTS),
            queue: Vec::with_capacity(4),
            buffers: vec![rest.clone(); MAX_SLOTS + 1],
            outputs: [rest.clone(), rest.clone(), rest],
            cur: 0,
            last_dt: 0.0,
            inertial: Inertial::with_capacity(self.skeleton.len()),
            inertial_pending: None,
            produced: false,
        });
        Ok(self.layers.len() - 1)
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

    /// Sets a layer's weight: 0..=1 for override layers; -1..=1 for additive ones, where a
    /// negative weight subtracts the layer's delta.
    pub fn set_layer_weight(&mut self, layer: usize, weight: f32) -> Result<(), Error> {
        let l = self.layer(layer)?;
        l.weight = layer_weight(l.mode, weight);
        Ok(())
    }

    /// Sets or clears a layer's joint mask.
    pub fn set_layer_mask(&mut self, layer: usize, mask: Option<JointMask>) -> Result<(), Error> {
        if let Some(m) = &mask {
            if m.weights().len() != self.skeleton.len() {
                return Err(Error::Length {
                    what: "layer mask",
                    expected: self.skeleton.len(),
                    got: m.weights().len(),
                });
            }
        }
        self.layer(layer)?.mask = mask;
        Ok(())
    }

    /// Which events updates report.
    pub fn set_event_policy(&mut self, policy: EventPolicy) {
        self.policy = policy;
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

    fn new_player(&self, clip: Arc<Clip>, options: &PlayOptions) -> Player {
        let mut p = Player::new(clip);
        p.speed = if options.speed.is_finite() {
            options.speed
        } else {
            1.0
        };
        p.wrap = options.wrap;
        // Join a running sync group at its leader's (normalised, unwrapped) position;
        // otherwise start where asked.
        match options.sync_group.and_then(|g| self.group_position(g)) {
            Some(pos) => p.set_position(pos * p.clip.duration() as f64),
            None => p.seek_normalized(options.start.clamp(0.0, 1.0)),
        }
        p
    }

    /// The normalised unwrapped position of a sync group's leader.
    fn group_position(&self, group: u32) -> Option<f64> {
        let mut best: Option<(f32, f64)> = None;
        for l in &self.layers {
            for s in &l.slots {
                if s.sync != Some(group) {
                    continue;
                }
                if let Source::Clip(p) = &s.source {
                    let w = l.weight * s.weight;
                    let d = p.clip.duration() as f64;
                    if d > 0.0 && best.is_none_or(|b| w > b.0) {
                        best = Some((w, p.position() / d));
                    }
                }
            }
        }
        best.map(|b| b.1)
    }

    fn start(
        &mut self,
        layer: usize,
        source: Source,
        sync: Option<u32>,
        transition: Transition,
    ) -> Result<(), Error> {
        let l = self.layer(layer)?;
        match transition {
            Transition::Immediate => {
                l.slots.clear();
                l.slots.push(Slot {
                    source,
                    weight: 1.0,
                    fade: None,
                    sync,
                    advanced: (0.0, 0.0),
                });
                l.inertial.duration = 0.0;
            }
            Transition::Crossfade(duration, curve) => {
                let duration = if duration.is_finite() {
                    duration.max(0.0)
                } else {
                    0.0
                };
                for s in &mut l.slots {
                    s.fade = Some(Fade {
                        from: s.weight,
                        to: 0.0,
                        duration,
                        elapsed: 0.0,
                        curve,
                    });
                }
                if l.slots.len() >= MAX_SLOTS {
                    // Drop the faintest slot to make room.
                    if let Some(i) = (0..l.slots.len())
                        .min_by(|&a, &b| l.slots[a].weight.total_cmp(&l.slots[b].weight))
                    {
                        l.slots.remove(i);
                    }
                }
                l.slots.push(Slot {
                    source,
                    weight: if duration > 0.0 { 0.0 } else { 1.0 },
                    fade: (duration > 0.0).then_some(Fade {
                        from: 0.0,
                        to: 1.0,
                        duration,
                        elapsed: 0.0,
                        curve,
                    }),
                    sync,
                    advanced: (0.0, 0.0),
                });
                if duration == 0.0 {
                    l.slots.retain(|s| s.fade.is_none());
                }
            }
            Transition::Inertial(duration) => {
                l.slots.clear();
                l.slots.push(Slot {
                    source,
                    weight: 1.0,
                    fade: None,
                    sync,
                    advanced: (0.0, 0.0),
                });
                l.inertial_pending = Some(if duration.is_finite() {
                    duration.max(0.0)
                } else {
                    0.0
                });
            }
        }
        Ok(())
    }

    /// Plays `clip` on `layer` at once, replacing what was playing there.
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], or [`Error::SkeletonMismatch`] for a clip of another skeleton.
    pub fn play(
        &mut self,
        layer: usize,
        clip: Arc<Clip>,
        options: PlayOptions,
    ) -> Result<(), Error> {
        check_clip(&self.skeleton, &clip)?;
        let p = self.new_player(clip, &options);
        self.start(
            layer,
            Source::Clip(p),
            options.sync_group,
            Transition::Immediate,
        )
    }

    /// Cross-fades `layer` to `clip` over `duration` seconds: everything playing there fades
    /// out from its current weight while the clip fades in.
    ///
    /// # Errors
    /// As [`Animator::play`].
    pub fn crossfade(
        &mut self,
        layer: usize,
        clip: Arc<Clip>,
        duration: f32,
        curve: Curve,
        options: PlayOptions,
    ) -> Result<(), Error> {
        check_clip(&self.skeleton, &clip)?;
        let p = self.new_player(clip, &options);
        self.start(
            layer,
            Source::Clip(p),
            options.sync_group,
            Transition::Crossfade(duration, curve),
        )
    }

    /// Switches `layer` to `clip` at once and decays the pose difference over `duration`
    /// seconds (inertialization): only the new clip is sampled.
    ///
    /// # Errors
    /// As [`Animator::play`].
    pub fn inertialize(
        &mut self,
        layer: usize,
        clip: Arc<Clip>,
        duration: f32,
        options: PlayOptions,
    ) -> Result<(), Error> {
        check_clip(&self.skeleton, &clip)?;
        let p = self.new_player(clip, &options);
        self.start(
            layer,
            Source::Clip(p),
            options.sync_group,
            Transition::Inertial(duration),
        )
    }

    /// Plays a blend space on `layer`, with the given transition.
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], [`Error::SkeletonMismatch`], or [`Error::ClipRange`] for a
    /// space without clips.
    pub fn play_blend_space(
        &mut self,
        layer: usize,
        space: BlendSpace1D,
        transition: Transition,
    ) -> Result<(), Error> {
        if space.entries.is_empty() {
            return Err(Error::ClipRange {
                clip: "blend space".into(),
                problem: "has no clips".into(),
            });
        }
        for (_, p) in &space.entries {
            check_clip(&self.skeleton, &p.clip)?;
        }
        self.start(layer, Source::Space(space), None, transition)
    }

    /// Sets the parameter of the blend space playing on `layer` (the newest one).
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], or [`Error::NothingPlaying`] without a blend space there.
    pub fn set_parameter(&mut self, layer: usize, value: f32) -> Result<(), Error> {
        let l = self.layer(layer)?;
        for s in l.slots.iter_mut().rev() {
            if let Source::Space(b) = &mut s.source {
                b.parameter = if value.is_finite() { value } else { 0.0 };
                return Ok(());
            }
        }
        Err(Error::NothingPlaying(layer))
    }

    /// Queues `clip` on `layer`: it starts `when` the current clip ends or reaches a time,
    /// with `transition`. Queued clips start one after another.
    ///
    /// # Errors
    /// As [`Animator::play`].
    pub fn queue(
        &mut self,
        layer: usize,
        clip: Arc<Clip>,
        when: When,
        transition: Transition,
        options: PlayOptions,
    ) -> Result<(), Error> {
        check_clip(&self.skeleton, &clip)?;
        self.layer(layer)?.queue.push(Queued {
            clip,
            when,
            transition,
            options,
        });
        Ok(())
    }

    /// Stops `layer`: its slots and queue are cleared, so it contributes nothing (with every
    /// layer stopped, the pose is the rest pose).
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`].
    pub fn stop(&mut self, layer: usize) -> Result<(), Error> {
        let l = self.layer(layer)?;
        l.slots.clear();
        l.queue.clear();
        l.inertial.duration = 0.0;
        l.inertial_pending = None;
        Ok(())
    }

    /// Pauses or resumes every player of `layer`.
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`].
    pub fn set_paused(&mut self, layer: usize, paused: bool) -> Result<(), Error> {
        for s in &mut self.layer(layer)?.slots {
            match &mut s.source {
                Source::Clip(p) => p.paused = paused,
                Source::Space(b) => b.entries.iter_mut().for_each(|(_, p)| p.paused = paused),
            }
        }
        Ok(())
    }

    fn newest_player(&mut self, layer: usize) -> Result<&mut Player, Error> {
        let l = self.layer(layer)?;
        l.slots
            .iter_mut()
            .rev()
            .find_map(|s| match &mut s.source {
                Source::Clip(p) => Some(p),
                Source::Space(_) => None,
            })
            .ok_or(Error::NothingPlaying(layer))
    }

    /// Sets the speed of the newest clip on `layer` (negative plays backwards).
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], [`Error::NothingPlaying`].
    pub fn set_speed(&mut self, layer: usize, speed: f32) -> Result<(), Error> {
        self.newest_player(layer)?.speed = if speed.is_finite() { speed } else { 0.0 };
        Ok(())
    }

    /// Moves the newest clip on `layer` to a local time (seconds from its first frame). With
    /// `fire_events`, the events between the old and new time fire on the next update as if
    /// played through; otherwise none do (events at the new time itself fire on the next
    /// update that moves on).
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], [`Error::NothingPlaying`].
    pub fn seek(&mut self, layer: usize, local: f32, fire_events: bool) -> Result<(), Error> {
        let weight = self.layers.get(layer).map_or(0.0, |l| l.weight);
        let min_weight = self.policy.min_weight;
        let mut crossings = std::mem::take(&mut self.crossings);
        crossings.clear();
        let p = self.newest_player(layer)?;
        if !fire_events {
            p.seek(local);
            self.crossings = crossings;
            return Ok(());
        }
        let target = p.seek_target(local);
        p.seek_through(target, &mut crossings);
        let clip = p.clip.clone();
        if std::mem::replace(&mut self.events_stale, false) {
            self.events.clear();
        }
        if weight >= min_weight {
            for c in &crossings {
                self.events.push(FiredEvent {
                    layer,
                    clip: clip.clone(),
                    index: c.event,
                    at: 0.0,
                    backward: c.backward,
                    weight,
                });
            }
        }
        self.crossings = crossings;
        Ok(())
    }

    /// Like [`Animator::seek`] with a fraction of the clip.
    ///
    /// # Errors
    /// As [`Animator::seek`].
    pub fn seek_normalized(
        &mut self,
        layer: usize,
        n: f32,
        fire_events: bool,
    ) -> Result<(), Error> {
        let d = self.newest_player(layer)?.clip.duration();
        self.seek(layer, n * d, fire_events)
    }

    /// The players of `layer` with their current weights (blend spaces' players weighted by
    /// the space's blend).
    pub fn players(&self, layer: usize) -> Vec<(&Player, f32)> {
        let Some(l) = self.layers.get(layer) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for s in &l.slots {
            match &s.source {
                Source::Clip(p) => out.push((p, s.weight)),
                Source::Space(b) => out.extend(b.players().map(|(p, w)| (p, w * s.weight))),
            }
        }
        out
    }

    /// The pose of the last update (local transforms).
    pub fn pose(&self) -> &[Transform] {
        &self.pose
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
        self.fade(dt);
        self.advance(dt);
        self.events[seeded..].sort_by(|a, b| a.at.total_cmp(&b.at));
        self.run_queues();
        if let Some(cfg) = self.root {
            root = self.root_motion(&cfg);
        }
        self.evaluate(dt);
        if let Some(cfg) = self.root {
            strip_root(&mut self.pose[cfg.joint as usize], &cfg);
        }
        UpdateResult {
            events: &self.events,
            root_motion: root,
        }
    }

    fn fade(&mut self, dt: f32) {
        for l in &mut self.layers {
            for s in &mut l.slots {
                if let Some(f) = &mut s.fade {
                    f.elapsed += dt;
                    let x = if f.duration > 0.0 {
                        f.elapsed / f.duration
                    } else {
                        1.0
                    };
                    s.weight = f.from + (f.to - f.from) * f.curve.at(x);
                    if x >= 1.0 {
                        s.weight = f.to;
                        s.fade = None;
                    }
                }
            }
            l.slots.retain(|s| s.weight > 0.0 || s.fade.is_some());
        }
    }

    /// Advances every player: sync groups by their leader's normalised time, the rest by
    /// their own speed; collects events.
    fn advance(&mut self, dt: f32) {
        let policy = self.policy;
        // Leaders of sync groups: (group, layer, slot, weight).
        let mut leaders: [(u32, usize, usize, f32); 8] = [(u32::MAX, 0, 0, -1.0); 8];
        let mut n_leaders = 0;
        for (li, l) in self.layers.iter().enumerate() {
            for (si, s) in l.slots.iter().enumerate() {
                let (Some(g), Source::Clip(p)) = (s.sync, &s.source) else {
                    continue;
                };
                // Paused or zero-length players follow; they do not lead.
                if p.paused || p.clip.duration() <= 0.0 {
                    continue;
                }
                let w = l.weight * s.weight;
                let capacity = leaders.len();
                match leaders[..n_leaders].iter_mut().find(|x| x.0 == g) {
                    Some(x) if w > x.3 => *x = (g, li, si, w),
                    Some(_) => {}
                    None if n_leaders < capacity => {
                        leaders[n_leaders] = (g, li, si, w);
                        n_leaders += 1;
                    }
                    None => {}
                }
            }
        }
        // Leaders first: their new normalised positions drive their groups.
        let mut group_pos: [(u32, f64, f64); 8] = [(u32::MAX, 0.0, 0.0); 8];
        for (k, &(g, li, si, _)) in leaders[..n_leaders].iter().enumerate() {
            let l = &mut self.layers[li];
            let weight = l.weight * l.slots[si].weight;
            if let Source::Clip(p) = &mut l.slots[si].source {
                let d = p.clip.duration() as f64;
                let delta = if p.paused {
                    0.0
                } else {
                    dt as f64 * p.speed as f64
                };
                let fires = weight >= policy.min_weight;
                self.crossings.clear();
                let (a, b) = p.advance(delta, fires.then_some(&mut self.crossings));
                l.slots[si].advanced = (a, b);
                if let Source::Clip(p) = &l.slots[si].source {
                    push_events(
                        &mut self.events,
                        &self.crossings,
                        li,
                        &p.clip,
                        weight,
                        delta,
                    );
                }
                group_pos[k] = (
                    g,
                    if d > 0.0 { a / d } else { 0.0 },
                    if d > 0.0 { b / d } else { 0.0 },
                );
            }
        }
        for (li, l) in self.layers.iter_mut().enumerate() {
            let lw = l.weight;
            for (si, s) in l.slots.iter_mut().enumerate() {
                let weight = lw * s.weight;
                let is_leader = leaders[..n_leaders].iter().any(|x| x.1 == li && x.2 == si);
                if is_leader {
                    continue;
                }
                match &mut s.source {
                    Source::Clip(p) => {
                        let d = p.clip.duration() as f64;
                        let group = s
                            .sync
                            .and_then(|g| group_pos[..n_leaders].iter().find(|x| x.0 == g));
                        let fires = weight >= policy.min_weight
                            && !(group.is_some() && policy.sync_leader_only);
                        self.crossings.clear();
                        let out = fires.then_some(&mut self.crossings);
                        let (a, b) = match group {
                            Some(_) if p.paused => p.advance(0.0, out),
                            Some(&(_, _, nb)) => {
                                let target = nb * d;
                                let delta = target - p.position();
                                p.advance(delta, out)
                            }
                            None => {
                                let delta = if p.paused {
                                    0.0
                                } else {
                                    dt as f64 * p.speed as f64
                                };
                                p.advance(delta, out)
                            }
                        };
                        s.advanced = (a, b);
                        push_events(
                            &mut self.events,
                            &self.crossings,
                            li,
                            &p.clip,
                            weight,
                            b - a,
                        );
                    }
                    Source::Space(space) => {
                        // Normalised rate from the blended duration; every entry keeps the
                        // same phase; events from the heaviest entry.
                        let (ia, ib, w) = space.bracket();
                        let da = space.entries[ia].1.clip.duration() as f64;
                        let db = space.entries[ib].1.clip.duration() as f64;
                        let blended = da * (1.0 - w as f64) + db * w as f64;
                        let heaviest = if w > 0.5 { ib } else { ia };
                        let lead = &space.entries[heaviest].1;
                        let speed = if lead.paused { 0.0 } else { lead.speed as f64 };
                        let nd = if blended > 0.0 {
                            dt as f64 * speed / blended
                        } else {
                            0.0
                        };
                        for (i, (_, p)) in space.entries.iter_mut().enumerate() {
                            let d = p.clip.duration() as f64;
                            self.crossings.clear();
                            let fires = i == heaviest && weight >= policy.min_weight;
                            let (a, b) = p.advance(nd * d, fires.then_some(&mut self.crossings));
                            if i == 0 {
                                s.advanced = (a, b);
                            }
                            push_events(
                                &mut self.events,
                                &self.crossings,
                                li,
                                &p.clip,
                                weight,
                                b - a,
                            );
                        }
                    }
                }
            }
        }
    }

    /// Starts queued clips whose moment came during this update's advance.
    fn run_queues(&mut self) {
        for li in 0..self.layers.len() {
            let Some(q) = self.layers[li].queue.first().cloned() else {
                continue;
            };
            let l = &self.layers[li];
            let current = l.slots.iter().rev().find_map(|s| match &s.source {
                Source::Clip(p) => Some((p, s.advanced)),
                Source::Space(_) => None,
            });
            let due = match current {
                None => true,
                Some((p, (a, b))) => {
                    let d = p.clip.duration() as f64;
                    match q.when {
                        When::End => {
                            p.finished()
                                || (d > 0.0 && p.wrap != Wrap::Once && {
                                    let (ca, cb) = ((a / d).floor(), (b / d).floor());
                                    if b >= a {
                                        cb > ca
                                    } else {
                                        cb < ca || (b / d).fract() == 0.0 && b < a
                                    }
                                })
                        }
                        When::At(t) => {
                            let t = t as f64;
                            if d <= 0.0 {
                                true
                            } else {
                                let (lo, hi) = if b >= a { (a, b) } else { (b, a) };
                                let k0 = ((lo - t) / d).ceil();
                                t + k0 * d <= hi && (a != b)
                            }
                        }
                    }
                }
            };
            if due {
                self.layers[li].queue.remove(0);
                let p = self.new_player(q.clip, &q.options);
                let _ = self.start(li, Source::Clip(p), q.options.sync_group, q.transition);
            }
        }
    }

    /// Samples and blends every layer and combines them over the rest pose.
    fn evaluate(&mut self, dt: f32) {
        let rest = self.skeleton.rest_pose();
        let mut first = true;
        for l in &mut self.layers {
            if l.slots.is_empty() {
                l.produced = false;
                continue;
            }
            let neutral: &[Transform] = if l.mode == BlendMode::Additive {
                &self.identity
            } else {
                rest
            };
            // Write into the oldest output; the other two are the last ones.
            let next = (l.cur + 1) % 3;
            let [o0, o1, o2] = &mut l.outputs;
            let (output, prev, prev2) = match next {
                0 => (o0, &*o2, &*o1),
                1 => (o1, &*o0, &*o2),
                _ => (o2, &*o1, &*o0),
            };
            if l.slots.len() == 1 && l.slots[0].weight >= 1.0 {
                sample_slot(&mut l.slots[0].source, output, &mut l.buffers[MAX_SLOTS]);
            } else {
                let (bufs, extra) = l.buffers.split_at_mut(MAX_SLOTS);
                for (s, buf) in l.slots.iter_mut().zip(bufs.iter_mut()) {
                    sample_slot(&mut s.source, buf, &mut extra[0]);
                }
                let mut inputs: [BlendInput; MAX_SLOTS] = [BlendInput {
                    pose: &[],
                    weight: 0.0,
                    mask: None,
                }; MAX_SLOTS];
                for (i, (s, buf)) in l.slots.iter().zip(bufs.iter()).enumerate() {
                    inputs[i] = BlendInput {
                        pose: buf,
                        weight: s.weight,
                        mask: None,
                    };
                }
                let _ = blend(&inputs[..l.slots.len()], neutral, output);
            }
            if let Some(duration) = l.inertial_pending.take() {
                if l.produced {
                    l.inertial.capture(prev, prev2, l.last_dt, output, duration);
                } else {
                    // Nothing played here before: there is no old pose to decay from.
                    l.inertial.duration = 0.0;
                }
            } else if l.inertial.active() {
                l.inertial.elapsed += dt;
            }
            if l.inertial.active() {
                l.inertial.apply(output);
            }
            l.cur = next;
            l.last_dt = dt;
            l.produced = true;
            let mask = l.mask.as_ref().map(|m| m.weights());
            let output = &l.outputs[next];
            // Slots fading in on an empty layer sum to less than 1: the layer then counts
            // for that much less, so a cross-fade from nothing starts from what is below.
            let total: f32 = l.slots.iter().map(|s| s.weight).sum();
            let weight = l.weight * total.min(1.0);
            if first && l.mode == BlendMode::Override && weight >= 1.0 && mask.is_none() {
                // The first layer covers everything: no rest pose underneath.
                self.pose.copy_from_slice(output);
            } else {
                if first {
                    self.pose.copy_from_slice(rest);
                }
                let _ = match l.mode {
                    BlendMode::Override => blend_override(&mut self.pose, output, weight, mask),
                    BlendMode::Additive => apply_additive(&mut self.pose, output, weight, mask),
                };
            }
            first = false;
        }
        if first {
            self.pose.copy_from_slice(rest);
        }
    }

    /// The root motion of this update from layer 0's players, by weight.
    fn root_motion(&self, cfg: &RootMotionConfig) -> RootMotion {
        let Some(l) = self.layers.first() else {
            return RootMotion::default();
        };
        let mut out = RootMotion::default();
        let mut wsum = 0.0;
        let mut add = |p: &Player, (a, b): (f64, f64), w: f32| {
            if w <= 0.0 {
                return;
            }
            let m = player_root_motion(p, a, b, cfg);
            out.translation += m.translation * w;
            out.yaw += m.yaw * w;
            wsum += w;
        };
        for s in &l.slots {
            match &s.source {
                Source::Clip(p) => add(p, s.advanced, s.weight),
                Source::Space(b) => {
                    for (p, w) in b.players() {
                        let d = p.clip.duration() as f64;
                        // Every entry moved by the same fraction; recover its own span.
                        let (a0, b0) = s.advanced;
                        let d0 = b.entries[0].1.clip.duration() as f64;
                        let scale = if d0 > 0.0 { d / d0 } else { 0.0 };
                        add(p, (a0 * scale, b0 * scale), w * s.weight);
                    }
                }
            }
        }
        if wsum > 0.0 {
            out.translation /= wsum;
            out.yaw /= wsum;
        }
        out
    }
}

/// A layer weight: 0..=1 for override layers, -1..=1 for additive ones; NaN as 0.
fn layer_weight(mode: BlendMode, w: f32) -> f32 {
    let lo = if mode == BlendMode::Additive {
        -1.0
    } else {
        0.0
    };
    if w.is_nan() {
        0.0
    } else {
        w.clamp(lo, 1.0)
    }
}

fn push_events(
    out: &mut Vec<FiredEvent>,
    crossings: &[Crossing],
    layer: usize,
    clip: &Arc<Clip>,
    weight: f32,
    delta: f64,
) {
    for c in crossings {
        out.push(FiredEvent {
            layer,
            clip: clip.clone(),
            index: c.event,
            at: if delta != 0.0 {
                (c.distance / delta.abs()).clamp(0.0, 1.0) as f32
            } else {
                0.0
            },
            backward: c.backward,
            weight,
        });
    }
}

fn sample_slot(source: &mut Source, out: &mut [Transform], scratch: &mut [Transform]) {
    match source {
        Source::Clip(p) => p.sample(out),
        Source::Space(space) => {
            let (a, b, w) = space.bracket();
            space.entries[a].1.sample(out);
            if a != b && w > 0.0 {
                space.entries[b].1.sample(scratch);
                blend_two(out, scratch, w);
            }
        }
    }
}

/// `out = lerp(out, other, w)` per joint, rotations on the shortest path (a blend space's two
/// neighbouring clips).
fn blend_two(out: &mut [Transform], other: &[Transform], w: f32) {
    for (a, b) in out.iter_mut().zip(other) {
        *a = Transform {
            translation: a.translation.lerp(b.translation, w),
            rotation: crate::transform::nlerp(a.rotation, b.rotation, w),
            scale: a.scale.lerp(b.scale, w),
        };
    }
}

/// Yaw of `q` about `up`, measured from `forward`.
fn yaw_of(q: Quat, cfg: &RootMotionConfig) -> f32 {
    let f = q * cfg.forward;
    let flat = f - cfg.up * f.dot(cfg.up);
    if flat.length_squared() < 1e-12 {
        return 0.0;
    }
    let side = cfg.up.cross(cfg.forward);
    flat.dot(side).atan2(flat.dot(cfg.forward))
}

fn wrap_angle(a: f32) -> f32 {
    (a + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI
}

/// Root motion of one player moving from unwrapped position `a` to `b`, in the character's
/// frame at `a`. The travel is cut at loop boundaries; each piece's net displacement is
/// expressed in the root's frame at the piece's start and turned by the yaw accumulated so
/// far, so a turning walk keeps turning across loops. Whole cycles in one step are added
/// cycle by cycle (at most 100 000 per update).
fn player_root_motion(p: &Player, a: f64, b: f64, cfg: &RootMotionConfig) -> RootMotion {
    let clip = &p.clip;
    let d = clip.duration() as f64;
    let at = |local: f64| sample_joint(clip, cfg.joint, clip.start() + local as f32);
    let flat = |v: Vec3| v - cfg.up * v.dot(cfg.up);
    let mut out = RootMotion::default();
    // One piece from local time l0 to l1 (same cycle).
    let piece = |l0: f64, l1: f64, out: &mut RootMotion| {
        let (t0, t1) = (at(l0), at(l1));
        let y0 = yaw_of(t0.rotation, cfg);
        let frame = Quat::from_axis_angle(cfg.up, out.yaw - y0);
        out.translation += frame * flat(t1.translation - t0.translation);
        out.yaw += wrap_angle(yaw_of(t1.rotation, cfg) - y0);
    };
    if p.wrap != Wrap::Loop || d <= 0.0 || a == b {
        piece(p.local_at(a), p.local_at(b), &mut out);
        return out;
    }
    let forward = b > a;
    let (ca, cb) = ((a / d).floor(), (b / d).floor());
    let la = a - ca * d;
    let lb = b - cb * d;
    if ca == cb {
        piece(la, lb, &mut out);
        return out;
    }
    // To the boundary of the first cycle, whole cycles, then into the last one.
    let cycles = ((cb - ca).abs() - 1.0).min(100_000.0) as usize;
    if forward {
        piece(la, d, &mut out);
        for _ in 0..cycles {
            piece(0.0, d, &mut out);
        }
        piece(0.0, lb, &mut out);
    } else {
        piece(la, 0.0, &mut out);
        for _ in 0..cycles {
            piece(d, 0.0, &mut out);
        }
        piece(d, lb, &mut out);
    }
    out
}

/// Removes the root's horizontal translation and yaw from its transform.
fn strip_root(root: &mut Transform, cfg: &RootMotionConfig) {
    root.translation = cfg.up * root.translation.dot(cfg.up);
    let yaw = yaw_of(root.rotation, cfg);
    root.rotation = (Quat::from_axis_angle(cfg.up, -yaw) * root.rotation).normalize();
}

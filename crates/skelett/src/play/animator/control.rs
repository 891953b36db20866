//! Playback control: starting clips and blend spaces on a layer (one path,
//! [`Animator::play_with`], behind `play`, `crossfade` and `inertialize`), stopping,
//! pausing, speed, seeking and blend-space parameters. Clips are checked against the
//! animator's skeleton here, once, so the per-frame stages need not.

use std::sync::Arc;

use super::layer::Source;
use super::{
    Animator, BlendSpace1D, BlendTree, Curve, FiredEvent, PlayOptions, Player, Transition,
};
use crate::{Clip, Error, Skeleton};

pub(super) fn check_clip(skeleton: &Skeleton, clip: &Clip) -> Result<(), Error> {
    if !clip.fits(skeleton) {
        return Err(Error::OtherSkeleton {
            clip: clip.name().to_owned(),
            built_for: clip.skeleton_id(),
            clip_joints: clip.joint_count(),
            skeleton: skeleton.id(),
            skeleton_joints: skeleton.len(),
        });
    }
    Ok(())
}

impl Animator {
    /// Plays `clip` on `layer` with `transition`: [`Transition::Immediate`] replaces what was
    /// playing there, [`Transition::Crossfade`] fades everything playing there out from its
    /// current weight while the clip fades in, [`Transition::Inertial`] switches at once and
    /// decays the pose difference. [`Animator::play`], [`Animator::crossfade`] and
    /// [`Animator::inertialize`] are shorthands for it.
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], or [`Error::OtherSkeleton`] for a clip of another skeleton.
    pub fn play_with(
        &mut self,
        layer: usize,
        clip: Arc<Clip>,
        transition: Transition,
        options: PlayOptions,
    ) -> Result<(), Error> {
        check_clip(&self.skeleton, &clip)?;
        let p = self.new_player(clip, &options);
        self.start(layer, Source::Clip(p), options.sync_group, transition)
    }

    /// Starts `source` on `layer` with `transition`.
    pub(super) fn start(
        &mut self,
        layer: usize,
        source: Source,
        sync: Option<u32>,
        transition: Transition,
    ) -> Result<(), Error> {
        self.layer(layer)?.start(source, sync, transition, None);
        Ok(())
    }

    /// Starts a tagged source on `layer` (the graph's states): `source` is used if given,
    /// otherwise a spare one with this tag (it left the layer earlier) is taken back, and
    /// `make` builds one only if neither is there. The source is then restarted for
    /// `options` (joining its sync group's phase). Returns whether `make` ran (an
    /// allocation); nothing starts if it has nothing to give.
    pub(crate) fn start_tagged(
        &mut self,
        layer: usize,
        tag: u32,
        make: impl FnOnce() -> Option<Source>,
        transition: Transition,
        options: &PlayOptions,
    ) -> Result<bool, Error> {
        let group = options.sync_group.and_then(|g| self.group_position(g));
        let l = self.layer(layer)?;
        let (mut source, made) = match l.spare.iter().position(|s| s.0 == tag) {
            Some(i) => (l.spare.swap_remove(i).1, false),
            None => match make() {
                Some(s) => (s, true),
                None => return Ok(false),
            },
        };
        let speed = if options.speed.is_finite() {
            options.speed
        } else {
            1.0
        };
        let start = group.unwrap_or(options.start.clamp(0.0, 1.0) as f64);
        match &mut source {
            Source::Clip(p) => {
                p.speed = speed;
                p.wrap = options.wrap;
                p.paused = false;
                p.cache.invalidate();
                p.set_fresh(start * p.clip.duration() as f64);
            }
            Source::Tree(t) => t.restart(start, speed, options.wrap),
            Source::Space(_) => {}
        }
        self.layer(layer)?
            .start(source, options.sync_group, transition, Some(tag));
        Ok(made)
    }

    /// Fades everything on `layer` out with `transition`'s duration (the graph's empty
    /// states).
    pub(crate) fn fade_out(&mut self, layer: usize, transition: Transition) -> Result<(), Error> {
        self.layer(layer)?.fade_out(transition);
        Ok(())
    }

    /// Keeps room for `n` spare tagged sources on `layer`, so that sources leaving it do
    /// not allocate.
    pub(crate) fn reserve_spare(&mut self, layer: usize, n: usize) -> Result<(), Error> {
        let l = self.layer(layer)?;
        l.spare.reserve(n.saturating_sub(l.spare.len()));
        Ok(())
    }

    /// Adds a spare tagged source to `layer` (ready for [`Animator::start_tagged`]).
    pub(crate) fn add_spare(&mut self, layer: usize, tag: u32, source: Source) {
        if let Some(l) = self.layers.get_mut(layer) {
            l.spare.push((tag, source));
        }
    }

    /// The slots of `layer`.
    pub(crate) fn slots(&self, layer: usize) -> &[super::layer::Slot] {
        self.layers.get(layer).map_or(&[], |l| &l.slots)
    }

    /// The slots of `layer` (the graph reads and steers its states' sources).
    pub(crate) fn slots_mut(&mut self, layer: usize) -> &mut [super::layer::Slot] {
        match self.layers.get_mut(layer) {
            Some(l) => &mut l.slots,
            None => &mut [],
        }
    }

    /// Plays a blend tree on `layer` with `transition`; `options` give its speed, wrap, sync
    /// group and start (normalised).
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], or [`Error::OtherSkeleton`] for a tree of another skeleton.
    pub fn play_tree(
        &mut self,
        layer: usize,
        mut tree: BlendTree,
        transition: Transition,
        options: PlayOptions,
    ) -> Result<(), Error> {
        for c in tree.shape().clips() {
            check_clip(&self.skeleton, c)?;
        }
        let speed = if options.speed.is_finite() {
            options.speed
        } else {
            1.0
        };
        let start = options
            .sync_group
            .and_then(|g| self.group_position(g))
            .unwrap_or(options.start.clamp(0.0, 1.0) as f64);
        tree.restart(start, speed, options.wrap);
        self.start(
            layer,
            Source::Tree(Box::new(tree)),
            options.sync_group,
            transition,
        )
    }

    /// Sets parameter `index` of the blend tree playing on `layer` (the newest one).
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], or [`Error::NothingPlaying`] without a tree there.
    pub fn set_tree_parameter(
        &mut self,
        layer: usize,
        index: usize,
        value: f32,
    ) -> Result<(), Error> {
        let l = self.layer(layer)?;
        for s in l.slots.iter_mut().rev() {
            if let Source::Tree(t) = &mut s.source {
                t.set_parameter(index, value);
                return Ok(());
            }
        }
        Err(Error::NothingPlaying(layer))
    }

    pub(super) fn new_player(&self, clip: Arc<Clip>, options: &PlayOptions) -> Player {
        let mut p = Player::new(clip);
        p.speed = if options.speed.is_finite() {
            options.speed
        } else {
            1.0
        };
        p.wrap = options.wrap;
        p.cache.set_rotation_interpolation(options.rotation);
        // Join a running sync group at its leader's (normalised, unwrapped) position;
        // otherwise start where asked.
        match options.sync_group.and_then(|g| self.group_position(g)) {
            Some(pos) => p.set_position(pos * p.clip.duration() as f64),
            None => p.seek_normalized(options.start.clamp(0.0, 1.0)),
        }
        p
    }

    /// The normalised unwrapped position of a sync group's leader.
    pub(super) fn group_position(&self, group: u32) -> Option<f64> {
        let mut best: Option<(f32, f64)> = None;
        for l in &self.layers {
            for s in &l.slots {
                if s.sync != Some(group) {
                    continue;
                }
                let w = l.weight * s.weight;
                let pos = match &s.source {
                    Source::Clip(p) if p.clip.duration() > 0.0 => {
                        Some(p.position() / p.clip.duration() as f64)
                    }
                    Source::Tree(t) => Some(t.phase),
                    _ => None,
                };
                if let Some(pos) = pos {
                    if best.is_none_or(|b| w > b.0) {
                        best = Some((w, pos));
                    }
                }
            }
        }
        best.map(|b| b.1)
    }

    /// Plays `clip` on `layer` at once, replacing what was playing there.
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], or [`Error::OtherSkeleton`] for a clip of another skeleton.
    pub fn play(
        &mut self,
        layer: usize,
        clip: Arc<Clip>,
        options: PlayOptions,
    ) -> Result<(), Error> {
        self.play_with(layer, clip, Transition::Immediate, options)
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
        self.play_with(layer, clip, Transition::Crossfade(duration, curve), options)
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
        self.play_with(layer, clip, Transition::Inertial(duration), options)
    }

    /// Plays a blend space on `layer`, with the given transition.
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`], [`Error::OtherSkeleton`], or [`Error::ClipRange`] for a
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

    /// Stops `layer`: its slots and queue are cleared, so it contributes nothing (with every
    /// layer stopped, the pose is the rest pose).
    ///
    /// # Errors
    /// [`Error::NoSuchLayer`].
    pub fn stop(&mut self, layer: usize) -> Result<(), Error> {
        let l = self.layer(layer)?;
        l.clear();
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
                Source::Tree(t) => t.paused = paused,
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
                _ => None,
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
                    kind: c.kind,
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
}

//! Pose modifiers: the post-process stage after layer blending, where IK bends the blended
//! pose to the world (a hand on a handle, a head looking at a target, feet on the ground).
//!
//! ```text
//! layers blended ─▶ local pose ─▶ local_to_model ─▶ modifier 1 ─▶ modifier 2 ─▶ ... ─▶ pose, model
//!                                                   (each weighted by its fading weight)
//! ```
//!
//! A [`Modifier`] is one of the [`crate::ik`] solvers with its request; the animator keeps a
//! list of them, each with a weight that fades in and out over time
//! ([`Animator::fade_modifier`]), and runs those with a weight above zero every update, in
//! the order they were added, on model matrices it keeps, so the update still allocates
//! nothing. Game code moves their targets every frame ([`Animator::set_modifier_target`], or
//! [`Animator::modifier_mut`] for anything else). Targets are in model space.
//!
//! Foot placement takes each foot's contact from the clips playing on layer 0: give it the
//! clips' [`Contacts`] and every update weighs them by the players' weights and times.

use std::sync::Arc;

use glam::{Mat4, Vec3};

use super::layer::Source;
use super::Animator;
use crate::contacts::Contacts;
use crate::ik::{self, Aim, Chain, Feet, Ground, Placement, Reach, TwoBone, TwoBoneChain};
use crate::{local_to_model, Clip, Error, JointIndex};

/// Which chain solver a [`Modifier::Chain`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainSolver {
    /// [`ik::fabrik`].
    Fabrik,
    /// [`ik::ccd`].
    Ccd,
}

/// A ground shared by the characters that stand on it.
pub type SharedGround = Arc<dyn Ground + Send + Sync>;

/// One pose modifier: an IK solver and its request.
#[derive(Clone)]
pub enum Modifier {
    /// [`ik::two_bone`].
    TwoBone {
        /// The chain.
        chain: TwoBoneChain,
        /// The request (its weight is multiplied by the modifier's).
        ik: TwoBone,
    },
    /// [`ik::aim_chain`] (one joint: [`ik::aim`]).
    Aim {
        /// Joints from the top to the aiming one.
        chain: Vec<JointIndex>,
        /// Each joint's share of the turn.
        weights: Vec<f32>,
        /// The request (its weight is multiplied by the modifier's).
        aim: Aim,
    },
    /// [`ik::fabrik`] or [`ik::ccd`].
    Chain {
        /// The chain with its limits.
        chain: Chain,
        /// The request (its weight is multiplied by the modifier's).
        reach: Reach,
        /// Which solver.
        solver: ChainSolver,
    },
    /// [`ik::place_feet`].
    Feet {
        /// The legs and pelvis.
        feet: Feet,
        /// The request (its weight is multiplied by the modifier's).
        placement: Placement,
        /// What the feet stand on.
        ground: SharedGround,
        /// Each foot's contact when no clip below says (0..=1; 1 without a clip).
        contacts: Vec<f32>,
        /// Contact curves of the clips that may play on layer 0.
        clips: Vec<(Arc<Clip>, Contacts)>,
    },
}

impl std::fmt::Debug for Modifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Modifier::TwoBone { chain, ik } => f
                .debug_struct("TwoBone")
                .field("chain", chain)
                .field("ik", ik)
                .finish(),
            Modifier::Aim { chain, aim, .. } => f
                .debug_struct("Aim")
                .field("chain", chain)
                .field("aim", aim)
                .finish(),
            Modifier::Chain { chain, reach, .. } => f
                .debug_struct("Chain")
                .field("chain", &chain.joints())
                .field("reach", reach)
                .finish(),
            Modifier::Feet { feet, .. } => f
                .debug_struct("Feet")
                .field("legs", &feet.legs().len())
                .finish(),
        }
    }
}

impl Modifier {
    /// Foot placement on `ground`, feet in contact unless a clip's curves say otherwise
    /// (add them with [`Modifier::with_contacts`]).
    pub fn feet(feet: Feet, placement: Placement, ground: SharedGround) -> Self {
        let n = feet.legs().len();
        Modifier::Feet {
            feet,
            placement,
            ground,
            contacts: vec![1.0; n],
            clips: Vec::new(),
        }
    }

    /// For [`Modifier::Feet`]: while `clip` plays on layer 0, its players' times look up the
    /// feet's contact in `contacts` (one curve per leg, as [`Feet::contacts`] builds).
    /// Other modifiers are returned unchanged.
    pub fn with_contacts(mut self, clip: Arc<Clip>, contacts: Contacts) -> Self {
        if let Modifier::Feet { clips, .. } = &mut self {
            clips.push((clip, contacts));
        }
        self
    }

    /// The modifier's own weight.
    fn weight_mut(&mut self) -> &mut f32 {
        match self {
            Modifier::TwoBone { ik, .. } => &mut ik.weight,
            Modifier::Aim { aim, .. } => &mut aim.weight,
            Modifier::Chain { reach, .. } => &mut reach.weight,
            Modifier::Feet { placement, .. } => &mut placement.weight,
        }
    }

    /// Every joint it names.
    fn joints(&self) -> Vec<JointIndex> {
        match self {
            Modifier::TwoBone { chain, .. } => chain.joints().to_vec(),
            Modifier::Aim { chain, .. } => chain.clone(),
            Modifier::Chain { chain, .. } => chain.joints().to_vec(),
            Modifier::Feet { feet, .. } => feet
                .legs()
                .iter()
                .flat_map(|l| {
                    let mut j = l.chain().joints().to_vec();
                    j.push(l.foot());
                    j
                })
                .collect(),
        }
    }
}

/// A modifier in the animator, with its fading weight.
#[derive(Clone, Debug)]
pub(super) struct Slot {
    pub(super) modifier: Modifier,
    pub(super) weight: f32,
    /// Fading toward `to` at `rate` per second.
    pub(super) to: f32,
    pub(super) rate: f32,
    /// The first joint it may move: the model matrices are refreshed from here after it.
    pub(super) first: JointIndex,
    pub(super) error: Option<Error>,
}

impl Animator {
    /// Adds a pose modifier, run after layer blending at `weight` (0..=1), and returns its
    /// index.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use skelett::*;
    /// use skelett::animator::*;
    /// use skelett::ik::*;
    /// use glam::{Quat, Vec3};
    /// let down = |name: &str, parent| RawJoint { name: name.into(), parent,
    ///     rest: Transform::new(Vec3::new(0.0, -1.0, 0.0), Quat::IDENTITY, Vec3::ONE) };
    /// let skeleton = Arc::new(RawSkeleton { joints: vec![
    ///     RawJoint { name: "hip".into(), parent: None,
    ///                rest: Transform::new(Vec3::new(0.0, 2.0, 0.0), Quat::IDENTITY, Vec3::ONE) },
    ///     down("knee", Some(0)), down("ankle", Some(1)),
    /// ], ..Default::default() }.build()?);
    /// let mut animator = Animator::new(skeleton.clone());
    /// let chain = TwoBoneChain::by_name(&skeleton, ["hip", "knee", "ankle"])?;
    /// let reach = animator.add_modifier(Modifier::TwoBone {
    ///     chain, ik: TwoBone::new(Vec3::new(0.0, 0.5, 0.5), Vec3::Z) }, 0.0)?;
    /// animator.fade_modifier(reach, 1.0, 0.5)?; // in over half a second
    /// animator.update(0.25);
    /// let halfway = animator.model()[2].w_axis.truncate();
    /// animator.update(0.25);
    /// let there = animator.model()[2].w_axis.truncate();
    /// assert!(there.distance(Vec3::new(0.0, 0.5, 0.5)) < 1e-4);
    /// assert!(halfway.distance(there) > 0.1);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NoSuchJoint`] if it names a joint past the skeleton; [`Error::Length`] for
    /// an aim whose weights are fewer than its joints or foot placement whose contacts are
    /// fewer than its legs; [`Error::NotFinite`] for a NaN weight.
    pub fn add_modifier(&mut self, modifier: Modifier, weight: f32) -> Result<usize, Error> {
        if !weight.is_finite() {
            return Err(Error::NotFinite {
                what: "modifier weight",
            });
        }
        let joints = modifier.joints();
        for &j in &joints {
            if j as usize >= self.skeleton.len() {
                return Err(Error::NoSuchJoint {
                    joint: j,
                    joints: self.skeleton.len(),
                });
            }
        }
        match &modifier {
            Modifier::Aim { chain, weights, .. } => {
                crate::error::check_len("aim chain weights", chain.len(), weights.len())?
            }
            Modifier::Feet {
                feet,
                contacts,
                clips,
                ..
            } => {
                crate::error::check_len("foot contacts", feet.legs().len(), contacts.len())?;
                for (_, c) in clips {
                    crate::error::check_len("clip contacts", feet.legs().len(), c.joints().len())?;
                }
            }
            _ => {}
        }
        let mut first = joints.iter().copied().min().unwrap_or(0);
        if let Modifier::Feet { feet, .. } = &modifier {
            first = first.min(feet.first_joint());
        }
        let weight = weight.clamp(0.0, 1.0);
        // A lean animator's model matrices, made here rather than in an update.
        self.ensure_model();
        self.modifiers.push(Slot {
            modifier,
            weight,
            to: weight,
            rate: 0.0,
            first,
            error: None,
        });
        Ok(self.modifiers.len() - 1)
    }

    /// Fades modifier `index` to `weight` (0..=1) over `duration` seconds (0: at once).
    ///
    /// # Errors
    /// [`Error::NoSuchModifier`]; [`Error::NotFinite`] for a NaN weight or duration.
    pub fn fade_modifier(&mut self, index: usize, weight: f32, duration: f32) -> Result<(), Error> {
        if !weight.is_finite() || duration.is_nan() {
            return Err(Error::NotFinite {
                what: "modifier fade",
            });
        }
        let slot = self.modifier_slot(index)?;
        slot.to = weight.clamp(0.0, 1.0);
        if duration > 0.0 {
            slot.rate = (slot.to - slot.weight).abs() / duration;
        } else {
            slot.weight = slot.to;
            slot.rate = 0.0;
        }
        Ok(())
    }

    /// Moves the target of modifier `index` (model space): the two-bone target, the aim
    /// point or the chain's goal. Foot placement has none (it follows the ground).
    ///
    /// # Errors
    /// [`Error::NoSuchModifier`]; [`Error::NotFinite`] for a NaN or infinite target.
    pub fn set_modifier_target(&mut self, index: usize, target: Vec3) -> Result<(), Error> {
        if !target.is_finite() {
            return Err(Error::NotFinite {
                what: "modifier target",
            });
        }
        match &mut self.modifier_slot(index)?.modifier {
            Modifier::TwoBone { ik, .. } => ik.target = target,
            Modifier::Aim { aim, .. } => aim.target = target,
            Modifier::Chain { reach, .. } => reach.target = target,
            Modifier::Feet { .. } => {}
        }
        Ok(())
    }

    /// Modifier `index` (its chain, request and ground), to read.
    pub fn modifier(&self, index: usize) -> Option<&Modifier> {
        self.modifiers.get(index).map(|s| &s.modifier)
    }

    /// Modifier `index`, to change anything of its request.
    pub fn modifier_mut(&mut self, index: usize) -> Option<&mut Modifier> {
        self.modifiers.get_mut(index).map(|s| &mut s.modifier)
    }

    /// Modifier `index`'s current weight, and the error it met in the last update (a
    /// modifier whose solver fails is skipped for that update; the pose is as it was before
    /// it).
    pub fn modifier_state(&self, index: usize) -> Option<(f32, Option<&Error>)> {
        self.modifiers
            .get(index)
            .map(|s| (s.weight, s.error.as_ref()))
    }

    /// How many modifiers.
    pub fn modifier_count(&self) -> usize {
        self.modifiers.len()
    }

    /// The model-space matrices of the last update's pose, modifiers applied (computed by
    /// the update only when a modifier ran; otherwise run [`crate::local_to_model`] on
    /// [`Animator::pose`], or call [`Animator::update_model`]). Empty on a lean animator
    /// ([`Animator::new_lean`]) until a modifier is added or `update_model` is called.
    pub fn model(&self) -> &[Mat4] {
        &self.model
    }

    /// Recomputes [`Animator::model`] from [`Animator::pose`].
    pub fn update_model(&mut self) {
        self.ensure_model();
        // Read where it is held: only reading, no copy out (blocks as they are).
        if let super::Held::Blocks(li) = self.held {
            let blocks = self.layers[li].newest_blocks();
            let _ = crate::local_to_model_soa(&self.skeleton, blocks, 0, &mut self.model);
            return;
        }
        let own = super::own_rows(&self.pose, &self.skeleton);
        let pose = super::held_pose(&self.layers, own, self.held, &self.lazy);
        let _ = local_to_model(&self.skeleton, pose, 0, &mut self.model);
    }

    /// Makes the model matrices where a lean animator ([`Animator::new_lean`]) has none yet.
    fn ensure_model(&mut self) {
        if self.model.len() != self.skeleton.len() {
            self.model.resize(self.skeleton.len(), Mat4::IDENTITY);
        }
    }

    fn modifier_slot(&mut self, index: usize) -> Result<&mut Slot, Error> {
        let count = self.modifiers.len();
        self.modifiers
            .get_mut(index)
            .ok_or(Error::NoSuchModifier { index, count })
    }

    /// Fades the modifiers' weights and runs those above zero.
    pub(super) fn run_modifiers(&mut self, dt: f32) {
        let mut any = false;
        for s in &mut self.modifiers {
            if s.weight != s.to {
                let step = s.rate * dt;
                s.weight = if s.rate <= 0.0 || (s.to - s.weight).abs() <= step {
                    s.to
                } else if s.to > s.weight {
                    s.weight + step
                } else {
                    s.weight - step
                };
            }
            any |= s.weight > 0.0;
        }
        if !any {
            return;
        }
        // The modifiers write the pose: out of the layer output that may hold it.
        self.own_pose();
        self.ensure_model();
        let _ = local_to_model(&self.skeleton, &self.pose, 0, &mut self.model);
        let skeleton = &*self.skeleton;
        let layer0 = self.layers.first().filter(|l| l.enabled);
        for s in &mut self.modifiers {
            s.error = None;
            if s.weight <= 0.0 {
                continue;
            }
            let w = s.weight;
            let own = *s.modifier.weight_mut();
            let pose = &mut self.pose[..];
            let model = &mut self.model[..];
            let result = match &s.modifier {
                Modifier::TwoBone { chain, ik } => {
                    let ik = TwoBone {
                        weight: own * w,
                        ..*ik
                    };
                    ik::two_bone(chain, &ik, pose, model).map(|_| ())
                }
                Modifier::Aim {
                    chain,
                    weights,
                    aim,
                } => {
                    let aim = Aim {
                        weight: own * w,
                        ..*aim
                    };
                    ik::aim_chain(skeleton, chain, weights, &aim, pose, model).map(|_| ())
                }
                Modifier::Chain {
                    chain,
                    reach,
                    solver,
                } => {
                    let reach = Reach {
                        weight: own * w,
                        ..*reach
                    };
                    match solver {
                        ChainSolver::Fabrik => ik::fabrik(chain, &reach, pose, model),
                        ChainSolver::Ccd => ik::ccd(chain, &reach, pose, model),
                    }
                    .map(|_| ())
                }
                Modifier::Feet {
                    feet,
                    placement,
                    ground,
                    contacts,
                    clips,
                } => {
                    let placement = Placement {
                        weight: own * w,
                        ..*placement
                    };
                    let mut c = [0.0f32; ik::MAX_LEGS];
                    let n = feet.legs().len().min(ik::MAX_LEGS);
                    contacts_now(&mut c[..n], contacts, clips, layer0);
                    ik::place_feet(feet, &placement, &c[..n], &**ground, skeleton, pose, model)
                        .map(|_| ())
                }
            };
            match result {
                Ok(()) => {
                    let _ = local_to_model(skeleton, pose, s.first, model);
                }
                Err(e) => s.error = Some(e),
            }
        }
    }
}

/// Each foot's contact now: the clips of layer 0 that have curves, by their players'
/// weights and times, the rest of the weight from the fixed contacts.
fn contacts_now(
    out: &mut [f32],
    fixed: &[f32],
    clips: &[(Arc<Clip>, Contacts)],
    layer0: Option<&super::layer::Layer>,
) {
    out.copy_from_slice(&fixed[..out.len()]);
    let Some(layer) = layer0 else {
        return;
    };
    if clips.is_empty() {
        return;
    }
    let mut covered = 0.0f32;
    let mut sum = [0.0f32; ik::MAX_LEGS];
    let mut visit = |player: &super::Player, weight: f32| {
        if let Some((_, curves)) = clips.iter().find(|(c, _)| Arc::ptr_eq(c, player.clip())) {
            covered += weight;
            for (k, s) in sum.iter_mut().enumerate().take(out.len()) {
                *s += weight * curves.weight(k, player.time());
            }
        }
    };
    for slot in &layer.slots {
        match &slot.source {
            Source::Clip(p) => visit(p, slot.weight),
            Source::Space(space) => {
                for (p, w) in space.players() {
                    visit(p, w * slot.weight);
                }
            }
            Source::Tree(tree) => {
                for (p, w) in tree.players() {
                    visit(p, w * slot.weight);
                }
            }
        }
    }
    if covered > 0.0 {
        // Weights summing past 1 are normalized; short of 1, the fixed contacts fill in.
        let scale = if covered > 1.0 { 1.0 / covered } else { 1.0 };
        let rest = 1.0 - covered.min(1.0);
        for (k, o) in out.iter_mut().enumerate() {
            *o = sum[k] * scale + *o * rest;
        }
    }
}

//! Foot placement: feet on a slope, a stair or uneven terrain instead of floating above it or
//! sinking into it.
//!
//! ```text
//! animated pose ─▶ for each leg: the sole's lift above the authored floor (model origin, up)
//!                  ray cast down through the sole ─▶ ground point and normal (Ground)
//!                  sole target = ground point + lift; foot tilt = up → normal (limited),
//!                  weighted by the foot's contact
//!              ─▶ pelvis lowered (along -up) as far as the legs need to reach their targets
//!              ─▶ two-bone IK per leg to its ankle target, foot turned by its tilt
//!              ─▶ local_to_model from the first joint moved (toes follow)
//! ```
//!
//! The clip is taken to be authored on a flat floor through the model's origin,
//! perpendicular to [`Feet`]' up axis; the game places the character (its model-to-ground
//! transform) where it stands, usually on the ground below its root. A foot keeps its
//! animated lift above that floor on the real ground, so a swinging foot clears a step as it
//! cleared the floor; its turn to the ground's slope is weighted by how much it is in contact
//! (from [`crate::contacts::Contacts`], or the game's own), so a foot in the air keeps its
//! animated rotation. Any number of legs: two for a biped, four for the Fox.

use glam::{Mat4, Quat, Vec3};

use super::ground::Ground;
use super::two_bone::{two_bone, Bend, TwoBone, TwoBoneChain};
use super::{arc, check_descendant, finite, in_range, limited, rotation_of, weighted};
use crate::error::check_len;
use crate::{local_to_model, Error, JointIndex, Skeleton, Transform};

/// One leg: the two-bone chain that moves it and the foot that stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Leg {
    chain: TwoBoneChain,
    /// The joint that stands and tilts: the chain's end (hip, knee, ankle chains), or a
    /// separate joint carried along with the chain's tip (rigs whose foot is a control
    /// joint outside the leg).
    foot: JointIndex,
    /// The point of the sole that touches the ground, in the foot's local space.
    sole: Vec3,
    /// The side the knee bends to when the animated leg is (nearly) straight, model space.
    pole: Vec3,
}

impl Leg {
    /// A leg moved by `chain` and standing on `foot`, whose sole touches the ground at
    /// `sole` (in the foot joint's local space).
    ///
    /// # Errors
    /// [`Error::NoSuchJoint`]; [`Error::NotFinite`] for a NaN or infinite sole.
    pub fn new(
        skeleton: &Skeleton,
        chain: TwoBoneChain,
        foot: JointIndex,
        sole: Vec3,
    ) -> Result<Self, Error> {
        in_range(skeleton, foot)?;
        for j in chain.joints() {
            in_range(skeleton, j)?;
        }
        super::finite_vec("sole", sole)?;
        Ok(Leg {
            chain,
            foot,
            sole,
            pole: Vec3::ZERO,
        })
    }

    /// The leg with a model-space direction its knee bends toward when the animation holds
    /// it (nearly) straight: forward for a human's knee, backward for a quadruped's elbow.
    /// Otherwise the knee keeps the side the animation bends it to; this direction weighs as
    /// a bend of 5 % of the leg's length, so it decides only for legs straighter than that.
    /// A NaN or infinite direction is ignored.
    pub fn with_pole(mut self, pole: Vec3) -> Self {
        self.pole = pole.try_normalize().unwrap_or(Vec3::ZERO);
        self
    }

    /// A leg whose sole is the point of the floor (through the model origin, perpendicular
    /// to `up`) right below the foot joint in the skeleton's rest pose: right for rigs that
    /// stand on the floor at rest, as most do.
    ///
    /// # Errors
    /// As [`Leg::new`].
    pub fn from_rest(
        skeleton: &Skeleton,
        chain: TwoBoneChain,
        foot: JointIndex,
        up: Vec3,
    ) -> Result<Self, Error> {
        in_range(skeleton, foot)?;
        let up = up.try_normalize().ok_or(Error::NotFinite {
            what: "a zero up axis",
        })?;
        let mut model = vec![Mat4::IDENTITY; skeleton.len()];
        local_to_model(skeleton, skeleton.rest_pose(), 0, &mut model)?;
        let f = model[foot as usize];
        let p = f.w_axis.truncate();
        let sole = f.inverse().transform_point3(p - up * p.dot(up));
        Self::new(skeleton, chain, foot, sole)
    }

    /// The leg's chain.
    pub fn chain(&self) -> &TwoBoneChain {
        &self.chain
    }

    /// The joint that stands.
    pub fn foot(&self) -> JointIndex {
        self.foot
    }

    /// The sole point, in the foot's local space.
    pub fn sole(&self) -> Vec3 {
        self.sole
    }

    /// The leg's length in the pose of `model` (model-space matrices of at least the chain's
    /// joints): hip to knee plus knee to ankle (or to the knee's tip).
    pub fn length(&self, model: &[Mat4]) -> f32 {
        leg_length(&self.chain, model)
    }
}

/// A character's legs and pelvis, built once.
#[derive(Clone, Debug, PartialEq)]
pub struct Feet {
    legs: Vec<Leg>,
    pelvis: Option<JointIndex>,
    up: Vec3,
    /// The first joint foot placement may move: local_to_model is rerun from here.
    first: JointIndex,
    len: usize,
}

impl Feet {
    /// `legs`, a `pelvis` joint lowered so that they reach (`None`: never lowered; it must
    /// be every leg's first joint or above it), and the model-space `up` axis (the authored floor is
    /// perpendicular to it through the model origin).
    ///
    /// # Errors
    /// [`Error::TooManyLegs`] for more than [`MAX_LEGS`] legs;
    /// [`Error::NotAChain`] if a leg's chain is not below the pelvis; [`Error::NoSuchJoint`];
    /// [`Error::NotFinite`] for a NaN, infinite or zero up axis.
    pub fn new(
        skeleton: &Skeleton,
        legs: Vec<Leg>,
        pelvis: Option<JointIndex>,
        up: Vec3,
    ) -> Result<Self, Error> {
        let up = up
            .try_normalize()
            .filter(|u| u.is_finite())
            .ok_or(Error::NotFinite { what: "up axis" })?;
        if legs.len() > MAX_LEGS {
            return Err(Error::TooManyLegs(legs.len()));
        }
        let mut first = JointIndex::MAX;
        let mut len = 0;
        for leg in &legs {
            let [s, _, _] = leg.chain.joints();
            if let Some(p) = pelvis.filter(|&p| p != s) {
                check_descendant(skeleton, p, s)?;
            }
            for j in leg.chain.joints().into_iter().chain([leg.foot]) {
                in_range(skeleton, j)?;
                first = first.min(j);
                len = len.max(j as usize + 1);
            }
        }
        if let Some(p) = pelvis {
            in_range(skeleton, p)?;
            first = first.min(p);
            len = len.max(p as usize + 1);
        }
        Ok(Feet {
            legs,
            pelvis,
            up,
            first,
            len,
        })
    }

    /// The legs of `skeleton` found from its joint names and rest pose, for a quick start
    /// (viewers, tools, prototypes; a game names its legs with [`Feet::new`]): each joint the
    /// footstep detection would take (named like a foot, toe or ankle, or like a hand, paw or
    /// wrist) that stands in the lowest quarter of the rest pose's height, walked up to the
    /// first joint of its foot (a toe under an ankle gives the ankle), is the end of a leg
    /// whose knee and hip are its parent and grandparent. Knees bend toward the character's
    /// front (scene +Z, where glTF characters face), a quadruped's front legs (hands, paws)
    /// backward. The pelvis is the legs' deepest common ancestor. Up is scene +Y.
    ///
    /// ```
    /// # use skelett::*;
    /// # use skelett::ik::Feet;
    /// # use glam::{Quat, Vec3};
    /// let j = |name: &str, parent, y: f32| RawJoint { name: name.into(), parent,
    ///     rest: Transform::new(Vec3::new(0.0, y, 0.0), Quat::IDENTITY, Vec3::ONE) };
    /// let skeleton = RawSkeleton { joints: vec![
    ///     j("hips", None, 1.0), j("spine", Some(0), 0.3), j("head", Some(1), 0.5),
    ///     j("thigh_l", Some(0), 0.0), j("calf_l", Some(3), -0.5), j("foot_l", Some(4), -0.45),
    ///     j("thigh_r", Some(0), 0.0), j("calf_r", Some(6), -0.5), j("foot_r", Some(7), -0.45),
    /// ], ..Default::default() }.build()?;
    /// let feet = Feet::guess(&skeleton)?;
    /// assert_eq!(feet.legs().len(), 2);
    /// assert_eq!(feet.legs()[0].chain().joints(), [3, 4, 5]);
    /// assert_eq!(feet.pelvis(), Some(0));
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NoLegs`] when no such joint has a parent and grandparent (robot_quaternius's
    /// feet are control joints at the root: name its legs with [`TwoBoneChain::reaching_joint`]);
    /// [`Error::TooManyLegs`] for more than [`MAX_LEGS`].
    pub fn guess(skeleton: &Skeleton) -> Result<Self, Error> {
        use crate::contacts::{contact_kind, feet};
        let root = skeleton.root_transform();
        let to_model = root.inverse();
        let up = to_model.transform_vector3(Vec3::Y);
        let forward = to_model.transform_vector3(Vec3::Z);
        let mut model = vec![Mat4::IDENTITY; skeleton.len()];
        local_to_model(skeleton, skeleton.rest_pose(), 0, &mut model)?;
        let height = |j: JointIndex| root.transform_point3(model[j as usize].w_axis.truncate()).y;
        let (lo, hi) = (0..skeleton.len() as JointIndex)
            .map(height)
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), h| {
                (a.min(h), b.max(h))
            });
        let low = lo + 0.25 * (hi - lo);
        let mut legs = Vec::new();
        let mut ends: Vec<JointIndex> = Vec::new();
        for f in feet(skeleton) {
            if height(f) > low {
                continue;
            }
            // Up to the first joint of the foot: the ankle above the toes.
            let kind = contact_kind(skeleton.name(f));
            let mut ankle = f;
            while let Some(p) = skeleton.parent(ankle).filter(|_| kind != 0) {
                if contact_kind(skeleton.name(p)) != kind {
                    break;
                }
                ankle = p;
            }
            if ends.contains(&ankle) {
                continue;
            }
            let Some(knee) = skeleton.parent(ankle) else {
                continue;
            };
            let Some(hip) = skeleton.parent(knee) else {
                continue;
            };
            let chain = TwoBoneChain::new(skeleton, [hip, knee, ankle])?;
            let pole = if kind == 2 { -forward } else { forward };
            legs.push(Leg::from_rest(skeleton, chain, ankle, up)?.with_pole(pole));
            ends.push(ankle);
        }
        if legs.is_empty() {
            return Err(Error::NoLegs);
        }
        // The deepest joint above every leg's hip.
        let ancestors = |j: JointIndex| {
            std::iter::successors(skeleton.parent(j), |&p| skeleton.parent(p)).collect::<Vec<_>>()
        };
        let first_hip = legs[0].chain.joints()[0];
        let pelvis = ancestors(first_hip).into_iter().find(|&a| {
            legs.iter().all(|l| {
                let hip = l.chain.joints()[0];
                ancestors(hip).contains(&a)
            })
        });
        Self::new(skeleton, legs, pelvis, up)
    }

    /// The pelvis, if it is lowered.
    pub fn pelvis(&self) -> Option<JointIndex> {
        self.pelvis
    }

    /// How much each foot's sole is in contact with the floor over `clip`, in the order of
    /// the legs: the weights [`place_feet`] takes, looked up by time.
    pub fn contacts(&self, skeleton: &Skeleton, clip: &crate::Clip) -> crate::contacts::Contacts {
        let points: Vec<(JointIndex, Vec3)> = self.legs.iter().map(|l| (l.foot, l.sole)).collect();
        crate::contacts::Contacts::at_points(skeleton, clip, &points)
    }

    /// The legs.
    pub fn legs(&self) -> &[Leg] {
        &self.legs
    }

    /// The first joint (by index) foot placement may move.
    pub fn first_joint(&self) -> JointIndex {
        self.first
    }

    /// The model-space up axis.
    pub fn up(&self) -> Vec3 {
        self.up
    }
}

/// A foot placement request for one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    /// The character's model-to-ground transform (where the game placed it; rigid or
    /// uniformly scaled).
    pub to_ground: Mat4,
    /// 0 leaves the pose bit for bit, 1 places the feet fully. Clamped to 0..=1.
    pub weight: f32,
    /// The largest tilt of a foot toward the ground's normal, radians.
    pub max_tilt: f32,
    /// The furthest the pelvis may be lowered, model-space units.
    pub max_pelvis_drop: f32,
    /// How far a leg may extend to reach, as a fraction of its length (a leg that is
    /// extended further in the animation may stay so).
    pub reach: f32,
}

impl Placement {
    /// Full weight, feet tilted up to 40 degrees, pelvis lowered at most `max_pelvis_drop`,
    /// legs extended up to 99.5 % of their length.
    pub fn new(to_ground: Mat4, max_pelvis_drop: f32) -> Self {
        Placement {
            to_ground,
            weight: 1.0,
            max_tilt: 40f32.to_radians(),
            max_pelvis_drop,
            reach: 0.995,
        }
    }
}

/// What foot placement did.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct FeetReport {
    /// How far the pelvis went down (model-space units, along -up).
    pub pelvis_drop: f32,
    /// How many feet found ground below them.
    pub grounded: usize,
    /// How many feet reached their target (the rest could not, even with the pelvis
    /// lowered as far as allowed).
    pub reached: usize,
}

/// Most legs a character may have: the targets live on the stack.
pub const MAX_LEGS: usize = 8;

/// Places the feet of `feet` on `ground`: moves the pelvis and the legs' joints of `local`
/// and updates `model` (every joint from the first one moved on, so toes and anything
/// below follow). `contacts[i]` (0..=1) is how much leg `i`'s foot is in contact in the
/// clip: its tilt to the ground is weighted by it.
///
/// ```
/// # use skelett::*;
/// # use skelett::ik::*;
/// # use glam::{Mat4, Quat, Vec3};
/// // Hips 1.9 above the floor, one leg: knee 1 below (a bit forward), ankle 1 below it,
/// // the sole 0.1 under the ankle.
/// let j = |name: &str, parent, t: Vec3| RawJoint { name: name.into(), parent,
///     rest: Transform::new(t, Quat::IDENTITY, Vec3::ONE) };
/// let skeleton = RawSkeleton { joints: vec![
///     j("hips", None, Vec3::new(0.0, 2.0, 0.0)),
///     j("knee", Some(0), Vec3::new(0.0, -0.99, 0.1)),
///     j("ankle", Some(1), Vec3::new(0.0, -0.9, -0.1)),
/// ], ..Default::default() }.build()?;
/// let chain = TwoBoneChain::new(&skeleton, [0, 1, 2])?;
/// let leg = Leg::from_rest(&skeleton, chain, 2, Vec3::Y)?;
/// let feet = Feet::new(&skeleton, vec![leg], Some(0), Vec3::Y)?;
/// let mut pose = Pose::rest(&skeleton);
/// let mut model = vec![Mat4::IDENTITY; 3];
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// // A floor 0.3 higher than the one the pose was authored on.
/// let ground = Plane::new(Vec3::new(0.0, 0.3, 0.0), Vec3::Y)?;
/// place_feet(&feet, &Placement::new(Mat4::IDENTITY, 0.5), &[1.0], &ground,
///            &skeleton, &mut pose, &mut model)?;
/// let sole = model[2].transform_point3(leg.sole());
/// assert!((sole.y - 0.3).abs() < 1e-4);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if `contacts` has fewer entries than there are legs or `local` or
/// `model` do not reach the joints; [`Error::NotFinite`] for a NaN or infinite request or
/// model matrix; [`Error::BadGround`] if the ground answers a NaN point or a zero normal.
/// Nothing is written on an error.
#[allow(clippy::too_many_arguments)]
pub fn place_feet<G: Ground + ?Sized>(
    feet: &Feet,
    placement: &Placement,
    contacts: &[f32],
    ground: &G,
    skeleton: &Skeleton,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<FeetReport, Error> {
    let n = feet.legs.len();
    check_len("contacts", n, contacts.len())?;
    check_len("local", skeleton.len().max(feet.len), local.len())?;
    check_len("model", skeleton.len().max(feet.len), model.len())?;
    if !placement.to_ground.is_finite() {
        return Err(Error::NotFinite {
            what: "model-to-ground transform",
        });
    }
    finite("placement weight", placement.weight)?;
    finite("placement tilt limit", placement.max_tilt)?;
    finite("placement pelvis drop", placement.max_pelvis_drop)?;
    finite("placement reach", placement.reach)?;
    for c in &contacts[..n] {
        finite("foot contact", *c)?;
    }
    let weight = placement.weight.clamp(0.0, 1.0);
    if weight == 0.0 || n == 0 {
        return Ok(FeetReport::default());
    }
    for leg in &feet.legs {
        for j in leg.chain.joints().into_iter().chain([leg.foot]) {
            if !model[j as usize].is_finite() {
                return Err(Error::NotFinite {
                    what: "legs' model matrices",
                });
            }
        }
    }
    let to_ground = placement.to_ground;
    let to_model = to_ground.inverse();
    if !to_model.is_finite() {
        return Err(Error::NotFinite {
            what: "inverse of the model-to-ground transform",
        });
    }
    let up_g = to_ground
        .transform_vector3(feet.up)
        .try_normalize()
        .ok_or(Error::NotFinite {
            what: "up axis in ground space",
        })?;
    let floor_g = to_ground.w_axis.truncate();

    // 1. Each foot's target: where its sole goes and how it tilts (model space).
    let mut end_target = [Vec3::ZERO; MAX_LEGS];
    let mut tilt = [Quat::IDENTITY; MAX_LEGS];
    let mut grounded = [false; MAX_LEGS];
    // The chain's end and the foot's matrix before the pelvis moves: a foot outside the
    // chain keeps its place relative to the end.
    let mut end_before = [Vec3::ZERO; MAX_LEGS];
    let mut foot_before = [Mat4::IDENTITY; MAX_LEGS];
    for (i, leg) in feet.legs.iter().enumerate() {
        let f = model[leg.foot as usize];
        let s = to_ground.transform_point3(f.transform_point3(leg.sole));
        let hip =
            to_ground.transform_point3(model[leg.chain.joints()[0] as usize].w_axis.truncate());
        let lift = (s - floor_g).dot(up_g);
        let above = (hip - s).dot(up_g).max(0.0);
        let length = leg_length(&leg.chain, model) * to_ground.transform_vector3(feet.up).length();
        let Some(hit) = ground.cast(
            s + up_g * above,
            -up_g,
            above + lift.max(0.0) + 2.0 * length,
        ) else {
            continue;
        };
        if !hit.point.is_finite() {
            return Err(Error::BadGround {
                what: "a NaN or infinite point",
            });
        }
        let normal =
            hit.normal
                .try_normalize()
                .filter(|v| v.is_finite())
                .ok_or(Error::BadGround {
                    what: "a zero, NaN or infinite normal",
                })?;
        let normal = if normal.dot(up_g) < 0.0 {
            -normal
        } else {
            normal
        };
        grounded[i] = true;
        // In contact the sole goes onto the ground; in the air it keeps its lift above it.
        let contact = contacts[i].clamp(0.0, 1.0);
        let target_g = hit.point + up_g * (lift * (1.0 - contact));
        let (c, _) = limited(arc(up_g, normal), placement.max_tilt);
        let c = weighted(c, contact);
        // The tilt in model space: the same angle about the axis carried back.
        let axis = to_model.transform_vector3(Vec3::new(c.x, c.y, c.z));
        let len = Vec3::new(c.x, c.y, c.z).length();
        let c_model = match axis.try_normalize() {
            Some(a) if len > 0.0 => Quat::from_xyzw(a.x * len, a.y * len, a.z * len, c.w),
            _ => Quat::IDENTITY,
        };
        let s_model = f.transform_point3(leg.sole);
        let sole_new = to_model.transform_point3(target_g);
        // The chain's end turns with the foot about the sole point.
        let end = end_point(&leg.chain, model);
        end_before[i] = end;
        foot_before[i] = f;
        end_target[i] = sole_new + c_model * (end - s_model);
        tilt[i] = c_model;
        // Weighted: part of the way.
        end_target[i] = end.lerp(end_target[i], weight);
        tilt[i] = weighted(tilt[i], weight);
    }

    // 2. The pelvis, lowered as far as the farthest leg needs.
    let mut drop = 0.0f32;
    if let Some(pelvis) = feet.pelvis {
        for (i, leg) in feet.legs.iter().enumerate() {
            if !grounded[i] {
                continue;
            }
            let hip = model[leg.chain.joints()[0] as usize].w_axis.truncate();
            let animated = hip.distance(end_point(&leg.chain, model));
            let reach = (placement.reach.max(0.0) * leg_length(&leg.chain, model)).max(animated);
            drop = drop.max(drop_to_reach(hip, end_target[i], feet.up, reach));
        }
        drop = drop.min(placement.max_pelvis_drop.max(0.0));
        if drop > 0.0 {
            let offset = -feet.up * drop;
            let p = pelvis as usize;
            let delta = match skeleton.parent(pelvis) {
                Some(parent) => model[parent as usize].inverse().transform_vector3(offset),
                None => offset,
            };
            if delta.is_finite() {
                local[p].translation += delta;
                local_to_model(skeleton, local, pelvis, model)?;
            }
        }
    }

    // 3. Each leg to its target.
    let mut reached = 0;
    for (i, leg) in feet.legs.iter().enumerate() {
        if grounded[i]
            && move_leg(
                leg,
                end_target[i],
                tilt[i],
                (end_before[i], foot_before[i]),
                skeleton,
                local,
                model,
            )?
        {
            reached += 1;
        }
    }
    local_to_model(skeleton, local, feet.first, model)?;
    Ok(FeetReport {
        pelvis_drop: drop,
        grounded: grounded[..n].iter().filter(|g| **g).count(),
        reached,
    })
}

/// Brings `leg`'s chain end to `end_target` by two-bone IK, keeping the knee on the side the
/// animation bends it to (the leg's pole decides for a straight leg), and turns the foot by
/// `tilt` (model space) about the chain's end. A foot outside the chain (a control joint
/// elsewhere in the hierarchy) follows the chain's end rigidly from where it was relative to
/// `before` (the chain's end point and the foot's model matrix before anything moved).
/// Updates the chain's model matrices; the caller reruns `local_to_model` for what hangs
/// below. Returns whether the end reached its target.
fn move_leg(
    leg: &Leg,
    end_target: Vec3,
    tilt: Quat,
    (end_before, foot_before): (Vec3, Mat4),
    skeleton: &Skeleton,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<bool, Error> {
    let [s, m, e] = leg.chain.joints();
    let (hip, knee) = (
        model[s as usize].w_axis.truncate(),
        model[m as usize].w_axis.truncate(),
    );
    let end = end_point(&leg.chain, model);
    let foot = leg.foot as usize;
    let foot_model = model[foot];
    let separate = leg.chain.tip().is_some() || e != leg.foot;
    let mut ik = TwoBone::new(end_target, Vec3::ZERO);
    // Keep the animated bend plane: the knee stays on the side it is on (the knee's offset
    // from the hip-to-end line, across that line).
    let line = (end - hip).normalize_or_zero();
    let across = knee - hip;
    let hint = leg.pole * (0.05 * leg_length(&leg.chain, model));
    ik.bend = Bend::Pole(across - line * across.dot(line) + hint);
    if !separate {
        ik.end_rotation = Some(tilt * rotation_of(&foot_model));
    }
    let report = two_bone(&leg.chain, &ik, local, model)?;
    if separate {
        // A foot outside the chain follows the chain's end rigidly, tilted.
        let new_end = end_point(&leg.chain, model);
        let moved = Mat4::from_translation(new_end)
            * Mat4::from_quat(tilt)
            * Mat4::from_translation(-end_before)
            * foot_before;
        let parent = match skeleton.parent(leg.foot) {
            Some(p) => model[p as usize],
            None => Mat4::IDENTITY,
        };
        let l = Transform::from_mat4(&(parent.inverse() * moved));
        if l.is_finite() {
            local[foot] = l;
        }
    }
    Ok(report.reached)
}

/// Where one leg's sole should be, for [`pin_feet`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pin {
    /// The model-space point for the leg's sole ([`Leg::sole`]).
    pub sole: Vec3,
    /// 0 leaves the leg bit for bit, 1 puts the sole on `sole`; values between move the
    /// sole part of the way. Clamped to 0..=1.
    pub weight: f32,
}

/// Pins the feet of `feet` to points: moves each leg whose pin has weight by two-bone IK so
/// that its sole goes to the pin, the foot keeping its model-space rotation and the pelvis
/// its place; then updates `model` from the first joint moved on. What keeps a planted foot
/// from sliding when a clip is played on a character of other proportions (the retargeting
/// bake's foot pass), or holds a foot on a pedal or a ladder rung. Returns how many legs with
/// weight reached their pin.
///
/// ```
/// # use skelett::*;
/// # use skelett::ik::*;
/// # use glam::{Mat4, Quat, Vec3};
/// let j = |name: &str, parent, t: Vec3| RawJoint { name: name.into(), parent,
///     rest: Transform::new(t, Quat::IDENTITY, Vec3::ONE) };
/// let skeleton = RawSkeleton { joints: vec![
///     j("hips", None, Vec3::new(0.0, 2.0, 0.0)),
///     j("knee", Some(0), Vec3::new(0.0, -1.0, 0.05)),
///     j("ankle", Some(1), Vec3::new(0.0, -0.9, -0.05)),
/// ], ..Default::default() }.build()?;
/// let leg = Leg::new(&skeleton, TwoBoneChain::new(&skeleton, [0, 1, 2])?, 2, Vec3::ZERO)?;
/// let feet = Feet::new(&skeleton, vec![leg], None, Vec3::Y)?;
/// let mut pose = Pose::rest(&skeleton);
/// let mut model = vec![Mat4::IDENTITY; 3];
/// local_to_model(&skeleton, &pose, 0, &mut model)?;
/// // Hold the ankle 0.1 higher and 0.2 further forward than the pose puts it.
/// let pin = Pin { sole: Vec3::new(0.0, 0.2, 0.2), weight: 1.0 };
/// assert_eq!(pin_feet(&feet, &[pin], &skeleton, &mut pose, &mut model)?, 1);
/// assert!(model[2].w_axis.truncate().distance(pin.sole) < 1e-4);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if `pins` has fewer entries than there are legs or `local` or `model`
/// do not reach the joints; [`Error::NotFinite`] for a NaN or infinite pin or model matrix.
/// Nothing is written on an error.
pub fn pin_feet(
    feet: &Feet,
    pins: &[Pin],
    skeleton: &Skeleton,
    local: &mut [Transform],
    model: &mut [Mat4],
) -> Result<usize, Error> {
    let n = feet.legs.len();
    check_len("pins", n, pins.len())?;
    check_len("local", skeleton.len().max(feet.len), local.len())?;
    check_len("model", skeleton.len().max(feet.len), model.len())?;
    for (pin, leg) in pins.iter().zip(&feet.legs) {
        finite("pin weight", pin.weight)?;
        super::finite_vec("pin", pin.sole)?;
        for j in leg.chain.joints().into_iter().chain([leg.foot]) {
            if !model[j as usize].is_finite() {
                return Err(Error::NotFinite {
                    what: "legs' model matrices",
                });
            }
        }
    }
    let mut reached = 0;
    let mut moved = false;
    for (leg, pin) in feet.legs.iter().zip(pins) {
        let weight = pin.weight.clamp(0.0, 1.0);
        if weight == 0.0 {
            continue;
        }
        let end = end_point(&leg.chain, model);
        let foot = model[leg.foot as usize];
        let sole = foot.transform_point3(leg.sole);
        let target = end + (pin.sole - sole) * weight;
        if move_leg(
            leg,
            target,
            Quat::IDENTITY,
            (end, foot),
            skeleton,
            local,
            model,
        )? {
            reached += 1;
        }
        moved = true;
    }
    if moved {
        local_to_model(skeleton, local, feet.first, model)?;
    }
    Ok(reached)
}

/// How far a hip at `hip` must go down along `-up` for a leg of `reach` to get its end to
/// `end_target` (0 when it already reaches).
pub(crate) fn drop_to_reach(hip: Vec3, end_target: Vec3, up: Vec3, reach: f32) -> f32 {
    let v = hip - end_target;
    let b = v.dot(up);
    let c = v.length_squared() - reach * reach;
    if c <= 0.0 || !c.is_finite() {
        return 0.0;
    }
    let disc = b * b - c;
    if disc >= 0.0 {
        b - disc.sqrt()
    } else {
        b
    }
}

/// The chain's end point: its end joint, or its tip.
pub(crate) fn end_point(chain: &TwoBoneChain, model: &[Mat4]) -> Vec3 {
    let [_, m, e] = chain.joints();
    match chain.tip() {
        Some(tip) => model[m as usize].transform_point3(tip),
        None => model[e as usize].w_axis.truncate(),
    }
}

/// The chain's two bone lengths, summed.
fn leg_length(chain: &TwoBoneChain, model: &[Mat4]) -> f32 {
    let [s, m, _] = chain.joints();
    let a = model[s as usize].w_axis.truncate();
    let b = model[m as usize].w_axis.truncate();
    a.distance(b) + b.distance(end_point(chain, model))
}

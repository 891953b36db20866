//! Poses: one local transform per joint, owned by a character, and the stateless functions
//! that combine them.
//!
//! ```text
//! sample() ──▶ poses ──blend()──────────▶ pose   weighted, normalised per joint (+ masks)
//!                    ──blend_override()──▶ pose   a layer replacing others on its joints
//!                    ──apply_additive()──▶ pose   a delta (make_additive) on top, ± weight
//!                                           └──▶ local_to_model()
//! ```
//!
//! A [`Pose`] is a plain `Vec<Transform>` with a constructor from a skeleton's rest pose;
//! every function takes `&[Transform]`/`&mut [Transform]`, so any slice works as well. They
//! work on SRT components, never on matrices, and allocate nothing; the
//! [`crate::animator::Animator`] is built from them, and they serve engines that run their own
//! controllers (like ozz-animation's blending job).
//!
//! On CPUs with AVX and FMA the unmasked blend (every input weighted alike on all joints,
//! the animator's cross-fades and layers) works on eight joints at a time (`avx.rs`, chosen
//! at run time; the `scalar` feature keeps the portable path).
//!
//! [`SoaPose`] (`soa.rs`) is the same pose in structure-of-arrays blocks of eight joints,
//! for engines that run their own jobs: [`blend_soa`] gives [`blend`]'s bits without
//! transposing rotations in and out of registers (`soa_avx.rs`); [`crate::sample_soa`] fills
//! such poses and [`crate::local_to_model_soa`] reads them.

use std::ops::{Deref, DerefMut};

use glam::{Quat, Vec3, Vec4};

mod avx;
mod soa;
mod soa_avx;

pub use soa::{blend_soa, SoaBlendInput, SoaBlock, SoaPose, SOA_LANES};
pub(crate) use soa::{
    blend_soa_over_rows, blend_soa_to_rows, fill_blocks, lerp_soa, normalise_rotations_soa,
};

use crate::error::check_len;
use crate::transform::nlerp;
use crate::{Error, Skeleton, Transform};

/// Local joint transforms of one skeleton, in joint order.
///
/// ```
/// # use skelett::*;
/// # let skeleton = RawSkeleton { joints: vec![RawJoint { name: "j".into(), parent: None,
/// #     rest: Transform::IDENTITY }], ..Default::default() }.build().unwrap();
/// let pose = Pose::rest(&skeleton);
/// assert_eq!(pose.len(), skeleton.len());
/// assert_eq!(&pose[..], skeleton.rest_pose());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pose(pub Vec<Transform>);

impl Pose {
    /// The skeleton's rest pose.
    pub fn rest(skeleton: &Skeleton) -> Self {
        Self(skeleton.rest_pose().to_vec())
    }

    /// `n` identity transforms.
    pub fn identity(n: usize) -> Self {
        Self(vec![Transform::IDENTITY; n])
    }
}

impl Deref for Pose {
    type Target = [Transform];
    fn deref(&self) -> &[Transform] {
        &self.0
    }
}

impl DerefMut for Pose {
    fn deref_mut(&mut self) -> &mut [Transform] {
        &mut self.0
    }
}

/// Per-joint weights in 0..=1 that limit a layer or blend to part of the skeleton.
///
/// ```
/// # use skelett::*;
/// # use glam::Vec3;
/// # let skeleton = RawSkeleton { joints: vec![
/// #     RawJoint { name: "hips".into(), parent: None, rest: Transform::IDENTITY },
/// #     RawJoint { name: "spine".into(), parent: Some(0), rest: Transform::IDENTITY },
/// #     RawJoint { name: "arm".into(), parent: Some(1), rest: Transform::IDENTITY },
/// #     RawJoint { name: "leg".into(), parent: Some(0), rest: Transform::IDENTITY },
/// # ], ..Default::default() }.build().unwrap();
/// let upper = JointMask::subtree(&skeleton, "spine").unwrap(); // spine and arm
/// assert_eq!(upper.weights(), &[0.0, 1.0, 1.0, 0.0]);
/// ```
///
/// A mask also weighs the skeleton's morph channels ([`crate::Skeleton::with_morph_channels`]):
/// [`JointMask::uniform`] covers them with its weight, masks built from joint names cover none
/// of them until [`JointMask::set_morph_channels`] names them (a face layer: no joints, the
/// face's channels; an upper-body layer leaves the face to the layers below).
#[derive(Clone, Debug, PartialEq)]
pub struct JointMask(Vec<f32>, Vec<f32>);

impl JointMask {
    /// Every joint weighted `w`.
    pub fn uniform(skeleton: &Skeleton, w: f32) -> Self {
        let w = if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) };
        Self(
            vec![w; skeleton.len()],
            vec![w; skeleton.morph_channel_count()],
        )
    }

    /// Weight 1 on the named joints, 0 elsewhere; `None` if a name is not in the skeleton.
    pub fn joints(skeleton: &Skeleton, names: &[&str]) -> Option<Self> {
        let mut m = vec![0.0; skeleton.len()];
        for n in names {
            m[skeleton.find(n)? as usize] = 1.0;
        }
        Some(Self(m, vec![0.0; skeleton.morph_channel_count()]))
    }

    /// Weight 1 on the sub-tree rooted at the named joint ("upper body from Spine").
    pub fn subtree(skeleton: &Skeleton, root: &str) -> Option<Self> {
        let mut m = vec![0.0; skeleton.len()];
        for j in skeleton.subtree(skeleton.find(root)?) {
            m[j as usize] = 1.0;
        }
        Some(Self(m, vec![0.0; skeleton.morph_channel_count()]))
    }

    /// Weight 1 on the joints `clip` moves, 0 elsewhere: a *dominant* layer (RiTE's term)
    /// that overrides exactly what its clip animates and leaves every other joint to the
    /// layers below, with no mask built by hand. A joint counts when one of its channels has
    /// keys, or when the clip holds it constant away from the skeleton's rest pose (what a
    /// built clip keeps of a constant channel; one that holds the rest pose exactly cannot
    /// be told from no channel, and either way the joint is at rest). Morph channels the
    /// clip has tracks for get weight 1 too.
    ///
    /// ```
    /// # use skelett::*;
    /// # use glam::{Quat, Vec3};
    /// let skeleton = RawSkeleton { joints: ["hips", "arm", "hand"].iter().enumerate().map(|(i, n)|
    ///     RawJoint { name: n.to_string(), parent: i.checked_sub(1), rest: Transform::IDENTITY })
    ///     .collect(), ..Default::default() }.build()?;
    /// let wave = RawClip { name: "wave".into(), start: 0.0, duration: 1.0, channels: vec![RawChannel {
    ///     joint: "arm".into(), target: Target::Rotation, interpolation: Interpolation::Linear,
    ///     times: vec![0.0, 1.0], values: RawValues::Quat(vec![Quat::IDENTITY, Quat::from_rotation_z(1.0)]) }] }
    ///     .build(&skeleton)?;
    /// let mask = JointMask::animated_by(&skeleton, &wave)?;
    /// assert_eq!(mask.weights(), [0.0, 1.0, 0.0]); // the arm only, not the hand below it
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::SkeletonMismatch`] if the clip was built for another joint count.
    pub fn animated_by(skeleton: &Skeleton, clip: &crate::Clip) -> Result<Self, Error> {
        if clip.joint_count() != skeleton.len() {
            return Err(Error::SkeletonMismatch {
                clip: clip.joint_count(),
                skeleton: skeleton.len(),
            });
        }
        let mut m = vec![0.0; skeleton.len()];
        for (j, _, _, _) in clip.channels() {
            m[j as usize] = 1.0;
        }
        for (j, (base, rest)) in clip
            .base_pose()
            .iter()
            .zip(skeleton.rest_pose())
            .enumerate()
        {
            if base != rest {
                m[j] = 1.0;
            }
        }
        let mut morph = vec![0.0; skeleton.morph_channel_count()];
        for t in clip.morph_tracks() {
            if let Some(w) = morph.get_mut(t.channel) {
                *w = 1.0;
            }
        }
        Ok(Self(m, morph))
    }

    /// A mask from explicit weights (clamped to 0..=1; NaN becomes 0).
    /// Morph channels get weight 0 (see [`JointMask::set_morph_weights`]).
    pub fn from_weights(weights: Vec<f32>) -> Self {
        Self(
            weights
                .into_iter()
                .map(|w| if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) })
                .collect(),
            Vec::new(),
        )
    }

    /// Sets the weight of the named morph channels to `w`; `None` if a name is not one of
    /// the skeleton's morph channels.
    ///
    /// ```
    /// # use skelett::*;
    /// let skeleton = RawSkeleton { joints: vec![RawJoint { name: "head".into(), parent: None,
    ///     rest: Transform::IDENTITY }], ..Default::default() }.build()?
    ///     .with_morph_channels(vec![MorphChannel { name: "blink".into(), rest: 0.0 },
    ///                               MorphChannel { name: "smile".into(), rest: 0.0 }])?;
    /// // A face layer: no joints, only the smile.
    /// let mut face = JointMask::uniform(&skeleton, 0.0);
    /// face.set_morph_channels(&skeleton, &["smile"], 1.0).unwrap();
    /// assert_eq!(face.morph_weights(), [0.0, 1.0]);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn set_morph_channels<S: AsRef<str>>(
        &mut self,
        skeleton: &Skeleton,
        names: &[S],
        w: f32,
    ) -> Option<()> {
        let w = if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) };
        self.1.resize(skeleton.morph_channel_count(), 0.0);
        for n in names {
            let c = skeleton.find_morph_channel(n.as_ref())?;
            self.1[c] = w;
        }
        Some(())
    }

    /// Sets every morph channel's weight (clamped to 0..=1; NaN becomes 0).
    pub fn set_morph_weights(&mut self, weights: Vec<f32>) {
        self.1 = weights
            .into_iter()
            .map(|w| if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) })
            .collect();
    }

    /// The morph channels' weights (missing entries count as 0).
    pub fn morph_weights(&self) -> &[f32] {
        &self.1
    }

    /// Sets the weight of the sub-tree rooted at `root` to `w` (for masks built in steps:
    /// "the spine's sub-tree but not the left arm's").
    pub fn set_subtree(&mut self, skeleton: &Skeleton, root: &str, w: f32) -> Option<()> {
        let w = if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) };
        for j in skeleton.subtree(skeleton.find(root)?) {
            // A mask made for a smaller skeleton is left alone past its end.
            if let Some(x) = self.0.get_mut(j as usize) {
                *x = w;
            }
        }
        Some(())
    }

    /// A mask of whole sub-trees (`subtree`) and single joints (`joints`), with sub-trees
    /// taken out again (`exclude`), all by name: the masks of `play` scripts and animation
    /// graphs.
    ///
    /// ```
    /// # use skelett::*;
    /// # let sk = RawSkeleton { joints: vec![
    /// #     RawJoint { name: "hips".into(), parent: None, rest: Transform::IDENTITY },
    /// #     RawJoint { name: "spine".into(), parent: Some(0), rest: Transform::IDENTITY },
    /// #     RawJoint { name: "head".into(), parent: Some(1), rest: Transform::IDENTITY }],
    /// #     ..Default::default() }.build()?;
    /// let m = JointMask::from_names(&sk, &["spine"], &["hips"], &["head"]).unwrap();
    /// assert_eq!(m.weights(), [1.0, 1.0, 0.0]);
    /// let e = JointMask::from_names(&sk, &["chest"], &[], &[]).unwrap_err();
    /// assert_eq!(e, ("subtree", 0));
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// For a name the skeleton lacks: which list (`"subtree"`, `"joints"`, `"exclude"`) and
    /// its index there.
    pub fn from_names<S: AsRef<str>>(
        skeleton: &Skeleton,
        subtree: &[S],
        joints: &[S],
        exclude: &[S],
    ) -> Result<Self, (&'static str, usize)> {
        let mut m = Self::uniform(skeleton, 0.0);
        for (i, n) in subtree.iter().enumerate() {
            m.set_subtree(skeleton, n.as_ref(), 1.0)
                .ok_or(("subtree", i))?;
        }
        for (i, n) in joints.iter().enumerate() {
            let j = skeleton.find(n.as_ref()).ok_or(("joints", i))?;
            m.0[j as usize] = 1.0;
        }
        for (i, n) in exclude.iter().enumerate() {
            m.set_subtree(skeleton, n.as_ref(), 0.0)
                .ok_or(("exclude", i))?;
        }
        Ok(m)
    }

    /// The weights, one per joint.
    pub fn weights(&self) -> &[f32] {
        &self.0
    }
}

/// One input of [`blend`]: a pose, its weight, and an optional per-joint mask.
#[derive(Clone, Copy, Debug)]
pub struct BlendInput<'a> {
    /// Local transforms, one per joint.
    pub pose: &'a [Transform],
    /// Weight of the whole pose (negative weights count as 0).
    pub weight: f32,
    /// Per-joint weights multiplied with `weight`.
    pub mask: Option<&'a [f32]>,
}

/// Weighted blend of any number of poses, normalised per joint.
///
/// For each joint the effective weights (`weight * mask[j]`) are normalised to sum to 1;
/// translations and scales are averaged, rotations accumulated on the shortest path (each
/// aligned with the first contributor's hemisphere) and re-normalised. Where every weight of
/// a joint is zero, the joint takes `rest`.
///
/// ```
/// # use skelett::*;
/// # use glam::{Quat, Vec3};
/// let a = [Transform::new(Vec3::ZERO, Quat::IDENTITY, Vec3::ONE)];
/// let b = [Transform::new(Vec3::X, Quat::from_rotation_y(1.0), Vec3::ONE)];
/// let mut out = [Transform::IDENTITY];
/// blend(&[BlendInput { pose: &a, weight: 1.0, mask: None },
///         BlendInput { pose: &b, weight: 3.0, mask: None }], &a, &mut out)?;
/// assert!((out[0].translation - Vec3::new(0.75, 0.0, 0.0)).length() < 1e-6);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if a pose, a mask or `rest` is shorter than `out`; nothing is written.
pub fn blend(
    inputs: &[BlendInput],
    rest: &[Transform],
    out: &mut [Transform],
) -> Result<(), Error> {
    let n = out.len();
    check_len("rest", n, rest.len())?;
    for i in inputs {
        check_len("blend input pose", n, i.pose.len())?;
        if let Some(m) = i.mask {
            check_len("blend input mask", n, m.len())?;
        }
    }
    if inputs.len() <= 8 && inputs.iter().all(|i| i.mask.is_none()) {
        blend_unmasked(inputs, rest, out);
        return Ok(());
    }
    for j in 0..n {
        // The joint's weights (infinite ones as the largest finite weight), summed first so
        // that each is divided by the sum before it multiplies anything: large weights then
        // overflow nothing. A sum that overflows is taken again at 2^-64.
        let weight = |i: &BlendInput| {
            let w = i.weight.max(0.0) * i.mask.map_or(1.0, |m| m[j]);
            if w > 0.0 {
                w.min(f32::MAX)
            } else {
                0.0
            }
        };
        let mut wsum: f32 = inputs.iter().map(weight).sum();
        let mut down = 1.0;
        if wsum == f32::INFINITY {
            down = DOWN;
            wsum = inputs.iter().map(|i| weight(i) * DOWN).sum();
        }
        if wsum <= 0.0 {
            out[j] = rest[j];
            continue;
        }
        let mut t = Vec3::ZERO;
        let mut s = Vec3::ZERO;
        let mut r = Vec4::ZERO;
        // The first contributor's rotation, scaled (see `same_side`).
        let mut first: Option<Vec4> = None;
        for i in inputs {
            let w = weight(i);
            if w <= 0.0 {
                continue;
            }
            let w = w * down / wsum;
            let x = &i.pose[j];
            let q = Vec4::from(x.rotation);
            let reference = *first.get_or_insert(q * SCALE);
            t += x.translation * w;
            s += x.scale * w;
            r += if same_side(q, reference) { q } else { -q } * w;
        }
        out[j] = Transform {
            translation: t,
            rotation: unit_or_identity(r),
            scale: s,
        };
    }
    Ok(())
}

/// Weights whose sum overflows are taken at this scale (2^-64): eight weights of up to
/// `f32::MAX` then sum to a finite number.
const DOWN: f32 = 1.0 / (1u64 << 63) as f32 / 2.0;

/// The sum of `w` (positive, finite weights), or of `w` scaled down by [`DOWN`] where that
/// overflows (the weights are then scaled too); `None` where there is no weight.
#[inline]
fn weight_total(w: &mut [f32]) -> Option<f32> {
    let total: f32 = w.iter().sum();
    if total == f32::INFINITY {
        for x in w.iter_mut() {
            *x *= DOWN;
        }
        return Some(w.iter().sum());
    }
    (total > 0.0).then_some(total)
}

/// Blended rotations' products are taken at a 2^60 scale: rotation components of 1e-20,
/// which exporters write for zero, square to subnormal floats that cost the CPU a hundred
/// cycles each (blending Fox's poses ran at 12 ns per joint). Scaled by a power of two, the
/// products are exact multiples of the unscaled ones and stay normal; unit components give at
/// most 2^122, far from overflow.
const SCALE: f32 = (1u64 << 60) as f32;

/// Whether `q` lies on the side of the 4D hemisphere of the reference whose
/// `reference * SCALE` is `scaled` (their dot is not negative; one operand scaled is enough
/// to keep the products normal).
#[inline(always)]
fn same_side(q: Vec4, scaled: Vec4) -> bool {
    q.dot(scaled) >= 0.0
}

/// `r` normalised as a rotation, identity where it has no length: what
/// `Quat::from_vec4(r.normalize_or(Vec4::W))` gives, bit for bit, without subnormal products.
#[inline(always)]
fn unit_or_identity(r: Vec4) -> Quat {
    let scaled = r * SCALE;
    let rcp = SCALE / scaled.dot(scaled).sqrt();
    if rcp.is_finite() && rcp > 0.0 {
        Quat::from_vec4(r * rcp)
    } else {
        Quat::IDENTITY
    }
}

/// [`blend`] without masks and with at most 8 inputs: the weights are the same for every
/// joint, so they are normalised once.
fn blend_unmasked(inputs: &[BlendInput], rest: &[Transform], out: &mut [Transform]) {
    let mut w = [0.0f32; 8];
    let mut poses: [&[Transform]; 8] = [&[]; 8];
    let mut m = 0;
    for i in inputs {
        if i.weight > 0.0 && m < 8 {
            w[m] = i.weight.min(f32::MAX);
            poses[m] = i.pose;
            m += 1;
        }
    }
    let Some(total) = weight_total(&mut w[..m]) else {
        out.copy_from_slice(&rest[..out.len()]);
        return;
    };
    for x in &mut w[..m] {
        *x /= total;
    }
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if avx::available() {
        // SAFETY: AVX and FMA were just detected; `poses[..m]` and `w[..m]` pair up (1 to 8
        // of them), and `blend` checked every pose's length against `out`.
        // `avx_blend_follows_the_portable_one` runs it.
        unsafe { avx::blend_unmasked(&poses[..m], &w[..m], out) };
        return;
    }
    portable_blend_unmasked(&poses[..m], &w[..m], out);
}

/// [`blend_unmasked`]'s loop with glam's arithmetic: `poses` and `w` pair up (normalised,
/// positive weights), every pose at least as long as `out`.
fn portable_blend_unmasked(poses: &[&[Transform]], w: &[f32], out: &mut [Transform]) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = blend_joint(poses.len(), |k| poses[k][j], w);
    }
}

/// One joint of the portable unmasked blend: the `m` inputs `x(0..m)` weighted by `w`
/// (normalised, positive), rotations on the first one's side, then normalised. Shared by the
/// slice and structure-of-arrays blends, so both give the same bits.
#[inline(always)]
fn blend_joint(m: usize, x: impl Fn(usize) -> Transform, w: &[f32]) -> Transform {
    let first = x(0);
    let reference = Vec4::from(first.rotation);
    let scaled = reference * SCALE;
    let mut t = first.translation * w[0];
    let mut s = first.scale * w[0];
    let mut r = reference * w[0];
    for (k, &wk) in w.iter().enumerate().take(m).skip(1) {
        let x = x(k);
        let q = Vec4::from(x.rotation);
        t += x.translation * wk;
        s += x.scale * wk;
        r += if same_side(q, scaled) { q } else { -q } * wk;
    }
    Transform {
        translation: t,
        rotation: unit_or_identity(r),
        scale: s,
    }
}

/// Override: moves `base` towards `over` by `weight * mask[j]` on each joint (the "dominant
/// animation" of the older articles: an upper-body wave over a walk). Rotations are nlerped
/// on the shortest path.
///
/// # Errors
/// [`Error::Length`] if `over` or the mask is shorter than `base`; nothing is written.
pub fn blend_override(
    base: &mut [Transform],
    over: &[Transform],
    weight: f32,
    mask: Option<&[f32]>,
) -> Result<(), Error> {
    let n = base.len();
    check_len("override pose", n, over.len())?;
    if let Some(m) = mask {
        check_len("override mask", n, m.len())?;
    }
    let weight = if weight.is_nan() {
        0.0
    } else {
        weight.clamp(0.0, 1.0)
    };
    for j in 0..n {
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w <= 0.0 {
            continue;
        }
        let (b, o) = (&mut base[j], &over[j]);
        if w >= 1.0 {
            *b = *o;
        } else {
            b.translation = b.translation.lerp(o.translation, w);
            b.scale = b.scale.lerp(o.scale, w);
            b.rotation = nlerp(b.rotation, o.rotation, w);
        }
    }
    Ok(())
}

/// The additive delta that takes `reference` to `pose`, per joint: translation difference,
/// rotation `reference⁻¹ * pose` (in the joint's local frame), scale ratio.
///
/// [`apply_additive`] with weight 1 on `reference` gives `pose` back.
///
/// # Errors
/// [`Error::Length`] if `reference` or `out` is shorter than `pose`.
pub fn make_additive(
    pose: &[Transform],
    reference: &[Transform],
    out: &mut [Transform],
) -> Result<(), Error> {
    let n = pose.len();
    check_len("additive reference", n, reference.len())?;
    check_len("additive output", n, out.len())?;
    for j in 0..n {
        out[j] = additive_delta(&pose[j], &reference[j]);
    }
    Ok(())
}

/// The additive delta of one joint (see [`make_additive`]).
#[inline]
pub fn additive_delta(pose: &Transform, reference: &Transform) -> Transform {
    let safe = |v: f32| if v.abs() > f32::MIN_POSITIVE { v } else { 1.0 };
    let rs = reference.scale;
    Transform {
        translation: pose.translation - reference.translation,
        rotation: (reference.rotation.conjugate() * pose.rotation).normalize(),
        scale: pose.scale / Vec3::new(safe(rs.x), safe(rs.y), safe(rs.z)),
    }
}

/// Applies an additive delta on top of `base` with `weight * mask[j]`: translation added,
/// rotation applied in the joint's local frame (`base * delta^w`), scale multiplied. Negative
/// weights subtract the delta (the "subtracted animation sets" of the older articles).
///
/// # Errors
/// [`Error::Length`] if `delta` or the mask is shorter than `base`; nothing is written.
pub fn apply_additive(
    base: &mut [Transform],
    delta: &[Transform],
    weight: f32,
    mask: Option<&[f32]>,
) -> Result<(), Error> {
    let n = base.len();
    check_len("additive delta", n, delta.len())?;
    if let Some(m) = mask {
        check_len("additive mask", n, m.len())?;
    }
    let weight = if weight.is_finite() { weight } else { 0.0 };
    for j in 0..n {
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w == 0.0 || w.is_nan() {
            continue;
        }
        let (b, d) = (&mut base[j], &delta[j]);
        b.translation += d.translation * w;
        let dq = if w == 1.0 {
            d.rotation
        } else {
            // delta^|w| (nlerp from identity up to 1, the angle scaled beyond), inverted for
            // negative weights.
            let a = w.abs();
            let q = if a <= 1.0 {
                nlerp(Quat::IDENTITY, d.rotation, a)
            } else {
                pow_rotation(d.rotation, a)
            };
            if w < 0.0 {
                q.conjugate()
            } else {
                q
            }
        };
        b.rotation = (b.rotation * dq).normalize();
        let ds = if w >= 0.0 {
            Vec3::ONE.lerp(d.scale, w)
        } else {
            Vec3::ONE / Vec3::ONE.lerp(d.scale, -w)
        };
        b.scale *= ds;
    }
    Ok(())
}

/// `q^w` for a unit quaternion (rotation angle scaled by `w`).
fn pow_rotation(q: Quat, w: f32) -> Quat {
    let (axis, angle) = q.to_axis_angle();
    Quat::from_axis_angle(axis, angle * w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Masked blends (the per-joint path) with weights summing above 16 keep their rotation:
    /// the sum was normalised at the 2^60 scale before dividing by the weights, which
    /// squared to infinity and gave the identity.
    #[test]
    fn large_weights_keep_the_rotation() {
        let q = Quat::from_rotation_x(0.7);
        let a = [Transform::new(Vec3::X, q, Vec3::ONE); 3];
        let mask = [1.0f32; 3];
        let mut out = [Transform::IDENTITY; 3];
        let inputs = [
            BlendInput {
                pose: &a,
                weight: 20.0,
                mask: Some(&mask),
            },
            BlendInput {
                pose: &a,
                weight: 30.0,
                mask: None,
            },
        ];
        blend(&inputs, &a, &mut out).unwrap();
        for o in &out {
            assert!(o.rotation.angle_between(q) < 1e-5, "{o:?}");
            assert!((o.translation - Vec3::X).length() < 1e-6);
        }
    }

    proptest! {
        /// The scaled normalisation gives `normalize_or`'s bits, and the scaled side test
        /// the unscaled dot's sign, wherever the unscaled products are normal numbers.
        #[test]
        fn scaled_products_change_no_result(
            a in proptest::array::uniform4(-1.0f32..1.0),
            b in proptest::array::uniform4(-1.0f32..1.0),
        ) {
            let (a, b) = (Vec4::from_array(a), Vec4::from_array(b));
            prop_assume!(a.length_squared() > 1e-12);
            let want = Quat::from_vec4(a.normalize_or(Vec4::W));
            prop_assert_eq!(unit_or_identity(a).to_array(), want.to_array());
            let d = a.dot(b);
            prop_assume!(d.abs() > 1e-30);
            prop_assert_eq!(same_side(a, b * SCALE), d >= 0.0);
        }
    }

    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    fn transform() -> impl Strategy<Value = Transform> {
        (
            proptest::array::uniform3(-5.0f32..5.0),
            proptest::array::uniform4(-1.0f32..1.0),
            proptest::array::uniform3(0.1f32..3.0),
        )
            .prop_map(|(t, q, s)| {
                let q = glam::Vec4::from_array(q);
                let q = if q.length() > 1e-3 {
                    q.normalize()
                } else {
                    glam::Vec4::W
                };
                Transform::new(Vec3::from(t), Quat::from_vec4(q), Vec3::from(s))
            })
    }

    proptest! {
        /// The AVX blend (taken on CPUs with AVX and FMA) follows the portable one within
        /// 1e-6 per component (relative to the vectors' size), in blocks of eight joints
        /// (a last one overlapping the one before) and one at a time in poses shorter than
        /// eight, for 1 to 8 inputs with any
        /// positive weights and rotations on either side of the first one's; rotations
        /// without length blend to the identity.
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        #[test]
        fn avx_blend_follows_the_portable_one(
            poses in proptest::collection::vec(proptest::collection::vec(transform(), 19), 1..9),
            weights in proptest::collection::vec(0.01f32..4.0, 8),
            cancel in any::<bool>(),
            len in prop::sample::select(vec![5usize, 8, 9, 16, 19]),
        ) {
            prop_assume!(avx::available());
            let mut poses = poses;
            // 8 and 16 joints: whole blocks; 9 and 19: an overlapping last block; 5: one
            // joint at a time.
            if cancel {
                // Joints 3 (in the first block of eight) and 17 (after the blocks): no
                // rotation has any length, so the sum has none.
                for p in &mut poses {
                    p[3].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0);
                    p[17].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0);
                }
            }
            for p in &mut poses {
                p.truncate(len);
            }
            let m = poses.len();
            let w: Vec<f32> = weights[..m].to_vec();
            let total: f32 = w.iter().sum();
            let w: Vec<f32> = w.iter().map(|x| x / total).collect();
            let refs: Vec<&[Transform]> = poses.iter().map(|p| &p[..]).collect();
            let (mut a, mut b) = (vec![Transform::IDENTITY; len], vec![Transform::IDENTITY; len]);
            // SAFETY: AVX and FMA were just detected; poses and weights pair up, each pose
            // as long as the output.
            unsafe { avx::blend_unmasked(&refs, &w, &mut a) };
            portable_blend_unmasked(&refs, &w, &mut b);
            for (x, y) in a.iter().zip(&b) {
                let size = 1.0 + y.translation.abs().max_element() + y.scale.abs().max_element();
                prop_assert!((x.translation - y.translation).abs().max_element() <= 1e-6 * size, "{x:?} {y:?}");
                prop_assert!((x.scale - y.scale).abs().max_element() <= 1e-6 * size, "{x:?} {y:?}");
                prop_assert!((Vec4::from(x.rotation) - Vec4::from(y.rotation)).abs().max_element() <= 1e-6, "{x:?} {y:?}");
            }
            if cancel {
                prop_assert_eq!(a[3].rotation, Quat::IDENTITY);
                if len > 17 {
                    prop_assert_eq!(a[17].rotation, Quat::IDENTITY);
                }
            }
        }
    }

    #[test]
    fn tiny_components_blend_as_zero_would() {
        // Components of 1e-20 (what exporters write for zero) and exact zeros blend alike.
        let one = [Transform::IDENTITY];
        let blended = |q: Quat| {
            let a = [Transform::new(Vec3::ZERO, q, Vec3::ONE)];
            let mut out = [Transform::IDENTITY];
            let inputs = [
                BlendInput {
                    pose: &a,
                    weight: 1.0,
                    mask: None,
                },
                BlendInput {
                    pose: &one,
                    weight: 1.0,
                    mask: None,
                },
            ];
            blend(&inputs, &one, &mut out).unwrap();
            out[0].rotation
        };
        let got = blended(Quat::from_xyzw(1e-20, 0.6, -1e-20, 0.8));
        let want = blended(Quat::from_xyzw(0.0, 0.6, 0.0, 0.8));
        assert!(got.angle_between(want) < 1e-6);
        assert!((got.length() - 1.0).abs() < 1e-6);
    }
}

//! Hierarchy: local transforms to model-space matrices, and the skinning palette.
//!
//! ```text
//! pose (local SRT) ──local_to_model──▶ model matrices ──skinning_palette(skin)──▶ palette
//!                     one forward pass,                 model[skin joint] * inverse bind
//!                     parents first
//! ```
//!
//! Model space is the skeleton's space; [`crate::Skeleton::root_transform`] maps it to the
//! source scene. A [`Skin`] lists which joints a mesh is bound to and their inverse bind
//! matrices (the "offset matrices" of the older DirectX articles); where a source has none,
//! [`inverse_bind_matrices`] computes them from the rest pose.
//!
//! On CPUs with AVX and FMA both run in `avx.rs` (chosen at run time; the `scalar` feature
//! keeps the portable path): the palette two matrix columns per 256-bit register, in about
//! half the time of four-wide SSE; local-to-model with rotations turned into matrices eight
//! joints at a time and parents' columns kept in registers along chains, about 0.7 of the
//! time of converting and multiplying joint by joint.

use glam::Mat4;

use crate::error::check_len;

mod avx;
use crate::{Error, JointIndex, Skeleton, SoaPose, Transform};

/// Converts local joint transforms to model space, parents first.
///
/// `local` and `model` hold one entry per joint of `skeleton`. Joints before `from` keep the
/// values already in `model`, so a caller that changed only an arm can pass the arm's first
/// joint (every joint after it is recomputed; pass 0 for the whole skeleton).
///
/// ```
/// # use skelett::*;
/// # use glam::{Mat4, Vec3};
/// let skeleton = RawSkeleton { joints: vec![
///     RawJoint { name: "a".into(), parent: None, rest: Transform::new(Vec3::X, Default::default(), Vec3::ONE) },
///     RawJoint { name: "b".into(), parent: Some(0), rest: Transform::new(Vec3::Y, Default::default(), Vec3::ONE) },
/// ], ..Default::default() }.build()?;
/// let mut model = vec![Mat4::IDENTITY; 2];
/// local_to_model(&skeleton, skeleton.rest_pose(), 0, &mut model)?;
/// assert_eq!(model[1].w_axis.truncate(), Vec3::new(1.0, 1.0, 0.0));
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if either slice is shorter than the skeleton; nothing is written then.
pub fn local_to_model(
    skeleton: &Skeleton,
    local: &[Transform],
    from: JointIndex,
    model: &mut [Mat4],
) -> Result<(), Error> {
    let n = skeleton.len();
    check_len("local", n, local.len())?;
    check_len("model", n, model.len())?;
    let parents = &skeleton.parents()[..n];
    let local = &local[..n];
    let model = &mut model[..n];
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if avx::available() {
        // SAFETY: `avx::local_to_model` needs AVX and FMA, which `available` has just
        // confirmed. `local_to_model_with_and_without_avx_agree` runs it.
        unsafe { avx::local_to_model::<[Transform]>(parents, local, from as usize, model) };
        return Ok(());
    }
    portable_local_to_model(parents, local, from as usize, model);
    Ok(())
}

/// [`local_to_model`] from a structure-of-arrays pose ([`SoaPose`], as [`crate::sample_soa`]
/// and [`crate::blend_soa`] make them): the same matrices, bit for bit. With AVX and FMA the
/// rotations, translations and scales of eight joints are loaded as they lie, where the
/// slice form transposes them first.
///
/// ```
/// # use skelett::*;
/// # use glam::{Mat4, Vec3};
/// let skeleton = RawSkeleton { joints: vec![
///     RawJoint { name: "a".into(), parent: None, rest: Transform::new(Vec3::X, Default::default(), Vec3::ONE) },
///     RawJoint { name: "b".into(), parent: Some(0), rest: Transform::new(Vec3::Y, Default::default(), Vec3::ONE) },
/// ], ..Default::default() }.build()?;
/// let mut model = vec![Mat4::IDENTITY; 2];
/// local_to_model_soa(&skeleton, &SoaPose::rest(&skeleton), 0, &mut model)?;
/// assert_eq!(model[1].w_axis.truncate(), Vec3::new(1.0, 1.0, 0.0));
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if the pose or `model` is shorter than the skeleton; nothing is written
/// then.
pub fn local_to_model_soa(
    skeleton: &Skeleton,
    local: &SoaPose,
    from: JointIndex,
    model: &mut [Mat4],
) -> Result<(), Error> {
    let n = skeleton.len();
    check_len("local", n, local.len())?;
    check_len("model", n, model.len())?;
    let parents = &skeleton.parents()[..n];
    let model = &mut model[..n];
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if avx::available() {
        // SAFETY: AVX and FMA were just confirmed; the pose's blocks hold at least `n`
        // joints (checked above). `soa_model_matrices_are_the_slice_ones` runs it.
        unsafe { avx::local_to_model(parents, local.blocks(), from as usize, model) };
        return Ok(());
    }
    for j in from as usize..n {
        let p = parents[j];
        let l = local.get(j);
        model[j] = if p == JointIndex::MAX {
            l.to_mat4()
        } else {
            compose(&model[p as usize], &l)
        };
    }
    Ok(())
}

/// [`local_to_model`]'s loop with glam's four-wide arithmetic (lengths checked).
fn portable_local_to_model(
    parents: &[JointIndex],
    local: &[Transform],
    from: usize,
    model: &mut [Mat4],
) {
    for j in from..model.len() {
        let p = parents[j];
        model[j] = if p == JointIndex::MAX {
            local[j].to_mat4()
        } else {
            // Parents precede children (Skeleton's invariant), so model[p] is final.
            compose(&model[p as usize], &local[j])
        };
    }
}

/// `parent * local.to_mat4()`, using that the local matrix's last row is (0, 0, 0, 1): its
/// rotation-scale columns are built straight from the quaternion and each output column
/// needs three broadcasts instead of four (12 multiplies instead of 16).
#[inline(always)]
pub(crate) fn compose(parent: &Mat4, local: &Transform) -> Mat4 {
    let q = local.rotation;
    let s = local.scale;
    let t = local.translation;
    let (x2, y2, z2) = (q.x + q.x, q.y + q.y, q.z + q.z);
    let (xx, xy, xz) = (q.x * x2, q.x * y2, q.x * z2);
    let (yy, yz, zz) = (q.y * y2, q.y * z2, q.z * z2);
    let (wx, wy, wz) = (q.w * x2, q.w * y2, q.w * z2);
    let (px, py, pz) = (parent.x_axis, parent.y_axis, parent.z_axis);
    let col = |a: f32, b: f32, c: f32| px * a + py * b + pz * c;
    Mat4::from_cols(
        col(1.0 - (yy + zz), xy + wz, xz - wy) * s.x,
        col(xy - wz, 1.0 - (xx + zz), yz + wx) * s.y,
        col(xz + wy, yz - wx, 1.0 - (xx + yy)) * s.z,
        col(t.x, t.y, t.z) + parent.w_axis,
    )
}

/// The joints a mesh is bound to, with their inverse bind matrices: the palette layout.
///
/// Built with [`Skin::new`], which checks it once so that [`skinning_palette`] needs only
/// length checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Skin {
    name: String,
    joints: Vec<JointIndex>,
    inverse_bind: Vec<Mat4>,
    /// One past the largest joint index (0 without joints).
    joint_bound: usize,
}

impl Skin {
    /// A skin: for each palette entry, the skeleton joint it follows and the inverse of that
    /// joint's model-space bind matrix (it takes a bind-pose vertex into the joint's space).
    ///
    /// # Errors
    /// [`Error::Mesh`] if the two lists differ in length or a matrix is not finite.
    pub fn new(
        name: impl Into<String>,
        joints: Vec<JointIndex>,
        inverse_bind: Vec<Mat4>,
    ) -> Result<Self, Error> {
        let name = name.into();
        let err = |problem: String| {
            Err(Error::Mesh {
                mesh: name.clone(),
                problem,
            })
        };
        if joints.len() != inverse_bind.len() {
            return err(format!(
                "skin has {} joints but {} inverse bind matrices",
                joints.len(),
                inverse_bind.len()
            ));
        }
        if let Some(i) = inverse_bind.iter().position(|m| !m.is_finite()) {
            return err(format!("inverse bind matrix {i} is not finite"));
        }
        let joint_bound = joints.iter().map(|&j| j as usize + 1).max().unwrap_or(0);
        Ok(Self {
            name,
            joints,
            inverse_bind,
            joint_bound,
        })
    }

    /// The skin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// For each palette entry, the skeleton joint it follows.
    pub fn joints(&self) -> &[JointIndex] {
        &self.joints
    }

    /// For each palette entry, the inverse bind matrix.
    pub fn inverse_bind(&self) -> &[Mat4] {
        &self.inverse_bind
    }

    /// Number of palette entries.
    pub fn len(&self) -> usize {
        self.joints.len()
    }

    /// `true` without joints.
    pub fn is_empty(&self) -> bool {
        self.joints.is_empty()
    }

    /// Checks that every joint exists in `skeleton`.
    ///
    /// # Errors
    /// [`Error::Mesh`] naming the first joint out of range.
    pub fn validate(&self, skeleton: &Skeleton) -> Result<(), Error> {
        if self.joint_bound > skeleton.len() {
            return Err(Error::Mesh {
                mesh: self.name.clone(),
                problem: format!(
                    "skin joint {} is not in the {}-joint skeleton",
                    self.joint_bound - 1,
                    skeleton.len()
                ),
            });
        }
        Ok(())
    }
}

/// Computes the skinning palette: `palette[i] = model[skin.joints()[i]] * skin.inverse_bind()[i]`.
///
/// The palette takes a bind-pose vertex to its animated position in model space.
///
/// # Errors
/// [`Error::Length`] if `palette` is shorter than the skin, or `model` lacks a joint the
/// skin uses; nothing is written then.
pub fn skinning_palette(skin: &Skin, model: &[Mat4], palette: &mut [Mat4]) -> Result<(), Error> {
    let n = skin.joints.len();
    check_len("palette", n, palette.len())?;
    check_len("model", skin.joint_bound, model.len())?;
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if avx::available() {
        // SAFETY: `avx::palette` needs AVX and FMA, which `available` has just confirmed,
        // and joints below `model.len()`: every joint of a skin is below its `joint_bound`
        // (`Skin::new` computes it from the joints, which nothing changes afterwards),
        // checked against `model.len()` above. `palette_with_and_without_avx_agree` runs it.
        unsafe { avx::palette(&skin.joints, &skin.inverse_bind, model, &mut palette[..n]) };
        return Ok(());
    }
    for ((out, &j), ibm) in palette[..n]
        .iter_mut()
        .zip(&skin.joints)
        .zip(&skin.inverse_bind)
    {
        *out = model[j as usize] * *ibm;
    }
    Ok(())
}

/// Inverse bind matrices from the rest pose, for sources that store none: for each joint of
/// `joints`, the inverse of its model-space rest matrix.
///
/// # Errors
/// [`Error::Mesh`] if a joint index is out of range.
pub fn inverse_bind_matrices(
    skeleton: &Skeleton,
    joints: &[JointIndex],
) -> Result<Vec<Mat4>, Error> {
    let inverse = skeleton.inverse_rest_model();
    joints
        .iter()
        .map(|&j| {
            inverse.get(j as usize).copied().ok_or_else(|| Error::Mesh {
                mesh: "<inverse bind matrices from the rest pose>".into(),
                problem: format!("joint {j} is not in the {}-joint skeleton", skeleton.len()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RawJoint, RawSkeleton};
    use glam::{Quat, Vec3};
    use proptest::prelude::*;

    fn chain(rests: &[Transform]) -> Skeleton {
        RawSkeleton {
            joints: rests
                .iter()
                .enumerate()
                .map(|(i, r)| RawJoint {
                    name: format!("j{i}"),
                    parent: i.checked_sub(1),
                    rest: *r,
                })
                .collect(),
            ..Default::default()
        }
        .build()
        .unwrap()
    }

    fn transform() -> impl Strategy<Value = Transform> {
        (
            prop::array::uniform3(-2.0f32..2.0),
            prop::array::uniform3(-3.0f32..3.0),
            prop::array::uniform3(0.5f32..1.5),
        )
            .prop_map(|(t, r, s)| {
                Transform::new(
                    Vec3::from(t),
                    Quat::from_euler(glam::EulerRot::XYZ, r[0], r[1], r[2]),
                    Vec3::from(s),
                )
            })
    }

    proptest! {
        /// Model matrices (and `Skeleton::rest_model`) equal the product of the local
        /// matrices along the chain, and the palette of the rest pose, with inverse binds from
        /// `Skeleton::inverse_rest_model`, is the identity.
        #[test]
        fn model_is_product_of_locals_and_rest_palette_is_identity(
            rests in proptest::collection::vec(transform(), 1..8)
        ) {
            let s = chain(&rests);
            let mut model = vec![Mat4::IDENTITY; s.len()];
            local_to_model(&s, s.rest_pose(), 0, &mut model).unwrap();
            let mut acc = Mat4::IDENTITY;
            let rest_model = s.rest_model();
            for (j, r) in rests.iter().enumerate() {
                acc *= r.to_mat4();
                let tolerance = 1e-3 * (1.0 + acc.w_axis.length());
                prop_assert!(model[j].abs_diff_eq(acc, tolerance));
                // The skeleton's own rest matrices, the same product.
                prop_assert!(rest_model[j].abs_diff_eq(acc, tolerance));
            }
            let joints: Vec<JointIndex> = (0..s.len() as JointIndex).collect();
            let skin = Skin::new("s", joints.clone(), inverse_bind_matrices(&s, &joints).unwrap()).unwrap();
            let mut palette = vec![Mat4::ZERO; s.len()];
            skinning_palette(&skin, &model, &mut palette).unwrap();
            for p in palette {
                prop_assert!(p.abs_diff_eq(Mat4::IDENTITY, 1e-3));
            }
        }
    }

    proptest! {
        /// The AVX local-to-model (taken on CPUs with AVX and FMA) equals the portable one
        /// on trees of any shape, from any first joint.
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        #[test]
        fn local_to_model_with_and_without_avx_agree(
            locals in proptest::collection::vec(transform(), 1..40),
            parent_picks in proptest::collection::vec(0usize..1000, 40),
            from_pick in 0usize..1000,
        ) {
            prop_assume!(avx::available());
            let n = locals.len();
            // Joint j's parent is none (every seventh pick), the joint before it (half the
            // others: chains, whose parents the AVX loop keeps in registers), or any earlier
            // joint.
            let parents: Vec<JointIndex> = (0..n)
                .map(|j| match parent_picks[j] {
                    _ if j == 0 => JointIndex::MAX,
                    k if k % 7 == 0 => JointIndex::MAX,
                    k if k % 2 == 0 => (j - 1) as JointIndex,
                    k => (k % j) as JointIndex,
                })
                .collect();
            let from = from_pick % n;
            let seed: Vec<Mat4> = (0..n).map(|j| Mat4::from_translation(Vec3::splat(j as f32))).collect();
            let (mut a, mut b) = (seed.clone(), seed.clone());
            // SAFETY: AVX and FMA were just detected.
            unsafe { avx::local_to_model(&parents, &locals[..], from, &mut a) };
            portable_local_to_model(&parents, &locals, from, &mut b);
            for j in 0..n {
                if j < from {
                    prop_assert_eq!(a[j], seed[j]);
                }
                let tolerance = 1e-5 * (1.0 + b[j].abs().to_cols_array().iter().sum::<f32>());
                prop_assert!(a[j].abs_diff_eq(b[j], tolerance), "{j}: {} {}", a[j], b[j]);
            }
        }
    }

    proptest! {
        /// The AVX palette (taken on CPUs with AVX and FMA) equals glam's products.
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        #[test]
        fn palette_with_and_without_avx_agree(
            m in proptest::collection::vec(transform(), 1..12),
            ib in proptest::collection::vec(transform(), 1..12),
            picks in proptest::collection::vec(0usize..100, 1..20),
        ) {
            let model: Vec<Mat4> = m.iter().map(|t| t.to_mat4()).collect();
            let joints: Vec<JointIndex> = picks.iter().map(|&p| (p % m.len()) as JointIndex).collect();
            let ibms: Vec<Mat4> = (0..joints.len()).map(|i| ib[i % ib.len()].to_mat4().inverse()).collect();
            let skin = Skin::new("s", joints.clone(), ibms.clone()).unwrap();
            let mut got = vec![Mat4::ZERO; joints.len()];
            skinning_palette(&skin, &model, &mut got).unwrap();
            for i in 0..joints.len() {
                let want = model[joints[i] as usize] * ibms[i];
                let tolerance = 1e-5 * (1.0 + want.w_axis.length() + ibms[i].abs().to_cols_array().iter().sum::<f32>());
                prop_assert!(got[i].abs_diff_eq(want, tolerance), "{i}: {} {want}", got[i]);
            }
        }
    }

    proptest! {
        /// The specialised product equals glam's general one.
        #[test]
        fn compose_equals_matrix_product(parent in transform(), local in transform()) {
            let p = parent.to_mat4();
            let want = p * local.to_mat4();
            prop_assert!(compose(&p, &local).abs_diff_eq(want, 1e-4), "{want}");
        }
    }

    #[test]
    fn from_joint_keeps_earlier_matrices_and_lengths_are_checked() {
        let rests = [Transform::new(Vec3::X, Quat::IDENTITY, Vec3::ONE); 3];
        let s = chain(&rests);
        let sentinel = Mat4::from_scale(Vec3::splat(7.0));
        let mut model = vec![sentinel; 3];
        local_to_model(&s, s.rest_pose(), 1, &mut model).unwrap();
        assert_eq!(model[0], sentinel);
        assert_eq!(model[1], sentinel * rests[1].to_mat4());
        let mut short = vec![Mat4::IDENTITY; 2];
        assert!(matches!(
            local_to_model(&s, s.rest_pose(), 0, &mut short),
            Err(Error::Length {
                expected: 3,
                got: 2,
                ..
            })
        ));
        assert_eq!(short, vec![Mat4::IDENTITY; 2]);
    }
}

//! The per-character skinning palette: matrices from the model pose, normal matrices when
//! scale is not uniform, dual quaternions for [`SkinningMethod::DualQuaternion`].

use glam::{Mat3A, Mat4, Quat, Vec3, Vec4};

use crate::{hierarchy::skinning_palette, Error, Skin};

/// How [`skin`](super::skin()) blends joint transforms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SkinningMethod {
    /// Linear blend skinning (blended matrices).
    #[default]
    Linear,
    /// Dual quaternion skinning, falling back to linear per vertex where a joint scales.
    DualQuaternion,
}

/// A unit dual quaternion: a rotation `real` and a translation held in `dual`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[repr(C)]
pub struct DualQuat {
    /// The rotation.
    pub real: Quat,
    /// Half the translation (as a pure quaternion) times the rotation.
    pub dual: Quat,
}

impl DualQuat {
    /// The rigid transform rotating by `rotation`, then translating by `translation`.
    pub fn from_rotation_translation(rotation: Quat, translation: Vec3) -> Self {
        let t = Quat::from_xyzw(translation.x, translation.y, translation.z, 0.0);
        DualQuat {
            real: rotation,
            dual: (t * rotation) * 0.5,
        }
    }
}

/// A character's per-frame skinning input: the palette and what is derived from it.
///
/// Keep one per character and skinned mesh; [`SkinPalette::update`] reuses its buffers, so
/// after the first frame it does not allocate.
#[derive(Clone, Debug, Default)]
pub struct SkinPalette {
    pub(super) method: SkinningMethod,
    pub(super) matrices: Vec<Mat4>,
    /// Inverse-transposes, only filled when some matrix is not a rotation times a uniform
    /// scale.
    pub(super) normal: Vec<Mat3A>,
    pub(super) use_normal: bool,
    pub(super) dual: Vec<DualQuat>,
    pub(super) rigid: Vec<bool>,
    /// Whether every entry of `rigid` is true (no per-vertex check then).
    pub(super) all_rigid: bool,
    /// Whether some entry of `rigid` is true (if none is, every vertex blends linearly).
    pub(super) any_rigid: bool,
    /// Each `dual` entry as a matrix: what a vertex with that one rigid joint is skinned by.
    pub(super) dual_matrices: Vec<Mat4>,
    /// Whether `dual` and `rigid` match `matrices` (the method was DualQuaternion at the
    /// last update).
    pub(super) dual_ready: bool,
    /// Whether linear blending renormalises normals and tangents (see
    /// [`SkinPalette::set_normalize_directions`]).
    pub(super) raw_directions: bool,
}

impl SkinPalette {
    /// An empty palette for `method`.
    pub fn new(method: SkinningMethod) -> Self {
        SkinPalette {
            method,
            ..Default::default()
        }
    }

    /// The blending method.
    pub fn method(&self) -> SkinningMethod {
        self.method
    }

    /// Changes the blending method (takes effect at the next update).
    pub fn set_method(&mut self, method: SkinningMethod) {
        self.method = method;
    }

    /// Whether linearly blended normals and tangents are renormalised (the default). A blend
    /// of rotations shortens them; renderers that normalise in their shaders anyway can turn
    /// this off and save about a fifth of the CPU skinning time (ozz-animation's skinning job
    /// does not renormalise either). Dual quaternion skinning always gives unit directions (see the module docs),
    /// and so does the GPU path.
    pub fn set_normalize_directions(&mut self, normalize: bool) {
        self.raw_directions = !normalize;
    }

    /// The palette matrices (model matrix times inverse bind, per skin joint).
    pub fn matrices(&self) -> &[Mat4] {
        &self.matrices
    }

    /// Each palette entry as a dual quaternion, and whether it is rigid (dual quaternion
    /// skinning applies only to vertices whose joints are all rigid), when the method was
    /// [`SkinningMethod::DualQuaternion`] at the last update; `None` otherwise. For GPU
    /// uploads.
    pub fn dual_quaternions(&self) -> Option<(&[DualQuat], &[bool])> {
        self.dual_ready.then_some((&self.dual[..], &self.rigid[..]))
    }

    /// Whether normals use separately blended inverse-transposes this frame (some palette
    /// entry scales non-uniformly, shears, or scales differently from the others).
    pub fn uses_normal_matrices(&self) -> bool {
        self.use_normal
    }

    /// Computes the palette of `skin` from the skeleton's model-space matrices.
    ///
    /// # Errors
    /// As [`skinning_palette`]; the palette is left empty then, so [`skin`](super::skin()) refuses it until
    /// the next successful update.
    pub fn update(&mut self, skin: &Skin, model: &[Mat4]) -> Result<(), Error> {
        // Resize only when the skin changes size, so steady-state updates never allocate.
        self.matrices.resize(skin.len(), Mat4::IDENTITY);
        if let Err(e) = skinning_palette(skin, model, &mut self.matrices) {
            // Leave no stale derived data behind: an empty palette makes `skin` refuse.
            self.matrices.clear();
            self.derive();
            return Err(e);
        }
        self.derive();
        Ok(())
    }

    /// Takes a palette computed elsewhere.
    pub fn set_matrices(&mut self, palette: &[Mat4]) {
        self.matrices.clear();
        self.matrices.extend_from_slice(palette);
        self.derive();
    }

    pub(super) fn derive(&mut self) {
        let n = self.matrices.len();
        // Normals blend the inverse-transposes. For a similarity s·R that is R / s, the same
        // direction as the matrix itself when every entry has the same scale s, so only then
        // can the palette matrices stand in for them (exactly, after renormalising).
        let first = self.matrices.first().map(scale_squared).unwrap_or(1.0);
        self.use_normal = !self
            .matrices
            .iter()
            .all(|m| is_similarity(m, 1e-4) && (scale_squared(m) - first).abs() <= 1e-4 * first);
        if self.use_normal {
            self.normal.resize(n, Mat3A::IDENTITY);
            for (out, m) in self.normal.iter_mut().zip(&self.matrices) {
                let m3 = Mat3A::from_mat4(*m);
                let det = m3.determinant();
                *out = if det.abs() > f32::MIN_POSITIVE && det.is_finite() {
                    m3.inverse().transpose()
                } else {
                    m3
                };
            }
        }
        self.dual_ready = self.method == SkinningMethod::DualQuaternion;
        if self.dual_ready {
            self.dual.resize(n, DualQuat::default());
            self.rigid.resize(n, false);
            self.dual_matrices.resize(n, Mat4::IDENTITY);
            for ((dq, rigid), m) in self
                .dual
                .iter_mut()
                .zip(&mut self.rigid)
                .zip(&self.matrices)
            {
                *rigid = is_rigid(m, 1e-3);
                let r = Quat::from_mat3a(&Mat3A::from_mat4(*m)).normalize();
                *dq = DualQuat::from_rotation_translation(r, m.w_axis.truncate());
            }
            for (m, dq) in self.dual_matrices.iter_mut().zip(&self.dual) {
                let (r, d) = (Vec4::from(dq.real), Vec4::from(dq.dual));
                let a = super::kernel::dual_to_affine(r, d, r.dot(r));
                *m = Mat4::from_cols(a.x, a.y, a.z, a.w);
            }
            self.all_rigid = self.rigid.iter().all(|&r| r);
            self.any_rigid = self.rigid.iter().any(|&r| r);
        }
    }
}

/// The mean squared length of the upper 3x3's columns (s² for a similarity s·R).
pub(super) fn scale_squared(m: &Mat4) -> f32 {
    (m.x_axis.truncate().length_squared()
        + m.y_axis.truncate().length_squared()
        + m.z_axis.truncate().length_squared())
        / 3.0
}

/// Whether the upper 3x3 of `m` is a rotation (possibly mirrored) times a uniform scale.
pub(super) fn is_similarity(m: &Mat4, tol: f32) -> bool {
    let (x, y, z) = (
        m.x_axis.truncate(),
        m.y_axis.truncate(),
        m.z_axis.truncate(),
    );
    let (lx, ly, lz) = (x.length_squared(), y.length_squared(), z.length_squared());
    let s = (lx + ly + lz) / 3.0;
    let t = tol * s;
    (lx - s).abs() <= t
        && (ly - s).abs() <= t
        && (lz - s).abs() <= t
        && x.dot(y).abs() <= t
        && y.dot(z).abs() <= t
        && z.dot(x).abs() <= t
}

/// Whether `m` is a proper rigid transform (unit scale, no shear or mirror, affine).
pub(super) fn is_rigid(m: &Mat4, tol: f32) -> bool {
    is_similarity(m, tol)
        && (m.x_axis.truncate().length_squared() - 1.0).abs() <= tol
        && Mat3A::from_mat4(*m).determinant() > 0.0
        && m.row(3).abs_diff_eq(Vec4::W, tol)
}

//! CPU skinning: bind-pose vertices and a skinning palette in, deformed vertices out.
//!
//! ```text
//! MeshPrimitive ──SkinningMesh::new──▶ SkinningMesh        (once per asset; immutable, Arc-shared)
//!                                      vertices grouped by influence count, weights normalised
//! Skin + model matrices ──SkinPalette::update──▶ SkinPalette   (per character, per frame)
//!                                      palette, normal matrices if scale is non-uniform,
//!                                      dual quaternions for SkinningMethod::DualQuaternion
//! skin(&mesh, &palette, SkinOutput { positions, normals, tangents })   (per frame, no allocation)
//! ```
//!
//! **Layout.** [`SkinningMesh::new`] drops zero weights, sorts each vertex's influences by
//! weight, normalises them and groups vertices by how many influences they have (0 to 8), as
//! ozz-animation's mesh builder does, so each group runs a loop specialised for its count.
//! Only `k - 1` weights are stored for a vertex with `k` influences: the last is one minus
//! the others (the trick of the older DirectX articles' indexed skinning), which saves memory
//! and bandwidth and makes every blend exactly affine. The skinned vertices come out in this
//! grouped *skinning order*; [`SkinningMesh::indices`] is the triangle list remapped to it
//! and [`SkinningMesh::source_vertices`] maps back to the source order (for UVs or other
//! attributes, see [`SkinningMesh::reorder`]).
//!
//! **Linear blend skinning** blends the palette matrices with the weights and transforms the
//! vertex once. Normals blend the palette's inverse-transposes (as ozz-animation does); when
//! every palette entry is a rotation times one common uniform scale, those point the same
//! way as the matrices themselves, so the blended matrix is used and the inverse-transposes
//! are not computed ([`SkinPalette`] decides per frame). Tangents (surface directions)
//! always use the blended matrix. Directions are renormalised.
//!
//! **Dual quaternion skinning** ([`SkinningMethod::DualQuaternion`]) blends rigid transforms
//! as unit dual quaternions, so a joint that twists does not collapse the skin around it
//! (LBS's "candy wrapper"). Dual quaternions cannot carry scale, so a vertex influenced by any
//! joint whose palette entry scales or shears falls back to linear blending, per vertex.
//!
//! [`skin_par`] (feature `rayon`) splits the vertices into chunks skinned on rayon's pool.

use glam::{Mat3A, Mat4, Quat, Vec3, Vec3A, Vec4};

use crate::error::check_len;
use crate::{hierarchy::skinning_palette, Error, MeshPrimitive, Skin};

/// Most influences a vertex may have.
pub const MAX_INFLUENCES: usize = 8;

/// A run of vertices, in skinning order, that all have the same number of influences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfluenceGroup {
    /// Influences per vertex (0: no joint moves these vertices; they keep their bind pose).
    pub influences: usize,
    /// First vertex of the group, in skinning order.
    pub start: usize,
    /// Number of vertices.
    pub len: usize,
    joint_offset: usize,
    weight_offset: usize,
}

/// A mesh primitive prepared for skinning: vertices grouped by influence count, weights
/// normalised with the last one implied. Build once per asset and share.
#[derive(Clone, Debug, PartialEq)]
pub struct SkinningMesh {
    source: Vec<u32>,
    groups: Vec<InfluenceGroup>,
    positions: Vec<Vec3>,
    normals: Option<Vec<Vec3>>,
    tangents: Option<Vec<Vec4>>,
    joints: Vec<u16>,
    weights: Vec<f32>,
    indices: Vec<u32>,
    palette_len: usize,
}

impl SkinningMesh {
    /// Prepares `primitive` for a palette of `palette_len` entries (its skin's joint count).
    ///
    /// ```
    /// # use skelett::{MeshPrimitive, skin::SkinningMesh};
    /// # use glam::{Vec3, Vec4};
    /// let p = MeshPrimitive {
    ///     positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y],
    ///     influences: 2,
    ///     joints: vec![0, 1, 1, 0, 0, 0],
    ///     weights: vec![0.25, 0.75, 1.0, 0.0, 0.0, 0.0], // the last vertex has no weight
    ///     indices: vec![0, 1, 2],
    ///     base_color: Vec4::ONE,
    ///     ..Default::default()
    /// };
    /// let mesh = SkinningMesh::new(&p, 2)?;
    /// let counts: Vec<_> = mesh.groups().iter().map(|g| (g.influences, g.len)).collect();
    /// assert_eq!(counts, [(0, 1), (1, 1), (2, 1)]);
    /// assert_eq!(mesh.source_vertices(), [2, 1, 0]);
    /// assert_eq!(mesh.indices(), [2, 1, 0]);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Mesh`] as [`crate::SkinnedMesh::validate`] for the same problems.
    pub fn new(primitive: &MeshPrimitive, palette_len: usize) -> Result<Self, Error> {
        primitive
            .check(palette_len)
            .map_err(|problem| Error::Mesh {
                mesh: String::new(),
                problem,
            })?;
        let p = primitive;
        let stride = p.influences;
        let n = p.vertex_count();
        // Per vertex: its influences sorted by weight (heaviest first), normalised.
        let mut sorted: Vec<([(u16, f32); MAX_INFLUENCES], usize)> = Vec::with_capacity(n);
        for v in 0..n {
            let mut inf = [(0u16, 0f32); MAX_INFLUENCES];
            let mut k = 0;
            for i in 0..stride {
                let w = p.weights[v * stride + i];
                if w > 0.0 {
                    inf[k] = (p.joints[v * stride + i], w);
                    k += 1;
                }
            }
            inf[..k].sort_by(|a, b| b.1.total_cmp(&a.1));
            let sum: f32 = inf[..k].iter().map(|x| x.1).sum();
            if !(sum.is_finite() && sum > 0.0) {
                k = 0;
            }
            for x in &mut inf[..k] {
                x.1 /= sum;
            }
            sorted.push((inf, k));
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&v| sorted[v as usize].1);
        let mut groups: Vec<InfluenceGroup> = Vec::new();
        let mut joints = Vec::new();
        let mut weights = Vec::new();
        for (at, &v) in order.iter().enumerate() {
            let (inf, k) = &sorted[v as usize];
            if groups.last().is_none_or(|g| g.influences != *k) {
                groups.push(InfluenceGroup {
                    influences: *k,
                    start: at,
                    len: 0,
                    joint_offset: joints.len(),
                    weight_offset: weights.len(),
                });
            }
            if let Some(g) = groups.last_mut() {
                g.len += 1;
            }
            joints.extend(inf[..*k].iter().map(|x| x.0));
            weights.extend(inf[..k.saturating_sub(1)].iter().map(|x| x.1));
        }
        let mut inverse = vec![0u32; n];
        for (at, &v) in order.iter().enumerate() {
            inverse[v as usize] = at as u32;
        }
        let gather = |src: &[Vec3]| order.iter().map(|&v| src[v as usize]).collect();
        Ok(SkinningMesh {
            positions: gather(&p.positions),
            normals: p.normals.as_deref().map(gather),
            tangents: p
                .tangents
                .as_ref()
                .map(|t| order.iter().map(|&v| t[v as usize]).collect()),
            indices: p.indices.iter().map(|&i| inverse[i as usize]).collect(),
            source: order,
            groups,
            joints,
            weights,
            palette_len,
        })
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// The influence groups, in skinning order.
    pub fn groups(&self) -> &[InfluenceGroup] {
        &self.groups
    }

    /// For each vertex in skinning order, its index in the source primitive.
    pub fn source_vertices(&self) -> &[u32] {
        &self.source
    }

    /// The triangle list, indexing vertices in skinning order.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Bind-pose positions, in skinning order.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Bind-pose normals, in skinning order, if the source has them.
    pub fn normals(&self) -> Option<&[Vec3]> {
        self.normals.as_deref()
    }

    /// Bind-pose tangents (handedness in `w`), in skinning order, if the source has them.
    pub fn tangents(&self) -> Option<&[Vec4]> {
        self.tangents.as_deref()
    }

    /// Number of palette entries the mesh was built for.
    pub fn palette_len(&self) -> usize {
        self.palette_len
    }

    /// A per-vertex attribute of the source (UVs, colours) put into skinning order.
    ///
    /// # Errors
    /// [`Error::Length`] if `attribute` does not have one entry per vertex.
    pub fn reorder<T: Copy>(&self, attribute: &[T]) -> Result<Vec<T>, Error> {
        check_len("attribute", self.vertex_count(), attribute.len())?;
        Ok(self.source.iter().map(|&v| attribute[v as usize]).collect())
    }

    /// The influences of vertex `v` (skinning order) as (palette index, weight) pairs, the
    /// implied last weight included. Meant for GPU uploads and tests, not the hot path.
    pub fn influences(&self, v: usize) -> impl Iterator<Item = (u16, f32)> + '_ {
        let g = self
            .groups
            .iter()
            .find(|g| (g.start..g.start + g.len).contains(&v));
        let (joints, weights): (&[u16], &[f32]) = match g {
            Some(g) if g.influences > 0 => {
                let k = g.influences;
                let i = v - g.start;
                (
                    &self.joints[g.joint_offset + i * k..][..k],
                    &self.weights[g.weight_offset + i * (k - 1)..][..k - 1],
                )
            }
            _ => (&[], &[]),
        };
        // The implied last weight, subtracted one at a time as the skinning loops do.
        let last = weights.iter().fold(1.0f32, |l, &w| l - w);
        joints
            .iter()
            .enumerate()
            .map(move |(i, &j)| (j, weights.get(i).copied().unwrap_or(last)))
    }
}

/// How [`skin`] blends joint transforms.
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
    method: SkinningMethod,
    matrices: Vec<Mat4>,
    /// Inverse-transposes, only filled when some matrix is not a rotation times a uniform
    /// scale.
    normal: Vec<Mat3A>,
    use_normal: bool,
    dual: Vec<DualQuat>,
    rigid: Vec<bool>,
    /// Whether `dual` and `rigid` match `matrices` (the method was DualQuaternion at the
    /// last update).
    dual_ready: bool,
    /// Whether linear blending renormalises normals and tangents (see
    /// [`SkinPalette::set_normalize_directions`]).
    raw_directions: bool,
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
    /// does not renormalise either). Dual quaternion skinning always gives unit directions,
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
    /// As [`skinning_palette`]; the palette is left empty then, so [`skin`] refuses it until
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

    fn derive(&mut self) {
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
        }
    }
}

/// The mean squared length of the upper 3x3's columns (s² for a similarity s·R).
fn scale_squared(m: &Mat4) -> f32 {
    (m.x_axis.truncate().length_squared()
        + m.y_axis.truncate().length_squared()
        + m.z_axis.truncate().length_squared())
        / 3.0
}

/// Whether the upper 3x3 of `m` is a rotation (possibly mirrored) times a uniform scale.
fn is_similarity(m: &Mat4, tol: f32) -> bool {
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
fn is_rigid(m: &Mat4, tol: f32) -> bool {
    is_similarity(m, tol)
        && (m.x_axis.truncate().length_squared() - 1.0).abs() <= tol
        && Mat3A::from_mat4(*m).determinant() > 0.0
        && m.row(3).abs_diff_eq(Vec4::W, tol)
}

/// Caller-provided output buffers, one entry per vertex in skinning order. Pass `None` for
/// attributes you do not need; attributes the mesh has no source for come out as zeros.
#[derive(Debug)]
pub struct SkinOutput<'a> {
    /// Skinned positions.
    pub positions: &'a mut [Vec3],
    /// Skinned unit normals.
    pub normals: Option<&'a mut [Vec3]>,
    /// Skinned unit tangents with the source handedness in `w`.
    pub tangents: Option<&'a mut [Vec4]>,
}

impl<'a> SkinOutput<'a> {
    fn split_at(self, mid: usize) -> (SkinOutput<'a>, SkinOutput<'a>) {
        let (pa, pb) = self.positions.split_at_mut(mid);
        let (na, nb) = split_opt(self.normals, mid);
        let (ta, tb) = split_opt(self.tangents, mid);
        (
            SkinOutput {
                positions: pa,
                normals: na,
                tangents: ta,
            },
            SkinOutput {
                positions: pb,
                normals: nb,
                tangents: tb,
            },
        )
    }
}

#[allow(clippy::type_complexity)]
fn split_opt<T>(s: Option<&mut [T]>, mid: usize) -> (Option<&mut [T]>, Option<&mut [T]>) {
    match s {
        Some(s) => {
            let (a, b) = s.split_at_mut(mid);
            (Some(a), Some(b))
        }
        None => (None, None),
    }
}

/// Skins every vertex of `mesh` with `palette` into `out` (skinning order).
///
/// ```
/// use glam::{Mat4, Vec3, Vec4};
/// use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
/// use skelett::MeshPrimitive;
///
/// let p = MeshPrimitive {
///     positions: vec![Vec3::X, Vec3::Y, Vec3::Z],
///     normals: Some(vec![Vec3::Z; 3]),
///     influences: 2,
///     joints: vec![0, 1, 0, 1, 0, 1],
///     weights: vec![1.0, 0.0, 0.5, 0.5, 0.0, 1.0],
///     indices: vec![0, 1, 2],
///     base_color: Vec4::ONE,
///     ..Default::default()
/// };
/// let mesh = SkinningMesh::new(&p, 2)?;
/// let mut palette = SkinPalette::new(SkinningMethod::Linear);
/// palette.set_matrices(&[Mat4::IDENTITY, Mat4::from_translation(Vec3::new(0.0, 0.0, 2.0))]);
/// let mut positions = vec![Vec3::ZERO; 3];
/// let mut normals = vec![Vec3::ZERO; 3];
/// skin(&mesh, &palette, SkinOutput { positions: &mut positions, normals: Some(&mut normals), tangents: None })?;
/// // Skinning order: the two 1-influence vertices (source 0 and 2), then the blended one.
/// assert_eq!(mesh.source_vertices(), [0, 2, 1]);
/// // Results agree with exact arithmetic to about 1e-6 relative; the last bits depend on the
/// // CPU (FMA, the SSE square-root estimate) unless the `scalar` feature is on.
/// let want = [Vec3::X, Vec3::new(0.0, 0.0, 3.0), Vec3::new(0.0, 1.0, 1.0)];
/// for (got, want) in positions.iter().zip(want) {
///     assert!((*got - want).length() <= 1e-6 * want.length(), "{got} vs {want}");
/// }
/// assert!(normals.iter().all(|n| (*n - Vec3::Z).length() <= 1e-6));
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if the palette is shorter than the mesh needs, or an output is shorter
/// than the vertex count; nothing is written then.
pub fn skin(mesh: &SkinningMesh, palette: &SkinPalette, out: SkinOutput<'_>) -> Result<(), Error> {
    check(mesh, palette, &out)?;
    skin_range_dispatch(mesh, palette, 0, out);
    Ok(())
}

/// [`skin`] on rayon's thread pool: the vertices are split into chunks of about
/// `chunk_vertices` (at least 256), skinned in parallel. Allocation-free.
///
/// # Errors
/// As [`skin`].
#[cfg(feature = "rayon")]
pub fn skin_par(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    out: SkinOutput<'_>,
    chunk_vertices: usize,
) -> Result<(), Error> {
    check(mesh, palette, &out)?;
    let n = mesh.vertex_count();
    fn split(
        mesh: &SkinningMesh,
        palette: &SkinPalette,
        start: usize,
        len: usize,
        out: SkinOutput<'_>,
        chunk: usize,
    ) {
        if len <= chunk {
            skin_range_dispatch(mesh, palette, start, out);
        } else {
            let half = len / 2;
            let (a, b) = out.split_at(half);
            rayon::join(
                || split(mesh, palette, start, half, a, chunk),
                || split(mesh, palette, start + half, len - half, b, chunk),
            );
        }
    }
    let out = out.split_at(n).0;
    split(mesh, palette, 0, n, out, chunk_vertices.max(256));
    Ok(())
}

fn check(mesh: &SkinningMesh, palette: &SkinPalette, out: &SkinOutput<'_>) -> Result<(), Error> {
    let n = mesh.vertex_count();
    check_len("palette", mesh.palette_len, palette.matrices.len())?;
    check_len("positions", n, out.positions.len())?;
    if let Some(o) = &out.normals {
        check_len("normals", n, o.len())?;
    }
    if let Some(o) = &out.tangents {
        check_len("tangents", n, o.len())?;
    }
    Ok(())
}

/// Whether this CPU has AVX and FMA (checked once by std, then a cached load).
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
fn fma_available() -> bool {
    std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("fma")
}

/// [`skin_range`] with fused multiply-adds and VEX encoding where the CPU has them (every
/// x86_64 CPU since 2013), the baseline SSE2 build otherwise. Fused and separate
/// multiply-adds round differently, so results differ in the last bits between CPUs with and
/// without FMA; the `scalar` feature always takes the baseline build.
fn skin_range_dispatch(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    start: usize,
    out: SkinOutput<'_>,
) {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if fma_available() {
        // SAFETY: `skin_range_fma` only needs the CPU to support AVX and FMA, which
        // `fma_available` has just confirmed at run time.
        unsafe { skin_range_fma(mesh, palette, start, out) };
        return;
    }
    skin_range::<false>(mesh, palette, start, out);
}

/// [`skin_range`] compiled for AVX + FMA. Only call it when the CPU has both.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[target_feature(enable = "avx,fma")]
fn skin_range_fma(mesh: &SkinningMesh, palette: &SkinPalette, start: usize, out: SkinOutput<'_>) {
    skin_range::<true>(mesh, palette, start, out);
}

/// `a * b + c`, fused when `F` (only ever set inside [`skin_range_fma`]).
#[inline(always)]
fn madd<const F: bool>(a: Vec4, b: Vec4, c: Vec4) -> Vec4 {
    #[cfg(target_arch = "x86_64")]
    if F {
        use std::arch::x86_64::_mm_fmadd_ps;
        // SAFETY: `F` is true only in code instantiated from `skin_range_fma`, which is
        // compiled with FMA enabled and called only after `fma_available()` confirmed the
        // CPU has it. The intrinsic reads and writes registers only.
        // `fma_and_baseline_paths_agree` runs both instantiations.
        return unsafe { Vec4::from(_mm_fmadd_ps(a.into(), b.into(), c.into())) };
    }
    a * b + c
}

/// Skins vertices `start..start + out.positions.len()` (skinning order). The outputs may be
/// longer than needed only at the top level; `check` has run. `F`: fused multiply-adds.
/// Inlined (with the group loops) into its callers, so the FMA instantiation is compiled
/// with FMA enabled from top to bottom.
#[inline(always)]
fn skin_range<const F: bool>(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    start: usize,
    out: SkinOutput<'_>,
) {
    let end = start + out.positions.len().min(mesh.vertex_count() - start);
    // Outputs the mesh has no source for are zero, in every group.
    let mut out = out;
    if mesh.normals.is_none() {
        if let Some(o) = out.normals.take() {
            o[..end - start].fill(Vec3::ZERO);
        }
    }
    if mesh.tangents.is_none() {
        if let Some(o) = out.tangents.take() {
            o[..end - start].fill(Vec4::ZERO);
        }
    }
    let mut rest = out;
    let mut at = start;
    for g in &mesh.groups {
        let (lo, hi) = (g.start.max(at), (g.start + g.len).min(end));
        if lo >= hi {
            continue;
        }
        let (mut now, later) = rest.split_at(hi - at);
        if lo > at {
            now = now.split_at(lo - at).1;
        }
        rest = later;
        at = hi;
        let k = g.influences;
        let first = lo - g.start;
        let count = hi - lo;
        let joints = &mesh.joints[g.joint_offset + first * k..][..count * k];
        let weights = &mesh.weights[g.weight_offset + first * k.saturating_sub(1)..]
            [..count * k.saturating_sub(1)];
        let src = Source {
            positions: &mesh.positions[lo..hi],
            normals: mesh.normals.as_deref().map(|n| &n[lo..hi]),
            tangents: mesh.tangents.as_deref().map(|t| &t[lo..hi]),
        };
        match k {
            0 => copy_bind(&src, now),
            1 => group::<1, F>(palette, joints, weights, &src, now),
            2 => group::<2, F>(palette, joints, weights, &src, now),
            3 => group::<3, F>(palette, joints, weights, &src, now),
            4 => group::<4, F>(palette, joints, weights, &src, now),
            5 => group::<5, F>(palette, joints, weights, &src, now),
            6 => group::<6, F>(palette, joints, weights, &src, now),
            7 => group::<7, F>(palette, joints, weights, &src, now),
            _ => group::<8, F>(palette, joints, weights, &src, now),
        }
    }
}

struct Source<'a> {
    positions: &'a [Vec3],
    normals: Option<&'a [Vec3]>,
    tangents: Option<&'a [Vec4]>,
}

fn copy_bind(src: &Source<'_>, out: SkinOutput<'_>) {
    out.positions.copy_from_slice(src.positions);
    if let Some(o) = out.normals {
        match src.normals {
            Some(n) => o.copy_from_slice(n),
            None => o.fill(Vec3::ZERO),
        }
    }
    if let Some(o) = out.tangents {
        match src.tangents {
            Some(t) => o.copy_from_slice(t),
            None => o.fill(Vec4::ZERO),
        }
    }
}

/// A blended affine matrix as four SIMD columns.
#[derive(Clone, Copy)]
struct Affine {
    x: Vec4,
    y: Vec4,
    z: Vec4,
    w: Vec4,
}

impl Affine {
    #[inline(always)]
    fn of(m: &Mat4, w: f32) -> Affine {
        Affine {
            x: m.x_axis * w,
            y: m.y_axis * w,
            z: m.z_axis * w,
            w: m.w_axis * w,
        }
    }
    #[inline(always)]
    fn add<const F: bool>(&mut self, m: &Mat4, w: f32) {
        let w = Vec4::splat(w);
        self.x = madd::<F>(m.x_axis, w, self.x);
        self.y = madd::<F>(m.y_axis, w, self.y);
        self.z = madd::<F>(m.z_axis, w, self.z);
        self.w = madd::<F>(m.w_axis, w, self.w);
    }
    #[inline(always)]
    fn point<const F: bool>(&self, p: Vec3) -> Vec3 {
        let z = madd::<F>(self.z, Vec4::splat(p.z), self.w);
        let y = madd::<F>(self.y, Vec4::splat(p.y), z);
        madd::<F>(self.x, Vec4::splat(p.x), y).truncate()
    }
    #[inline(always)]
    fn vector<const F: bool>(&self, v: Vec3) -> Vec3A {
        let z = self.z * v.z;
        let y = madd::<F>(self.y, Vec4::splat(v.y), z);
        Vec3A::from_vec4(madd::<F>(self.x, Vec4::splat(v.x), y))
    }
}

/// Blends `K` matrices of `mats` with `w` (the last weight implied), as ozz does.
#[inline(always)]
fn blend_mats<const K: usize, const F: bool>(mats: &[Mat4], j: &[u16], w: &[f32]) -> Affine {
    if K == 1 {
        let m = &mats[j[0] as usize];
        return Affine {
            x: m.x_axis,
            y: m.y_axis,
            z: m.z_axis,
            w: m.w_axis,
        };
    }
    let mut acc = Affine::of(&mats[j[0] as usize], w[0]);
    let mut last = 1.0 - w[0];
    for i in 1..K - 1 {
        acc.add::<F>(&mats[j[i] as usize], w[i]);
        last -= w[i];
    }
    acc.add::<F>(&mats[j[K - 1] as usize], last);
    acc
}

#[inline(always)]
fn blend_normals<const K: usize>(mats: &[Mat3A], j: &[u16], w: &[f32], n: Vec3) -> Vec3A {
    let n = Vec3A::from(n);
    if K == 1 {
        return mats[j[0] as usize] * n;
    }
    let mut acc = mats[j[0] as usize] * (n * w[0]);
    let mut last = 1.0 - w[0];
    for i in 1..K - 1 {
        acc += mats[j[i] as usize] * (n * w[i]);
        last -= w[i];
    }
    acc + mats[j[K - 1] as usize] * (n * last)
}

/// `v` scaled to unit length, or `fallback` if it has none.
#[inline(always)]
fn unit(v: Vec3A, fallback: Vec3) -> Vec3 {
    let l = v.length_squared();
    // Normal numbers only: the SSE estimate treats subnormals as zero.
    if (f32::MIN_POSITIVE..=f32::MAX).contains(&l) {
        Vec3::from(v * crate::transform::inv_sqrt(l))
    } else {
        fallback
    }
}

/// One vertex by linear blending.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn linear_vertex<const K: usize, const F: bool>(
    palette: &SkinPalette,
    j: &[u16],
    w: &[f32],
    src: &Source<'_>,
    v: usize,
    out: &mut SkinOutput<'_>,
) {
    let m = blend_mats::<K, F>(&palette.matrices, j, w);
    out.positions[v] = m.point::<F>(src.positions[v]);
    if let (Some(o), Some(n)) = (out.normals.as_deref_mut(), src.normals) {
        let n = n[v];
        let b = if palette.use_normal {
            blend_normals::<K>(&palette.normal, j, w, n)
        } else {
            m.vector::<F>(n)
        };
        o[v] = if palette.raw_directions {
            Vec3::from(b)
        } else {
            unit(b, n)
        };
    }
    if let (Some(o), Some(t)) = (out.tangents.as_deref_mut(), src.tangents) {
        let t = t[v];
        let d = m.vector::<F>(t.truncate());
        let d = if palette.raw_directions {
            Vec3::from(d)
        } else {
            unit(d, t.truncate())
        };
        o[v] = d.extend(t.w);
    }
}

/// One vertex by dual quaternion blending (all its joints are rigid).
#[inline(always)]
fn dual_vertex<const K: usize>(
    palette: &SkinPalette,
    j: &[u16],
    w: &[f32],
    src: &Source<'_>,
    v: usize,
    out: &mut SkinOutput<'_>,
) {
    let d = &palette.dual;
    let first = d[j[0] as usize];
    let (mut real, mut dual) = (real_zero(), real_zero());
    let mut last = 1.0;
    for i in 0..K {
        let q = d[j[i] as usize];
        let wi = if i + 1 < K { w[i] } else { last };
        last -= wi;
        // Shortest path: blend each rotation on the first one's hemisphere.
        let s = if first.real.dot(q.real) < 0.0 {
            -wi
        } else {
            wi
        };
        real += q.real * s;
        dual += q.dual * s;
    }
    let len = real.length();
    let (real, dual) = if len > 1e-6 {
        (real * len.recip(), dual * len.recip())
    } else {
        (first.real, first.dual)
    };
    // Translation of a unit dual quaternion: 2 * dual * conj(real).
    let t = (dual * real.conjugate()) * 2.0;
    out.positions[v] = real * src.positions[v] + Vec3::new(t.x, t.y, t.z);
    if let (Some(o), Some(n)) = (out.normals.as_deref_mut(), src.normals) {
        o[v] = unit(Vec3A::from(real * n[v]), n[v]);
    }
    if let (Some(o), Some(t)) = (out.tangents.as_deref_mut(), src.tangents) {
        let t = t[v];
        o[v] = unit(Vec3A::from(real * t.truncate()), t.truncate()).extend(t.w);
    }
}

#[inline(always)]
fn real_zero() -> Quat {
    Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)
}

/// Skins one influence group with `K` influences per vertex.
#[inline(always)]
fn group<const K: usize, const F: bool>(
    palette: &SkinPalette,
    joints: &[u16],
    weights: &[f32],
    src: &Source<'_>,
    out: SkinOutput<'_>,
) {
    // Every slice cut to exactly `n` (or `n` vertices' worth) up front, so the loop's
    // indexing needs no bounds checks.
    let n = src.positions.len();
    let mut out = SkinOutput {
        positions: &mut out.positions[..n],
        normals: out.normals.map(|o| &mut o[..n]),
        tangents: out.tangents.map(|o| &mut o[..n]),
    };
    let src = Source {
        positions: &src.positions[..n],
        normals: src.normals.map(|s| &s[..n]),
        tangents: src.tangents.map(|s| &s[..n]),
    };
    let joints = &joints[..n * K];
    let dq = palette.dual_ready;
    let mut vertex = |v: usize, j: &[u16], w: &[f32]| {
        if dq && j.iter().all(|&j| palette.rigid[j as usize]) {
            dual_vertex::<K>(palette, j, w, &src, v, &mut out);
        } else {
            linear_vertex::<K, F>(palette, j, w, &src, v, &mut out);
        }
    };
    if K == 1 {
        for (v, j) in joints.chunks_exact(1).enumerate() {
            vertex(v, j, &[]);
        }
    } else {
        let weights = &weights[..n * (K - 1)];
        for (v, (j, w)) in joints
            .chunks_exact(K)
            .zip(weights.chunks_exact(K - 1))
            .enumerate()
        {
            vertex(v, j, w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_and_huge_directions_fall_back_instead_of_blowing_up() {
        let f = Vec3::X;
        for l in [1e-45f32, 1e-40, 0.0, f32::INFINITY, f32::NAN] {
            assert_eq!(unit(Vec3A::new(l, 0.0, 0.0), f), f, "length {l}");
        }
        let v = unit(Vec3A::new(0.0, 2e-19, 0.0), f);
        assert!((v - Vec3::Y).length() < 1e-5, "{v}");
    }

    /// The FMA build (used on this machine when it has FMA) and the baseline build agree.
    /// (With `scalar` the dispatch always takes the baseline build: nothing to compare.)
    #[cfg(not(feature = "scalar"))]
    #[test]
    fn fma_and_baseline_paths_agree() {
        let n = 200;
        let mut p = MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.1, (i % 7) as f32, 1.0))
                .collect(),
            normals: Some(
                (0..n)
                    .map(|i| Vec3::new(1.0, i as f32, 0.5).normalize())
                    .collect(),
            ),
            tangents: Some((0..n).map(|_| Vec4::new(0.0, 0.0, 1.0, -1.0)).collect()),
            influences: 8,
            ..Default::default()
        };
        for v in 0..n {
            for i in 0..8 {
                p.joints.push(((v + 3 * i) % 5) as u16);
                p.weights
                    .push(if i <= v % 8 { 1.0 + i as f32 } else { 0.0 });
            }
        }
        let mesh = SkinningMesh::new(&p, 5).unwrap();
        assert!(
            mesh.groups().len() >= 8,
            "every influence count is exercised"
        );
        let mats: Vec<Mat4> = (0..5)
            .map(|i| {
                Mat4::from_scale_rotation_translation(
                    Vec3::new(1.0, 1.0 + i as f32 * 0.2, 1.0),
                    Quat::from_rotation_y(i as f32),
                    Vec3::splat(i as f32),
                )
            })
            .collect();
        let mut pal = SkinPalette::new(SkinningMethod::Linear);
        pal.set_matrices(&mats);
        let run = |fma: bool| {
            let mut pos = vec![Vec3::ZERO; n];
            let mut nrm = vec![Vec3::ZERO; n];
            let mut tan = vec![Vec4::ZERO; n];
            let out = SkinOutput {
                positions: &mut pos,
                normals: Some(&mut nrm),
                tangents: Some(&mut tan),
            };
            if fma {
                skin_range_dispatch(&mesh, &pal, 0, out);
            } else {
                skin_range::<false>(&mesh, &pal, 0, out);
            }
            (pos, nrm, tan)
        };
        let (a, b) = (run(true), run(false));
        for v in 0..n {
            assert!(
                (a.0[v] - b.0[v]).length() < 1e-4,
                "{v}: {} {}",
                a.0[v],
                b.0[v]
            );
            assert!((a.1[v] - b.1[v]).length() < 1e-5);
            assert!((a.2[v] - b.2[v]).length() < 1e-5);
        }
    }

    #[test]
    fn rigidity_and_similarity() {
        let r = Mat4::from_rotation_translation(Quat::from_rotation_y(1.0), Vec3::X);
        assert!(is_rigid(&r, 1e-3) && is_similarity(&r, 1e-4));
        let s = r * Mat4::from_scale(Vec3::splat(2.0));
        assert!(!is_rigid(&s, 1e-3) && is_similarity(&s, 1e-4));
        let n = r * Mat4::from_scale(Vec3::new(1.0, 2.0, 1.0));
        assert!(!is_rigid(&n, 1e-3) && !is_similarity(&n, 1e-4));
        let mirror = Mat4::from_scale(Vec3::new(-1.0, 1.0, 1.0));
        assert!(!is_rigid(&mirror, 1e-3) && is_similarity(&mirror, 1e-4));
    }
}

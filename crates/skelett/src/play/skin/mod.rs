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
//! The blend is turned into a matrix without a square root (one division by the squared
//! length of its rotation part) and applied like linear blending's. That matrix is a
//! rotation, which keeps a direction's length: where every bind normal of the mesh is unit
//! within [`UNIT_NORMAL_TOLERANCE`] (and no morph target has moved them), normals are only
//! rotated and come out unit within twice that; otherwise they are renormalised.
//!
//! **Speed.** On CPUs with AVX and FMA (chosen at run time; the `scalar` feature turns it
//! off) linear blending takes each palette matrix as two 256-bit registers, so a blend of `k`
//! matrices is `2 k` multiply-adds, and renormalises the directions eight at a time
//! (`linear_avx.rs`); dual quaternion skinning does eight vertices at once, one per lane
//! (`dual_avx.rs`), and when every palette entry is rigid, vertices with one joint go through
//! the linear kernel with the dual quaternions' matrices. On CesiumMan (positions and unit
//! normals) linear blending takes 0.71-0.84x the time of ozz-animation's job built for its
//! SSE2 baseline (which leaves normals unnormalised; 0.77-0.90x its AVX2 and FMA build), and
//! dual quaternions 1.25-1.38x linear blending's (1.5-2.0x before they stopped renormalising
//! unit normals and unrolled their blend; `scripts/bench/ozz_skinning.sh`,
//! `benches/skinning.rs`, the README's "Speed").
//!
//! `skin_par` (feature `rayon`) splits the vertices into chunks skinned on rayon's pool.

mod dual_avx;
mod kernel;
mod linear_avx;
mod mesh;
mod palette;

pub use mesh::{InfluenceGroup, SkinningMesh, MAX_INFLUENCES, UNIT_NORMAL_TOLERANCE};
pub use palette::{DualQuat, SkinPalette, SkinningMethod};

use kernel::*;

use glam::{Vec3, Vec4};

use crate::error::check_len;
use crate::morph::Morphed;
use crate::Error;

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

/// One past the largest joint index in `joints` (0 for none): what the AVX kernels check
/// against the palette once before loading its entries unchecked.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[inline]
pub(super) fn joint_bound(joints: &[u16]) -> usize {
    joints.iter().copied().max().map_or(0, |j| j as usize + 1)
}

#[allow(clippy::type_complexity)]
pub(super) fn split_opt<T>(
    s: Option<&mut [T]>,
    mid: usize,
) -> (Option<&mut [T]>, Option<&mut [T]>) {
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
    skin_range_dispatch(mesh, palette, None, 0, out);
    Ok(())
}

/// [`skin`] from a morphed bind pose (`crate::morph::skin_morphed`, which checks `morphed`).
pub(crate) fn skin_from(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: &Morphed,
    out: SkinOutput<'_>,
) -> Result<(), Error> {
    check(mesh, palette, &out)?;
    skin_range_dispatch(mesh, palette, Some(morphed), 0, out);
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
    skin_par_from(mesh, palette, None, out, chunk_vertices)
}

/// [`skin_par`] from a morphed bind pose (`crate::morph::skin_morphed_par`).
#[cfg(feature = "rayon")]
pub(crate) fn skin_from_par(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: &Morphed,
    out: SkinOutput<'_>,
    chunk_vertices: usize,
) -> Result<(), Error> {
    skin_par_from(mesh, palette, Some(morphed), out, chunk_vertices)
}

#[cfg(feature = "rayon")]
fn skin_par_from(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: Option<&Morphed>,
    out: SkinOutput<'_>,
    chunk_vertices: usize,
) -> Result<(), Error> {
    check(mesh, palette, &out)?;
    let n = mesh.vertex_count();
    fn split(
        mesh: &SkinningMesh,
        palette: &SkinPalette,
        morphed: Option<&Morphed>,
        start: usize,
        len: usize,
        out: SkinOutput<'_>,
        chunk: usize,
    ) {
        if len <= chunk {
            skin_range_dispatch(mesh, palette, morphed, start, out);
        } else {
            let half = len / 2;
            let (a, b) = out.split_at(half);
            rayon::join(
                || split(mesh, palette, morphed, start, half, a, chunk),
                || split(mesh, palette, morphed, start + half, len - half, b, chunk),
            );
        }
    }
    let out = out.split_at(n).0;
    split(mesh, palette, morphed, 0, n, out, chunk_vertices.max(256));
    Ok(())
}

pub(super) fn check(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    out: &SkinOutput<'_>,
) -> Result<(), Error> {
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

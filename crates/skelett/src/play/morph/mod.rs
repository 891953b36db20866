//! Morph targets (blend shapes): weighted vertex offsets applied to the bind pose before
//! skinning.
//!
//! ```text
//! MeshPrimitive::morph_targets ──SkinningMesh::new──▶ sparse targets, skinning order
//!                                                      (only the vertices each one moves)
//! Animator::morph_weights / sample_morph_weights ──▶ one weight per skeleton morph channel
//!                  ──MorphBinding (binding.rs)──▶ one weight per target (in-betweens blended)
//! morph(&mesh, weights, &mut Morphed)      base + Σ weight · offset, active targets only
//! skin_morphed(&mesh, &palette, &Morphed, SkinOutput)   morph first, skin second (as glTF)
//! ```
//!
//! **Where the data comes from.** Importers read the targets (glTF `targets`, FBX blend-shape
//! channels) into [`crate::MorphTarget`]s, one offset per vertex, and the weight curves into
//! clips ([`crate::Clip::with_morph_tracks`]). [`crate::skin::SkinningMesh::new`] keeps, per
//! target, only the vertices it moves, in skinning order: a face target that moves 300 of
//! 20,000 vertices costs 300 vertices' work. Target `k` is weighed by the skeleton's morph
//! channel [`crate::SkinnedMesh::morph_channels`]`[k]`, fully applied at that channel's
//! weight [`crate::SkinnedMesh::morph_full_weights`]`[k]` (1 unless the source has FBX
//! in-between shapes, see [`MorphBinding`]); bind them with
//! [`crate::skin::SkinningMesh::bind_morph`] (target `k` reads channel `k` until then).
//!
//! **Where it goes.** [`morph`] writes the morphed bind pose into a [`Morphed`] (per
//! character, allocated once); [`skin_morphed`] skins from it exactly as
//! [`crate::skin::skin`] skins the bind pose. Only targets with a non-zero weight cost
//! anything; with none active, nothing is copied and skinning reads the mesh itself. There is
//! no cap on the number of targets or active targets. Morphed normals and tangents are
//! renormalised; a tangent keeps its base handedness.
//!
//! No crate does this over skelett's skinning layout, so it is written here; the arithmetic
//! is glTF's (`POSITION + Σ w_k · target_k.POSITION`), as three.js and Blender evaluate it.

mod binding;

pub use binding::MorphBinding;

use glam::{Vec3, Vec4};

use crate::error::check_len;
use crate::skin::{SkinOutput, SkinPalette, SkinningMesh};
use crate::{Error, MorphTarget};

/// One morph target, sparse: the vertices it moves (skinning order, ascending) and their
/// offsets. An attribute's array is empty when the target does not offset it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SparseTarget {
    pub rows: Vec<u32>,
    pub positions: Vec<Vec3>,
    pub normals: Vec<Vec3>,
    pub tangents: Vec<Vec3>,
}

/// A mesh's morph targets in skinning order, with how each reads the morph channels.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SparseTargets {
    pub targets: Vec<SparseTarget>,
    pub binding: MorphBinding,
}

impl SparseTargets {
    /// Keeps the vertices each target moves; `inverse[v]` is source vertex `v`'s place in
    /// skinning order.
    pub(crate) fn new(targets: &[MorphTarget], inverse: &[u32]) -> Self {
        let n = inverse.len();
        let zero = Vec3::ZERO;
        let mut out = Vec::with_capacity(targets.len());
        for t in targets {
            let get = |a: &Option<Vec<Vec3>>, v: usize| a.as_ref().map_or(zero, |a| a[v]);
            let mut rows: Vec<(u32, Vec3, Vec3, Vec3)> = (0..n)
                .filter_map(|v| {
                    let (p, nn, tt) = (
                        get(&t.positions, v),
                        get(&t.normals, v),
                        get(&t.tangents, v),
                    );
                    (p != zero || nn != zero || tt != zero).then_some((inverse[v], p, nn, tt))
                })
                .collect();
            rows.sort_unstable_by_key(|r| r.0);
            let keep = |on: bool, f: fn(&(u32, Vec3, Vec3, Vec3)) -> Vec3| {
                if on {
                    rows.iter().map(f).collect()
                } else {
                    Vec::new()
                }
            };
            out.push(SparseTarget {
                positions: keep(t.positions.is_some(), |r| r.1),
                normals: keep(t.normals.is_some(), |r| r.2),
                tangents: keep(t.tangents.is_some(), |r| r.3),
                rows: rows.iter().map(|r| r.0).collect(),
            });
        }
        let channels: Vec<u32> = (0..targets.len() as u32).collect();
        SparseTargets {
            binding: MorphBinding::new(&channels, &[]).unwrap_or_default(),
            targets: out,
        }
    }
}

impl SkinningMesh {
    /// Number of morph targets.
    pub fn morph_target_count(&self) -> usize {
        self.morph.targets.len()
    }

    /// For each morph target, the morph channel whose weight it reads.
    pub fn morph_channels(&self) -> &[u32] {
        self.morph.binding.channels()
    }

    /// How the targets read the morph channels ([`SkinningMesh::bind_morph`]).
    pub fn morph_binding(&self) -> &MorphBinding {
        &self.morph.binding
    }

    /// For each morph target, how many vertices it moves.
    pub fn morph_target_sizes(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.morph.targets.iter().map(|t| t.rows.len())
    }

    /// Binds target `k` to the skeleton's morph channel `channels[k]` (a mesh's
    /// [`crate::SkinnedMesh::morph_channels`]), each fully applied at weight 1, so that
    /// [`morph`] reads the weights the animator writes
    /// ([`crate::animator::Animator::morph_weights`]). For meshes that may have in-between
    /// shapes, use [`SkinningMesh::bind_morph`].
    ///
    /// # Errors
    /// [`Error::Mesh`] if `channels` does not have one entry per target.
    pub fn set_morph_channels(&mut self, channels: &[u32]) -> Result<(), Error> {
        self.bind_morph(channels, &[])
    }

    /// Binds target `k` to the skeleton's morph channel `channels[k]`, fully applied at that
    /// channel's weight `full_weights[k]` (empty: all at 1): pass a mesh's
    /// [`crate::SkinnedMesh::morph_channels`] and [`crate::SkinnedMesh::morph_full_weights`].
    /// Targets of one channel at different full weights are in-between shapes
    /// ([`MorphBinding`]).
    ///
    /// # Errors
    /// [`Error::Mesh`] if `channels` does not have one entry per target, or the full weights
    /// are not valid ([`MorphBinding::new`]).
    pub fn bind_morph(&mut self, channels: &[u32], full_weights: &[f32]) -> Result<(), Error> {
        if channels.len() != self.morph.targets.len() {
            return Err(Error::Mesh {
                mesh: String::new(),
                problem: format!(
                    "{} morph channels given for {} morph targets",
                    channels.len(),
                    self.morph.targets.len()
                ),
            });
        }
        self.morph.binding = MorphBinding::new(channels, full_weights)?;
        Ok(())
    }

    /// The sparse offsets of target `k`. For GPU uploads and tests.
    pub fn morph_target(&self, k: usize) -> Option<SparseTargetView<'_>> {
        self.morph.targets.get(k).map(|t| SparseTargetView {
            rows: &t.rows,
            positions: &t.positions,
            normals: &t.normals,
            tangents: &t.tangents,
        })
    }
}

/// One morph target of a [`SkinningMesh`], sparse ([`SkinningMesh::morph_target`]).
#[derive(Clone, Copy, Debug)]
pub struct SparseTargetView<'a> {
    /// The vertices it moves, in skinning order, ascending.
    pub rows: &'a [u32],
    /// Their position offsets (empty if the target has none).
    pub positions: &'a [Vec3],
    /// Their normal offsets (empty if none).
    pub normals: &'a [Vec3],
    /// Their tangent offsets (empty if none).
    pub tangents: &'a [Vec3],
}

/// A mesh's bind pose after its morph targets, per character (what [`morph`] writes and
/// [`skin_morphed`] reads). Allocated once by [`Morphed::new`].
#[derive(Clone, Debug, Default)]
pub struct Morphed {
    pub(crate) positions: Vec<Vec3>,
    pub(crate) normals: Option<Vec<Vec3>>,
    pub(crate) tangents: Option<Vec<Vec4>>,
    /// Targets with a non-zero weight at the last [`morph`]; 0: the buffers are stale and
    /// the mesh's own bind pose applies.
    pub(crate) active: usize,
    /// Each target's weight at the last [`morph`] ([`MorphBinding::target_weights`]).
    pub(crate) target_weights: Vec<f32>,
}

impl Morphed {
    /// Buffers for `mesh` (one entry per vertex and attribute it has).
    pub fn new(mesh: &SkinningMesh) -> Self {
        Morphed {
            positions: mesh.positions().to_vec(),
            normals: mesh.normals().map(<[Vec3]>::to_vec),
            tangents: mesh.tangents().map(<[Vec4]>::to_vec),
            active: 0,
            target_weights: vec![0.0; mesh.morph_target_count()],
        }
    }

    /// How many targets had a non-zero weight at the last [`morph`].
    pub fn active_targets(&self) -> usize {
        self.active
    }

    /// The morphed positions (skinning order), or `None` when no target is active (the mesh's
    /// bind pose applies).
    pub fn positions(&self) -> Option<&[Vec3]> {
        (self.active > 0).then_some(&self.positions[..])
    }

    /// The morphed normals (skinning order; unit only where no joint moves the vertex, as
    /// skinning renormalises the rest), or `None` when no target is active or the
    /// mesh has no normals.
    pub fn normals(&self) -> Option<&[Vec3]> {
        (self.active > 0)
            .then_some(self.normals.as_deref())
            .flatten()
    }
}

/// Applies `mesh`'s morph targets with `weights` (one per skeleton morph channel, as
/// [`crate::animator::Animator::morph_weights`] and [`crate::sample_morph_weights`] give
/// them) to its bind pose, into `out`. Each target's weight comes from its channel's through
/// the mesh's [`MorphBinding`] (the channel's weight itself, or its in-between blend). A
/// weight of zero (or NaN) skips its target; weights outside 0..=1 extrapolate, as glTF
/// allows. Allocation-free.
///
/// ```
/// use glam::{Mat4, Vec3, Vec4};
/// use skelett::morph::{morph, skin_morphed, Morphed};
/// use skelett::skin::{SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
/// use skelett::{MeshPrimitive, MorphTarget};
///
/// let p = MeshPrimitive {
///     positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y],
///     influences: 1,
///     joints: vec![0; 3],
///     weights: vec![1.0; 3],
///     indices: vec![0, 1, 2],
///     base_color: Vec4::ONE,
///     // One target that lifts the third vertex by 1.
///     morph_targets: vec![MorphTarget { positions: Some(vec![Vec3::ZERO, Vec3::ZERO, Vec3::Z]),
///                                       ..Default::default() }],
///     ..Default::default()
/// };
/// let mesh = SkinningMesh::new(&p, 1)?;
/// let mut morphed = Morphed::new(&mesh);
/// morph(&mesh, &[0.5], &mut morphed)?;
/// assert_eq!(morphed.active_targets(), 1);
///
/// let mut palette = SkinPalette::new(SkinningMethod::Linear);
/// palette.set_matrices(&[Mat4::from_translation(Vec3::new(10.0, 0.0, 0.0))]);
/// let mut out = vec![Vec3::ZERO; 3];
/// skin_morphed(&mesh, &palette, &morphed, SkinOutput { positions: &mut out, normals: None, tangents: None })?;
/// let v = mesh.source_vertices().iter().position(|&s| s == 2).unwrap();
/// assert_eq!(out[v], Vec3::new(10.0, 1.0, 0.5));
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if `weights` does not reach the highest channel a target reads, or `out`
/// was made for a mesh with fewer vertices; nothing is written then.
pub fn morph(mesh: &SkinningMesh, weights: &[f32], out: &mut Morphed) -> Result<(), Error> {
    let m = &mesh.morph;
    let n = mesh.vertex_count();
    check_len("morphed positions", n, out.positions.len())?;
    check_len(
        "morphed target weights",
        m.targets.len(),
        out.target_weights.len(),
    )?;
    let active = m.binding.target_weights(weights, &mut out.target_weights)?;
    out.active = active;
    if active == 0 {
        return Ok(());
    }
    out.positions[..n].copy_from_slice(mesh.positions());
    let mut normals = match (&mut out.normals, mesh.normals()) {
        (Some(o), Some(src)) if o.len() >= n => {
            o[..n].copy_from_slice(src);
            Some(&mut o[..n])
        }
        _ => None,
    };
    let mut tangents = match (&mut out.tangents, mesh.tangents()) {
        (Some(o), Some(src)) if o.len() >= n => {
            o[..n].copy_from_slice(src);
            Some(&mut o[..n])
        }
        _ => None,
    };
    let (mut moved_normals, mut moved_tangents) = (false, false);
    for (t, &w) in m.targets.iter().zip(&out.target_weights) {
        if w == 0.0 {
            continue;
        }
        let positions = &mut out.positions[..n];
        for (&r, &d) in t.rows.iter().zip(&t.positions) {
            positions[r as usize] += w * d;
        }
        if let (Some(o), false) = (normals.as_deref_mut(), t.normals.is_empty()) {
            for (&r, &d) in t.rows.iter().zip(&t.normals) {
                o[r as usize] += w * d;
            }
            moved_normals = true;
        }
        if let (Some(o), false) = (tangents.as_deref_mut(), t.tangents.is_empty()) {
            for (&r, &d) in t.rows.iter().zip(&t.tangents) {
                let v = &mut o[r as usize];
                *v += (w * d).extend(0.0);
            }
            moved_tangents = true;
        }
    }
    // Skinning renormalises directions, except for the vertices no joint moves (copied as
    // they are): make those unit here.
    let unmoved = mesh
        .groups()
        .iter()
        .find(|g| g.influences == 0)
        .map_or(0..0, |g| g.start..g.start + g.len);
    if let (Some(o), true) = (normals, moved_normals) {
        for v in &mut o[unmoved.clone()] {
            *v = v.normalize_or(*v);
        }
    }
    if let (Some(o), true) = (tangents, moved_tangents) {
        for v in &mut o[unmoved] {
            let d = v.truncate();
            *v = d.normalize_or(d).extend(v.w);
        }
    }
    Ok(())
}

/// Skins `mesh` with `palette` from the morphed bind pose in `morphed` (from [`morph`]), into
/// `out` (skinning order): [`crate::skin::skin`] with the morph applied first. With no active
/// target it is exactly [`crate::skin::skin`].
///
/// # Errors
/// As [`crate::skin::skin`]; [`Error::Length`] also if `morphed` was made for a smaller mesh.
pub fn skin_morphed(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: &Morphed,
    out: SkinOutput<'_>,
) -> Result<(), Error> {
    if morphed.active == 0 {
        return crate::skin::skin(mesh, palette, out);
    }
    check_len(
        "morphed positions",
        mesh.vertex_count(),
        morphed.positions.len(),
    )?;
    crate::skin::skin_from(mesh, palette, morphed, out)
}

/// [`skin_morphed`] on rayon's thread pool, as [`crate::skin::skin_par`].
///
/// # Errors
/// As [`skin_morphed`].
#[cfg(feature = "rayon")]
pub fn skin_morphed_par(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: &Morphed,
    out: SkinOutput<'_>,
    chunk_vertices: usize,
) -> Result<(), Error> {
    if morphed.active == 0 {
        return crate::skin::skin_par(mesh, palette, out, chunk_vertices);
    }
    check_len(
        "morphed positions",
        mesh.vertex_count(),
        morphed.positions.len(),
    )?;
    crate::skin::skin_from_par(mesh, palette, morphed, out, chunk_vertices)
}

//! The skinning mesh: vertices grouped by influence count, weights normalised with the
//! last one implied, built once per asset ([`SkinningMesh::new`]).

use glam::{Vec3, Vec4};

use crate::error::check_len;
pub use crate::mesh::MAX_INFLUENCES;
use crate::{Error, MeshPrimitive};

/// How far from unit length (relative) bind normals may be for dual quaternion skinning to
/// rotate them without renormalising: the skinned normals are then unit within twice this
/// (the rotation's rounding adds a few parts in 10^7).
pub const UNIT_NORMAL_TOLERANCE: f32 = 1e-6;

/// A run of vertices, in skinning order, that all have the same number of influences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfluenceGroup {
    /// Influences per vertex (0: no joint moves these vertices; they keep their bind pose).
    pub influences: usize,
    /// First vertex of the group, in skinning order.
    pub start: usize,
    /// Number of vertices.
    pub len: usize,
    pub(super) joint_offset: usize,
    pub(super) weight_offset: usize,
}

/// A mesh primitive prepared for skinning: vertices grouped by influence count, weights
/// normalised with the last one implied. Build once per asset and share.
#[derive(Clone, Debug, PartialEq)]
pub struct SkinningMesh {
    pub(super) source: Vec<u32>,
    pub(super) groups: Vec<InfluenceGroup>,
    pub(super) positions: Vec<Vec3>,
    pub(super) normals: Option<Vec<Vec3>>,
    pub(super) tangents: Option<Vec<Vec4>>,
    pub(super) joints: Vec<u16>,
    pub(super) weights: Vec<f32>,
    pub(super) indices: Vec<u32>,
    pub(super) palette_len: usize,
    /// Whether every bind normal is of unit length within [`UNIT_NORMAL_TOLERANCE`] (and
    /// there are normals): rotations then keep them unit, so dual quaternion skinning
    /// rotates them without renormalising.
    pub(super) unit_normals: bool,
    /// Morph targets, sparse, in skinning order (see [`crate::morph`]).
    pub(crate) morph: crate::morph::SparseTargets,
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
        let unit_normals = p.normals.as_ref().is_some_and(|n| {
            n.iter()
                .all(|n| (n.length_squared() - 1.0).abs() <= 2.0 * UNIT_NORMAL_TOLERANCE)
        });
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
            unit_normals,
            morph: crate::morph::SparseTargets::new(&p.morph_targets, &inverse),
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

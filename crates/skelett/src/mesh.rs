//! Skinned meshes: vertex data bound to a [`Skin`].
//!
//! Importers fill [`MeshPrimitive`]s; [`SkinnedMesh::validate`] checks them once, so that
//! skinning can index without further checks. Each vertex has a fixed number of influences
//! ([`MeshPrimitive::influences`], 4 or 8 from glTF's `JOINTS_0/1`), stored as flat arrays of
//! palette indices and weights; unused slots have weight 0.
//!
//! A primitive may carry morph targets ([`MorphTarget`]: per-vertex offsets of positions,
//! normals and tangents, as glTF and FBX blend shapes store them). Target `k` of every
//! primitive of a mesh is weighed by the skeleton's morph channel
//! [`SkinnedMesh::morph_channels`]`[k]`; [`crate::morph`] applies them before skinning.

use glam::{Vec2, Vec3, Vec4};

use crate::{Error, Skin};

/// Most influences a vertex may have.
pub const MAX_INFLUENCES: usize = 8;

/// One primitive (one draw call's worth of triangles) of a skinned mesh.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct MeshPrimitive {
    /// Bind-pose positions, in model space.
    pub positions: Vec<Vec3>,
    /// Bind-pose normals, if the source has them.
    pub normals: Option<Vec<Vec3>>,
    /// Tangents with handedness in `w`, if the source has them.
    pub tangents: Option<Vec<Vec4>>,
    /// First texture coordinate set, if any.
    pub uvs: Option<Vec<Vec2>>,
    /// Influences per vertex (the stride of `joints` and `weights`).
    pub influences: usize,
    /// Palette indices (into the skin's joints), `influences` per vertex.
    pub joints: Vec<u16>,
    /// Weights, `influences` per vertex. Importers normalise them to sum to 1 (all 0 marks a
    /// vertex no joint moves); [`SkinnedMesh::validate`] checks only that they are finite and
    /// non-negative.
    pub weights: Vec<f32>,
    /// Triangle list indices.
    pub indices: Vec<u32>,
    /// Index of the base colour texture's image in the source file, if any (for renderers).
    pub base_color_texture: Option<usize>,
    /// Base colour factor (linear RGBA).
    pub base_color: Vec4,
    /// Morph targets (blend shapes), in the mesh's target order.
    pub morph_targets: Vec<MorphTarget>,
}

/// One morph target of a [`MeshPrimitive`]: offsets added to the bind-pose vertices, times
/// the target's weight, before skinning. Each present attribute has one entry per vertex
/// (importers expand sparse sources; [`crate::skin::SkinningMesh`] keeps only the vertices a
/// target moves).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct MorphTarget {
    /// Position offsets.
    pub positions: Option<Vec<Vec3>>,
    /// Normal offsets (the sum is renormalised after skinning).
    pub normals: Option<Vec<Vec3>>,
    /// Tangent offsets (`xyz`; the handedness stays the base tangent's).
    pub tangents: Option<Vec<Vec3>>,
}

impl MeshPrimitive {
    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// For each vertex, how many of its weights are non-zero.
    pub fn influence_counts(&self) -> impl Iterator<Item = usize> + '_ {
        self.weights
            .chunks_exact(self.influences.max(1))
            .map(|w| w.iter().filter(|&&w| w > 0.0).count())
    }
}

/// A mesh bound to a skin of a skeleton.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SkinnedMesh {
    /// The mesh's name.
    pub name: String,
    /// Index of its skin in the asset's skins.
    pub skin: usize,
    /// Its primitives.
    pub primitives: Vec<MeshPrimitive>,
    /// For each morph target (target `k` of every primitive), the skeleton's morph channel
    /// that weighs it ([`crate::Skeleton::morph_channel_names`]). Empty for a mesh without
    /// targets.
    pub morph_channels: Vec<u32>,
    /// For each morph target, the weight of its channel at which the target is fully applied
    /// (FBX's `FullWeights` / 100). Empty: every target at 1, as in glTF. Several targets of
    /// one channel at different full weights are FBX/Maya *in-between* shapes: the channel's
    /// weight moves piecewise-linearly from the base (weight 0) through each shape in turn,
    /// extrapolating past the first and last ([`crate::morph::MorphBinding`]).
    pub morph_full_weights: Vec<f32>,
}

impl SkinnedMesh {
    /// Checks every primitive against `skin`: attribute lengths agree, indices and palette
    /// indices (of every slot, weighted or not) are in range, values are finite, and weights
    /// are non-negative.
    ///
    /// # Errors
    /// [`Error::Mesh`] naming the primitive and the problem.
    pub fn validate(&self, skin: &Skin) -> Result<(), Error> {
        for (pi, p) in self.primitives.iter().enumerate() {
            p.check(skin.len()).map_err(|problem| Error::Mesh {
                mesh: self.name.clone(),
                problem: format!("primitive {pi}: {problem}"),
            })?;
            if p.morph_targets.len() != self.morph_channels.len() {
                return Err(Error::Mesh {
                    mesh: self.name.clone(),
                    problem: format!(
                        "primitive {pi} has {} morph targets, the mesh binds {} morph channels",
                        p.morph_targets.len(),
                        self.morph_channels.len()
                    ),
                });
            }
        }
        self.check_full_weights()
    }

    /// The full weights, if any, are one per target, finite, non-zero, and distinct within
    /// a channel.
    fn check_full_weights(&self) -> Result<(), Error> {
        let f = &self.morph_full_weights;
        if f.is_empty() {
            return Ok(());
        }
        let bad = |problem: String| {
            Err(Error::Mesh {
                mesh: self.name.clone(),
                problem,
            })
        };
        if f.len() != self.morph_channels.len() {
            return bad(format!(
                "{} morph full weights for {} morph targets",
                f.len(),
                self.morph_channels.len()
            ));
        }
        for (k, &w) in f.iter().enumerate() {
            if !w.is_finite() || w == 0.0 {
                return bad(format!(
                    "morph target {k}'s full weight is {w}; it must be finite and non-zero"
                ));
            }
            let c = self.morph_channels[k];
            if let Some(j) = (0..k).find(|&j| self.morph_channels[j] == c && f[j] == w) {
                return bad(format!(
                    "morph targets {j} and {k} of channel {c} share the full weight {w}"
                ));
            }
        }
        Ok(())
    }

    /// Checks that every morph channel the mesh binds exists in a skeleton with
    /// `channel_count` morph channels.
    ///
    /// # Errors
    /// [`Error::Mesh`] naming the first target bound past the channels.
    pub fn validate_morph_channels(&self, channel_count: usize) -> Result<(), Error> {
        match self
            .morph_channels
            .iter()
            .position(|&c| c as usize >= channel_count)
        {
            Some(k) => Err(Error::Mesh {
                mesh: self.name.clone(),
                problem: format!(
                    "morph target {k} is bound to channel {}, the skeleton has {channel_count}",
                    self.morph_channels[k]
                ),
            }),
            None => Ok(()),
        }
    }
}

impl MeshPrimitive {
    /// Checks the primitive against a palette of `palette_len` entries: attribute lengths
    /// agree, indices and palette indices (of every slot, weighted or not) are in range,
    /// values are finite, and weights are non-negative. Returns the problem found.
    pub(crate) fn check(&self, palette_len: usize) -> Result<(), String> {
        let p = self;
        let err = |problem: String| problem;
        let n = p.positions.len();
        let same = |what: &str, len: Option<usize>| match len {
            Some(l) if l != n => Err(err(format!("{what} has {l} entries for {n} vertices"))),
            _ => Ok(()),
        };
        same("normals", p.normals.as_ref().map(Vec::len))?;
        same("tangents", p.tangents.as_ref().map(Vec::len))?;
        same("uvs", p.uvs.as_ref().map(Vec::len))?;
        for (k, t) in p.morph_targets.iter().enumerate() {
            for (what, v) in [
                ("positions", t.positions.as_deref()),
                ("normals", t.normals.as_deref()),
                ("tangents", t.tangents.as_deref()),
            ] {
                if let Some(v) = v {
                    same(&format!("morph target {k} {what}"), Some(v.len()))?;
                    if let Some(i) = v.iter().position(|d| !d.is_finite()) {
                        return Err(err(format!(
                            "morph target {k} {what} offset {i} is not finite"
                        )));
                    }
                }
            }
        }
        if p.influences == 0
            || p.influences > MAX_INFLUENCES
            || p.joints.len() != n * p.influences
            || p.weights.len() != n * p.influences
        {
            return Err(err(format!(
                "{} influences per vertex (1 to 8) need {} joints and weights, found {} and {}",
                p.influences,
                n * p.influences,
                p.joints.len(),
                p.weights.len()
            )));
        }
        // OR-reductions vectorise even on baseline SSE2; the culprit is searched only on
        // failure.
        let indices_ok = all_below(&p.indices, n);
        if let Some(i) = (!indices_ok)
            .then(|| p.indices.iter().position(|&i| i as usize >= n))
            .flatten()
        {
            return Err(err(format!(
                "index {i} is {}, past the {n} vertices",
                p.indices[i]
            )));
        }
        if p.indices.len() % 3 != 0 {
            return Err(err(format!(
                "{} indices do not make whole triangles",
                p.indices.len()
            )));
        }
        // Branch-free scans first (they vectorise); the slow search for the culprit only
        // runs when one fails.
        let n = palette_len;
        let weights_ok = p
            .weights
            .iter()
            .filter(|w| !(0.0..=f32::MAX).contains(*w))
            .count()
            == 0;
        let joints_ok = all_below(&p.joints, n);
        let positions_ok = all_finite(&p.positions);
        if !(weights_ok && joints_ok && positions_ok) {
            for (k, (&j, &w)) in p.joints.iter().zip(&p.weights).enumerate() {
                if !(w.is_finite() && w >= 0.0) {
                    return Err(err(format!("vertex {} has weight {w}", k / p.influences)));
                }
                if j as usize >= n {
                    return Err(err(format!(
                        "vertex {} uses palette entry {j}, the skin has {n}",
                        k / p.influences
                    )));
                }
            }
            if let Some(i) = p.positions.iter().position(|v| !v.is_finite()) {
                return Err(err(format!("position {i} is not finite")));
            }
        }
        Ok(())
    }
}

/// Whether every value is below `n`, as one 32-bit OR-reduction (it vectorises on baseline
/// SSE2, unlike an unsigned max): for `n <= 2^31`, `v | (n - 1 - v)` has bit 31 set exactly
/// when `v >= n`.
fn all_below<T: Copy + Into<u32>>(values: &[T], n: usize) -> bool {
    match n {
        0 => values.is_empty(),
        n if n > 1 << 31 => values.iter().all(|&v| (v.into() as usize) < n),
        n => {
            let last = (n - 1) as u32;
            let mut acc = 0u32;
            for &v in values {
                let v: u32 = v.into();
                acc |= v | last.wrapping_sub(v);
            }
            acc >> 31 == 0
        }
    }
}

/// Whether every coordinate is finite, as one OR-reduction over the exponent bits: adding
/// one to an all-ones exponent carries into the sign position, any other exponent does not.
fn all_finite(v: &[glam::Vec3]) -> bool {
    const EXP: u32 = 0x7f80_0000;
    let flag = |x: f32| (x.to_bits() & EXP).wrapping_add(0x0080_0000);
    bytemuck::cast_slice::<glam::Vec3, f32>(v)
        .iter()
        .fold(0u32, |acc, &x| acc | flag(x))
        >> 31
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_find_every_bad_value() {
        assert!(all_below(&[0u32, 4, 2], 5));
        assert!(!all_below(&[0u32, 5, 2], 5));
        assert!(!all_below(&[u32::MAX], 5));
        assert!(!all_below(&[1u32 << 31], 1 << 31));
        assert!(all_below(&[(1u32 << 31) - 1], 1 << 31));
        assert!(all_below(&[u32::MAX - 1], u32::MAX as usize));
        assert!(!all_below(&[u32::MAX], u32::MAX as usize));
        assert!(!all_below(&[0u32], 0));
        assert!(all_below::<u32>(&[], 0));
        let ok = [glam::Vec3::new(f32::MAX, -f32::MAX, f32::MIN_POSITIVE); 3];
        assert!(all_finite(&ok));
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -f32::NAN] {
            for axis in 0..3 {
                let mut v = ok;
                v[1][axis] = bad;
                assert!(!all_finite(&v), "{bad} on axis {axis}");
            }
        }
    }
}

/// An image file's bytes as the source stored them (PNG or JPEG), for renderers to decode:
/// meshes refer to it by index ([`MeshPrimitive::base_color_texture`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedImage {
    /// The MIME type the source declares (`image/png`, `image/jpeg`).
    pub mime: String,
    /// The encoded bytes.
    pub bytes: std::sync::Arc<[u8]>,
}

//! `skelett sample`: world matrices of every joint of skin 0 at given clip times.
//!
//! The JSON output has the shape of `shared/data/reference/*.json`: `clips`, a list (of the
//! one clip sampled) with `index`, `name`, `start`, `end` and `samples`, each with `t` and
//! `joints`, each with `joint`, `name` and `world` as 16 column-major numbers; so the two can
//! be compared number by number.
//!
//! With `--vertices N`, a skinned mesh primitive (the first, or the one `--mesh` and
//! `--primitive` pick) is skinned on the CPU at each time and N of its vertices (vertex `k * (count - 1) / (N - 1)`, rounded down) are reported in
//! the shape of `shared/data/reference/skin/*.json`: a top-level `vertices` list, and per
//! sample `local` (skelett's model space) and `world` (scene space) positions. Where the mesh
//! has morph targets they are applied first, with the clip's morph weights at that time (as
//! `shared/data/reference/morph/*.json` does), and each sample also lists the `weights` of
//! the mesh's targets: each target's own weight (for FBX in-between shapes, its share of
//! its channel's blend, not the channel's weight).

use std::path::Path;

use glam::{Mat4, Vec3};
use serde::Serialize;
use skelett::{
    local_to_model, sample, Pose, SamplingCache, SkinOutput, SkinPalette, SkinningMesh,
    SkinningMethod,
};

use crate::outln;

use crate::Result;

#[derive(Serialize)]
struct Output {
    source: String,
    convention: &'static str,
    clips: [ClipSamples; 1],
    /// With `--vertices`, the skin reference files' own fields: the clip and mesh sampled,
    /// the source vertex indices, and per sample `t`, `local` and `world`.
    #[serde(skip_serializing_if = "Option::is_none")]
    clip: Option<ClipId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mesh: Option<MeshId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vertices: Option<Vec<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<Vec<VertexSample>>,
}

#[derive(Serialize)]
struct ClipId {
    index: usize,
    name: String,
}

#[derive(Serialize)]
struct MeshId {
    mesh: usize,
    primitive: usize,
    name: String,
    #[serde(rename = "vertexCount")]
    vertex_count: usize,
}

#[derive(Serialize)]
struct VertexSample {
    t: f32,
    /// Skinned positions in skelett's model space (the skeleton's space; the reference's
    /// `local` is the mesh node's space, which skelett does not keep).
    local: Points,
    /// The same after the skeleton's root transform: scene space, as the reference's `world`.
    world: Points,
    /// The morph weight of each of the mesh's targets (none without targets).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    weights: Vec<f32>,
}

#[derive(Serialize)]
struct ClipSamples {
    index: usize,
    name: String,
    start: f32,
    end: f32,
    samples: Vec<Sample>,
}

#[derive(Serialize)]
struct Sample {
    t: f32,
    joints: Vec<JointWorld>,
}

/// A list of positions as JSON arrays.
type Points = Vec<[f32; 3]>;

/// The chosen skinned mesh primitive, ready to skin, and the vertices to report.
struct VertexProbe {
    mesh: SkinningMesh,
    /// Which mesh and primitive of the asset.
    at: (usize, usize),
    skin: usize,
    /// For each reported source vertex, its slot in skinning order.
    slots: Vec<usize>,
    sources: Vec<usize>,
    palette: SkinPalette,
    out: Vec<Vec3>,
    morphed: skelett::morph::Morphed,
    /// The skeleton's morph weights at the sampled time.
    weights: Vec<f32>,
}

impl VertexProbe {
    fn new(asset: &skelett_io::Asset, n: usize, at: (usize, usize), source: &str) -> Result<Self> {
        if asset.meshes.is_empty() {
            return Err(format!("--vertices: {source} has no skinned mesh").into());
        }
        let m = asset.meshes.get(at.0).ok_or_else(|| {
            format!(
                "--mesh {}: {source} has {} skinned meshes (0 to {})",
                at.0,
                asset.meshes.len(),
                asset.meshes.len() - 1
            )
        })?;
        let prim = m.primitives.get(at.1).ok_or_else(|| {
            format!(
                "--primitive {}: mesh {} ({:?}) has {} primitives",
                at.1,
                at.0,
                m.name,
                m.primitives.len()
            )
        })?;
        let skin = &asset.skins[m.skin];
        let mut mesh = SkinningMesh::new(prim, skin.len())?;
        mesh.bind_morph(&m.morph_channels, &m.morph_full_weights)?;
        let count = mesh.vertex_count();
        if n == 0 || count == 0 || n > count {
            return Err(format!(
                "--vertices {n}: mesh {} primitive {} has {count} vertices; ask for 1 to {count}",
                at.0, at.1
            )
            .into());
        }
        // Vertex k * (count - 1) / (n - 1), rounded down: evenly spread, first and last included.
        let sources: Vec<usize> = (0..n)
            .map(|k| if n == 1 { 0 } else { k * (count - 1) / (n - 1) })
            .collect();
        let mut slot_of = vec![0usize; count];
        for (slot, &v) in mesh.source_vertices().iter().enumerate() {
            slot_of[v as usize] = slot;
        }
        Ok(VertexProbe {
            at,
            slots: sources.iter().map(|&v| slot_of[v]).collect(),
            sources,
            skin: m.skin,
            palette: SkinPalette::new(SkinningMethod::Linear),
            out: vec![Vec3::ZERO; count],
            morphed: skelett::morph::Morphed::new(&mesh),
            weights: asset.skeleton.morph_rest().to_vec(),
            mesh,
        })
    }

    fn skin(
        &mut self,
        asset: &skelett_io::Asset,
        model: &[Mat4],
        root: Mat4,
    ) -> Result<(Points, Points)> {
        self.palette.update(&asset.skins[self.skin], model)?;
        skelett::morph::morph(&self.mesh, &self.weights, &mut self.morphed)?;
        skelett::morph::skin_morphed(
            &self.mesh,
            &self.palette,
            &self.morphed,
            SkinOutput {
                positions: &mut self.out,
                normals: None,
                tangents: None,
            },
        )?;
        let local: Vec<Vec3> = self.slots.iter().map(|&s| self.out[s]).collect();
        Ok((
            local.iter().map(|v| v.to_array()).collect(),
            local
                .iter()
                .map(|&v| root.transform_point3(v).to_array())
                .collect(),
        ))
    }
}

#[derive(Serialize)]
struct JointWorld {
    joint: usize,
    name: String,
    world: [f32; 16],
}

const CONVENTION: &str = "world: column-major 4x4 world matrix (scene space, including every \
non-joint ancestor node) of each joint of skin 0, in skin joint order; t is the clip time in the \
file's time base; before the first key = first key, past the last key = last key.";

/// Runs `skelett sample`.
pub fn run(
    out: &mut String,
    file: Option<&Path>,
    clip: Option<&str>,
    times: &[f32],
    vertices: Option<usize>,
    at: (usize, usize),
    json: bool,
) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    let mut probe = vertices
        .map(|n| VertexProbe::new(&asset, n, at, &source))
        .transpose()?;
    let (index, clip) = match clip {
        None => asset
            .clips
            .first()
            .map(|c| (0, c))
            .ok_or("the file has no clips")?,
        Some(name) => asset
            .clip_index(name)
            .map(|i| (i, &asset.clips[i]))
            .ok_or_else(|| {
                let names: Vec<&str> = asset.clips.iter().map(|c| c.name()).collect();
                format!("no clip {name:?}; the file has: {}", names.join(", "))
            })?,
    };
    if let Some(t) = times.iter().find(|t| !t.is_finite()) {
        return Err(format!("time {t} is not a finite number").into());
    }
    let skeleton = &asset.skeleton;
    let skin_joints = asset.skin_joints(0);
    let root = skeleton.root_transform();
    let mut cache = SamplingCache::for_clip(clip);
    let mut pose = Pose::rest(skeleton);
    let mut model = vec![Mat4::IDENTITY; skeleton.len()];
    let mut samples = Vec::with_capacity(times.len());
    let mut vertex_samples = Vec::new();
    for &t in times {
        sample(clip, t, &mut cache, &mut pose)?;
        local_to_model(skeleton, &pose, 0, &mut model)?;
        if let Some(p) = probe.as_mut() {
            skelett::sample_morph_weights(clip, t, &mut p.weights)?;
            let (local, world) = p.skin(&asset, &model, root)?;
            let binding = p.mesh.morph_binding();
            let mut weights = vec![0.0; binding.target_count()];
            binding.target_weights(&p.weights, &mut weights)?;
            vertex_samples.push(VertexSample {
                t,
                local,
                world,
                weights,
            });
        }
        samples.push(Sample {
            t,
            joints: skin_joints
                .iter()
                .enumerate()
                .map(|(k, &j)| JointWorld {
                    joint: k,
                    name: skeleton.name(j).to_string(),
                    world: (root * model[j as usize]).to_cols_array(),
                })
                .collect(),
        });
    }
    let result = Output {
        source,
        convention: CONVENTION,
        clips: [ClipSamples {
            index,
            name: clip.name().to_string(),
            start: clip.start(),
            end: clip.end(),
            samples,
        }],
        clip: probe.as_ref().map(|_| ClipId {
            index,
            name: clip.name().to_string(),
        }),
        mesh: probe.as_ref().map(|p| MeshId {
            mesh: p.at.0,
            primitive: p.at.1,
            name: asset.meshes[p.at.0].name.clone(),
            vertex_count: p.mesh.vertex_count(),
        }),
        vertices: probe.as_ref().map(|p| p.sources.clone()),
        samples: probe.as_ref().map(|_| vertex_samples),
    };
    if json {
        outln!(out, "{}", serde_json::to_string(&result)?);
        return Ok(());
    }
    let c = &result.clips[0];
    outln!(
        out,
        "{}: clip [{}] {:?}, {} .. {} s; world matrices (rows) of skin 0's joints",
        result.source,
        c.index,
        c.name,
        c.start,
        c.end
    );
    for s in &c.samples {
        outln!(out, "t = {}", s.t);
        for j in &s.joints {
            let m = Mat4::from_cols_array(&j.world);
            outln!(out, "  [{}] {}", j.joint, j.name);
            for r in 0..4 {
                let row = m.row(r);
                outln!(
                    out,
                    "      {:>13.7} {:>13.7} {:>13.7} {:>13.7}",
                    row.x,
                    row.y,
                    row.z,
                    row.w
                );
            }
        }
        let skinned = result.samples.iter().flatten().find(|v| v.t == s.t);
        if let (Some(VertexSample { world, weights, .. }), Some(vs), Some(m)) =
            (skinned, &result.vertices, &result.mesh)
        {
            if !weights.is_empty() {
                let w: Vec<String> = weights.iter().map(|w| format!("{w:.6}")).collect();
                outln!(out, "  morph target weights: {}", w.join(" "));
            }
            outln!(
                out,
                "  skinned vertices of mesh {}, primitive {} (scene space)",
                m.mesh,
                m.primitive
            );
            for (v, p) in vs.iter().zip(world) {
                outln!(
                    out,
                    "    [{v}] {:>13.7} {:>13.7} {:>13.7}",
                    p[0],
                    p[1],
                    p[2]
                );
            }
        }
    }
    Ok(())
}

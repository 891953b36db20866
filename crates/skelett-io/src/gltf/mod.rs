//! glTF 2.0 import (`.gltf` with external or `data:` buffers, and `.glb`).
//!
//! ```text
//! bytes ─container─▶ validated Document + buffers
//!   nodes ─▶ skeleton: every skin joint, the nodes between joints, and animated ancestors;
//!            what sits above the roots becomes Skeleton::root_transform
//!   skins ─▶ Skin (joints remapped to skeleton order, inverse bind matrices)
//!   nodes with mesh + skin ─▶ SkinnedMesh (triangle primitives: positions, normals,
//!            tangents, uv0, JOINTS_0/1 + WEIGHTS_0/1 as 4 or 8 influences)
//!   animations ─▶ RawClip (node TRS channels; STEP, LINEAR, CUBICSPLINE) ─build─▶ Clip
//! ```
//!
//! JSON parsing and document validation come from the `gltf` crate; the GLB container and
//! accessor reading are skelett's ([`container`], [`accessor`]) because they must check every
//! length against the file. Nothing is dropped silently: morph-weight channels, channels on
//! nodes outside the skeleton, non-triangle primitives and meshes without a skin are listed in
//! [`Asset::warnings`].

mod accessor;
mod anim;
mod container;
mod export;

pub use export::{save, to_bytes};

use std::collections::{HashMap, HashSet};
use std::path::Path;

use glam::{Mat4, Quat, Vec2, Vec3, Vec4};
use gltf::accessor::DataType;
use skelett::{
    JointIndex, MeshPrimitive, MorphChannel, MorphTarget, RawJoint, RawSkeleton, Skin, SkinnedMesh,
    Transform,
};

use self::accessor::{Accept, Reader};
use crate::{Asset, Error};

/// How to read a glTF file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// The folder external buffers (`"uri": "scene.bin"`) are read from. [`load_with`] uses
    /// the file's own folder when this is `None`; [`from_bytes_with`] then reads only GLB and
    /// `data:` buffers.
    pub buffers: Option<std::path::PathBuf>,
}

impl Options {
    /// Options that read external buffers from `folder`.
    pub fn buffers_in(folder: impl Into<std::path::PathBuf>) -> Self {
        Options {
            buffers: Some(folder.into()),
        }
    }
}

/// Loads a `.gltf` or `.glb` file; external buffers are read from the file's folder.
///
/// # Errors
/// [`Error::Io`] if a file cannot be read; otherwise as [`from_bytes_with`].
pub fn load(path: impl AsRef<Path>) -> Result<Asset, Error> {
    load_with(path, &Options::default())
}

/// Loads a `.gltf` or `.glb` file with options.
///
/// # Errors
/// [`Error::Io`] if a file cannot be read; otherwise as [`from_bytes_with`].
pub fn load_with(path: impl AsRef<Path>, options: &Options) -> Result<Asset, Error> {
    let path = path.as_ref();
    let bytes = crate::read_file(path)?;
    let base = options.buffers.as_deref().or(path.parent());
    import(&bytes, path, base)
}

/// Loads GLB, or glTF JSON whose buffers are `data:` URIs, from memory; `name` is used in
/// errors.
///
/// # Errors
/// As [`from_bytes_with`].
pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Asset, Error> {
    from_bytes_with(bytes, name, &Options::default())
}

/// Loads glTF from memory, with external buffers from [`Options::buffers`] if set (without
/// it, only GLB and `data:` buffers can be read). `name` is used in errors.
///
/// # Errors
/// [`Error::Malformed`] for a bad GLB container, [`Error::Syntax`] for bad JSON,
/// [`Error::Invalid`] for a document that breaks the glTF rules (out-of-range accessors,
/// node cycles, wrong accessor types), [`Error::Build`] when the runtime rejects the content
/// (unsorted or non-finite key times, for example).
pub fn from_bytes_with(bytes: &[u8], name: &Path, options: &Options) -> Result<Asset, Error> {
    import(bytes, name, options.buffers.as_deref())
}

fn import(bytes: &[u8], name: &Path, base: Option<&Path>) -> Result<Asset, Error> {
    let c = container::parse(name, bytes, base)?;
    Importer {
        file: name,
        doc: &c.doc,
        reader: Reader::new(name, &c.buffers),
        warnings: Vec::new(),
        morph: HashMap::new(),
    }
    .import()
}

struct Importer<'a, 'b> {
    file: &'a Path,
    doc: &'a gltf::Document,
    reader: Reader<'a, 'b>,
    warnings: Vec<String>,
    /// Nodes whose mesh has morph targets and is imported: the skeleton's morph channel of
    /// each target.
    morph: HashMap<usize, Vec<usize>>,
}

impl Importer<'_, '_> {
    fn invalid(&self, location: impl Into<String>, problem: impl Into<String>) -> Error {
        Error::Invalid {
            file: self.file.to_path_buf(),
            location: location.into(),
            problem: problem.into(),
        }
    }

    fn import(mut self) -> Result<Asset, Error> {
        let nodes: Vec<gltf::Node> = self.doc.nodes().collect();
        let parent = self.parents(&nodes)?;
        let selected = self.select_joint_nodes(&nodes, &parent);
        let names = self.joint_names(&nodes, &selected);

        // Root transform: the world matrix of the common parent above the root joints.
        let in_skeleton: HashMap<usize, usize> =
            selected.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let above = selected
            .iter()
            .find(|&&n| parent[n].is_none_or(|p| !in_skeleton.contains_key(&p)))
            .and_then(|&n| parent[n]);
        let root_transform = above.map_or(Mat4::IDENTITY, |p| world_matrix(&nodes, &parent, p));
        let raw = RawSkeleton {
            joints: selected
                .iter()
                .enumerate()
                .map(|(i, &n)| RawJoint {
                    name: names[i].clone(),
                    parent: parent[n].and_then(|p| in_skeleton.get(&p).copied()),
                    rest: local_transform(&nodes[n]),
                })
                .collect(),
            root_transform,
        };
        let skeleton = raw
            .build()
            .map_err(|source| Error::build(self.file.to_path_buf(), "nodes", source))?;
        let joint_of_source = skeleton.joint_of_source();
        let joint_of_node = |n: usize| in_skeleton.get(&n).map(|&i| joint_of_source[i]);
        let channels = self.morph_channels(&nodes, &joint_of_node)?;
        let skeleton = skeleton
            .with_morph_channels(channels)
            .map_err(|source| Error::build(self.file.to_path_buf(), "meshes", source))?;

        let mut skins = self.skins(&joint_of_node, &skeleton)?;
        let meshes = self.meshes(&mut skins, &joint_of_node, &skeleton)?;
        let clips = self.clips(&joint_of_node, &skeleton)?;
        let images = self.images()?;
        let mut asset = Asset::read(self.file, skeleton, skins, meshes, clips, self.warnings)?;
        asset.images = images;
        // glTF's unit is the metre.
        asset.meters_per_unit = Some(1.0);
        Ok(asset)
    }

    /// Images stored in buffer views (GLB, or `.gltf` with buffers); images given by URI are
    /// not loaded (a warning says so).
    fn images(&mut self) -> Result<Vec<Option<crate::EncodedImage>>, Error> {
        let mut out = Vec::new();
        for image in self.doc.images() {
            match image.source() {
                gltf::image::Source::View { view, mime_type } => {
                    let bytes = self
                        .reader
                        .view_bytes(&view, &format!("images[{}]", image.index()))?;
                    out.push(Some(crate::EncodedImage {
                        mime: mime_type.to_string(),
                        bytes: bytes.into(),
                    }));
                }
                gltf::image::Source::Uri { .. } => {
                    self.warnings.push(format!(
                        "images[{}] is referenced by URI and was not loaded",
                        image.index()
                    ));
                    out.push(None);
                }
            }
        }
        Ok(out)
    }

    /// Each node's parent, rejecting nodes with two parents and cycles (in O(nodes)).
    fn parents(&self, nodes: &[gltf::Node]) -> Result<Vec<Option<usize>>, Error> {
        let mut parent = vec![None; nodes.len()];
        for n in nodes {
            for c in n.children() {
                if let Some(p) = parent[c.index()] {
                    return Err(self.invalid(
                        format!("nodes[{}]", c.index()),
                        format!("is a child of both nodes[{p}] and nodes[{}]", n.index()),
                    ));
                }
                parent[c.index()] = Some(n.index());
            }
        }
        // With one parent each, the hierarchy is a forest unless some walk up loops: colour
        // nodes as they are walked (0 new, 1 on the current walk, 2 known to reach a root).
        let mut colour = vec![0u8; nodes.len()];
        for start in 0..nodes.len() {
            let mut k = start;
            while colour[k] == 0 {
                colour[k] = 1;
                match parent[k] {
                    Some(p) => k = p,
                    None => break,
                }
            }
            if colour[k] == 1 && parent[k].is_some() {
                return Err(self.invalid(
                    format!("nodes[{k}]"),
                    "is its own ancestor (the node hierarchy has a cycle)",
                ));
            }
            let mut k = start;
            while colour[k] == 1 {
                colour[k] = 2;
                match parent[k] {
                    Some(p) => k = p,
                    None => break,
                }
            }
        }
        Ok(parent)
    }

    /// The nodes that become skeleton joints, in order: skin 0's joints, then other skins'
    /// joints, then animated ancestors of joints and the nodes between joints (all in
    /// O(nodes)). What remains above the roots becomes the root transform.
    fn select_joint_nodes(&self, nodes: &[gltf::Node], parent: &[Option<usize>]) -> Vec<usize> {
        let n = nodes.len();
        let mut order: Vec<usize> = Vec::new();
        let mut chosen = vec![false; n];
        let push = |k: usize, order: &mut Vec<usize>, chosen: &mut Vec<bool>| {
            if !chosen[k] {
                chosen[k] = true;
                order.push(k);
            }
        };
        // Nodes skelett marked as joints when it wrote the file come first, in its order.
        let mut marked: Vec<(u64, usize)> = nodes
            .iter()
            .enumerate()
            .filter_map(|(k, node)| {
                let raw = node.extras().as_ref()?;
                let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
                Some((v["skelett"]["joint"].as_u64()?, k))
            })
            .collect();
        marked.sort_unstable();
        for &(_, k) in &marked {
            push(k, &mut order, &mut chosen);
        }
        for skin in self.doc.skins() {
            for j in skin.joints() {
                push(j.index(), &mut order, &mut chosen);
            }
        }
        if order.is_empty() {
            // No skin: every node is a joint (a node-animated scene).
            return (0..n).collect();
        }
        // Ancestors of joints, marked once each.
        let mut above_joint = vec![false; n];
        for &j in &order {
            let mut k = parent[j];
            while let Some(p) = k {
                if above_joint[p] {
                    break;
                }
                above_joint[p] = true;
                k = parent[p];
            }
        }
        // Animated ancestors join the skeleton: their motion moves the joints.
        let mut animated: Vec<usize> = self
            .doc
            .animations()
            .flat_map(|a| {
                a.channels()
                    .map(|c| c.target().node().index())
                    .collect::<Vec<_>>()
            })
            .filter(|&k| above_joint[k])
            .collect();
        animated.sort_unstable();
        for k in animated {
            push(k, &mut order, &mut chosen);
        }
        // Nodes between a chosen node and a chosen ancestor join too. A node is between
        // exactly when it is an ancestor of a chosen node and has a chosen ancestor.
        let mut has_chosen_above = vec![false; n];
        let mut known = vec![false; n];
        for start in 0..n {
            // Resolve the chain above `start` iteratively, top down.
            let mut chain = Vec::new();
            let mut k = start;
            while !known[k] {
                chain.push(k);
                match parent[k] {
                    Some(p) => k = p,
                    None => break,
                }
            }
            for &c in chain.iter().rev() {
                has_chosen_above[c] = parent[c].is_some_and(|p| chosen[p] || has_chosen_above[p]);
                known[c] = true;
            }
        }
        let mut between: Vec<usize> = (0..n)
            .filter(|&k| !chosen[k] && above_joint[k] && has_chosen_above[k])
            .collect();
        between.sort_unstable();
        for k in between {
            push(k, &mut order, &mut chosen);
        }
        // Roots with different parents: their ancestors up to the lowest common one join, so
        // one root transform serves them all.
        let roots: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&k| parent[k].is_none_or(|p| !chosen[p]))
            .collect();
        let first_parent = parent[roots[0]];
        if roots.iter().any(|&r| parent[r] != first_parent) {
            // Union of the paths from each root up (each node visited once), then descend from
            // the top while the union does not branch: that node is the common ancestor.
            let mut visited = vec![false; n];
            let mut children_in: Vec<u32> = vec![0; n];
            let mut tops = Vec::new();
            for &r in &roots {
                let mut k = r;
                loop {
                    match parent[k] {
                        Some(p) => {
                            if !visited[p] {
                                visited[p] = true;
                                children_in[p] += 1;
                                k = p;
                            } else {
                                children_in[p] += 1;
                                break;
                            }
                        }
                        None => {
                            tops.push(k);
                            break;
                        }
                    }
                }
            }
            tops.sort_unstable();
            tops.dedup();
            let root_set: HashSet<usize> = roots.iter().copied().collect();
            // Nodes from the top down to the common ancestor stay above the skeleton.
            let mut above = vec![false; n];
            if tops.len() == 1 {
                // Walk down from the top along the single visited child.
                let mut k = tops[0];
                let mut child_of = vec![usize::MAX; n];
                for v in (0..n).filter(|&v| visited[v] || root_set.contains(&v)) {
                    if let Some(p) = parent[v] {
                        child_of[p] = v;
                    }
                }
                above[k] = true;
                while children_in[k] == 1 && !root_set.contains(&k) && child_of[k] != usize::MAX {
                    k = child_of[k];
                    above[k] = true;
                }
            }
            let mut extra: Vec<usize> = (0..n)
                .filter(|&v| visited[v] && !chosen[v] && !above[v])
                .collect();
            extra.sort_unstable();
            for k in extra {
                push(k, &mut order, &mut chosen);
            }
        }
        order
    }

    /// Unique joint names: node names, `node<i>` for unnamed nodes, `name#<i>` for repeats.
    fn joint_names(&mut self, nodes: &[gltf::Node], selected: &[usize]) -> Vec<String> {
        let mut out: Vec<String> = selected
            .iter()
            .map(|&n| {
                nodes[n]
                    .name()
                    .map_or_else(|| format!("node{n}"), str::to_string)
            })
            .collect();
        crate::dedupe_names(&mut out, selected, &mut self.warnings);
        out
    }

    fn skins(
        &mut self,
        joint_of_node: &dyn Fn(usize) -> Option<JointIndex>,
        skeleton: &skelett::Skeleton,
    ) -> Result<Vec<Skin>, Error> {
        let mut skins = Vec::new();
        for skin in self.doc.skins() {
            let location = format!("skins[{}]", skin.index());
            let joints: Vec<JointIndex> = skin
                .joints()
                .map(|j| joint_of_node(j.index()).expect("every skin joint is in the skeleton"))
                .collect();
            let inverse_bind = match skin.inverse_bind_matrices() {
                Some(acc) => {
                    let loc = format!(
                        "{location}.inverseBindMatrices (accessors[{}])",
                        acc.index()
                    );
                    let m = self.reader.read_f32(&acc, &loc, &[16], Accept::Float)?;
                    if m.len() != joints.len() * 16 {
                        return Err(self.invalid(
                            loc,
                            format!("has {} matrices for {} joints", m.len() / 16, joints.len()),
                        ));
                    }
                    m.chunks_exact(16).map(Mat4::from_cols_slice).collect()
                }
                None => {
                    // The glTF specification defines a missing accessor as identity matrices
                    // (three.js and other engines do the same); say so, since most files
                    // that omit them were meant to be bound in the rest pose.
                    self.warnings.push(format!(
                        "{location}: no inverseBindMatrices; identity matrices used, as glTF \
                         specifies (skelett::inverse_bind_matrices computes them from the rest pose)"
                    ));
                    vec![Mat4::IDENTITY; joints.len()]
                }
            };
            let name = skin
                .name()
                .map_or_else(|| format!("skin{}", skin.index()), str::to_string);
            let skin = Skin::new(name, joints, inverse_bind)
                .and_then(|s| s.validate(skeleton).map(|()| s))
                .map_err(|source| {
                    Error::build(self.file.to_path_buf(), location.clone(), source)
                })?;
            skins.push(skin);
        }
        Ok(skins)
    }

    /// The morph channels of every imported mesh with morph targets: one per target, named
    /// `mesh/target` (the mesh's name, else the node's; `extras.targetNames` or the target's
    /// index), with `#node` appended where two nodes share a mesh; skelett's own exports name
    /// them in `extras.skelett.morph_channels`, where one name on several meshes is one
    /// channel. Rest weights are the node's `weights`, else the mesh's, else 0.
    fn morph_channels(
        &mut self,
        nodes: &[gltf::Node],
        joint_of_node: &dyn Fn(usize) -> Option<JointIndex>,
    ) -> Result<Vec<MorphChannel>, Error> {
        let mut channels: Vec<MorphChannel> = Vec::new();
        let mut used: HashSet<String> = HashSet::new();
        // Mesh names already used as a prefix (a second node with the same mesh gets `#node`).
        let mut prefixes: HashSet<String> = HashSet::new();
        for node in nodes {
            let Some(mesh) = node.mesh() else { continue };
            let location = format!("meshes[{}]", mesh.index());
            let mut count = None;
            for prim in mesh.primitives() {
                let k = prim.morph_targets().len();
                match count {
                    None => count = Some(k),
                    Some(c) if c != k => {
                        return Err(self.invalid(
                            format!("{location}.primitives[{}].targets", prim.index()),
                            format!("has {k} morph targets, primitive 0 has {c} (every primitive of a mesh must have the same count)"),
                        ))
                    }
                    _ => {}
                }
            }
            let count = count.unwrap_or(0);
            if count == 0 {
                continue;
            }
            if node.skin().is_none() && joint_of_node(node.index()).is_none() {
                // Skipped with the mesh (see `meshes`).
                continue;
            }
            let extras = mesh
                .extras()
                .as_ref()
                .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok());
            let strings = |v: &serde_json::Value| -> Vec<String> {
                v.as_array()
                    .map(|a| {
                        a.iter()
                            .map(|n| n.as_str().unwrap_or("").to_string())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let names = extras
                .as_ref()
                .map(|v| strings(&v["targetNames"]))
                .unwrap_or_default();
            let full = extras
                .as_ref()
                .map(|v| strings(&v["skelett"]["morph_channels"]))
                .filter(|f| f.len() == count && f.iter().all(|n| !n.is_empty()));
            let rest: Vec<f32> = match (node.weights(), mesh.weights()) {
                (Some(w), _) => w.to_vec(),
                (None, Some(w)) => w.to_vec(),
                _ => vec![0.0; count],
            };
            if rest.len() != count {
                return Err(self.invalid(
                    if node.weights().is_some() {
                        format!("nodes[{}].weights", node.index())
                    } else {
                        format!("{location}.weights")
                    },
                    format!("has {} weights for {count} morph targets", rest.len()),
                ));
            }
            let base = mesh
                .name()
                .or(node.name())
                .map_or_else(|| format!("mesh{}", mesh.index()), str::to_string);
            let prefix = if prefixes.insert(base.clone()) {
                base
            } else {
                format!("{base}#{}", node.index())
            };
            let mut bound = Vec::with_capacity(count);
            for (k, &r) in rest.iter().enumerate() {
                if let Some(full) = &full {
                    let name = &full[k];
                    match channels.iter().position(|c| &c.name == name) {
                        Some(c) => bound.push(c),
                        None => {
                            used.insert(name.clone());
                            bound.push(channels.len());
                            channels.push(MorphChannel {
                                name: name.clone(),
                                rest: r,
                            });
                        }
                    }
                    continue;
                }
                let target = names
                    .get(k)
                    .filter(|n| !n.is_empty())
                    .cloned()
                    .unwrap_or_else(|| k.to_string());
                let mut name = format!("{prefix}/{target}");
                if used.contains(&name) {
                    name = format!("{prefix}/{target}#{k}");
                }
                used.insert(name.clone());
                bound.push(channels.len());
                channels.push(MorphChannel { name, rest: r });
            }
            self.morph.insert(node.index(), bound);
        }
        Ok(channels)
    }

    fn meshes(
        &mut self,
        skins: &mut Vec<Skin>,
        joint_of_node: &dyn Fn(usize) -> Option<JointIndex>,
        skeleton: &skelett::Skeleton,
    ) -> Result<Vec<SkinnedMesh>, Error> {
        let mut meshes = Vec::new();
        for node in self.doc.nodes() {
            let Some(mesh) = node.mesh() else { continue };
            let morph = self.morph.get(&node.index()).cloned();
            let skin = match node.skin() {
                Some(skin) => skin.index(),
                None => match (&morph, joint_of_node(node.index())) {
                    // A rigid mesh with morph targets: bound to its node, as a skin of one
                    // joint with an identity inverse bind (its vertices are in the node's
                    // space, so they follow the node's model matrix).
                    (Some(_), Some(joint)) => {
                        let name = format!(
                            "{} (rigid)",
                            node.name()
                                .map_or_else(|| format!("nodes[{}]", node.index()), str::to_string)
                        );
                        let s = Skin::new(name, vec![joint], vec![Mat4::IDENTITY]).map_err(
                            |source| {
                                Error::build(
                                    self.file.to_path_buf(),
                                    format!("nodes[{}]", node.index()),
                                    source,
                                )
                            },
                        )?;
                        skins.push(s);
                        skins.len() - 1
                    }
                    _ => {
                        self.warnings.push(format!(
                            "nodes[{}]: mesh {:?} has no skin; skipped (rigid meshes are imported \
                             only when they have morph targets)",
                            node.index(),
                            mesh.name().unwrap_or("")
                        ));
                        continue;
                    }
                },
            };
            let rigid = node.skin().is_none();
            let mut out = SkinnedMesh {
                name: mesh
                    .name()
                    .or(node.name())
                    .map_or_else(|| format!("mesh{}", mesh.index()), str::to_string),
                skin,
                primitives: Vec::new(),
                morph_channels: morph
                    .map(|m| m.iter().map(|&c| c as u32).collect())
                    .unwrap_or_default(),
                morph_full_weights: Vec::new(),
            };
            for prim in mesh.primitives() {
                let location = format!("meshes[{}].primitives[{}]", mesh.index(), prim.index());
                if prim.mode() != gltf::mesh::Mode::Triangles {
                    self.warnings.push(format!(
                        "{location}: mode {:?} is not a triangle list; skipped",
                        prim.mode()
                    ));
                    continue;
                }
                out.primitives
                    .push(self.primitive(&prim, &location, rigid)?);
            }
            out.validate(&skins[skin])
                .and_then(|()| out.validate_morph_channels(skeleton.morph_channel_count()))
                .map_err(|source| {
                    Error::build(
                        self.file.to_path_buf(),
                        format!("meshes[{}]", mesh.index()),
                        source,
                    )
                })?;
            meshes.push(out);
        }
        Ok(meshes)
    }

    /// The morph targets of a primitive: POSITION, NORMAL and TANGENT offsets (sparse
    /// accessors expanded), each checked for length and finite values.
    fn morph_targets(
        &self,
        prim: &gltf::Primitive,
        location: &str,
        n: usize,
    ) -> Result<Vec<MorphTarget>, Error> {
        let mut out = Vec::new();
        for (k, t) in prim.morph_targets().enumerate() {
            let read = |acc: Option<gltf::Accessor>,
                        what: &str|
             -> Result<Option<Vec<Vec3>>, Error> {
                let Some(acc) = acc else { return Ok(None) };
                let loc = format!(
                    "{location}.targets[{k}].{what} (accessors[{}])",
                    acc.index()
                );
                let v = self.reader.read_f32(&acc, &loc, &[3], Accept::Float)?;
                if v.len() != n * 3 {
                    return Err(
                        self.invalid(loc, format!("has {} offsets for {n} vertices", v.len() / 3))
                    );
                }
                if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                    return Err(
                        self.invalid(loc, format!("offset {} is not finite ({})", i / 3, v[i]))
                    );
                }
                Ok(Some(v.chunks_exact(3).map(Vec3::from_slice).collect()))
            };
            out.push(MorphTarget {
                positions: read(t.positions(), "POSITION")?,
                normals: read(t.normals(), "NORMAL")?,
                tangents: read(t.tangents(), "TANGENT")?,
            });
        }
        Ok(out)
    }

    fn attribute(
        &self,
        prim: &gltf::Primitive,
        semantic: gltf::Semantic,
        location: &str,
        want: usize,
        accept: Accept,
    ) -> Result<Option<Vec<f32>>, Error> {
        let Some(acc) = prim.get(&semantic) else {
            return Ok(None);
        };
        let loc = format!(
            "{location}.attributes.{} (accessors[{}])",
            semantic.to_string(),
            acc.index()
        );
        self.reader.read_f32(&acc, &loc, &[want], accept).map(Some)
    }

    fn primitive(
        &mut self,
        prim: &gltf::Primitive,
        location: &str,
        rigid: bool,
    ) -> Result<MeshPrimitive, Error> {
        use gltf::Semantic as S;
        const NORM: &[DataType] = &[DataType::U8, DataType::U16];
        let positions: Vec<Vec3> = self
            .attribute(prim, S::Positions, location, 3, Accept::Float)?
            .ok_or_else(|| self.invalid(location, "has no POSITION attribute"))?
            .chunks_exact(3)
            .map(Vec3::from_slice)
            .collect();
        let n = positions.len();
        let check_len = |what: &str, len: usize| {
            if len != n {
                Err(self.invalid(
                    location,
                    format!("{what} has {len} entries for {n} positions"),
                ))
            } else {
                Ok(())
            }
        };
        let normals = self
            .attribute(prim, S::Normals, location, 3, Accept::Float)?
            .map(|v| v.chunks_exact(3).map(Vec3::from_slice).collect::<Vec<_>>());
        let tangents = self
            .attribute(prim, S::Tangents, location, 4, Accept::Float)?
            .map(|v| v.chunks_exact(4).map(Vec4::from_slice).collect::<Vec<_>>());
        let uvs = self
            .attribute(
                prim,
                S::TexCoords(0),
                location,
                2,
                Accept::FloatOrNormalized(NORM),
            )?
            .map(|v| v.chunks_exact(2).map(Vec2::from_slice).collect::<Vec<_>>());
        for (what, len) in [
            ("NORMAL", normals.as_ref().map(Vec::len)),
            ("TANGENT", tangents.as_ref().map(Vec::len)),
            ("TEXCOORD_0", uvs.as_ref().map(Vec::len)),
        ] {
            if let Some(len) = len {
                check_len(what, len)?;
            }
        }

        // Influences: JOINTS_0/WEIGHTS_0, and JOINTS_1/WEIGHTS_1 for 8 per vertex.
        let mut sets = Vec::new();
        for set in 0..2u32 {
            let j = prim.get(&S::Joints(set));
            let w = prim.get(&S::Weights(set));
            match (j, w) {
                (Some(j), Some(w)) => {
                    let jl = format!(
                        "{location}.attributes.JOINTS_{set} (accessors[{}])",
                        j.index()
                    );
                    let wl = format!(
                        "{location}.attributes.WEIGHTS_{set} (accessors[{}])",
                        w.index()
                    );
                    let joints = self
                        .reader
                        .read_u32(&j, &jl, &[4], Accept::Unsigned(NORM))?;
                    let weights =
                        self.reader
                            .read_f32(&w, &wl, &[4], Accept::FloatOrNormalized(NORM))?;
                    check_len(&format!("JOINTS_{set}"), joints.len() / 4)?;
                    check_len(&format!("WEIGHTS_{set}"), weights.len() / 4)?;
                    sets.push((joints, weights));
                }
                (None, None) => break,
                _ => {
                    return Err(self.invalid(
                        location,
                        format!("JOINTS_{set} and WEIGHTS_{set} must come together"),
                    ))
                }
            }
        }
        if rigid {
            // Bound to its node alone: one influence of weight 1 (see `meshes`).
            sets = vec![(vec![0; n * 4], [1.0, 0.0, 0.0, 0.0].repeat(n))];
        }
        if sets.is_empty() {
            return Err(self.invalid(
                location,
                "a skinned mesh primitive needs JOINTS_0 and WEIGHTS_0",
            ));
        }
        let influences = 4 * sets.len();
        let mut joints = Vec::with_capacity(n * influences);
        let mut weights = Vec::with_capacity(n * influences);
        let (mut renormalised, mut bad, mut unweighted) = (0usize, 0usize, 0usize);
        for v in 0..n {
            let start = weights.len();
            let mut vertex_bad = false;
            for (js, ws) in &sets {
                for k in 0..4 {
                    let w = ws[v * 4 + k];
                    vertex_bad |= !(w.is_finite() && w >= 0.0);
                    let w = if w.is_finite() && w > 0.0 { w } else { 0.0 };
                    // Unweighted slots often hold any index; point them at entry 0.
                    let j = if w == 0.0 { 0 } else { js[v * 4 + k] };
                    if j > u16::MAX as u32 {
                        return Err(
                            self.invalid(location, format!("vertex {v} has joint index {j}"))
                        );
                    }
                    joints.push(j as u16);
                    weights.push(w);
                }
            }
            bad += usize::from(vertex_bad);
            let sum: f32 = weights[start..].iter().sum();
            unweighted += usize::from(sum == 0.0);
            if sum > 0.0 && (sum - 1.0).abs() > 1e-6 {
                if (sum - 1.0).abs() > 1e-2 {
                    renormalised += 1;
                }
                for w in &mut weights[start..] {
                    *w /= sum;
                }
            }
        }
        if renormalised > 0 {
            self.warnings.push(format!(
                "{location}: {renormalised} vertices had weights not summing to 1; normalised"
            ));
        }
        if bad > 0 {
            self.warnings.push(format!(
                "{location}: {bad} vertices had non-finite or negative weights; read as 0"
            ));
        }
        if unweighted > 0 {
            self.warnings.push(format!(
                "{location}: {unweighted} vertices have no positive weight; they skin to the \
                 model's origin"
            ));
        }
        let indices = match prim.indices() {
            Some(acc) => {
                let loc = format!("{location}.indices (accessors[{}])", acc.index());
                self.reader.read_u32(
                    &acc,
                    &loc,
                    &[1],
                    Accept::Unsigned(&[DataType::U8, DataType::U16, DataType::U32]),
                )?
            }
            None => (0..n as u32).collect(),
        };
        let morph_targets = self.morph_targets(prim, location, n)?;
        let material = prim.material();
        let pbr = material.pbr_metallic_roughness();
        Ok(MeshPrimitive {
            morph_targets,
            positions,
            normals,
            tangents,
            uvs,
            influences,
            joints,
            weights,
            indices,
            base_color_texture: pbr
                .base_color_texture()
                .map(|t| t.texture().source().index()),
            base_color: Vec4::from(pbr.base_color_factor()),
        })
    }
}

fn local_transform(node: &gltf::Node) -> Transform {
    match node.transform() {
        gltf::scene::Transform::Matrix { matrix } => {
            Transform::from_mat4(&Mat4::from_cols_array_2d(&matrix))
        }
        gltf::scene::Transform::Decomposed {
            translation,
            rotation,
            scale,
        } => Transform::new(
            Vec3::from(translation),
            Quat::from_array(rotation).normalize(),
            Vec3::from(scale),
        ),
    }
}

fn local_matrix(node: &gltf::Node) -> Mat4 {
    match node.transform() {
        gltf::scene::Transform::Matrix { matrix } => Mat4::from_cols_array_2d(&matrix),
        t @ gltf::scene::Transform::Decomposed { .. } => {
            let (t, r, s) = t.decomposed();
            Mat4::from_scale_rotation_translation(
                Vec3::from(s),
                Quat::from_array(r).normalize(),
                Vec3::from(t),
            )
        }
    }
}

fn world_matrix(nodes: &[gltf::Node], parent: &[Option<usize>], n: usize) -> Mat4 {
    let mut m = local_matrix(&nodes[n]);
    let mut k = parent[n];
    while let Some(p) = k {
        m = local_matrix(&nodes[p]) * m;
        k = parent[p];
    }
    m
}

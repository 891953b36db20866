//! glTF 2.0 export: any [`Asset`] to a `.glb`, so BVH (and later .x, RAM/RAA) content
//! reaches every engine.
//!
//! ```text
//! Skeleton ─▶ one node per joint (rest TRS), under a "root" node holding root_transform
//! Skin     ─▶ skin (joint nodes, inverseBindMatrices MAT4)
//! SkinnedMesh ─▶ mesh + node (POSITION with min/max, NORMAL, TANGENT, TEXCOORD_0,
//!               JOINTS_0/1 as u16, WEIGHTS_0/1 as float, u32 indices), and a material per
//!               distinct base colour and base colour texture (what skelett keeps of a
//!               material: metallic 0 and roughness 1 are written for the rest)
//! images   ─▶ image (the encoded PNG/JPEG bytes as they came, in the binary chunk) + texture
//! morph targets ─▶ each primitive's `targets` (POSITION with min/max, NORMAL, TANGENT
//!             offsets), the mesh's rest `weights`, `extras.targetNames` and the skeleton's
//!             channel names in `extras.skelett.morph_channels` (so that re-importing binds the
//!             same channels, shared ones included)
//! Clip     ─▶ animation: every channel with its keys and interpolation as built (STEP,
//!             LINEAR, CUBICSPLINE kept), plus a one-key channel for each constant channel;
//!             the clip's start, duration, events and frame rate in the animation's extras
//!             (`extras.skelett`, which the reader takes back); a `weights` channel
//!             per mesh node whose morph channels the clip animates: keys and interpolation
//!             kept where the channels share them, else LINEAR at the union of their key
//!             times (exact for LINEAR tracks, sampled for STEP and cubic ones)
//! in-between shapes (FBX/Maya, SkinnedMesh::morph_full_weights) ─▶ glTF's targets are
//!             linear in their own weight, so such a mesh is baked: each target gets its own
//!             weight (its channel's in-between blend, MorphBinding::target_weights) in the
//!             rest `weights` and the `weights` channel, keyed at the tracks' times plus every
//!             time a LINEAR track crosses a full weight (so LINEAR tracks stay exact), and
//!             its channel name in `extras.skelett.morph_channels` becomes `channel@full`
//!             (re-importing gives one channel per target: what glTF can say)
//! ```
//!
//! The JSON is written with `serde_json` and the binary chunk by hand; every accessor has its
//! own buffer view, 4-byte aligned, with the min/max the specification requires.

use glam::{Mat4, Vec3};
use serde_json::{json, Value};
use skelett::{ChannelValues, Interpolation, JointIndex, Target, Transform};

use crate::Asset;

/// Builds the binary chunk and the accessor list.
#[derive(Default)]
struct Bin {
    data: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
}

impl Bin {
    /// Appends floats as an accessor of `kind` ("SCALAR", "VEC3", ...); returns its index.
    fn floats(&mut self, values: &[f32], kind: &str, dims: usize, min_max: bool) -> usize {
        let mut acc = json!({
            "componentType": 5126,
            "count": values.len() / dims,
            "type": kind,
        });
        if min_max {
            let mut lo = vec![f32::INFINITY; dims];
            let mut hi = vec![f32::NEG_INFINITY; dims];
            for c in values.chunks_exact(dims) {
                for d in 0..dims {
                    lo[d] = lo[d].min(c[d]);
                    hi[d] = hi[d].max(c[d]);
                }
            }
            acc["min"] = json!(lo);
            acc["max"] = json!(hi);
        }
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push(acc, &bytes)
    }

    fn u16s(&mut self, values: &[u16], kind: &str, dims: usize) -> usize {
        let acc = json!({ "componentType": 5123, "count": values.len() / dims, "type": kind });
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push(acc, &bytes)
    }

    fn u32s(&mut self, values: &[u32]) -> usize {
        let acc = json!({ "componentType": 5125, "count": values.len(), "type": "SCALAR" });
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push(acc, &bytes)
    }

    fn push(&mut self, mut accessor: Value, bytes: &[u8]) -> usize {
        accessor["bufferView"] = json!(self.view(bytes));
        self.accessors.push(accessor);
        self.accessors.len() - 1
    }

    /// Appends raw bytes (an encoded image) as a buffer view; returns its index.
    fn view(&mut self, bytes: &[u8]) -> usize {
        while self.data.len() % 4 != 0 {
            self.data.push(0);
        }
        self.views.push(json!({
            "buffer": 0,
            "byteOffset": self.data.len(),
            "byteLength": bytes.len(),
        }));
        self.data.extend_from_slice(bytes);
        self.views.len() - 1
    }
}

fn trs(t: &Transform) -> Value {
    json!({
        "translation": t.translation.to_array(),
        "rotation": t.rotation.normalize().to_array(),
        "scale": t.scale.to_array(),
    })
}

/// Writes `asset` as a binary glTF (`.glb`).
///
/// ```
/// # use std::path::Path;
/// # let bvh = "HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 3 Zrotation Xrotation Yrotation\n End Site\n {\n  OFFSET 0 1 0\n }\n}\nMOTION\nFrames: 2\nFrame Time: 0.5\n0 0 0\n0 90 0\n";
/// let asset = skelett_io::bvh::from_bytes(bvh.as_bytes(), Path::new("wave.bvh"))?;
/// let glb = skelett_io::gltf::to_bytes(&asset);
/// let back = skelett_io::gltf::from_bytes(&glb, Path::new("wave.glb"))?;
/// assert_eq!(back.skeleton.names(), asset.skeleton.names());
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// Writes what it is given: an asset from a reader always loads again; one a program built or
/// edited should pass [`crate::validate::check`] first, as `save` does.
pub fn to_bytes(asset: &Asset) -> Vec<u8> {
    let s = &asset.skeleton;
    let n = s.len();
    let mut bin = Bin::default();
    // Nodes 0..n: joints; node n: the root holding root_transform; then mesh nodes.
    let mut nodes: Vec<Value> = (0..n as JointIndex)
        .map(|j| {
            let mut node = trs(&s.rest_pose()[j as usize]);
            node["name"] = json!(s.name(j));
            // Marks the node as skeleton joint `j`, even when no skin lists it (an animated
            // ancestor, say), so that re-importing gives the same skeleton in the same order.
            node["extras"] = json!({ "skelett": { "joint": j } });
            node
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for j in 0..n as JointIndex {
        match s.parent(j) {
            Some(p) => children[p as usize].push(j as usize),
            None => children[n].push(j as usize),
        }
    }
    for (j, c) in children.iter().enumerate().take(n) {
        if !c.is_empty() {
            nodes[j]["children"] = json!(c);
        }
    }
    // What sat above the skeleton: a "root" node with root_transform. Without one (identity)
    // the skeleton's roots go straight into the scene, so a re-import (which takes every node
    // of a skinless file as a joint) gets the same skeleton back.
    // Several roots also get the wrapper: a skin's joints need a common root in glTF.
    let mut scene_nodes = if s.root_transform() != Mat4::IDENTITY || children[n].len() > 1 {
        let mut root = json!({ "name": "root", "children": children[n] });
        if s.root_transform() != Mat4::IDENTITY {
            root["matrix"] = json!(s.root_transform().to_cols_array());
        }
        nodes.push(root);
        vec![n]
    } else {
        children[n].clone()
    };

    let skins: Vec<Value> = asset
        .skins
        .iter()
        .map(|skin| {
            let ibm: Vec<f32> = skin
                .inverse_bind()
                .iter()
                .flat_map(|m| m.to_cols_array())
                .collect();
            let acc = bin.floats(&ibm, "MAT4", 16, false);
            json!({
                "name": skin.name(),
                "joints": skin.joints().iter().map(|&j| j as usize).collect::<Vec<_>>(),
                "inverseBindMatrices": acc,
            })
        })
        .collect();

    // Encoded images as they came (PNG, JPEG), one texture each; a material per distinct
    // base colour and texture.
    let mut images = Vec::new();
    let mut textures = Vec::new();
    let mut texture_of = vec![None; asset.images.len()];
    for (i, image) in asset.images.iter().enumerate() {
        if let Some(image) = image {
            let view = bin.view(&image.bytes);
            images.push(json!({ "bufferView": view, "mimeType": image.mime }));
            textures.push(json!({ "source": images.len() - 1 }));
            texture_of[i] = Some(textures.len() - 1);
        }
    }
    let mut materials: Vec<Value> = Vec::new();
    let mut material_keys: Vec<([u32; 4], Option<usize>)> = Vec::new();
    let mut material = |color: glam::Vec4, texture: Option<usize>| {
        let texture = texture.and_then(|t| texture_of.get(t).copied().flatten());
        let key = (color.to_array().map(f32::to_bits), texture);
        if let Some(i) = material_keys.iter().position(|k| *k == key) {
            return i;
        }
        let mut pbr = json!({
            "baseColorFactor": color.to_array(),
            "metallicFactor": 0.0,
            "roughnessFactor": 1.0,
        });
        if let Some(t) = texture {
            pbr["baseColorTexture"] = json!({ "index": t });
        }
        materials.push(json!({ "pbrMetallicRoughness": pbr }));
        material_keys.push(key);
        materials.len() - 1
    };

    let mut meshes = Vec::new();
    let mut mesh_nodes = Vec::new();
    // Each mesh's in-between binding, once for the mesh and every clip's weights.
    let baked_meshes: Vec<_> = asset.meshes.iter().map(baked_in_betweens).collect();
    for (mesh, baked) in asset.meshes.iter().zip(&baked_meshes) {
        let mut prims = Vec::new();
        for p in &mesh.primitives {
            let mut attributes = serde_json::Map::new();
            let pos: Vec<f32> = p.positions.iter().flat_map(|v| v.to_array()).collect();
            attributes.insert("POSITION".into(), json!(bin.floats(&pos, "VEC3", 3, true)));
            if let Some(nrm) = &p.normals {
                let v: Vec<f32> = nrm
                    .iter()
                    .flat_map(|v| v.normalize_or(Vec3::Y).to_array())
                    .collect();
                attributes.insert("NORMAL".into(), json!(bin.floats(&v, "VEC3", 3, false)));
            }
            if let Some(tan) = &p.tangents {
                let v: Vec<f32> = tan.iter().flat_map(|v| v.to_array()).collect();
                attributes.insert("TANGENT".into(), json!(bin.floats(&v, "VEC4", 4, false)));
            }
            if let Some(uv) = &p.uvs {
                let v: Vec<f32> = uv.iter().flat_map(|v| v.to_array()).collect();
                attributes.insert("TEXCOORD_0".into(), json!(bin.floats(&v, "VEC2", 2, false)));
            }
            // Influences in sets of four: JOINTS_k / WEIGHTS_k.
            let k = p.influences.div_ceil(4);
            for set in 0..k {
                let mut js = Vec::with_capacity(p.vertex_count() * 4);
                let mut ws = Vec::with_capacity(p.vertex_count() * 4);
                for v in 0..p.vertex_count() {
                    for i in set * 4..set * 4 + 4 {
                        let (j, w) = if i < p.influences {
                            (
                                p.joints[v * p.influences + i],
                                p.weights[v * p.influences + i],
                            )
                        } else {
                            (0, 0.0)
                        };
                        js.push(j);
                        ws.push(w);
                    }
                }
                attributes.insert(format!("JOINTS_{set}"), json!(bin.u16s(&js, "VEC4", 4)));
                attributes.insert(
                    format!("WEIGHTS_{set}"),
                    json!(bin.floats(&ws, "VEC4", 4, false)),
                );
            }
            let indices = bin.u32s(&p.indices);
            let material = material(p.base_color, p.base_color_texture);
            let mut prim = json!({
                "attributes": attributes,
                "indices": indices,
                "material": material,
                "mode": 4,
            });
            if !p.morph_targets.is_empty() {
                let flat = |v: &[Vec3]| v.iter().flat_map(|v| v.to_array()).collect::<Vec<f32>>();
                let targets: Vec<Value> = p
                    .morph_targets
                    .iter()
                    .map(|t| {
                        let mut o = serde_json::Map::new();
                        // A target with no attribute at all is not valid glTF: zero positions.
                        let zeros = vec![Vec3::ZERO; p.vertex_count()];
                        let pos = t.positions.as_deref().unwrap_or(
                            if t.normals.is_none() && t.tangents.is_none() {
                                &zeros
                            } else {
                                &[]
                            },
                        );
                        if !pos.is_empty() {
                            o.insert(
                                "POSITION".into(),
                                json!(bin.floats(&flat(pos), "VEC3", 3, true)),
                            );
                        }
                        if let Some(v) = &t.normals {
                            o.insert(
                                "NORMAL".into(),
                                json!(bin.floats(&flat(v), "VEC3", 3, false)),
                            );
                        }
                        if let Some(v) = &t.tangents {
                            o.insert(
                                "TANGENT".into(),
                                json!(bin.floats(&flat(v), "VEC3", 3, false)),
                            );
                        }
                        Value::Object(o)
                    })
                    .collect();
                prim["targets"] = json!(targets);
            }
            prims.push(prim);
        }
        let mut m = json!({ "name": mesh.name, "primitives": prims });
        if !mesh.morph_channels.is_empty() {
            let names = s.morph_channel_names();
            let full: Vec<String> = mesh
                .morph_channels
                .iter()
                .enumerate()
                .map(|(k, &c)| {
                    let name = names.get(c as usize).map_or("", String::as_str);
                    match baked {
                        Some((b, grouped)) if grouped[k] => {
                            format!("{name}@{}", b.full_weights()[k])
                        }
                        _ => name.to_string(),
                    }
                })
                .collect();
            let prefix = format!("{}/", mesh.name);
            let rest: Vec<f32> = mesh
                .morph_channels
                .iter()
                .map(|&c| s.morph_rest().get(c as usize).copied().unwrap_or(0.0))
                .collect();
            m["weights"] = json!(match baked {
                Some((b, _)) => {
                    let mut t = vec![0.0; b.target_count()];
                    let _ = b.target_weights(s.morph_rest(), &mut t);
                    t
                }
                None => rest,
            });
            m["extras"] = json!({
                "targetNames": full.iter().map(|n| n.strip_prefix(&prefix).unwrap_or(n)).collect::<Vec<_>>(),
                "skelett": { "morph_channels": full },
            });
        }
        meshes.push(m);
        nodes.push(json!({ "name": mesh.name, "mesh": meshes.len() - 1, "skin": mesh.skin }));
        mesh_nodes.push(nodes.len() - 1);
        scene_nodes.push(nodes.len() - 1);
    }

    let mut animations = Vec::new();
    for clip in &asset.clips {
        // Compact clips export their stored keys (LINEAR or STEP samplers).
        let clip = clip.decompressed();
        let clip = clip.as_ref();
        let mut samplers = Vec::new();
        let mut channels = Vec::new();
        let mut add = |joint: JointIndex,
                       target: Target,
                       interp: Interpolation,
                       times: &[f32],
                       values: Vec<f32>,
                       dims: usize,
                       bin: &mut Bin| {
            let input = bin.floats(times, "SCALAR", 1, true);
            let output = bin.floats(
                &values,
                if dims == 4 { "VEC4" } else { "VEC3" },
                dims,
                false,
            );
            samplers.push(sampler(input, output, interp));
            channels.push(json!({
                "sampler": samplers.len() - 1,
                "target": {
                    "node": joint as usize,
                    "path": match target {
                        Target::Translation => "translation",
                        Target::Rotation => "rotation",
                        Target::Scale => "scale",
                    },
                },
            }));
        };
        let mut animated = vec![[false; 3]; n];
        for i in 0..clip.track_count() {
            let Some(c) = clip.channel(i) else { continue };
            let slot = match c.target {
                Target::Translation => 0,
                Target::Rotation => 1,
                Target::Scale => 2,
            };
            animated[c.joint as usize][slot] = true;
            let (values, dims) = match c.values {
                ChannelValues::Vec3(v) => (v.iter().flat_map(|v| v.to_array()).collect(), 3),
                ChannelValues::Quat(q) => (q.iter().flat_map(|q| q.to_array()).collect(), 4),
            };
            add(
                c.joint,
                c.target,
                c.interpolation,
                c.times,
                values,
                dims,
                &mut bin,
            );
        }
        // Constant channels live in the clip's base pose: one key each where it differs from
        // the rest pose, so the exported clip poses exactly as the original.
        for (j, done) in animated.iter().enumerate() {
            let (b, r) = (&clip.base_pose()[j], &s.rest_pose()[j]);
            let start = [clip.start()];
            if !done[0] && b.translation != r.translation {
                add(
                    j as JointIndex,
                    Target::Translation,
                    Interpolation::Step,
                    &start,
                    b.translation.to_array().to_vec(),
                    3,
                    &mut bin,
                );
            }
            if !done[1] && b.rotation != r.rotation {
                add(
                    j as JointIndex,
                    Target::Rotation,
                    Interpolation::Step,
                    &start,
                    b.rotation.to_array().to_vec(),
                    4,
                    &mut bin,
                );
            }
            if !done[2] && b.scale != r.scale {
                add(
                    j as JointIndex,
                    Target::Scale,
                    Interpolation::Step,
                    &start,
                    b.scale.to_array().to_vec(),
                    3,
                    &mut bin,
                );
            }
        }
        if !animated.iter().flatten().any(|&a| a) && clip.base_pose() == s.rest_pose() {
            // glTF requires at least one channel: hold the first joint's rest rotation.
            let q = s
                .rest_pose()
                .first()
                .map_or([0.0, 0.0, 0.0, 1.0], |t| t.rotation.to_array());
            add(
                0,
                Target::Rotation,
                Interpolation::Step,
                &[clip.start()],
                q.to_vec(),
                4,
                &mut bin,
            );
        }
        for ((mesh, &node), baked) in asset.meshes.iter().zip(&mesh_nodes).zip(&baked_meshes) {
            let keys = match baked {
                Some((b, _)) => baked_weight_keys(clip, b),
                None => weight_keys(clip, &mesh.morph_channels),
            };
            if let Some((interp, times, values)) = keys {
                let input = bin.floats(&times, "SCALAR", 1, true);
                let output = bin.floats(&values, "SCALAR", 1, false);
                samplers.push(sampler(input, output, interp));
                channels.push(json!({
                    "sampler": samplers.len() - 1,
                    "target": { "node": node, "path": "weights" },
                }));
            }
        }
        let mut anim = json!({
            "name": clip.name(),
            "samplers": samplers,
            "channels": channels,
            "extras": { "skelett": { "start": clip.start(), "duration": clip.duration() } },
        });
        let events: Vec<Value> = clip
            .events()
            .iter()
            .map(|e| json!({ "time": e.time, "name": e.name, "payload": e.payload }))
            .collect();
        if !events.is_empty() {
            anim["extras"]["skelett"]["events"] = json!(events);
        }
        if let Some(rate) = clip.frame_rate() {
            anim["extras"]["skelett"]["frame_rate"] = json!(rate);
        }
        animations.push(anim);
    }

    let mut doc = json!({
        "asset": { "version": "2.0", "generator": concat!("skelett ", env!("CARGO_PKG_VERSION")) },
        "scene": 0,
        "scenes": [{ "nodes": scene_nodes }],
        "nodes": nodes,
        "buffers": [{ "byteLength": bin.data.len() }],
        "bufferViews": bin.views,
        "accessors": bin.accessors,
    });
    if !skins.is_empty() {
        doc["skins"] = json!(skins);
    }
    if !meshes.is_empty() {
        doc["meshes"] = json!(meshes);
        doc["materials"] = json!(materials);
    }
    if !images.is_empty() {
        doc["images"] = json!(images);
        doc["textures"] = json!(textures);
    }
    if !animations.is_empty() {
        doc["animations"] = json!(animations);
    }
    if bin.data.is_empty() {
        if let Some(o) = doc.as_object_mut() {
            o.remove("buffers");
            o.remove("bufferViews");
            o.remove("accessors");
        }
    }
    glb(&serde_json::to_vec(&doc).unwrap_or_default(), &bin.data)
}

/// Wraps a JSON document and a binary chunk in the GLB container.
/// An animation sampler of accessors `input` (times) and `output` (values).
fn sampler(input: usize, output: usize, interp: Interpolation) -> Value {
    json!({
        "input": input,
        "output": output,
        "interpolation": match interp {
            Interpolation::Step => "STEP",
            Interpolation::Linear => "LINEAR",
            Interpolation::CubicSpline => "CUBICSPLINE",
        },
    })
}

/// A mesh's `weights` sampler for `clip`: its morph channels' keys, key-major (for cubic: the
/// in-tangents, values and out-tangents of every target per key), or `None` when the clip
/// animates none of them. Channels the clip does not animate hold its constant weight.
fn weight_keys(
    clip: &skelett::Clip,
    channels: &[u32],
) -> Option<(Interpolation, Vec<f32>, Vec<f32>)> {
    // Each channel's track, found once (channels and tracks may both number in the hundreds).
    let mut by_channel = vec![None; clip.morph_channel_count()];
    for t in clip.morph_tracks() {
        by_channel[t.channel] = Some(t);
    }
    let tracks: Vec<Option<skelett::MorphTrackView>> = channels
        .iter()
        .map(|&c| by_channel.get(c as usize).copied().flatten())
        .collect();
    let first = tracks.iter().flatten().next()?;
    let shared = tracks.iter().all(|t| {
        t.is_some_and(|t| t.times == first.times && t.interpolation == first.interpolation)
    });
    let base = clip.morph_base();
    if shared {
        let per = if first.interpolation == Interpolation::CubicSpline {
            3
        } else {
            1
        };
        let mut values = Vec::with_capacity(first.times.len() * per * channels.len());
        for i in 0..first.times.len() * per {
            for t in tracks.iter().flatten() {
                values.push(t.values[i]);
            }
        }
        return Some((first.interpolation, first.times.to_vec(), values));
    }
    let mut times: Vec<f32> = tracks
        .iter()
        .flatten()
        .flat_map(|t| t.times.iter().copied())
        .collect();
    times.sort_by(f32::total_cmp);
    times.dedup();
    let mut all = vec![0.0; base.len()];
    let mut values = Vec::with_capacity(times.len() * channels.len());
    for &t in &times {
        // The clip's own weights: exact at every key, and between keys for LINEAR tracks.
        let _ = skelett::sample_morph_weights(clip, t, &mut all);
        values.extend(
            channels
                .iter()
                .map(|&c| all.get(c as usize).copied().unwrap_or(0.0)),
        );
    }
    Some((Interpolation::Linear, times, values))
}

/// For a mesh with in-between shapes, its binding and which targets are among a channel's
/// in-betweens (`None` for a mesh glTF can hold as it is).
fn baked_in_betweens(
    mesh: &skelett::SkinnedMesh,
) -> Option<(skelett::morph::MorphBinding, Vec<bool>)> {
    let b = skelett::morph::MorphBinding::new(&mesh.morph_channels, &mesh.morph_full_weights)
        .ok()
        .filter(skelett::morph::MorphBinding::has_in_betweens)?;
    let c = b.channels();
    let grouped = (0..c.len())
        .map(|k| b.full_weights()[k] != 1.0 || c.iter().filter(|&&o| o == c[k]).count() > 1)
        .collect();
    Some((b, grouped))
}

/// A baked in-between mesh's `weights` sampler for `clip`: every target's own weight,
/// LINEAR, at the key times of the channels it reads plus each time a LINEAR track crosses
/// one of its channel's full weights or 0 (where the blend bends), so LINEAR tracks come out
/// exact; `None` when the clip animates none of the mesh's channels.
fn baked_weight_keys(
    clip: &skelett::Clip,
    binding: &skelett::morph::MorphBinding,
) -> Option<(Interpolation, Vec<f32>, Vec<f32>)> {
    let channels = binding.channels();
    let mut times = Vec::new();
    let mut any = false;
    for t in clip.morph_tracks() {
        let c = t.channel as u32;
        if !channels.contains(&c) {
            continue;
        }
        any = true;
        times.extend_from_slice(t.times);
        if t.interpolation != Interpolation::Linear {
            continue;
        }
        let knots: Vec<f32> = std::iter::once(0.0)
            .chain(
                channels
                    .iter()
                    .zip(binding.full_weights())
                    .filter(|(&o, _)| o == c)
                    .map(|(_, &f)| f),
            )
            .collect();
        for (ts, vs) in t.times.windows(2).zip(t.values.windows(2)) {
            for &x in &knots {
                let (lo, hi) = (vs[0].min(vs[1]), vs[0].max(vs[1]));
                if lo < x && x < hi {
                    times.push(ts[0] + (x - vs[0]) / (vs[1] - vs[0]) * (ts[1] - ts[0]));
                }
            }
        }
    }
    if !any {
        return None;
    }
    times.retain(|t| t.is_finite());
    times.sort_by(f32::total_cmp);
    times.dedup();
    let mut all = vec![0.0; clip.morph_channel_count()];
    let mut per_target = vec![0.0; binding.target_count()];
    let mut values = Vec::with_capacity(times.len() * per_target.len());
    for &t in &times {
        let _ = skelett::sample_morph_weights(clip, t, &mut all);
        let _ = binding.target_weights(&all, &mut per_target);
        values.extend_from_slice(&per_target);
    }
    Some((Interpolation::Linear, times, values))
}

fn glb(json: &[u8], bin: &[u8]) -> Vec<u8> {
    let mut j = json.to_vec();
    while j.len() % 4 != 0 {
        j.push(b' ');
    }
    let mut b = bin.to_vec();
    while b.len() % 4 != 0 {
        b.push(0);
    }
    let total = 12 + 8 + j.len() + if b.is_empty() { 0 } else { 8 + b.len() };
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(j.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&j);
    if !b.is_empty() {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(&b);
    }
    out
}

/// Writes `asset` to a binary glTF (`.glb`) file ([`to_bytes`]).
///
/// # Errors
/// [`crate::Error::Invalid`] for an asset that breaks [`crate::validate`]'s rules (nothing is
/// written); [`crate::Error::Io`] if the file cannot be written or would pass the output
/// limit ([`crate::max_output_bytes`]).
pub fn save(asset: &Asset, path: impl AsRef<std::path::Path>) -> Result<(), crate::Error> {
    crate::check_for_writing(asset, path.as_ref())?;
    let bytes = to_bytes(asset);
    crate::check_output_size(path.as_ref(), bytes.len() as u64, "the asset")?;
    crate::write_file(path.as_ref(), &bytes)
}

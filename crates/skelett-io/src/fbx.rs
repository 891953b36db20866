//! FBX import through ufbx (binary and ASCII, versions 6100 to 7700).
//!
//! ```text
//! bytes ──ufbx::load_memory──▶ ufbx scene (transforms evaluated by ufbx: pre/post rotations,
//!                              pivots, rotation orders; non-standard scale inheritance and
//!                              geometry transforms turned into helper nodes)
//!   nodes: every bone (and skin cluster bone) and its ancestors up to the scene root
//!          ──▶ RawSkeleton (rest = each node's local TRS)
//!   skin deformers ──▶ Skin (cluster bones, geometry-to-bone as inverse bind) + MeshPrimitive
//!          named after its node (one vertex per triangulated face corner: positions, normals,
//!          tangents with handedness, UVs; at most 8 heaviest weights, normalised; vertices
//!          without weights bound to the mesh's own node, where FBX leaves them)
//!   blend deformers ──▶ a skeleton morph channel per blend channel (`mesh/channel`, rest
//!          weight DeformPercent / 100) and a MorphTarget per shape (position and normal
//!          offsets times their per-offset weights (Blender's shape-key vertex groups), per
//!          control point spread to its face corners; a channel's single shape is scaled to
//!          be full at weight 1, Maya's in-between shapes each keep their FullWeights / 100
//!          in SkinnedMesh::morph_full_weights); a mesh with blend shapes and no skin is
//!          bound to its node as a skin of one joint
//!   animation stacks ──ufbx::bake_anim──▶ RawClip per stack (TRS keys at the file's key
//!          times; steps exact; curves that keys cannot represent resampled at the file's
//!          frame rate, with a warning saying how many keys that made); animated
//!          DeformPercent ──▶ morph weight tracks, keyed the same way
//! ```
//!
//! How curves become keys:
//! - The file's own keys stay keys, at their times (rounded to f32 like every key time).
//! - A constant (stepped) key jumps between two adjacent f32 times, so the clip holds the old
//!   value up to the last f32 before the key and has the new one at the key: exact for every
//!   time an f32 can hold. A channel made only of holds and steps becomes a STEP channel.
//! - Cubic segments, and linear segments of Euler angles (FBX interpolates the angles, skelett
//!   the rotation), are sampled at the file's frame rate; [`skelett::RawClip::build`] then
//!   drops every key its neighbours reproduce to f32 precision. FBX cubic curves are not kept
//!   as cubic channels: their tangents are Bezier handles in time and value (often weighted),
//!   which glTF-style Hermite keys cannot hold in general.
//!
//! Joint names are the file's. Where ufbx adds helper nodes (Maya's segment scale
//! compensation and other non-standard scale inheritance; geometric transforms), the joint
//! whose world matrix is the file's node's, scale included (the one the skin binds to), keeps
//! the file's name; the node above a scale helper is `name<unscaled>` ([`UNSCALED_SUFFIX`])
//! and a geometry helper `name<geometry>` ([`GEOMETRY_SUFFIX`]). A derived name never
//! displaces a file name.
//!
//! ufbx is a C library; it is the most complete FBX reader there is, and no Rust crate reads
//! FBX as faithfully, so skelett binds it rather than parse FBX by hand. Units and axes are
//! the file's own unless [`Options`] asks for metres or Y-up right-handed. Clip times are the
//! file's absolute times (a stack starting at frame 1 starts at 1/fps s).

use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec2, Vec3, Vec4};
use skelett::{
    Interpolation, MeshPrimitive, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues, Skin,
    SkinnedMesh, Target,
};

use crate::{Asset, Error};

/// How to read an FBX file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Convert lengths to metres (default: the file's own unit).
    pub to_meters: bool,
    /// Convert to Y-up, right-handed axes (default: the file's own axes).
    pub y_up: bool,
}

/// Loads an FBX file in its own units and axes ([`Options::default`]).
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes`].
pub fn load(path: impl AsRef<Path>) -> Result<Asset, Error> {
    load_with(path, &Options::default())
}

/// Loads an FBX file, converting units and axes as `options` say.
///
/// # Errors
/// [`Error::Io`] if it cannot be read; otherwise as [`from_bytes`].
pub fn load_with(path: impl AsRef<Path>, options: &Options) -> Result<Asset, Error> {
    let path = path.as_ref();
    let bytes = crate::read_file(path)?;
    from_bytes_with(&bytes, path, options)
}

/// Reads FBX bytes in the file's own units and axes; `name` is used in errors.
///
/// # Errors
/// As [`from_bytes_with`].
pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Asset, Error> {
    from_bytes_with(bytes, name, &Options::default())
}

fn v3(v: ufbx::Vec3) -> Vec3 {
    Vec3::new(v.x as f32, v.y as f32, v.z as f32)
}

fn quat(q: ufbx::Quat) -> Quat {
    Quat::from_xyzw(q.x as f32, q.y as f32, q.z as f32, q.w as f32)
}

fn mat(m: &ufbx::Matrix) -> Mat4 {
    Mat4::from_cols(
        Vec4::new(m.m00 as f32, m.m10 as f32, m.m20 as f32, 0.0),
        Vec4::new(m.m01 as f32, m.m11 as f32, m.m21 as f32, 0.0),
        Vec4::new(m.m02 as f32, m.m12 as f32, m.m22 as f32, 0.0),
        Vec4::new(m.m03 as f32, m.m13 as f32, m.m23 as f32, 1.0),
    )
}

/// Suffix of a node whose scale (and the file's name) went to its scale helper.
pub const UNSCALED_SUFFIX: &str = "<unscaled>";
/// Suffix of a geometry-transform helper (the node's geometric offset, between the node and
/// its mesh or bone attribute).
pub const GEOMETRY_SUFFIX: &str = "<geometry>";

/// The file's name that a node stands for: its own, or for a helper ufbx added (whose own
/// name is empty) that of the nearest file node above it.
fn file_name_of(node: &ufbx::Node) -> &str {
    let mut n = node;
    while n.is_scale_helper || n.is_geometry_transform_helper {
        match n.parent.as_deref() {
            Some(p) => n = p,
            None => return "",
        }
    }
    n.element.name.as_ref()
}

/// Joint names for the nodes `ids`.
///
/// ufbx represents two FBX features with helper nodes it adds to the scene:
/// - non-standard scale inheritance (Maya's segment scale compensation, FBX `InheritType`
///   1 and 2): a node whose scale must not reach some children gets a *scale helper* child
///   that carries the scale; the skin clusters, the bone attribute and the children that do
///   inherit scale move to the helper. The helper's world matrix is the file's joint's (scale
///   included), so the helper takes the file's name, and the node above it (translation and
///   rotation only, parent of the children that ignore its scale) is called
///   `name<unscaled>` (when the helper is not a joint, the node keeps the file's name);
/// - geometric transforms: a *geometry helper* between a node and what it carries, called
///   `name<geometry>`.
///
/// File names are kept as they are (two equal file names are told apart with `#index` and a
/// warning, as in every importer). A derived name never displaces a file name: one that a
/// file name (or an earlier derived name) already uses gets `#1`, `#2`, ... until unique.
fn joint_names(
    scene: &ufbx::Scene,
    ids: &[usize],
    is_joint: &[bool],
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let joint_helper = |node: &ufbx::Node| {
        node.scale_helper
            .as_deref()
            .map(|h| h.element.typed_id as usize)
            .is_some_and(|h| h < is_joint.len() && is_joint[h])
    };
    // (file name, suffix of a derived name)
    let sources: Vec<(&str, Option<&'static str>)> = ids
        .iter()
        .map(|&i| {
            let node = &scene.nodes[i];
            let base = file_name_of(node);
            if node.is_geometry_transform_helper {
                (base, Some(GEOMETRY_SUFFIX))
            } else if !node.is_scale_helper && joint_helper(node) {
                (base, Some(UNSCALED_SUFFIX))
            } else {
                (base, None)
            }
        })
        .collect();
    let file: Vec<usize> = (0..ids.len()).filter(|&k| sources[k].1.is_none()).collect();
    let mut file_names: Vec<String> = file.iter().map(|&k| sources[k].0.to_string()).collect();
    let tags: Vec<usize> = file.iter().map(|&k| ids[k]).collect();
    crate::dedupe_names(&mut file_names, &tags, warnings);
    let mut names = vec![String::new(); ids.len()];
    let mut taken = std::collections::HashSet::with_capacity(ids.len());
    for (&k, name) in file.iter().zip(file_names) {
        taken.insert(name.clone());
        names[k] = name;
    }
    // Next `#n` to try per derived base, so many equal bases cost linear time.
    let mut next: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (k, &(base, suffix)) in sources.iter().enumerate() {
        let Some(suffix) = suffix else { continue };
        let stem = format!("{base}{suffix}");
        let n = next.entry(stem.clone()).or_insert(0);
        let name = crate::first_free(&taken, n, |k| match k {
            0 => stem.clone(),
            k => format!("{stem}#{k}"),
        });
        taken.insert(name.clone());
        names[k] = name;
    }
    names
}

/// Reads FBX bytes, converting units and axes as `options` say; `name` is used in errors.
///
/// # Errors
/// [`Error::Invalid`] with ufbx's error kind and description for a file it cannot read (not
/// an FBX, truncated, corrupted; ufbx reports no byte offsets) or a file without any bone;
/// [`Error::Build`] if the skeleton, a skin, a mesh or a clip is rejected.
pub fn from_bytes_with(bytes: &[u8], name: &Path, options: &Options) -> Result<Asset, Error> {
    // Counts and sizes in an FBX (array lengths, deflated sizes) are only bounded by the
    // file's claims; cap what ufbx may allocate in proportion to the input, so a hostile
    // file gets an error instead of exhausting memory. Real files use a few times their
    // size; 64x with a 256 MiB floor leaves room for heavily compressed arrays.
    let limit = (bytes.len() as u64)
        .saturating_mul(64)
        .clamp(256 << 20, 4 << 30)
        .min(usize::MAX as u64) as usize;
    let alloc = || ufbx::AllocatorOpts {
        memory_limit: limit,
        ..Default::default()
    };
    let mut opts = ufbx::LoadOpts {
        temp_allocator: alloc(),
        result_allocator: alloc(),
        inherit_mode_handling: ufbx::InheritModeHandling::HelperNodes,
        geometry_transform_handling: ufbx::GeometryTransformHandling::HelperNodes,
        load_external_files: false,
        ..Default::default()
    };
    if options.to_meters {
        opts.target_unit_meters = 1.0;
    }
    if options.y_up {
        opts.target_axes = ufbx::CoordinateAxes::right_handed_y_up();
    }
    if options.y_up {
        // Right-handed too: mirror Z where the file is left-handed.
        opts.handedness_conversion_axis = ufbx::MirrorAxis::Z;
    }
    if options.to_meters || options.y_up {
        // Convert every node, vertex and key, not only the top of the hierarchy.
        opts.space_conversion = ufbx::SpaceConversion::ModifyGeometry;
    }
    // ufbx's own errors carry no position (its error stack is compiled out): check the
    // structure first, so damage is reported with the byte and the node it is in.
    if let Some(e) = ascii_truncation(bytes, name).or_else(|| binary_structure(bytes, name)) {
        return Err(e);
    }
    let scene = ufbx::load_memory(bytes, opts).map_err(|e| load_error(&e, name))?;
    let invalid = |location: &str, problem: String| Error::Invalid {
        file: name.to_path_buf(),
        location: location.into(),
        problem,
    };
    // What ufbx repaired or skipped while reading (truncated arrays, clamped indices, missing
    // geometry data, strings that are not UTF-8...), said rather than dropped: one line per
    // kind, with how often and the first elements it names.
    let mut kinds: Vec<(String, usize, Vec<String>)> = Vec::new();
    for w in scene.metadata.warnings.iter() {
        let element = scene
            .elements
            .get(w.element_id as usize)
            .map(|e| crate::error::quote(&e.name));
        let k = match kinds
            .iter()
            .position(|k| k.0 == w.description.as_ref() as &str)
        {
            Some(k) => k,
            None => {
                kinds.push((w.description.to_string(), 0, Vec::new()));
                kinds.len() - 1
            }
        };
        kinds[k].1 += w.count.max(1);
        if let Some(e) = element.filter(|_| kinds[k].2.len() < 3) {
            kinds[k].2.push(e);
        }
    }
    let mut warnings: Vec<String> = kinds
        .into_iter()
        .map(|(what, count, elements)| {
            let mut line = format!("ufbx: {}", crate::error::quote(&what));
            if count > 1 {
                line += &format!(", {count} times");
            }
            if !elements.is_empty() {
                line += &format!(" (in {})", elements.join(", "));
            }
            line
        })
        .collect();

    // Joints: bones, skin cluster bones, and their ancestors below the scene root.
    let n = scene.nodes.len();
    let root_id = scene.root_node.element.typed_id as usize;
    let mut is_joint = vec![false; n];
    let mark = |start: &ufbx::Node, is_joint: &mut Vec<bool>| {
        let mut node = Some(start);
        while let Some(nd) = node {
            let id = nd.element.typed_id as usize;
            if id == root_id || id >= n || is_joint[id] {
                break;
            }
            is_joint[id] = true;
            node = nd.parent.as_deref();
        }
    };
    for node in scene.nodes.iter() {
        if node.bone.is_some() {
            mark(node, &mut is_joint);
        }
    }
    for cluster in scene.skin_clusters.iter() {
        if let Some(b) = cluster.bone_node.as_deref() {
            mark(b, &mut is_joint);
        }
    }
    // A skinned mesh's own node: vertices no bone weights follow it, as in FBX. A mesh with
    // blend shapes and no skin is bound to its node the same way.
    for mesh in scene.meshes.iter() {
        if !mesh.skin_deformers.is_empty() || has_blend_shapes(mesh) {
            if let Some(node) = mesh.element.instances.iter().next() {
                mark(node, &mut is_joint);
            }
        }
    }
    if !is_joint.iter().any(|&j| j) {
        return Err(invalid(
            "nodes",
            "no skeleton: the file has no bones (LimbNode), no skin clusters and no blend shapes"
                .into(),
        ));
    }
    let ids: Vec<usize> = (0..n).filter(|&i| is_joint[i]).collect();
    let mut index_of = vec![usize::MAX; n];
    for (k, &i) in ids.iter().enumerate() {
        index_of[i] = k;
    }
    let names = joint_names(&scene, &ids, &is_joint, &mut warnings);
    let joints = ids
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let node = &scene.nodes[i];
            let t = &node.local_transform;
            RawJoint {
                name: names[k].clone(),
                parent: node
                    .parent
                    .as_deref()
                    .map(|p| p.element.typed_id as usize)
                    .filter(|&p| p < n && is_joint[p])
                    .map(|p| index_of[p]),
                rest: skelett::Transform::new(v3(t.translation), quat(t.rotation), v3(t.scale)),
            }
        })
        .collect();
    let skeleton = RawSkeleton {
        joints,
        root_transform: mat(&scene.root_node.node_to_world),
    }
    .build()
    .map_err(|e| Error::build(name.to_path_buf(), "nodes", e))?;
    let joint_of_source = skeleton.joint_of_source();
    let joint_of_node = |id: usize| -> Option<skelett::JointIndex> {
        (id < n && is_joint[id]).then(|| joint_of_source[index_of[id]])
    };

    // Skins and meshes: one skin per skin deformer, one mesh per mesh using it.
    let mut skins = Vec::new();
    let mut meshes = Vec::new();
    let mut morph_channels: Vec<skelett::MorphChannel> = Vec::new();
    let mut channel_of_element: Vec<(u32, u32)> = Vec::new();
    for mesh in scene.meshes.iter() {
        let deformer = mesh.skin_deformers.iter().next().map(|d| &**d);
        if deformer.is_none() && !has_blend_shapes(mesh) {
            continue;
        }
        // The node's name is what artists see and pick (the geometry is often unnamed, or
        // called after the primitive it started from); the geometry's when it has no node.
        let mesh_name = mesh
            .element
            .instances
            .iter()
            .next()
            .map(|n| n.element.name.to_string())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| mesh.element.name.to_string());
        // Blend shapes: one morph channel per blend channel, `mesh/channel`. A channel with
        // one shape gets one target, scaled to be full at weight 1; a channel with
        // in-between shapes gets a target per shape, full at its own weight.
        let mut shapes: Vec<(&ufbx::BlendShape, f32)> = Vec::new();
        let mut mesh_channels: Vec<u32> = Vec::new();
        let mut mesh_full: Vec<f32> = Vec::new();
        for channel in mesh.blend_deformers.iter().flat_map(|d| d.channels.iter()) {
            let channel_shapes = channel_shapes(channel, &mesh_name, &mut warnings);
            if channel_shapes.is_empty() {
                continue;
            }
            let id = channel.element.element_id;
            let c = match channel_of_element.iter().find(|(e, _)| *e == id) {
                Some(&(_, c)) => c,
                None => {
                    let c = morph_channels.len() as u32;
                    morph_channels.push(skelett::MorphChannel {
                        name: format!("{mesh_name}/{}", channel.element.name),
                        rest: channel.weight as f32,
                    });
                    channel_of_element.push((id, c));
                    c
                }
            };
            if let [(shape, full)] = channel_shapes[..] {
                shapes.push((shape, full));
                mesh_channels.push(c);
                mesh_full.push(1.0);
            } else {
                for (shape, full) in channel_shapes {
                    shapes.push((shape, 1.0));
                    mesh_channels.push(c);
                    mesh_full.push(full);
                }
            }
        }
        if mesh_full.iter().all(|&f| f == 1.0) {
            mesh_full.clear();
        }
        let mut palette = Vec::new();
        let mut ibm = Vec::new();
        let cluster_count = deformer.map_or(0, |d| d.clusters.len());
        if cluster_count >= usize::from(u16::MAX) {
            return Err(invalid(
                &format!("mesh {mesh_name:?}"),
                format!("{cluster_count} skin clusters; at most 65534 are supported"),
            ));
        }
        let clusters: Vec<&ufbx::SkinCluster> = deformer
            .map(|d| d.clusters.iter().map(|c| &**c).collect())
            .unwrap_or_default();
        let mut cluster_slot = Vec::with_capacity(clusters.len());
        for cluster in clusters {
            let slot = cluster
                .bone_node
                .as_deref()
                .and_then(|b| joint_of_node(b.element.typed_id as usize));
            cluster_slot.push(slot.map(|j| {
                palette.push(j);
                ibm.push(mat(&cluster.geometry_to_bone));
                (palette.len() - 1) as u16
            }));
        }
        if palette.is_empty() && deformer.is_some() {
            warnings.push(format!(
                "mesh {mesh_name:?}: its skin has no bones; skipped"
            ));
            continue;
        }
        // The mesh node as a palette entry for unweighted vertices: node world times
        // geometry-to-node is where FBX puts them.
        let mesh_node = mesh.element.instances.iter().next();
        let rigid = mesh_node.and_then(|node| {
            let j = joint_of_node(node.element.typed_id as usize)?;
            palette.push(j);
            ibm.push(mat(&node.geometry_to_node));
            Some((palette.len() - 1) as u16)
        });
        if palette.is_empty() {
            // Blend shapes without a skin, and no node to follow: nothing to bind them to.
            warnings.push(format!(
                "mesh {mesh_name:?}: blend shapes on a mesh without a node; skipped"
            ));
            continue;
        }
        let skin = Skin::new(format!("{mesh_name} skin"), palette, ibm)
            .and_then(|s| s.validate(&skeleton).map(|()| s))
            .map_err(|e| Error::build(name.to_path_buf(), format!("mesh {mesh_name:?} skin"), e))?;
        let prim = mesh_primitive(
            mesh,
            deformer,
            &cluster_slot,
            rigid,
            &shapes,
            bytes.len(),
            &mut warnings,
            &mesh_name,
        )
        .map_err(|p| invalid(&format!("mesh {mesh_name:?}"), p))?;
        let m = SkinnedMesh {
            name: mesh_name.clone(),
            skin: skins.len(),
            primitives: vec![prim],
            morph_channels: mesh_channels,
            morph_full_weights: mesh_full,
        };
        m.validate(&skin)
            .map_err(|e| Error::build(name.to_path_buf(), format!("mesh {mesh_name:?}"), e))?;
        skins.push(skin);
        meshes.push(m);
    }

    // Morph channels: names made unique (two channels of one mesh may share a name).
    let skeleton = if morph_channels.is_empty() {
        skeleton
    } else {
        let mut seen = std::collections::HashSet::new();
        for c in &mut morph_channels {
            let base = c.name.clone();
            let mut k = 1;
            while !seen.insert(c.name.clone()) {
                k += 1;
                c.name = format!("{base}#{k}");
            }
        }
        skeleton
            .with_morph_channels(morph_channels)
            .map_err(|e| Error::build(name.to_path_buf(), "blend channels", e))?
    };

    // Clips: every animation stack, baked by ufbx into linear TRS keys.
    let fps = scene.settings.frames_per_second;
    let fps = if (1.0..=1000.0).contains(&fps) {
        fps
    } else {
        warnings.push(format!(
            "the file's frame rate {fps} is not usable; curves are resampled at 30 fps"
        ));
        30.0
    };
    // ufbx samples a curved segment at the frame rate, but at most `max_keyframe_segments`
    // times (every 2nd, 4th… frame beyond that; its default 32 makes a cubic segment longer
    // than 32 frames miss the curve between samples). Allow every frame of segments up to
    // 4096 frames, unless the file holds so many keys that the baked keys could exceed a
    // budget proportional to it (a hostile file with huge gaps between many keys).
    let (mut file_keys, mut longest) = (0usize, 0.0f64);
    for curve in scene.anim_curves.iter() {
        file_keys += curve.keyframes.len();
        for w in curve.keyframes.windows(2) {
            if w[0].interpolation == ufbx::Interpolation::Cubic {
                longest = longest.max((w[1].time - w[0].time) * fps);
            }
        }
    }
    let segments = (BAKED_KEY_BUDGET / file_keys.max(1)).clamp(32, 4096);
    if longest.is_finite() && longest > segments as f64 {
        warnings.push(format!(
            "a curve segment spans {} frames; it is sampled every {} frames",
            longest.round(),
            (longest / segments as f64).log2().ceil().exp2()
        ));
    }
    let mut clips = Vec::new();
    for stack in scene.anim_stacks.iter() {
        let stack_name = stack.element.name.to_string();
        let baked = ufbx::bake_anim(
            &scene,
            &stack.anim,
            ufbx::BakeOpts {
                temp_allocator: alloc(),
                result_allocator: alloc(),
                resample_rate: fps,
                minimum_sample_rate: fps,
                max_keyframe_segments: segments,
                // A step as two keys at one time; `channel_keys` makes it exact in f32.
                step_handling: ufbx::BakeStepHandling::IdenticalTime,
                ..Default::default()
            },
        )
        .map_err(|e| {
            invalid(
                &format!("animation stack {stack_name:?}"),
                e.description.to_string(),
            )
        })?;
        let mut channels = Vec::new();
        let (mut lo, mut hi) = (stack.time_begin, stack.time_end);
        // Keys ufbx added between the file's own keys (curves linear keys cannot represent).
        let (mut resampled, mut total) = (0usize, 0usize);
        for node in baked.nodes.iter() {
            let id = node.typed_id as usize;
            let Some(j) = joint_of_node(id) else { continue };
            let joint = skeleton.name(j).to_string();
            for k in node.translation_keys.iter().chain(node.scale_keys.iter()) {
                lo = lo.min(k.time);
                hi = hi.max(k.time);
            }
            for k in node.rotation_keys.iter() {
                lo = lo.min(k.time);
                hi = hi.max(k.time);
            }
            let flags = node
                .translation_keys
                .iter()
                .map(|k| k.flags)
                .chain(node.rotation_keys.iter().map(|k| k.flags))
                .chain(node.scale_keys.iter().map(|k| k.flags));
            for f in flags {
                total += 1;
                resampled += !own_key(f) as usize;
            }
            let t_keys = node.translation_keys.iter().map(|k| (k.time, v3(k.value)));
            let r_keys = node.rotation_keys.iter().map(|k| (k.time, quat(k.value)));
            let s_keys = node.scale_keys.iter().map(|k| (k.time, v3(k.value)));
            let (interpolation, times, values) = channel_keys(t_keys);
            channels.push(RawChannel {
                joint: joint.clone(),
                target: Target::Translation,
                interpolation,
                times,
                values: RawValues::Vec3(values),
            });
            let (interpolation, times, values) = channel_keys(r_keys);
            channels.push(RawChannel {
                joint: joint.clone(),
                target: Target::Rotation,
                interpolation,
                times,
                values: RawValues::Quat(values),
            });
            let (interpolation, times, values) = channel_keys(s_keys);
            channels.push(RawChannel {
                joint,
                target: Target::Scale,
                interpolation,
                times,
                values: RawValues::Vec3(values),
            });
        }
        channels.retain(|c| !c.times.is_empty());
        // Blend channel weights: DeformPercent curves, in percent.
        let mut morph_tracks = Vec::new();
        for element in baked.elements.iter() {
            let Some(&(_, c)) = channel_of_element
                .iter()
                .find(|(e, _)| *e == element.element_id)
            else {
                continue;
            };
            for prop in element.props.iter() {
                if prop.name != "DeformPercent" || prop.keys.is_empty() {
                    continue;
                }
                for k in prop.keys.iter() {
                    lo = lo.min(k.time);
                    hi = hi.max(k.time);
                    total += 1;
                    resampled += !own_key(k.flags) as usize;
                }
                let keys = prop.keys.iter().map(|k| (k.time, k.value.x as f32 * 0.01));
                let (interpolation, times, values) = channel_keys(keys);
                morph_tracks.push(skelett::RawMorphTrack {
                    channel: skeleton.morph_channel_names()[c as usize].clone(),
                    interpolation,
                    times,
                    values,
                });
            }
        }
        if resampled > 0 {
            warnings.push(format!(
                "animation stack {stack_name:?}: {resampled} of {total} keys were resampled at \
                 {fps} fps (curves that linear keys cannot represent exactly)"
            ));
        }
        let built = RawClip {
            name: stack_name.clone(),
            start: lo as f32,
            duration: (hi - lo).max(0.0) as f32,
            channels,
        }
        .build(&skeleton);
        let built = built.and_then(|c| {
            if morph_tracks.is_empty() {
                Ok(c)
            } else {
                c.with_morph_tracks(&skeleton, morph_tracks)
            }
        });
        // One unusable stack (times f32 cannot tell apart, say) does not cost the others.
        let clip = match built {
            Ok(c) => c.with_frame_rate(Some(fps as f32)),
            Err(e) => {
                warnings.push(format!("animation stack {stack_name:?} skipped: {e}"));
                continue;
            }
        };
        clips.push(Arc::new(clip));
    }

    let mut asset = Asset::read(name, skeleton, skins, meshes, clips, warnings)?;
    asset.meters_per_unit = Some(if options.to_meters {
        1.0
    } else {
        scene.settings.unit_meters as f32
    })
    .filter(|u| u.is_finite() && *u > 0.0);
    Ok(asset)
}

/// ufbx's error with its context: the error's type, its description, where in its parser it
/// failed (innermost first: the node or element being read) and the detail it gives.
fn load_error(e: &ufbx::Error, name: &Path) -> Error {
    let frames: Vec<String> = e
        .stack
        .iter()
        .take(e.stack_size as usize)
        .map(|f| f.description.to_string())
        .filter(|d| !d.is_empty() && d != e.description.as_ref() as &str)
        .collect();
    let mut problem = format!("not a readable FBX file: {}", e.description);
    if !frames.is_empty() {
        problem += &format!(" ({})", frames.join(" < "));
    }
    let info = e.info();
    if !info.is_empty() {
        problem += &format!(": {}", crate::error::quote(info));
    }
    Error::Invalid {
        file: name.to_path_buf(),
        location: format!("FBX ({:?})", e.type_),
        problem,
    }
}

/// The longest unquoted ASCII FBX token read (a number, a name or a keyword; strings are
/// quoted and not bounded by this).
const MAX_ASCII_TOKEN: usize = 1024;

/// ufbx reads an ASCII FBX that ends early as if its open sections closed there (a file cut
/// at 92 % loaded with no animation): count the braces outside strings and `;` comments, and
/// refuse a file that ends inside a section, naming the line where the innermost one opened.
/// An unquoted token longer than [`MAX_ASCII_TOKEN`] bytes (ufbx says only "Failed to load")
/// is refused with its line and column.
fn ascii_truncation(bytes: &[u8], name: &Path) -> Option<Error> {
    if bytes.starts_with(b"Kaydara FBX Binary") {
        return None;
    }
    let (mut line, mut open) = (1usize, Vec::new());
    let (mut line_start, mut token_start) = (0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() || b";\"{},:".contains(&c) {
            token_start = i + 1;
        } else if i - token_start >= MAX_ASCII_TOKEN {
            return Some(Error::Syntax {
                file: name.to_path_buf(),
                line,
                column: token_start - line_start + 1,
                expected: format!(
                    "an FBX token of at most {MAX_ASCII_TOKEN} bytes (this one is longer)"
                ),
            });
        }
        match c {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b';' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\n' {
                        line += 1;
                        line_start = i + 1;
                    }
                    i += 1;
                }
                token_start = i + 1;
            }
            b'{' => open.push(line),
            b'}' => {
                open.pop();
            }
            _ => {}
        }
        i += 1;
    }
    let &innermost = open.last()?;
    Some(Error::Syntax {
        file: name.to_path_buf(),
        line,
        column: 1,
        expected: format!(
            "the end of {} open FBX sections (the innermost opened at line {innermost}); \
             the file ends early",
            open.len()
        ),
    })
}

/// A binary FBX's node records, walked without decoding their values: every record must
/// end inside its parent (the file, at the top), its name and property list must fit in it,
/// each property must be well-formed ([`properties`]), and the top-level list must end with
/// its null record. The first record that breaks this
/// is reported with its byte offset and its path of node names.
fn binary_structure(bytes: &[u8], name: &Path) -> Option<Error> {
    const MAGIC: &[u8] = b"Kaydara FBX Binary  \0";
    // Big-endian files (byte 22 set) are left to ufbx.
    if !bytes.starts_with(MAGIC) || bytes.len() < 27 || bytes[22] != 0 {
        return None;
    }
    let version = u32::from_le_bytes(bytes[23..27].try_into().ok()?);
    let wide = version >= 7500;
    let header = if wide { 25 } else { 13 };
    let read = |at: usize, wide: bool| -> Option<u64> {
        if wide {
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        } else {
            Some(u64::from(u32::from_le_bytes(
                bytes.get(at..at + 4)?.try_into().ok()?,
            )))
        }
    };
    let bad = |offset: usize, path: &[String], expected: String| {
        Some(Error::Malformed {
            file: name.to_path_buf(),
            offset: offset as u64,
            expected: if path.is_empty() {
                expected
            } else {
                format!("{expected} (in {})", path.join(" > "))
            },
        })
    };
    // (position, end of the enclosing list, path), depth first. A path is only cloned for a
    // record with children; names are quoted only for a message.
    type NamePath = Vec<(usize, usize)>;
    let mut stack: Vec<(usize, usize, NamePath)> = vec![(27, bytes.len(), Vec::new())];
    let names = |path: &[(usize, usize)]| -> Vec<String> {
        path.iter()
            .map(|&(s, e)| crate::error::quote(&String::from_utf8_lossy(&bytes[s..e])))
            .collect()
    };
    while let Some((mut at, end, path)) = stack.pop() {
        let top = path.is_empty();
        loop {
            // A nested list may end exactly at its parent's end without a null record (ufbx
            // reads such files); the top-level list needs its null record.
            if !top && at == end {
                break;
            }
            if at + header > end {
                let what = if top {
                    "the FBX null record that ends the top-level nodes; the file ends early"
                } else {
                    "an FBX node record or the null record that ends the list"
                };
                return bad(at, &names(&path), what.into());
            }
            let w = if wide { 8 } else { 4 };
            let record_end = read(at, wide)? as usize;
            let plen = read(at + 2 * w, wide)? as usize;
            let name_len = bytes[at + 3 * w] as usize;
            if record_end == 0 && name_len == 0 {
                // The null record closing this list.
                break;
            }
            let name_end = at + header + name_len;
            let here = |path: &[(usize, usize)]| {
                let mut h = names(path);
                h.push(crate::error::quote(&String::from_utf8_lossy(
                    &bytes[at + header..name_end.min(end)],
                )));
                h
            };
            if record_end > end || record_end < name_end {
                let parent = if top { "file" } else { "parent" };
                return bad(
                    at,
                    &here(&path),
                    format!(
                        "an FBX node record that ends inside its {parent} (it claims byte \
                         {record_end}, the {parent} ends at {end})"
                    ),
                );
            }
            let props_end = name_end.saturating_add(plen);
            if props_end > record_end {
                return bad(
                    name_end,
                    &here(&path),
                    format!(
                        "{plen} bytes of FBX properties inside the record (it ends at byte \
                         {record_end})"
                    ),
                );
            }
            let count = read(at + w, wide)?;
            if let Err((offset, expected)) = properties(bytes, name_end, props_end, count) {
                return bad(offset, &here(&path), expected);
            }
            if props_end < record_end {
                if path.len() >= 64 {
                    return bad(at, &here(&path), "FBX nodes nested at most 64 deep".into());
                }
                let mut child = path.clone();
                child.push((at + header, name_end));
                stack.push((props_end, record_end, child));
            }
            at = record_end;
        }
    }
    None
}

/// A binary FBX record's `count` properties, between `start` and `end`: each needs a known
/// type code and must fit; a raw array's byte length must be its element count times the
/// element size, and a zlib array's compressed length must fit. The first property that
/// breaks this is reported with its byte offset and what was expected there.
fn properties(bytes: &[u8], start: usize, end: usize, count: u64) -> Result<(), (usize, String)> {
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let mut at = start;
    for index in 0..count {
        if at >= end {
            return Err((
                at,
                format!("FBX property {index} of {count} inside the record's property list"),
            ));
        }
        let code = bytes[at];
        let body = at + 1;
        let size = match code {
            b'C' => Some(1),
            b'Y' => Some(2),
            b'I' | b'F' => Some(4),
            b'D' | b'L' => Some(8),
            b'S' | b'R' => u32_at(body).map(|n| 4 + n),
            b'f' | b'd' | b'l' | b'i' | b'b' => {
                let element = match code {
                    b'b' => 1,
                    b'f' | b'i' => 4,
                    _ => 8,
                };
                match (u32_at(body), u32_at(body + 4), u32_at(body + 8)) {
                    (Some(len), Some(encoding), Some(stored)) => {
                        if encoding > 1 {
                            return Err((
                                body + 4,
                                format!(
                                    "an FBX array encoding of 0 (raw) or 1 (zlib), not \
                                     {encoding}"
                                ),
                            ));
                        }
                        if encoding == 0 && stored as u64 != len as u64 * element {
                            return Err((
                                body + 8,
                                format!(
                                    "{} bytes for a raw FBX array of {len} elements of {element} \
                                     bytes, not {stored}",
                                    len as u64 * element
                                ),
                            ));
                        }
                        Some(12 + stored)
                    }
                    _ => None,
                }
            }
            _ => {
                return Err((
                    at,
                    format!(
                        "an FBX property type code (one of C Y I F D L S R f d l i b), not \
                         byte 0x{code:02x}"
                    ),
                ))
            }
        };
        match size.map(|s| body.saturating_add(s)) {
            Some(next) if next <= end => at = next,
            _ => {
                return Err((
                    at,
                    format!(
                        "FBX property {index} ('{}') ending inside the record's property list \
                         (it ends at byte {end})",
                        code as char
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// Whether a baked key is one of the file's own keys or a half of one of its steps (not
/// resampled).
fn own_key(f: ufbx::BakedKeyFlags) -> bool {
    [
        ufbx::BakedKeyFlags::KEYFRAME,
        ufbx::BakedKeyFlags::STEP_LEFT,
        ufbx::BakedKeyFlags::STEP_RIGHT,
        ufbx::BakedKeyFlags::STEP_KEY,
    ]
    .iter()
    .any(|&o| f.has_any(o))
}

/// The f32 just below `x` (for finite `x`).
fn next_down(x: f32) -> f32 {
    if x == 0.0 {
        -f32::from_bits(1)
    } else if x > 0.0 {
        f32::from_bits(x.to_bits() - 1)
    } else {
        f32::from_bits(x.to_bits() + 1)
    }
}

/// Baked keys as a skelett channel, exactly where f32 times allow.
///
/// ufbx stamps a constant step as two keys at one time (the held value, then the new one).
/// The held value goes to the f32 time just before the step, so a LINEAR channel jumps
/// between two adjacent f32 times: exactly the step, for every time an f32 can hold. A
/// channel made only of holds and steps becomes a STEP channel (one key per change, what glTF
/// export writes as a STEP sampler). Times that collide in f32 keep the later key.
fn channel_keys<T: Copy + PartialEq>(
    keys: impl Iterator<Item = (f64, T)>,
) -> (Interpolation, Vec<f32>, Vec<T>) {
    let mut times: Vec<f32> = Vec::new();
    let mut values: Vec<T> = Vec::new();
    let mut last_f64 = f64::NAN;
    for (t, v) in keys {
        let t32 = t as f32;
        if t == last_f64 {
            // The second key of a step: the first one holds until just before it. A key
            // already at that f32 time held the same value there: the held key replaces it.
            if let Some(held) = times.last_mut() {
                *held = next_down(t32);
            }
            let n = times.len();
            if n >= 2 && times[n - 2] >= times[n - 1] {
                times.remove(n - 2);
                values.remove(n - 2);
            }
        }
        last_f64 = t;
        // Distinct times that f32 cannot tell apart: the later key wins.
        if times.last().is_some_and(|&prev| t32 <= prev) {
            times.pop();
            values.pop();
        }
        times.push(t32);
        values.push(v);
    }
    // Holds and steps only?
    let step_at = |k: usize| times[k + 1] == next_up(times[k]);
    let steps_only =
        times.len() > 1 && (0..times.len() - 1).all(|k| values[k] == values[k + 1] || step_at(k));
    if !steps_only {
        return (Interpolation::Linear, times, values);
    }
    let mut st = vec![times[0]];
    let mut sv = vec![values[0]];
    for k in 0..times.len() - 1 {
        if step_at(k) && values[k] != values[k + 1] {
            st.push(times[k + 1]);
            sv.push(values[k + 1]);
        }
    }
    (Interpolation::Step, st, sv)
}

/// The f32 just above `x` (for finite `x`).
fn next_up(x: f32) -> f32 {
    -next_down(-x)
}

/// One vertex per triangulated face corner, with the skin weights of its control point.
#[allow(clippy::too_many_arguments)]
fn mesh_primitive(
    mesh: &ufbx::Mesh,
    deformer: Option<&ufbx::SkinDeformer>,
    cluster_slot: &[Option<u16>],
    rigid: Option<u16>,
    // Each target's shape and the weight its offsets are divided by.
    shapes: &[(&ufbx::BlendShape, f32)],
    file_len: usize,
    warnings: &mut Vec<String>,
    mesh_name: &str,
) -> Result<MeshPrimitive, String> {
    let pos = &mesh.vertex_position;
    let nrm = &mesh.vertex_normal;
    let uv = &mesh.vertex_uv;
    let tan = &mesh.vertex_tangent;
    let bitan = &mesh.vertex_bitangent;
    let has_tangents = nrm.exists && tan.exists && bitan.exists;
    // skelett keeps about 100 bytes per face corner; refuse meshes far larger than the file
    // could plausibly hold (deflated index arrays compress a few times, not thousands).
    let cap = (16 * 1024 * 1024).max(file_len.saturating_mul(4));
    if mesh.num_triangles.saturating_mul(3) > cap {
        return Err(format!(
            "{} triangles from a {file_len}-byte file is more than skelett loads ({cap} face corners)",
            mesh.num_triangles
        ));
    }
    let mut corners: Vec<u32> = Vec::with_capacity(mesh.num_triangles * 3);
    let mut tri = vec![0u32; mesh.max_face_triangles.max(1) * 3];
    for face in mesh.faces.iter() {
        let count = ufbx::triangulate_face(&mut tri, mesh, *face) as usize;
        corners.extend_from_slice(&tri[..(count * 3).min(tri.len())]);
    }
    let get3 = |a: &ufbx::VertexVec3, c: u32| -> Option<Vec3> {
        let i = *a.indices.get(c as usize)? as usize;
        a.values.get(i).map(|v| v3(*v))
    };
    let mut positions = Vec::with_capacity(corners.len());
    let mut normals = Vec::with_capacity(corners.len());
    let mut uvs = Vec::with_capacity(corners.len());
    let mut tangents = Vec::with_capacity(if has_tangents { corners.len() } else { 0 });
    let mut unweighted = 0usize;
    let mut per_vertex: Vec<Vec<(u16, f32)>> = Vec::with_capacity(corners.len());
    let mut control_points: Vec<u32> = Vec::with_capacity(corners.len());
    for &c in &corners {
        positions.push(get3(pos, c).ok_or("a face corner without a position")?);
        let normal = if nrm.exists {
            get3(nrm, c).unwrap_or(Vec3::Y)
        } else {
            Vec3::Y
        };
        normals.push(normal);
        if has_tangents {
            // glTF's convention: the bitangent's side as the sign in w.
            let t = get3(tan, c).unwrap_or(Vec3::X);
            let b = get3(bitan, c).unwrap_or(Vec3::Z);
            let w = if normal.cross(t).dot(b) < 0.0 {
                -1.0
            } else {
                1.0
            };
            tangents.push(t.try_normalize().unwrap_or(Vec3::X).extend(w));
        }
        uvs.push(if uv.exists {
            uv.indices
                .get(c as usize)
                .and_then(|&i| uv.values.get(i as usize))
                .map_or(Vec2::ZERO, |v| Vec2::new(v.x as f32, 1.0 - v.y as f32))
        } else {
            Vec2::ZERO
        });
        let cp = *mesh
            .vertex_indices
            .get(c as usize)
            .ok_or("a face corner without a vertex")?;
        control_points.push(cp);
        let mut inf: Vec<(u16, f32)> = Vec::new();
        if let Some((deformer, sv)) = deformer.and_then(|d| Some((d, d.vertices.get(cp as usize)?)))
        {
            let begin = sv.weight_begin as usize;
            for w in deformer
                .weights
                .get(begin..begin.saturating_add(sv.num_weights as usize))
                .unwrap_or(&[])
            {
                if let Some(Some(slot)) = cluster_slot.get(w.cluster_index as usize) {
                    if w.weight > 0.0 && w.weight.is_finite() {
                        inf.push((*slot, w.weight as f32));
                    }
                }
            }
        }
        if inf.is_empty() {
            if let Some(slot) = rigid {
                unweighted += 1;
                inf.push((slot, 1.0));
            }
        }
        per_vertex.push(inf);
    }
    let packed = crate::pack_influences(&mut per_vertex);
    if unweighted > 0 && deformer.is_some() {
        warnings.push(format!(
            "mesh {mesh_name:?}: {unweighted} face corners have no bone weights; they follow \
             the mesh's node"
        ));
    }
    warnings.extend(crate::reduced_warning(
        mesh_name,
        packed.reduced,
        "face corners",
    ));
    let n = positions.len() as u32;
    // Blend shapes: offsets per control point, spread to its face corners.
    if (corners.len() as u64).saturating_mul(shapes.len() as u64) > cap as u64 * 4 {
        return Err(format!(
            "{} blend shapes over {} face corners is more than skelett loads from a \
             {file_len}-byte file",
            shapes.len(),
            corners.len()
        ));
    }
    let mut morph_targets = Vec::with_capacity(shapes.len());
    let points = mesh.num_vertices;
    for &(shape, full) in shapes {
        let mut dp = vec![Vec3::ZERO; points];
        let mut dn = vec![Vec3::ZERO; points];
        let has_normals = !shape.normal_offsets.is_empty();
        for (i, &v) in shape.offset_vertices.iter().enumerate() {
            let v = v as usize;
            let slot = dp.get_mut(v).ok_or_else(|| {
                format!(
                    "blend shape {:?}: offset {i} moves control point {v}, the mesh has {points}",
                    shape.element.name
                )
            })?;
            // Blender writes a shape key's vertex group as per-offset weights.
            let scale = shape.offset_weights.get(i).map_or(1.0, |&w| w as f32) / full;
            let d = shape.position_offsets.get(i).map_or(Vec3::ZERO, |&d| v3(d)) * scale;
            if !d.is_finite() {
                return Err(format!(
                    "blend shape {:?}: offset {i} is not finite ({d})",
                    shape.element.name
                ));
            }
            *slot = d;
            if has_normals {
                let d = shape.normal_offsets.get(i).map_or(Vec3::ZERO, |&d| v3(d)) * scale;
                dn[v] = if d.is_finite() { d } else { Vec3::ZERO };
            }
        }
        let corner = |a: &[Vec3]| control_points.iter().map(|&c| a[c as usize]).collect();
        morph_targets.push(skelett::MorphTarget {
            positions: Some(corner(&dp)),
            normals: (has_normals && nrm.exists).then(|| corner(&dn)),
            tangents: None,
        });
    }
    Ok(MeshPrimitive {
        positions,
        normals: nrm.exists.then_some(normals),
        tangents: has_tangents.then_some(tangents),
        uvs: uv.exists.then_some(uvs),
        influences: packed.influences,
        joints: packed.joints,
        weights: packed.weights,
        indices: (0..n).collect(),
        base_color_texture: None,
        base_color: Vec4::ONE,
        morph_targets,
    })
}

/// How many baked keys curve sampling may add over the file's own, all curves together:
/// with 16 bytes per baked key, 256 MiB at most.
const BAKED_KEY_BUDGET: usize = 1 << 24;

/// Whether `mesh` has a blend channel with a shape.
fn has_blend_shapes(mesh: &ufbx::Mesh) -> bool {
    mesh.blend_deformers
        .iter()
        .flat_map(|d| d.channels.iter())
        .any(|c| !c.keyframes.is_empty())
}

/// A blend channel's shapes and the channel weight each is fully applied at (FBX's
/// `FullWeights` / 100: 1 for the usual single shape; several for Maya's in-between shapes),
/// sorted by that weight. Shapes at weight 0, at a non-finite weight or at a weight another
/// shape of the channel already has are dropped with a warning (no evaluation can use them).
fn channel_shapes<'a>(
    channel: &'a ufbx::BlendChannel,
    mesh_name: &str,
    warnings: &mut Vec<String>,
) -> Vec<(&'a ufbx::BlendShape, f32)> {
    let mut out: Vec<(&ufbx::BlendShape, f32)> = Vec::new();
    for k in channel.keyframes.iter() {
        let w = k.target_weight as f32;
        if !w.is_finite() || w == 0.0 || out.iter().any(|&(_, o)| o == w) {
            warnings.push(format!(
                "mesh {mesh_name:?}: blend channel {:?}: shape {:?} at weight {w} skipped \
                 (zero, not finite, or a second shape at that weight)",
                channel.element.name, k.shape.element.name
            ));
            continue;
        }
        out.push((&k.shape, w));
    }
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    out
}

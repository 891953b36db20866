//! One rule for the values every reader passes on and every writer takes.
//!
//! Each format checks its own syntax; this module checks what the syntax carried, the same way
//! for all of them, so that a file skelett writes always loads again:
//!
//! | value | rule |
//! |---|---|
//! | the root transform | refused when not a finite, invertible affine transform (a glTF root node's matrix must decompose) |
//! | inverse bind matrices | refused when one overflows f32 at the rest pose (its joint's rest matrix times it), or when a vertex skinned at the rest pose does |
//! | joint rest transforms, inverse bind matrices, clip base poses and keys, event times, vertex positions, skin weights, morph offsets | refused when not finite, on reading and before writing |
//! | rotations (rest pose, keys) | refused when zero (shorter than 1e-6) or so long that normalising overflows, on reading and before writing: no direction can be recovered |
//! | normals, tangents, texture coordinates, base colours | repaired on reading with a warning that names the mesh, primitive, attribute and how many ([`repair`]): a normal from the triangles around its vertex, a tangent along +X, a coordinate of 0, a white colour; refused before writing |
//!
//! ```text
//! reader ──Asset::read──▶ repair (warnings) ──▶ check ──▶ Asset ──▶ check ──▶ writer
//! ```
//!
//! Every reader runs [`repair`] and then [`check`] as it builds the [`Asset`] (a binary
//! format such as `.skl` can carry a NaN key past its own syntax), and every writer runs
//! [`check`] first; both refuse what fails with [`crate::Error::Invalid`] naming the element.
//! A writer can only meet such an asset when a program built or edited it by hand; [`repair`]
//! fixes what can be fixed. Text formats whose syntax has no spelling for infinity (RAM,
//! RAA, BVH) refuse such tokens as they parse.
//!
//! ```
//! use skelett_io::validate;
//! let mut asset = skelett_io::bvh::from_bytes(
//!     b"HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 3 Xposition Yposition Zposition\n End Site\n {\n  OFFSET 0 1 0\n }\n}\nMOTION\nFrames: 1\nFrame Time: 0.5\n0 0 0\n",
//!     std::path::Path::new("tiny.bvh"),
//! )?;
//! assert!(validate::check(&asset).is_ok());
//! assert!(validate::repair(&mut asset).is_empty(), "nothing to repair");
//! # Ok::<(), skelett_io::Error>(())
//! ```

use glam::{Vec2, Vec3, Vec4};
use skelett::{ChannelValues, MeshPrimitive, Transform};

use crate::Asset;

/// Rotations whose length is below this are zero: they name no direction.
const MIN_ROTATION_LENGTH_SQUARED: f32 = 1e-12;

/// A value [`check`] refuses, and where it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{element}: {problem}")]
pub struct Problem {
    /// The element at fault, such as `clip "Run" channel 3` or `mesh "Body" primitive 0`.
    pub element: String,
    /// What is wrong with it.
    pub problem: String,
}

fn problem(element: String, problem: String) -> Problem {
    Problem { element, problem }
}

/// A rotation that normalises to a unit quaternion: not zero, and not so long that its
/// squared length overflows (normalising it would give zero).
fn rotation_ok(q: glam::Quat) -> bool {
    let l = q.length_squared();
    l.is_finite() && l >= MIN_ROTATION_LENGTH_SQUARED
}

fn transform_problem(t: &Transform) -> Option<&'static str> {
    if !t.is_finite() {
        Some("is not finite")
    } else if !rotation_ok(t.rotation) {
        Some("has a zero rotation (or one too long to normalise)")
    } else {
        None
    }
}

/// Checks everything an asset holds against the rules above: what a writer must not write.
///
/// # Errors
/// The first [`Problem`] found.
pub fn check(asset: &Asset) -> Result<(), Problem> {
    let sk = &asset.skeleton;
    let joint = |j: usize| format!("joint {}", crate::error::quote(sk.name(j as u16)));
    // Affine (bottom row 0 0 0 1), finite, with axes whose lengths are finite and a linear
    // part that can be inverted: what a TRS decomposition (a glTF node) needs.
    let root = sk.root_transform();
    let linear = glam::Mat3::from_mat4(root);
    let det = linear.determinant();
    let axes_ok = [linear.x_axis, linear.y_axis, linear.z_axis]
        .iter()
        .all(|a| a.length().is_finite());
    if !(root.is_finite()
        && root.row(3) == glam::Vec4::W
        && axes_ok
        && det.is_finite()
        && det.abs() >= f32::MIN_POSITIVE)
    {
        return Err(problem(
            "the root transform".into(),
            "is not an invertible affine transform".into(),
        ));
    }
    for (j, t) in sk.rest_pose().iter().enumerate() {
        if let Some(p) = transform_problem(t) {
            return Err(problem(joint(j), format!("rest transform {p}")));
        }
    }
    // The rest pose's skinning matrices: an inverse bind matrix can be finite and still
    // overflow f32 once a joint's rest matrix multiplies it (entries near 3e38).
    let rest_model = sk.rest_model();
    let mut palettes = Vec::with_capacity(asset.skins.len());
    for (s, skin) in asset.skins.iter().enumerate() {
        if let Some(i) = skin.inverse_bind().iter().position(|m| !m.is_finite()) {
            return Err(problem(
                format!("skin {s}"),
                format!("inverse bind matrix {i} is not finite"),
            ));
        }
        let palette: Vec<glam::Mat4> = skin
            .joints()
            .iter()
            .zip(skin.inverse_bind())
            .map(|(&j, ibm)| rest_model.get(j as usize).map_or(*ibm, |m| *m * *ibm))
            .collect();
        if let Some(i) = palette.iter().position(|m| !m.is_finite()) {
            return Err(problem(
                format!("skin {s}"),
                format!(
                    "inverse bind matrix {i} overflows f32 at the rest pose (its largest \
                     entry is {:e})",
                    skin.inverse_bind()[i]
                        .abs()
                        .to_cols_array()
                        .iter()
                        .fold(0f32, |a, &b| a.max(b))
                ),
            ));
        }
        palettes.push(palette);
    }
    for clip in &asset.clips {
        let element = || format!("clip {}", crate::error::quote(clip.name()));
        if !(clip.start().is_finite() && clip.end().is_finite()) {
            return Err(problem(element(), "time range is not finite".into()));
        }
        for (j, t) in clip.base_pose().iter().enumerate() {
            if let Some(p) = transform_problem(t) {
                return Err(problem(element(), format!("base pose of {} {p}", joint(j))));
            }
        }
        if let Some(e) = clip.events().iter().find(|e| !e.time.is_finite()) {
            return Err(problem(
                element(),
                format!("event {} time is not finite", crate::error::quote(&e.name)),
            ));
        }
        let mut i = 0;
        while let Some(ch) = clip.channel(i) {
            let bad = match ch.values {
                ChannelValues::Vec3(v) => v.iter().position(|v| !v.is_finite()),
                ChannelValues::Quat(q) => {
                    let cubic = ch.interpolation == skelett::Interpolation::CubicSpline;
                    q.iter().enumerate().position(|(k, q)| {
                        // Cubic tangents (all but every third value) may be zero.
                        let tangent = cubic && k % 3 != 1;
                        !q.is_finite() || !(tangent || rotation_ok(*q))
                    })
                }
            };
            if let Some(k) = bad {
                return Err(problem(
                    element(),
                    format!(
                        "channel {i} ({:?} of {}) value {k} is not finite or a zero rotation",
                        ch.target,
                        joint(ch.joint as usize)
                    ),
                ));
            }
            if ch.times.iter().any(|t| !t.is_finite()) {
                return Err(problem(
                    element(),
                    format!("channel {i} has a time that is not finite"),
                ));
            }
            i += 1;
        }
    }
    for mesh in &asset.meshes {
        let element = |p: usize| format!("mesh {} primitive {p}", crate::error::quote(&mesh.name));
        let Some(skin) = asset.skins.get(mesh.skin) else {
            return Err(problem(
                element(0),
                format!("skin {} of {} skins", mesh.skin, asset.skins.len()),
            ));
        };
        mesh.validate(skin).map_err(|e| {
            problem(
                format!("mesh {}", crate::error::quote(&mesh.name)),
                e.to_string(),
            )
        })?;
        for (p, prim) in mesh.primitives.iter().enumerate() {
            if let Some(v) = first_overflowing_vertex(prim, &palettes[mesh.skin]) {
                return Err(problem(
                    element(p),
                    format!(
                        "vertex {v} overflows f32 when skinned at the rest pose (its inverse \
                         bind matrices or position are too large)"
                    ),
                ));
            }
            if let Some((what, i)) = first_repairable(prim) {
                return Err(problem(
                    element(p),
                    format!("{what} {i} is not finite (validate::repair fixes it)"),
                ));
            }
        }
    }
    Ok(())
}

/// The first vertex whose position, skinned with `palette` (the rest pose's skinning
/// matrices), is not finite. Joint indices were checked by `SkinnedMesh::validate`.
fn first_overflowing_vertex(p: &MeshPrimitive, palette: &[glam::Mat4]) -> Option<usize> {
    let n = p.influences.max(1);
    p.positions.iter().enumerate().position(|(v, &x)| {
        let joints = p.joints.get(v * n..v * n + n).unwrap_or(&[]);
        let weights = p.weights.get(v * n..v * n + n).unwrap_or(&[]);
        let skinned = joints
            .iter()
            .zip(weights)
            .filter(|(_, &w)| w != 0.0)
            .fold(Vec3::ZERO, |acc, (&j, &w)| {
                acc + w * palette.get(j as usize).map_or(x, |m| m.transform_point3(x))
            });
        !skinned.is_finite()
    })
}

/// The first attribute value [`repair`] would change: (attribute, vertex).
fn first_repairable(p: &MeshPrimitive) -> Option<(&'static str, usize)> {
    let first = |what, i: Option<usize>| i.map(|i| (what, i));
    first(
        "normal",
        p.normals
            .as_ref()
            .and_then(|n| n.iter().position(|v| !v.is_finite())),
    )
    .or_else(|| {
        first(
            "tangent",
            p.tangents
                .as_ref()
                .and_then(|n| n.iter().position(|v| !v.is_finite())),
        )
    })
    .or_else(|| {
        first(
            "texture coordinate",
            p.uvs
                .as_ref()
                .and_then(|n| n.iter().position(|v| !v.is_finite())),
        )
    })
    .or_else(|| (!p.base_color.is_finite()).then_some(("base colour", 0)))
}

/// Repairs what has a safe repair (normals, tangents, texture coordinates and base colours
/// that are not finite: see the module docs) and returns a warning per repaired attribute,
/// naming the mesh, primitive and first vertex. Everything else is left for [`check`] and
/// the runtime's builders to refuse.
pub fn repair(asset: &mut Asset) -> Vec<String> {
    let mut warnings = Vec::new();
    for mesh in &mut asset.meshes {
        for (pi, p) in mesh.primitives.iter_mut().enumerate() {
            let mut say = |what: &str, bad: Vec<usize>, to: &str| {
                if let Some(&first) = bad.first() {
                    warnings.push(format!(
                        "mesh {} primitive {pi}: {} {what}s not finite (the first at vertex \
                         {first}) replaced by {to}",
                        crate::error::quote(&mesh.name),
                        bad.len()
                    ));
                }
            };
            if let Some(normals) = &mut p.normals {
                let bad: Vec<usize> = (0..normals.len())
                    .filter(|&i| !normals[i].is_finite())
                    .collect();
                if !bad.is_empty() {
                    let faces = face_normals(&p.positions, &p.indices);
                    for &i in &bad {
                        normals[i] = faces.get(i).copied().unwrap_or(Vec3::Y);
                    }
                }
                say(
                    "normal",
                    bad,
                    "the normal of the triangles around the vertex",
                );
            }
            if let Some(tangents) = &mut p.tangents {
                let bad: Vec<usize> = (0..tangents.len())
                    .filter(|&i| !tangents[i].is_finite())
                    .collect();
                for &i in &bad {
                    tangents[i] = Vec4::new(1.0, 0.0, 0.0, 1.0);
                }
                say("tangent", bad, "+X");
            }
            if let Some(uvs) = &mut p.uvs {
                let bad: Vec<usize> = (0..uvs.len()).filter(|&i| !uvs[i].is_finite()).collect();
                for &i in &bad {
                    uvs[i] = Vec2::ZERO;
                }
                say("texture coordinate", bad, "(0, 0)");
            }
            if !p.base_color.is_finite() {
                p.base_color = Vec4::ONE;
                warnings.push(format!(
                    "mesh {} primitive {pi}: base colour not finite, replaced by white",
                    crate::error::quote(&mesh.name)
                ));
            }
        }
    }
    warnings
}

/// Per vertex, the normalised sum of the area-weighted normals of the triangles that use it
/// (+Y where there are none, or they cancel or are not finite).
fn face_normals(positions: &[Vec3], indices: &[u32]) -> Vec<Vec3> {
    let mut sum = vec![Vec3::ZERO; positions.len()];
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| i as usize);
        let (Some(&pa), Some(&pb), Some(&pc)) =
            (positions.get(a), positions.get(b), positions.get(c))
        else {
            continue;
        };
        let n = (pb - pa).cross(pc - pa);
        if n.is_finite() {
            for i in [a, b, c] {
                sum[i] += n;
            }
        }
    }
    sum.into_iter().map(|n| n.normalize_or(Vec3::Y)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn face_normals_point_out_of_a_counter_clockwise_triangle() {
        let n = face_normals(&[Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z], &[0, 1, 2]);
        assert_eq!(n, [Vec3::Z, Vec3::Z, Vec3::Z, Vec3::Y]);
    }
}

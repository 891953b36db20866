//! Every writer's output loads back equal within its format's precision, for random valid
//! assets (property tests), and no writer writes what the readers refuse: one validation
//! (`skelett_io::validate`) for all of them.

use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec2, Vec3, Vec4};
use proptest::prelude::*;
use skelett::{
    Interpolation, MeshPrimitive, Pose, RawChannel, RawClip, RawJoint, RawSkeleton, RawValues,
    Skin, SkinnedMesh, Target, Transform,
};
use skelett_io::{Asset, Error};

/// A vertex: position, normal, uv, influences (joint, weight).
type Vertex = (Vec3, Vec3, Vec2, Vec<(u16, f32)>);

/// What a random asset is made of, drawn by proptest.
#[derive(Clone, Debug)]
struct Spec {
    /// Per joint: parent (index below it, or none), translation, rotation, scale.
    joints: Vec<(Option<usize>, Vec3, Quat, Vec3)>,
    /// Per animated joint: rotation keys and (for formats that keep them) translation keys,
    /// one per frame.
    rotations: Vec<Vec<Quat>>,
    translations: Vec<Vec<Vec3>>,
    /// Frames per second of the keys; keys are on whole frames.
    fps: f32,
    vertices: Vec<Vertex>,
    triangles: Vec<[u32; 3]>,
}

fn quat() -> impl Strategy<Value = Quat> {
    (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0, 0.1f32..1.0)
        .prop_map(|(x, y, z, w)| Quat::from_xyzw(x, y, z, w).normalize())
}

fn vec3(r: f32) -> impl Strategy<Value = Vec3> {
    (-r..r, -r..r, -r..r).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// A random asset; `with_scale_and_moves` adds rest scales and translation keys, which RAM
/// and RAA cannot hold.
fn spec(with_scale_and_moves: bool) -> impl Strategy<Value = Spec> {
    (1usize..10, 2usize..8, 3usize..12).prop_flat_map(move |(n, frames, nv)| {
        let joints = (0..n)
            .map(|i| {
                let scale = if with_scale_and_moves {
                    (0.5f32..2.0).prop_map(Vec3::splat).boxed()
                } else {
                    Just(Vec3::ONE).boxed()
                };
                (
                    if i == 0 {
                        Just(None).boxed()
                    } else {
                        (0..i).prop_map(Some).boxed()
                    },
                    vec3(10.0),
                    quat(),
                    scale,
                )
            })
            .collect::<Vec<_>>();
        let rotations = prop::collection::vec(prop::collection::vec(quat(), frames), n);
        let translations = if with_scale_and_moves {
            prop::collection::vec(prop::collection::vec(vec3(5.0), frames), n).boxed()
        } else {
            Just(Vec::new()).boxed()
        };
        let vertex = (
            vec3(3.0),
            vec3(1.0).prop_map(|v| (v + Vec3::splat(0.01)).normalize()),
            (0.0f32..1.0, 0.0f32..1.0).prop_map(|(u, v)| Vec2::new(u, v)),
            prop::collection::vec((0..n as u16, 0.05f32..1.0), 1..4),
        );
        let vertices = prop::collection::vec(vertex, nv);
        let triangles = prop::collection::vec(
            (0..nv as u32, 0..nv as u32, 0..nv as u32).prop_map(|(a, b, c)| [a, b, c]),
            1..8,
        );
        let fps = prop_oneof![Just(30.0f32), Just(24.0), Just(60.0)];
        (joints, rotations, translations, fps, vertices, triangles).prop_map(
            |(joints, rotations, translations, fps, vertices, triangles)| Spec {
                joints,
                rotations,
                translations,
                fps,
                vertices,
                triangles,
            },
        )
    })
}

fn name(j: usize) -> String {
    format!("joint{j}")
}

fn build(s: &Spec) -> Asset {
    let skeleton = RawSkeleton {
        joints: s
            .joints
            .iter()
            .enumerate()
            .map(|(j, &(parent, t, r, sc))| RawJoint {
                name: name(j),
                parent,
                rest: Transform::new(t, r, sc),
            })
            .collect(),
        ..Default::default()
    }
    .build()
    .unwrap();
    let times: Vec<f32> = (0..s.rotations[0].len())
        .map(|f| f as f32 / s.fps)
        .collect();
    let mut channels = Vec::new();
    for (j, keys) in s.rotations.iter().enumerate() {
        channels.push(RawChannel {
            joint: name(j),
            target: Target::Rotation,
            interpolation: Interpolation::Linear,
            times: times.clone(),
            values: RawValues::Quat(keys.clone()),
        });
    }
    for (j, keys) in s.translations.iter().enumerate() {
        channels.push(RawChannel {
            joint: name(j),
            target: Target::Translation,
            interpolation: Interpolation::Linear,
            times: times.clone(),
            values: RawValues::Vec3(keys.clone()),
        });
    }
    let mut raw = RawClip {
        name: "take".into(),
        channels,
        ..Default::default()
    };
    raw.fit_range_to_keys();
    let clip = raw.build(&skeleton).unwrap();
    let joints: Vec<u16> = (0..skeleton.len() as u16).collect();
    let ibm = skelett::inverse_bind_matrices(&skeleton, &joints).unwrap();
    let skin = Skin::new("skin", joints, ibm).unwrap();
    let influences = 4;
    let mut jw = (Vec::new(), Vec::new());
    for v in &s.vertices {
        let sum: f32 = v.3.iter().map(|x| x.1).sum();
        for k in 0..influences {
            let (j, w) = v.3.get(k).copied().unwrap_or((0, 0.0));
            jw.0.push(j);
            jw.1.push(w / sum);
        }
    }
    let primitive = MeshPrimitive {
        positions: s.vertices.iter().map(|v| v.0).collect(),
        normals: Some(s.vertices.iter().map(|v| v.1).collect()),
        tangents: None,
        uvs: Some(s.vertices.iter().map(|v| v.2).collect()),
        influences,
        joints: jw.0,
        weights: jw.1,
        indices: s.triangles.iter().flatten().copied().collect(),
        base_color_texture: None,
        base_color: Vec4::ONE,
        morph_targets: Vec::new(),
    };
    let mesh = SkinnedMesh {
        name: "body".into(),
        skin: 0,
        primitives: vec![primitive],
        morph_channels: Vec::new(),
        morph_full_weights: Vec::new(),
    };
    mesh.validate(&skin).unwrap();
    Asset {
        skeleton: Arc::new(skeleton),
        skins: vec![skin],
        meshes: vec![mesh],
        clips: vec![Arc::new(clip)],
        warnings: Vec::new(),
        images: Vec::new(),
        meters_per_unit: None,
    }
}

/// The same asset, within `eps`: skeleton names, parents and model-space rest pose (formats
/// may split a rest rotation differently), the clip's model-space pose at every frame, and
/// each triangle corner's position, normal, uv and skinning (which joints, how much).
fn assert_same(
    a: &Asset,
    b: &Asset,
    fps: f32,
    frames: usize,
    eps: f32,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.skeleton.names(), b.skeleton.names());
    prop_assert_eq!(a.skeleton.parents(), b.skeleton.parents());
    let model = |asset: &Asset, pose: &Pose| {
        let mut m = vec![Mat4::IDENTITY; asset.skeleton.len()];
        skelett::local_to_model(&asset.skeleton, pose, 0, &mut m).unwrap();
        m
    };
    let close = |x: &[Mat4], y: &[Mat4]| {
        x.iter()
            .zip(y)
            .map(|(p, q)| {
                (*p - *q)
                    .to_cols_array()
                    .iter()
                    .fold(0.0f32, |m, v| m.max(v.abs()))
            })
            .fold(0.0f32, f32::max)
    };
    let d = close(
        &model(a, &Pose::rest(&a.skeleton)),
        &model(b, &Pose::rest(&b.skeleton)),
    );
    prop_assert!(d < eps, "rest pose differs by {}", d);
    let (ca, cb) = (&a.clips[0], &b.clips[0]);
    for f in 0..frames {
        let t = f as f32 / fps;
        let mut pa = Pose::rest(&a.skeleton);
        let mut pb = Pose::rest(&b.skeleton);
        skelett::sample_uncached(ca, ca.start() + t, &mut pa).unwrap();
        skelett::sample_uncached(cb, cb.start() + t, &mut pb).unwrap();
        let d = close(&model(a, &pa), &model(b, &pb));
        prop_assert!(d < eps, "frame {} differs by {}", f, d);
    }
    let (pa, pb) = (&a.meshes[0].primitives[0], &b.meshes[0].primitives[0]);
    prop_assert_eq!(pa.indices.len(), pb.indices.len());
    let (ja, jb) = (&a.skins[0].joints(), &b.skins[0].joints());
    let skinning = |p: &MeshPrimitive, joints: &[u16], v: usize| {
        let mut w = vec![0.0f32; 64];
        for k in 0..p.influences {
            let i = v * p.influences + k;
            w[joints[p.joints[i] as usize] as usize] += p.weights[i];
        }
        w
    };
    for (&ia, &ib) in pa.indices.iter().zip(&pb.indices) {
        let (ia, ib) = (ia as usize, ib as usize);
        prop_assert!(pa.positions[ia].abs_diff_eq(pb.positions[ib], eps));
        let (na, nb) = (pa.normals.as_ref().unwrap(), pb.normals.as_ref().unwrap());
        prop_assert!(na[ia].abs_diff_eq(nb[ib], eps), "{} {}", na[ia], nb[ib]);
        let (ua, ub) = (pa.uvs.as_ref().unwrap(), pb.uvs.as_ref().unwrap());
        prop_assert!(ua[ia].abs_diff_eq(ub[ib], eps), "{} {}", ua[ia], ub[ib]);
        let (wa, wb) = (skinning(pa, ja, ia), skinning(pb, jb, ib));
        for (x, y) in wa.iter().zip(&wb) {
            prop_assert!((x - y).abs() < eps, "weights {:?} {:?}", wa, wb);
        }
    }
    Ok(())
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("skelett-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// `.skl` is exact.
    #[test]
    fn skl_round_trips(s in spec(true)) {
        let a = build(&s);
        let bytes = skelett_io::native::to_bytes(&a);
        let b = skelett_io::native::from_bytes(&bytes, Path::new("r.skl")).unwrap();
        prop_assert_eq!(&a.clips[0], &b.clips[0]);
        assert_same(&a, &b, s.fps, s.rotations[0].len(), 1e-6)?;
    }

    /// `.glb` holds f32 keys and attributes: equal up to the rest pose's matrix round-off.
    #[test]
    fn glb_round_trips(s in spec(true)) {
        let a = build(&s);
        let bytes = skelett_io::gltf::to_bytes(&a);
        let b = skelett_io::gltf::from_bytes(&bytes, Path::new("r.glb")).unwrap();
        assert_same(&a, &b, s.fps, s.rotations[0].len(), 1e-4)?;
    }

    /// `.ram` + `.raa` hold rotations on whole frames at 30 fps and text numbers: equal at
    /// every 30 fps frame (keys at other rates are resampled there).
    #[test]
    fn ram_raa_round_trips(s in spec(false)) {
        let a = build(&s);
        let ram = tmp(&format!("r{}.ram", s.vertices.len() * 1000 + s.joints.len()));
        skelett_io::rite::save(&a, &ram).unwrap();
        let b = skelett_io::rite::load(&ram).unwrap();
        let frames = (a.clips[0].duration() * 30.0).floor() as usize + 1;
        assert_same(&a, &b, 30.0, frames, 1e-4)?;
    }
}

/// A small skinned asset, loaded from a hand-written `.x` file.
fn quad(normal: &str) -> Asset {
    let text = format!(
        "xof 0303txt 0032\nFrame Root {{\n Mesh Quad {{\n  4;\n  0;0;0;,\n  1;0;0;,\n  1;1;0;,\n  0;1;0;;\n  1;\n  4;0,1,2,3;;\n  MeshNormals {{\n   4;\n   {normal};,\n   0;0;1;,\n   0;0;1;,\n   0;0;1;;\n   1;\n   4;0,1,2,3;;\n  }}\n }}\n}}\n"
    );
    skelett_io::x::from_bytes(text.as_bytes(), Path::new("quad.x")).unwrap()
}

#[test]
fn readers_repair_normals_that_are_not_finite_and_say_so() {
    let a = quad("0;1e99999;0");
    let n = a.meshes[0].primitives[0].normals.as_ref().unwrap();
    assert_eq!(n[0], Vec3::Z, "the quad's face normal");
    let w = a.warnings.join("\n");
    assert!(
        w.contains("mesh \"Quad\" primitive 0: 1 normals not finite (the first at vertex 0)"),
        "{w}"
    );
    assert!(skelett_io::validate::check(&a).is_ok());
}

#[test]
fn no_writer_writes_what_the_readers_refuse() {
    let mut a = quad("0;0;1");
    a.meshes[0].primitives[0].normals.as_mut().unwrap()[2] = Vec3::NAN;
    for ext in ["skl", "glb", "ram"] {
        let out = tmp(&format!("refused.{ext}"));
        let _ = std::fs::remove_file(&out);
        let r = match ext {
            "skl" => skelett_io::native::save(&a, &out),
            "glb" => skelett_io::gltf::save(&a, &out),
            _ => skelett_io::rite::save(&a, &out),
        };
        match r {
            Err(Error::Invalid {
                location, problem, ..
            }) => {
                assert_eq!(location, "mesh \"Quad\" primitive 0");
                assert!(problem.contains("normal 2 is not finite"), "{problem}");
            }
            other => panic!("{ext}: {other:?}"),
        }
        assert!(!out.exists(), "{ext}: nothing written");
    }
    // The repair the readers apply makes it writable.
    let warnings = skelett_io::validate::repair(&mut a);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    skelett_io::native::save(&a, tmp("repaired.skl")).unwrap();
}

#[test]
fn scaling_past_the_float_range_is_an_error_not_infinity() {
    let a = quad("0;0;1");
    let big = a.scaled(1e30).unwrap();
    let e = big.scaled(1e10).unwrap_err().to_string();
    assert!(
        e.contains("scaled by 10000000000") && e.contains("not finite"),
        "{e}"
    );
    assert!(a.scaled(0.01).is_ok());
}

/// A root transform a glTF node cannot hold (projective, or with an axis whose length
/// overflows: the fuzzer's `.skl` that the `.glb` writer wrote and the reader refused) is
/// refused by the rule, so no writer writes it.
#[test]
fn a_root_transform_that_does_not_decompose_is_refused() {
    let mut a = quad("0;0;1");
    for root in [
        Mat4::from_cols_array(&[
            1.0, 0.0, 0.0, 5.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
        ]),
        Mat4::from_scale(Vec3::new(0.0, 1.0, 1.0)),
        Mat4::from_scale(Vec3::new(3e38, 3e38, 1.0)),
    ] {
        let skeleton = RawSkeleton {
            joints: vec![RawJoint {
                name: "Root".into(),
                parent: None,
                rest: Transform::IDENTITY,
            }],
            root_transform: root,
        }
        .build()
        .unwrap();
        a.skeleton = Arc::new(skeleton);
        let p = skelett_io::validate::check(&a).unwrap_err();
        assert_eq!(p.element, "the root transform", "{root}");
        let out = tmp("root.glb");
        assert!(skelett_io::gltf::save(&a, &out).is_err());
    }
}

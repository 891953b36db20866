//! glTF export round trips: every asset in `../shared/data` (glTF and BVH) written to .glb,
//! read back and sampled: the same skeleton, clips (names, ranges, events, interpolation)
//! and poses within 1e-5. Every exported file also goes through the Khronos glTF validator
//! when it is installed (`.ci/validator`, which `.ci/run` installs; with
//! `SKELETT_REQUIRE_GLTF_VALIDATOR=1` a missing validator is a failure).

mod common;

use std::path::Path;

use skelett::{sample_uncached, ClipEvent, Pose};

#[test]
fn every_asset_round_trips_through_glb() {
    let out_dir = std::env::temp_dir().join(format!("skelett-export-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut written = Vec::new();
    for path in common::all_assets() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut asset = skelett_io::load(&path).unwrap();
        // Events travel too.
        if let Some(c) = asset.clips.first().cloned() {
            let with = (*c)
                .clone()
                .with_events(vec![ClipEvent {
                    time: c.start() + c.duration() / 2.0,
                    name: "mid".into(),
                    payload: Some("p".into()),
                }])
                .unwrap();
            asset.clips[0] = std::sync::Arc::new(with);
        }
        let glb = skelett_io::gltf::to_bytes(&asset);
        let out = out_dir.join(format!("{name}.glb"));
        std::fs::write(&out, &glb).unwrap();
        written.push(out);
        let back = skelett_io::gltf::from_bytes(&glb, Path::new(&name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back.skeleton.names(), asset.skeleton.names(), "{name}");
        assert_eq!(back.skeleton.parents(), asset.skeleton.parents(), "{name}");
        assert!(
            back.skeleton
                .root_transform()
                .abs_diff_eq(asset.skeleton.root_transform(), 1e-6),
            "{name}"
        );
        assert_eq!(back.skins.len(), asset.skins.len(), "{name}");
        assert_eq!(back.meshes.len(), asset.meshes.len(), "{name}");
        for (a, b) in asset.meshes.iter().zip(&back.meshes) {
            for (pa, pb) in a.primitives.iter().zip(&b.primitives) {
                assert_eq!(pa.positions, pb.positions, "{name}");
                assert_eq!(pa.indices, pb.indices, "{name}");
                assert_eq!(pa.joints.len(), pb.joints.len(), "{name}");
                // Materials: the base colour and its texture's image, byte for byte.
                assert_eq!(pa.base_color, pb.base_color, "{name}");
                let image = |a: &skelett_io::Asset, t: Option<usize>| {
                    t.and_then(|t| a.images.get(t).cloned().flatten())
                        .map(|i| (i.mime, i.bytes))
                };
                assert_eq!(
                    image(&asset, pa.base_color_texture),
                    image(&back, pb.base_color_texture),
                    "{name}"
                );
            }
        }
        assert_eq!(back.clips.len(), asset.clips.len(), "{name}");
        let mut pa = Pose::rest(&asset.skeleton);
        let mut pb = Pose::rest(&back.skeleton);
        for (a, b) in asset.clips.iter().zip(&back.clips) {
            assert_eq!(a.name(), b.name());
            assert_eq!(
                (a.start(), a.duration()),
                (b.start(), b.duration()),
                "{name} {}",
                a.name()
            );
            assert_eq!(a.events(), b.events(), "{name}");
            // Re-importing reduces once more: keys the first pass kept can lie on the line
            // between their new neighbours (a greedy reduction is not idempotent). The poses
            // below must not change; the keys may only drop.
            for (ka, kb) in a.counts().keys.iter().zip(b.counts().keys) {
                assert!(
                    kb <= *ka,
                    "{name} {}: keys by interpolation {:?} became {:?}",
                    a.name(),
                    a.counts().keys,
                    b.counts().keys
                );
            }
            for i in 0..=40 {
                let t = a.start() - 0.1 + (a.duration() + 0.2) * i as f32 / 40.0;
                sample_uncached(a, t, &mut pa).unwrap();
                sample_uncached(b, t, &mut pb).unwrap();
                for (x, y) in pa.iter().zip(pb.iter()) {
                    assert!(
                        (x.translation - y.translation).abs().max_element()
                            <= 1e-5 * (1.0 + x.translation.abs().max_element()),
                        "{name} t={t}"
                    );
                    assert!(
                        x.rotation.dot(y.rotation).abs() >= 1.0 - 1e-6,
                        "{name} t={t}"
                    );
                    assert!(
                        (x.scale - y.scale).abs().max_element() <= 1e-5,
                        "{name} t={t}"
                    );
                }
            }
        }
    }
    skelett_testdata::assert_valid_gltf(&written);
    std::fs::remove_dir_all(&out_dir).ok();
}

/// Morph targets and weight tracks survive a .glb round trip exactly (targets, names, rest
/// weights, tracks with their keys and interpolation), also for a channel shared by two
/// meshes, and the files pass the Khronos validator.
#[test]
fn morph_targets_and_weights_round_trip_through_glb() {
    let out_dir = std::env::temp_dir().join(format!("skelett-export-morph-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut written = Vec::new();
    for name in [
        "AnimatedMorphCube.glb",
        "AnimatedMorphSphere.glb",
        "MorphStressTest.glb",
        "SimpleMorph.glb",
        // FBX blend shapes, converted (Blender's with per-offset weights, Maya's cubic).
        "blender440_shape_weight_anim_7400_binary.fbx",
        "maya_blend_shape_cube_7700_binary.fbx",
    ] {
        let mut asset = skelett_io::load(common::data(&format!("morph/{name}"))).unwrap();
        if name == "SimpleMorph.glb" {
            // A second mesh sharing the first one's channels (one face, two meshes).
            let mut twin = asset.meshes[0].clone();
            twin.name = "twin".into();
            asset.meshes.push(twin);
        }
        let glb = skelett_io::gltf::to_bytes(&asset);
        let out = out_dir.join(format!("{name}.glb"));
        std::fs::write(&out, &glb).unwrap();
        written.push(out);
        let back = skelett_io::gltf::from_bytes(&glb, Path::new(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            back.skeleton.morph_channels(),
            asset.skeleton.morph_channels(),
            "{name}"
        );
        assert_eq!(back.meshes.len(), asset.meshes.len(), "{name}");
        for (a, b) in asset.meshes.iter().zip(&back.meshes) {
            assert_eq!(a.morph_channels, b.morph_channels, "{name}");
            for (pa, pb) in a.primitives.iter().zip(&b.primitives) {
                assert_eq!(pa.morph_targets, pb.morph_targets, "{name}");
            }
        }
        for (a, b) in asset.clips.iter().zip(&back.clips) {
            assert_eq!(a.morph_base(), b.morph_base(), "{name} {}", a.name());
            let tracks = |c: &skelett::Clip| -> Vec<_> {
                c.morph_tracks()
                    .map(|t| {
                        (
                            t.channel,
                            t.interpolation,
                            t.times.to_vec(),
                            t.values.to_vec(),
                        )
                    })
                    .collect()
            };
            if name.ends_with(".glb") {
                assert_eq!(tracks(a), tracks(b), "{name} {}", a.name());
            } else {
                // A mesh's channels keyed at different times are written at the union of
                // their times (one glTF `weights` channel per mesh): the same curves.
                let n = asset.skeleton.morph_channel_count();
                let (mut wa, mut wb) = (vec![0.0; n], vec![0.0; n]);
                for i in 0..=400 {
                    let t = a.start() + a.duration() * i as f32 / 400.0;
                    skelett::sample_morph_weights(a, t, &mut wa).unwrap();
                    skelett::sample_morph_weights(b, t, &mut wb).unwrap();
                    for (x, y) in wa.iter().zip(&wb) {
                        assert!((x - y).abs() < 1e-6, "{name} t={t}: {x} written, {y} read");
                    }
                }
            }
        }
    }
    skelett_testdata::assert_valid_gltf(&written);
    std::fs::remove_dir_all(&out_dir).ok();
}

/// Maya in-between shapes in a .glb: glTF's targets are linear in their own weights, so the
/// export bakes each target's in-between weight into the file (one weight per target, keyed
/// where the tracks cross a full weight). Read back, the file has a channel per target
/// (`channel@full`), passes the Khronos validator, and morphs every vertex as the FBX does
/// at 481 times over the clip (the tracks are LINEAR at 24 fps, so the baked keys are exact):
/// within 1e-5 of the mesh size.
#[test]
fn in_between_shapes_are_baked_into_glb() {
    use skelett::morph::{morph, Morphed};
    use skelett::skin::SkinningMesh;
    let path = skelett_testdata::maya_inbetween("maya_blend_inbetween_7500_binary.fbx");
    let asset = skelett_io::load(&path).unwrap();
    let glb = skelett_io::gltf::to_bytes(&asset);
    let out_dir = std::env::temp_dir().join(format!("skelett-export-inb-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("maya_blend_inbetween.glb");
    std::fs::write(&out, &glb).unwrap();
    skelett_testdata::assert_valid_gltf(std::slice::from_ref(&out));
    let back = skelett_io::gltf::from_bytes(&glb, &out).unwrap();
    let names: Vec<&str> = back
        .skeleton
        .morph_channel_names()
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        names,
        [
            "pCube1/KeyBlend.LiftTop@0.5",
            "pCube1/KeyBlend.LiftTop@1",
            "pCube1/KeyBlend.MoveToSide@-0.499",
            "pCube1/KeyBlend.MoveToSide@-0.249",
            "pCube1/KeyBlend.MoveToSide@1",
        ]
    );
    assert!(back.meshes[0].morph_full_weights.is_empty());
    let prepare = |a: &skelett_io::Asset| {
        let m = &a.meshes[0];
        let mut s = SkinningMesh::new(&m.primitives[0], a.skins[m.skin].len()).unwrap();
        s.bind_morph(&m.morph_channels, &m.morph_full_weights)
            .unwrap();
        let morphed = Morphed::new(&s);
        (s, morphed, vec![0.0; a.skeleton.morph_channel_count()])
    };
    let (sa, mut ma, mut wa) = prepare(&asset);
    let (sb, mut mb, mut wb) = prepare(&back);
    let size = asset.meshes[0].primitives[0]
        .positions
        .iter()
        .map(|p| p.length())
        .fold(0.0, f32::max);
    let (ca, cb) = (&asset.clips[0], &back.clips[0]);
    let mut worst = 0.0f32;
    for i in 0..=480 {
        let t = ca.start() + ca.duration() * i as f32 / 480.0;
        skelett::sample_morph_weights(ca, t, &mut wa).unwrap();
        skelett::sample_morph_weights(cb, t, &mut wb).unwrap();
        morph(&sa, &wa, &mut ma).unwrap();
        morph(&sb, &wb, &mut mb).unwrap();
        let (pa, pb) = (ma.positions().unwrap(), mb.positions().unwrap());
        for (x, y) in pa.iter().zip(pb) {
            let d = (*x - *y).length();
            worst = worst.max(d / size);
            assert!(d < 1e-5 * size, "t={t}: {x} from the FBX, {y} from the glb");
        }
    }
    eprintln!("in-betweens baked into glb: worst {worst:e} of the mesh size");
    std::fs::remove_dir_all(&out_dir).ok();
}

//! RAM/RAA round trips (no public files exist, so the writer proves the reader): every asset
//! of `../shared/data` written as RAM (+ RAA of clip 0) and read back has the same skeleton
//! and mesh, and its clip the same joint rotations at every frame (RAA carries rotations
//! only, as the format defines); plus bad input.

mod common;

use std::path::Path;

use skelett::{sample_uncached, Pose};
use skelett_io::rite;

#[test]
fn every_asset_round_trips_through_ram_and_raa() {
    for path in common::all_assets() {
        let a = skelett_io::load(&path).unwrap();
        let ram = rite::to_string(&a);
        let raa = rite::animation_to_string(&a, 0, 30.0);
        let b = rite::from_str(
            &ram,
            Path::new("m.ram"),
            raa.as_deref().map(|t| (t, Path::new("m.raa"))),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.display();
        assert_eq!(a.skeleton.names(), b.skeleton.names(), "{name}");
        assert_eq!(a.skeleton.parents(), b.skeleton.parents(), "{name}");
        for (x, y) in a.skeleton.rest_pose().iter().zip(b.skeleton.rest_pose()) {
            assert!(
                (x.translation - y.translation).length() <= 1e-5 * (1.0 + x.translation.length()),
                "{name}"
            );
            assert!(x.rotation.dot(y.rotation).abs() > 1.0 - 1e-6, "{name}");
        }
        if let (Some(ma), Some(mb)) = (a.meshes.first(), b.meshes.first()) {
            let (pa, pb) = (&ma.primitives[0], &mb.primitives[0]);
            assert_eq!(pa.triangle_count(), pb.triangle_count(), "{name}");
            for (ia, ib) in pa.indices.iter().zip(&pb.indices) {
                assert!(
                    (pa.positions[*ia as usize] - pb.positions[*ib as usize]).length()
                        < 1e-5 * (1.0 + pa.positions[*ia as usize].length()),
                    "{name}"
                );
            }
        }
        let (Some(ca), Some(cb)) = (a.clips.first(), b.clips.first()) else {
            continue;
        };
        let mut pa = Pose::rest(&a.skeleton);
        let mut pb = Pose::rest(&b.skeleton);
        let frames = (ca.duration() * 30.0).round() as usize;
        for f in (0..=frames).step_by((frames / 20).max(1)) {
            let t = ca.start() + f as f32 / 30.0;
            sample_uncached(ca, t, &mut pa).unwrap();
            sample_uncached(cb, t, &mut pb).unwrap();
            for (j, (x, y)) in pa.iter().zip(pb.iter()).enumerate() {
                assert!(
                    x.rotation.dot(y.rotation).abs() > 1.0 - 1e-5,
                    "{name} t={t} joint {j}: {} vs {}",
                    x.rotation,
                    y.rotation
                );
            }
        }
    }
}

#[test]
fn bad_ram_and_raa_name_the_line() {
    let ram = "joints 2\n0 \"hip\"\n parent -1\n orientation 0 0 0 1\n translation 0 1 0\n rotation 0 0 0 1\n1 \"knee\"\n parent 0\n orientation 0 0 0 1\n translation 0 -1 0\n rotation 0 0 0 1\n";
    let raa = "fps 30\ntracks 1\ntrack 0 1 \"knee\" 2\n0 0 0 0 0 1\n1 30 0.5 0 0 0.8660254\n";
    let a = rite::from_str(ram, Path::new("a.ram"), Some((raa, Path::new("a.raa")))).unwrap();
    assert_eq!(a.clips[0].duration(), 1.0);
    let mut pose = Pose::rest(&a.skeleton);
    sample_uncached(&a.clips[0], 1.0, &mut pose).unwrap();
    assert!(
        pose[1]
            .rotation
            .dot(glam::Quat::from_rotation_x(60f32.to_radians()))
            .abs()
            > 1.0 - 1e-6
    );
    let cases = [
        (ram.replace("parent 0", "parent 7"), "parent id 7"),
        (
            ram.replace("joints 2", "joints 99999999"),
            "count the file can hold",
        ),
        (
            ram.replace(
                "orientation 0 0 0 1\n translation 0 -1",
                "orientation 0 0 0 0\n translation 0 -1",
            ),
            "non-zero quaternion",
        ),
        (
            ram.replace("translation 0 1 0", "translation 0 x 0"),
            "line 5",
        ),
    ];
    for (text, expect) in cases {
        let e = rite::from_str(&text, Path::new("b.ram"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(expect), "{expect}: {e}");
    }
    let e = rite::from_str(
        ram,
        Path::new("a.ram"),
        Some((&raa.replace("track 0 1", "track 0 5"), Path::new("b.raa"))),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("b.raa") && e.contains("joint id of the RAM"),
        "{e}"
    );
    let e = rite::from_str(
        ram,
        Path::new("a.ram"),
        Some((&raa.replace("1 30 ", "1 0 "), Path::new("b.raa"))),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("increasing frame order"), "{e}");
}

/// What a RAM/RAA pair cannot hold is listed, not dropped silently: the Fox's second and
/// third clips and its first clip's animated translation; AnimatedMorphCube's targets and
/// weight tracks; no "clips after the first" for a one-clip file.
#[test]
fn losses_name_what_ram_and_raa_cannot_hold() {
    let fox = skelett_io::load(common::data("gltf/Fox.glb")).unwrap();
    let l = skelett_io::rite::losses(&fox);
    assert!(
        l.iter().any(|m| m.contains("2 clips after the first")),
        "{l:?}"
    );
    assert!(l.iter().any(|m| m.contains("translation/scale")), "{l:?}");
    let cube = skelett_io::load(common::data("morph/AnimatedMorphCube.glb")).unwrap();
    let l = skelett_io::rite::losses(&cube);
    assert!(l.iter().any(|m| m.contains("2 morph targets")), "{l:?}");
    assert!(l.iter().any(|m| m.contains("morph weight tracks")), "{l:?}");
    let simple = skelett_io::load(common::data("gltf/RiggedSimple.glb")).unwrap();
    assert_eq!(simple.clips.len(), 1);
    let l = skelett_io::rite::losses(&simple);
    assert!(l.iter().all(|m| !m.contains("clips after")), "{l:?}");
}

//! Bad BVH input gives a typed error with a line and column, never a panic or a huge
//! allocation.

mod common;

use std::path::Path;

use skelett_io::Error;

fn load(text: &str) -> Result<skelett_io::Asset, Error> {
    skelett_io::bvh::from_bytes(text.as_bytes(), Path::new("bad.bvh"))
}

fn err(text: &str) -> (usize, String) {
    match load(text) {
        Ok(_) => panic!("loaded: {text}"),
        Err(Error::Syntax { line, expected, .. }) => (line, expected),
        Err(e) => (0, e.to_string()),
    }
}

const GOOD: &str = "HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n JOINT Spine\n {\n  OFFSET 0 1 0\n  CHANNELS 3 Zrotation Xrotation Yrotation\n  End Site\n  {\n   OFFSET 0 1 0\n  }\n }\n}\nMOTION\nFrames: 2\nFrame Time: 0.5\n0 0 0 0 0 0 0 0 0\n1 0 0 90 0 0 0 45 0\n";

#[test]
fn a_small_file_loads_and_samples() {
    let a = load(GOOD).unwrap();
    assert_eq!(a.skeleton.names(), ["Hips", "Spine", "Spine_End"]);
    let clip = &a.clips[0];
    assert_eq!(clip.duration(), 0.5);
    let mut pose = skelett::Pose::rest(&a.skeleton);
    skelett::sample_uncached(clip, 0.5, &mut pose).unwrap();
    assert!((pose[0].translation.x - 1.0).abs() < 1e-6);
    let z90 = glam::Quat::from_rotation_z(90f32.to_radians());
    assert!(pose[0].rotation.dot(z90).abs() > 1.0 - 1e-6);
    // Spine: Zrotation 0, Xrotation 45, Yrotation 0.
    let x45 = glam::Quat::from_rotation_x(45f32.to_radians());
    assert!(pose[1].rotation.dot(x45).abs() > 1.0 - 1e-6);
    assert_eq!(
        pose[1].translation,
        glam::Vec3::Y,
        "no position channels: OFFSET"
    );
}

#[test]
fn errors_name_the_line() {
    let cases: &[(&str, &str, usize, &str)] = &[
        ("HIERARCHY", "HIERARCH", 1, "\"HIERARCHY\""),
        ("OFFSET 0 1 0", "OFFSET 0 x 0", 8, "a number"),
        (
            "CHANNELS 3 Zrotation",
            "CHANNELS 3 Wrotation",
            9,
            "channel name",
        ),
        ("CHANNELS 3 Zrotation", "CHANNELS 9 Zrotation", 9, "0 to 6"),
        ("Frames: 2", "Frames: -2", 17, "whole number"),
        (
            "Frame Time: 0.5",
            "Frame Time: 0",
            18,
            "positive frame time",
        ),
        (
            "1 0 0 90 0 0 0 45 0",
            "1 0 0 90 0 0 0 45 nan",
            20,
            "a number",
        ),
        ("  OFFSET 0 1 0\n  }", "  OFFSET 0 1 0\n  ]", 13, "}"),
    ];
    for (from, to, line, expect) in cases {
        let text = GOOD.replacen(from, to, 1);
        let (l, e) = err(&text);
        assert!(e.contains(expect), "{to:?}: {e}");
        assert_eq!(l, *line, "{to:?}: {e}");
    }
}

#[test]
fn truncated_anywhere_fails_cleanly() {
    for cut in 0..GOOD.len() - 1 {
        let text = &GOOD[..cut];
        // Cutting inside the last frame's last number may still parse; anything else fails.
        if let Ok(a) = load(text) {
            assert!(
                cut > GOOD.len() - 4,
                "cut at {cut} loaded with {} clips",
                a.clips.len()
            );
        }
    }
    let (_, e) = err(&GOOD.replace("Frames: 2", "Frames: 3"));
    assert!(e.contains("ends early") || e.contains("too short"), "{e}");
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    let (_, e) = err(&GOOD.replace("Frames: 2", "Frames: 9999999999999"));
    assert!(e.contains("too short"), "{e}");
    let deep = format!(
        "HIERARCHY\nROOT a\n{{\n OFFSET 0 0 0\n CHANNELS 0\n{}",
        "JOINT b { OFFSET 0 0 0 CHANNELS 0\n".repeat(100_000)
    );
    let (_, e) = err(&deep);
    assert!(e.contains("nested at most"), "{e}");
}

#[test]
fn real_files_load() {
    for f in ["01_01.bvh", "01_03.bvh", "Boxing_Toes.bvh"] {
        let a = skelett_io::load(common::data(&format!("bvh/{f}"))).unwrap();
        assert_eq!(a.clips.len(), 1);
    }
    let boxing = skelett_io::load(common::data("bvh/Boxing_Toes.bvh")).unwrap();
    assert!(
        boxing
            .warnings
            .iter()
            .any(|w| w.contains("declared frames")),
        "{:?}",
        boxing.warnings
    );
}

#[test]
fn repeated_joint_names_are_made_unique_with_a_warning() {
    let text = GOOD.replace("JOINT Spine", "JOINT Hips");
    let a = load(&text).unwrap();
    assert_eq!(a.skeleton.names(), ["Hips", "Hips#1", "Hips_End"]);
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("\"Hips\" is used twice")),
        "{:?}",
        a.warnings
    );
}

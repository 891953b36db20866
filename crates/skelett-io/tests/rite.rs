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
        // The RAA holds the whole frames at 30 fps within the clip.
        let first = (ca.start() * 30.0 + 1e-3).floor() as i64;
        let last = (ca.end() * 30.0 - 1e-3).ceil() as i64;
        for f in (first..=last).step_by(((last - first) as usize / 20).max(1)) {
            let t = f as f32 / 30.0;
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
            "the count says 99999999, the file has 2",
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

/// A RAM typed as the article prints it (headings, no counts) and one without any heading at
/// all, with a two-triangle mesh; two RAA files typed as the article prints them (no counts,
/// no frame rate) read onto the model as two clips.
const ARTICLE_RAM: &str = "\
Joint Definitions
0 \"hip\"
\tparent -1
\torientation 0 0 0 1
\ttranslation 0 1 0
\trotation 0 0 0 1
1 \"knee\"
\tparent 0
\torientation 0 0 0.7071068 0.7071068
\ttranslation 0 -1 0
\trotation 0 0 0 1
Vertices
0 0 0 0
1 1 0 0
2 0 1 0
3 1 1 0
Normals
0 0 0 1
1 0 0 1
2 0 0 1
3 0 0 1
UVs
0 0 0
1 1 0
2 0 1
3 1 1
Triangles
0 0 0 1 2 0 1 2 0 1 2
1 0 1 3 2 1 3 2 1 3 2
Weights
0 0 0 \"hip\" 1
1 1 0 \"hip\" 0.5
2 1 1 \"knee\" 0.5
3 2 1 \"knee\" 1
4 3 1 \"knee\" 1
";

const WALK: &str = "track 0 0 \"hip\"\n0 0 0 0 0 1\n1 30 0 0.258819 0 0.9659258\ntrack 1 1 \"knee\"\n0 0 0 0 0 1\n1 15 0.5 0 0 0.8660254\n2 30 0 0 0 1\n";
const WAVE: &str = "track 0 1 \"knee\"\n0 0 0 0 0 1\n1 10 0.7071068 0 0 0.7071068\n";

#[test]
fn the_articles_layout_reads_with_headings_or_without_and_several_animations() {
    let without: String = ARTICLE_RAM
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit() || c == '\t'))
        .map(|l| format!("{l}\n"))
        .collect();
    for (ram, label) in [
        (ARTICLE_RAM.to_string(), "headings"),
        (without, "no headings"),
    ] {
        let a = rite::from_str_with(
            &ram,
            Path::new("robot.ram"),
            &[(WALK, Path::new("walk.raa")), (WAVE, Path::new("wave.raa"))],
            rite::DEFAULT_FPS,
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(a.skeleton.names(), ["hip", "knee"], "{label}");
        let p = &a.meshes[0].primitives[0];
        assert_eq!(p.triangle_count(), 2, "{label}");
        assert_eq!(p.positions.len(), 4, "{label}");
        let names: Vec<&str> = a.clips.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["walk", "wave"], "{label}");
        // Frame 30 at the default 30 fps is one second; the wave's frame 10 a third of one.
        assert_eq!(a.clips[0].duration(), 1.0);
        assert!((a.clips[1].duration() - 1.0 / 3.0).abs() < 1e-6);
        assert_eq!(a.clips[1].frame_rate(), Some(30.0));
        // The knee's key rotation follows its orientation: at frame 15 of the walk it is the
        // orientation times 60 degrees about X.
        let mut pose = Pose::rest(&a.skeleton);
        sample_uncached(&a.clips[0], 0.5, &mut pose).unwrap();
        let o = glam::Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
        let want = o * glam::Quat::from_rotation_x(60f32.to_radians());
        assert!(pose[1].rotation.dot(want).abs() > 1.0 - 1e-6, "{label}");
        // Vertex 1 is half hip, half knee.
        let v1 = p
            .positions
            .iter()
            .position(|&v| v == glam::Vec3::X)
            .unwrap();
        let mut w: Vec<f32> = (0..p.influences)
            .map(|k| p.weights[v1 * p.influences + k])
            .filter(|&w| w > 0.0)
            .collect();
        w.sort_by(f32::total_cmp);
        assert_eq!(w, [0.5, 0.5], "{label}");
    }
    // A frame rate the reader is told: 60 fps halves the durations.
    let a = rite::from_str_with(
        ARTICLE_RAM,
        Path::new("robot.ram"),
        &[(WALK, Path::new("walk.raa"))],
        60.0,
    )
    .unwrap();
    assert_eq!(a.clips[0].duration(), 0.5);
}

#[test]
fn the_writer_writes_the_articles_layout_at_whole_frames() {
    let a = rite::from_str(
        ARTICLE_RAM,
        Path::new("robot.ram"),
        Some((WALK, Path::new("walk.raa"))),
    )
    .unwrap();
    let ram = rite::to_string(&a);
    for heading in [
        "Joint Definitions",
        "Vertices",
        "Normals",
        "UVs",
        "Triangles",
        "Weights",
    ] {
        assert!(ram.lines().any(|l| l == heading), "{heading}:\n{ram}");
    }
    assert!(
        !ram.contains("joints ") && !ram.contains("vertices "),
        "{ram}"
    );
    let raa = rite::animation_to_string(&a, 0, 30.0).unwrap();
    assert!(!raa.contains("fps") && !raa.contains("tracks"), "{raa}");
    assert!(raa.starts_with("track 0 0 \"hip\"\n0 0 "), "{raa}");
    // The article's Keyframes heading between a track and its keys, and a byte-order mark.
    let with_heading = format!(
        "\u{feff}Tracks\n{}",
        raa.replace("\"hip\"\n", "\"hip\"\nKeyframes\n")
    );
    let b = rite::from_str(
        &ram,
        Path::new("h.ram"),
        Some((&with_heading, Path::new("h.raa"))),
    )
    .unwrap();
    assert_eq!(b.clips[0].duration(), 1.0);
    // Every keyframe line: id, a whole frame number, a quaternion.
    for l in raa.lines().filter(|l| !l.starts_with("track")) {
        let items: Vec<&str> = l.split(' ').collect();
        assert_eq!(items.len(), 6, "{l}");
        assert!(items[1].parse::<i64>().is_ok(), "frame {l}");
    }
    // The counted layout, as before.
    let counted = rite::to_string_with(&a, rite::Layout::Counted);
    assert!(
        counted.starts_with("joints 2\n") && counted.contains("\nweights 5\n"),
        "{counted}"
    );
    let mut out = Vec::new();
    rite::write_animation_with(&a, 0, 30.0, rite::Layout::Counted, &mut out).unwrap();
    let counted_raa = String::from_utf8(out).unwrap();
    // The walk's keys are on whole frames: kept as they are (two for the hip, three for the
    // knee), not baked at every frame.
    assert!(
        counted_raa.starts_with("fps 30\ntracks 2\ntrack 0 0 \"hip\" 2\n0 0 "),
        "{counted_raa}"
    );
    assert!(
        counted_raa.contains("track 1 1 \"knee\" 3\n"),
        "{counted_raa}"
    );
    // Both read back the same.
    for (m, n) in [(&ram, &raa), (&counted, &counted_raa)] {
        let b = rite::from_str(m, Path::new("b.ram"), Some((n, Path::new("b.raa")))).unwrap();
        assert_eq!(b.skeleton.names(), a.skeleton.names());
        assert_eq!(b.clips[0].duration(), 1.0);
    }

    // A clip whose keys fall between frames is resampled at whole frames, and says so.
    // Keys at 0 and 1/3 s: at 25 fps the second lies between frames 8 and 9.
    let wave = rite::from_str(
        ARTICLE_RAM,
        Path::new("robot.ram"),
        Some((WAVE, Path::new("w.raa"))),
    )
    .unwrap();
    let at25 = rite::WriteOptions::default().with_fps(25.0);
    let l = rite::losses_with(&wave, &at25);
    assert!(l.iter().any(|l| l.contains("resampled")), "{l:?}");
    assert!(l.iter().any(|l| l.contains("--raa-fps 25")), "{l:?}");
    assert!(rite::losses(&a).iter().all(|l| !l.contains("resampled")));
    let raa25 = rite::animation_to_string(&wave, 0, 25.0).unwrap();
    let frames: Vec<&str> = raa25
        .lines()
        .filter(|l| !l.starts_with("track"))
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    // Only the animated joint has a track, resampled at every frame from 0 to 9 (the clip
    // ends at frame 8.33).
    assert_eq!(raa25.matches("track ").count(), 1, "{raa25}");
    assert!(raa25.starts_with("track 0 1 \"knee\"\n"), "{raa25}");
    assert_eq!(frames, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    assert!(l.iter().any(|l| l.contains("to frame 9")), "{l:?}");
}

#[test]
fn bad_article_layout_files_name_the_file_and_line() {
    let e = |ram: &str, raa: &str| {
        rite::from_str(ram, Path::new("m.ram"), Some((raa, Path::new("t.raa"))))
            .unwrap_err()
            .to_string()
    };
    // A track naming a joint id the RAM lacks: the RAA's file and line.
    let m = e(ARTICLE_RAM, &WALK.replace("track 1 1", "track 1 7"));
    assert!(
        m.contains("t.raa") && m.contains("line 4") && m.contains("joint id of the RAM, found 7"),
        "{m}"
    );
    // A keyframe line of the wrong shape.
    let m = e(
        ARTICLE_RAM,
        &WALK.replace("1 15 0.5 0 0 0.8660254", "1 15 0.5 0 0"),
    );
    assert!(m.contains("line 6") && m.contains("6 items"), "{m}");
    // A track with no keyframes.
    let m = e(
        ARTICLE_RAM,
        "track 0 0 \"hip\"\ntrack 1 1 \"knee\"\n0 0 0 0 0 1\n",
    );
    assert!(m.contains("at least one keyframe"), "{m}");
    // A counted track whose count is wrong.
    let m = e(ARTICLE_RAM, "track 0 0 \"hip\" 3\n0 0 0 0 0 1\n");
    assert!(m.contains("count says 3, it has 1"), "{m}");
    // A triangle naming a vertex that is not there: the RAM's line.
    let ram = ARTICLE_RAM.replace("1 0 1 3 2 1 3 2 1 3 2", "1 0 1 9 2 1 3 2 1 3 2");
    let m = e(&ram, WALK);
    assert!(
        m.contains("m.ram") && m.contains("line 29") && m.contains("vertex id 9"),
        "{m}"
    );
    // A line of the wrong shape under a heading.
    let ram = ARTICLE_RAM.replace("Normals\n0 0 0 1\n", "Normals\n0 0 0 1 1 1 1\n");
    let m = e(&ram, WALK);
    assert!(
        m.contains("a normals line (4 items) under its heading, found 7"),
        "{m}"
    );
    // A vertex line short of a coordinate, under its heading: named as such.
    let ram = ARTICLE_RAM.replace("Vertices\n0 0 0 0\n", "Vertices\n0 0 0\n");
    let m = e(&ram, WALK);
    assert!(
        m.contains("line 13") && m.contains("a vertices line (4 items) under its heading, found 3"),
        "{m}"
    );
    // A parent no joint has, and a joint id used twice: their lines.
    let m = e(&ARTICLE_RAM.replace("parent 0", "parent 5"), WALK);
    assert!(m.contains("line 7") && m.contains("has parent id 5"), "{m}");
    let m = e(&ARTICLE_RAM.replace("1 \"knee\"", "0 \"knee\""), WALK);
    assert!(
        m.contains("line 7") && m.contains("a joint id not used before, found 0"),
        "{m}"
    );
    let ram = ARTICLE_RAM.replace("Weights\n", "Weights\nVertices\n");
    let m = e(&ram, WALK);
    assert!(m.contains("article's order"), "{m}");
    // Two tracks for one joint: the second track's line.
    let m = e(
        ARTICLE_RAM,
        &format!("{WAVE}track 1 1 \"knee\"\n0 0 0 0 0 1\n"),
    );
    assert!(
        m.contains("line 4") && m.contains("joint id 1 has one above"),
        "{m}"
    );
    // A weight naming a vertex that is not there: at the vertex id.
    let m = e(
        &ARTICLE_RAM.replace("4 3 1 \"knee\" 1", "4 9 1 \"knee\" 1"),
        WALK,
    );
    assert!(
        m.contains("line 35, column 3") && m.contains("vertex id that exists, found 9"),
        "{m}"
    );
    // A frame rate that is not positive.
    let m = rite::from_str_with(
        ARTICLE_RAM,
        Path::new("m.ram"),
        &[(WALK, Path::new("t.raa"))],
        0.0,
    )
    .unwrap_err()
    .to_string();
    assert!(m.contains("positive frame rate"), "{m}");
    // A track whose name is not the joint's: read by its id, with a warning.
    let a = rite::from_str(
        ARTICLE_RAM,
        Path::new("m.ram"),
        Some((&WAVE.replace("\"knee\"", "\"elbow\""), Path::new("w.raa"))),
    )
    .unwrap();
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("\"elbow\"") && w.contains("\"knee\"")),
        "{:?}",
        a.warnings
    );
}

//! Bad and broken .x files: clear errors or warnings that name what is wrong, never a panic.

mod common;

use std::path::Path;

use skelett_io::{x, Error};

fn load(text: &[u8]) -> Result<skelett_io::Asset, Error> {
    x::from_bytes(text, Path::new("bad.x"))
}

const GOOD: &str = "xof 0303txt 0032\nFrame Root {\n FrameTransformMatrix { 1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1;; }\n Frame Arm {\n  FrameTransformMatrix { 1,0,0,0, 0,1,0,0, 0,0,1,0, 1,2,3,1;; }\n }\n}\nAnimTicksPerSecond { 4800; }\nAnimationSet Wave {\n Animation { { Arm } AnimationKey { 2; 2; 0;3;1,2,3;;, 4800;3;1,2,4;;; } }\n}\n";

#[test]
fn a_small_file_loads() {
    let a = load(GOOD.as_bytes()).unwrap();
    assert_eq!(a.skeleton.names(), ["Root", "Arm"]);
    assert_eq!(
        a.skeleton.rest_pose()[1].translation,
        glam::Vec3::new(1.0, 2.0, 3.0),
        "row-vector translation row"
    );
    let clip = &a.clips[0];
    assert_eq!((clip.name(), clip.duration()), ("Wave", 1.0));
    let mut pose = skelett::Pose::rest(&a.skeleton);
    skelett::sample_uncached(clip, 0.5, &mut pose).unwrap();
    assert!((pose[1].translation.z - 3.5).abs() < 1e-6);
    let rh = x::from_bytes_with(
        GOOD.as_bytes(),
        Path::new("g.x"),
        &x::Options {
            right_handed: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        rh.skeleton.rest_pose()[1].translation,
        glam::Vec3::new(1.0, 2.0, -3.0),
        "Z mirrored"
    );
}

/// Text labelled as binary or compressed is refused where it stops making sense in that
/// form (binary and compressed files themselves: `x_binary.rs`); an unknown form is named.
#[test]
fn text_under_another_forms_header_is_refused_by_offset() {
    for kind in ["bin ", "tzip", "bzip"] {
        let text = GOOD.replacen("txt ", kind, 1);
        match load(text.as_bytes()) {
            Err(Error::Malformed { offset, .. }) => assert!((16..=24).contains(&offset), "{kind}"),
            other => panic!("{kind}: {other:?}"),
        }
    }
    match load(GOOD.replacen("txt ", "cmp ", 1).as_bytes()) {
        Err(Error::Unsupported { what, .. }) => assert!(what.contains("\"bzip\""), "{what}"),
        other => panic!("cmp: {other:?}"),
    }
    assert!(matches!(
        load(b"not an x file at all"),
        Err(Error::Malformed { .. })
    ));
}

#[test]
fn truncated_and_inconsistent_files_fail_cleanly() {
    for cut in 0..GOOD.len() {
        let _ = load(&GOOD.as_bytes()[..cut]);
    }
    let e = load(GOOD.replace("2; 2; 0;3;", "2; 9; 0;3;").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("does not fit") || e.contains("more numbers"),
        "{e}"
    );
    let e = load(GOOD.replace("Frame Arm {", "Frame Arm ").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("line"), "{e}");
    let deep = format!("xof 0303txt 0032\n{}", "Frame a {\n".repeat(10_000));
    assert!(load(deep.as_bytes())
        .unwrap_err()
        .to_string()
        .contains("nested at most"));
}

/// `anim_test.x` is a broken export: it animates and skins bones that do not exist. It loads
/// with warnings that name them.
#[test]
fn the_broken_anim_test_file_names_its_missing_bones() {
    let a = skelett_io::load(common::data("x/anim_test.x")).unwrap();
    let w = a.warnings.join("\n");
    assert!(
        w.contains("do not have") || w.contains("does not have"),
        "{w}"
    );
    eprintln!("{w}");
}

#[test]
fn real_files_load_with_meshes_and_clips() {
    let t = skelett_io::load(common::data("x/Testwuson.X")).unwrap();
    assert_eq!(
        t.clips.iter().map(|c| c.name()).collect::<Vec<_>>(),
        ["Wuson_Run", "Wuson_Walk", "Wuson_Bind"]
    );
    assert!(!t.meshes.is_empty());
    let b = skelett_io::load(common::data("x/BCN_Epileptic.X")).unwrap();
    assert_eq!(b.meshes.len(), 3, "{:?}", b.warnings);
}

/// A skinned quad: four vertices, one face, normals, UVs and a bone.
const MESH: &str = "xof 0303txt 0032\nFrame Root {\n FrameTransformMatrix { 1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1;; }\n Mesh Quad {\n  4;\n  0;0;0;,\n  1;0;0;,\n  1;1;0;,\n  0;1;0;;\n  1;\n  4;0,1,2,3;;\n  MeshNormals {\n   4;\n   0;0;1;,\n   0;0;1;,\n   0;0;1;,\n   0;0;1;;\n   1;\n   4;0,1,2,3;;\n  }\n  MeshTextureCoords {\n   4;\n   0;0;,\n   1;0;,\n   1;1;,\n   0;1;;\n  }\n  SkinWeights {\n   \"Root\";\n   4;\n   0,1,2,3;\n   1,1,1,1;\n   1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1;;\n  }\n }\n}\n";

/// Finite inverse bind matrices so large that skinning leaves f32 (the campaign's 3e38
/// matrices skinned to NaN vertices silently) are refused, naming the skin or the vertex.
#[test]
fn inverse_binds_that_overflow_when_skinned_are_refused() {
    let huge = "3e38,0,0,0, 0,3e38,0,0, 0,0,3e38,0, 3e38,0,0,1;;";
    let identity = "1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1;;";
    let ibm = MESH.replacen(identity, huge, 2).replacen(huge, identity, 1);
    let e = load(ibm.as_bytes()).unwrap_err().to_string();
    assert!(
        e.contains("mesh \"Quad\" primitive 0")
            && e.contains("vertex 1 overflows f32 when skinned at the rest pose"),
        "{e}"
    );
    // A joint scaled by 2 at rest: its rest matrix times the inverse bind overflows.
    let scaled = ibm.replacen(
        "{ 1,0,0,0, 0,1,0,0, 0,0,1,0,",
        "{ 2,0,0,0, 0,2,0,0, 0,0,2,0,",
        1,
    );
    let e = load(scaled.as_bytes()).unwrap_err().to_string();
    assert!(
        e.contains("skin 0")
            && e.contains("inverse bind matrix 0 overflows f32 at the rest pose")
            && e.contains("3e38"),
        "{e}"
    );
}

/// A count too large for f64 to hold exactly is quoted as "about", not as a rounded string
/// of digits that the file does not hold.
#[test]
fn a_huge_count_is_not_quoted_as_other_digits() {
    let text = MESH.replacen("  4;\n  0;0;0;,", "  99999999999999999999;\n  0;0;0;,", 1);
    let e = load(text.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("a count of about 1e20 does not fit"), "{e}");
    assert!(!e.contains("100000000000000000000"), "{e}");
}

#[test]
fn a_small_mesh_loads_whole() {
    let a = load(MESH.as_bytes()).unwrap();
    let p = &a.meshes[0].primitives[0];
    assert_eq!(p.positions.len(), 4);
    assert_eq!(p.indices.len(), 6, "a quad is two triangles");
    assert!(p.normals.is_some() && p.uvs.is_some());
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

/// Every line of the mesh deleted or repeated in turn: the file is refused with a message
/// that names the line, or loads whole. Before the reader checked counts, separators and
/// leftovers, a deleted vertex line loaded as a mesh with no triangles.
#[test]
fn a_line_deleted_or_repeated_is_never_lost_silently() {
    let lines: Vec<&str> = MESH.lines().collect();
    let first = lines.iter().position(|l| l.contains("Mesh Quad")).unwrap() + 1;
    let last = lines.len() - 2;
    let mut refused = 0;
    for i in first..last {
        for repeat in [false, true] {
            let mut edited: Vec<&str> = lines.clone();
            if repeat {
                edited.insert(i, lines[i]);
            } else {
                edited.remove(i);
            }
            let text = edited.join("\n");
            match load(text.as_bytes()) {
                Err(e) => {
                    refused += 1;
                    let msg = e.to_string();
                    assert!(
                        msg.starts_with("bad.x: line ") || msg.contains("(line "),
                        "{msg}"
                    );
                }
                Ok(a) => {
                    // Loading is only right if nothing was lost: the quad is whole.
                    let p = &a.meshes[0].primitives[0];
                    assert_eq!(
                        (p.positions.len(), p.indices.len()),
                        (4, 6),
                        "line {i} {}: {:?}",
                        if repeat { "repeated" } else { "deleted" },
                        lines[i]
                    );
                }
            }
        }
    }
    assert!(refused > 20, "{refused}");
}

#[test]
fn counts_are_whole_numbers_read_exactly() {
    let e = load(
        MESH.replacen("  4;\n  0;0;0;,", "  4294967295;\n  0;0;0;,", 1)
            .as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("4294967295 does not fit"), "{e}");
    let e = load(
        MESH.replacen("  4;\n  0;0;0;,", "  4.0;\n  0;0;0;,", 1)
            .as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("a count (a whole number"), "{e}");
    assert!(
        e.starts_with("bad.x: line 5, column 3: "),
        "the count's own place: {e}"
    );
    let e = load(
        MESH.replacen(
            "4;0,1,2,3;;\n  MeshNormals",
            "4;0,1,2,7;;\n  MeshNormals",
            1,
        )
        .as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("vertex index below 4, found 7"), "{e}");
}

#[test]
fn messages_quote_tokens_escaped_and_cut() {
    let long = "Q".repeat(100_000);
    let text = MESH.replacen(
        "Mesh Quad {",
        &format!("{long}\0 Quad {{ }}\n Mesh Quad {{"),
        1,
    );
    // A word where a number or object should be: named, cut, the NUL escaped.
    let text = text.replacen("{ }", "", 1);
    let e = load(text.as_bytes()).unwrap_err().to_string();
    assert!(
        e.len() < 300,
        "{} bytes: {}",
        e.len(),
        &e[..300.min(e.len())]
    );
    assert!(!e.contains('\0'), "{e}");
}

#[test]
fn non_finite_weights_and_bad_ticks_are_refused() {
    let e = load(MESH.replacen("1,1,1,1;", "1,1,1e99999,1;", 1).as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not finite"), "{e}");
    let e = load(GOOD.replacen("4800;", "0;", 1).as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("ticks per second"), "{e}");
}

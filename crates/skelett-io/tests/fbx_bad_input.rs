//! Bad FBX input gets a clear error naming the file, never a panic or an abort: prefixes
//! (the first 64 lengths, then every 97th) of a real binary and a real ASCII file, bytes
//! that are not FBX, and a well-formed FBX with no skeleton; and the unit and axis options.

mod common;

use std::path::Path;

use skelett_io::fbx::{from_bytes, from_bytes_with, Options};

/// Every prefix of a real file (the first 64 lengths, then every 97th) is an error that names
/// the file, never a smaller asset (ufbx alone loaded an ASCII file cut at 92 % with no
/// animated channels); only a cut in the binary footer, after the content, loads, whole. Binary files are walked record by record first, so the error gives the
/// byte and the node.
#[test]
fn truncated_files_are_errors_never_smaller_assets() {
    for file in [
        "maya_game_sausage_7500_binary_wiggle.fbx",
        "maya_game_sausage_7500_ascii_wiggle.fbx",
    ] {
        let bytes = std::fs::read(common::data(&format!("fbx/{file}"))).unwrap();
        let name = Path::new(file);
        let whole = from_bytes(&bytes, name).unwrap();
        for len in (0..64).chain((64..bytes.len()).step_by(97)) {
            match from_bytes(&bytes[..len], name) {
                Ok(a) => {
                    assert!(
                        len + 200 > bytes.len(),
                        "{file}: the {len}-byte prefix loaded"
                    );
                    assert_eq!(a.clips, whole.clips);
                    assert_eq!(a.meshes.len(), whole.meshes.len());
                }
                Err(e) => assert!(e.to_string().contains(file), "{e}"),
            }
        }
    }
    let binary =
        std::fs::read(common::data("fbx/maya_game_sausage_7500_binary_wiggle.fbx")).unwrap();
    let cut = &binary[..binary.len() * 99 / 100];
    let e = from_bytes(cut, Path::new("cut.fbx"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cut.fbx: byte ") && e.contains("(in \"Connections\")"),
        "{e}"
    );
    let ascii = std::fs::read(common::data("fbx/maya_game_sausage_7500_ascii_wiggle.fbx")).unwrap();
    let cut = &ascii[..ascii.len() * 92 / 100];
    let e = from_bytes(cut, Path::new("cut.fbx"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("open FBX sections") && e.contains("ends early"),
        "{e}"
    );
}

#[test]
fn not_an_fbx_is_a_clear_error() {
    for bytes in [
        &b""[..],
        b"hello",
        b"Kaydara FBX Binary  \x00\x1a\x00\xff\xff\xff\xff",
        &[0u8; 4096],
    ] {
        let e = from_bytes(bytes, Path::new("junk.fbx")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("junk.fbx") && msg.contains("FBX"), "{msg}");
    }
}

/// ufbx's own errors carry no position: damage inside a binary record's properties (a raw
/// array whose byte length disagrees with its count, an unknown type code) and an absurd
/// ASCII token are found first and reported with the byte or line.
#[test]
fn damaged_properties_and_huge_tokens_are_placed() {
    let binary =
        std::fs::read(common::data("fbx/maya_game_sausage_7500_binary_wiggle.fbx")).unwrap();
    // The first array property: a type code `d` or `i` followed by a count, encoding 0 or 1
    // and a stored length that fits in the file.
    let array = (27..binary.len() - 13)
        .find(|&i| {
            let u = |k: usize| u32::from_le_bytes(binary[k..k + 4].try_into().unwrap()) as usize;
            matches!(binary[i], b'd' | b'i')
                && u(i + 1) > 0
                && u(i + 5) <= 1
                && u(i + 9) > 0
                && i + 13 + u(i + 9) < binary.len()
                && (u(i + 5) == 1 || u(i + 9) == u(i + 1) * if binary[i] == b'd' { 8 } else { 4 })
        })
        .unwrap();
    let mut long = binary.clone();
    long[array + 9..array + 13].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let e = from_bytes(&long, Path::new("long.fbx"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("long.fbx: byte ") && e.contains("(in "),
        "{e}"
    );
    let mut bad_code = binary.clone();
    bad_code[array] = b'?';
    let e = from_bytes(&bad_code, Path::new("code.fbx"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("code.fbx: byte {array}: ")) && e.contains("type code"),
        "{e}"
    );

    let ascii =
        std::fs::read_to_string(common::data("fbx/maya_game_sausage_7500_ascii_wiggle.fbx"))
            .unwrap();
    // A 4 MB number at the start of the first array's values.
    let huge = ascii.replacen("a: ", &format!("a: {}", "9".repeat(4 << 20)), 1);
    let huge_line = ascii[..ascii.find("a: ").unwrap()].lines().count();
    let e = from_bytes(huge.as_bytes(), Path::new("huge.fbx"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("huge.fbx: line {huge_line}")) && e.len() < 300,
        "{}",
        &e[..e.len().min(400)]
    );
}

#[test]
fn an_fbx_without_bones_is_refused_by_name() {
    // A valid ASCII FBX with one mesh node and no skeleton.
    let fbx = br#"; FBX 7.4.0 project file
FBXHeaderExtension:  {
	FBXHeaderVersion: 1003
	FBXVersion: 7400
}
Objects:  {
	Model: 1000, "Model::Box", "Mesh" {
		Version: 232
	}
}
Connections:  {
	C: "OO",1000,0
}
"#;
    let e = from_bytes(fbx, Path::new("box.fbx")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("box.fbx") && msg.contains("no skeleton"),
        "{msg}"
    );
}

#[test]
fn units_and_axes_convert_on_request() {
    let path = common::data("fbx/ozz_pab_skeleton.fbx");
    let bytes = std::fs::read(&path).unwrap();
    let own = from_bytes(&bytes, &path).unwrap();
    let metres = from_bytes_with(
        &bytes,
        &path,
        &Options {
            to_meters: true,
            y_up: true,
        },
    )
    .unwrap();
    let height = |a: &skelett_io::Asset| {
        let mut model = vec![glam::Mat4::IDENTITY; a.skeleton.len()];
        skelett::local_to_model(&a.skeleton, a.skeleton.rest_pose(), 0, &mut model).unwrap();
        let ys: Vec<f32> = model
            .iter()
            .map(|m| {
                a.skeleton
                    .root_transform()
                    .transform_point3(m.w_axis.truncate())
                    .y
            })
            .collect();
        ys.iter().copied().fold(f32::MIN, f32::max) - ys.iter().copied().fold(f32::MAX, f32::min)
    };
    let (h_own, h_m) = (height(&own), height(&metres));
    // The ozz skeleton is in centimetres, Y-up: about 170 units tall, 1.7 m converted.
    assert!((h_own / h_m - 100.0).abs() < 1.0, "{h_own} cm vs {h_m} m");
    // Converted throughout, not by a scale on the top joint: every joint keeps its scale and
    // every offset shrinks a hundredfold.
    for j in 0..metres.skeleton.len() {
        let (a, b) = (
            &own.skeleton.rest_pose()[j],
            &metres.skeleton.rest_pose()[j],
        );
        assert!(
            (b.scale - a.scale).length() < 1e-4,
            "joint {j} scale {} vs {}",
            b.scale,
            a.scale
        );
        assert!(
            (a.translation.length() * 0.01 - b.translation.length()).abs() < 1e-4,
            "joint {j}: {} vs {}",
            a.translation,
            b.translation
        );
    }
    // The clips are converted too: the same pose, a hundredth the size.
    let pose = |a: &skelett_io::Asset| {
        let mut p = skelett::Pose::rest(&a.skeleton);
        let c = &a.clips[0];
        skelett::sample_uncached(c, c.start() + c.duration() * 0.5, &mut p).unwrap();
        p
    };
    let (pa, pb) = (pose(&own), pose(&metres));
    for j in 0..pa.len() {
        let (a, b) = (
            pa[j].translation.length() * 0.01,
            pb[j].translation.length(),
        );
        assert!((a - b).abs() < 1e-3 * (1.0 + a), "joint {j}: {a} vs {b}");
    }
}

//! Bad glTF input gives a typed error that says what and where, never a panic.
//!
//! Each case starts from a real asset (`RiggedSimple.glb`, `SimpleSkin.gltf`) and breaks one
//! thing: the container, the JSON, an accessor, the key data, the node hierarchy.

mod common;

use std::path::Path;

use serde_json::Value;
use skelett_io::Error;

fn rigged_simple() -> Vec<u8> {
    std::fs::read(common::data("gltf/RiggedSimple.glb")).unwrap()
}

/// Splits a GLB into its JSON value and BIN chunk.
fn split(glb: &[u8]) -> (Value, Vec<u8>) {
    let json_len = u32::from_le_bytes(glb[12..16].try_into().unwrap()) as usize;
    let json: Value = serde_json::from_slice(&glb[20..20 + json_len]).unwrap();
    let bin_at = 20 + json_len;
    let bin_len = u32::from_le_bytes(glb[bin_at..bin_at + 4].try_into().unwrap()) as usize;
    (json, glb[bin_at + 8..bin_at + 8 + bin_len].to_vec())
}

fn join(json: &Value, bin: &[u8]) -> Vec<u8> {
    let mut j = serde_json::to_vec(json).unwrap();
    while j.len() % 4 != 0 {
        j.push(b' ');
    }
    let mut out = Vec::new();
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&((12 + 8 + j.len() + 8 + bin.len()) as u32).to_le_bytes());
    out.extend_from_slice(&(j.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&j);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(bin);
    out
}

fn load(bytes: &[u8]) -> Result<skelett_io::Asset, Error> {
    skelett_io::gltf::from_bytes(bytes, Path::new("broken.glb"))
}

fn err(bytes: &[u8]) -> String {
    match load(bytes) {
        Ok(_) => panic!("a broken file loaded"),
        Err(e) => {
            let s = e.to_string();
            assert!(
                s.starts_with("broken.glb"),
                "error should name the file: {s}"
            );
            s
        }
    }
}

/// The first animation sampler's input and output accessor indices.
fn first_sampler(json: &Value) -> (usize, usize) {
    let s = &json["animations"][0]["samplers"][0];
    (
        s["input"].as_u64().unwrap() as usize,
        s["output"].as_u64().unwrap() as usize,
    )
}

/// Byte offset in BIN of accessor `a`'s first element.
fn accessor_offset(json: &Value, a: usize) -> usize {
    let acc = &json["accessors"][a];
    let view = &json["bufferViews"][acc["bufferView"].as_u64().unwrap() as usize];
    view["byteOffset"].as_u64().unwrap_or(0) as usize
        + acc["byteOffset"].as_u64().unwrap_or(0) as usize
}

#[test]
fn the_unbroken_file_loads() {
    let (json, bin) = split(&rigged_simple());
    let asset = load(&join(&json, &bin)).unwrap();
    assert_eq!(asset.skeleton.len(), 2);
}

#[test]
fn truncated_glb_names_the_byte_offset() {
    let glb = rigged_simple();
    for cut in [0, 3, 11, 12, 19, 100, glb.len() / 2, glb.len() - 1] {
        let e = match load(&glb[..cut]) {
            Ok(_) => panic!("truncated at {cut} loaded"),
            Err(e) => e,
        };
        match &e {
            Error::Malformed {
                offset, expected, ..
            } => {
                assert!(*offset as usize <= glb.len(), "{e}");
                assert!(!expected.is_empty());
            }
            other => panic!("cut {cut}: expected a Malformed error, got {other}"),
        }
    }
    let e = err(&glb[..glb.len() - 1]);
    assert!(e.contains("truncated"), "{e}");
}

#[test]
fn wrong_magic_and_version() {
    let mut glb = rigged_simple();
    glb[0..4].copy_from_slice(b"GLTF");
    let e = err(&glb);
    assert!(e.contains("byte 0") && e.contains("magic"), "{e}");
    let mut glb = rigged_simple();
    glb[4] = 1;
    let e = err(&glb);
    assert!(e.contains("byte 4") && e.contains("version 2"), "{e}");
}

#[test]
fn bad_json_names_line_and_column() {
    let e = err(b"{\n  \"asset\": {\"version\": \"2.0\"},\n  \"nodes\": [ {\"name\": 5} ]\n}");
    assert!(e.contains("line 3"), "{e}");
}

#[test]
fn out_of_range_accessor() {
    let (mut json, bin) = split(&rigged_simple());
    let (input, _) = first_sampler(&json);
    // A count the buffer view cannot hold.
    json["accessors"][input]["count"] = Value::from(1000u64);
    let e = err(&join(&json, &bin));
    assert!(
        e.contains(&format!("accessors[{input}]")) && e.contains("overrun"),
        "{e}"
    );
    // A count no file of this size could hold: refused before anything is allocated.
    let (mut json, bin) = split(&rigged_simple());
    json["accessors"][input]["count"] = Value::from(1_000_000_000u64);
    let e = err(&join(&json, &bin));
    assert!(
        e.contains(&format!("accessors[{input}]")) && e.contains("budget"),
        "{e}"
    );

    let (mut json, bin) = split(&rigged_simple());
    json["accessors"][input]["bufferView"] = Value::from(999);
    let e = err(&join(&json, &bin));
    assert!(e.contains(&format!("accessors[{input}]")), "{e}");

    let (mut json, bin) = split(&rigged_simple());
    let view = json["accessors"][input]["bufferView"].as_u64().unwrap() as usize;
    json["bufferViews"][view]["byteOffset"] = Value::from(bin.len() as u64);
    let e = err(&join(&json, &bin));
    assert!(
        e.contains(&format!("bufferViews[{view}]")) && e.contains("outside"),
        "{e}"
    );
}

#[test]
fn wrong_accessor_type() {
    let (mut json, bin) = split(&rigged_simple());
    let (_, output) = first_sampler(&json);
    json["accessors"][output]["componentType"] = Value::from(5121); // UNSIGNED_BYTE
    let e = err(&join(&json, &bin));
    assert!(
        e.contains(&format!("accessors[{output}]")) && e.contains("component type"),
        "{e}"
    );
}

#[test]
fn nan_key_times_and_values() {
    let (json, mut bin) = split(&rigged_simple());
    let (input, output) = first_sampler(&json);
    let at = accessor_offset(&json, input) + 4;
    bin[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    let e = err(&join(&json, &bin));
    assert!(
        e.contains("animations[0]") && e.contains("not finite"),
        "{e}"
    );

    let (json, mut bin) = split(&rigged_simple());
    let at = accessor_offset(&json, output) + 8;
    bin[at..at + 4].copy_from_slice(&f32::INFINITY.to_le_bytes());
    let e = err(&join(&json, &bin));
    assert!(
        e.contains("animations[0]") && e.contains("not finite"),
        "{e}"
    );
}

#[test]
fn unsorted_key_times() {
    let (json, mut bin) = split(&rigged_simple());
    let (input, _) = first_sampler(&json);
    let at = accessor_offset(&json, input);
    // Swap the second and third key times.
    let (a, b) = (at + 4, at + 8);
    let t1: [u8; 4] = bin[a..a + 4].try_into().unwrap();
    let t2: [u8; 4] = bin[b..b + 4].try_into().unwrap();
    bin[a..a + 4].copy_from_slice(&t2);
    bin[b..b + 4].copy_from_slice(&t1);
    let e = err(&join(&json, &bin));
    assert!(
        e.contains("increase strictly") && e.contains("key 2"),
        "{e}"
    );
}

#[test]
fn node_cycle_and_two_parents() {
    let (mut json, bin) = split(&rigged_simple());
    // Make the last joint a parent of the first node: a cycle through the hierarchy.
    let n = json["nodes"].as_array().unwrap().len();
    let last = n - 1;
    let first_with_children = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .position(|x| x.get("children").is_some())
        .unwrap();
    json["nodes"][last]["children"] = Value::from(vec![first_with_children as u64]);
    let e = err(&join(&json, &bin));
    assert!(e.contains("cycle") || e.contains("child of both"), "{e}");

    let (mut json, bin) = split(&rigged_simple());
    json["nodes"][last]["children"] = Value::from(vec![last as u64]);
    let e = err(&join(&json, &bin));
    assert!(
        e.contains(&format!("nodes[{last}]"))
            && (e.contains("cycle") || e.contains("child of both")),
        "{e}"
    );
}

#[test]
fn missing_bin_chunk_and_bad_data_uri() {
    let (json, _) = split(&rigged_simple());
    let mut j = serde_json::to_vec(&json).unwrap();
    while j.len() % 4 != 0 {
        j.push(b' ');
    }
    let mut glb = b"glTF".to_vec();
    glb.extend_from_slice(&2u32.to_le_bytes());
    glb.extend_from_slice(&((20 + j.len()) as u32).to_le_bytes());
    glb.extend_from_slice(&(j.len() as u32).to_le_bytes());
    glb.extend_from_slice(b"JSON");
    glb.extend_from_slice(&j);
    let e = err(&glb);
    assert!(e.contains("buffers[0]") && e.contains("BIN"), "{e}");

    let text = std::fs::read_to_string(common::data("gltf/SimpleSkin.gltf")).unwrap();
    let broken = text.replacen(";base64,", ";base64,%%%", 1);
    let e = err(broken.as_bytes());
    assert!(e.contains("base64"), "{e}");
}

#[test]
fn external_buffer_without_folder_is_an_error() {
    let (mut json, _) = split(&rigged_simple());
    json["buffers"][0]["uri"] = Value::from("missing.bin");
    let bytes = serde_json::to_vec(&json).unwrap();
    let e = err(&bytes);
    assert!(e.contains("missing.bin"), "{e}");
    let dir = std::env::temp_dir();
    let e = skelett_io::gltf::from_bytes_with(
        &bytes,
        Path::new("broken.gltf"),
        &skelett_io::gltf::Options::buffers_in(&dir),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn every_prefix_of_a_real_file_fails_cleanly() {
    // No prefix of a valid GLB may panic; all but the whole file must fail.
    let glb = rigged_simple();
    for cut in (0..glb.len()).step_by(97) {
        assert!(load(&glb[..cut]).is_err(), "prefix {cut}");
    }
}

/// Found by fuzzing: the `gltf` crate does not validate animation targets, and unwraps them.
#[test]
fn bad_animation_target_path_and_node() {
    let (mut json, bin) = split(&rigged_simple());
    json["animations"][0]["channels"][0]["target"]["path"] = Value::from("rotashun");
    let e = err(&join(&json, &bin));
    assert!(
        e.contains("animations[0].channels[0].target") && e.contains("path"),
        "{e}"
    );
    let (mut json, bin) = split(&rigged_simple());
    json["animations"][0]["channels"][0]["target"]["node"] = Value::from(4000);
    let e = err(&join(&json, &bin));
    assert!(e.contains("node 4000 does not exist"), "{e}");
}

/// Found by fuzzing: `gltf-json`'s validation looks up POSITION's accessor without a check.
#[test]
fn mesh_attribute_accessor_out_of_range() {
    let (mut json, bin) = split(&rigged_simple());
    json["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = Value::from(777);
    let e = err(&join(&json, &bin));
    assert!(
        e.contains("meshes[0].primitives[0].attributes.POSITION") && e.contains("777"),
        "{e}"
    );
}

/// Every reference to the same data is decoded again, so a small file can ask for gigabytes
/// (here: 6000 channels sharing one accessor over the whole buffer): the load budget stops it
/// before the memory is taken.
#[test]
fn many_references_to_one_accessor_hit_the_budget() {
    let (mut json, bin) = split(&rigged_simple());
    let view = json["bufferViews"].as_array().unwrap().len();
    json["bufferViews"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"buffer": 0, "byteLength": bin.len() / 4 * 4}));
    let big = json["accessors"].as_array().unwrap().len();
    json["accessors"].as_array_mut().unwrap().push(
        serde_json::json!({"bufferView": view, "componentType": 5126, "count": bin.len() / 4, "type": "SCALAR"}),
    );
    json["animations"][0]["samplers"][0]["input"] = Value::from(big);
    let channel = json["animations"][0]["channels"][0].clone();
    json["animations"][0]["channels"] = Value::from(vec![channel; 6000]);
    let e = err(&join(&json, &bin));
    assert!(
        e.contains(&format!("accessors[{big}]")) && e.contains("budget"),
        "{e}"
    );
}

#[test]
fn external_buffers_cannot_leave_the_folder() {
    let (mut json, _) = split(&rigged_simple());
    for uri in [
        "/dev/zero",
        "../secret.bin",
        "file:///etc/passwd",
        "a/../../b.bin",
    ] {
        json["buffers"][0]["uri"] = Value::from(uri);
        let bytes = serde_json::to_vec(&json).unwrap();
        let e = skelett_io::gltf::from_bytes_with(
            &bytes,
            Path::new("broken.gltf"),
            &skelett_io::gltf::Options::buffers_in("/tmp"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("relative path inside"), "{uri}: {e}");
    }
}

/// A NaN skin weight is read as 0 with a warning naming the primitive, and a vertex left
/// with no positive weight is said too (before, both loaded without a word).
#[test]
fn nan_and_missing_skin_weights_are_said() {
    let (json, mut bin) = split(&rigged_simple());
    let weights = json["meshes"][0]["primitives"][0]["attributes"]["WEIGHTS_0"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(
        json["accessors"][weights]["componentType"], 5126,
        "float weights"
    );
    let at = accessor_offset(&json, weights);
    let a = load(&join(&json, &bin)).unwrap();
    assert!(
        a.warnings.iter().all(|w| !w.contains("weight")),
        "{:?}",
        a.warnings
    );
    // Vertex 0: a NaN weight; vertex 1: all four zero.
    bin[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    bin[at + 16..at + 32].fill(0);
    let a = load(&join(&json, &bin)).unwrap();
    let said = |what: &str| {
        a.warnings
            .iter()
            .any(|w| w.contains("meshes[0]") && w.contains(what))
    };
    assert!(
        said("1 vertices had non-finite or negative weights"),
        "{:?}",
        a.warnings
    );
    assert!(said("no positive weight"), "{:?}", a.warnings);
}

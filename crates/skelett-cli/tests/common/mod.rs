//! What the CLI tests share: running the `skelett` binary as a user does, and reading and
//! comparing the JSON it prints (the same shape as the references in `../shared/data`).

#![allow(dead_code)] // each test binary uses its own subset

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `skelett ARGS`: (exited successfully, stdout, stderr).
pub fn skelett(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_skelett"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs `skelett ARGS`, which must succeed, and parses what it printed as JSON.
pub fn skelett_json(args: &[&str]) -> Value {
    let (ok, out, err) = skelett(args);
    assert!(ok, "skelett {args:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("skelett {args:?}: {e}\n{out}"))
}

/// A JSON file (a reference of `../shared/data`, a script).
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `v` as an array (panics naming `v` if it is not one).
pub fn items(v: &Value) -> &[Value] {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

/// `v` as a number (panics naming `v` if it is not one).
pub fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The joints of `sample --json`'s first sample of its first clip.
pub fn first_sample_joints(v: &Value) -> &[Value] {
    items(&v["clips"][0]["samples"][0]["joints"])
}

/// A sampled joint's model-space position: the translation of its `world` matrix
/// (column-major, as three.js writes it).
pub fn position(joint: &Value) -> glam::Vec3 {
    let w = items(&joint["world"]);
    let f = |i: usize| num(&w[i]) as f32;
    glam::Vec3::new(f(12), f(13), f(14))
}

/// Asserts that two arrays of numbers have the same length and agree within
/// `rel * (1 + |want|)` entry by entry.
pub fn assert_numbers_close(got: &Value, want: &Value, rel: f64, what: &str) {
    let (got, want) = (items(got), items(want));
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let (a, b) = (num(a), num(b));
        assert!(
            (a - b).abs() <= rel * (1.0 + b.abs()),
            "{what}[{i}]: {a} vs {b}"
        );
    }
}

/// Asserts that two samples' joints (`{"joint", "name", "world"}`, as `sample --json` and
/// the three.js references write them) are the same joints, by index and name, with `world`
/// matrices within `rel` (see [`assert_numbers_close`]).
pub fn assert_joints_close(got: &Value, want: &Value, rel: f64) {
    for (g, w) in items(got).iter().zip(items(want)) {
        assert_eq!(g["name"], w["name"]);
    }
    assert_worlds_close(got, want, rel);
}

/// [`assert_joints_close`] without comparing names (three.js's BVH loader names every end
/// site "ENDSITE"; skelett names them after their parent).
pub fn assert_worlds_close(got: &Value, want: &Value, rel: f64) {
    let (got, want) = (items(got), items(want));
    assert_eq!(got.len(), want.len(), "joint counts");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g["joint"], w["joint"]);
        assert_numbers_close(&g["world"], &w["world"], rel, &format!("{}", w["name"]));
    }
}

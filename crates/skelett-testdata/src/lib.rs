//! Where skelett's tests and benchmarks find their data: the real third-party assets and the
//! independent reference files in `../shared/data` beside the repository (never copied into
//! it). One definition for every crate's tests and benches; a dev-dependency only.
//!
//! ```
//! let fox = skelett_testdata::data("gltf/Fox.glb");
//! assert!(fox.ends_with("shared/data/gltf/Fox.glb"));
//! ```

use std::path::PathBuf;

/// `../shared/data` beside the repository.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// A file or folder under `../shared/data`, by its path relative to it.
pub fn data(rel: &str) -> PathBuf {
    data_dir().join(rel)
}

/// Runs the Khronos glTF validator (`.ci/validator`, which `.ci/run` installs) on `files`
/// and asserts that each has 0 errors; prints its report. Skipped with a message when it is
/// not installed, unless `SKELETT_REQUIRE_GLTF_VALIDATOR=1`, where that is a failure.
pub fn assert_valid_gltf<P: AsRef<std::path::Path>>(files: &[P]) {
    use std::process::Command;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/validator");
    let installed = dir.join("node_modules/gltf-validator").exists()
        && Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !installed {
        assert!(
            !std::env::var("SKELETT_REQUIRE_GLTF_VALIDATOR").is_ok_and(|v| v == "1"),
            "SKELETT_REQUIRE_GLTF_VALIDATOR=1 but the validator is not installed (npm install in .ci/validator)"
        );
        eprintln!("glTF validator not installed: skipped");
        return;
    }
    let out = Command::new("node")
        .arg(dir.join("validate.mjs"))
        .args(files.iter().map(AsRef::as_ref))
        .output()
        .expect("running node");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(
        out.status.success(),
        "the glTF validator found errors:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.lines().filter(|l| l.contains(": 0 errors")).count(),
        files.len(),
        "{text}"
    );
}

/// The scaffolding every criterion benchmark shares: the times it samples at and the
/// measurement settings, so that benches differ only in what they measure.
pub mod bench {
    use std::time::Duration;

    /// Criterion with `samples` samples of `seconds` each after half a second of warm-up
    /// (the machine is shared: medians over many short samples are what the notes quote).
    pub fn criterion(samples: usize, seconds: u64) -> criterion::Criterion {
        criterion::Criterion::default()
            .sample_size(samples)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(seconds))
    }

    /// Playback at `hz` frames per second over a clip from `start`, `duration` seconds long:
    /// every frame time, the last one clamped to the clip's end.
    ///
    /// ```
    /// let t = skelett_testdata::bench::forward_times(1.0, 0.6, 4.0);
    /// assert_eq!(t, [1.0, 1.25, 1.5, 1.6]);
    /// ```
    pub fn forward_times(start: f32, duration: f32, hz: f32) -> Vec<f32> {
        let frames = ((duration * hz).ceil() as usize).max(1);
        (0..=frames)
            .map(|i| start + (i as f32 / hz).min(duration))
            .collect()
    }

    /// `count` times spread pseudo-randomly over a clip (xorshift with a fixed seed: the same
    /// times in every run and every benchmark).
    pub fn random_times(start: f32, duration: f32, count: usize) -> Vec<f32> {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        (0..count)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                start + duration * ((s >> 40) as f32 / (1u64 << 24) as f32)
            })
            .collect()
    }
}

/// The synthetic morph target the skinned-and-morphed tests give CesiumMan's first
/// primitive (which has none): vertex `i` offset by
/// `((i·7 mod 11)/11 − ½, (i·13 mod 17)/17 − ½, (i·5 mod 7)/7 − ½) · 0.1`, as
/// `scripts/reference/three_morph_skin.mjs` builds it for three.js.
pub fn cesium_man_test_offset(i: usize) -> [f32; 3] {
    let f = |a: usize, m: usize| ((((i * a) % m) as f64 / m as f64 - 0.5) * 0.1) as f32;
    [f(7, 11), f(13, 17), f(5, 7)]
}

/// A file of the Maya in-between blend-shape reference kept in the repository
/// (`crates/skelett-io/tests/reference/maya_blend_inbetween/`, from ufbx's test data: no file
/// in `../shared/data` has in-betweens), e.g. `maya_blend_inbetween_30.obj`.
pub fn maya_inbetween(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../skelett-io/tests/reference/maya_blend_inbetween")
        .join(file)
}

/// The `v` lines of an OBJ file, as double-precision points.
pub fn obj_vertices(path: &std::path::Path) -> Vec<[f64; 3]> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix("v "))
        .map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .map(|x| {
                    x.parse()
                        .unwrap_or_else(|e| panic!("{}: {l:?}: {e}", path.display()))
                })
                .collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

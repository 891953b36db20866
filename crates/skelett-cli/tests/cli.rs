//! The `skelett` binary, run as a user runs it.

mod common;

use common::*;
use skelett_testdata::data;
use std::path::{Path, PathBuf};

use glam::{Mat4, Vec3};
use serde_json::Value;

#[test]
fn inspect_embedded_fox() {
    let (ok, out, err) = skelett(&["inspect"]);
    assert!(ok, "{err}");
    assert!(out.contains("24 joints"), "{out}");
    for clip in ["Survey", "Walk", "Run"] {
        assert!(out.contains(clip), "{out}");
    }
    assert!(out.contains("1728 vertices"), "{out}");
}

#[test]
fn inspect_json_agrees_with_the_library() {
    let path = data("gltf/robot_quaternius.glb");
    let (ok, out, err) = skelett(&["inspect", path.to_str().unwrap(), "--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let asset = skelett_io::load(&path).unwrap();
    assert_eq!(v["skeleton"]["joints"], asset.skeleton.len());
    assert_eq!(v["clips"].as_array().unwrap().len(), 14);
    assert_eq!(v["meshes"].as_array().unwrap().len(), asset.meshes.len());
    let hist = v["meshes"][0]["influences"].as_array().unwrap();
    let total: u64 = hist.iter().map(|x| x.as_u64().unwrap()).sum();
    assert_eq!(total, v["meshes"][0]["vertices"].as_u64().unwrap());
    // The tree lists parents before children.
    for j in v["skeleton"]["tree"].as_array().unwrap() {
        if let Some(p) = j["parent"].as_u64() {
            assert!(p < j["index"].as_u64().unwrap());
        }
    }
}

/// `skelett sample --json` reproduces the independent three.js reference (CUBICSPLINE asset).
#[test]
fn sample_json_matches_the_reference() {
    let reference = read_json(&data("reference/CesiumMan_cubic.glb.json"));
    let clip = &reference["clips"][0];
    // Every reference time, past the end included (where both hold the last key).
    let times: Vec<String> = items(&clip["samples"])
        .iter()
        .map(|s| num(&s["t"]).to_string())
        .collect();
    let path = data("gltf/CesiumMan_cubic.glb");
    let v = skelett_json(&[
        "sample",
        path.to_str().unwrap(),
        "--clip",
        "0",
        "--times",
        &times.join(","),
        "--json",
    ]);
    // The reference's own shape: clips[i] with index, name, start, end, samples.
    let got = &v["clips"][0];
    assert_eq!(v["clips"].as_array().unwrap().len(), 1);
    assert_eq!(got["index"], 0);
    for key in ["start", "end"] {
        assert!(
            (got[key].as_f64().unwrap() - clip[key].as_f64().unwrap()).abs() < 1e-4,
            "{key}"
        );
    }
    let samples = items(&got["samples"]);
    assert_eq!(samples.len(), times.len());
    for (got, want) in samples.iter().zip(items(&clip["samples"])) {
        assert!((num(&got["t"]) - num(&want["t"])).abs() < 1e-6);
        assert_joints_close(&got["joints"], &want["joints"], 1e-4);
    }
}

/// `skelett sample --vertices 256` picks the reference's vertices and reproduces three.js's
/// skinned positions for them.
#[test]
fn sample_vertices_match_the_skin_reference() {
    let reference = read_json(&data("reference/skin/Fox.glb.skin.json"));
    let times: Vec<String> = items(&reference["samples"])
        .iter()
        .map(|s| num(&s["t"]).to_string())
        .collect();
    let path = data("gltf/Fox.glb");
    let v = skelett_json(&[
        "sample",
        path.to_str().unwrap(),
        "--clip",
        "0",
        "--times",
        &times.join(","),
        "--vertices",
        "256",
        "--json",
    ]);
    assert_eq!(
        v["vertices"], reference["vertices"],
        "the same vertex choice"
    );
    let size = 150.0; // Fox is about 150 units tall
    assert_eq!(v["mesh"]["vertexCount"], reference["mesh"]["vertexCount"]);
    assert_eq!(v["clip"]["name"], reference["clip"]["name"]);
    for (got, want) in items(&v["samples"])
        .iter()
        .zip(items(&reference["samples"]))
    {
        let (got, want) = (items(&got["world"]), items(&want["world"]));
        assert_eq!(got.len(), 256);
        for (g, w) in got.iter().zip(want) {
            for axis in 0..3 {
                let (a, b) = (num(&g[axis]), num(&w[axis]));
                assert!((a - b).abs() < 1e-4 * size, "{a} vs {b}");
            }
        }
    }
    // Text output lists them too.
    let (ok, out, err) = skelett(&["sample", "--times", "0.5", "--vertices", "3"]);
    assert!(ok, "{err}");
    assert!(out.contains("[0]") && out.contains("[1727]"), "{out}");
    let (ok, _, err) = skelett(&["sample", "--times", "0", "--vertices", "5000"]);
    assert!(!ok && err.contains("1728 vertices"), "{err}");
}

/// `skelett sample --vertices 256` on a morph asset applies the clip's morph weights first and
/// reproduces three.js's morphed positions (`reference/morph`); `inspect` lists the channels
/// and the clips that animate them.
#[test]
fn sample_vertices_and_inspect_with_morph_targets() {
    let reference = read_json(&data("reference/morph/AnimatedMorphSphere.glb.morph.json"));
    let times: Vec<String> = items(&reference["samples"])
        .iter()
        .map(|s| num(&s["t"]).to_string())
        .collect();
    let path = data("morph/AnimatedMorphSphere.glb");
    let v = skelett_json(&[
        "sample",
        path.to_str().unwrap(),
        "--times",
        &times.join(","),
        "--vertices",
        "256",
        "--json",
    ]);
    assert_eq!(
        v["vertices"], reference["vertices"],
        "the same vertex choice"
    );
    let size = 1.0; // a unit sphere, scaled in its node
    for (got, want) in items(&v["samples"])
        .iter()
        .zip(items(&reference["samples"]))
    {
        for (g, w) in items(&got["weights"]).iter().zip(items(&want["weights"])) {
            assert!((num(g) - num(w)).abs() < 1e-6, "weights {g} vs {w}");
        }
        let (got, want) = (items(&got["world"]), items(&want["world"]));
        assert_eq!(got.len(), 256);
        for (g, w) in got.iter().zip(want) {
            for axis in 0..3 {
                let (a, b) = (num(&g[axis]), num(&w[axis]));
                assert!((a - b).abs() < 1e-5 * size, "{a} vs {b}");
            }
        }
    }
    let (ok, out, err) = skelett(&[
        "inspect",
        data("morph/MorphStressTest.glb").to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("morph channels: 8"), "{out}");
    assert!(
        out.contains("Cube/Key 8") && out.contains("animated by clip [0] [1] [2]"),
        "{out}"
    );
    assert!(out.contains("8 morph targets"), "{out}");
}

#[test]
fn sample_text_and_clip_by_name() {
    let (ok, out, err) = skelett(&["sample", "--clip", "Walk", "--times", "0,0.25"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\"Walk\"") && out.contains("t = 0.25") && out.contains("b_Head_05"),
        "{out}"
    );
    let (ok, _, err) = skelett(&["sample", "--clip", "Dance", "--times", "0"]);
    assert!(!ok);
    assert!(
        err.contains("no clip \"Dance\"") && err.contains("Survey"),
        "{err}"
    );
}

#[test]
fn bad_files_fail_with_the_file_named() {
    let dir = std::env::temp_dir().join(format!("skelett-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.glb");
    std::fs::write(&bad, b"glTF\x02\0\0\0\xff\xff\0\0").unwrap();
    let (ok, _, err) = skelett(&["inspect", bad.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("broken.glb") && err.contains("truncated"),
        "{err}"
    );
    let (ok, _, err) = skelett(&["inspect", dir.join("missing.glb").to_str().unwrap()]);
    assert!(!ok && err.contains("missing.glb"), "{err}");
    let (ok, _, err) = skelett(&["inspect", "model.xyz"]);
    assert!(!ok && err.contains("unknown format"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `bench --compress`: each keyed clip, then its compressed forms in every layout, each
/// with its time over the keyed clip's; the keyed rows carry no ratio.
#[test]
fn bench_compress_measures_every_layout_beside_the_keys() {
    let file = data("gltf/RiggedSimple.glb");
    let args = [
        "bench",
        file.to_str().unwrap(),
        "--compress",
        "--json",
        "--rounds",
        "3",
    ];
    let (ok, out, err) = skelett(&args);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["clips"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    let storages: Vec<&str> = rows
        .iter()
        .map(|r| r["storage"].as_str().unwrap())
        .collect();
    assert_eq!(
        storages,
        ["keys", "compact", "compact, seekable", "compact, lanes"]
    );
    assert!(rows[0].get("over_keys").is_none(), "{}", rows[0]);
    for r in &rows[1..] {
        assert_eq!(r["clip"], rows[0]["clip"]);
        let over = r["over_keys"].as_array().unwrap();
        for (i, field) in ["forward_ns_per_joint", "seek_ns_per_joint"]
            .iter()
            .enumerate()
        {
            let want = r[field].as_f64().unwrap() / rows[0][field].as_f64().unwrap();
            let got = over[i].as_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "{field}: {got} against {want}"
            );
        }
        assert!(
            r["bytes"].as_u64().unwrap() < rows[0]["bytes"].as_u64().unwrap(),
            "{r}"
        );
    }
    let (ok, out, err) = skelett(&[
        "bench",
        file.to_str().unwrap(),
        "--compress",
        "--rounds",
        "3",
    ]);
    assert!(ok && out.contains("x keys"), "{err}{out}");
    let (ok, _, err) = skelett(&["bench", "--compress", "--scaling"]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

#[test]
fn bench_reports_every_clip() {
    let (ok, out, err) = skelett(&["bench", "--json", "--rounds", "3"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let clips = v["clips"].as_array().unwrap();
    assert_eq!(clips.len(), 3);
    for c in clips {
        assert!(c["forward_ns_per_joint"].as_f64().unwrap() > 0.0);
        assert!(c["seek_ns_per_joint"].as_f64().unwrap() > 0.0);
        assert_eq!(c["storage"], "keys");
    }
    assert!(v["local_to_model_ns_per_joint"].as_f64().unwrap() > 0.0);
    assert_eq!(v["palette_matrices"], 24);
    for row in ["blend2_ns_per_joint", "blend3_ns_per_joint"] {
        assert!(v[row].as_f64().unwrap() > 0.0, "{row}");
    }
    let c = &v["character"];
    assert!(c["one_us"].as_f64().unwrap() > 0.0 && c["crowd_1024_us"].as_f64().unwrap() > 0.0);
    assert_eq!(c["clips"][0], "Survey");
    let a = &v["animator"];
    for row in [
        "one_us",
        "crowd_1024_us",
        "crowd_1024_prefetch_us",
        "crowd_1024_lean_palette_us",
    ] {
        assert!(a[row].as_f64().unwrap() > 0.0, "animator {row}");
    }
    let k = &v["skinning"];
    assert_eq!(k["vertices"], 1728);
    assert!(k["linear_ns_per_vertex"].as_f64().unwrap() > 0.0);
    assert!(k["dual_quaternion_ns_per_vertex"].as_f64().unwrap() > 0.0);
}

#[test]
fn help_credits_the_embedded_asset() {
    let (ok, out, _) = skelett(&["--help"]);
    assert!(ok);
    assert!(
        out.contains("CC BY 4.0") && out.contains("tomkranis"),
        "{out}"
    );
}

/// `skelett play` on the example script: events in order, deterministic output.
#[test]
fn play_runs_the_example_script_deterministically() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fox_walk_run.json");
    let script = script.to_str().unwrap();
    let (ok, out, err) = skelett(&["play", "--script", script, "--json"]);
    assert!(ok, "{err}");
    let (_, again, _) = skelett(&["play", "--script", script, "--json"]);
    assert_eq!(out, again, "same script, same bytes");
    let v: Value = serde_json::from_str(&out).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 240);
    let events: Vec<(f64, String, String)> = steps
        .iter()
        .flat_map(|s| {
            s["events"].as_array().unwrap().iter().map(move |e| {
                (
                    s["t"].as_f64().unwrap(),
                    e["name"].as_str().unwrap().to_string(),
                    e["clip"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    // Walk starts at 1 s; no footsteps during Survey.
    assert!(events.iter().all(|e| e.0 > 1.0), "{events:?}");
    assert!(
        events.iter().any(|e| e.2 == "Walk") && events.iter().any(|e| e.2 == "Run"),
        "{events:?}"
    );
    // Left and right alternate.
    for w in events.windows(2) {
        assert_ne!(w[0].1, w[1].1, "{events:?}");
    }
    let (ok, _, err) = skelett(&["play", "--script", script, "--dt", "0"]);
    assert!(!ok && err.contains("positive"), "{err}");
}

/// `skelett sample` and `inspect` work on BVH too; sample matches three.js's BVH reference.
#[test]
fn sample_and_inspect_a_bvh_capture() {
    let path = data("bvh/Boxing_Toes.bvh");
    let (ok, out, err) = skelett(&["inspect", path.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("26 joints") && out.contains("Hips"), "{out}");
    let v = skelett_json(&[
        "sample",
        path.to_str().unwrap(),
        "--times",
        "11.3516",
        "--json",
    ]);
    let reference = read_json(&data("reference/Boxing_Toes.bvh.json"));
    let want = &reference["clips"][0]["samples"][1];
    assert_eq!(num(&want["t"]), 11.3516);
    let got = &v["clips"][0]["samples"][0];
    assert_worlds_close(&got["joints"], &want["joints"], 1e-3);
}

/// `skelett convert`: a BVH capture to a .glb that loads back with the same skeleton and
/// clip, scaled; a folder with a summary of what was converted, skipped and failed.
#[test]
fn convert_files_and_folders() {
    let dir = std::env::temp_dir().join(format!("skelett-convert-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("in/sub")).unwrap();
    let bvh = data("bvh/Boxing_Toes.bvh");
    let out = dir.join("boxing.glb");
    let (ok, text, err) = skelett(&[
        "convert",
        bvh.to_str().unwrap(),
        out.to_str().unwrap(),
        "--scale",
        "0.01",
    ]);
    assert!(ok, "{err}");
    assert!(text.contains("26 joints"), "{text}");
    let a = skelett_io::load(&bvh).unwrap();
    let b = skelett_io::load(&out).unwrap();
    assert_eq!(a.skeleton.names(), b.skeleton.names());
    let (ra, rb) = (
        a.skeleton.rest_pose()[1].translation,
        b.skeleton.rest_pose()[1].translation,
    );
    assert!((ra * 0.01 - rb).length() < 1e-6, "{ra} {rb}");
    assert_eq!(a.clips[0].duration(), b.clips[0].duration());

    std::fs::copy(data("gltf/Fox.glb"), dir.join("in/sub/Fox.glb")).unwrap();
    std::fs::copy(&bvh, dir.join("in/capture.bvh")).unwrap();
    std::fs::write(dir.join("in/notes.txt"), "not animation").unwrap();
    std::fs::write(dir.join("in/broken.bvh"), "HIERARCHY\nROOT").unwrap();
    let (ok, text, _) = skelett(&[
        "convert",
        dir.join("in").to_str().unwrap(),
        dir.join("out").to_str().unwrap(),
        "--to",
        "glb",
    ]);
    assert!(!ok, "a failed file makes the run fail");
    assert!(
        text.contains("converted 2 of 4 files, skipped 1") && text.contains("failed 1"),
        "{text}"
    );
    assert!(
        text.contains("broken.bvh") && text.contains("line 2"),
        "{text}"
    );
    assert!(
        skelett_io::load(dir.join("out/sub/Fox.glb"))
            .unwrap()
            .clips
            .len()
            == 3
    );
    assert!(dir.join("out/capture.glb").exists());
    let (ok, _, err) = skelett(&[
        "convert",
        bvh.to_str().unwrap(),
        dir.join("x.fbx").to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("cannot write .fbx"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `skelett compress --seekable` writes the seekable layout (same errors, larger), `--lanes`
/// the lanes layout (within the budget as measured in it, larger still), `--fast` skips the
/// loosening (within the budget, never smaller), and `skelett bench` on a compressed file
/// measures every layout, with their sizes.
#[test]
fn compress_seekable_and_bench_both_layouts() {
    let dir = std::env::temp_dir().join(format!("skelett-seekable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fox = data("gltf/Fox.glb");
    let (stream, seek) = (dir.join("stream.skl"), dir.join("seek.skl"));
    let (fast, lanes) = (dir.join("fast.skl"), dir.join("lanes.skl"));
    let mut reports = Vec::new();
    for (out, extra) in [
        (&stream, None),
        (&seek, Some("--seekable")),
        (&fast, Some("--fast")),
        (&lanes, Some("--lanes")),
    ] {
        let mut args = vec![
            "compress",
            fox.to_str().unwrap(),
            out.to_str().unwrap(),
            "--json",
        ];
        args.extend(extra);
        let (ok, text, err) = skelett(&args);
        assert!(ok, "{err}");
        reports.push(serde_json::from_str::<Value>(&text).unwrap());
    }
    let sizes: Vec<u64> = reports
        .iter()
        .map(|r| {
            r["compressed_bytes"]
                .as_u64()
                .unwrap_or_else(|| panic!("{r}"))
        })
        .collect();
    assert!(sizes[0] < sizes[1] && sizes[1] < 2 * sizes[0], "{sizes:?}");
    assert_eq!(reports[0]["max_error_cm"], reports[1]["max_error_cm"]);
    assert!(sizes[0] <= sizes[2], "{sizes:?}");
    let said = |r: &Value| (r["level"].clone(), r["layout"].clone());
    assert_eq!(said(&reports[0]), ("smallest".into(), "stream".into()));
    assert_eq!(said(&reports[1]), ("smallest".into(), "seek".into()));
    assert_eq!(said(&reports[2]), ("fast".into(), "stream".into()));
    assert_eq!(said(&reports[3]), ("smallest".into(), "lanes".into()));
    assert!(sizes[1] < sizes[3], "{sizes:?}");
    assert!(
        reports[3]["max_error_cm"].as_f64().unwrap() <= 0.01,
        "{}",
        reports[3]
    );
    let (ok, out, err) = skelett(&["inspect", lanes.to_str().unwrap()]);
    assert!(ok && out.contains("lanes layout"), "{err}{out}");
    let (ok, _, err) = skelett(&[
        "compress",
        "--seekable",
        "--lanes",
        fox.to_str().unwrap(),
        "x.skl",
    ]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    assert!(
        reports[2]["max_error_cm"].as_f64().unwrap() <= 0.01,
        "{}",
        reports[2]
    );
    let (ok, out, err) = skelett(&["inspect", seek.to_str().unwrap()]);
    assert!(ok && out.contains("seekable layout"), "{err}{out}");
    let (ok, out, err) = skelett(&["inspect", stream.to_str().unwrap(), "--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["clips"][0]["compact_layout"], "stream", "{v}");
    let (ok, out, err) = skelett(&["bench", seek.to_str().unwrap(), "--json", "--rounds", "3"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["clips"].as_array().unwrap();
    // Each of the three clips in its own layout, then converted to the others.
    assert_eq!(rows.len(), 9, "{rows:?}");
    for three in rows.chunks(3) {
        assert_eq!(three[0]["storage"], "compact, seekable");
        assert_eq!(three[1]["storage"], "compact");
        assert_eq!(three[2]["storage"], "compact, lanes");
        assert!(three.iter().all(|r| r["clip"] == three[0]["clip"]));
        let bytes = |i: usize| three[i]["bytes"].as_u64().unwrap();
        assert!(bytes(1) < bytes(0) && bytes(0) < bytes(2), "{three:?}");
        assert!(three[0]["seek_ns_per_joint"].as_f64().unwrap() > 0.0);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `.skl` from the CLI: converted, inspected and sampled like any other format.
#[test]
fn convert_to_skl_and_use_it() {
    let dir = std::env::temp_dir().join(format!("skelett-skl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let skl = dir.join("fox.skl");
    let (ok, _, err) = skelett(&[
        "convert",
        data("gltf/Fox.glb").to_str().unwrap(),
        skl.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let (ok, out, err) = skelett(&["inspect", skl.to_str().unwrap()]);
    assert!(
        ok && out.contains("24 joints") && out.contains("Survey"),
        "{err}{out}"
    );
    let (ok, a, _) = skelett(&[
        "sample",
        skl.to_str().unwrap(),
        "--clip",
        "Run",
        "--times",
        "0.3",
        "--json",
    ]);
    let (ok2, b, _) = skelett(&[
        "sample",
        data("gltf/Fox.glb").to_str().unwrap(),
        "--clip",
        "Run",
        "--times",
        "0.3",
        "--json",
    ]);
    assert!(ok && ok2);
    let strip = |s: &str| serde_json::from_str::<Value>(s).unwrap()["clips"].clone();
    assert_eq!(
        strip(&a),
        strip(&b),
        "the .skl samples exactly like the glb"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The README's script example runs as documented (extracted from the README itself).
#[test]
fn the_readme_play_script_runs() {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let start = readme.find("### `skelett play` scripts").unwrap();
    let block = &readme[start..];
    let json_start = block.find("```json\n").unwrap() + 8;
    let json_end = json_start + block[json_start..].find("```").unwrap();
    let script = &block[json_start..json_end];
    let path = std::env::temp_dir().join(format!("skelett-readme-{}.json", std::process::id()));
    std::fs::write(&path, script).unwrap();
    let (ok, out, err) = skelett(&["play", "--script", path.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.starts_with("Fox.glb (embedded): 270 steps"), "{out}");
    // The README shows these lines of the output; they must stay true.
    for line in ["t=0.0167  root: [0.00000, 0.00000, 0.00000] yaw 0.00000", "t=1.8167  events: left_foot (Walk @ 0.1000)  root: [0.00000, 0.00000, 0.00000] yaw 0.00000"] {
        assert!(out.lines().any(|l| l == line), "{line:?} missing from:\n{out}");
        assert!(readme.contains(line), "the README should show {line:?}");
    }
    let (ok, out, _) = skelett(&["play", "--script", path.to_str().unwrap(), "--json"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["steps"].as_array().unwrap().len(), 270);
    std::fs::remove_file(&path).ok();
}

/// Whether a GPU adapter is available to the renderer; `SKELETT_REQUIRE_GPU=1` (CI) makes
/// its absence a failure instead of a skip.
fn have_gpu() -> bool {
    match skelett_render::Gpu::new() {
        Ok(_) => true,
        Err(e) if std::env::var("SKELETT_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("SKELETT_REQUIRE_GPU=1 but {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            false
        }
    }
}

/// The README's main command: a GIF and the footstep events, on a clean machine.
#[test]
fn demo_writes_a_gif_and_prints_footsteps() {
    if !have_gpu() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("demo");
    std::fs::create_dir_all(&dir).unwrap();
    let gif = dir.join("demo.gif");
    let _ = std::fs::remove_file(&gif);
    let (ok, out, err) = skelett(&[
        "demo",
        "--out",
        gif.to_str().unwrap(),
        "--size",
        "200x150",
        "--fps",
        "8",
    ]);
    assert!(ok, "{err}");
    let bytes = std::fs::read(&gif).unwrap();
    assert_eq!(&bytes[..6], b"GIF89a");
    assert!(bytes.len() > 20_000, "{} bytes", bytes.len());
    // Footsteps fire for both feet, in Walk and in Run, each as it happens.
    let steps: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("event footstep"))
        .collect();
    for (foot, clip) in [
        ("left", "Walk"),
        ("right", "Walk"),
        ("left", "Run"),
        ("right", "Run"),
    ] {
        assert!(
            steps
                .iter()
                .any(|l| l.contains(foot) && l.contains(&format!("in {clip} "))),
            "{foot} in {clip}: {out}"
        );
    }
    // Printed in time order.
    let times: Vec<f32> = steps
        .iter()
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(out.contains("per frame: animation"), "{out}");
}

#[test]
fn render_writes_png_and_gif_and_rejects_bad_arguments() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("render");
    std::fs::create_dir_all(&dir).unwrap();
    let (ok, _, err) = skelett(&["render", "--clip", "Jump", "--out", "x.png"]);
    assert!(
        !ok && err.contains("no clip \"Jump\"") && err.contains("Survey"),
        "{err}"
    );
    let (ok, _, err) = skelett(&["render", "--size", "10", "--out", "x.png"]);
    assert!(!ok && err.contains("WIDTHxHEIGHT"), "{err}");
    if !have_gpu() {
        return;
    }
    let (ok, _, err) = skelett(&["render", "--out", dir.join("x.bmp").to_str().unwrap()]);
    assert!(!ok && err.contains(".gif or .png"), "{err}");
    let png = dir.join("walk.png");
    let path = data("gltf/CesiumMan.glb");
    let (ok, out, err) = skelett(&[
        "render",
        path.to_str().unwrap(),
        "--skeleton",
        "--wireframe",
        "--size",
        "160x120",
        "--seconds",
        "0.5",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("1 frame"), "{out}");
    assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    let gif = dir.join("walk_run.gif");
    let (ok, out, err) = skelett(&[
        "render",
        "--clip",
        "Walk",
        "--to",
        "Run",
        "--crossfade",
        "0.3",
        "--size",
        "120x90",
        "--fps",
        "10",
        "--out",
        gif.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("frames"), "{out}");
    assert_eq!(&std::fs::read(&gif).unwrap()[..6], b"GIF89a");

    // A play script with IK: the robot's feet on a slope, seen from the side.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/robot_feet.json");
    let robot = data("gltf/robot_quaternius.glb");
    let png = dir.join("robot_feet.png");
    let (ok, out, err) = skelett(&[
        "render",
        robot.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--yaw",
        "90",
        "--pitch",
        "0",
        "--size",
        "160x120",
        "--seconds",
        "0.6",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("robot_feet.json") && out.contains("1 frame"),
        "{out}"
    );
    assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    let (ok, _, err) = skelett(&[
        "render",
        "--script",
        script.to_str().unwrap(),
        "--clip",
        "Walk",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("--clip"), "{err}");
}

/// FBX works like every other format: inspect, sample, convert to glb and read it back.
#[test]
fn fbx_inspect_sample_and_convert() {
    let fbx = data("fbx/ozz_pab_locomotions.fbx");
    let (ok, out, err) = skelett(&["inspect", fbx.to_str().unwrap()]);
    assert!(ok, "{err}");
    for clip in ["jog", "run", "walk"] {
        assert!(out.contains(clip), "{out}");
    }
    let (ok, out, err) = skelett(&[
        "sample",
        fbx.to_str().unwrap(),
        "--clip",
        "walk",
        "--times",
        "0.5",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(first_sample_joints(&v).len() > 60);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fbx");
    std::fs::create_dir_all(&dir).unwrap();
    let glb = dir.join("locomotions.glb");
    let (ok, _, err) = skelett(&["convert", fbx.to_str().unwrap(), glb.to_str().unwrap()]);
    assert!(ok, "{err}");
    let a = skelett_io::load(&fbx).unwrap();
    let b = skelett_io::load(&glb).unwrap();
    assert_eq!(a.clips.len(), b.clips.len());
    assert_eq!(a.skeleton.len(), b.skeleton.len());
}

/// The global load flags reach every command: FBX in metres and Y-up (the ozz rig is a 3ds
/// Max file in centimetres, Z up), and .x mirrored to right-handed.
#[test]
fn load_flags_convert_units_axes_and_handedness() {
    let fbx = data("fbx/ozz_pab_locomotions.fbx");
    let sample = |extra: &[&str]| -> Vec<(String, glam::Vec3)> {
        let mut args = vec![
            "sample",
            fbx.to_str().unwrap(),
            "--clip",
            "walk",
            "--times",
            "0.5",
            "--json",
        ];
        args.extend_from_slice(extra);
        first_sample_joints(&skelett_json(&args))
            .iter()
            .map(|j| (j["name"].as_str().unwrap().to_string(), position(j)))
            .collect()
    };
    let own = sample(&[]);
    let converted = sample(&["--to-meters", "--y-up"]);
    let find = |joints: &[(String, glam::Vec3)], name: &str| {
        joints
            .iter()
            .find(|j| j.0 == name)
            .unwrap_or_else(|| panic!("no joint {name}"))
            .1
    };
    let (head, foot) = ("Head", "LeftFoot");
    let own_height = (find(&own, head) - find(&own, foot)).length();
    let m_height = (find(&converted, head) - find(&converted, foot)).length();
    // Centimetres to metres.
    assert!(
        (m_height / own_height - 0.01).abs() < 1e-4,
        "{own_height} cm -> {m_height} m"
    );
    // Y up: the head is above the foot along Y, by most of the distance between them.
    let up = find(&converted, head) - find(&converted, foot);
    assert!(up.y > 0.8 * up.length(), "head - foot = {up} with --y-up");

    // Every file of the data set is Y-up already: a Z-up copy of the Maya file (its
    // GlobalSettings say up +Z, front -Y) must come out rotated, (x, y, z) -> (x, z, -y).
    let maya = std::fs::read_to_string(data("fbx/maya_game_sausage_7500_ascii_wiggle.fbx"))
        .unwrap()
        .replace(
            "\"UpAxis\", \"int\", \"Integer\", \"\",1",
            "\"UpAxis\", \"int\", \"Integer\", \"\",2",
        )
        .replace(
            "\"FrontAxis\", \"int\", \"Integer\", \"\",2",
            "\"FrontAxis\", \"int\", \"Integer\", \"\",1",
        )
        .replace(
            "\"FrontAxisSign\", \"int\", \"Integer\", \"\",1",
            "\"FrontAxisSign\", \"int\", \"Integer\", \"\",-1",
        );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("zup");
    std::fs::create_dir_all(&dir).unwrap();
    let zup = dir.join("sausage_zup.fbx");
    std::fs::write(&zup, maya).unwrap();
    let sample_file = |file: &Path, extra: &[&str]| -> Vec<glam::Vec3> {
        let mut args = vec!["sample", file.to_str().unwrap(), "--times", "0.3", "--json"];
        args.extend_from_slice(extra);
        first_sample_joints(&skelett_json(&args))
            .iter()
            .map(position)
            .collect()
    };
    let z_own = sample_file(&zup, &[]);
    let y_up = sample_file(&zup, &["--y-up"]);
    assert!(z_own.iter().any(|p| p.y.abs() > 0.5), "{z_own:?}");
    for (a, b) in z_own.iter().zip(&y_up) {
        let want = glam::Vec3::new(a.x, a.z, -a.y);
        assert!(
            (*b - want).length() < 1e-4 * (1.0 + a.length()),
            "{a} -> {b}, want {want}"
        );
    }

    // DirectX .x: --right-handed mirrors Z, for sample as for convert.
    let x = data("x/BCN_Epileptic.X");
    let z = |extra: &[&str]| -> Vec<f64> {
        let mut args = vec!["sample", x.to_str().unwrap(), "--times", "0.2", "--json"];
        args.extend_from_slice(extra);
        first_sample_joints(&skelett_json(&args))
            .iter()
            .map(|j| num(&j["world"][14]))
            .collect()
    };
    let (left, right) = (z(&[]), z(&["--right-handed"]));
    assert!(left.iter().any(|v| v.abs() > 1e-3));
    for (a, b) in left.iter().zip(&right) {
        assert!(
            (a + b).abs() <= 1e-4 * (1.0 + a.abs()),
            "z {a} mirrored is {b}"
        );
    }
}

/// `skelett compress`: a file (the issue's CMU setting), its .skl read back and sampled, a
/// folder as JSON with a corpus summary, and bad arguments.
#[test]
fn compress_files_and_folders() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compress");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bvh = data("bvh/01_01.bvh");
    let skl = dir.join("01_01.skl");
    let (ok, out, err) = skelett(&[
        "compress",
        bvh.to_str().unwrap(),
        skl.to_str().unwrap(),
        "--cm-per-unit",
        "6.822",
        "--error",
        "0.01cm",
        "--rate",
        "24",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("6.822 cm per unit (given)"), "{out}");
    // The clip line: rate 24, ratio above ACL's 11.1:1, error within 0.01 cm.
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("01_01"))
        .unwrap();
    let ratio: f64 = line
        .split_whitespace()
        .find(|w| w.ends_with(":1"))
        .unwrap()
        .trim_end_matches(":1")
        .parse()
        .unwrap();
    assert!(ratio > 11.1, "{line}");
    let max: f64 = line
        .split(" cm")
        .next()
        .unwrap()
        .split_whitespace()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    assert!(max <= 0.01, "{line}");
    let asset = skelett_io::load(&skl).unwrap();
    assert!(asset.clips[0].is_compact());
    assert_eq!(asset.clips[0].compact_grid().unwrap().0, 24.0);
    let (ok, out, err) = skelett(&["sample", skl.to_str().unwrap(), "--times", "1.5", "--json"]);
    assert!(ok && out.contains("\"world\""), "{err}");

    // A folder: every file, JSON, totals.
    let src = dir.join("in");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::copy(data("gltf/RiggedFigure.glb"), src.join("RiggedFigure.glb")).unwrap();
    std::fs::copy(data("gltf/Fox.glb"), src.join("sub/Fox.glb")).unwrap();
    std::fs::write(src.join("notes.txt"), "not an animation").unwrap();
    let (ok, out, err) = skelett(&[
        "compress",
        src.to_str().unwrap(),
        dir.join("out").to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["total"]["files"], 2, "{v:#}");
    assert_eq!(v["total"]["clips"], 4, "{v:#}");
    assert!(v["total"]["max_error_cm"].as_f64().unwrap() <= 0.01);
    assert!(v["total"]["ratio"].as_f64().unwrap() > 5.0);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
    assert!(dir.join("out/sub/Fox.skl").exists());
    // Fox declares metres but is modelled in centimetres: the height decides, and says why.
    let fox = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["source"].as_str().unwrap().ends_with("Fox.glb"))
        .unwrap();
    assert!(
        fox["units"].as_str().unwrap().contains("would make it"),
        "{fox:#}"
    );

    // Bad arguments: clear errors. Negative lengths reach the length parser (not clap's
    // "unexpected argument '-0'"), which says what is needed.
    let (b, o) = (bvh.to_str().unwrap(), skl.to_str().unwrap());
    for (args, says) in [
        (
            vec!["compress", b, o, "--error", "-1"],
            "a positive length is needed",
        ),
        (
            vec!["compress", b, o, "--error", "-0.01"],
            "a positive length is needed",
        ),
        (
            vec!["compress", b, o, "--shell", "-3"],
            "a positive length is needed",
        ),
        (
            vec!["compress", b, o, "--error", "abc"],
            "a length in centimetres",
        ),
        (vec!["compress", b, o, "--clip", "nope"], "nope"),
        (vec!["compress", "missing.bvh", o], "missing.bvh"),
    ] {
        let (ok, _, err) = skelett(&args);
        assert!(!ok && err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `skelett compress` on morph assets holds its budget where users see the vertices: the
/// Khronos AnimatedMorphSphere and AnimatedMorphCube bind ±0.01 m meshes to a node scaled by
/// 100, so a weight error moves scene-space vertices 100 times as far as bind-space offsets
/// suggest. Compressed at 0.01 cm, every vertex (`sample --vertices` over all of them, scene
/// space) at 300 times stays within 0.01 cm of the original's; the report's compressed
/// size is what the written clip holds (weights included), below the raw size.
#[test]
fn compress_morph_weights_within_the_budget_in_scene_space() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compress_morph");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["AnimatedMorphSphere", "AnimatedMorphCube"] {
        let src = data(&format!("morph/{name}.glb"));
        let out = dir.join(format!("{name}.skl"));
        let report = skelett_json(&[
            "compress",
            src.to_str().unwrap(),
            out.to_str().unwrap(),
            "--error",
            "0.01",
            "--json",
        ]);
        let clip = &report["clips"][0];
        let (raw, packed) = (num(&clip["raw_bytes"]), num(&clip["compressed_bytes"]));
        assert!(packed < raw, "{name}: {packed} bytes for {raw} raw");
        let info = skelett_json(&["inspect", out.to_str().unwrap(), "--json"]);
        assert_eq!(num(&info["clips"][0]["bytes"]), packed, "{name}");
        let vertices = num(&info["meshes"][0]["vertices"]).to_string();
        let (start, duration) = (
            num(&info["clips"][0]["start"]),
            num(&info["clips"][0]["duration"]),
        );
        let times: Vec<String> = (0..300)
            .map(|i| (start + duration * i as f64 / 299.0).to_string())
            .collect();
        let times = times.join(",");
        let sample = |f: &Path| {
            skelett_json(&[
                "sample",
                f.to_str().unwrap(),
                "--times",
                &times,
                "--vertices",
                &vertices,
                "--json",
            ])
        };
        let (a, b) = (sample(&src), sample(&out));
        let mut worst = 0.0f64;
        for (sa, sb) in items(&a["samples"]).iter().zip(items(&b["samples"])) {
            for (p, q) in items(&sa["world"]).iter().zip(items(&sb["world"])) {
                let d: f64 = (0..3)
                    .map(|k| (num(&p[k]) - num(&q[k])).powi(2))
                    .sum::<f64>()
                    .sqrt();
                worst = worst.max(d * 100.0); // metres to cm
            }
        }
        eprintln!("{name}: worst vertex {worst:.5} cm at 0.01 cm");
        assert!(worst <= 0.01 * 1.001, "{name}: a vertex moved {worst} cm");
    }
}

/// `skelett play` with IK commands (`scripts/kaykit_ik.json` on KayKit's rig, the modifiers
/// turned on feet first, then the aim, then the hand): on a 15 degree side slope both ankles
/// end up the same height above the ground along its normal (before, 10.5 cm apart: the
/// uphill one sank into the slope); the head aims at its point; the left wrist meets its
/// target with all three on, and leaves it when the two-bone modifier fades out.
#[test]
fn play_script_ik_commands_bend_the_pose() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kaykit_ik.json");
    let file = data("gltf/KayKit_Rig_Medium_General.glb");
    let v = skelett_json(&[
        "play",
        file.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--joints",
        "--json",
        "--dt",
        "1/20",
    ]);
    let steps = items(&v["steps"]);
    let at = |t: f64, name: &str| -> Mat4 {
        let s = steps
            .iter()
            .find(|s| (num(&s["t"]) - t).abs() < 1e-6)
            .unwrap_or_else(|| panic!("no step at {t}"));
        let j = items(&s["joints"])
            .iter()
            .find(|j| j["name"] == name)
            .unwrap_or_else(|| panic!("no joint {name}"));
        let w: Vec<f32> = items(&j["world"]).iter().map(|x| num(x) as f32).collect();
        Mat4::from_cols_slice(&w)
    };
    let p = |t: f64, name: &str| at(t, name).w_axis.truncate();
    // Feet on the side slope, from 0.5 s.
    let n = Vec3::new(-0.2588, 0.9659, 0.0).normalize();
    let height = |t: f64, foot: &str| p(t, foot).dot(n);
    let before = height(0.45, "foot.l") - height(0.45, "foot.r");
    assert!(before.abs() > 0.05, "the slope matters: {before}");
    for t in [0.6, 1.2, 1.6, 2.0, 2.4] {
        let diff = height(t, "foot.l") - height(t, "foot.r");
        assert!(
            diff.abs() < 0.005,
            "t {t}: ankles {diff} apart along the normal"
        );
        assert!(
            height(t, "foot.l") > 0.05,
            "t {t}: the left ankle above the ground"
        );
    }
    // The aim, from 1.0 s: the head's +Z passes through the point.
    let look = Vec3::new(1.0, 1.3, 1.0);
    for t in [1.2, 1.4, 2.0] {
        let h = at(t, "head");
        let (o, f) = (h.w_axis.truncate(), h.z_axis.truncate().normalize());
        let miss = (look - o).cross(f).length();
        assert!(
            miss < 1e-3 && (look - o).dot(f) > 0.0,
            "t {t}: the head misses by {miss}"
        );
    }
    // The hand, from 1.5 s, on top of the other two.
    let target = Vec3::new(0.45, 1.0, 0.35);
    let arm = p(1.45, "upperarm.l").distance(p(1.45, "lowerarm.l"))
        + p(1.45, "lowerarm.l").distance(p(1.45, "wrist.l"));
    assert!(
        p(1.45, "wrist.l").distance(target) > 0.2,
        "the idle's wrist is elsewhere"
    );
    for t in [1.6, 2.0, 2.4] {
        let d = p(t, "wrist.l").distance(target);
        assert!(d <= 1e-3 * arm, "t {t}: wrist {d} from its target");
    }
    // The elbow bends toward the pole (-Z) off the shoulder-to-target line.
    let (s, e) = (p(2.0, "upperarm.l"), p(2.0, "lowerarm.l"));
    let line = (target - s).normalize();
    let off = (e - s) - line * (e - s).dot(line);
    assert!(off.z < 0.0, "elbow off the line by {off:?}");
    // Faded out by 2.75: the wrist is back where the idle (with the aim and the feet) puts it.
    assert!(p(2.8, "wrist.l").distance(target) > 0.2);
    // A missing joint is a clear error naming it.
    let bad = std::env::temp_dir().join("skelett_bad_ik.json");
    std::fs::write(
        &bad,
        r#"{"commands": [{"at": 0, "ik": {"two_bone": {"joints": ["a", "b", "c"], "target": [0, 0, 0]}}}]}"#,
    )
    .unwrap();
    let (ok, _, err) = skelett(&[
        "play",
        file.to_str().unwrap(),
        "--script",
        bad.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("\"a\""), "{err}");
    // Other bad requests: clear errors naming what is wrong, never a silent no-op.
    let legs = r#"[["upperleg.l", "lowerleg.l", "foot.l"]]"#;
    for (ik, expect) in [
        (
            r#"{"two_bone": {"joints": ["upperarm.l", "lowerarm.l", "wrist.l"], "target": [1e39, 0, 0]}}"#,
            "commands[0].ik.two_bone.target[0]: 1e39 is outside the range",
        ),
        (
            r#"{"two_bone": {"joints": ["upperarm.l", "lowerarm.l", "wrist.l"], "target": [0, 1, 0], "weight": 2}}"#,
            "outside 0..1",
        ),
        (
            r#"{"two_bone": {"joints": ["upperarm.l", "wrist.l", "lowerarm.l"], "target": [0, 1, 0]}}"#,
            "two_bone [\"upperarm.l\", \"wrist.l\", \"lowerarm.l\"]",
        ),
        (
            r#"{"aim": {"joints": ["chest", "head"], "weights": [1, 1, 1], "target": [0, 1, 1]}}"#,
            "3 weights for 2 joints",
        ),
        (
            &format!(r#"{{"feet": {{"legs": {legs}, "ground": {{"slope": 95}}}}}}"#),
            "between -90 and 90",
        ),
        (
            &format!(
                r#"{{"feet": {{"legs": {legs}, "ground": {{"stairs": {{"steps": 0, "rise": 0.1, "depth": 0.3}}}}}}}}"#
            ),
            "1 to 10000 steps",
        ),
        (
            r#"{"feet": {"legs": [["foot.l", "lowerleg.l", "upperleg.l"]], "ground": {"slope": 5}}}"#,
            "leg [\"foot.l\", \"lowerleg.l\", \"upperleg.l\"]",
        ),
    ] {
        std::fs::write(
            &bad,
            format!(r#"{{"commands": [{{"at": 0, "ik": {ik}}}]}}"#),
        )
        .unwrap();
        let (ok, _, err) = skelett(&[
            "play",
            file.to_str().unwrap(),
            "--script",
            bad.to_str().unwrap(),
        ]);
        assert!(!ok && err.contains(expect), "{ik}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `skelett retarget`: a CMU capture onto robot_quaternius with planted feet, written as
/// .glb: the file passes the Khronos validator and loads back with the poses the library's
/// bake gives (same map, same options); the printed map, passed back with `--map`, gives the
/// same file; a map naming a joint the target lacks is an error naming it.
#[test]
fn retarget_a_capture_onto_a_character() {
    use skelett::retarget::{BakeOptions, JointMap, Options, Retargeter};
    let dir = std::env::temp_dir().join(format!("skelett-retarget-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (bvh, robot) = (data("bvh/01_01.bvh"), data("gltf/robot_quaternius.glb"));
    let (bvh_s, robot_s) = (bvh.to_str().unwrap(), robot.to_str().unwrap());
    let out = dir.join("robot_01_01.glb");
    let (ok, text, err) = skelett(&[
        "retarget",
        bvh_s,
        robot_s,
        out.to_str().unwrap(),
        "--plant-feet",
    ]);
    assert!(ok, "{err}");
    assert!(
        text.contains("Hips") && text.contains("-> Body") && text.contains("foot contacts"),
        "{text}"
    );
    assert!(text.contains("wrote"), "{text}");
    skelett_testdata::assert_valid_gltf(&[&out]);

    // Loads back: the robot's skeleton and meshes, the capture's clip under its own name,
    // with the poses of the library's bake.
    let written = skelett_io::load(&out).unwrap();
    let src = skelett_io::load(&bvh).unwrap();
    let dst = skelett_io::load(&robot).unwrap();
    assert_eq!(written.skeleton.names(), dst.skeleton.names());
    assert_eq!(written.meshes.len(), dst.meshes.len());
    assert_eq!(written.clips.len(), 1);
    assert_eq!(written.clips[0].name(), src.clips[0].name());
    let map = JointMap::auto(&src.skeleton, &dst.skeleton).unwrap();
    let r = Retargeter::new(&src.skeleton, &dst.skeleton, &map, &Options::default()).unwrap();
    let baked = r
        .bake(
            &src.clips[0],
            &src.skeleton,
            &dst.skeleton,
            &BakeOptions {
                plant_feet: true,
                ..Default::default()
            },
        )
        .unwrap();
    let world = |sk: &skelett::Skeleton, clip: &skelett::Clip, t: f32| {
        let mut pose = skelett::Pose::rest(sk);
        skelett::sample_uncached(clip, t, &mut pose).unwrap();
        let mut m = vec![Mat4::IDENTITY; sk.len()];
        skelett::local_to_model(sk, &pose, 0, &mut m).unwrap();
        m
    };
    for i in 0..=20 {
        let t = baked.start() + baked.duration() * i as f32 / 20.0;
        let (a, b) = (
            world(&written.skeleton, &written.clips[0], t),
            world(&dst.skeleton, &baked, t),
        );
        for (j, (a, b)) in a.iter().zip(&b).enumerate() {
            let d = (a.w_axis - b.w_axis).truncate().length();
            assert!(d < 1e-4, "t={t} joint {j}: {d}");
        }
    }

    // The printed map, edited by nobody and passed back, gives the same poses.
    let (ok, map_json, err) = skelett(&["retarget", bvh_s, robot_s, "--print-map"]);
    assert!(ok, "{err}");
    let map_file = dir.join("map.json");
    std::fs::write(&map_file, &map_json).unwrap();
    let again = dir.join("again.glb");
    let (ok, _, err) = skelett(&[
        "retarget",
        bvh_s,
        robot_s,
        again.to_str().unwrap(),
        "--plant-feet",
        "--map",
        map_file.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let again = skelett_io::load(&again).unwrap();
    let t = 5.0;
    let (a, b) = (
        world(&again.skeleton, &again.clips[0], t),
        world(&written.skeleton, &written.clips[0], t),
    );
    assert!(a.iter().zip(&b).all(|(a, b)| a.abs_diff_eq(*b, 1e-5)));

    // A map naming a joint the robot lacks.
    let bad = map_json.replace("\"Body\"", "\"Pelvis_That_Is_Not_There\"");
    std::fs::write(&map_file, bad).unwrap();
    let (ok, _, err) = skelett(&[
        "retarget",
        bvh_s,
        robot_s,
        dir.join("bad.glb").to_str().unwrap(),
        "--map",
        map_file.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("Pelvis_That_Is_Not_There"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// The Fox graph driven by parameters does what `scripts/fox_walk_run.json` does with
/// direct animator calls: the same joints, bit for bit, and the same clip events.
#[test]
fn a_graph_reproduces_the_hand_written_animator_calls() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fox_walk_run.json");
    let direct = skelett_json(&[
        "play",
        "--script",
        script.to_str().unwrap(),
        "--joints",
        "--json",
    ]);
    let graph = skelett_json(&[
        "play",
        "--graph",
        &example("fox.graph.json"),
        "--script",
        &example("fox_walk_run.script.json"),
        "--joints",
        "--json",
    ]);
    let (a, g) = (items(&direct["steps"]), items(&graph["steps"]));
    assert_eq!(a.len(), 240);
    assert_eq!(a.len(), g.len());
    let clip_events = |s: &Value| -> Vec<String> {
        items(&s["events"])
            .iter()
            .filter(|e| e.get("state").is_none())
            .map(|e| format!("{} {}", e["name"], e["clip"]))
            .collect()
    };
    for (x, y) in a.iter().zip(g) {
        assert_eq!(x["joints"], y["joints"], "t = {}", x["t"]);
        assert_eq!(x["root_motion"], y["root_motion"], "t = {}", x["t"]);
        assert_eq!(clip_events(x), clip_events(y), "t = {}", x["t"]);
    }
    // And the graph's own output: states and transitions.
    let taken: Vec<(f64, String)> = g
        .iter()
        .flat_map(|s| {
            let list = s.get("transitions").map_or(&[][..], items);
            list.iter().map(move |t| {
                (
                    num(&s["t"]),
                    format!(
                        "{} {} -> {}",
                        t["layer"],
                        t["from"].as_str().unwrap(),
                        t["to"].as_str().unwrap()
                    ),
                )
            })
        })
        .collect();
    let names: Vec<&str> = taken.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "0 Survey -> Walk",
            "0 Walk -> Run",
            "1 Idle -> Look",
            "0 Run -> Walk"
        ]
    );
    // Each fires in the first step after its parameter is set.
    let at: Vec<f64> = taken.iter().map(|t| t.0).collect();
    for (t, want) in at.iter().zip([1.0, 2.0, 2.5, 3.5]) {
        assert!((t - want - 1.0 / 60.0).abs() < 1e-4, "{at:?}");
    }
    assert_eq!(
        g.last().unwrap()["states"],
        serde_json::json!(["Walk", "Look"])
    );
}

#[test]
fn the_example_graphs_play_their_scripts() {
    let robot = data("gltf/robot_quaternius.glb");
    let (ok, out, err) = skelett(&[
        "play",
        robot.to_str().unwrap(),
        "--graph",
        &example("robot_quaternius.graph.json"),
        "--script",
        &example("robot_quaternius.script.json"),
    ]);
    assert!(ok, "{err}");
    for line in [
        "layer 0: Idle -> Move",
        "layer 1: None -> Punch  events: punch (enter Punch)",
        "layer 0: Move -> Jump  events: jump_start (enter Jump)",
        "layer 0: Jump -> Move  events: landed (exit Jump)",
        "layer 0: Move -> Idle",
        "layer 1: None -> Wave",
        "layer 1: Wave -> None",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    let kaykit = data("gltf/KayKit_Rig_Medium_General.glb");
    let (ok, out, err) = skelett(&[
        "play",
        kaykit.to_str().unwrap(),
        "--graph",
        &example("kaykit.graph.json"),
        "--script",
        &example("kaykit.script.json"),
        "--dt",
        "1/30",
    ]);
    assert!(ok, "{err}");
    let transitions: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split("  layer 0: ").nth(1))
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    assert_eq!(
        transitions,
        [
            "Spawn/Ground -> Idle/A",
            "Idle/A -> Action/PickUp",
            "Action/PickUp -> Idle/A",
            "Idle/A -> Hit/B",
            "Hit/B -> Hit/B",
            "Hit/B -> Idle/A",
            "Idle/A -> Action/Throw",
            "Action/Throw -> Idle/A",
            "Idle/A -> TPose",
            "TPose -> Idle/A",
            "Idle/A -> Death/A",
            "Death/A -> Death/APose",
            "Death/APose -> Spawn/Air",
            "Spawn/Air -> Idle/A",
            "Idle/A -> Action/UseItem",
        ],
        "{out}"
    );
}

#[test]
fn bad_graphs_and_graph_scripts_fail_with_their_place_named() {
    let dir = std::env::temp_dir().join(format!("skelett-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let script = example("fox_walk_run.script.json");
    let graph = std::fs::read_to_string(example("fox.graph.json")).unwrap();
    let cases = [
        (
            graph.replace("\"Walk\"}", "\"Walkk\"}"),
            "layers[0].states[\"Walk\"].motion",
            "no clip \"Walkk\"",
        ),
        (
            graph.replace("\"to\": \"Run\"", "\"to\": \"Jog\""),
            "layers[0].states[\"Walk\"].transitions[0].to",
            "no state \"Jog\"",
        ),
        (
            graph.replace("\"version\": 1", "\"version\": 3"),
            "version",
            "version 3",
        ),
        (
            graph.replace(
                "\"op\": \">\", \"value\": 0",
                "\"op\": \">\", \"value\": true",
            ),
            "layers[0].states[\"Survey\"].transitions[0].conditions[0].value",
            "does not compare",
        ),
        (
            graph.replace("\"duration\": 0.4", "\"duratoin\": 0.4"),
            "line 15",
            "unknown field `duratoin`",
        ),
        (graph[..graph.len() / 2].to_string(), "line", "EOF"),
    ];
    for (k, (text, place, words)) in cases.iter().enumerate() {
        let g = write(&format!("g{k}.json"), text);
        let (ok, _, err) = skelett(&["play", "--graph", &g, "--script", &script]);
        assert!(!ok, "case {k} passed");
        assert!(err.contains(&g), "case {k}: the file is not named: {err}");
        assert!(
            err.contains(place) && err.contains(words),
            "case {k}: {err}"
        );
    }
    let good = write("good.json", &graph);
    let scripts = [
        (
            r#"{"commands": [{"at": 0, "set": {"sped": 1}}]}"#,
            "no parameter \"sped\"",
        ),
        (
            r#"{"commands": [{"at": 0, "set": {"speed": true}}]}"#,
            "true is not a value for a float",
        ),
        (
            r#"{"commands": [{"at": 0, "play": "Walk"}]}"#,
            "the graph plays the clips",
        ),
        (
            r#"{"layers": [{"weight": 1}], "commands": []}"#,
            "come from the graph",
        ),
    ];
    for (k, (text, words)) in scripts.iter().enumerate() {
        let s = write(&format!("s{k}.json"), text);
        let (ok, _, err) = skelett(&["play", "--graph", &good, "--script", &s]);
        assert!(!ok && err.contains(words), "script {k}: {err}");
    }
    let (ok, _, err) = skelett(&["play", "--script", &script]);
    assert!(!ok && err.contains("--graph"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `skelett ARGS` with a 10 s limit (killed past it): (exit code, stdout, stderr).
/// Waits for `child` to end, killing it and failing the test once 10 s have passed since
/// `start`; `what` names it in the failure.
fn wait_limited(
    child: &mut std::process::Child,
    start: std::time::Instant,
    what: &str,
) -> std::process::ExitStatus {
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > std::time::Duration::from_secs(10) {
            child.kill().ok();
            panic!("{what} ran past 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn skelett_limited(args: &[&str]) -> (Option<i32>, String, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skelett"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_limited(
        &mut child,
        std::time::Instant::now(),
        &format!("skelett {args:?}"),
    );
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), out, err)
}

/// `skelett ARGS` with `input` on standard input, under the 10 s limit: (exit code, stdout,
/// stderr).
fn skelett_stdin(args: &[&str], input: Vec<u8>) -> (Option<i32>, String, String) {
    use std::io::{Read, Write};
    let start = std::time::Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skelett"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A refused input closes the pipe early: a broken pipe here is the command's choice.
    let writer = std::thread::spawn(move || stdin.write_all(&input).ok());
    let mut out_pipe = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        out_pipe.read_to_string(&mut out).unwrap();
        out
    });
    let status = wait_limited(&mut child, start, &format!("skelett {args:?} < input"));
    writer.join().unwrap();
    let out = reader.join().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), out, err)
}

/// FILE `-` is standard input: each format skelett recognises by content gives what its path
/// gives (apart from the name), under the same size limit; bytes of no known format are
/// refused at byte 0 naming standard input.
#[test]
fn standard_input_reads_by_content() {
    for rel in [
        "gltf/Fox.glb",
        "gltf/SimpleSkin.gltf",
        "bvh/01_03.bvh",
        "fbx/ozz_robot.fbx",
        "x/anim_test.x",
    ] {
        let path = data(rel);
        let (ok, want, err) = skelett(&["inspect", "--json", path.to_str().unwrap()]);
        assert!(ok, "{err}");
        // The name (and a BVH clip, named after its file) is standard input's.
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let want = want
            .replace(path.to_str().unwrap(), "(standard input)")
            .replace(&format!("\"{stem}\""), "\"(standard input)\"");
        let (code, got, err) =
            skelett_stdin(&["inspect", "--json", "-"], std::fs::read(&path).unwrap());
        assert_eq!(code, Some(0), "{rel}: {err}");
        assert_eq!(got, want, "{rel}");
    }
    let (code, _, err) = skelett_stdin(&["inspect", "-"], b"not an asset\n".to_vec());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("(standard input): byte 0") && err.contains("BVH"),
        "{err}"
    );
    let capture = std::fs::read(data("bvh/01_01.bvh")).unwrap();
    assert!(capture.len() > 1 << 20);
    let (code, _, err) = skelett_stdin(&["inspect", "-", "--max-input-mb", "1"], capture);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("(standard input)") && err.contains("input limit"),
        "{err}"
    );
}

/// Hostile inputs end by themselves, quickly, with a clean error naming the problem: a link
/// to /dev/zero and a FIFO (refused before opening: not regular files), a file over
/// `--max-input-mb`, an absurd `bench --rounds`, a 999-joint BVH whose `Frame Time 1e30`
/// would make a .raa of a billion lines (refused before sampling), and a joint name with an
/// escape sequence, which `inspect` prints escaped.
#[test]
fn hostile_inputs_end_cleanly() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile");
    std::fs::create_dir_all(&dir).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let zero = dir.join("zero.glb");
    std::fs::remove_file(&zero).ok();
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let (code, _, err) = skelett_limited(&["inspect", &s(&zero)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("not a regular file") && err.contains("zero.glb"),
        "{err}"
    );
    let fifo = dir.join("pipe.bvh");
    std::fs::remove_file(&fifo).ok();
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (code, _, err) = skelett_limited(&["inspect", &s(&fifo)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    let capture = data("bvh/01_01.bvh");
    assert!(std::fs::metadata(&capture).unwrap().len() > 1 << 20);
    let (code, _, err) = skelett_limited(&["inspect", &s(&capture), "--max-input-mb", "1"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("input limit") && err.contains("--max-input-mb"),
        "{err}"
    );
    let (code, _, err) = skelett_limited(&["bench", "--rounds", "18446744073709551615"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--rounds") && !err.contains("panicked"),
        "{err}"
    );
    // 999 joints (a root and 998 children), two frames, an absurd frame time.
    let mut bvh = String::from(
        "HIERARCHY\nROOT j0\n{\nOFFSET 0 0 0\nCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n",
    );
    for j in 1..999 {
        bvh.push_str(&format!(
            "JOINT j{j}\n{{\nOFFSET 0 1 0\nCHANNELS 3 Zrotation Xrotation Yrotation\nEnd Site\n{{\nOFFSET 0 1 0\n}}\n}}\n"
        ));
    }
    bvh.push_str("}\n");
    bvh.push_str("MOTION\nFrames: 2\nFrame Time: 1e30\n");
    let row = vec!["0"; 3 + 3 * 999].join(" ");
    bvh.push_str(&format!("{row}\n{row}\n"));
    let big = dir.join("long.bvh");
    std::fs::write(&big, bvh).unwrap();
    let (code, _, err) = skelett_limited(&["convert", &s(&big), &s(&dir.join("long.ram"))]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("keyframe lines")
            && err.contains("long.raa")
            && err.contains("--max-output-mb"),
        "{err}"
    );
    assert!(!dir.join("long.raa").exists(), "refused before writing");
    // A modest output under a limit lowered below it: refused, nothing written.
    // CMU 01_01 (a 23 s capture): its .glb is over 1 MiB.
    let small = data("bvh/01_01.bvh");
    let (code, _, err) = skelett_limited(&[
        "convert",
        &s(&small),
        &s(&dir.join("small.glb")),
        "--max-output-mb",
        "1",
    ]);
    assert_eq!(
        (code, dir.join("small.glb").exists()),
        (Some(1), false),
        "{err}"
    );
    assert!(err.contains("output limit of 1048576 bytes"), "{err}");
    // A joint named with an escape sequence (clear screen).
    let evil = dir.join("evil.bvh");
    std::fs::write(
        &evil,
        "HIERARCHY\nROOT hip\x1b[2J\n{\nOFFSET 0 0 0\nCHANNELS 3 Xposition Yposition Zposition\nEnd Site\n{\nOFFSET 0 1 0\n}\n}\nMOTION\nFrames: 1\nFrame Time: 0.033\n0 0 0\n",
    )
    .unwrap();
    let (code, out, err) = skelett_limited(&["inspect", &s(&evil)]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains('\x1b'), "{out}");
    assert!(out.contains("hip\\u{1b}[2J"), "{out}");
}

/// `play` streams its output: ten million steps with every joint as JSON start printing at
/// once, and a reader that closes the pipe after 64 KB ends the run quietly within seconds
/// (the whole output used to be built in memory first, gigabytes at this size).
#[test]
fn play_streams_its_output() {
    use std::io::Read;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stream");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("long.json");
    std::fs::write(
        &script,
        r#"{"duration": 1000, "commands": [{"at": 0, "play": "Walk"}]}"#,
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skelett"))
        .args(["play", "--script", script.to_str().unwrap()])
        .args(["--dt", "0.0001", "--joints", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let mut head = vec![0u8; 64 << 10];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    assert!(head.starts_with(b"{\"dt\":"), "{:?}", &head[..40]);
    // The pipe is closed here (the reader dropped).
    let status = wait_limited(&mut child, start, "play after its reader left");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{status:?}: {err}");
}

/// The `play` script parser on hostile scripts: the README's example with numbers replaced by
/// huge, negative and non-finite ones, lines deleted and the text cut short, each run under a
/// 10 s limit: every run ends with the script played or a clean error naming the script
/// (never a panic, a hang or a runaway allocation).
#[test]
fn hostile_play_scripts_end_cleanly() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile_scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("scripts/fox_walk_run.json")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut mutants = Vec::new();
    // Every number in turn (the first 40) replaced by something hostile.
    let numbers: Vec<(usize, usize)> = {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
                let s = i;
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                    i += 1;
                }
                out.push((s, i));
            }
            i += 1;
        }
        out
    };
    let hostile = ["1e30", "-1", "1e308", "-0", "4294967296", "1e-40", "9e99"];
    for (k, &(s, e)) in numbers.iter().take(40).enumerate() {
        mutants.push(format!(
            "{}{}{}",
            &text[..s],
            hostile[k % hostile.len()],
            &text[e..]
        ));
    }
    for k in (0..lines.len()).step_by(3) {
        let mut l = lines.clone();
        l.remove(k);
        mutants.push(l.join("\n"));
    }
    for cut in (0..text.len()).step_by(text.len() / 7) {
        mutants.push(text[..cut].to_string());
    }
    let (mut ok, mut refused) = (0, 0);
    for (k, m) in mutants.iter().enumerate() {
        let path = dir.join(format!("m{k}.json"));
        std::fs::write(&path, m).unwrap();
        let (code, _, err) = skelett_limited(&["play", "--script", path.to_str().unwrap()]);
        assert!(!err.contains("panicked"), "mutant {k}: {err}");
        match code {
            Some(0) => ok += 1,
            Some(1) => {
                assert!(err.contains(&format!("m{k}.json")), "mutant {k}: {err}");
                refused += 1;
            }
            other => panic!("mutant {k}: {other:?} {err}"),
        }
    }
    assert!(ok > 0 && refused > 10, "{ok} played, {refused} refused");
}

/// The trial's wording findings: NaN and infinite numbers in arguments are refused by the
/// argument's name, a script number past the 32-bit range by its place (it read as "inf s"),
/// and a RAM error points at the token's column.
#[test]
fn numbers_out_of_range_are_named_where_they_are() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("wording_trial");
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let fox = s(&data("gltf/Fox.glb"));
    for args in [
        vec!["sample", fox.as_str(), "--times", "0,nan"],
        vec!["render", "--crossfade", "nan", "--out", "x.png"],
        vec!["render", "--crossfade=-1", "--out", "x.png"],
        vec!["render", "--fps", "inf", "--out", "x.gif"],
        vec!["compress", fox.as_str(), "--rate", "0"],
        // Rates past 10000 baked for minutes; below 1, a clip flattened to a pose.
        vec!["compress", fox.as_str(), "x.skl", "--rate", "100000"],
        vec!["compress", fox.as_str(), "x.skl", "--rate", "0.1"],
        vec![
            "retarget",
            fox.as_str(),
            fox.as_str(),
            "x.glb",
            "--rate",
            "1e6",
        ],
    ] {
        let (code, _, err) = skelett_limited(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        let flag = args.iter().find(|a| a.starts_with("--")).unwrap();
        let flag = flag.split('=').next().unwrap();
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    let script = dir.join("far.json");
    std::fs::write(
        &script,
        r#"{"duration": 2, "commands": [{"at": 0, "play": "Walk"},
            {"at": 1, "crossfade": "Run", "duration": 1e300}]}"#,
    )
    .unwrap();
    let (code, _, err) = skelett_limited(&["play", "--script", &s(&script)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("far.json") && err.contains("commands[1].duration") && err.contains("1e300"),
        "{err}"
    );
    assert!(!err.contains("inf"), "{err}");
    let ram = dir.join("bad.ram");
    std::fs::write(
        &ram,
        "joints 1\n0 \"Root\"\n parent -1\n orientation 0 0 0 x\n",
    )
    .unwrap();
    let (code, _, err) = skelett_limited(&["inspect", &s(&ram)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("bad.ram: line 4, column 20"), "{err}");
}

/// What a sceptical trial of the hostile-input work found, each ending cleanly now: a FIFO
/// as an output (refused, not blocking); a link to the parent folder inside a folder being
/// converted (not followed); a .gltf whose external buffer declares more than the input
/// limit (refused before reading it); `play` output past `--max-output-mb`; chain IK asking
/// for more iterations than a step takes; a .ram without its .raa (a warning); joint names
/// with a C1 control and a right-to-left override (`inspect --json` stays valid JSON and
/// gives the names back; the text shows them escaped).
#[test]
fn hostile_inputs_found_by_the_trial_end_cleanly() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile_trial");
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let fox = data("gltf/Fox.glb");

    let fifo = dir.join("out.glb");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (code, _, err) = skelett_limited(&["convert", &s(&fox), &s(&fifo)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("out.glb") && err.contains("not a regular file"),
        "{err}"
    );
    let gif = dir.join("out.gif");
    assert!(std::process::Command::new("mkfifo")
        .arg(&gif)
        .status()
        .unwrap()
        .success());
    if have_gpu() {
        let (code, _, err) = skelett_limited(&[
            "render",
            "--size",
            "64x64",
            "--seconds",
            "0.1",
            "--out",
            &s(&gif),
        ]);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("not a regular file"), "{err}");
    }

    // A GIF past the output limit is refused before anything renders (no GPU needed); a side
    // past 4096 pixels is refused by the argument parser.
    let big = dir.join("big.gif");
    let (code, _, err) = skelett_limited(&[
        "render",
        "--size",
        "4096x4096",
        "--seconds",
        "600",
        "--fps",
        "120",
        "--out",
        &s(&big),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("big.gif") && err.contains("output limit"),
        "{err}"
    );
    assert!(!big.exists());
    let (code, _, err) = skelett_limited(&["render", "--size", "8192x64", "--out", &s(&big)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("16 to 4096"), "{err}");

    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::copy(data("gltf/RiggedSimple.glb"), input.join("a.glb")).unwrap();
    std::os::unix::fs::symlink("..", input.join("up")).unwrap();
    let (ok, out, err) = skelett(&[
        "convert",
        &s(&input),
        &s(&dir.join("converted")),
        "--to",
        "skl",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("converted 1 of 2 files, skipped 1"), "{out}");
    assert!(!dir.join("converted/up").exists());

    let gltf = dir.join("big_buffer.gltf");
    std::fs::write(
        &gltf,
        r#"{"asset":{"version":"2.0"},"buffers":[{"uri":"big.bin","byteLength":3221225472}]}"#,
    )
    .unwrap();
    let (code, _, err) = skelett_limited(&["inspect", &s(&gltf), "--max-input-mb", "1"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("buffers[0]") && err.contains("input limit"),
        "{err}"
    );

    let script = dir.join("long.json");
    std::fs::write(
        &script,
        r#"{"duration": 100, "commands": [{"at": 0, "play": "Run"}]}"#,
    )
    .unwrap();
    // Into a file (a pipe nobody reads while it runs would fill and block it).
    let out_file = dir.join("long.out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skelett"))
        .args([
            "play",
            "--script",
            &s(&script),
            "--joints",
            "--json",
            "--max-output-mb",
            "1",
        ])
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_limited(&mut child, std::time::Instant::now(), "play past the limit");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("output limit") && err.contains("--max-output-mb"),
        "{err}"
    );
    let written = std::fs::metadata(&out_file).unwrap().len();
    assert!(written > 1 << 19 && written <= 1 << 20, "{written} bytes");
    let ik = dir.join("ik.json");
    std::fs::write(
        &ik,
        r#"{"commands": [{"at": 0, "play": "Run"}, {"at": 0.1, "ik": {"chain": {"joints": ["b_Hip_01", "b_Spine01_02", "b_Spine02_03"], "target": [0, 100, 0], "iterations": 4000000000}}}]}"#,
    )
    .unwrap();
    let (code, _, err) = skelett_limited(&["play", "--script", &s(&ik)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("iterations") && err.contains("1000"), "{err}");

    let (ok, _, err) = skelett(&[
        "convert",
        &s(&data("gltf/RiggedSimple.glb")),
        &s(&dir.join("m.ram")),
    ]);
    assert!(ok, "{err}");
    std::fs::remove_file(dir.join("m.raa")).unwrap();
    let (ok, out, err) = skelett(&["inspect", &s(&dir.join("m.ram"))]);
    assert!(ok, "{err}");
    assert!(
        out.contains("no animation") && out.contains("m.raa"),
        "{out}"
    );

    let bvh = dir.join("names.bvh");
    std::fs::write(
        &bvh,
        "HIERARCHY\nROOT a\u{85}b\n{\nOFFSET 0 0 0\nCHANNELS 3 Zrotation Xrotation Yrotation\nJOINT c\u{202e}d\n{\nOFFSET 0 1 0\nCHANNELS 3 Zrotation Xrotation Yrotation\nEnd Site\n{\nOFFSET 0 1 0\n}\n}\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\n0 0 0 0 0 0\n",
    )
    .unwrap();
    let (ok, out, err) = skelett(&["inspect", "--json", &s(&bvh)]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).expect("valid JSON");
    let names: Vec<&str> = v["skeleton"]["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a\u{85}b", "c\u{202e}d", "c\u{202e}d_End"]);
    let (ok, out, err) = skelett(&["inspect", &s(&bvh)]);
    assert!(ok, "{err}");
    assert!(
        out.contains("a\\u0085b") && out.contains("c\\u202ed"),
        "{out}"
    );
    assert!(!out.contains('\u{85}') && !out.contains('\u{202e}'));
}

/// `layer_enabled` in a script: a disabled layer leaves the pose to the layers below it (the
/// same bytes as a script without it), and enabled again it goes on where it stopped.
#[test]
fn scripts_disable_and_enable_layers() {
    let run = |name: &str, extra: &str| {
        let script = format!(
            r#"{{"layers": [{{"mode": "override", "weight": 1.0}}], "duration": 1.0,
            "commands": [{{"at": 0, "play": "Walk"}}, {{"at": 0, "layer": 1, "play": "Survey"}}{extra}]}}"#
        );
        let args = ["--dt", "0.25", "--joints", "--json"];
        let (ok, out, err) = play_script("layer_enabled", name, &script, &args);
        assert!(ok, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        v["steps"].as_array().unwrap().clone()
    };
    let walk_only = run("walk.json", r#", {"at": 0, "layer": 1, "stop": true}"#);
    let disabled = run(
        "disabled.json",
        r#", {"at": 0, "layer": 1, "layer_enabled": false}"#,
    );
    let survey = run("survey.json", "");
    let back = run(
        "back.json",
        r#", {"at": 0, "layer": 1, "layer_enabled": false}, {"at": 0.5, "layer": 1, "layer_enabled": true}"#,
    );
    let joints = |s: &Value| s["joints"].clone();
    for (a, b) in walk_only.iter().zip(&disabled) {
        assert_eq!(joints(a), joints(b), "disabled = not there");
    }
    assert_ne!(joints(&survey[1]), joints(&walk_only[1]));
    // Enabled at 0.5 after standing still from 0: the step at 0.75 shows Survey as the plain
    // script's step at 0.25 does.
    let time = |s: &Value| s["t"].as_f64().unwrap();
    let at = |steps: &[Value], t: f64| {
        steps
            .iter()
            .find(|s| (time(s) - t).abs() < 1e-6)
            .cloned()
            .unwrap()
    };
    assert_eq!(joints(&at(&back, 0.25)), joints(&at(&walk_only, 0.25)));
    assert_ne!(joints(&at(&back, 0.75)), joints(&at(&walk_only, 0.75)));
    // Layer 1 has no mask and weight 1: the pose is Survey's alone, half a second behind.
    assert_eq!(joints(&at(&back, 0.75)), joints(&at(&survey, 0.25)));
}

/// A dominant layer in a script (`"mask": {"animated_by": CLIP}`): it runs, and a clip the
/// asset lacks, or other mask keys beside it, are errors naming the layer.
#[test]
fn scripts_take_dominant_layer_masks() {
    let run = |mask: &str| {
        let script = format!(
            r#"{{"layers": [{{"mode": "override", "mask": {mask}}}], "duration": 0.5,
            "commands": [{{"at": 0, "play": "Walk"}}, {{"at": 0, "layer": 1, "play": "Survey"}}]}}"#
        );
        play_script("dominant", "dominant.json", &script, &[])
    };
    let (ok, _, err) = run(r#"{"animated_by": "Survey"}"#);
    assert!(ok, "{err}");
    let (ok, _, err) = run(r#"{"animated_by": "Dance"}"#);
    assert!(
        !ok && err.contains("layers[0]") && err.contains("no clip \"Dance\""),
        "{err}"
    );
    let (ok, _, err) = run(r#"{"animated_by": "Survey", "joints": ["b_Neck_04"]}"#);
    assert!(!ok && err.contains("stands alone"), "{err}");
}

/// `"notifications": true` in a script: loops and finished transitions come out as events,
/// once each (Run, 1.16 s long, loops once after the cross-fade at 0.5 s).
#[test]
fn scripts_report_loops_and_finished_transitions() {
    let script = r#"{"notifications": true, "duration": 2.5, "commands": [{"at": 0, "play": "Walk"},
        {"at": 0.5, "crossfade": "Run", "duration": 0.3, "sync": 1}]}"#;
    let (ok, out, err) = play_script("notifications", "notify.json", script, &["--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let mut names = Vec::new();
    for s in v["steps"].as_array().unwrap() {
        for e in s["events"].as_array().into_iter().flatten() {
            names.push(e["name"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(
        names.iter().filter(|n| *n == "transition_finished").count(),
        1,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "looped").count(),
        1,
        "{names:?}"
    );
}

/// `inspect` says a clip's frame rate, and `convert --close-loops` writes clips one frame
/// longer (at that rate) that come back to their first key.
#[test]
fn frame_rates_are_shown_and_loops_closed_on_conversion() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("close_loops");
    std::fs::create_dir_all(&dir).unwrap();
    let bvh = data("bvh/01_01.bvh");
    let bvh = bvh.to_str().unwrap();
    let before = skelett_json(&["inspect", "--json", bvh]);
    assert_eq!(num(&before["clips"][0]["frame_rate"]), 120.0);
    let out = dir.join("closed.skl");
    let (ok, _, err) = skelett(&["convert", bvh, out.to_str().unwrap(), "--close-loops"]);
    assert!(ok, "{err}");
    let after = skelett_json(&["inspect", "--json", out.to_str().unwrap()]);
    let d0 = num(&before["clips"][0]["duration"]);
    let d1 = num(&after["clips"][0]["duration"]);
    assert!((d1 - d0 - 1.0 / 120.0).abs() < 1e-5, "{d0} -> {d1}");
    assert_eq!(num(&after["clips"][0]["frame_rate"]), 120.0);
    let (ok, text, _) = skelett(&["inspect", out.to_str().unwrap()]);
    assert!(ok && text.contains("frame rate: 120 fps"), "{text}");
}

/// Writes `script` as `name` in the test's scratch folder `dir` and runs `skelett play` on it
/// (the embedded Fox) with `args` after the script.
fn play_script(dir: &str, name: &str, script: &str, args: &[&str]) -> (bool, String, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    let mut all = vec!["play", "--script", path.to_str().unwrap()];
    all.extend_from_slice(args);
    skelett(&all)
}

/// A RAM converted with two RAA files (`--raa`, repeated) carries both clips; written back as
/// .ram it is in the article's layout at whole frames of `--raa-fps`, or counted with
/// `--ram-counts`.
#[test]
fn several_raa_files_load_onto_one_ram() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("raa");
    std::fs::create_dir_all(&dir).unwrap();
    let fox = dir.join("fox.ram");
    let (ok, _, err) = skelett(&[
        "convert",
        data("gltf/Fox.glb").to_str().unwrap(),
        fox.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let ram = std::fs::read_to_string(&fox).unwrap();
    assert!(ram.starts_with("Joint Definitions\n"), "{}", &ram[..40]);
    let walk = dir.join("walk.raa");
    std::fs::rename(dir.join("fox.raa"), &walk).unwrap();
    let raa = std::fs::read_to_string(&walk).unwrap();
    assert!(raa.starts_with("track 0 "), "{}", &raa[..40]);
    // A second animation, the Run clip, written in the counted layout.
    let (ok, _, err) = skelett(&[
        "convert",
        data("gltf/Fox.glb").to_str().unwrap(),
        dir.join("fast.ram").to_str().unwrap(),
        "--clip",
        "Run",
        "--ram-counts",
    ]);
    assert!(ok, "{err}");
    let counted = std::fs::read_to_string(dir.join("fast.raa")).unwrap();
    assert!(counted.starts_with("fps 30\ntracks "), "{}", &counted[..40]);
    let both = skelett_json(&[
        "inspect",
        "--json",
        fox.to_str().unwrap(),
        "--raa",
        walk.to_str().unwrap(),
        "--raa",
        dir.join("fast.raa").to_str().unwrap(),
    ]);
    let names: Vec<&str> = both["clips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["walk", "fast"]);
    let d30 = num(&both["clips"][0]["duration"]);
    let at60 = skelett_json(&[
        "inspect",
        "--json",
        fox.to_str().unwrap(),
        "--raa",
        walk.to_str().unwrap(),
        "--raa-fps",
        "60",
    ]);
    assert!((num(&at60["clips"][0]["duration"]) * 2.0 - d30).abs() < 1e-4);
    // A missing file is named.
    let (ok, _, err) = skelett(&["inspect", fox.to_str().unwrap(), "--raa", "nope.raa"]);
    assert!(!ok && err.contains("nope.raa"), "{err}");
}

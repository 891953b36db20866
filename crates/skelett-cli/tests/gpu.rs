//! GPU skinning against the CPU path, and offscreen renders of a real asset checked pixel
//! by pixel. Needs a GPU adapter: on a machine without one (and without Mesa's lavapipe) the
//! tests say so and pass, unless `SKELETT_REQUIRE_GPU=1` (as in CI) makes that a failure.

use skelett_testdata::data;
use std::path::PathBuf;

use glam::{Mat4, Vec3};
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, sample_uncached, Pose};
use skelett_render::{Character, Gpu, GpuSkinner, OrbitCamera, RenderOptions, Renderer};

/// The renderer's input from a loaded asset.
fn character(asset: &skelett_io::Asset) -> Character<'_> {
    Character::new(&asset.skeleton, &asset.skins, &asset.meshes, &asset.images)
}

fn gpu() -> Option<Gpu> {
    match Gpu::new() {
        Ok(g) => {
            eprintln!("GPU: {}", g.describe());
            Some(g)
        }
        Err(e) if std::env::var("SKELETT_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("SKELETT_REQUIRE_GPU=1 but {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

fn posed(asset: &skelett_io::Asset, clip: usize, at: f32) -> Vec<Mat4> {
    let clip = &asset.clips[clip];
    let mut pose = Pose::rest(&asset.skeleton);
    sample_uncached(clip, clip.start() + clip.duration() * at, &mut pose).unwrap();
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
    model
}

#[test]
fn gpu_skinning_equals_cpu_skinning() {
    let Some(gpu) = gpu() else { return };
    for file in [
        "gltf/CesiumMan.glb",
        "gltf/Fox.glb",
        "gltf/robot_quaternius.glb",
    ] {
        let asset = skelett_io::load(data(file)).unwrap();
        for (mi, mesh) in asset.meshes.iter().enumerate() {
            let skin_def = &asset.skins[mesh.skin];
            for p in &mesh.primitives {
                let sm = SkinningMesh::new(p, skin_def.len()).unwrap();
                let mut gs = GpuSkinner::new(&gpu, &sm).unwrap();
                let size = p.positions.iter().map(|v| v.length()).fold(1e-6, f32::max);
                let mut worst = 0.0f32;
                for at in [0.0, 0.37, 0.81] {
                    let model = posed(&asset, 0, at);
                    let mut palette = SkinPalette::new(SkinningMethod::Linear);
                    palette.update(skin_def, &model).unwrap();
                    let mut pos = vec![Vec3::ZERO; sm.vertex_count()];
                    let mut nrm = pos.clone();
                    skin(
                        &sm,
                        &palette,
                        SkinOutput {
                            positions: &mut pos,
                            normals: Some(&mut nrm),
                            tangents: None,
                        },
                    )
                    .unwrap();
                    let (gp, gn) = gs.skin_and_read(&gpu, &palette).unwrap();
                    assert_eq!(gp.len(), pos.len());
                    for v in 0..pos.len() {
                        let e = (gp[v] - pos[v]).length() / size;
                        worst = worst.max(e);
                        assert!(
                            e < 1e-5,
                            "{file} mesh {mi} vertex {v}: GPU {} CPU {}",
                            gp[v],
                            pos[v]
                        );
                        if sm.normals().is_some() {
                            assert!((gn[v] - nrm[v]).length() < 1e-4, "{file} normal {v}");
                        }
                    }
                }
                eprintln!(
                    "{file} mesh {mi}: {} vertices, worst GPU-CPU difference {worst:e} of size",
                    sm.vertex_count()
                );
            }
        }
    }
}

/// CPU and GPU skinning of `sm` with `palette`: worst position difference (relative to
/// `size`) and worst normal difference.
fn compare(gpu: &Gpu, sm: &SkinningMesh, palette: &SkinPalette, size: f32) -> (f32, f32) {
    let mut gs = GpuSkinner::new(gpu, sm).unwrap();
    let mut pos = vec![Vec3::ZERO; sm.vertex_count()];
    let mut nrm = pos.clone();
    skin(
        sm,
        palette,
        SkinOutput {
            positions: &mut pos,
            normals: Some(&mut nrm),
            tangents: None,
        },
    )
    .unwrap();
    let (gp, gn) = gs.skin_and_read(gpu, palette).unwrap();
    let wp = gp
        .iter()
        .zip(&pos)
        .map(|(a, b)| (*a - *b).length() / size)
        .fold(0.0, f32::max);
    let wn = if sm.normals().is_some() {
        gn.iter()
            .zip(&nrm)
            .map(|(a, b)| (*a - *b).length())
            .fold(0.0, f32::max)
    } else {
        0.0
    };
    (wp, wn)
}

/// The paths the real assets do not reach: dual quaternions (with the per-vertex fallback)
/// and inverse-transposed normals under non-uniform scale.
#[test]
fn gpu_dual_quaternions_and_normal_matrices_equal_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let asset = skelett_io::load(data("gltf/CesiumMan.glb")).unwrap();
    let p = &asset.meshes[0].primitives[0];
    let skin_def = &asset.skins[asset.meshes[0].skin];
    let sm = SkinningMesh::new(p, skin_def.len()).unwrap();
    let size = p.positions.iter().map(|v| v.length()).fold(1e-6, f32::max);
    let model = posed(&asset, 0, 0.5);
    // Dual quaternions on the real pose (rigid joints).
    let mut dq = SkinPalette::new(SkinningMethod::DualQuaternion);
    dq.update(skin_def, &model).unwrap();
    let (wp, wn) = compare(&gpu, &sm, &dq, size);
    eprintln!("CesiumMan DQS: GPU-CPU {wp:e} of size, normals {wn:e}");
    assert!(wp < 1e-5 && wn < 1e-4, "DQS: {wp} {wn}");
    // Every third joint scaled non-uniformly: normal matrices, and DQS falling back.
    let scaled: Vec<glam::Mat4> = model
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if i % 3 == 0 {
                *m * glam::Mat4::from_scale(Vec3::new(1.0, 1.6, 0.7))
            } else {
                *m
            }
        })
        .collect();
    for method in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
        let mut pal = SkinPalette::new(method);
        pal.update(skin_def, &scaled).unwrap();
        assert!(pal.uses_normal_matrices());
        let (wp, wn) = compare(&gpu, &sm, &pal, size);
        eprintln!("CesiumMan scaled {method:?}: GPU-CPU {wp:e} of size, normals {wn:e}");
        assert!(wp < 1e-5 && wn < 1e-4, "{method:?}: {wp} {wn}");
    }
}

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("renders");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn renders_a_real_character_and_its_skeleton_where_the_joints_are() {
    let Some(gpu) = gpu() else { return };
    let asset = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let model = posed(&asset, 1, 0.3);
    let opts = RenderOptions {
        width: 320,
        height: 240,
        ..Default::default()
    };
    let mut r = Renderer::new(&gpu, character(&asset), opts).unwrap();
    let bounds = r.bounds(&model).unwrap();
    let cam = OrbitCamera::framing(bounds, 320.0 / 240.0);
    r.set_ground(
        Vec3::new(bounds.center().x, bounds.min.y, bounds.center().z),
        bounds.radius() * 1.5,
    );
    let bg =
        |p: [u8; 4]| p[0] < 80 && p[1] < 80 && p[2] < 80 && (p[0] as i32 - p[2] as i32).abs() < 20;

    // Skin only: the character covers a plausible part of the frame, and it is lit (not flat).
    r.set_layers(true, false, false, false);
    let img = r.render(&gpu, &model, &cam).unwrap();
    img.write_png(out_dir().join("fox_skin.png")).unwrap();
    let lit: Vec<[u8; 4]> = (0..img.height)
        .flat_map(|y| (0..img.width).map(move |x| (x, y)))
        .filter_map(|(x, y)| img.pixel(x, y))
        .filter(|&p| !bg(p))
        .collect();
    let cover = lit.len() as f32 / (img.width * img.height) as f32;
    assert!(
        (0.05..0.7).contains(&cover),
        "the fox covers {cover} of the image"
    );
    let lum: Vec<u32> = lit
        .iter()
        .map(|p| p[0] as u32 + p[1] as u32 + p[2] as u32)
        .collect();
    let (lo, hi) = (lum.iter().min().unwrap(), lum.iter().max().unwrap());
    assert!(hi - lo > 100, "shading varies across the body: {lo}..{hi}");

    // Skeleton only: overlay pixels sit where the joints project.
    r.set_layers(false, false, true, false);
    let img = r.render(&gpu, &model, &cam).unwrap();
    img.write_png(out_dir().join("fox_skeleton.png")).unwrap();
    let root = asset.skeleton.root_transform();
    let mut hits = 0;
    for m in &model {
        let p = root.transform_point3(m.w_axis.truncate());
        let (x, y) = r.project(&cam, p).unwrap();
        let near = (-2i32..=2)
            .flat_map(|dy| (-2i32..=2).map(move |dx| (dx, dy)))
            .any(|(dx, dy)| {
                img.pixel((x as i32 + dx) as u32, (y as i32 + dy) as u32)
                    .is_some_and(|p| !bg(p))
            });
        hits += near as usize;
    }
    assert!(
        hits * 10 >= model.len() * 9,
        "{hits} of {} joints have overlay pixels",
        model.len()
    );
    // And nothing is drawn far from the skeleton: the corners stay background.
    for (x, y) in [(0, 0), (319, 0), (0, 239), (319, 239)] {
        assert!(bg(img.pixel(x, y).unwrap()));
    }

    // Everything together (for looking at).
    r.set_layers(true, true, true, true);
    let img = r.render(&gpu, &model, &cam).unwrap();
    img.write_png(out_dir().join("fox_all.png")).unwrap();
}

/// CesiumMan's base colour texture is a JPEG of blue and green stripes on white: without
/// the texture the body would be one grey-white.
#[test]
fn renders_jpeg_base_colour_textures() {
    let Some(gpu) = gpu() else { return };
    let asset = skelett_io::load(data("gltf/CesiumMan.glb")).unwrap();
    assert_eq!(asset.images[0].as_ref().unwrap().mime, "image/jpeg");
    let model = posed(&asset, 0, 0.5);
    let mut r = Renderer::new(
        &gpu,
        character(&asset),
        RenderOptions {
            width: 256,
            height: 256,
            grid: false,
            ..Default::default()
        },
    )
    .unwrap();
    let cam = OrbitCamera::framing(r.bounds(&model).unwrap(), 1.0);
    let img = r.render(&gpu, &model, &cam).unwrap();
    img.write_png(out_dir().join("cesium_textured.png"))
        .unwrap();
    let px: Vec<[u8; 4]> = img
        .rgba
        .chunks_exact(4)
        .map(|p| [p[0], p[1], p[2], p[3]])
        .collect();
    let blue = px.iter().filter(|p| p[2] as i32 > p[0] as i32 + 60).count();
    let green = px
        .iter()
        .filter(|p| p[1] as i32 > p[0] as i32 + 30 && p[1] > p[2])
        .count();
    assert!(
        blue > 100 && green > 100,
        "blue {blue}, green {green} pixels"
    );
}

/// A ground surface given as heights is drawn where the heights put it (a 15 degree slope,
/// not the flat grid), and markers are crosses in their colour at their projected points.
#[test]
fn draws_a_sloped_ground_surface_and_markers() {
    let Some(gpu) = gpu() else { return };
    let asset = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let model = posed(&asset, 1, 0.3);
    let (w, h) = (320u32, 240u32);
    let opts = RenderOptions {
        width: w,
        height: h,
        ..Default::default()
    };
    let mut r = Renderer::new(&gpu, character(&asset), opts).unwrap();
    let bounds = r.bounds(&model).unwrap();
    let mut cam = OrbitCamera::framing(bounds, w as f32 / h as f32);
    // From the side, so the slope (rising along +Z) shows as a rise across the image.
    cam.yaw = 90f32.to_radians();
    let center = Vec3::new(bounds.center().x, bounds.min.y, bounds.center().z);
    let half = bounds.radius() * 1.5;
    let tan = 15f32.to_radians().tan();
    let slope = move |_x: f32, z: f32| center.y + (z - center.z) * tan;
    // Ground only along the centre line (narrower than one of the 96 pieces a line is drawn
    // in): one line along Z, and nothing across, where there is no ground on both ends.
    let band = 0.25 * 2.0 * half / 96.0;
    r.set_ground_surface(center, half, &|x, z| {
        ((x - center.x).abs() < band).then(|| slope(x, z))
    });
    let target = bounds.center() + Vec3::new(0.0, bounds.radius() * 0.8, 0.0);
    r.set_markers(&[(target, [1.0, 0.55, 0.1, 1.0])]);
    r.set_layers(false, false, false, true);
    let img = r.render(&gpu, &model, &cam).unwrap();
    img.write_png(out_dir().join("fox_slope_ground.png"))
        .unwrap();
    let bg =
        |p: [u8; 4]| p[0] < 80 && p[1] < 80 && p[2] < 80 && (p[0] as i32 - p[2] as i32).abs() < 20;
    let drawn_near = |p: Vec3| {
        let Some((x, y)) = r.project(&cam, p) else {
            return false;
        };
        (-1i32..=1)
            .flat_map(|dy| (-1i32..=1).map(move |dx| (dx, dy)))
            .any(|(dx, dy)| {
                let (px, py) = (x as i32 + dx, y as i32 + dy);
                px >= 0 && py >= 0 && img.pixel(px as u32, py as u32).is_some_and(|q| !bg(q))
            })
    };
    // Points of the centre line, on the slope and on the flat plane.
    let mut on_slope = 0;
    let mut on_flat = 0;
    let n = 40;
    for k in 0..=n {
        let z = center.z - half + 2.0 * half * k as f32 / n as f32;
        if (z - center.z).abs() < 0.3 * half {
            continue; // where slope and flat plane are too close to tell apart
        }
        let x = center.x;
        on_slope += drawn_near(Vec3::new(x, slope(x, z), z)) as usize;
        on_flat += drawn_near(Vec3::new(x, center.y, z)) as usize;
    }
    assert!(on_slope >= 25, "{on_slope} slope points drawn");
    assert!(on_flat * 3 < on_slope, "{on_flat} flat-plane points drawn");
    // The marker: orange at its point.
    let (mx, my) = r.project(&cam, target).unwrap();
    let p = img.pixel(mx as u32, my as u32).unwrap();
    assert!(
        p[0] > 180 && (60..200).contains(&p[1]) && p[2] < 90,
        "marker pixel {p:?}"
    );
}

/// `skelett retarget ... --render side.png`: the capture (its bones, left) beside the robot
/// wearing the retargeted clip (right), one image twice the width of each half; the right
/// half shows the robot's orange body (its material survives the written .glb too: the
/// file, rendered on its own, shows the same colour).
#[test]
fn retarget_renders_source_beside_target() {
    if gpu().is_none() {
        return;
    }
    let dir = out_dir();
    let side = dir.join("retarget_side.png");
    let glb = dir.join("retarget_robot.glb");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_skelett"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "retarget",
        data("bvh/01_01.bvh").to_str().unwrap(),
        data("gltf/robot_quaternius.glb").to_str().unwrap(),
        glb.to_str().unwrap(),
        "--render",
        side.to_str().unwrap(),
        "--render-seconds",
        "1",
        "--render-size",
        "240x180",
    ]);
    let alone = dir.join("retarget_robot.png");
    run(&[
        "render",
        glb.to_str().unwrap(),
        "--seconds",
        "1",
        "--size",
        "240x180",
        "--out",
        alone.to_str().unwrap(),
    ]);
    let read = |p: &std::path::Path| {
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgba);
        (info.width, info.height, buf)
    };
    // Orange: red well above green, green well above blue (the grid and background are
    // grey; the capture's bones are yellow, red, green and blue lines).
    let orange = |(w, _h, buf): &(u32, u32, Vec<u8>), x0: u32, x1: u32| {
        buf.chunks_exact(4)
            .enumerate()
            .filter(|(i, p)| {
                let x = *i as u32 % w;
                let (r, g, b) = (p[0] as i32, p[1] as i32, p[2] as i32);
                x >= x0 && x < x1 && r > 120 && r - g > 40 && g - b > 30
            })
            .count()
    };
    let side = read(&side);
    assert_eq!((side.0, side.1), (480, 180));
    let (left, right) = (orange(&side, 0, 240), orange(&side, 240, 480));
    assert!(
        right > 500 && left < right / 10,
        "orange pixels: left {left}, right {right}"
    );
    let alone = read(&alone);
    assert!(
        orange(&alone, 0, 240) > 500,
        "the written robot lost its colours"
    );
}

fn json_vec3(v: &serde_json::Value) -> glam::DVec3 {
    let a = v.as_array().unwrap();
    glam::DVec3::new(
        a[0].as_f64().unwrap(),
        a[1].as_f64().unwrap(),
        a[2].as_f64().unwrap(),
    )
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (is ../shared beside the repository?)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

/// Morph then skin on the GPU against three.js r187 (`../shared/data/reference/morph`, the
/// same references `skelett-io/tests/morph_golden.rs` checks the CPU path with) within 1e-5
/// of the mesh size, and against the CPU path for every vertex, positions and normals.
#[test]
fn gpu_morph_and_skin_matches_three_and_cpu() {
    use skelett::morph::{morph, skin_morphed, Morphed};
    let Some(gpu) = gpu() else { return };
    for (file, reference) in [
        ("AnimatedMorphCube.glb", "AnimatedMorphCube.glb"),
        ("AnimatedMorphSphere.glb", "AnimatedMorphSphere.glb"),
        ("MorphStressTest.glb", "MorphStressTest.glb"),
        ("MorphStressTest.glb", "MorphStressTest.glb.clip1"),
        ("SimpleMorph.glb", "SimpleMorph.glb"),
    ] {
        let asset = skelett_io::load(data(&format!("morph/{file}"))).unwrap();
        let r = read_json(
            &skelett_testdata::data_dir().join(format!("reference/morph/{reference}.morph.json")),
        );
        let clip = &asset.clips[r["clip"]["index"].as_u64().unwrap() as usize];
        let mesh = asset
            .meshes
            .iter()
            .find(|m| !m.morph_channels.is_empty())
            .unwrap();
        let prim = &mesh.primitives[r["mesh"]["primitive"].as_u64().unwrap() as usize];
        let skin_def = &asset.skins[mesh.skin];
        let mut sm = SkinningMesh::new(prim, skin_def.len()).unwrap();
        sm.bind_morph(&mesh.morph_channels, &mesh.morph_full_weights)
            .unwrap();
        let mut gs = GpuSkinner::new(&gpu, &sm).unwrap();
        assert_eq!(gs.morph_target_count(), prim.morph_targets.len());
        let mut slot = vec![0usize; sm.vertex_count()];
        for (i, &v) in sm.source_vertices().iter().enumerate() {
            slot[v as usize] = i;
        }
        let mut morphed = Morphed::new(&sm);
        let mut weights = vec![0.0; asset.skeleton.morph_channel_count()];
        let mut pose = Pose::rest(&asset.skeleton);
        let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
        let mut palette = SkinPalette::new(SkinningMethod::Linear);
        let mut pos = vec![Vec3::ZERO; sm.vertex_count()];
        let mut nrm = pos.clone();
        let root = asset.skeleton.root_transform().as_dmat4();
        let vertices: Vec<usize> = r["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let (mut worst_three, mut worst_cpu, mut worst_normal) = (0.0f64, 0.0f32, 0.0f32);
        for s in r["samples"].as_array().unwrap() {
            let t = s["t"].as_f64().unwrap() as f32;
            skelett::sample_morph_weights(clip, t, &mut weights).unwrap();
            sample_uncached(clip, t, &mut pose).unwrap();
            local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
            palette.update(skin_def, &model).unwrap();
            gs.set_morph_weights(&gpu, &weights).unwrap();
            let (gp, gn) = gs.skin_and_read(&gpu, &palette).unwrap();
            morph(&sm, &weights, &mut morphed).unwrap();
            skin_morphed(
                &sm,
                &palette,
                &morphed,
                SkinOutput {
                    positions: &mut pos,
                    normals: Some(&mut nrm),
                    tangents: None,
                },
            )
            .unwrap();
            let world = s["world"].as_array().unwrap();
            let size = world
                .iter()
                .map(|p| json_vec3(p).length())
                .fold(1e-9, f64::max);
            for (k, &v) in vertices.iter().enumerate() {
                let got = root.transform_point3(gp[slot[v]].as_dvec3());
                let err = (got - json_vec3(&world[k])).length() / size;
                worst_three = worst_three.max(err);
                assert!(
                    err < 1e-5,
                    "{reference} t={t} vertex {v}: GPU {got}, three.js {} (relative {err:e})",
                    json_vec3(&world[k])
                );
            }
            for v in 0..pos.len() {
                let e = (gp[v] - pos[v]).length() / size as f32;
                worst_cpu = worst_cpu.max(e);
                assert!(
                    e < 1e-5,
                    "{reference} t={t} vertex {v}: GPU {} CPU {}",
                    gp[v],
                    pos[v]
                );
                if sm.normals().is_some() {
                    let e = (gn[v] - nrm[v]).length();
                    worst_normal = worst_normal.max(e);
                    assert!(
                        e < 1e-4,
                        "{reference} t={t} normal {v}: GPU {} CPU {}",
                        gn[v],
                        nrm[v]
                    );
                }
            }
        }
        eprintln!(
            "{reference}: GPU worst {worst_three:e} of size against three.js, {worst_cpu:e} \
             against the CPU, normals {worst_normal:e}"
        );
    }
}

/// Skinned and morphed: CesiumMan with the synthetic target of
/// `skelett-io/tests/morph_golden.rs`, on the GPU, against three.js r187
/// (`skelett-io/tests/reference/morph_skin`, made by `scripts/reference/three_morph_skin.mjs`).
#[test]
fn gpu_skinned_and_morphed_cesium_man_matches_three() {
    let Some(gpu) = gpu() else { return };
    let asset = skelett_io::load(data("gltf/CesiumMan.glb")).unwrap();
    let r = read_json(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../skelett-io/tests/reference/morph_skin/CesiumMan.morph_skin.json"),
    );
    let mesh = &asset.meshes[0];
    let mut prim = mesh.primitives[0].clone();
    let n = prim.vertex_count();
    let offset = |i: usize| Vec3::from(skelett_testdata::cesium_man_test_offset(i));
    prim.morph_targets = vec![skelett::MorphTarget {
        positions: Some((0..n).map(offset).collect()),
        normals: None,
        tangents: None,
    }];
    let skin_def = &asset.skins[mesh.skin];
    let sm = SkinningMesh::new(&prim, skin_def.len()).unwrap();
    let mut gs = GpuSkinner::new(&gpu, &sm).unwrap();
    let mut slot = vec![0usize; n];
    for (i, &v) in sm.source_vertices().iter().enumerate() {
        slot[v as usize] = i;
    }
    let clip = &asset.clips[r["clip"]["index"].as_u64().unwrap() as usize];
    let mut pose = Pose::rest(&asset.skeleton);
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    let mut palette = SkinPalette::new(SkinningMethod::Linear);
    let root = asset.skeleton.root_transform().as_dmat4();
    let vertices: Vec<usize> = r["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let mut worst = 0.0f64;
    for s in r["samples"].as_array().unwrap() {
        let t = s["t"].as_f64().unwrap() as f32;
        let w = s["w"].as_f64().unwrap() as f32;
        sample_uncached(clip, t, &mut pose).unwrap();
        local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
        palette.update(skin_def, &model).unwrap();
        gs.set_morph_weights(&gpu, &[w]).unwrap();
        let (gp, _) = gs.skin_and_read(&gpu, &palette).unwrap();
        let world = s["world"].as_array().unwrap();
        let size = world
            .iter()
            .map(|p| json_vec3(p).length())
            .fold(1e-9, f64::max);
        for (k, &v) in vertices.iter().enumerate() {
            let got = root.transform_point3(gp[slot[v]].as_dvec3());
            let err = (got - json_vec3(&world[k])).length() / size;
            worst = worst.max(err);
            assert!(
                err < 1e-5,
                "t={t} w={w} vertex {v}: GPU {got}, three.js {} (relative {err:e})",
                json_vec3(&world[k])
            );
        }
    }
    eprintln!("CesiumMan with a target on the GPU: worst {worst:e} of size against three.js");
    // Weights too short for the mesh's channels are refused.
    assert!(gs.set_morph_weights(&gpu, &[]).is_err());
}

/// Maya in-between shapes on the GPU (`skelett-io/tests/reference/maya_blend_inbetween`, its
/// README says where the files come from): the cube morphed and skinned by `GpuSkinner` at
/// the eight frames Maya exported, every vertex matching one of Maya's OBJ vertices within
/// 1e-5 of the mesh size, as the CPU does in `morph_golden.rs`.
#[test]
fn gpu_in_between_shapes_match_mayas_obj_export() {
    let Some(gpu) = gpu() else { return };
    use skelett_testdata::{maya_inbetween, obj_vertices};
    let asset = skelett_io::load(maya_inbetween("maya_blend_inbetween_7500_binary.fbx")).unwrap();
    let mesh = &asset.meshes[0];
    assert!(!mesh.morph_full_weights.is_empty());
    let prim = &mesh.primitives[0];
    let skin_def = &asset.skins[mesh.skin];
    let mut sm = SkinningMesh::new(prim, skin_def.len()).unwrap();
    sm.bind_morph(&mesh.morph_channels, &mesh.morph_full_weights)
        .unwrap();
    let mut gs = GpuSkinner::new(&gpu, &sm).unwrap();
    let clip = &asset.clips[0];
    let mut weights = vec![0.0; asset.skeleton.morph_channel_count()];
    let mut pose = Pose::rest(&asset.skeleton);
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    let mut palette = SkinPalette::new(SkinningMethod::Linear);
    let root = asset.skeleton.root_transform().as_dmat4();
    let mut worst = 0.0f64;
    for frame in [1, 30, 60, 65, 71, 80, 89, 120] {
        let obj: Vec<glam::DVec3> = obj_vertices(&maya_inbetween(&format!(
            "maya_blend_inbetween_{frame}.obj"
        )))
        .into_iter()
        .map(glam::DVec3::from_array)
        .collect();
        let size = obj.iter().map(|p| p.length()).fold(1e-9, f64::max);
        let t = frame as f32 / 24.0;
        skelett::sample_morph_weights(clip, t, &mut weights).unwrap();
        sample_uncached(clip, t, &mut pose).unwrap();
        local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
        palette.update(skin_def, &model).unwrap();
        gs.set_morph_weights(&gpu, &weights).unwrap();
        let (gp, _) = gs.skin_and_read(&gpu, &palette).unwrap();
        for (v, p) in gp.iter().enumerate() {
            let p = root.transform_point3(p.as_dvec3());
            let d = obj
                .iter()
                .map(|q| (p - *q).length())
                .fold(f64::INFINITY, f64::min);
            worst = worst.max(d / size);
            assert!(
                d < 1e-5 * size,
                "frame {frame}: GPU vertex {v} at {p} is {d} from Maya's"
            );
        }
    }
    eprintln!("Maya in-betweens on the GPU: worst {worst:e} of the mesh size");
}

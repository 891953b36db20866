//! FBX curves become keys that are exact where the file's keys are: at every key time of a
//! joint's translation, rotation or scale curves (rounded to f32, as key times are
//! everywhere), and at the f32 time just before it, that property of the joint's local
//! transform in the imported clip equals ufbx's own evaluation of the curves (pre/post
//! rotations, pivots and Euler orders included). The f32 just before a key is where a
//! constant (stepped) key shows: the clip must still hold the old value there, with no ramp.
//!
//! Between keys, cubic curves are resampled at the file's frame rate (reported as a warning);
//! those times are covered by the golden tests against Blender at the frames. So is a key of
//! one property that falls inside another property's cubic segment (the ozz files key every
//! 1/120 s at 30 fps): there the other property is resampled, not exact, and is not compared.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use skelett::{sample_uncached, JointIndex, Pose, Skeleton};

fn data(file: &str) -> PathBuf {
    common::data(&format!("fbx/{file}"))
}

/// The joint skelett makes of a ufbx node, by the importer's naming rule (`fbx` module docs):
/// a scale helper carries its node's file name, and a node whose scale helper is a joint is
/// `name<unscaled>`. Geometry helpers have no keys of their own.
fn joint_of(sk: &Skeleton, node: &ufbx::Node) -> Option<JointIndex> {
    if node.is_geometry_transform_helper {
        return None;
    }
    let mut base = node;
    while base.is_scale_helper {
        base = base.parent.as_deref()?;
    }
    let name: &str = base.element.name.as_ref();
    if !node.is_scale_helper && node.scale_helper.is_some() {
        if let Some(j) = sk.find(&format!("{name}{}", skelett_io::fbx::UNSCALED_SUFFIX)) {
            return Some(j);
        }
    }
    sk.find(name)
}

fn next_down(x: f32) -> f32 {
    if x > 0.0 {
        f32::from_bits(x.to_bits() - 1)
    } else if x == 0.0 {
        -f32::from_bits(1)
    } else {
        f32::from_bits(x.to_bits() + 1)
    }
}

/// Returns (comparisons made, comparisons just before a step: where ufbx's transform at the
/// key differs from the one an f32 earlier).
fn check(file: &str) -> (usize, usize) {
    check_bytes(file, &std::fs::read(data(file)).unwrap())
}

fn check_bytes(file: &str, bytes: &[u8]) -> (usize, usize) {
    let asset = skelett_io::fbx::from_bytes(bytes, &data(file)).unwrap();
    // The importer's own node handling, so that nodes and joints correspond.
    let scene = ufbx::load_memory(
        bytes,
        ufbx::LoadOpts {
            inherit_mode_handling: ufbx::InheritModeHandling::HelperNodes,
            geometry_transform_handling: ufbx::GeometryTransformHandling::HelperNodes,
            ..Default::default()
        },
    )
    .unwrap();
    let sk = &asset.skeleton;
    let size = sk
        .rest_pose()
        .iter()
        .map(|t| t.translation.length())
        .fold(1e-6f32, f32::max);
    let mut pose = Pose::rest(sk);
    let (mut compared, mut at_steps) = (0, 0);
    let (mut worst_t, mut worst_r, mut worst_s) = (0f32, 0f64, 0f32);
    for stack in scene.anim_stacks.iter() {
        let clip = asset
            .clip(&stack.element.name)
            .unwrap_or_else(|| panic!("{file}: no clip for stack {:?}", stack.element.name));
        // Each node's own key times per transform property (0 translation, 1 rotation,
        // 2 scale), and all of them.
        let mut own: HashMap<(u32, u8), Vec<f64>> = HashMap::new();
        for layer in stack.layers.iter() {
            for prop in layer.anim_props.iter() {
                let kind = match prop.prop_name.as_ref() {
                    "Lcl Translation" => 0,
                    "Lcl Rotation" => 1,
                    "Lcl Scaling" => 2,
                    _ => continue,
                };
                let times = own.entry((prop.element.element_id, kind)).or_default();
                for curve in prop.anim_value.curves.iter().flatten() {
                    times.extend(curve.keyframes.iter().map(|k| k.time));
                }
            }
        }
        let mut keys: Vec<f64> = own.values().flatten().copied().collect();
        keys.sort_by(f64::total_cmp);
        keys.dedup();
        for &t in &keys {
            let t32 = t as f32;
            for at in [t32, next_down(t32)] {
                sample_uncached(clip, at, &mut pose).unwrap();
                for node in scene.nodes.iter() {
                    let Some(j) = joint_of(sk, node) else {
                        continue;
                    };
                    // Only the properties keyed at `t` (another property's cubic segment
                    // may span it, resampled at the file's rate).
                    let keyed = |kind| {
                        own.get(&(node.element.element_id, kind))
                            .is_some_and(|times| times.contains(&t))
                    };
                    let (has_t, has_r, has_s) = (keyed(0), keyed(1), keyed(2));
                    if !(has_t || has_r || has_s) {
                        continue;
                    }
                    // At the key: the file's key time (skelett, like every importer, rounds
                    // key times to the nearest f32); just before: that f32 time, which lies
                    // before the key whichever way the key time rounded.
                    let when = if at == t32 { t } else { f64::from(at) };
                    let want = ufbx::evaluate_transform(&stack.anim, node, when);
                    let got = pose[j as usize];
                    let wt = glam::Vec3::new(
                        want.translation.x as f32,
                        want.translation.y as f32,
                        want.translation.z as f32,
                    );
                    // The angle between the rotations, from their chord in f64 (acos of a
                    // dot product in f32 cannot resolve angles below about 1e-3).
                    let wr = glam::DQuat::from_xyzw(
                        want.rotation.x,
                        want.rotation.y,
                        want.rotation.z,
                        want.rotation.w,
                    );
                    let gr = got.rotation.as_dquat();
                    let chord = (gr - wr).length().min((gr + wr).length());
                    let dr = if has_r {
                        4.0 * (chord / 2.0).asin()
                    } else {
                        0.0
                    };
                    let dt = if has_t {
                        (got.translation - wt).length() / size
                    } else {
                        0.0
                    };
                    let ws = glam::Vec3::new(
                        want.scale.x as f32,
                        want.scale.y as f32,
                        want.scale.z as f32,
                    );
                    let ds = if has_s {
                        (got.scale - ws).abs().max_element() / ws.abs().max_element().max(1e-6)
                    } else {
                        0.0
                    };
                    worst_t = worst_t.max(dt);
                    worst_r = worst_r.max(dr);
                    worst_s = worst_s.max(ds);
                    assert!(
                        dt < 1e-5 && dr < 1e-5 && ds < 1e-5,
                        "{file} {:?} t={at} ({}) {}: translation {} vs ufbx {wt} ({dt:e} of \
                         size), rotation off by {dr:e} rad, scale {} vs {ws}",
                        clip.name(),
                        if at == t32 {
                            "key"
                        } else {
                            "just before the key"
                        },
                        node.element.name,
                        got.translation,
                        got.scale
                    );
                    compared += 1;
                    if at != t32 {
                        let after = ufbx::evaluate_transform(&stack.anim, node, t);
                        let jump = (after.translation.x - want.translation.x).abs()
                            + (after.translation.y - want.translation.y).abs()
                            + (after.translation.z - want.translation.z).abs()
                            + (after.rotation.x - want.rotation.x).abs()
                            + (after.rotation.y - want.rotation.y).abs()
                            + (after.rotation.z - want.rotation.z).abs();
                        at_steps += usize::from(jump > 1e-3);
                    }
                }
            }
        }
    }
    eprintln!(
        "{file}: {compared} joint transforms compared, {at_steps} just before a step; worst \
         translation {worst_t:e} of size, rotation {worst_r:e} rad, scale {worst_s:e}"
    );
    (compared, at_steps)
}

/// Keys of a rig with scale helpers (Maya's segment scale compensation with animated scale,
/// see `common::maya_ssc`): translation and rotation on `name<unscaled>`, scale on the
/// helper that carries the file's name.
#[test]
fn segment_scale_compensation_keys() {
    let text = common::maya_ssc(common::SscEdits::default());
    let (compared, _) = check_bytes("ssc.fbx", text.as_bytes());
    assert!(compared > 0);
}

#[test]
fn maya_cubic_keys_and_holds() {
    // Its constant keys hold their value (no jump); its cubic keys are exact at the keys.
    let (compared, _) = check("maya_game_sausage_7500_binary_wiggle.fbx");
    assert!(compared > 0);
}

#[test]
fn every_fbx_file_keys() {
    let dir = data("");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".fbx"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 9, "{files:?}");
    for f in &files {
        let (compared, _) = check_bytes(f, &std::fs::read(data(f)).unwrap());
        assert!(compared > 0, "{f}: nothing compared");
    }
}

/// No file of the data set steps a transform (ozz_robot's stepped curves are custom
/// properties), so the Maya file is turned into one: its cubic rotation keys made constant
/// (FBX key flags 24840, cubic with auto tangents, become 2, constant).
#[test]
fn stepped_rotations_jump_between_adjacent_f32_times() {
    let file = "maya_game_sausage_7500_ascii_wiggle.fbx";
    let text = std::fs::read_to_string(data(file)).unwrap();
    assert!(text.contains("a: 24840"));
    let stepped = text.replace("a: 24840", "a: 2");
    let (compared, at_steps) = check_bytes(file, stepped.as_bytes());
    assert!(compared > 0);
    assert!(at_steps > 0, "no step was exercised");
    // Holds and steps only: the channels are STEP channels, one key per change.
    let asset = skelett_io::fbx::from_bytes(stepped.as_bytes(), &data(file)).unwrap();
    let counts = asset.clips[0].counts();
    assert!(counts.tracks[0] > 0, "no STEP channel: {counts:?}");
    assert_eq!(counts.tracks[1] + counts.tracks[2], 0, "{counts:?}");
}

#[test]
fn linear_blender_keys() {
    for f in ["blender_279_sausage_7400_binary.fbx", "huesitos.fbx"] {
        assert!(check(f).0 > 0, "{f}: nothing compared");
    }
}

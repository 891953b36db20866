//! Clip frame rates (issue 19, closed cycles): what each format says (BVH's `Frame Time`,
//! FBX's `TimeMode`, RAA's `fps`) or, where it says nothing (glTF, `.x`), what the key times
//! show; kept through `.skl` and `.glb`; and closed loops that interpolate from the last
//! key back to the first over one frame.

mod common;

use std::path::Path;

use skelett::{sample_uncached, Transform};

#[test]
fn rates_come_from_the_files() {
    // 01_01.bvh: "Frame Time: 0.0083333" is 120 fps.
    let bvh = skelett_io::load(common::data("bvh/01_01.bvh")).unwrap();
    assert_eq!(bvh.clips[0].frame_rate(), Some(120.0));
    // The Maya file's Properties70 has TimeMode 11: FBX's eFrames24.
    let fbx =
        skelett_io::load(common::data("fbx/maya_game_sausage_7500_ascii_wiggle.fbx")).unwrap();
    assert_eq!(fbx.clips[0].frame_rate(), Some(24.0));
    // An RAA says its rate.
    let ram = "joints 1\n0 \"Root\"\n parent -1\n orientation 0 0 0 1\n translation 0 0 0\n rotation 0 0 0 1\n";
    let raa = "fps 25\ntracks 1\ntrack 0 0 \"Root\" 2\n0 0 0 0 0 1\n1 10 0 0.3826834 0 0.9238795\n";
    let rite = skelett_io::rite::from_str(ram, Path::new("a.ram"), Some((raa, Path::new("a.raa"))))
        .unwrap();
    assert_eq!(rite.clips[0].frame_rate(), Some(25.0));
    // NTSC's 29.97 is not snapped to 30 (0.0083333 is snapped to 120, above).
    let ntsc = "HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 3 Zrotation Xrotation Yrotation\n End Site\n {\n  OFFSET 0 1 0\n }\n}\nMOTION\nFrames: 2\nFrame Time: 0.0333667\n0 0 0\n0 90 0\n";
    let ntsc = skelett_io::bvh::from_bytes(ntsc.as_bytes(), Path::new("ntsc.bvh")).unwrap();
    let rate = ntsc.clips[0].frame_rate().unwrap();
    assert!((rate - 29.97).abs() < 0.001, "{rate}");
}

/// glTF stores no rate: the inferred one is the lowest common rate on whose frames every key
/// time falls (checked here from the keys themselves), and a `.glb` skelett writes keeps the
/// rate it had.
#[test]
fn gltf_rates_are_what_the_keys_show_and_survive_export() {
    let fox = skelett_io::load(common::data("gltf/Fox.glb")).unwrap();
    for clip in &fox.clips {
        let on_grid = |r: f32| {
            let mut i = 0;
            let mut all = true;
            while let Some(ch) = clip.channel(i) {
                all &= ch.times.iter().all(|&t| {
                    let f = f64::from(t - clip.start()) * f64::from(r);
                    (f - f.round()).abs() < 0.01
                });
                i += 1;
            }
            all
        };
        let lowest = skelett_io::COMMON_FRAME_RATES
            .into_iter()
            .find(|&r| on_grid(r));
        assert_eq!(clip.frame_rate(), lowest, "{}", clip.name());
    }
    let mut bvh = skelett_io::load(common::data("bvh/01_01.bvh")).unwrap();
    bvh.clips.truncate(1);
    let dir = std::env::temp_dir().join(format!("skelett-rate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("rate.glb");
    skelett_io::gltf::save(&bvh, &out).unwrap();
    let back = skelett_io::load(&out).unwrap();
    assert_eq!(back.clips[0].frame_rate(), Some(120.0));
    std::fs::remove_dir_all(&dir).ok();
}

/// A closed loop of a real clip: the same poses up to the clip's end, the first frame's pose
/// one frame later, and in between the interpolation from the last key to the first.
#[test]
fn closed_loops_return_to_the_first_frame_over_one_frame() {
    let bvh = skelett_io::load(common::data("bvh/01_01.bvh")).unwrap();
    let sk = &bvh.skeleton;
    let clip = &bvh.clips[0];
    let closed = clip.closed_loop(sk).unwrap();
    let frame = 1.0 / 120.0;
    assert!((closed.duration() - clip.duration() - frame).abs() < 1e-5);
    assert_eq!(closed.frame_rate(), Some(120.0));
    let pose = |c: &skelett::Clip, t: f32| {
        let mut p = vec![Transform::IDENTITY; sk.len()];
        sample_uncached(c, t, &mut p).unwrap();
        p
    };
    let close = |a: &[Transform], b: &[Transform]| {
        a.iter().zip(b).all(|(x, y)| {
            x.translation.abs_diff_eq(y.translation, 1e-3)
                && x.rotation.dot(y.rotation).abs() > 1.0 - 1e-5
        })
    };
    for k in 0..10 {
        let t = clip.start() + clip.duration() * k as f32 / 9.0;
        assert!(close(&pose(clip, t), &pose(&closed, t)), "at {t}");
    }
    let first = pose(clip, clip.start());
    let last = pose(clip, clip.end());
    assert!(
        !close(&first, &last),
        "this capture does not end where it starts"
    );
    assert!(close(&pose(&closed, closed.end()), &first));
    // Half a frame on (f32 times near 23 s are 2e-6 s apart, and the root moves 56 units
    // over this frame: 0.02 units of slack).
    let mid = pose(&closed, clip.end() + frame / 2.0);
    for ((m, a), b) in mid.iter().zip(&last).zip(&first) {
        assert!(
            m.translation
                .abs_diff_eq(a.translation.lerp(b.translation, 0.5), 0.02),
            "{m:?} {a:?} {b:?}"
        );
        assert!(m.rotation.dot(a.rotation.slerp(b.rotation, 0.5)).abs() > 1.0 - 1e-4);
    }
    // A pose (no tracks) has nothing to close.
    let pose_only = skelett::RawClip {
        name: "pose".into(),
        start: 0.0,
        duration: 0.0,
        channels: vec![],
    }
    .build(sk)
    .unwrap();
    assert_eq!(pose_only.closed_loop(sk).unwrap().duration(), 0.0);
    // Another skeleton's clip is refused.
    let fox = skelett_io::load(common::data("gltf/Fox.glb")).unwrap();
    assert!(clip.closed_loop(&fox.skeleton).is_err());
}

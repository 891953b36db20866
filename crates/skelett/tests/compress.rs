//! Compression on random hierarchies with random motion: the error, re-measured here
//! independently (model space composed in f64, eight points per frame interval), never
//! exceeds the budget; and the compact clip behaves like any clip (single-joint sampling,
//! decompression, scaling, additive, the animator, bad options).

use glam::{DMat4, DVec3, EulerRot, Quat, Vec3};
use proptest::prelude::*;
use skelett::animator::{Animator, PlayOptions};
use skelett::compress::{compress, CompressOptions};
use skelett::*;

/// A random motion: per joint, which channels move and how fast.
#[derive(Clone, Debug)]
struct Rig {
    parents: Vec<usize>,
    offsets: Vec<[f32; 3]>,
    speeds: Vec<[f32; 3]>,
    moves: Vec<(bool, bool, bool, bool)>, // rotation, translation, scale, step
}

fn rig() -> impl Strategy<Value = Rig> {
    (1usize..9).prop_flat_map(|n| {
        (
            proptest::collection::vec(0.0f32..1.0, n),
            proptest::collection::vec(prop::array::uniform3(-30.0f32..30.0), n),
            proptest::collection::vec(prop::array::uniform3(-4.0f32..4.0), n),
            proptest::collection::vec(
                (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
                n,
            ),
        )
            .prop_map(move |(p, offsets, speeds, moves)| Rig {
                parents: (0..n).map(|j| (p[j] * j as f32) as usize).collect(),
                offsets,
                speeds,
                moves,
            })
    })
}

fn build(rig: &Rig, frames: usize, fps: f32) -> (Skeleton, Clip) {
    build_at(rig, frames, fps, 0.0)
}

fn build_at(rig: &Rig, frames: usize, fps: f32, start: f32) -> (Skeleton, Clip) {
    let n = rig.parents.len();
    let skeleton = RawSkeleton {
        joints: (0..n)
            .map(|j| RawJoint {
                name: format!("j{j}"),
                parent: (j > 0).then_some(rig.parents[j]),
                rest: Transform::new(Vec3::from(rig.offsets[j]), Quat::IDENTITY, Vec3::ONE),
            })
            .collect(),
        ..Default::default()
    }
    .build()
    .unwrap();
    let times: Vec<f32> = (0..frames).map(|f| start + f as f32 / fps).collect();
    let mut channels = Vec::new();
    for j in 0..n {
        let s = rig.speeds[j];
        let (rot, trans, scale, step) = rig.moves[j];
        let interpolation = if step {
            Interpolation::Step
        } else {
            Interpolation::Linear
        };
        let ch = |target, values| RawChannel {
            joint: format!("j{j}"),
            target,
            interpolation,
            times: times.clone(),
            values,
        };
        if rot || j == 0 {
            channels.push(ch(
                Target::Rotation,
                RawValues::Quat(
                    times
                        .iter()
                        .map(|t| {
                            Quat::from_euler(
                                EulerRot::YXZ,
                                (t * s[0]).sin() * 2.0,
                                (t * s[1]).cos(),
                                t * s[2] * 0.3,
                            )
                        })
                        .collect(),
                ),
            ));
        }
        if trans {
            let o = Vec3::from(rig.offsets[j]);
            channels.push(ch(
                Target::Translation,
                RawValues::Vec3(
                    times
                        .iter()
                        .map(|t| o + Vec3::new((t * s[1]).sin(), (t * s[2]).cos(), t * 0.5) * 4.0)
                        .collect(),
                ),
            ));
        }
        if scale {
            channels.push(ch(
                Target::Scale,
                RawValues::Vec3(
                    times
                        .iter()
                        .map(|t| Vec3::splat(1.0 + 0.2 * (t * s[0]).sin()))
                        .collect(),
                ),
            ));
        }
    }
    let mut raw = RawClip {
        name: "random".into(),
        channels,
        ..Default::default()
    };
    raw.fit_range_to_keys();
    (skeleton.clone(), raw.build(&skeleton).unwrap())
}

fn model(skeleton: &Skeleton, pose: &[Transform]) -> Vec<DMat4> {
    let mut out: Vec<DMat4> = Vec::with_capacity(pose.len());
    for (j, t) in pose.iter().enumerate() {
        let local = DMat4::from_scale_rotation_translation(
            t.scale.as_dvec3(),
            t.rotation.as_dquat().normalize(),
            t.translation.as_dvec3(),
        );
        out.push(match skeleton.parent(j as u16) {
            Some(p) => out[p as usize] * local,
            None => local,
        });
    }
    out
}

/// The largest virtual-vertex distance over `times`, in skeleton units.
fn error(skeleton: &Skeleton, raw: &Clip, compact: &Clip, shell: f64, times: &[f32]) -> f64 {
    let (mut a, mut b) = (Pose::rest(skeleton), Pose::rest(skeleton));
    let mut cache = SamplingCache::for_clip(compact);
    let mut worst = 0.0f64;
    for &t in times {
        sample_uncached(raw, t, &mut a).unwrap();
        sample(compact, t, &mut cache, &mut b).unwrap();
        let (ma, mb) = (model(skeleton, &a), model(skeleton, &b));
        for j in 0..skeleton.len() {
            for axis in [DVec3::X, DVec3::Y, DVec3::Z] {
                let d = (ma[j].transform_point3(axis * shell)
                    - mb[j].transform_point3(axis * shell))
                .length();
                worst = worst.max(d);
            }
        }
    }
    worst
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn the_budget_holds_on_random_hierarchies(
        rig in rig(),
        frames in 2usize..200,
        fps in prop_oneof![Just(24.0f32), Just(30.0), Just(60.0)],
        start in prop_oneof![Just(0.0f32), -3.0f32..3.0],
        error_cm in prop_oneof![Just(0.01f32), Just(0.05), Just(0.5)],
    ) {
        let (skeleton, clip) = build_at(&rig, frames, fps, start);
        let opts = CompressOptions { error_cm, cm_per_unit: Some(1.0), ..Default::default() };
        let (c, report) = compress(&skeleton, &clip, &opts).unwrap();
        prop_assert!(report.max_error_cm <= error_cm, "{report:?}");
        // Eleven points per frame, offset: never the compressor's own check times.
        let times: Vec<f32> = (0..=(frames.max(2) - 1) * 11)
            .map(|i| clip.start() + (i as f32 + 0.37) / (11.0 * fps))
            .filter(|&t| t <= clip.end())
            .collect();
        let e = error(&skeleton, &clip, &c, 3.0, &times);
        prop_assert!(e <= f64::from(error_cm), "measured {e} > {error_cm} ({report:?})");
        // One joint alone, as root motion reads it: what the whole pose has.
        let mut pose = Pose::rest(&skeleton);
        let t = clip.start() + clip.duration() * 0.37;
        sample_uncached(&c, t, &mut pose).unwrap();
        for j in 0..skeleton.len() as u16 {
            prop_assert_eq!(sample_joint(&c, j, t), pose[j as usize]);
        }
        // Its keys as a clip: the same samples (slerp/nlerp aside), away from frame times
        // (where a compact STEP key switches at its frame's f32 time rounded either way).
        let keyed = c.decompressed();
        prop_assert!(!keyed.is_compact());
        let mut k = Pose::rest(&skeleton);
        for i in 0..20 {
            let t = clip.start() + clip.duration() * (i as f32 + 0.37) / 20.0;
            sample_uncached(&c, t, &mut pose).unwrap();
            sample_uncached(&keyed, t, &mut k).unwrap();
            for (x, y) in pose.iter().zip(k.iter()) {
                prop_assert!((x.translation - y.translation).length() < 1e-3, "t={t}");
                prop_assert!(x.rotation.dot(y.rotation).abs() > 1.0 - 1e-5, "t={t}");
            }
        }
    }
}

/// Compresses with the defaults, one skeleton unit taken as a centimetre.
fn compress_cm(skeleton: &Skeleton, clip: &Clip) -> Clip {
    let opts = CompressOptions {
        cm_per_unit: Some(1.0),
        ..Default::default()
    };
    compress(skeleton, clip, &opts).unwrap().0
}

#[test]
fn compact_clips_scale_and_become_additive_like_clips() {
    let rig = Rig {
        parents: vec![0, 0, 1],
        offsets: vec![[0.0, 10.0, 0.0], [0.0, 20.0, 0.0], [5.0, 0.0, 0.0]],
        speeds: vec![[1.0, 2.0, 3.0]; 3],
        moves: vec![(true, true, false, false); 3],
    };
    let (skeleton, clip) = build(&rig, 60, 30.0);
    let c = compress_cm(&skeleton, &clip);
    let doubled = c.scaled(2.0);
    assert!(doubled.is_compact());
    let (mut a, mut b) = (Pose::rest(&skeleton), Pose::rest(&skeleton));
    for i in 0..=30 {
        let t = i as f32 / 15.0;
        sample_uncached(&c, t, &mut a).unwrap();
        sample_uncached(&doubled, t, &mut b).unwrap();
        for (x, y) in a.iter().zip(b.iter()) {
            assert!(
                (x.translation * 2.0 - y.translation).length() < 1e-4,
                "t={t}"
            );
            assert_eq!(x.rotation, y.rotation);
        }
    }
    let additive = c.to_additive_from_first_frame();
    sample_uncached(&additive, 0.0, &mut a).unwrap();
    for x in a.iter() {
        // Components, not `angle_between`: the decoder's normalisation (a reciprocal square
        // root estimate, whose bits differ between Intel and AMD) leaves |q| within 5e-7 of
        // 1, and acos of 1 - 2e-7 is already 6e-4 rad.
        let q = glam::Vec4::from(x.rotation);
        assert!(
            x.translation.length() < 1e-4 && (q - glam::Vec4::W).length() < 1e-5,
            "{x:?}"
        );
    }
}

#[test]
fn the_animator_plays_compact_clips_with_their_events() {
    let rig = Rig {
        parents: vec![0, 0],
        offsets: vec![[0.0, 10.0, 0.0], [0.0, 20.0, 0.0]],
        speeds: vec![[1.0, 2.0, 3.0]; 2],
        moves: vec![(true, false, false, false); 2],
    };
    let (skeleton, clip) = build(&rig, 31, 30.0);
    let clip = clip
        .with_events(vec![ClipEvent {
            time: 0.5,
            name: "step".into(),
            payload: None,
        }])
        .unwrap();
    let c = compress_cm(&skeleton, &clip);
    assert_eq!(c.events(), clip.events());
    let mut animator = Animator::new(std::sync::Arc::new(skeleton.clone()));
    animator
        .play(0, std::sync::Arc::new(c), PlayOptions::default())
        .unwrap();
    let mut fired = 0;
    for _ in 0..90 {
        fired += animator.update(1.0 / 60.0).events.len();
    }
    assert_eq!(
        fired, 2,
        "a 1 s loop played for 1.5 s crosses its event twice"
    );
}

#[test]
fn bad_options_are_errors() {
    let rig = Rig {
        parents: vec![0, 0],
        offsets: vec![[0.0; 3]; 2],
        speeds: vec![[1.0; 3]; 2],
        moves: vec![(true, false, false, false); 2],
    };
    let (skeleton, clip) = build(&rig, 10, 30.0);
    for opts in [
        CompressOptions {
            error_cm: 0.0,
            ..Default::default()
        },
        CompressOptions {
            error_cm: f32::NAN,
            ..Default::default()
        },
        CompressOptions {
            shell_cm: -3.0,
            ..Default::default()
        },
        CompressOptions {
            cm_per_unit: Some(0.0),
            ..Default::default()
        },
        CompressOptions {
            sample_rate: Some(f32::INFINITY),
            ..Default::default()
        },
    ] {
        assert!(compress(&skeleton, &clip, &opts).is_err(), "{opts:?}");
    }
    let other = RawSkeleton {
        joints: vec![RawJoint {
            name: "x".into(),
            parent: None,
            rest: Transform::IDENTITY,
        }],
        ..Default::default()
    }
    .build()
    .unwrap();
    assert!(matches!(
        compress(&other, &clip, &CompressOptions::default()),
        Err(Error::SkeletonMismatch { .. })
    ));
}

/// A grid whose last segment is the clip's end alone, after a shorter last interval (frames
/// one more than a multiple of the segment length, the last span below a frame): cached and
/// uncached sampling (and one joint alone) agree there, STEP channels included.
#[test]
fn the_clip_end_after_a_short_last_interval() {
    let rig = Rig {
        parents: vec![0, 0, 1],
        offsets: vec![[0.0, 10.0, 0.0], [0.0, 20.0, 0.0], [5.0, 0.0, 0.0]],
        speeds: vec![[1.0, 2.0, 3.0], [2.0, 1.0, 0.5], [3.0, 0.2, 1.0]],
        moves: vec![
            (true, true, false, false),
            (true, true, false, true),
            (true, false, true, true),
        ],
    };
    let (skeleton, clip) = build(&rig, 40, 30.0);
    // 31.5 frames long at 30 fps: 33 grid frames, the last 0.5 of a frame after the one before.
    let raw_end = 31.5 / 30.0;
    let clip = {
        let mut parts = clip.to_parts();
        parts.duration = raw_end;
        Clip::from_parts(parts).unwrap()
    };
    let (c, report) = compress(
        &skeleton,
        &clip,
        &CompressOptions {
            cm_per_unit: Some(1.0),
            sample_rate: Some(30.0),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(report.samples, 33);
    let mut cache = SamplingCache::for_clip(&c);
    let (mut a, mut b) = (Pose::rest(&skeleton), Pose::rest(&skeleton));
    for t in [
        c.end(),
        c.end() - 0.001,
        c.end() - 0.5 / 30.0,
        c.end() + 1.0,
        1.0 / 30.0,
    ] {
        sample(&c, t, &mut cache, &mut a).unwrap();
        sample_uncached(&c, t, &mut b).unwrap();
        assert_eq!(*a, *b, "t={t}");
        for j in 0..skeleton.len() as u16 {
            assert_eq!(sample_joint(&c, j, t), b[j as usize], "t={t} joint {j}");
        }
    }
}

/// A joint spinning 100 degrees a frame: compact key pairs two frames apart are 200 degrees
/// apart and slerped the long way, as the source goes; its decompressed keys (and so a glb
/// export) follow the same path rather than the short way back.
#[test]
fn decompressing_keeps_long_way_rotations() {
    let skeleton = RawSkeleton {
        joints: vec![RawJoint {
            name: "wheel".into(),
            parent: None,
            rest: Transform::IDENTITY,
        }],
        ..Default::default()
    }
    .build()
    .unwrap();
    let times: Vec<f32> = (0..30).map(|f| f as f32 / 30.0).collect();
    let spin: Vec<Quat> = (0..30)
        .map(|f| Quat::from_rotation_y((f as f32 * 100.0).to_radians()))
        .collect();
    let clip = RawClip {
        name: "spin".into(),
        start: 0.0,
        duration: 29.0 / 30.0,
        channels: vec![RawChannel {
            joint: "wheel".into(),
            target: Target::Rotation,
            interpolation: Interpolation::Linear,
            times,
            values: RawValues::Quat(spin),
        }],
    }
    .build(&skeleton)
    .unwrap();
    // A loose budget, so that keys are dropped between far-apart pairs.
    let (c, _) = compress(
        &skeleton,
        &clip,
        &CompressOptions {
            error_cm: 5.0,
            cm_per_unit: Some(1.0),
            ..Default::default()
        },
    )
    .unwrap();
    let keyed = c.decompressed();
    let (mut a, mut b, mut r) = (
        Pose::rest(&skeleton),
        Pose::rest(&skeleton),
        Pose::rest(&skeleton),
    );
    for i in 0..200 {
        let t = c.duration() * (i as f32 + 0.5) / 200.0;
        sample_uncached(&c, t, &mut a).unwrap();
        sample_uncached(&keyed, t, &mut b).unwrap();
        sample_uncached(&clip, t, &mut r).unwrap();
        let (qa, qb, qr) = (a[0].rotation, b[0].rotation, r[0].rotation);
        assert!(
            qa.dot(qb).abs() > 0.999,
            "t={t}: compact {qa} decompressed {qb}"
        );
        // And both near the source (within the loose budget's angle at 3 cm: about 1.7 rad).
        assert!(qa.dot(qr).abs() > 0.5, "t={t}: compact {qa} source {qr}");
    }
}

//! The animator's rules: events, blending, transitions, sync, root motion; on synthetic clips
//! (where the truth is known in closed form) and on real ones from `../shared/data`.

use skelett_testdata::data;
use std::sync::Arc;

use glam::{Quat, Vec3};
use proptest::prelude::*;
use skelett::animator::*;
use skelett::*;

fn one_joint() -> Arc<Skeleton> {
    Arc::new(
        RawSkeleton {
            joints: vec![RawJoint {
                name: "root".into(),
                parent: None,
                rest: Transform::IDENTITY,
            }],
            ..Default::default()
        }
        .build()
        .unwrap(),
    )
}

/// A clip moving the root along x from `x0` to `x1` over `duration`, with events.
fn slide(s: &Skeleton, duration: f32, x0: f32, x1: f32, events: &[f32]) -> Arc<Clip> {
    let clip = RawClip {
        name: format!("slide{x0}-{x1}"),
        start: 0.0,
        duration,
        channels: vec![RawChannel {
            joint: "root".into(),
            target: Target::Translation,
            interpolation: Interpolation::Linear,
            times: vec![0.0, duration],
            values: RawValues::Vec3(vec![Vec3::X * x0, Vec3::X * x1]),
        }],
    }
    .build(s)
    .unwrap();
    Arc::new(
        clip.with_events(
            events
                .iter()
                .enumerate()
                .map(|(i, &t)| ClipEvent {
                    time: t,
                    name: format!("e{i}"),
                    payload: None,
                })
                .collect(),
        )
        .unwrap(),
    )
}

fn all_events() -> EventPolicy {
    EventPolicy {
        min_weight: 0.0,
        sync_leader_only: false,
    }
}

#[derive(Clone, Debug)]
enum Step {
    Advance(f32),
    Seek(f32),
}

/// How many unwrapped positions in the travel from `a` to `b` map to clip time `e`: the
/// closed-form count of crossings (an independent oracle for the animator's enumeration).
fn crossings(wrap: Wrap, d: f64, e: f64, a: f64, b: f64, include_start: bool) -> usize {
    let (lo, hi) = if b >= a { (a, b) } else { (b, a) };
    let forward = b >= a;
    // Count k with lo < e + k p <= hi (forward) or lo <= e + k p < hi (backward).
    let count = |base: f64, p: f64| -> i64 {
        let c = if forward {
            ((hi - base) / p).floor() - ((lo - base) / p).floor()
        } else {
            ((hi - base) / p).ceil() - ((lo - base) / p).ceil()
        };
        let at_start = include_start && ((a - base) / p).fract() == 0.0 && a != b;
        c as i64 + i64::from(at_start)
    };
    match wrap {
        Wrap::Once => {
            let inside = if forward {
                e > lo && e <= hi
            } else {
                e >= lo && e < hi
            };
            usize::from(inside || (include_start && e == a && a != b))
        }
        Wrap::Loop => count(e, d).max(0) as usize,
        Wrap::PingPong => {
            let mut n = count(e, 2.0 * d);
            if e > 0.0 && e < d {
                n += count(2.0 * d - e, 2.0 * d);
            }
            n.max(0) as usize
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Events fired equal the crossings of the continuous time line, whatever the steps,
    /// speed, wrap mode and seeks; in order within each update.
    #[test]
    fn events_are_exactly_the_crossings(
        // Steps, seeks, speeds and event times on a grid of binary fractions as well as off it,
        // so that updates often start and end exactly on events and clip ends.
        steps in proptest::collection::vec(prop_oneof![
            3 => (0u32..80).prop_map(|k| Step::Advance(k as f32 / 32.0)),
            2 => (0.0f32..2.5).prop_map(Step::Advance),
            1 => (0u32..=16).prop_map(|k| Step::Seek(k as f32 / 16.0)),
            1 => (0.0f32..1.0).prop_map(Step::Seek),
        ], 1..40),
        speed in prop_oneof![Just(1.0f32), Just(-1.0), Just(2.0), Just(-0.5), -3.0f32..3.0],
        wrap in prop_oneof![Just(Wrap::Loop), Just(Wrap::Once), Just(Wrap::PingPong)],
        event_times in proptest::collection::vec(prop_oneof![(0u32..=8).prop_map(|k| k as f32 / 8.0), 0.0f32..=1.0], 1..4),
    ) {
        let s = one_joint();
        let d = 1.0f32;
        let times: Vec<f32> = event_times.clone();
        let clip = slide(&s, d, 0.0, 1.0, &times);
        let mut anim = Animator::new(s);
        anim.set_event_policy(all_events());
        anim.play(0, clip.clone(), PlayOptions { speed, wrap, ..Default::default() }).unwrap();
        let mut pos = 0.0f64;
        let mut fresh = true;
        for step in &steps {
            match *step {
                Step::Seek(n) => {
                    anim.seek_normalized(0, n, false).unwrap();
                    let player_pos = anim.players(0)[0].0.position();
                    pos = player_pos;
                    fresh = true;
                }
                Step::Advance(dt) => {
                    let r = anim.update(dt);
                    let mut b = pos + dt as f64 * speed as f64;
                    if wrap == Wrap::Once {
                        b = b.clamp(0.0, d as f64);
                    }
                    for (i, e) in clip.events().iter().enumerate() {
                        let want = crossings(wrap, d as f64, e.time as f64, pos, b, fresh);
                        let got = r.events.iter().filter(|f| f.index == i).count();
                        prop_assert_eq!(got, want, "event {} at {} step {:?} from {} to {}", i, e.time, step, pos, b);
                    }
                    prop_assert!(r.events.windows(2).all(|w| w[0].at <= w[1].at));
                    if pos != b {
                        fresh = false;
                    }
                    pos = b;
                }
            }
        }
    }

    /// apply(make_additive(A, ref), ref) reproduces A.
    #[test]
    fn additive_identity(
        a in proptest::collection::vec((prop::array::uniform3(-2.0f32..2.0), prop::array::uniform3(-3.0f32..3.0), prop::array::uniform3(0.5f32..2.0)), 1..6),
        r in proptest::collection::vec((prop::array::uniform3(-2.0f32..2.0), prop::array::uniform3(-3.0f32..3.0), prop::array::uniform3(0.5f32..2.0)), 6),
    ) {
        let tf = |(t, e, s): &([f32; 3], [f32; 3], [f32; 3])| Transform::new(Vec3::from(*t), Quat::from_euler(glam::EulerRot::XYZ, e[0], e[1], e[2]), Vec3::from(*s));
        let a: Vec<Transform> = a.iter().map(tf).collect();
        let reference: Vec<Transform> = r.iter().take(a.len()).map(tf).collect();
        let mut delta = vec![Transform::IDENTITY; a.len()];
        make_additive(&a, &reference, &mut delta).unwrap();
        let mut out = reference.clone();
        apply_additive(&mut out, &delta, 1.0, None).unwrap();
        for (o, x) in out.iter().zip(&a) {
            prop_assert!((o.translation - x.translation).length() < 1e-4);
            prop_assert!(o.rotation.dot(x.rotation).abs() > 1.0 - 1e-5);
            prop_assert!((o.scale - x.scale).length() < 1e-4);
        }
        // Weight -1 undoes weight 1.
        apply_additive(&mut out, &delta, -1.0, None).unwrap();
        for (o, x) in out.iter().zip(&reference) {
            prop_assert!((o.translation - x.translation).length() < 1e-4);
            prop_assert!(o.rotation.dot(x.rotation).abs() > 1.0 - 1e-5);
            prop_assert!((o.scale - x.scale).length() < 1e-3);
        }
    }

    /// Blends stay within their inputs; masks of 0 leave the base untouched; all-zero weights
    /// give the rest pose.
    #[test]
    fn blend_bounds_masks_and_zero_weights(
        w in proptest::collection::vec(0.0f32..1.0, 3),
        m in proptest::collection::vec(0.0f32..1.0, 3),
        xs in proptest::collection::vec(-5.0f32..5.0, 3),
    ) {
        let poses: Vec<Vec<Transform>> = xs.iter().map(|&x| vec![Transform::new(Vec3::X * x, Quat::from_rotation_y(x * 0.3), Vec3::ONE); 3]).collect();
        let rest = vec![Transform::new(Vec3::Y, Quat::IDENTITY, Vec3::ONE); 3];
        let inputs: Vec<BlendInput> = poses.iter().zip(&w).map(|(p, &w)| BlendInput { pose: p, weight: w, mask: Some(&m) }).collect();
        let mut out = vec![Transform::IDENTITY; 3];
        blend(&inputs, &rest, &mut out).unwrap();
        let (lo, hi) = xs.iter().fold((f32::MAX, f32::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        for (j, o) in out.iter().enumerate() {
            if w.iter().all(|&w| w * m[j] <= 0.0) {
                prop_assert_eq!(*o, rest[j]);
            } else {
                prop_assert!(o.translation.x >= lo - 1e-4 && o.translation.x <= hi + 1e-4);
            }
        }
        let zero = vec![BlendInput { pose: &poses[0], weight: 0.0, mask: None }];
        blend(&zero, &rest, &mut out).unwrap();
        prop_assert_eq!(&out, &rest);

        let mut base = rest.clone();
        let mask = [0.0, m[1], 1.0];
        blend_override(&mut base, &poses[0], 1.0, Some(&mask)).unwrap();
        prop_assert_eq!(base[0], rest[0]);
        prop_assert_eq!(base[2], poses[0][2]);
    }

    /// A cross-fade (interrupted or not) never leaves the span of its endpoints, and never
    /// jumps.
    #[test]
    fn crossfades_stay_between_endpoints(d1 in 0.05f32..1.0, d2 in 0.05f32..1.0, interrupt in 0usize..30, dt in 0.005f32..0.05) {
        let s = one_joint();
        let a = slide(&s, 1.0, 0.0, 0.0, &[]); // constant x = 0
        let b = slide(&s, 1.0, 1.0, 1.0, &[]); // constant x = 1
        let mut anim = Animator::new(s);
        anim.play(0, a.clone(), PlayOptions::default()).unwrap();
        anim.update(dt);
        anim.crossfade(0, b, d1, Curve::SmoothStep, PlayOptions::default()).unwrap();
        let mut last = anim.pose()[0].translation.x;
        for i in 0..60 {
            if i == interrupt {
                anim.crossfade(0, a.clone(), d2, Curve::Linear, PlayOptions::default()).unwrap();
            }
            anim.update(dt);
            let x = anim.pose()[0].translation.x;
            prop_assert!((-1e-6..=1.0 + 1e-6).contains(&x), "{x}");
            // Weights move at most dt/duration (times the curve's peak slope, 1.5) per update.
            prop_assert!((x - last).abs() <= 1.5 * dt / d1.min(d2) + 1e-4, "jump {last} -> {x}");
            last = x;
        }
    }
}

#[test]
fn several_loops_in_one_step_fire_several_times_and_backwards_fires_too() {
    let s = one_joint();
    let clip = slide(&s, 1.0, 0.0, 1.0, &[0.25]);
    let mut anim = Animator::new(s);
    anim.set_event_policy(all_events());
    anim.play(0, clip.clone(), PlayOptions::default()).unwrap();
    assert_eq!(anim.update(3.5).events.len(), 4); // 0.25, 1.25, 2.25, 3.25
    anim.set_speed(0, -1.0).unwrap();
    let r = anim.update(0.5); // 3.5 -> 3.0 crosses 3.25 backwards
    assert_eq!(r.events.len(), 1);
    assert!(r.events[0].backward);
    // A seek jumps without firing, unless asked.
    anim.seek(0, 0.9, false).unwrap();
    assert_eq!(anim.update(0.0).events.len(), 0);
    anim.seek(0, 0.1, true).unwrap();
    assert_eq!(anim.update(0.0).events.len(), 1);
}

#[test]
fn stop_returns_to_rest_and_queue_plays_after_the_end() {
    let s = one_joint();
    let a = slide(&s, 0.5, 1.0, 1.0, &[]);
    let b = slide(&s, 0.5, 2.0, 2.0, &[]);
    let mut anim = Animator::new(s.clone());
    anim.play(
        0,
        a,
        PlayOptions {
            wrap: Wrap::Once,
            ..Default::default()
        },
    )
    .unwrap();
    anim.queue(
        0,
        b,
        When::End,
        Transition::Immediate,
        PlayOptions::default(),
    )
    .unwrap();
    anim.update(0.3);
    assert_eq!(anim.pose()[0].translation.x, 1.0);
    anim.update(0.3);
    assert_eq!(anim.pose()[0].translation.x, 2.0);
    anim.stop(0).unwrap();
    anim.update(0.1);
    assert_eq!(anim.pose(), s.rest_pose());
}

#[test]
fn inertial_transition_starts_at_the_old_pose_and_ends_at_the_new() {
    let s = one_joint();
    let a = slide(&s, 1.0, 0.0, 0.0, &[]);
    let b = slide(&s, 1.0, 1.0, 1.0, &[]);
    let mut anim = Animator::new(s);
    anim.play(0, a, PlayOptions::default()).unwrap();
    anim.update(0.1);
    anim.update(0.1);
    anim.inertialize(0, b, 0.3, PlayOptions::default()).unwrap();
    anim.update(0.0);
    assert!(
        anim.pose()[0].translation.x.abs() < 1e-5,
        "starts where it was"
    );
    let mut last = 0.0;
    for _ in 0..30 {
        anim.update(1.0 / 60.0);
        let x = anim.pose()[0].translation.x;
        assert!(x >= last - 1e-5 && x <= 1.0 + 1e-5, "{x}");
        last = x;
    }
    assert!((last - 1.0).abs() < 1e-5, "ends on the target: {last}");
}

#[test]
fn blend_space_weights_follow_the_parameter() {
    let s = one_joint();
    let walk = slide(&s, 1.0, 1.0, 1.0, &[]);
    let run = slide(&s, 0.5, 3.0, 3.0, &[]);
    let mut anim = Animator::new(s);
    anim.play_blend_space(
        0,
        BlendSpace1D::new(vec![(1.0, walk), (3.0, run)]),
        Transition::Immediate,
    )
    .unwrap();
    for (p, want) in [
        (0.0, 1.0),
        (1.0, 1.0),
        (2.0, 2.0),
        (2.5, 2.5),
        (3.0, 3.0),
        (9.0, 3.0),
    ] {
        anim.set_parameter(0, p).unwrap();
        anim.update(0.01);
        assert!((anim.pose()[0].translation.x - want).abs() < 1e-5, "{p}");
    }
    // The two clips stay in phase.
    anim.set_parameter(0, 2.0).unwrap();
    for _ in 0..50 {
        anim.update(0.037);
        let players = anim.players(0);
        assert!((players[0].0.normalized_time() - players[1].0.normalized_time()).abs() < 1e-5);
    }
}

#[test]
fn fox_walk_to_run_crossfade_keeps_the_feet_in_phase() {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let walk = fox.clip("Walk").unwrap().clone();
    let run = fox.clip("Run").unwrap().clone();
    let mut anim = Animator::new(fox.skeleton.clone());
    let sync = PlayOptions {
        sync_group: Some(1),
        ..Default::default()
    };
    anim.play(0, walk, sync).unwrap();
    for _ in 0..17 {
        anim.update(1.0 / 60.0);
    }
    anim.crossfade(0, run, 0.5, Curve::SmoothStep, sync)
        .unwrap();
    for i in 0..60 {
        anim.update(1.0 / 60.0);
        let p = anim.players(0);
        if p.len() == 2 {
            let (a, b) = (p[0].0.normalized_time(), p[1].0.normalized_time());
            assert!((a - b).abs() < 1e-4, "frame {i}: walk {a} run {b}");
        }
        for t in anim.pose() {
            assert!(t.is_finite());
        }
    }
    // After the fade only Run remains, at Run's own speed.
    assert_eq!(anim.players(0).len(), 1);
}

#[test]
fn robot_wave_override_on_the_upper_body() {
    let robot = skelett_io::load(data("gltf/robot_quaternius.glb")).unwrap();
    let sk = robot.skeleton.clone();
    let walk = robot.clip("Robot_Walking").unwrap().clone();
    let wave = robot.clip("Robot_Wave").unwrap().clone();
    let mut anim = Animator::new(sk.clone());
    anim.play(0, walk.clone(), PlayOptions::default()).unwrap();
    let upper_root = sk
        .names()
        .iter()
        .find(|n| n.contains("Torso") || n.contains("Chest") || n.contains("Body"))
        .unwrap()
        .clone();
    let mask = JointMask::subtree(&sk, &upper_root).unwrap();
    let upper = anim
        .add_layer(BlendMode::Override, 1.0, Some(mask.clone()))
        .unwrap();
    anim.play(upper, wave.clone(), PlayOptions::default())
        .unwrap();
    anim.update(0.4);
    let mut walk_pose = Pose::rest(&sk);
    let mut wave_pose = Pose::rest(&sk);
    sample_uncached(&walk, walk.start() + 0.4, &mut walk_pose).unwrap();
    sample_uncached(&wave, wave.start() + 0.4, &mut wave_pose).unwrap();
    for j in 0..sk.len() {
        let want = if mask.weights()[j] > 0.0 {
            wave_pose[j]
        } else {
            walk_pose[j]
        };
        assert_eq!(
            anim.pose()[j],
            want,
            "joint {} ({})",
            j,
            sk.name(j as JointIndex)
        );
    }
}

/// Survey made additive (relative to its first frame) on a layer above a Walk loop: the
/// additive clip samples to the pose-by-pose deltas, and the animator's pose is the walk
/// with those deltas applied in each joint's frame.
#[test]
fn additive_clip_layer_over_a_walk_loop() {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let sk = fox.skeleton.clone();
    let walk = fox.clip("Walk").unwrap().clone();
    let survey = fox.clip("Survey").unwrap().clone();
    let additive = Arc::new(survey.to_additive_from_first_frame());
    let mut first = Pose::rest(&sk);
    sample_uncached(&survey, survey.start(), &mut first).unwrap();
    let (mut s_pose, mut d_pose, mut want) = (Pose::rest(&sk), Pose::rest(&sk), Pose::rest(&sk));
    for t in [0.0f32, 0.7, 1.9, 3.0] {
        sample_uncached(&survey, survey.start() + t, &mut s_pose).unwrap();
        sample_uncached(&additive, additive.start() + t, &mut d_pose).unwrap();
        make_additive(&s_pose, &first, &mut want).unwrap();
        for j in 0..sk.len() {
            assert!(
                (d_pose[j].translation - want[j].translation).length() < 1e-4,
                "t {t} joint {j}"
            );
            assert!(
                d_pose[j].rotation.dot(want[j].rotation).abs() > 1.0 - 1e-5,
                "t {t} joint {j}"
            );
            assert!((d_pose[j].scale - want[j].scale).length() < 1e-4);
        }
    }
    let mut anim = Animator::new(sk.clone());
    anim.play(0, walk.clone(), PlayOptions::default()).unwrap();
    let layer = anim.add_layer(BlendMode::Additive, 1.0, None).unwrap();
    anim.play(layer, additive.clone(), PlayOptions::default())
        .unwrap();
    for _ in 0..50 {
        anim.update(1.0 / 30.0);
    }
    let t = 50.0 / 30.0;
    let mut w = Pose::rest(&sk);
    sample_uncached(&walk, walk.start() + t % walk.duration(), &mut w).unwrap();
    sample_uncached(
        &additive,
        additive.start() + t % additive.duration(),
        &mut d_pose,
    )
    .unwrap();
    apply_additive(&mut w, &d_pose, 1.0, None).unwrap();
    for j in 0..sk.len() {
        assert!(
            (anim.pose()[j].translation - w[j].translation).length() < 1e-4,
            "joint {j}"
        );
        assert!(
            anim.pose()[j].rotation.dot(w[j].rotation).abs() > 1.0 - 1e-5,
            "joint {j}"
        );
    }
}

#[test]
fn additive_layer_on_a_loop() {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let sk = fox.skeleton.clone();
    let walk = fox.clip("Walk").unwrap().clone();
    let survey = fox.clip("Survey").unwrap().clone();
    // Make Survey additive relative to its first frame, by sampling it into a delta clip of
    // one joint's head turn: here through poses, at one time.
    let mut first = Pose::rest(&sk);
    let mut later = Pose::rest(&sk);
    sample_uncached(&survey, survey.start(), &mut first).unwrap();
    sample_uncached(&survey, survey.start() + 1.5, &mut later).unwrap();
    let mut delta = Pose::identity(sk.len());
    make_additive(&later, &first, &mut delta).unwrap();
    // Zero weight changes nothing; full weight adds the delta in each joint's local frame.
    let mut walk_pose = Pose::rest(&sk);
    sample_uncached(&walk, walk.start() + 0.2, &mut walk_pose).unwrap();
    let mut out = walk_pose.clone();
    apply_additive(&mut out, &delta, 0.0, None).unwrap();
    assert_eq!(out, walk_pose);
    apply_additive(&mut out, &delta, 1.0, None).unwrap();
    for j in 0..sk.len() {
        let want = walk_pose[j].rotation * delta[j].rotation;
        assert!(out[j].rotation.dot(want).abs() > 1.0 - 1e-5);
    }
}

/// Fox's clips are made in place: root motion extraction must report what the root does
/// (here: the closed-form displacement over whole and partial loops, which for Fox is
/// nothing horizontal) and keep the pose's horizontal root position at zero. The turning
/// synthetic walk below checks accumulation where there is motion.
#[test]
fn fox_root_motion_adds_up_over_a_loop() {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let sk = fox.skeleton.clone();
    let walk = fox.clip("Walk").unwrap().clone();
    let root = sk.find("b_Root_00").unwrap();
    let mut anim = Animator::new(sk.clone());
    anim.set_root_motion(Some(RootMotionConfig {
        joint: root,
        ..Default::default()
    }))
    .unwrap();
    anim.play(0, walk.clone(), PlayOptions::default()).unwrap();
    let mut total = Vec3::ZERO;
    let steps = 85; // two loops and a bit at 60 Hz
    for _ in 0..steps {
        let r = anim.update(1.0 / 60.0);
        total += r.root_motion.translation;
        let t = anim.pose()[root as usize].translation;
        assert!(
            t.x.abs() < 1e-5 && t.z.abs() < 1e-5,
            "horizontal motion is taken out: {t}"
        );
    }
    // Over whole loops the root moves (end - start) per loop; here in the clip's own frame.
    let s = sample_joint(&walk, root, walk.start()).translation;
    let e = sample_joint(&walk, root, walk.end()).translation;
    let elapsed = steps as f32 / 60.0;
    let loops = (elapsed / walk.duration()).floor();
    let partial = sample_joint(
        &walk,
        root,
        walk.start() + elapsed - loops * walk.duration(),
    )
    .translation;
    let want = (e - s) * loops + (partial - s);
    let flat = |v: Vec3| Vec3::new(v.x, 0.0, v.z);
    assert!(
        (flat(total) - flat(want)).length() < 1e-3 * (1.0 + want.length()),
        "{total} vs {want}"
    );
}

/// A root walking 1 unit along z per 0.5 s loop while turning 0.4 rad: integrating the root
/// motion of every update gives the path of the loops laid end to end (each cycle starting
/// where the last ended, turned by the yaw so far), at any speed and step; and the pose
/// keeps only the vertical part.
#[test]
fn root_motion_accumulates_across_loops_exactly() {
    let s = one_joint();
    let d = 0.5f32;
    let clip = Arc::new(
        RawClip {
            name: "walk_turn".into(),
            start: 0.0,
            duration: d,
            channels: vec![
                RawChannel {
                    joint: "root".into(),
                    target: Target::Translation,
                    interpolation: Interpolation::Linear,
                    times: vec![0.0, d],
                    values: RawValues::Vec3(vec![
                        Vec3::new(0.0, 0.3, 0.0),
                        Vec3::new(0.0, 0.3, 1.0),
                    ]),
                },
                RawChannel {
                    joint: "root".into(),
                    target: Target::Rotation,
                    interpolation: Interpolation::Linear,
                    times: vec![0.0, d],
                    values: RawValues::Quat(vec![Quat::IDENTITY, Quat::from_rotation_y(0.4)]),
                },
            ],
        }
        .build(&s)
        .unwrap(),
    );
    for (speed, dt) in [(1.0f32, 0.037f32), (2.5, 0.05), (0.3, 0.01), (1.0, 0.8)] {
        let mut anim = Animator::new(s.clone());
        anim.set_root_motion(Some(RootMotionConfig::default()))
            .unwrap();
        anim.play(
            0,
            clip.clone(),
            PlayOptions {
                speed,
                ..Default::default()
            },
        )
        .unwrap();
        let (mut yaw, mut pos) = (0.0f32, Vec3::ZERO);
        let steps = 60;
        for _ in 0..steps {
            let r = anim.update(dt);
            pos += Quat::from_rotation_y(yaw) * r.root_motion.translation;
            yaw += r.root_motion.yaw;
            let root = anim.pose()[0];
            assert!(root.translation.x.abs() < 1e-6 && root.translation.z.abs() < 1e-6);
            assert!((root.translation.y - 0.3).abs() < 1e-6, "vertical kept");
            assert!(
                root.rotation.angle_between(Quat::IDENTITY) < 2e-3,
                "yaw taken out"
            );
        }
        let played = steps as f32 * dt * speed / d; // cycles
        let full = played.floor() as usize;
        let mut want = Vec3::ZERO;
        for i in 0..full {
            want += Quat::from_rotation_y(0.4 * i as f32) * Vec3::Z;
        }
        want += Quat::from_rotation_y(0.4 * full as f32) * (Vec3::Z * (played - full as f32));
        assert!(
            (yaw - 0.4 * played).abs() < 1e-3,
            "speed {speed}: yaw {yaw} vs {}",
            0.4 * played
        );
        assert!(
            (pos - want).length() < 1e-3 * (1.0 + want.length()),
            "speed {speed} dt {dt}: {pos} vs {want}"
        );
    }
}

/// Root motion on a real capture: CMU 01_01 (a subject jumping forward, 23 s at 120 fps),
/// played once through the animator at 60 Hz. Integrating each update's root motion (turned
/// by the yaw so far) must give the hips' horizontal displacement over the clip, expressed in
/// the hips' frame at the start; the yaws must add up to the hips' change of heading; and the
/// pose keeps the hips over the origin.
#[test]
fn cmu_capture_root_motion_adds_up() {
    let cmu = skelett_io::load(data("bvh/01_01.bvh")).unwrap();
    let sk = cmu.skeleton.clone();
    let clip = cmu.clips[0].clone();
    let hips = sk.find("Hips").unwrap();
    let cfg = RootMotionConfig {
        joint: hips,
        ..Default::default()
    };
    let mut anim = Animator::new(sk.clone());
    anim.set_root_motion(Some(cfg)).unwrap();
    anim.play(
        0,
        clip.clone(),
        PlayOptions {
            wrap: Wrap::Once,
            ..Default::default()
        },
    )
    .unwrap();
    let (mut pos, mut yaw) = (Vec3::ZERO, 0.0f32);
    let frames = (clip.duration() * 60.0).ceil() as usize + 5;
    for _ in 0..frames {
        let r = anim.update(1.0 / 60.0);
        pos += Quat::from_rotation_y(yaw) * r.root_motion.translation;
        yaw += r.root_motion.yaw;
        let h = anim.pose()[hips as usize].translation;
        assert!(h.x.abs() < 1e-4 && h.z.abs() < 1e-4, "{h}");
    }
    let (a, b) = (
        sample_joint(&clip, hips, clip.start()),
        sample_joint(&clip, hips, clip.end()),
    );
    let heading = |q: Quat| {
        let f = q * Vec3::Z;
        f.x.atan2(f.z)
    };
    let d = b.translation - a.translation;
    let want = Quat::from_rotation_y(-heading(a.rotation)) * Vec3::new(d.x, 0.0, d.z);
    assert!(want.length() > 10.0, "the subject travels: {want}");
    assert!(
        (pos - want).length() < 1e-3 * want.length(),
        "{pos} vs {want}"
    );
    let dyaw = heading(b.rotation) - heading(a.rotation);
    let wrap = |x: f32| {
        (x + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI
    };
    assert!(wrap(yaw - dyaw).abs() < 1e-3, "{yaw} vs {dyaw}");
}

/// A seek that fires events fires each crossed event once: not again on the next update,
/// and not the one at the position it left.
#[test]
fn seek_with_events_fires_each_crossing_once() {
    let s = one_joint();
    let clip = slide(&s, 1.0, 0.0, 1.0, &[0.25, 0.5, 0.75]);
    let mut anim = Animator::new(s);
    anim.set_event_policy(all_events());
    anim.play(0, clip, PlayOptions::default()).unwrap();
    assert_eq!(anim.update(0.25).events.len(), 1); // 0.25
    anim.seek(0, 0.75, true).unwrap(); // crosses 0.5 and lands on 0.75
    let r = anim.update(0.1);
    let names: Vec<&str> = r.events.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["e1", "e2"], "the seek's events, each once");
    assert_eq!(anim.update(0.1).events.len(), 0);
}

/// A cross-fade onto an empty layer fades in from what is below (the rest pose), not at
/// full weight at once.
#[test]
fn crossfade_onto_an_empty_layer_fades_in() {
    let s = one_joint();
    let clip = slide(&s, 1.0, 1.0, 1.0, &[]);
    let mut anim = Animator::new(s);
    anim.crossfade(0, clip, 1.0, Curve::Linear, PlayOptions::default())
        .unwrap();
    anim.update(0.25);
    let x = anim.pose()[0].translation.x;
    assert!((x - 0.25).abs() < 1e-5, "{x}");
    anim.update(1.0);
    assert!((anim.pose()[0].translation.x - 1.0).abs() < 1e-6);
}

/// Seeking a ping-pong clip on its way back lands on the asked clip time.
#[test]
fn ping_pong_seek_keeps_the_clip_time() {
    let s = one_joint();
    let clip = slide(&s, 1.0, 0.0, 1.0, &[]);
    let mut anim = Animator::new(s);
    anim.play(
        0,
        clip,
        PlayOptions {
            wrap: Wrap::PingPong,
            ..Default::default()
        },
    )
    .unwrap();
    anim.update(1.5); // on the way back, at clip time 0.5
    assert!((anim.players(0)[0].0.local_time() - 0.5).abs() < 1e-6);
    anim.seek(0, 0.2, false).unwrap();
    anim.update(0.0);
    assert!((anim.players(0)[0].0.local_time() - 0.2).abs() < 1e-6);
    assert!((anim.pose()[0].translation.x - 0.2).abs() < 1e-5);
}

/// A paused player in a sync group stays where it is; a paused leader does not freeze the
/// group (the heaviest playing player leads).
#[test]
fn paused_players_in_sync_groups() {
    let s = one_joint();
    let a = slide(&s, 1.0, 0.0, 1.0, &[]);
    let b = slide(&s, 2.0, 0.0, 1.0, &[]);
    let mut anim = Animator::new(s);
    let sync = PlayOptions {
        sync_group: Some(3),
        ..Default::default()
    };
    anim.play(0, a, sync).unwrap();
    anim.crossfade(0, b, 1000.0, Curve::Linear, sync).unwrap();
    anim.update(0.2);
    anim.set_paused(0, true).unwrap();
    let before: Vec<f32> = anim.players(0).iter().map(|p| p.0.local_time()).collect();
    anim.update(0.3);
    let after: Vec<f32> = anim.players(0).iter().map(|p| p.0.local_time()).collect();
    assert_eq!(before, after, "paused players stay");
}

#[test]
fn bad_layer_masks_and_root_joints_are_errors() {
    let s = one_joint();
    let mut anim = Animator::new(s);
    assert!(anim
        .add_layer(
            BlendMode::Override,
            1.0,
            Some(JointMask::from_weights(vec![1.0; 5]))
        )
        .is_err());
    assert!(anim
        .set_root_motion(Some(RootMotionConfig {
            joint: 7,
            ..Default::default()
        }))
        .is_err());
    assert_eq!(anim.layer_count(), 1);
    let l = anim.add_layer(BlendMode::Override, f32::NAN, None).unwrap();
    anim.update(0.1);
    assert!(anim.pose()[0].is_finite());
    assert!(anim.set_layer_weight(l, f32::NAN).is_ok());
}

/// An additive layer with weight -1 subtracts what weight 1 adds.
#[test]
fn negative_additive_layer_weight_subtracts() {
    let s = one_joint();
    let base = slide(&s, 1.0, 1.0, 1.0, &[]);
    let delta = slide(&s, 1.0, 0.5, 0.5, &[]); // +0.5 along x as an additive delta
    let mut anim = Animator::new(s);
    anim.play(0, base, PlayOptions::default()).unwrap();
    let add = anim.add_layer(BlendMode::Additive, 1.0, None).unwrap();
    anim.play(add, delta, PlayOptions::default()).unwrap();
    anim.update(0.1);
    assert!((anim.pose()[0].translation.x - 1.5).abs() < 1e-6);
    anim.set_layer_weight(add, -1.0).unwrap();
    anim.update(0.1);
    assert!((anim.pose()[0].translation.x - 0.5).abs() < 1e-6);
}

/// Pose modifiers after blending: a modifier at weight 0 leaves the pose bit for bit; foot
/// placement as a modifier, with contacts from the playing clip, is the stateless job with
/// those contacts at the player's time; fades are linear in time; bad modifiers are
/// refused.
#[test]
fn modifiers_run_after_blending_with_fading_weights() {
    use glam::Mat4;
    use skelett::ik::*;
    let robot = skelett_io::load(data("gltf/robot_quaternius.glb")).unwrap();
    let sk = robot.skeleton.clone();
    let walk = robot.clip("Robot_Walking").unwrap().clone();
    let find = |n: &str| sk.find(n).unwrap();
    let leg = |upper: &str, lower: &str, foot: &str| {
        let chain =
            TwoBoneChain::reaching_joint(&sk, [find(upper), find(lower)], find(foot)).unwrap();
        Leg::from_rest(&sk, chain, find(foot), Vec3::Y)
            .unwrap()
            .with_pole(Vec3::Z)
    };
    let feet = Feet::new(
        &sk,
        vec![
            leg("UpperLeg.L", "LowerLeg.L", "Foot.L"),
            leg("UpperLeg.R", "LowerLeg.R", "Foot.R"),
        ],
        Some(find("Body")),
        Vec3::Y,
    )
    .unwrap();
    let contacts = feet.contacts(&sk, &walk);
    let ground: SharedGround =
        Arc::new(Plane::new(Vec3::ZERO, Vec3::new(0.0, 1.0, -0.27)).unwrap());
    let placement = Placement::new(Mat4::IDENTITY, 1.0);

    let mut plain = Animator::new(sk.clone());
    let mut bent = Animator::new(sk.clone());
    plain.play(0, walk.clone(), PlayOptions::default()).unwrap();
    bent.play(0, walk.clone(), PlayOptions::default()).unwrap();
    let m = bent
        .add_modifier(
            Modifier::feet(feet.clone(), placement, ground.clone())
                .with_contacts(walk.clone(), contacts.clone()),
            0.0,
        )
        .unwrap();
    for _ in 0..5 {
        plain.update(0.05);
        bent.update(0.05);
        assert_eq!(plain.pose(), bent.pose(), "weight 0 is bit for bit");
    }
    bent.fade_modifier(m, 1.0, 0.2).unwrap();
    let mut weights = Vec::new();
    for _ in 0..6 {
        plain.update(0.05);
        bent.update(0.05);
        weights.push(bent.modifier_state(m).unwrap().0);
    }
    for (got, want) in weights.iter().zip([0.25, 0.5, 0.75, 1.0, 1.0, 1.0]) {
        assert!((got - want).abs() < 1e-5, "{weights:?}");
    }
    // At full weight: the job itself on the plain animator's pose, with the walk's contacts
    // at the player's time.
    let time = plain.players(0)[0].0.time();
    let mut c = [0.0; 2];
    contacts.weights_at(time, &mut c);
    let mut pose = plain.pose().to_vec();
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    local_to_model(&sk, &pose, 0, &mut model).unwrap();
    place_feet(&feet, &placement, &c, &*ground, &sk, &mut pose, &mut model).unwrap();
    for (a, b) in pose.iter().zip(bent.pose()) {
        assert!(a.translation.abs_diff_eq(b.translation, 1e-6));
        assert!(a.rotation.abs_diff_eq(b.rotation, 1e-6));
    }
    for (a, b) in model.iter().zip(bent.model()) {
        assert!(a.abs_diff_eq(*b, 1e-5));
    }
    assert_ne!(plain.pose(), bent.pose(), "the feet moved");
    // Bad modifiers.
    let chain = TwoBoneChain::new(
        &sk,
        [find("UpperLeg.L"), find("LowerLeg.L"), find("LowerLeg.L")],
    );
    assert!(chain.is_err(), "a joint is not below itself");
    assert!(matches!(
        bent.add_modifier(
            Modifier::Aim {
                chain: vec![999],
                weights: vec![1.0],
                aim: Aim::new(Vec3::ONE, Vec3::Z)
            },
            1.0
        ),
        Err(Error::NoSuchJoint { joint: 999, .. })
    ));
    assert!(matches!(
        bent.add_modifier(
            Modifier::Aim {
                chain: vec![1, 2],
                weights: vec![1.0],
                aim: Aim::new(Vec3::ONE, Vec3::Z)
            },
            1.0
        ),
        Err(Error::Length { .. })
    ));
    assert!(matches!(
        bent.fade_modifier(7, 1.0, 1.0),
        Err(Error::NoSuchModifier { index: 7, count: 1 })
    ));
    assert!(matches!(
        bent.set_modifier_target(m, Vec3::NAN),
        Err(Error::NotFinite { .. })
    ));
}

/// DirectX's tracks: a disabled layer keeps its player's time and fires nothing; enabled
/// again it goes on from there. A removed layer's state goes, and the layers above move
/// down. The truth is the slide's closed form (x = time over duration times 10).
#[test]
fn layers_disable_without_losing_state_and_remove() {
    let s = one_joint();
    let base = slide(&s, 10.0, 0.0, 0.0, &[]);
    let top = slide(&s, 1.0, 0.0, 10.0, &[0.25, 0.75]);
    let mut a = Animator::new(s.clone());
    a.set_event_policy(all_events());
    a.play(0, base.clone(), PlayOptions::default()).unwrap();
    let layer = a.add_layer(BlendMode::Override, 1.0, None).unwrap();
    a.play(layer, top.clone(), PlayOptions::default()).unwrap();
    assert_eq!(a.layer_enabled(layer), Some(true));
    let x = |a: &Animator| a.pose()[0].translation.x;
    let fired = a.update(0.3).events.len();
    assert_eq!(fired, 1, "e0 at 0.25");
    assert!((x(&a) - 3.0).abs() < 1e-4, "{}", x(&a));
    a.set_layer_enabled(layer, false).unwrap();
    assert_eq!(a.layer_enabled(layer), Some(false));
    // Disabled: the pose is layer 0's alone, and the top clip's e1 (0.75) is not crossed.
    for _ in 0..5 {
        let r = a.update(0.2);
        assert!(r.events.is_empty(), "{:?}", r.events);
        assert!(x(&a).abs() < 1e-6, "{}", x(&a));
    }
    let players = a.players(layer);
    assert!((players[0].0.local_time() - 0.3).abs() < 1e-6, "time kept");
    // Enabled again: on from 0.3, crossing e1 at 0.75 in the next 0.5 s.
    a.set_layer_enabled(layer, true).unwrap();
    let r = a.update(0.5);
    assert_eq!(r.events.len(), 1);
    assert_eq!(r.events[0].name(), "e1");
    assert!((x(&a) - 8.0).abs() < 1e-4, "{}", x(&a));
    // Removed: layer 0 alone again; the index is gone.
    let above = a.add_layer(BlendMode::Additive, 1.0, None).unwrap();
    assert_eq!(above, 2);
    a.remove_layer(layer).unwrap();
    assert_eq!(a.layer_count(), 2);
    a.update(0.1);
    assert!(x(&a).abs() < 1e-6, "{}", x(&a));
    assert!(matches!(
        a.remove_layer(5),
        Err(Error::NoSuchLayer {
            layer: 5,
            layers: 2
        })
    ));
    assert!(a.set_layer_enabled(5, false).is_err());
    assert_eq!(a.layer_enabled(5), None);
    // Disabling layer 0 leaves the rest pose (nothing enabled plays).
    a.set_layer_enabled(0, false).unwrap();
    a.update(0.1);
    assert_eq!(a.pose()[0], Transform::IDENTITY);
}

/// RiTE's dominant animations: a layer masked by `JointMask::animated_by` overrides exactly
/// the joints its clip animates (here the arm's rotation track, and the hand it holds away
/// from rest) and leaves the hips to the layer below, at full weight. The truth is the two
/// clips' own keys.
#[test]
fn dominant_layer_overrides_only_what_its_clip_animates() {
    let s = Arc::new(
        RawSkeleton {
            joints: ["hips", "arm", "hand", "tip"]
                .iter()
                .enumerate()
                .map(|(i, n)| RawJoint {
                    name: n.to_string(),
                    parent: i.checked_sub(1),
                    rest: Transform::new(Vec3::Y, Quat::IDENTITY, Vec3::ONE),
                })
                .collect(),
            ..Default::default()
        }
        .build()
        .unwrap(),
    );
    let channel = |joint: &str, target, values| RawChannel {
        joint: joint.into(),
        target,
        interpolation: Interpolation::Linear,
        times: vec![0.0, 1.0],
        values,
    };
    let walk = RawClip {
        name: "walk".into(),
        start: 0.0,
        duration: 1.0,
        channels: ["hips", "arm", "hand", "tip"]
            .iter()
            .map(|j| {
                channel(
                    j,
                    Target::Translation,
                    RawValues::Vec3(vec![Vec3::Y, Vec3::new(1.0, 1.0, 0.0)]),
                )
            })
            .collect(),
    }
    .build(&s)
    .unwrap();
    let turn = Quat::from_rotation_z(0.8);
    let wave = RawClip {
        name: "wave".into(),
        start: 0.0,
        duration: 1.0,
        channels: vec![
            channel(
                "arm",
                Target::Rotation,
                RawValues::Quat(vec![Quat::IDENTITY, turn]),
            ),
            // Held away from rest: a constant channel.
            channel(
                "hand",
                Target::Scale,
                RawValues::Vec3(vec![Vec3::splat(2.0); 2]),
            ),
        ],
    }
    .build(&s)
    .unwrap();
    let mask = JointMask::animated_by(&s, &wave).unwrap();
    assert_eq!(mask.weights(), [0.0, 1.0, 1.0, 0.0]);
    let mut a = Animator::new(s.clone());
    a.play(0, Arc::new(walk.clone()), PlayOptions::default())
        .unwrap();
    let top = a.add_layer(BlendMode::Override, 1.0, Some(mask)).unwrap();
    a.play(top, Arc::new(wave.clone()), PlayOptions::default())
        .unwrap();
    a.update(0.5);
    let p = a.pose();
    let walked = Vec3::new(0.5, 1.0, 0.0);
    assert!(p[0].translation.abs_diff_eq(walked, 1e-5), "hips walk");
    assert!(p[3].translation.abs_diff_eq(walked, 1e-5), "tip walks");
    assert!(p[1].rotation.abs_diff_eq(Quat::from_rotation_z(0.4), 1e-5));
    assert!(
        p[1].translation.abs_diff_eq(Vec3::Y, 1e-5),
        "the whole joint is the wave's: its rest translation"
    );
    assert!(p[2].scale.abs_diff_eq(Vec3::splat(2.0), 1e-5));
    // A clip for another skeleton is refused.
    assert!(matches!(
        JointMask::animated_by(&one_joint(), &wave),
        Err(Error::SkeletonMismatch { .. })
    ));
}

/// Playback notifications (the Animation Cycle Data article's "passed its end", DirectX's
/// end callbacks): loops, ping-pong turns, the end of a clip played once and finished
/// transitions come exactly once each, in crossing order with the clip's own events, and not
/// at all unless asked for. The truth is the closed form of a 1 s clip with an event at 0.5.
#[test]
fn loops_ends_and_finished_transitions_are_notified_once_in_order() {
    let s = one_joint();
    let clip = slide(&s, 1.0, 0.0, 1.0, &[0.5]);
    let names = |a: &mut Animator, dt: f32, steps: usize| -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..steps {
            out.extend(a.update(dt).events.iter().map(|e| e.name().to_string()));
        }
        out
    };
    // Off by default: the clip's events only.
    let mut a = Animator::new(s.clone());
    a.set_event_policy(all_events());
    a.play(0, clip.clone(), PlayOptions::default()).unwrap();
    assert_eq!(names(&mut a, 0.3, 8), ["e0", "e0"]);
    // Looping, in steps that straddle the seams (2.4 s): e0 and the seam alternate.
    let mut a = Animator::new(s.clone());
    a.set_event_policy(all_events());
    a.set_notifications(true);
    a.play(0, clip.clone(), PlayOptions::default()).unwrap();
    let got = names(&mut a, 0.3, 8);
    assert_eq!(got, ["e0", "looped", "e0", "looped"]);
    // One step over two seams: both, in order, with their place in the step.
    let r = a.update(2.0);
    let seen: Vec<(&str, f32)> = r.events.iter().map(|e| (e.name(), e.at)).collect();
    // From 2.4: e0 at 2.5, seam at 3, e0 at 3.5, seam at 4 (of a 2 s step).
    assert_eq!(seen.len(), 4, "{seen:?}");
    for ((name, at), (want_name, want_at)) in
        seen.iter()
            .zip([("e0", 0.05), ("looped", 0.3), ("e0", 0.55), ("looped", 0.8)])
    {
        assert_eq!(*name, want_name);
        assert!((at - want_at).abs() < 1e-5, "{seen:?}");
    }
    assert!(r.events[1].kind == EventKind::Looped { at_end: true });
    assert_eq!(r.events[1].time(), 1.0);

    // Played once: `ended` exactly once, then nothing.
    let once = PlayOptions {
        wrap: Wrap::Once,
        ..Default::default()
    };
    let mut a = Animator::new(s.clone());
    a.set_event_policy(all_events());
    a.set_notifications(true);
    a.play(0, clip.clone(), once).unwrap();
    assert_eq!(names(&mut a, 0.4, 6), ["e0", "ended"]);
    // Backwards from the end: the start is an end too.
    let back = PlayOptions {
        wrap: Wrap::Once,
        speed: -1.0,
        start: 1.0,
        ..Default::default()
    };
    a.play(0, clip.clone(), back).unwrap();
    let r = a.update(2.0);
    let kinds: Vec<EventKind> = r.events.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EventKind::Clip, EventKind::Ended { at_end: false }],
        "{:?}",
        r.events
    );

    // Started on the end it plays towards (backwards from the start, forwards from the end):
    // it has ended, and says so once, on the first update.
    for (speed, start) in [(-1.0, 0.0), (1.0, 1.0)] {
        a.play(
            0,
            clip.clone(),
            PlayOptions {
                wrap: Wrap::Once,
                speed,
                start,
                ..Default::default()
            },
        )
        .unwrap();
        let ends = |a: &mut Animator| {
            a.update(0.2)
                .events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Ended { .. }))
                .count()
        };
        assert_eq!(ends(&mut a), 1, "speed {speed} start {start}");
        assert_eq!(ends(&mut a) + ends(&mut a), 0);
    }

    // Ping-pong: every turn, alternately at the end and the start.
    let mut a = Animator::new(s.clone());
    a.set_notifications(true);
    a.set_event_policy(all_events());
    let pp = PlayOptions {
        wrap: Wrap::PingPong,
        ..Default::default()
    };
    a.play(0, clip.clone(), pp).unwrap();
    let r = a.update(3.2);
    let turns: Vec<EventKind> = r
        .events
        .iter()
        .filter(|e| e.kind != EventKind::Clip)
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        turns,
        [true, false, true].map(|at_end| EventKind::Looped { at_end })
    );

    // A 0.5 s cross-fade finishes once, 0.2 s into the third 0.2 s step; an inertial
    // transition of 0.3 s once, when its offsets end.
    let other = slide(&s, 1.0, 5.0, 6.0, &[]);
    let mut a = Animator::new(s.clone());
    a.set_notifications(true);
    a.play(0, clip.clone(), PlayOptions::default()).unwrap();
    a.update(0.1);
    a.crossfade(0, other.clone(), 0.5, Curve::Linear, PlayOptions::default())
        .unwrap();
    let mut finished = Vec::new();
    for step in 0..6 {
        for e in a.update(0.2).events {
            if e.kind == EventKind::TransitionFinished {
                finished.push((step, e.at, e.clip.name().to_string()));
            }
        }
    }
    assert_eq!(finished.len(), 1, "{finished:?}");
    assert_eq!(finished[0].0, 2);
    assert!((finished[0].1 - 0.5).abs() < 1e-5, "{finished:?}");
    assert_eq!(finished[0].2, other.name());
    a.inertialize(0, clip.clone(), 0.3, PlayOptions::default())
        .unwrap();
    let mut steps = Vec::new();
    for step in 0..6 {
        if a.update(0.2)
            .events
            .iter()
            .any(|e| e.kind == EventKind::TransitionFinished)
        {
            steps.push(step);
        }
    }
    // Captured on the first update (no time passes for the offsets), done 0.3 s later.
    assert_eq!(steps, [2], "{steps:?}");
}

/// A cross-fading layer's pose is the blend of its players' samples at their times and
/// weights, bit for bit (one clip at full weight: its sample), with two and three clips
/// cross-fading on real assets (a compact clip among them), frame after frame at uneven steps.
#[test]
fn animator_crossfades_are_the_slice_blend_of_their_players() {
    use skelett::compress::{compress, CompressOptions};
    for file in [
        "gltf/robot_quaternius.glb",
        "gltf/Fox.glb",
        "gltf/CesiumMan.glb",
        "bvh/01_01.bvh",
    ] {
        let asset = skelett_io::load(data(file)).expect("shared data");
        let sk = &asset.skeleton;
        assert!(
            sk.len() >= SOA_LANES,
            "{file}: the block path needs 8 joints"
        );
        let n = asset.clips.len();
        let keyed = |i: usize| asset.clips[i % n].clone();
        let (compact, _) = compress(sk, &asset.clips[1 % n], &CompressOptions::default()).unwrap();
        let mut anim = Animator::new(asset.skeleton.clone());
        anim.play(0, keyed(0), PlayOptions::default()).unwrap();
        anim.update(0.13);
        anim.crossfade(0, keyed(1), 0.9, Curve::Linear, PlayOptions::default())
            .unwrap();
        let mut checked = [0usize; 4];
        for frame in 0..60 {
            if frame == 20 {
                let c = Arc::new(compact.clone());
                anim.crossfade(0, c, 0.6, Curve::SmoothStep, PlayOptions::default())
                    .unwrap();
            }
            anim.update(0.011 + 0.007 * (frame % 5) as f32);
            let players = anim.players(0);
            checked[players.len()] += 1;
            let (samples, blended) = blend_of_players(sk, &players);
            let layer = if let [(_, w)] = players[..] {
                // One clip at full weight is its sample, not blended.
                assert!(w >= 1.0);
                samples[0].clone()
            } else {
                blended
            };
            // A layer whose slots sum to less than 1 counts for that much over the rest pose.
            let total: f32 = players.iter().map(|(_, w)| w).sum();
            let want = if total >= 1.0 {
                layer
            } else {
                let mut p = Pose::rest(sk);
                blend_override(&mut p, &layer, total, None).unwrap();
                p
            };
            assert_eq!(anim.pose(), &want[..], "{file}, frame {frame}");
        }
        assert!(
            checked[2] > 0 && checked[3] > 0,
            "{file}: two and three slots were checked: {checked:?}"
        );
    }
}

/// A blend space cross-fading into a clip on a real skeleton (the space samples as rows, its
/// pose is copied into blocks and blended with the clip's): the pose is the blend of the
/// space's two clips (lerp, nlerp) and the clip, at the slots' weights, within rounding.
#[test]
fn blend_spaces_crossfade_into_clips() {
    let asset = skelett_io::load(data("gltf/robot_quaternius.glb")).expect("shared data");
    let sk = &asset.skeleton;
    let clip = |name: &str| asset.clip(name).unwrap().clone();
    let space = BlendSpace1D::new(vec![
        (0.0, clip("Robot_Walking")),
        (1.0, clip("Robot_Running")),
    ]);
    let mut anim = Animator::new(asset.skeleton.clone());
    anim.play_blend_space(0, space, Transition::Immediate)
        .unwrap();
    anim.set_parameter(0, 0.3).unwrap();
    anim.update(0.1);
    anim.crossfade(
        0,
        clip("Robot_Idle"),
        1.0,
        Curve::Linear,
        PlayOptions::default(),
    )
    .unwrap();
    for frame in 0..20 {
        anim.update(0.03);
        let players = anim.players(0);
        assert_eq!(players.len(), 3, "frame {frame}");
        let (walk, run, idle) = (&players[0], &players[1], &players[2]);
        let space_weight = walk.1 + run.1;
        let w = run.1 / space_weight;
        assert!((w - 0.3).abs() < 1e-6, "{w}");
        let (a, b) = (sample_player(sk, walk.0), sample_player(sk, run.0));
        let space_pose: Vec<Transform> = a
            .iter()
            .zip(b.iter())
            .map(|(a, b)| Transform {
                translation: a.translation.lerp(b.translation, w),
                rotation: a.rotation.lerp(b.rotation, w),
                scale: a.scale.lerp(b.scale, w),
            })
            .collect();
        let idle_pose = sample_player(sk, idle.0);
        let mut want = Pose::rest(sk);
        let inputs = [
            BlendInput {
                pose: &space_pose,
                weight: space_weight,
                mask: None,
            },
            BlendInput {
                pose: &idle_pose,
                weight: idle.1,
                mask: None,
            },
        ];
        blend(&inputs, sk.rest_pose(), &mut want).unwrap();
        for (j, (got, want)) in anim.pose().iter().zip(want.iter()).enumerate() {
            let close = got.translation.abs_diff_eq(want.translation, 1e-5)
                && got.rotation.abs_diff_eq(want.rotation, 1e-5)
                && got.scale.abs_diff_eq(want.scale, 1e-5);
            assert!(close, "frame {frame}, joint {j}: {got:?} against {want:?}");
        }
    }
}

/// Cross-fades past `MAX_SLOTS` drop the faintest slot and give its weight to the others in
/// proportion: the layer's weights keep summing to 1, so it does not sink toward the rest
/// pose until the fades end, and the pose stays the blend of the players left.
#[test]
fn crossfades_past_max_slots_keep_the_layer_whole() {
    let asset = skelett_io::load(data("gltf/robot_quaternius.glb")).expect("shared data");
    let sk = &asset.skeleton;
    let clips = &asset.clips;
    let mut anim = Animator::new(asset.skeleton.clone());
    let o = PlayOptions::default();
    anim.play(0, clips[0].clone(), o).unwrap();
    anim.update(0.1);
    for k in 1..=7 {
        anim.crossfade(0, clips[k % clips.len()].clone(), 1.0, Curve::Linear, o)
            .unwrap();
        for frame in 0..12 {
            anim.update(1.0 / 60.0);
            let players = anim.players(0);
            assert!(players.len() <= MAX_SLOTS);
            let total: f32 = players.iter().map(|p| p.1).sum();
            assert!(
                (total - 1.0).abs() < 1e-5,
                "cross-fade {k}, frame {frame}: {total}"
            );
            let (_, want) = blend_of_players(sk, &players);
            for (got, want) in anim.pose().iter().zip(want.iter()) {
                assert!(
                    got.rotation.abs_diff_eq(want.rotation, 1e-5)
                        && got.translation.abs_diff_eq(want.translation, 1e-5),
                    "cross-fade {k}, frame {frame}: {got:?} against {want:?}"
                );
            }
        }
    }
}

/// `p`'s clip sampled at its time, through a fresh cache.
fn sample_player(sk: &Skeleton, p: &Player) -> Pose {
    let mut pose = Pose::rest(sk);
    let mut cache = SamplingCache::for_clip(p.clip());
    sample(p.clip(), p.time(), &mut cache, &mut pose).unwrap();
    pose
}

/// The players' samples, and their `blend` at the players' weights over the rest pose.
fn blend_of_players(sk: &Skeleton, players: &[(&Player, f32)]) -> (Vec<Pose>, Pose) {
    let samples: Vec<Pose> = players.iter().map(|(p, _)| sample_player(sk, p)).collect();
    let inputs: Vec<BlendInput> = samples
        .iter()
        .zip(players)
        .map(|(pose, &(_, weight))| BlendInput {
            pose,
            weight,
            mask: None,
        })
        .collect();
    let mut out = Pose::rest(sk);
    blend(&inputs, sk.rest_pose(), &mut out).unwrap();
    (samples, out)
}

/// Where the first layer covers everything, its output is the pose (the update copies
/// nothing); whatever comes after must still see and change the pose as if it were the
/// animator's own: a layer removed below it, the model matrices, an additive layer blended
/// onto it, and root motion stripping it, through an inertial transition too. (Modifiers
/// writing it: `modifiers_run_after_blending_with_fading_weights`.) The truth is the clips'
/// closed form.
#[test]
fn a_pose_held_by_a_layer_output_behaves_as_the_animators_own() {
    let s = one_joint();
    let x = |a: &Animator| a.pose()[0].translation.x;
    // Layer 0 plays nothing; layer 1 covers everything: its output is the pose.
    let mut a = Animator::new(s.clone());
    let top = a.add_layer(BlendMode::Override, 1.0, None).unwrap();
    a.play(top, slide(&s, 1.0, 0.0, 10.0, &[]), PlayOptions::default())
        .unwrap();
    a.update(0.3);
    assert!((x(&a) - 3.0).abs() < 1e-5, "{}", x(&a));
    // Removing the empty layer below moves the layer that holds the pose: the pose stays.
    a.remove_layer(0).unwrap();
    assert!(
        (x(&a) - 3.0).abs() < 1e-5,
        "after removing a layer: {}",
        x(&a)
    );
    a.update(0.2);
    assert!((x(&a) - 5.0).abs() < 1e-5, "{}", x(&a));
    a.update_model();
    assert!(
        (a.model()[0].w_axis.x - 5.0).abs() < 1e-5,
        "model of the pose"
    );
    // An additive layer on top blends onto the covering layer's output.
    let add = a.add_layer(BlendMode::Additive, 1.0, None).unwrap();
    a.play(add, slide(&s, 1.0, 1.0, 1.0, &[]), PlayOptions::default())
        .unwrap();
    a.update(0.1);
    assert!((x(&a) - 7.0).abs() < 1e-5, "6 + 1 additive: {}", x(&a));
    a.remove_layer(add).unwrap();

    // Root motion strips the root's horizontal translation from the pose (the covering
    // layer's output is copied out first): x stays 0 while the clip slides, through an
    // inertial transition too, where an animator without root motion sees the slide.
    let run = |root: bool| {
        let mut a = Animator::new(s.clone());
        if root {
            a.set_root_motion(Some(RootMotionConfig::default()))
                .unwrap();
        }
        a.play(0, slide(&s, 1.0, 0.0, 10.0, &[]), PlayOptions::default())
            .unwrap();
        let mut xs = Vec::new();
        for _ in 0..3 {
            a.update(0.1);
            xs.push(x(&a));
        }
        a.inertialize(
            0,
            slide(&s, 1.0, 2.0, 2.0, &[]),
            0.5,
            PlayOptions::default(),
        )
        .unwrap();
        for _ in 0..10 {
            a.update(0.05);
            xs.push(x(&a));
        }
        xs
    };
    let (plain, stripped) = (run(false), run(true));
    assert!((plain[2] - 3.0).abs() < 1e-5, "{plain:?}");
    assert!(plain.iter().any(|x| x.abs() > 1.0), "{plain:?}");
    assert!(
        stripped.iter().all(|x| x.abs() < 1e-5),
        "stripped: {stripped:?}"
    );
}

/// Skeletons of eight joints or more sample their slots into blocks that the updating
/// thread shares between all its animators. Animators of three skeletons (43, 24 and 19
/// joints), each cross-fading between two clips (CesiumMan into its one clip at another
/// phase; a second Fox the other way round, so that same-sized animators with other clips
/// follow each other), the robot with a third clip on a second layer, updated in turn on one
/// thread, give at every update the bits each gives updated alone on a thread of its own,
/// which shares its blocks with nobody.
#[test]
fn animators_sharing_a_threads_slot_blocks_give_their_own_poses() {
    let setups: [(&str, &str, &str); 4] = [
        (
            "gltf/robot_quaternius.glb",
            "Robot_Walking",
            "Robot_Running",
        ),
        ("gltf/Fox.glb", "Walk", "Run"),
        ("gltf/Fox.glb", "Run", "Walk"),
        ("gltf/CesiumMan.glb", "0", "0"),
    ];
    let make = |(file, a, b): (&str, &str, &str)| {
        let asset = skelett_io::load(data(file)).unwrap();
        let mut anim = Animator::new(asset.skeleton.clone());
        anim.play(0, asset.clip(a).unwrap().clone(), PlayOptions::default())
            .unwrap();
        let later = PlayOptions {
            start: 0.3,
            ..Default::default()
        };
        anim.crossfade(0, asset.clip(b).unwrap().clone(), 2.0, Curve::Linear, later)
            .unwrap();
        if file.contains("robot") {
            let wave = anim.add_layer(BlendMode::Override, 0.5, None).unwrap();
            let idle = asset.clip("Robot_Idle").unwrap().clone();
            anim.play(wave, idle.clone(), PlayOptions::default())
                .unwrap();
            anim.crossfade(wave, idle, 1.0, Curve::Linear, later)
                .unwrap();
        }
        anim
    };
    let steps = 40;
    let run_alone = |setup| {
        std::thread::spawn(move || {
            let mut anim = make(setup);
            (0..steps)
                .map(|_| {
                    anim.update(1.0 / 30.0);
                    anim.pose().to_vec()
                })
                .collect::<Vec<_>>()
        })
        .join()
        .unwrap()
    };
    let alone: Vec<Vec<Vec<Transform>>> = setups.iter().map(|&s| run_alone(s)).collect();
    let mut together: Vec<Animator> = setups.iter().map(|&s| make(s)).collect();
    let mut expected: Vec<_> = alone.iter().map(|poses| poses.iter()).collect();
    for step in 0..steps {
        for ((anim, want), setup) in together.iter_mut().zip(&mut expected).zip(&setups) {
            anim.update(1.0 / 30.0);
            let want = want.next().unwrap();
            assert_eq!(anim.pose(), &want[..], "{} step {step}", setup.0);
        }
    }
    // The cross-fades were under way: both clips of a layer sampled and blended.
    assert!(together.iter().all(|a| a.players(0).len() == 2));
}

/// The shared slot blocks remember which clip's static joints they hold; two animators
/// whose clips hold a joint still at different values (a one-key channel), cross-fading on
/// one thread in turn, each keep their own clip's value there.
#[test]
fn shared_slot_blocks_keep_each_clips_static_joints() {
    let s = Arc::new(
        RawSkeleton {
            joints: (0..9)
                .map(|i| RawJoint {
                    name: format!("j{i}"),
                    parent: (i > 0).then(|| i - 1),
                    rest: Transform::IDENTITY,
                })
                .collect(),
            ..Default::default()
        }
        .build()
        .unwrap(),
    );
    // j0 slides; j5 holds still at x = `held` (one key).
    let clip = |held: f32| {
        Arc::new(
            RawClip {
                name: format!("held{held}"),
                start: 0.0,
                duration: 1.0,
                channels: vec![
                    RawChannel {
                        joint: "j0".into(),
                        target: Target::Translation,
                        interpolation: Interpolation::Linear,
                        times: vec![0.0, 1.0],
                        values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::Y]),
                    },
                    RawChannel {
                        joint: "j5".into(),
                        target: Target::Translation,
                        interpolation: Interpolation::Linear,
                        times: vec![0.0],
                        values: RawValues::Vec3(vec![Vec3::X * held]),
                    },
                ],
            }
            .build(&s)
            .unwrap(),
        )
    };
    let mut anims: Vec<Animator> = [1.0f32, 2.0]
        .iter()
        .map(|&held| {
            let mut a = Animator::new(s.clone());
            a.play(0, clip(held), PlayOptions::default()).unwrap();
            a.crossfade(0, clip(held), 5.0, Curve::Linear, PlayOptions::default())
                .unwrap();
            a
        })
        .collect();
    for _ in 0..5 {
        for (a, held) in anims.iter_mut().zip([1.0f32, 2.0]) {
            a.update(0.1);
            assert_eq!(a.players(0).len(), 2, "cross-fading");
            // Both slots hold the same value there: their blend is it, to rounding.
            let got = a.pose()[5].translation;
            assert!(
                (got - Vec3::X * held).length() < 1e-6,
                "{got} against {held}"
            );
        }
    }
}

/// Bits of a crowd's poses and model matrices after each frame.
fn crowd_bits(crowd: &[(Animator, Vec<glam::Mat4>)]) -> Vec<u32> {
    crowd
        .iter()
        .flat_map(|(a, m)| {
            let pose = a.pose().iter().flat_map(|t| {
                let (r, tr, s) = (t.rotation, t.translation, t.scale);
                r.to_array()
                    .into_iter()
                    .chain(tr.to_array())
                    .chain(s.to_array())
            });
            let model = m.iter().flat_map(|m| m.to_cols_array());
            pose.chain(model).map(f32::to_bits).collect::<Vec<_>>()
        })
        .collect()
}

/// `crowd::for_each_prefetched` with `Animator::prefetch` gives the plain loop's bits, frame
/// for frame, through changes that leave the noted blocks stale for one update (a layer
/// added, removed, clips cross-faded in, an inertial switch, a compact clip, a modifier):
/// the list only steers prefetches. Fox (blocks of eight joints) and a three-joint skeleton
/// (slot poses as rows).
#[test]
fn prefetching_a_crowd_changes_no_bits() {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let sk = fox.skeleton.clone();
    let (walk, run, survey) = (
        fox.clip("Walk").unwrap().clone(),
        fox.clip("Run").unwrap().clone(),
        fox.clip("Survey").unwrap().clone(),
    );
    let compact = Arc::new(
        skelett::compress::compress(&sk, &run, &Default::default())
            .unwrap()
            .0,
    );
    let three = {
        let j = |name: &str, parent: Option<usize>| RawJoint {
            name: name.into(),
            parent,
            rest: Transform::new(Vec3::Y, Quat::IDENTITY, Vec3::ONE),
        };
        Arc::new(
            RawSkeleton {
                joints: vec![j("root", None), j("a", Some(0)), j("b", Some(1))],
                ..Default::default()
            }
            .build()
            .unwrap(),
        )
    };
    let (short_a, short_b) = (
        slide(&three, 1.0, 0.0, 1.0, &[]),
        slide(&three, 0.7, 2.0, -1.0, &[]),
    );
    for (skeleton, a, b) in [
        (sk.clone(), walk.clone(), run.clone()),
        (three.clone(), short_a.clone(), short_b.clone()),
    ] {
        let make = |i: usize| {
            let mut anim = Animator::new(skeleton.clone());
            let sync = PlayOptions {
                sync_group: Some(0),
                start: (i as f32 * 0.618).fract(),
                ..Default::default()
            };
            anim.play(0, a.clone(), sync).unwrap();
            anim.crossfade(0, b.clone(), 2.0, Curve::SmoothStep, sync)
                .unwrap();
            (anim, vec![glam::Mat4::IDENTITY; skeleton.len()])
        };
        let mut plain: Vec<_> = (0..16).map(make).collect();
        let mut fetched: Vec<_> = (0..16).map(make).collect();
        let fox_sized = skeleton.len() == sk.len();
        for frame in 0..90 {
            for crowd in [&mut plain, &mut fetched] {
                // The same changes to both crowds, between updates.
                for (i, (anim, _)) in crowd.iter_mut().enumerate() {
                    match (frame, i % 4) {
                        (10, 0) => {
                            anim.add_layer(BlendMode::Override, 0.5, None).unwrap();
                        }
                        (12, 0) => {
                            let c = if fox_sized {
                                survey.clone()
                            } else {
                                short_b.clone()
                            };
                            anim.play(1, c, PlayOptions::default()).unwrap();
                        }
                        (30, 0) => anim.remove_layer(1).unwrap(),
                        (20, 1) => {
                            let c = if fox_sized {
                                compact.clone()
                            } else {
                                short_a.clone()
                            };
                            anim.crossfade(0, c, 0.3, Curve::Linear, PlayOptions::default())
                                .unwrap();
                        }
                        (40, 2) => {
                            anim.inertialize(0, a.clone(), 0.25, PlayOptions::default())
                                .unwrap();
                        }
                        (50, 3) if fox_sized => {
                            let head = skeleton.find("b_Head_05").unwrap();
                            anim.add_modifier(
                                Modifier::Aim {
                                    chain: vec![head],
                                    weights: vec![1.0],
                                    aim: ik::Aim::new(Vec3::new(0.0, 50.0, 100.0), Vec3::Z),
                                },
                                1.0,
                            )
                            .unwrap();
                        }
                        _ => {}
                    }
                }
            }
            let update = |c: &mut (Animator, Vec<glam::Mat4>)| {
                c.0.update(1.0 / 60.0);
                local_to_model(&skeleton, c.0.pose(), 0, &mut c.1).unwrap();
            };
            plain.iter_mut().for_each(update);
            crowd::for_each_prefetched(
                &mut fetched,
                |next| {
                    next.0.prefetch();
                    crowd::prefetch(&next.1);
                },
                update,
            );
            assert_eq!(
                crowd_bits(&plain),
                crowd_bits(&fetched),
                "frame {frame}, {} joints",
                skeleton.len()
            );
        }
    }
}

//! Property tests of clip building and sampling against a naive, independent evaluator.
//!
//! The naive evaluator below reads the *raw* channel (before redundant-key removal), finds
//! the segment by linear search and interpolates with textbook formulas in f64. Sampling the
//! built clip must agree with it wherever the channel is continuous, whatever the cache saw.

use glam::{Quat, Vec3};
use proptest::prelude::*;
use skelett::*;

#[derive(Clone, Debug)]
struct Chan {
    target: Target,
    interp: Interpolation,
    times: Vec<f32>,
    /// Per key: x, y, z(, w); for cubic, in-tangent, value, out-tangent.
    values: Vec<[f32; 4]>,
}

fn chan() -> impl Strategy<Value = Chan> {
    let target = prop_oneof![
        Just(Target::Translation),
        Just(Target::Rotation),
        Just(Target::Scale)
    ];
    let interp = prop_oneof![
        Just(Interpolation::Step),
        Just(Interpolation::Linear),
        Just(Interpolation::CubicSpline)
    ];
    (target, interp, 1usize..12, -1.0f32..1.0)
        .prop_flat_map(|(target, interp, n, t0)| {
            let per = if interp == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            // Values from a small set so that repeats (redundant keys) are common.
            let value = prop_oneof![
                Just([0.5f32, -0.25, 1.0, 0.5]),
                Just([0.5f32, -0.25, 1.0, 0.5]),
                prop::array::uniform4(-1.0f32..1.0),
            ];
            let tangent = prop_oneof![Just([0.0f32; 4]), prop::array::uniform4(-2.0f32..2.0)];
            (
                Just(target),
                Just(interp),
                Just(t0),
                proptest::collection::vec(0.05f32..0.5, n),
                proptest::collection::vec((tangent.clone(), value, tangent), n),
                Just(per),
            )
        })
        .prop_map(|(target, interp, t0, gaps, keys, per)| {
            let mut times = Vec::new();
            let mut t = t0;
            for g in gaps {
                times.push(t);
                t += g;
            }
            let mut values = Vec::new();
            for (mut a, mut v, mut b) in keys {
                if target != Target::Rotation {
                    // Translations and scales have three components.
                    a[3] = 0.0;
                    v[3] = 0.0;
                    b[3] = 0.0;
                }
                if target == Target::Rotation && v.iter().map(|x| x * x).sum::<f32>() < 0.01 {
                    v = [0.0, 0.0, 0.0, 1.0];
                }
                if per == 3 {
                    values.extend([a, v, b]);
                } else {
                    values.push(v);
                }
            }
            Chan {
                target,
                interp,
                times,
                values,
            }
        })
}

fn skeleton() -> Skeleton {
    RawSkeleton {
        joints: vec![
            RawJoint {
                name: "root".into(),
                parent: None,
                rest: Transform::IDENTITY,
            },
            RawJoint {
                name: "child".into(),
                parent: Some(0),
                rest: Transform::new(Vec3::Y, Quat::IDENTITY, Vec3::ONE),
            },
        ],
        ..Default::default()
    }
    .build()
    .unwrap()
}

fn raw_clip(chans: &[Chan]) -> RawClip {
    let mut clip = RawClip {
        name: "prop".into(),
        channels: chans
            .iter()
            .enumerate()
            .map(|(i, c)| RawChannel {
                // At most one channel per joint and target: the test draws at most 2 channels
                // and puts them on different joints.
                joint: if i == 0 { "root" } else { "child" }.into(),
                target: c.target,
                interpolation: c.interp,
                times: c.times.clone(),
                values: if c.target == Target::Rotation {
                    RawValues::Quat(c.values.iter().map(|v| Quat::from_array(*v)).collect())
                } else {
                    RawValues::Vec3(
                        c.values
                            .iter()
                            .map(|v| Vec3::new(v[0], v[1], v[2]))
                            .collect(),
                    )
                },
            })
            .collect(),
        ..Default::default()
    };
    clip.fit_range_to_keys();
    clip
}

/// The channel's value at `t` by the textbook definitions, in f64.
fn naive(c: &Chan, t: f32) -> [f64; 4] {
    let per = if c.interp == Interpolation::CubicSpline {
        3
    } else {
        1
    };
    let val = |k: usize| c.values[k * per + per / 2].map(f64::from);
    let n = c.times.len();
    let rot = c.target == Target::Rotation;
    let norm = |v: [f64; 4]| {
        if rot {
            let l = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v.map(|x| x / l)
        } else {
            v
        }
    };
    if t <= c.times[0] || n == 1 {
        return norm(val(0));
    }
    if t >= c.times[n - 1] {
        return norm(val(n - 1));
    }
    let k = (0..n - 1).rfind(|&k| c.times[k] <= t).unwrap();
    let (t0, t1) = (c.times[k] as f64, c.times[k + 1] as f64);
    let u = (t as f64 - t0) / (t1 - t0);
    match c.interp {
        Interpolation::Step => norm(val(k)),
        Interpolation::Linear if !rot => {
            let (a, b) = (val(k), val(k + 1));
            [0, 1, 2, 3].map(|i| a[i] + (b[i] - a[i]) * u)
        }
        Interpolation::Linear => {
            let a = norm(val(k));
            let mut b = norm(val(k + 1));
            let mut d: f64 = (0..4).map(|i| a[i] * b[i]).sum();
            if d < 0.0 {
                b = b.map(|x| -x);
                d = -d;
            }
            let th = d.min(1.0).acos();
            if th < 1e-7 {
                return a;
            }
            let (w0, w1) = (((1.0 - u) * th).sin() / th.sin(), (u * th).sin() / th.sin());
            [0, 1, 2, 3].map(|i| a[i] * w0 + b[i] * w1)
        }
        Interpolation::CubicSpline => {
            let dt = t1 - t0;
            let v0 = val(k);
            let b0 = c.values[3 * k + 2].map(f64::from);
            let a1 = c.values[3 * (k + 1)].map(f64::from);
            let v1 = val(k + 1);
            let (u2, u3) = (u * u, u * u * u);
            let v = [0, 1, 2, 3].map(|i| {
                (2.0 * u3 - 3.0 * u2 + 1.0) * v0[i]
                    + (u3 - 2.0 * u2 + u) * dt * b0[i]
                    + (-2.0 * u3 + 3.0 * u2) * v1[i]
                    + (u3 - u2) * dt * a1[i]
            });
            norm(v)
        }
    }
}

fn got(pose: &[Transform], joint: usize, target: Target) -> [f64; 4] {
    let j = &pose[joint];
    match target {
        Target::Translation => j.translation.extend(0.0).to_array(),
        Target::Scale => j.scale.extend(0.0).to_array(),
        Target::Rotation => j.rotation.to_array(),
    }
    .map(f64::from)
}

fn close(a: [f64; 4], b: [f64; 4], rot: bool, tol: f64) -> bool {
    let s = if rot && (0..4).map(|i| a[i] * b[i]).sum::<f64>() < 0.0 {
        -1.0
    } else {
        1.0
    };
    (0..4).all(|i| (a[i] - s * b[i]).abs() <= tol * (1.0 + b[i].abs()))
}

/// Tolerance for comparing f32 sampling with f64 truth; cubic rotations are normalised after a
/// spline whose values may pass near zero, which amplifies rounding.
fn tol(c: &Chan) -> f64 {
    if c.interp == Interpolation::CubicSpline {
        2e-4
    } else {
        2e-5
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Sampling the built clip (redundant keys removed) equals the naive evaluation of the raw
    /// keys at random times, at key times, and between keys.
    #[test]
    fn built_clip_matches_raw_keys(chans in proptest::collection::vec(chan(), 1..=2), ts in proptest::collection::vec(-2.0f32..8.0, 1..20)) {
        let s = skeleton();
        let clip = raw_clip(&chans).build(&s).unwrap();
        let mut pose = Pose::rest(&s);
        let mut cache = SamplingCache::for_clip(&clip);
        let mut times = ts.clone();
        for c in &chans {
            times.extend(c.times.iter().copied()); // every key time
            times.extend(c.times.windows(2).map(|w| (w[0] + w[1]) / 2.0));
        }
        for &t in &times {
            sample(&clip, t, &mut cache, &mut pose).unwrap();
            for (i, c) in chans.iter().enumerate() {
                let want = naive(c, t);
                let have = got(&pose, i, c.target);
                prop_assert!(close(have, want, c.target == Target::Rotation, tol(c)),
                    "t={t} chan {i} {:?} {:?}: got {have:?} want {want:?}", c.target, c.interp);
            }
        }
    }

    /// Redundant-key removal never changes a sampled value: the reduced clip and the clip
    /// built with every key agree everywhere (up to the last bit of a slerp between two equal
    /// keys, whose weights sum to 1 within 2e-7).
    #[test]
    fn removal_never_changes_a_sample(chans in proptest::collection::vec(chan(), 1..=2), ts in proptest::collection::vec(-2.0f32..8.0, 1..40)) {
        let s = skeleton();
        let raw = raw_clip(&chans);
        let reduced = raw.build(&s).unwrap();
        let (full, _) = raw.build_with(&s, &BuildOptions { keep_redundant_keys: true, ..Default::default() }).unwrap();
        let mut a = Pose::rest(&s);
        let mut b = Pose::rest(&s);
        let mut times = ts;
        for c in &chans {
            times.extend(c.times.iter().copied());
            times.extend(c.times.windows(2).map(|w| (w[0] + w[1]) / 2.0));
        }
        for &t in &times {
            sample_uncached(&reduced, t, &mut a).unwrap();
            sample_uncached(&full, t, &mut b).unwrap();
            for j in 0..2 {
                prop_assert!((a[j].translation - b[j].translation).abs().max_element() <= 1e-6, "t={} {:?} {:?}", t, a[j], b[j]);
                prop_assert!((a[j].scale - b[j].scale).abs().max_element() <= 1e-6);
                prop_assert!(a[j].rotation.dot(b[j].rotation).abs() >= 1.0 - 1e-6, "t={} {:?} {:?}", t, a[j], b[j]);
            }
        }
    }

    /// At a key's time the sample is that key's value.
    #[test]
    fn sampling_at_a_key_returns_it(c in chan()) {
        let s = skeleton();
        let clip = raw_clip(std::slice::from_ref(&c)).build(&s).unwrap();
        let mut pose = Pose::rest(&s);
        let per = if c.interp == Interpolation::CubicSpline { 3 } else { 1 };
        for (k, &t) in c.times.iter().enumerate() {
            sample_uncached(&clip, t, &mut pose).unwrap();
            let mut key = c.values[k * per + per / 2].map(f64::from);
            if c.target == Target::Rotation {
                let l = key.iter().map(|x| x * x).sum::<f64>().sqrt();
                key = key.map(|x| x / l);
            }
            prop_assert!(close(got(&pose, 0, c.target), key, c.target == Target::Rotation, 1e-5));
        }
    }

    /// LINEAR and CUBICSPLINE channels are continuous: approaching a key from the left gives
    /// the key's value.
    #[test]
    fn linear_and_cubic_are_continuous(c in chan()) {
        prop_assume!(c.interp != Interpolation::Step);
        let s = skeleton();
        let clip = raw_clip(std::slice::from_ref(&c)).build(&s).unwrap();
        let mut left = Pose::rest(&s);
        let mut at = Pose::rest(&s);
        for &t in c.times.iter().skip(1) {
            sample_uncached(&clip, t - 1e-5, &mut left).unwrap();
            sample_uncached(&clip, t, &mut at).unwrap();
            // Slopes are bounded (values in -1..1, gaps >= 0.05 s, tangents <= 2; a cubic's
            // derivative stays under about 100/s, a normalised one under a few times that):
            // 1e-5 s moves a value by under 2e-3; a discontinuity would move it by far more.
            prop_assert!(close(got(&left, 0, c.target), got(&at, 0, c.target), c.target == Target::Rotation, 2e-3));
        }
    }

    /// Forward, backward and random playback through the cache give exactly the values of
    /// sampling without it.
    #[test]
    fn cache_never_changes_a_sample(chans in proptest::collection::vec(chan(), 1..=2), seeks in proptest::collection::vec(prop_oneof![-1.0f32..7.0, Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY)], 1..30), step in 0.001f32..0.2) {
        let s = skeleton();
        let clip = raw_clip(&chans).build(&s).unwrap();
        let mut cache = SamplingCache::default();
        let mut a = Pose::rest(&s);
        let mut b = Pose::rest(&s);
        let mut times: Vec<f32> = (0..100).map(|i| -0.5 + i as f32 * step).collect();
        times.extend((0..100).rev().map(|i| -0.5 + i as f32 * step));
        times.extend(seeks);
        for t in times {
            sample(&clip, t, &mut cache, &mut a).unwrap();
            sample_uncached(&clip, t, &mut b).unwrap();
            prop_assert_eq!(&a[..], &b[..], "t = {}", t);
        }
    }
}

#[test]
fn build_reports_every_unbound_joint_and_can_skip_them() {
    let s = skeleton();
    let c = Chan {
        target: Target::Translation,
        interp: Interpolation::Linear,
        times: vec![0.0, 1.0],
        values: vec![[0.0; 4], [1.0; 4]],
    };
    let mut raw = raw_clip(&[c.clone(), c]);
    raw.channels[0].joint = "tail".into();
    raw.channels[1].joint = "ear".into();
    match raw.build(&s) {
        Err(Error::UnboundChannels { joints, .. }) => assert_eq!(joints, ["tail", "ear"]),
        other => panic!("{other:?}"),
    }
    let (clip, report) = raw
        .build_with(
            &s,
            &BuildOptions {
                unbound: UnboundChannels::Skip,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(report.unbound, ["tail", "ear"]);
    assert_eq!(clip.track_count(), 0);
}

#[test]
fn build_rejects_bad_keys_with_a_clear_error() {
    let s = skeleton();
    let base = Chan {
        target: Target::Translation,
        interp: Interpolation::Linear,
        times: vec![0.0, 1.0, 2.0],
        values: vec![[0.0; 4], [1.0; 4], [2.0; 4]],
    };
    type Breaker = Box<dyn Fn(&mut RawChannel)>;
    let cases: Vec<(Breaker, &str)> = vec![
        (Box::new(|c| c.times[1] = f32::NAN), "not finite"),
        (Box::new(|c| c.times[2] = 0.5), "increase strictly"),
        (Box::new(|c| c.times[1] = 0.0), "increase strictly"),
        (
            Box::new(|c| c.values = RawValues::Vec3(vec![Vec3::NAN; 3])),
            "not finite",
        ),
        (
            Box::new(|c| c.values = RawValues::Vec3(vec![Vec3::ZERO; 2])),
            "need 3 values",
        ),
        (Box::new(|c| c.times.clear()), "no keys"),
        (
            Box::new(|c| c.values = RawValues::Quat(vec![Quat::IDENTITY; 3])),
            "not a rotation",
        ),
        (
            Box::new(|c| {
                c.target = Target::Rotation;
                c.values = RawValues::Quat(vec![Quat::from_xyzw(0.0, 0.0, 0.0, 0.0); 3])
            }),
            "zero quaternion",
        ),
    ];
    for (break_it, expect) in cases {
        let mut raw = raw_clip(std::slice::from_ref(&base));
        break_it(&mut raw.channels[0]);
        let e = raw.build(&s).unwrap_err().to_string();
        assert!(e.contains(expect), "{e:?} should mention {expect:?}");
        assert!(e.contains("root"), "{e:?} should name the joint");
    }
    let mut dup = raw_clip(&[base.clone(), base]);
    dup.channels[1].joint = "root".into();
    assert!(dup
        .build(&s)
        .unwrap_err()
        .to_string()
        .contains("second channel"));
}

#[test]
fn constant_and_rest_channels_leave_the_track_list() {
    let s = skeleton();
    let constant = Chan {
        target: Target::Scale,
        interp: Interpolation::Linear,
        times: vec![0.0, 1.0, 2.0],
        values: vec![[2.0; 4]; 3],
    };
    let rest = Chan {
        target: Target::Translation,
        interp: Interpolation::Step,
        times: vec![0.0, 1.0],
        values: vec![[0.0, 1.0, 0.0, 0.0]; 2], // the child's rest translation
    };
    let (clip, report) = raw_clip(&[constant, rest])
        .build_with(&s, &BuildOptions::default())
        .unwrap();
    assert_eq!(clip.track_count(), 0);
    assert_eq!(report.constant_channels, 1);
    assert_eq!(report.rest_channels, 1);
    assert_eq!(clip.base_pose()[0].scale, Vec3::splat(2.0));
    assert_eq!(report.keys_in, 5);
    assert_eq!(report.keys_out, 1);
}

/// A piecewise-linear motion baked at every frame, as exporters write it: the corners of the
/// path, and the frames between them computed in f64 and stored as f32.
fn baked(corners: &[([f32; 3], f32)], fps: f32) -> (Vec<f32>, Vec<Vec3>, Vec<Quat>) {
    let mut times = Vec::new();
    let mut moves = Vec::new();
    let mut turns = Vec::new();
    let total: usize = corners.len() - 1;
    let frames_per_leg = 7;
    for leg in 0..total {
        let (a, ra) = corners[leg];
        let (b, rb) = corners[leg + 1];
        let qa = glam::DQuat::from_rotation_y(ra as f64);
        let qb = glam::DQuat::from_rotation_y(rb as f64);
        let last = if leg + 1 == total {
            frames_per_leg
        } else {
            frames_per_leg - 1
        };
        for f in 0..=last {
            let u = f as f64 / frames_per_leg as f64;
            times.push((leg * frames_per_leg + f) as f32 / fps);
            let p: [f64; 3] =
                std::array::from_fn(|i| a[i] as f64 + (b[i] as f64 - a[i] as f64) * u);
            moves.push(Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32));
            let q = qa.slerp(qb, u);
            turns.push(Quat::from_xyzw(
                q.x as f32, q.y as f32, q.z as f32, q.w as f32,
            ));
        }
    }
    (times, moves, turns)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Keys on a straight line or a great arc between two others go; the corners stay, and
    /// the reduced clip samples like the full one.
    #[test]
    fn collinear_keys_are_removed_losslessly(
        corners in proptest::collection::vec((prop::array::uniform3(-50.0f32..50.0), -1.5f32..1.5), 2..6),
    ) {
        let s = skeleton();
        let (times, moves, turns) = baked(&corners, 30.0);
        let raw = RawClip {
            name: "baked".into(),
            start: 0.0,
            duration: *times.last().unwrap(),
            channels: vec![
                RawChannel { joint: "root".into(), target: Target::Translation,
                    interpolation: Interpolation::Linear, times: times.clone(),
                    values: RawValues::Vec3(moves) },
                RawChannel { joint: "child".into(), target: Target::Rotation,
                    interpolation: Interpolation::Linear, times: times.clone(),
                    values: RawValues::Quat(turns) },
            ],
        };
        let (reduced, report) = raw.build_with(&s, &BuildOptions::default()).unwrap();
        let (full, _) = raw.build_with(&s, &BuildOptions { keep_redundant_keys: true, ..Default::default() }).unwrap();
        // At most the corners (fewer where a corner happens to lie on a line).
        for (i, (_, _, _, keys)) in reduced.channels().enumerate() {
            prop_assert!(keys <= corners.len(), "channel {i}: {keys} keys for {} corners", corners.len());
        }
        prop_assert!(report.keys_out <= 2 * corners.len());
        let scale = corners.iter().flat_map(|c| c.0).fold(1.0f32, |m, x| m.max(x.abs()));
        let (mut a, mut b) = (Pose::rest(&s), Pose::rest(&s));
        for k in 0..=4 * times.len() {
            let t = k as f32 / (4.0 * 30.0);
            sample_uncached(&reduced, t, &mut a).unwrap();
            sample_uncached(&full, t, &mut b).unwrap();
            prop_assert!((a[0].translation - b[0].translation).abs().max_element() <= 2e-6 * scale,
                "t={t}: {} vs {}", a[0].translation, b[0].translation);
            prop_assert!(a[1].rotation.dot(b[1].rotation).abs() >= 1.0 - 1e-6,
                "t={t}: {} vs {}", a[1].rotation, b[1].rotation);
        }
    }
}

#[test]
fn keys_off_the_line_stay() {
    let s = skeleton();
    // A bump of one part in a hundred thousand is motion, not rounding: it stays.
    let raw = RawClip {
        name: "bump".into(),
        start: 0.0,
        duration: 2.0,
        channels: vec![RawChannel {
            joint: "root".into(),
            target: Target::Translation,
            interpolation: Interpolation::Linear,
            times: vec![0.0, 1.0, 2.0],
            values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::new(1.0, 1e-5, 0.0), Vec3::X * 2.0]),
        }],
    };
    let clip = raw.build(&s).unwrap();
    assert_eq!(clip.channels().next().unwrap().3, 3);
}

proptest! {
    /// At the last key's time (where `(t - t0) / dt` can round to just below 1) sampling
    /// gives exactly what holding the last key gives, cached or not.
    #[test]
    fn the_last_key_time_gives_the_held_value(
        start in -5.0f32..5.0,
        steps in proptest::collection::vec(0.001f32..0.5, 2..8),
        values in proptest::collection::vec(prop::array::uniform3(-1e3f32..1e3), 8),
    ) {
        let s = skeleton();
        let mut times = vec![start];
        for d in &steps {
            times.push(times.last().unwrap() + d);
        }
        times.dedup();
        prop_assume!(times.len() >= 2);
        let n = times.len();
        let raw = RawClip {
            name: "end".into(),
            start,
            duration: times[n - 1] - start,
            channels: vec![RawChannel {
                joint: "root".into(),
                target: Target::Translation,
                interpolation: Interpolation::Linear,
                times: times.clone(),
                values: RawValues::Vec3(values[..n].iter().map(|v| Vec3::from(*v)).collect()),
            }],
        };
        let clip = raw.build(&s).unwrap();
        let (mut at, mut held) = (Pose::rest(&s), Pose::rest(&s));
        sample_uncached(&clip, times[n - 1], &mut at).unwrap();
        sample_uncached(&clip, times[n - 1] + 1.0, &mut held).unwrap();
        prop_assert_eq!(at[0], held[0]);
        let mut cache = SamplingCache::for_clip(&clip);
        sample(&clip, times[n - 1], &mut cache, &mut at).unwrap();
        prop_assert_eq!(at[0], held[0]);
    }
}

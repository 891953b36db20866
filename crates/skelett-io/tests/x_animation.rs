//! `.x` animation details: matrix keys that hold shear are split with a warning, and
//! `AnimationOptions` (closed cycles, spline positions) are reported by default and honoured
//! on request (`x::Options::animation_options`), checked against values computed here from
//! the file's own keys.

mod common;

use std::path::Path;

use glam::{Mat4, Quat, Vec3};
use skelett::{sample_uncached, ChannelValues, Interpolation, Pose, Target};
use skelett_io::x::{from_bytes_with, Options};

/// Two frames; the child's AnimationSet has two matrix keys: a rotation with a translation,
/// then `second` (row-major, row-vector, as .x writes it).
fn matrix_keys(second: &str) -> String {
    format!(
        "xof 0303txt 0032\n\
         Frame Root {{ FrameTransformMatrix {{ 1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1;; }}\n\
           Frame Arm {{ FrameTransformMatrix {{ 1,0,0,0, 0,1,0,0, 0,0,1,0, 1,0,0,1;; }} }}\n\
         }}\n\
         AnimTicksPerSecond {{ 30; }}\n\
         AnimationSet Wave {{ Animation {{ {{ Arm }}\n\
           AnimationKey {{ 4; 2;\n\
             0; 16; 0,1,0,0, -1,0,0,0, 0,0,1,0, 1,2,3,1;;,\n\
             30; 16; {second};;;\n\
           }} }} }}\n"
    )
}

#[test]
fn matrix_keys_with_shear_are_split_with_a_warning() {
    let clean = matrix_keys("2,0,0,0, 0,2,0,0, 0,0,2,0, 0,0,0,1");
    let a = from_bytes_with(clean.as_bytes(), Path::new("clean.x"), &Options::default()).unwrap();
    assert!(
        a.warnings.iter().all(|w| !w.contains("shear")),
        "{:?}",
        a.warnings
    );
    let clip = &a.clips[0];
    let mut pose = Pose::rest(&a.skeleton);
    sample_uncached(clip, 0.0, &mut pose).unwrap();
    // Row-vector rows are the matrix's columns: x maps to +y, y to -x (a quarter turn about Z).
    let want = Mat4::from_cols_array(&[
        0.0, 1.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 2.0, 3.0, 1.0,
    ]);
    assert!(pose[1].to_mat4().abs_diff_eq(want, 1e-6), "{:?}", pose[1]);
    sample_uncached(clip, 1.0, &mut pose).unwrap();
    assert!((pose[1].scale - Vec3::splat(2.0)).abs().max_element() < 1e-6);

    // x' = x + 0.5 y: shear.
    let sheared = matrix_keys("1,0,0,0, 0.5,1,0,0, 0,0,1,0, 0,0,0,1");
    let a = from_bytes_with(
        sheared.as_bytes(),
        Path::new("shear.x"),
        &Options::default(),
    )
    .unwrap();
    let w: Vec<&String> = a.warnings.iter().filter(|w| w.contains("shear")).collect();
    assert_eq!(w.len(), 1, "{:?}", a.warnings);
    assert!(
        w[0].contains("1 of the 2 matrix keys") && w[0].contains("\"Arm\""),
        "{}",
        w[0]
    );

    // A frame matrix with shear is reported too.
    let frame = clean.replacen(
        "1,0,0,0, 0,1,0,0, 0,0,1,0, 1,0,0,1",
        "1,0,0,0, 0.3,1,0,0, 0,0,1,0, 1,0,0,1",
        1,
    );
    let a = from_bytes_with(frame.as_bytes(), Path::new("frame.x"), &Options::default()).unwrap();
    assert!(
        a.warnings
            .iter()
            .any(|w| w.starts_with("Frame \"Arm\"") && w.contains("shear")),
        "{:?}",
        a.warnings
    );
}

/// The angle between two rotations, in radians (by atan2: an f32 `acos` of their dot is only
/// good to about 5e-4 for near-equal rotations).
fn angle(a: Quat, b: Quat) -> f32 {
    let d = a * b.conjugate();
    2.0 * d.xyz().length().atan2(d.w.abs())
}

/// BCN_Epileptic asks for open cycles and spline positions in every animation
/// (`AnimationOptions { 1; 0; }`: Microsoft's documentation has 0 for closed, 1 for open, 0
/// for spline positions); a copy with `0; 0;` asks for closed ones too.
#[test]
fn animation_options_are_reported_or_honoured() {
    let path = common::data("x/BCN_Epileptic.X");
    let bytes = std::fs::read(&path).unwrap();
    let honour = Options {
        animation_options: true,
        ..Default::default()
    };
    let plain = from_bytes_with(&bytes, &path, &Options::default()).unwrap();
    let honoured = from_bytes_with(&bytes, &path, &honour).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let options = "AnimationOptions {\n   1;\n   0;\n  }";
    assert_eq!(text.matches(options).count(), 57);
    let closed_text = text.replace(options, "AnimationOptions {\n   0;\n   0;\n  }");
    let closed = from_bytes_with(closed_text.as_bytes(), &path, &honour).unwrap();
    let closed_plain = from_bytes_with(closed_text.as_bytes(), &path, &Options::default()).unwrap();
    assert!(
        plain.warnings.iter().any(|w| w
            .contains("AnimationOptions ask for 57 animations with spline positions;")
            && w.contains("--x-animation-options")),
        "{:?}",
        plain.warnings
    );
    assert!(
        closed_plain
            .warnings
            .iter()
            .any(|w| w.contains("ask for 57 closed cycles and 57 animations")),
        "{:?}",
        closed_plain.warnings
    );
    assert!(honoured
        .warnings
        .iter()
        .all(|w| !w.contains("AnimationOptions")));
    let (p, h, c) = (&plain.clips[0], &honoured.clips[0], &closed.clips[0]);
    // Open cycles keep their length; closed ones (keys every 1/30 s) one frame more.
    assert_eq!(p.frame_rate(), Some(30.0));
    assert_eq!(h.duration(), p.duration());
    assert!((c.duration() - (p.duration() + 1.0 / 30.0)).abs() < 1e-5);

    let sk = &plain.skeleton;
    let (mut a, mut b) = (Pose::rest(sk), Pose::rest(sk));
    // The closed cycle ends where it starts, and its last frame turns back halfway through.
    sample_uncached(c, c.end(), &mut a).unwrap();
    sample_uncached(p, p.start(), &mut b).unwrap();
    for j in 0..sk.len() {
        assert!(angle(a[j].rotation, b[j].rotation) < 1e-5, "joint {j}");
        assert!(
            (a[j].translation - b[j].translation).length() < 1e-5,
            "joint {j}"
        );
    }
    let mut last = Pose::rest(sk);
    sample_uncached(p, p.end(), &mut last).unwrap();
    sample_uncached(c, p.end() + 0.5 / 30.0, &mut a).unwrap();
    for j in 0..sk.len() {
        let mid = last[j].rotation.slerp(b[j].rotation, 0.5);
        assert!(angle(a[j].rotation, mid) < 1e-3, "joint {j}");
    }

    // Spline positions: a Catmull-Rom through the file's keys, computed here from the plain
    // (linear) clip's keys, half way between two keys.
    let mut checked = 0;
    let mut i = 0;
    while let Some(ch) = p.channel(i) {
        i += 1;
        if ch.target != Target::Translation || ch.times.len() < 4 {
            continue;
        }
        assert_eq!(ch.interpolation, Interpolation::Linear);
        let ChannelValues::Vec3(v) = ch.values else {
            panic!()
        };
        let v: Vec<Vec3> = v.iter().map(|&x| Vec3::from(x)).collect();
        let t = ch.times;
        let k = 1;
        let m = |k: usize| (v[k + 1] - v[k - 1]) / (t[k + 1] - t[k - 1]);
        let dt = t[k + 1] - t[k];
        let u = 0.5f32;
        let h00 = 2.0 * u * u * u - 3.0 * u * u + 1.0;
        let h10 = u * u * u - 2.0 * u * u + u;
        let h01 = -2.0 * u * u * u + 3.0 * u * u;
        let h11 = u * u * u - u * u;
        let want = v[k] * h00 + m(k) * dt * h10 + v[k + 1] * h01 + m(k + 1) * dt * h11;
        let at = t[k] + u * dt;
        sample_uncached(h, at, &mut a).unwrap();
        let got = a[ch.joint as usize].translation;
        let scale = (v[k + 1] - v[k]).length().max(1e-3);
        assert!(
            (got - want).length() < 1e-4 * scale.max(1.0),
            "joint {}: {got} vs {want}",
            ch.joint
        );
        // At the keys, the spline passes through them.
        sample_uncached(h, t[k], &mut a).unwrap();
        assert!((a[ch.joint as usize].translation - v[k]).length() < 1e-5);
        checked += 1;
    }
    assert!(checked > 0, "no animated positions with four keys");

    // A pose (Testwuson's Wuson_Bind: every key at one time) has no cycle to close.
    let path = common::data("x/Testwuson.X");
    let bytes = std::fs::read(&path).unwrap();
    // The file has a few Latin-1 bytes in comments: read lossily, it parses the same.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let closed = regex_free_close(&text);
    let plain = from_bytes_with(text.as_bytes(), &path, &Options::default()).unwrap();
    let closed = from_bytes_with(closed.as_bytes(), &path, &honour).unwrap();
    let bind = |a: &skelett_io::Asset| {
        a.clips
            .iter()
            .find(|c| c.name() == "Wuson_Bind")
            .unwrap()
            .duration()
    };
    assert_eq!(bind(&plain), bind(&closed));
    assert!(closed.clips[0].duration() > plain.clips[0].duration());
}

/// Every `AnimationOptions` of a text .x file set to closed cycles (`openclosed` 0).
fn regex_free_close(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("AnimationOptions {") {
        let (head, tail) = rest.split_at(i + "AnimationOptions {".len());
        out.push_str(head);
        let first = tail.find(';').unwrap();
        let digits = tail[..first].trim();
        if digits == "1" {
            out.push_str(&tail[..first].replace('1', "0"));
        } else {
            out.push_str(&tail[..first]);
        }
        rest = &tail[first..];
    }
    out.push_str(rest);
    out
}

/// An animation whose key holds no keys, asked to close its cycle, is refused like any
/// other empty channel, not a panic (found by review: closing took its first value).
#[test]
fn an_empty_key_with_animation_options_is_refused_cleanly() {
    let text = "xof 0303txt 0032\n\
        Frame Root { FrameTransformMatrix { 1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1;; } }\n\
        AnimationSet Empty { Animation { { Root }\n\
          AnimationKey { 0; 0; }\n\
          AnimationKey { 2; 2; 0; 3; 0,0,0;;, 30; 3; 1,0,0;;; }\n\
          AnimationOptions { 0; 0; } } }\n";
    // Refused as it is without the options: a channel needs keys.
    for animation_options in [false, true] {
        let options = Options {
            animation_options,
            ..Default::default()
        };
        let e = from_bytes_with(text.as_bytes(), Path::new("empty.x"), &options)
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty.x") && e.contains("has no keys"), "{e}");
    }
}

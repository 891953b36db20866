//! `skelett bench --scaling`: how the per-joint cost of a frame grows with the number of
//! characters and with the size of their skeletons, so a user sees where the caches stop
//! helping; optionally drawn as an SVG plot (`--plot`).
//!
//! The frame is what every character of a crowd does each frame: advance its own clock by
//! 1/60 s, sample its clip through its own [`SamplingCache`] into its own pose, and compute
//! its model-space matrices. Every character has its own buffers and time (so nothing is
//! shared but the skeleton and the clip, as in a game); a measurement updates all of them
//! once, and the figure is the median over rounds of that time divided by characters x
//! joints.
//!
//! - **Characters**: 1 to 100,000 characters of the file's skeleton and first clip (the
//!   embedded Fox when no file is given), one thread and all cores (rayon).
//! - **Joints**: generated "millipedes" of 20 to 1,000 joints (the range of ozz-animation's
//!   millipede sample): a spine whose every segment carries a pair of two-joint legs, each
//!   joint's rotation keyed at 30 Hz over a one-second cycle; one character updated over and
//!   over (its data stays in the caches as long as they hold it) and 256 distinct ones.
//!
//! The SVG is written by hand (two log-scale panels of lines and points): a plotting crate
//! would pull a font and raster stack into the CLI for two charts.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;

use glam::{Mat4, Quat, Vec3};
use rayon::prelude::*;
use serde::Serialize;
use skelett::{
    local_to_model, sample, Clip, Interpolation, Pose, RawChannel, RawClip, RawJoint, RawSkeleton,
    RawValues, SamplingCache, Skeleton, Target, Transform,
};

use crate::bench::median_ns;
use crate::{outln, Result};

/// Character counts measured on the file's skeleton.
const CHARACTERS: [usize; 6] = [1, 10, 100, 1_000, 10_000, 100_000];
/// Joint counts of the generated skeletons.
const JOINTS: [usize; 7] = [20, 50, 100, 200, 300, 500, 1_000];
/// Distinct characters in the "crowd" line of the joints panel.
const CROWD: usize = 256;

#[derive(Serialize, Clone, Copy)]
struct Point {
    characters: usize,
    joints: usize,
    ns_per_joint: f64,
    /// All cores (rayon); characters panel only.
    ns_per_joint_all_cores: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    source: String,
    clip: String,
    rounds: usize,
    threads: usize,
    /// Characters of the file's skeleton one 60 Hz frame (16.7 ms) holds on all cores, from
    /// the largest crowd's figure.
    characters_per_frame_all_cores: Option<f64>,
    by_characters: Vec<Point>,
    by_joints_one: Vec<Point>,
    by_joints_crowd: Vec<Point>,
}

struct Character {
    time: f32,
    cache: SamplingCache,
    pose: Pose,
    model: Vec<Mat4>,
}

impl Character {
    fn new(skeleton: &Skeleton, clip: &Clip, time: f32) -> Self {
        Character {
            time,
            cache: SamplingCache::for_clip(clip),
            pose: Pose::rest(skeleton),
            model: vec![Mat4::IDENTITY; skeleton.len()],
        }
    }

    #[inline]
    fn update(&mut self, skeleton: &Skeleton, clip: &Clip) {
        self.time += 1.0 / 60.0;
        if self.time > clip.start() + clip.duration() {
            self.time -= clip.duration().max(1.0 / 60.0);
        }
        // Both only fail for a clip or pose of another skeleton, which `crowd` rules out.
        let _ = sample(clip, self.time, &mut self.cache, &mut self.pose);
        let _ = local_to_model(skeleton, &self.pose, 0, &mut self.model);
        black_box(&self.model);
    }
}

/// `n` characters spread over the clip (each its own phase).
fn crowd(skeleton: &Skeleton, clip: &Clip, n: usize) -> Vec<Character> {
    (0..n)
        .map(|i| {
            let phase = (i as f32 * 0.618_034).fract();
            Character::new(skeleton, clip, clip.start() + phase * clip.duration())
        })
        .collect()
}

/// Median ns per joint of updating every character once, one thread, and on all cores.
fn measure(
    skeleton: &Skeleton,
    clip: &Clip,
    n: usize,
    rounds: usize,
    par: bool,
) -> (f64, Option<f64>) {
    let mut chars = crowd(skeleton, clip, n);
    let joints = (n * skeleton.len()).max(1) as f64;
    let one = median_ns(rounds, || {
        for c in chars.iter_mut() {
            c.update(skeleton, clip);
        }
    }) / joints;
    let all = par.then(|| {
        median_ns(rounds, || {
            chars
                .par_chunks_mut(64)
                .for_each(|cs| cs.iter_mut().for_each(|c| c.update(skeleton, clip)));
        }) / joints
    });
    (one, all)
}

/// A millipede of `joints` joints: a root, then spine segments each carrying two legs of two
/// joints (five joints a segment), cut to exactly `joints`; and a clip turning every joint.
pub fn millipede(joints: usize) -> Result<(Skeleton, Clip)> {
    let mut raw = RawSkeleton::default();
    let joint = |name: String, parent: Option<usize>, t: Vec3| RawJoint {
        name,
        parent,
        rest: Transform {
            translation: t,
            ..Transform::IDENTITY
        },
    };
    raw.joints
        .push(joint("root".into(), None, Vec3::new(0.0, 1.0, 0.0)));
    let mut spine = 0;
    let mut segment = 0;
    while raw.joints.len() < joints {
        let s = raw.joints.len();
        raw.joints.push(joint(
            format!("spine{segment}"),
            Some(spine),
            Vec3::new(0.0, 0.0, -0.2),
        ));
        spine = s;
        for side in [-1.0f32, 1.0] {
            if raw.joints.len() + 2 > joints {
                break;
            }
            let hip = raw.joints.len();
            let tag = if side < 0.0 { 'l' } else { 'r' };
            raw.joints.push(joint(
                format!("hip{segment}{tag}"),
                Some(spine),
                Vec3::new(0.1 * side, 0.0, 0.0),
            ));
            raw.joints.push(joint(
                format!("knee{segment}{tag}"),
                Some(hip),
                Vec3::new(0.15 * side, -0.1, 0.0),
            ));
        }
        segment += 1;
    }
    raw.joints.truncate(joints);
    let skeleton = raw.build()?;
    let keys = 31;
    let times: Vec<f32> = (0..keys).map(|k| k as f32 / 30.0).collect();
    let mut channels: Vec<RawChannel> = (0..skeleton.len())
        .map(|j| {
            let phase = j as f32 * 0.4;
            RawChannel {
                joint: skeleton.name(j as u16).to_string(),
                target: Target::Rotation,
                interpolation: Interpolation::Linear,
                times: times.clone(),
                values: RawValues::Quat(
                    times
                        .iter()
                        .map(|t| {
                            let a = (t * std::f32::consts::TAU + phase).sin() * 0.5;
                            Quat::from_rotation_x(a) * Quat::from_rotation_y(0.3 * a)
                        })
                        .collect(),
                ),
            }
        })
        .collect();
    channels.push(RawChannel {
        joint: "root".into(),
        target: Target::Translation,
        interpolation: Interpolation::Linear,
        times: times.clone(),
        values: RawValues::Vec3(times.iter().map(|t| Vec3::new(0.0, 1.0, -t)).collect()),
    });
    let clip = RawClip {
        name: "crawl".into(),
        start: 0.0,
        duration: 1.0,
        channels,
    }
    .build(&skeleton)?;
    Ok((skeleton, clip))
}

/// Runs `skelett bench --scaling`.
pub fn run(
    out: &mut String,
    file: Option<&Path>,
    json: bool,
    rounds: usize,
    plot: Option<&Path>,
) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    // The clip animating the most tracks (the first of those): a clip that animates nothing
    // would measure local-to-model alone.
    let Some(clip) = asset.clips.iter().reduce(|best, c| {
        if c.track_count() > best.track_count() {
            c
        } else {
            best
        }
    }) else {
        return Err(format!("{source} has no clip to play: --scaling needs one").into());
    };
    let skeleton = &asset.skeleton;
    let mut by_characters = Vec::new();
    for n in CHARACTERS {
        // Fewer rounds for the largest crowds: each round is already long.
        let r = if n >= 10_000 { rounds.min(7) } else { rounds };
        let (one, all) = measure(skeleton, clip, n, r, true);
        by_characters.push(Point {
            characters: n,
            joints: skeleton.len(),
            ns_per_joint: one,
            ns_per_joint_all_cores: all,
        });
    }
    let (mut by_joints_one, mut by_joints_crowd) = (Vec::new(), Vec::new());
    for j in JOINTS {
        let (s, c) = millipede(j)?;
        for (n, into) in [(1, &mut by_joints_one), (CROWD, &mut by_joints_crowd)] {
            let (one, _) = measure(&s, &c, n, rounds, false);
            into.push(Point {
                characters: n,
                joints: j,
                ns_per_joint: one,
                ns_per_joint_all_cores: None,
            });
        }
    }
    let characters_per_frame_all_cores = by_characters
        .last()
        .and_then(|p| p.ns_per_joint_all_cores.map(|ns| ns * p.joints as f64))
        .filter(|ns| *ns > 0.0)
        .map(|ns| 1e9 / 60.0 / ns);
    let report = Report {
        source,
        clip: clip.name().to_string(),
        rounds,
        threads: rayon::current_num_threads(),
        characters_per_frame_all_cores,
        by_characters,
        by_joints_one,
        by_joints_crowd,
    };
    if let Some(path) = plot {
        std::fs::write(path, svg(&report))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if json {
        outln!(out, "{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    outln!(
        out,
        "{} (clip {}): sample + local-to-model per character per frame, median of {} rounds",
        report.source,
        report.clip,
        report.rounds
    );
    outln!(
        out,
        "  {:>10} {:>7} {:>14} {:>22}",
        "characters",
        "joints",
        "ns/joint",
        format!("ns/joint, {} threads", report.threads)
    );
    for p in &report.by_characters {
        outln!(
            out,
            "  {:>10} {:>7} {:>14.2} {:>22.2}",
            p.characters,
            p.joints,
            p.ns_per_joint,
            p.ns_per_joint_all_cores.unwrap_or(f64::NAN)
        );
    }
    if let (Some(n), Some(p)) = (
        report.characters_per_frame_all_cores,
        report.by_characters.last(),
    ) {
        outln!(
            out,
            "  -> about {n:.0} characters per 60 Hz frame on {} threads (from the {} row; sampling and local-to-model only)",
            report.threads,
            p.characters
        );
    }
    outln!(out, "generated millipedes, one thread:");
    outln!(
        out,
        "  {:>7} {:>20} {:>22}",
        "joints",
        "ns/joint, 1 char",
        format!("ns/joint, {CROWD} chars")
    );
    for (a, b) in report.by_joints_one.iter().zip(&report.by_joints_crowd) {
        outln!(
            out,
            "  {:>7} {:>20.2} {:>22.2}",
            a.joints,
            a.ns_per_joint,
            b.ns_per_joint
        );
    }
    if let Some(p) = plot {
        outln!(out, "plot: {}", p.display());
    }
    Ok(())
}

/// A plotted line: label, colour, points as (x, ns/joint).
type Line<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// One log-x panel of `lines`.
fn panel(s: &mut String, x0: f64, title: &str, xlabel: &str, lines: &[Line<'_>]) {
    let (w, h, left, top) = (420.0, 300.0, x0 + 60.0, 40.0);
    let pts = lines.iter().flat_map(|l| l.2.iter().copied());
    let (mut xmin, mut xmax, mut ymax) = (f64::MAX, f64::MIN, 0.0f64);
    for (x, y) in pts {
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        ymax = ymax.max(y);
    }
    if xmin >= xmax {
        xmax = xmin * 10.0;
    }
    // A round top for the y axis.
    let step = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        .into_iter()
        .find(|s| ymax / s <= 6.0)
        .unwrap_or(200.0);
    let ytop = (ymax / step).ceil().max(1.0) * step;
    let (lx0, lx1) = (xmin.log10(), xmax.log10());
    let px = |x: f64| left + (x.log10() - lx0) / (lx1 - lx0) * w;
    let py = |y: f64| top + h - y / ytop * h;
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{title}</text>"#,
        left + w / 2.0
    );
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#444"/>"##
    );
    let mut y = 0.0;
    while y <= ytop + 1e-9 {
        let v = py(y);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{v}" x2="{}" y2="{v}" stroke="#ddd"/>"##,
            left + w
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="end">{y}</text>"#,
            left - 5.0,
            v + 4.0
        );
        y += step;
    }
    // Ticks at 1, 2 and 5 times the powers of ten, labelled where they do not crowd.
    let mut d = 10f64.powf(lx0.floor());
    while d <= xmax * 1.0001 {
        for (m, labelled) in [(1.0, true), (2.0, lx1 - lx0 < 2.5), (5.0, lx1 - lx0 < 2.5)] {
            let t = d * m;
            if t < xmin * 0.9999 || t > xmax * 1.0001 {
                continue;
            }
            let v = px(t);
            let colour = if m == 1.0 { "#ddd" } else { "#eee" };
            let _ = writeln!(
                s,
                r#"<line x1="{v}" y1="{top}" x2="{v}" y2="{}" stroke="{colour}"/>"#,
                top + h
            );
            if labelled {
                let label = if t >= 1000.0 {
                    format!("{}k", t / 1000.0)
                } else {
                    format!("{t}")
                };
                let _ = writeln!(
                    s,
                    r#"<text x="{v}" y="{}" font-size="11" text-anchor="middle">{label}</text>"#,
                    top + h + 16.0
                );
            }
        }
        d *= 10.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{xlabel}</text>"#,
        left + w / 2.0,
        top + h + 34.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle" transform="rotate(-90 {} {})">ns per joint</text>"#,
        x0 + 18.0,
        top + h / 2.0,
        x0 + 18.0,
        top + h / 2.0
    );
    for (i, (label, colour, p)) in lines.iter().enumerate() {
        let path: Vec<String> = p
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for &(x, y) in p {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = top + 16.0 + 16.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"/>"#,
            left + 10.0,
            left + 30.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-size="11">{label}</text>"#,
            left + 35.0,
            ly + 4.0
        );
    }
}

/// The report as an SVG of two panels: ns/joint against characters and against joints.
fn svg(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="390" font-family="sans-serif">"#
    );
    let _ = writeln!(s, r#"<rect width="1000" height="390" fill="white"/>"#);
    let joints = r.by_characters.first().map_or(0, |p| p.joints);
    let one: Vec<(f64, f64)> = r
        .by_characters
        .iter()
        .map(|p| (p.characters as f64, p.ns_per_joint))
        .collect();
    let all: Vec<(f64, f64)> = r
        .by_characters
        .iter()
        .filter_map(|p| p.ns_per_joint_all_cores.map(|ns| (p.characters as f64, ns)))
        .collect();
    let threads = format!("{} threads", r.threads);
    let name = Path::new(&r.source)
        .file_name()
        .map_or(r.source.clone(), |n| n.to_string_lossy().into_owned());
    panel(
        &mut s,
        0.0,
        &format!("{name} ({joints} joints): characters"),
        "distinct characters updated per frame",
        &[("1 thread", "#1f77b4", one), (&threads, "#ff7f0e", all)],
    );
    let by = |v: &[Point]| {
        v.iter()
            .map(|p| (p.joints as f64, p.ns_per_joint))
            .collect::<Vec<_>>()
    };
    let crowd = format!("{CROWD} characters");
    panel(
        &mut s,
        500.0,
        "generated millipedes: joints (1 thread)",
        "joints per skeleton",
        &[
            ("1 character", "#2ca02c", by(&r.by_joints_one)),
            (&crowd, "#d62728", by(&r.by_joints_crowd)),
        ],
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plot_has_a_line_and_a_dot_per_figure() {
        let p = |characters, joints, ns| Point {
            characters,
            joints,
            ns_per_joint: ns,
            ns_per_joint_all_cores: Some(ns / 2.0),
        };
        let r = Report {
            source: "a.glb".into(),
            clip: "walk".into(),
            rounds: 3,
            threads: 2,
            characters_per_frame_all_cores: None,
            by_characters: vec![p(1, 24, 9.0), p(10, 24, 9.5), p(100_000, 24, 18.0)],
            by_joints_one: vec![p(1, 20, 9.0), p(1, 1000, 9.2)],
            by_joints_crowd: vec![p(256, 20, 9.9), p(256, 1000, 10.5)],
        };
        let s = svg(&r);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<polyline").count(), 4);
        // 3 + 3 (characters, both thread counts) + 2 + 2 (joints) dots.
        assert_eq!(s.matches("<circle").count(), 10);
        assert!(
            s.contains(">100k<") && s.contains(">1k<") && s.contains(">20<"),
            "{s}"
        );
        // Every point lies inside its panel's frame (no NaN or runaway coordinates).
        for c in s.split("<circle").skip(1) {
            let num = |k: &str| -> f64 {
                let a = c.find(k).unwrap() + k.len() + 2;
                c[a..].split('"').next().unwrap().parse().unwrap()
            };
            let (x, y) = (num("cx"), num("cy"));
            assert!(
                (60.0..=985.0).contains(&x) && (40.0..=340.0).contains(&y),
                "{x} {y}"
            );
        }
    }

    #[test]
    fn millipedes_have_the_asked_joint_count_and_move() {
        for j in [20, 21, 22, 23, 24, 1000] {
            let (s, c) = millipede(j).unwrap();
            assert_eq!(s.len(), j);
            let (mut a, mut b) = (Pose::rest(&s), Pose::rest(&s));
            skelett::sample_uncached(&c, 0.1, &mut a).unwrap();
            skelett::sample_uncached(&c, 0.6, &mut b).unwrap();
            let moved = (0..j)
                .filter(|&k| a.0[k].rotation.angle_between(b.0[k].rotation) > 1e-3)
                .count();
            assert_eq!(moved, j, "every joint turns");
        }
    }
}

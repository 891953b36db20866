//! `skelett retarget`: the clips of one file onto the character of another. With joint
//! names that differ and proportions and rest poses of their own, through a joint map
//! (automatic, or a JSON file from `--print-map`); with `--by-name`, bound by joint name
//! alone. Writes the target character (skeleton, skins, meshes) with the new clips, which
//! keep their source names, as `.glb` or `.skl`; prints the map it used and what it left
//! unmapped.

use std::path::Path;
use std::sync::Arc;

use skelett::retarget::{BakeOptions, Found, JointMap, Options as RetargetOptions, Retargeter};
use skelett::{sample, Pose, SamplingCache};

use crate::outln;

/// What `skelett retarget` was asked.
pub struct Options {
    /// A joint map file instead of the automatic map.
    pub map: Option<std::path::PathBuf>,
    /// Clips to retarget (names or indices); all when empty.
    pub clips: Vec<String>,
    /// Source time whose pose is the common reference (the source's rest pose otherwise).
    pub reference_frame: Option<f32>,
    /// Only print the map (JSON), write nothing.
    pub print_map: bool,
    /// Bind by joint name, no retargeting.
    pub by_name: bool,
    /// Factor for the root's translation.
    pub root_scale: Option<f32>,
    /// The target's bone axis, for aligning leaf joints.
    pub bone_axis: Option<glam::Vec3>,
    /// Bake at this rate instead of the source's key times.
    pub rate: Option<f32>,
    /// Hold the target's feet through the source's foot contacts.
    pub plant_feet: bool,
    /// Align both skeletons through T-poses built for them.
    pub t_pose: bool,
    /// Render the first clip, source beside target, to this .gif or .png.
    pub render: Option<std::path::PathBuf>,
    /// Seconds to render (default: the clip, at most 10 s).
    pub render_seconds: Option<f32>,
    /// Size of each half of the render.
    pub render_size: (u32, u32),
}

/// Parses a bone axis: `x`, `y`, `z`, `-x`, `-y`, `-z`.
pub fn parse_axis(s: &str) -> Result<glam::Vec3, String> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "x" | "+x" => glam::Vec3::X,
        "y" | "+y" => glam::Vec3::Y,
        "z" | "+z" => glam::Vec3::Z,
        "-x" => glam::Vec3::NEG_X,
        "-y" => glam::Vec3::NEG_Y,
        "-z" => glam::Vec3::NEG_Z,
        _ => return Err(format!("{s:?}: expected x, y, z, -x, -y or -z")),
    })
}

/// Runs `skelett retarget`.
pub fn run(
    out: &mut String,
    source_path: &Path,
    target_path: &Path,
    output: Option<&Path>,
    opts: &Options,
) -> crate::Result<()> {
    let load = crate::load_options();
    let source = skelett_io::load_with(source_path, &load)?;
    let target = skelett_io::load_with(target_path, &load)?;
    let (ss, ts) = (&source.skeleton, &target.skeleton);
    let clips: Vec<Arc<skelett::Clip>> = if opts.clips.is_empty() {
        source.clips.clone()
    } else {
        opts.clips
            .iter()
            .map(|c| {
                source.clip(c).cloned().ok_or_else(|| {
                    format!(
                        "{}: no clip {c:?} (clips: {})",
                        source_path.display(),
                        source
                            .clips
                            .iter()
                            .map(|c| c.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            })
            .collect::<Result<_, _>>()?
    };
    if clips.is_empty() && !opts.print_map {
        return Err(format!("{}: has no clips to retarget", source_path.display()).into());
    }
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };

    // The output's kind, checked before any work.
    let out_ext = output.map(|o| {
        o.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default()
    });
    if !opts.print_map {
        match (output, out_ext.as_deref()) {
            (Some(_), Some("glb" | "skl")) => {}
            (Some(o), Some("")) => {
                return Err(format!(
                    "{}: no file extension (retarget writes .glb or .skl)",
                    o.display()
                )
                .into())
            }
            (Some(o), Some(ext)) => {
                return Err(format!(
                    "{}: cannot write .{ext} (retarget writes .glb or .skl)",
                    o.display()
                )
                .into())
            }
            _ => {}
        }
    }
    let mut result = target.clone();
    result.clips.clear();
    if opts.by_name {
        if opts.print_map || opts.map.is_some() {
            return Err("--by-name binds by joint name: it takes no map".into());
        }
        for clip in &clips {
            let (bound, report) = clip.rebind(ss, ts)?;
            outln!(
                out,
                "{}: bound {} joints by name; not in the target: {}; kept at rest: {}",
                clip.name(),
                report.bound.len(),
                list(&report.unbound),
                report.unanimated.len()
            );
            result.clips.push(Arc::new(bound));
        }
    } else {
        let map = match &opts.map {
            Some(p) => skelett_io::retarget_map::load(p)?,
            None => JointMap::auto(ss, ts)?,
        };
        if opts.print_map {
            out.push_str(&skelett_io::retarget_map::to_string(
                &map,
                &name_of(source_path),
                &name_of(target_path),
            ));
            return Ok(());
        }
        let source_reference = match opts.reference_frame {
            Some(t) => {
                let clip = clips.first().ok_or("--reference-frame needs a clip")?;
                if !(t >= clip.start() && t <= clip.end()) {
                    return Err(format!(
                        "--reference-frame {t}: outside clip {:?} ({} to {} s)",
                        clip.name(),
                        clip.start(),
                        clip.end()
                    )
                    .into());
                }
                let mut pose = Pose::rest(ss);
                sample(clip, t, &mut SamplingCache::for_clip(clip), &mut pose)?;
                Some(pose.0)
            }
            None if opts.t_pose => Some(skelett::retarget::t_pose(ss)?),
            None => None,
        };
        let target_reference = if opts.t_pose {
            Some(skelett::retarget::t_pose(ts)?)
        } else {
            None
        };
        let retargeter = Retargeter::new(
            ss,
            ts,
            &map,
            &RetargetOptions {
                source_reference,
                target_reference,
                root_scale: opts.root_scale,
                bone_axis: opts.bone_axis,
                ..Default::default()
            },
        )?;
        let count = |f: Found| map.pairs.iter().filter(|p| p.found == f).count();
        let how = match &opts.map {
            Some(p) => format!("from {}", p.display()),
            None => format!(
                "{} by body part, {} by name",
                count(Found::Part),
                count(Found::Name)
            ),
        };
        outln!(
            out,
            "map: {} of {} target joints driven ({how}); root scale {:.4}",
            map.pairs.len(),
            ts.len(),
            retargeter.root_scale()
        );
        for (sk, path) in [(ss, source_path), (ts, target_path)] {
            if !skelett::retarget::is_humanoid(sk) {
                outln!(
                    out,
                    "warning: {} has no humanoid layout (no two legs found by name or layout): its joints were paired by name alone; check the map (--print-map)",
                    path.display()
                );
            }
        }
        for p in &map.pairs {
            outln!(out, "  {:24} -> {}", p.source, p.target);
        }
        let unmapped_t: Vec<String> = (0..ts.len())
            .filter(|&k| retargeter.mapping()[k].is_none())
            .map(|k| ts.name(k as u16).to_owned())
            .collect();
        let used: std::collections::HashSet<&str> =
            map.pairs.iter().map(|p| p.source.as_str()).collect();
        let unmapped_s: Vec<String> = ss
            .names()
            .iter()
            .filter(|n| !used.contains(n.as_str()))
            .cloned()
            .collect();
        outln!(out, "target joints left unmapped (they keep their reference pose or share a chain's rotation): {}", list(&unmapped_t));
        outln!(out, "source joints not used: {}", list(&unmapped_s));
        for clip in &clips {
            let started = std::time::Instant::now();
            let baked = retargeter.bake(
                clip,
                ss,
                ts,
                &BakeOptions {
                    rate: opts.rate,
                    name: None,
                    plant_feet: opts.plant_feet,
                },
            )?;
            if opts.plant_feet {
                match skelett::retarget::foot_contacts(ss, clip) {
                    Ok(c) => outln!(
                        out,
                        "{}: {} foot contacts in the source, held in the target",
                        clip.name(),
                        c.len()
                    ),
                    Err(e) => outln!(out, "{}: no feet planted: {e}", clip.name()),
                }
            }
            outln!(
                out,
                "{}: {:.3} s, {} channels animated, {:.1} ms",
                baked.name(),
                baked.duration(),
                baked.track_count(),
                started.elapsed().as_secs_f64() * 1e3
            );
            result.clips.push(Arc::new(baked));
        }
    }
    let output = output.ok_or("an OUT file is needed (or --print-map)")?;
    let ext = output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "glb" => skelett_io::gltf::save(&result, output)?,
        "skl" => skelett_io::native::save(&result, output)?,
        _ => {
            return Err(format!(
                "{}: cannot write .{ext} (retarget writes .glb or .skl)",
                output.display()
            )
            .into())
        }
    }
    outln!(
        out,
        "wrote {} ({} joints, {} clips, {} meshes)",
        output.display(),
        ts.len(),
        result.clips.len(),
        result.meshes.len()
    );
    if let Some(path) = &opts.render {
        let (Some(src), Some(dst)) = (clips.first(), result.clips.first()) else {
            return Err("--render: no clip to render".into());
        };
        crate::side_by_side::render(
            out,
            &source,
            src,
            &result,
            dst,
            path,
            opts.render_seconds
                .unwrap_or(src.duration().clamp(0.1, 10.0)),
            opts.render_size,
        )?;
    }
    Ok(())
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else if names.len() > 12 {
        format!("{} and {} more", names[..12].join(", "), names.len() - 12)
    } else {
        names.join(", ")
    }
}

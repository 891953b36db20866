//! `skelett compress`: clips compressed within an error bound, written as a `.skl` file, with
//! per clip and in total the raw size (ACL's convention: 10 f32 per joint per sample),
//! the compressed size, the ratio, the maximum and 99th-percentile error measured in model
//! space, and the time taken. A folder is compressed in parallel with a progress bar and a
//! corpus summary.
//!
//! The unit comes from `--cm-per-unit`, else from the file where it says (glTF, FBX), else
//! from the skeleton's height ([`skelett::compress::detect_cm_per_unit`]).

use std::path::Path;

use rayon::prelude::*;
use serde_json::{json, Value};
use skelett::compress::{
    compress, compress_morph_weights, morph_reach_scaled, skinning_scale, CompactLayout,
    CompressLevel, CompressOptions, CompressReport, ErrorHistogram, UnitSource,
};

use crate::batch::Result;
use crate::outln;

/// What to do.
pub struct Options {
    /// Largest allowed error, centimetres.
    pub error_cm: f32,
    /// Virtual vertex distance, centimetres.
    pub shell_cm: f32,
    /// Centimetres per unit (overrides the file and the detection).
    pub cm_per_unit: Option<f32>,
    /// Resample at this rate first.
    pub rate: Option<f32>,
    /// Only this clip.
    pub clip: Option<String>,
    /// The seekable layout.
    pub seekable: bool,
    /// The lanes layout.
    pub lanes: bool,
    /// [`CompressLevel::Fast`].
    pub fast: bool,
}

/// One file's outcome.
pub struct FileReport {
    source: String,
    written: String,
    units: String,
    /// The level and layout asked for.
    level: CompressLevel,
    layout: CompactLayout,
    clips: Vec<(String, CompressReport)>,
    /// Morph weight keys before and after, and the largest vertex displacement (cm) the
    /// dropped keys cause; `None` without morph channels.
    morph: Option<(usize, usize, f32)>,
}

impl FileReport {
    fn raw(&self) -> usize {
        self.clips.iter().map(|c| c.1.raw_bytes).sum()
    }
    fn compressed(&self) -> usize {
        self.clips.iter().map(|c| c.1.compressed_bytes).sum()
    }
    fn worst(&self) -> f32 {
        self.clips
            .iter()
            .map(|c| c.1.max_error_cm)
            .fold(0.0, f32::max)
    }
    fn seconds(&self) -> f64 {
        self.clips.iter().map(|c| c.1.seconds).sum()
    }
    /// The errors of every clip, binned alike (one budget per run).
    fn histogram(&self) -> Option<ErrorHistogram> {
        merged(self.clips.iter().map(|c| &c.1.error_histogram))
    }
}

fn merged<'a>(hists: impl Iterator<Item = &'a ErrorHistogram>) -> Option<ErrorHistogram> {
    let mut out: Option<ErrorHistogram> = None;
    for h in hists {
        match &mut out {
            Some(o) => o.merge(h),
            None => out = Some(h.clone()),
        }
    }
    out
}

/// The 99th percentile of all the errors measured.
fn p99(h: Option<ErrorHistogram>, max: f32) -> f32 {
    h.map_or(0.0, |h| h.quantile(0.99, max))
}

fn units(report: Option<&CompressReport>) -> String {
    let why = |declared: Option<f32>, height: f32| match declared {
        Some(d) => format!(
            "; the file's unit, {d} cm, would make it {:.1} m tall",
            d * height / 100.0
        ),
        None => String::new(),
    };
    match report.map(|r| (r.cm_per_unit, r.units)) {
        Some((cm, UnitSource::Given)) => format!("{cm} cm per unit (given)"),
        Some((cm, UnitSource::Declared)) => format!("{cm} cm per unit (the file's unit)"),
        Some((
            cm,
            UnitSource::Detected {
                unit,
                height,
                declared,
            },
        )) => format!(
            "{cm} cm per unit (detected: {height:.4} units tall, so {unit}{})",
            why(declared, height)
        ),
        Some((cm, UnitSource::AssumedHeight { height: 0.0, .. })) => format!(
            "{cm} cm per unit (the skeleton has no extent to tell its unit: pass --cm-per-unit)"
        ),
        Some((cm, UnitSource::AssumedHeight { height, declared })) => format!(
            "{cm:.4} cm per unit (assumed 1.75 m tall: {height:.4} units, no unit fits{})",
            why(declared, height)
        ),
        None => "no clips".into(),
    }
}

fn compress_file(input: &Path, output: &Path, opts: &Options) -> Result<FileReport> {
    let mut asset =
        crate::batch::load_selected(input, &crate::load_options(), opts.clip.as_deref())?;
    let options = CompressOptions {
        error_cm: opts.error_cm,
        shell_cm: opts.shell_cm,
        cm_per_unit: opts.cm_per_unit,
        declared_cm_per_unit: asset.model_cm_per_unit(),
        sample_rate: opts.rate,
        layout: if opts.lanes {
            CompactLayout::Lanes
        } else if opts.seekable {
            CompactLayout::Seek
        } else {
            CompactLayout::Stream
        },
        level: if opts.fast {
            CompressLevel::Fast
        } else {
            CompressLevel::Smallest
        },
    };
    let results = asset
        .clips
        .par_iter()
        .map(|clip| compress(&asset.skeleton, clip, &options))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", input.display()))?;
    let mut clips = Vec::with_capacity(results.len());
    let mut compact = Vec::with_capacity(results.len());
    // Weight tracks: within the same budget, measured as vertex displacement.
    let channels = asset.skeleton.morph_channel_count();
    let mut morph = (channels > 0).then_some((0, 0, 0.0f32));
    for (clip, mut report) in results {
        let clip = match morph.as_mut() {
            Some((before, after, worst)) => {
                // Offsets are in each mesh's bind space; skinning may scale them (a mesh
                // bound to a node scaled by 100): the reach is taken in model space, with
                // the largest scale of the rest pose and of the clip at its samples.
                let scales = skinning_scales(&asset, &clip);
                let reach = morph_reach_scaled(&asset.meshes, &scales, channels);
                let budget = opts.error_cm / report.cm_per_unit;
                let (clip, m) = compress_morph_weights(&clip, &reach, budget)
                    .map_err(|e| format!("{}: {e}", input.display()))?;
                *before += m.keys_before;
                *after += m.keys_after;
                *worst = worst.max(m.max_displacement * report.cm_per_unit);
                report.compressed_bytes = clip.size_bytes();
                clip
            }
            None => clip,
        };
        clips.push((clip.name().to_string(), report));
        compact.push(std::sync::Arc::new(clip));
    }
    asset.clips = compact;
    skelett_io::native::save(&asset, output)?;
    Ok(FileReport {
        source: input.display().to_string(),
        written: output.display().to_string(),
        units: units(clips.first().map(|c| &c.1)),
        level: options.level,
        layout: options.layout,
        clips,
        morph,
    })
}

/// For each mesh of `asset`, the most its skinning scales bind-space offsets over the rest
/// pose and `clip` sampled at up to 1,000 evenly spaced times.
fn skinning_scales(asset: &skelett_io::Asset, clip: &skelett::Clip) -> Vec<f32> {
    let sk = &asset.skeleton;
    let mut pose = skelett::Pose::rest(sk);
    let mut model = vec![glam::Mat4::IDENTITY; sk.len()];
    let mut scales = vec![0.0f32; asset.meshes.len()];
    let mut take = |pose: &skelett::Pose, model: &mut Vec<glam::Mat4>| {
        if skelett::local_to_model(sk, pose, 0, model).is_ok() {
            for (s, m) in scales.iter_mut().zip(&asset.meshes) {
                if let Some(skin) = asset.skins.get(m.skin) {
                    *s = s.max(skinning_scale(skin, model));
                }
            }
        }
    };
    take(&pose, &mut model);
    let n = 1000usize;
    for i in 0..=n {
        let t = clip.start() + clip.duration() * i as f32 / n as f32;
        if skelett::sample_uncached(clip, t, &mut pose).is_ok() {
            take(&pose, &mut model);
        }
    }
    scales
}

fn kib(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn ratio(raw: usize, compressed: usize) -> f64 {
    raw as f64 / compressed.max(1) as f64
}

fn text(out: &mut String, f: &FileReport) {
    outln!(out, "{} -> {}", f.source, f.written);
    outln!(out, "  units: {}", f.units);
    outln!(
        out,
        "  level: {}, layout: {}",
        match f.level {
            CompressLevel::Fast => "fast (no loosening)",
            CompressLevel::Smallest => "smallest",
        },
        match f.layout {
            CompactLayout::Seek => "seekable",
            CompactLayout::Stream => "streamed",
            CompactLayout::Lanes => "lanes (16-bit, for fast playback; measured as stored)",
        }
    );
    outln!(
        out,
        "  {:<24} {:>8} {:>7} {:>10} {:>10} {:>8} {:>11} {:>11} {:>8}",
        "clip",
        "rate",
        "samples",
        "raw",
        "compressed",
        "ratio",
        "max error",
        "p99 error",
        "time"
    );
    for (name, r) in &f.clips {
        outln!(
            out,
            "  {:<24} {:>8.3} {:>7} {:>10} {:>10} {:>7.2}:1 {:>8.5} cm {:>8.5} cm {:>6.2} s",
            name,
            r.source_rate,
            r.samples,
            kib(r.raw_bytes),
            kib(r.compressed_bytes),
            r.ratio(),
            r.max_error_cm,
            r.p99_error_cm,
            r.seconds
        );
    }
    if f.clips.len() > 1 {
        outln!(
            out,
            "  {:<24} {:>8} {:>7} {:>10} {:>10} {:>7.2}:1 {:>8.5} cm {:>8.5} cm {:>6.2} s",
            "total",
            "",
            "",
            kib(f.raw()),
            kib(f.compressed()),
            ratio(f.raw(), f.compressed()),
            f.worst(),
            p99(f.histogram(), f.worst()),
            f.seconds()
        );
    }
    if let Some((before, after, worst)) = f.morph {
        outln!(
            out,
            "  morph weights: {after} of {before} keys kept, largest vertex displacement {worst:.5} cm"
        );
    }
    for (name, r) in &f.clips {
        if r.max_error_cm > r.error_cm {
            let why = if f.layout == CompactLayout::Lanes {
                "the lanes layout rounds keys to 16 bits, which this budget does not leave \
                 room for: the streamed or seekable layout keeps it"
            } else {
                "f32 precision at this size, or a source that jumps between samples"
            };
            outln!(
                out,
                "  warning: {name} could not be kept within the budget ({why}): {:.5} cm at {} s",
                r.max_error_cm,
                r.worst_time
            );
        }
    }
}

fn clip_json(name: &str, r: &CompressReport) -> Value {
    json!({
        "name": name,
        "source_rate": r.source_rate,
        "sample_rate": r.sample_rate,
        "samples": r.samples,
        "resampled": r.resampled,
        "raw_bytes": r.raw_bytes,
        "compressed_bytes": r.compressed_bytes,
        "ratio": r.ratio(),
        "max_error_cm": r.max_error_cm,
        "p99_error_cm": r.p99_error_cm,
        "within_budget": r.max_error_cm <= r.error_cm,
        "worst_joint": r.worst_joint,
        "worst_time": r.worst_time,
        "animated_channels": r.animated_channels,
        "constant_channels": r.constant_channels,
        "rest_channels": r.rest_channels,
        "keys": r.keys,
        "seconds": r.seconds,
    })
}

fn file_json(f: &FileReport) -> Value {
    let first = f.clips.first().map(|c| &c.1);
    json!({
        "source": f.source,
        "written": f.written,
        "cm_per_unit": first.map(|r| r.cm_per_unit),
        "units": f.units,
        "level": match f.level {
            CompressLevel::Fast => "fast",
            CompressLevel::Smallest => "smallest",
        },
        // As `skelett inspect --json` names it.
        "layout": crate::inspect::layout_name(f.layout),
        "clips": f.clips.iter().map(|(n, r)| clip_json(n, r)).collect::<Vec<_>>(),
        "morph_weights": f.morph.map(|(before, after, worst)| json!({
            "keys_before": before,
            "keys_after": after,
            "max_displacement_cm": worst,
        })),
        "raw_bytes": f.raw(),
        "compressed_bytes": f.compressed(),
        "ratio": ratio(f.raw(), f.compressed()),
        "max_error_cm": f.worst(),
        "p99_error_cm": p99(f.histogram(), f.worst()),
        "seconds": f.seconds(),
    })
}

/// Runs `skelett compress`.
pub fn run(
    out: &mut String,
    input: &Path,
    output: &Path,
    opts: &Options,
    json: bool,
) -> crate::Result<()> {
    if !input.is_dir() {
        let f = compress_file(input, output, opts).map_err(|e| e.to_string())?;
        if json {
            outln!(out, "{:#}", file_json(&f));
        } else {
            text(out, &f);
        }
        return Ok(());
    }
    let batch = crate::batch::run(input, output, "skl", |p, target| {
        compress_file(p, target, opts)
    })
    .map_err(|e| e.to_string())?;
    let done: Vec<&FileReport> = batch
        .results
        .iter()
        .filter_map(|r| r.1.as_ref().ok())
        .collect();
    let raw: usize = done.iter().map(|f| f.raw()).sum();
    let compressed: usize = done.iter().map(|f| f.compressed()).sum();
    let worst = done.iter().map(|f| f.worst()).fold(0.0, f32::max);
    let all_p99 = p99(
        merged(
            done.iter()
                .flat_map(|f| f.clips.iter().map(|c| &c.1.error_histogram)),
        ),
        worst,
    );
    let clips: usize = done.iter().map(|f| f.clips.len()).sum();
    let seconds: f64 = done.iter().map(|f| f.seconds()).sum();
    let errors: Vec<String> = batch
        .results
        .iter()
        .filter_map(|(p, r)| r.as_ref().err().map(|e| format!("{}: {e}", p.display())))
        .collect();
    if json {
        outln!(
            out,
            "{:#}",
            json!({
                "files": done.iter().map(|f| file_json(f)).collect::<Vec<_>>(),
                "failed": errors,
                "skipped": batch.skipped.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "total": {
                    "files": done.len(),
                    "clips": clips,
                    "raw_bytes": raw,
                    "compressed_bytes": compressed,
                    "ratio": ratio(raw, compressed),
                    "max_error_cm": worst,
                    "p99_error_cm": all_p99,
                    "seconds": seconds,
                },
            })
        );
    } else {
        for f in &done {
            text(out, f);
        }
        for e in &errors {
            outln!(out, "failed  {e}");
        }
        for p in &batch.skipped {
            outln!(out, "skipped {} (not an animation format)", p.display());
        }
        outln!(
            out,
            "corpus: {} files, {} clips, {} -> {}, {:.2}:1, largest error {:.5} cm, p99 \
             {:.5} cm, {:.2} s of compression ({} failed, {} skipped)",
            done.len(),
            clips,
            kib(raw),
            kib(compressed),
            ratio(raw, compressed),
            worst,
            all_p99,
            seconds,
            errors.len(),
            batch.skipped.len()
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{} file(s) failed to compress", errors.len()).into())
    }
}

//! `skelett convert`: one file to another format, or a whole folder in parallel with a
//! progress bar and a summary of what was converted, skipped and why.
//!
//! Input formats are whatever `skelett_io::load` reads; output is chosen by the output's
//! extension (for a folder, by `--to`). Writers: `.glb`, `.skl`, and `.ram` with its `.raa`.

use std::path::Path;

use crate::outln;

use crate::batch::Result;

/// What to do to each asset on the way.
pub struct Options {
    /// Keep only this clip (name or index).
    pub clip: Option<String>,
    /// Multiply every length by this.
    pub scale: Option<f32>,
    /// Close every clip's cycle (`skelett::Clip::closed_loop`): one frame longer, back to
    /// its first key.
    pub close_loops: bool,
    /// How to read the sources (FBX units and axes, .x handedness).
    pub load: skelett_io::LoadOptions,
    /// RAM/RAA: write skelett's counted layout instead of the article's.
    pub ram_counts: bool,
}

impl Options {
    /// How a .ram + .raa pair is written: the layout, at the --raa-fps rate (30 by default).
    fn ram(&self) -> skelett_io::rite::WriteOptions {
        let layout = if self.ram_counts {
            skelett_io::rite::Layout::Counted
        } else {
            skelett_io::rite::Layout::Article
        };
        skelett_io::rite::WriteOptions::layout(layout).with_fps(self.load.rite.fps)
    }
}

const WRITERS: &str = "glb, skl, ram (with its .raa)";

fn convert_one(input: &Path, output: &Path, opts: &Options) -> Result<String> {
    let ext = output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if !matches!(ext.as_str(), "glb" | "skl" | "ram") {
        return Err(format!(
            "{}: cannot write .{ext} files (writers: {WRITERS})",
            output.display()
        )
        .into());
    }
    let mut asset = crate::batch::load_selected(input, &opts.load, opts.clip.as_deref())?;
    if let Some(s) = opts.scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(format!("--scale {s}: a positive number is needed").into());
        }
        asset = asset
            .scaled(s)
            .map_err(|p| format!("{}: --scale {s}: {p}", input.display()))?;
    }
    let mut notes = Vec::new();
    if opts.close_loops {
        for c in asset.clips.iter_mut() {
            if c.is_compact() {
                notes.push(format!(
                    "clip {:?} was compressed; closed, it is stored with keys (run skelett \
                     compress on the output again)",
                    c.name()
                ));
            }
            if c.frame_rate().is_none() && c.track_count() > 0 {
                notes.push(format!(
                    "clip {:?} has no frame rate; closed over {} s (30 fps)",
                    c.name(),
                    skelett::DEFAULT_CLOSING_INTERVAL
                ));
            }
            let closed = c.closed_loop(&asset.skeleton).map_err(|e| {
                format!(
                    "{}: --close-loops: clip {:?}: {e}",
                    input.display(),
                    c.name()
                )
            })?;
            *c = std::sync::Arc::new(closed);
        }
    }
    // What the written format cannot hold, said rather than dropped silently.
    let lost = skelett_io::save_by_extension(&asset, output, &opts.ram())?;
    let bytes = std::fs::metadata(output).map_or(0, |m| m.len());
    let mut msg = format!(
        "{} -> {} ({} joints, {} clips, {} meshes, {} bytes)",
        input.display(),
        output.display(),
        asset.skeleton.len(),
        asset.clips.len(),
        asset.meshes.len(),
        bytes
    );
    for l in notes.iter().chain(&lost) {
        msg.push_str(&format!("\n  warning: {}", crate::term_safe(l)));
    }
    Ok(msg)
}

/// Runs `skelett convert`.
pub fn run(
    out: &mut String,
    input: &Path,
    output: &Path,
    to: Option<&str>,
    opts: &Options,
) -> crate::Result<()> {
    if !input.is_dir() {
        let msg = convert_one(input, output, opts).map_err(|e| e.to_string())?;
        outln!(out, "{msg}");
        return Ok(());
    }
    let to = to
        .unwrap_or("glb")
        .trim_start_matches('.')
        .to_ascii_lowercase();
    let batch = crate::batch::run(input, output, &to, |p, target| convert_one(p, target, opts))
        .map_err(|e| e.to_string())?;
    let (results, skipped) = (&batch.results, &batch.skipped);
    let failed = batch.failed();
    outln!(
        out,
        "converted {} of {} files, skipped {} (not an animation format), failed {}",
        results.len() - failed,
        results.len() + skipped.len(),
        skipped.len(),
        failed
    );
    for (_, r) in results {
        match r {
            Ok(m) => outln!(out, "  ok      {m}"),
            Err(e) => outln!(out, "  failed  {e}"),
        }
    }
    for p in skipped {
        outln!(
            out,
            "  skipped {} (known: {})",
            p.display(),
            skelett_io::KNOWN_EXTENSIONS
        );
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} file(s) failed to convert").into())
    }
}

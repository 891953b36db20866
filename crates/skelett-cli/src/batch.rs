//! Whole folders for `convert` and `compress`: every animation file below a folder, each
//! mapped to a file of the same relative path under the output folder (the source's
//! extension kept in the name where two sources would write the same file), in parallel with
//! a progress bar.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

pub(crate) use crate::Result;

/// What a folder run did: each input file with its result, and the files skipped (not an
/// animation format).
pub struct Batch<T> {
    pub results: Vec<(PathBuf, Result<T>)>,
    pub skipped: Vec<PathBuf>,
}

/// Loads `input`, keeping only the clip named (or numbered) `clip` when one is given; the
/// error lists the file's clips when it has no such clip.
pub fn load_selected(
    input: &Path,
    load: &skelett_io::LoadOptions,
    clip: Option<&str>,
) -> Result<skelett_io::Asset> {
    let asset = skelett_io::load_with(input, load)?;
    let Some(c) = clip else {
        return Ok(asset);
    };
    let i = asset.clip_index(c).ok_or_else(|| {
        let names: Vec<&str> = asset.clips.iter().map(|c| c.name()).collect();
        format!(
            "{}: no clip {c:?} (it has: {})",
            input.display(),
            names.join(", ")
        )
    })?;
    Ok(asset.with_only_clip(i))
}

/// Every file below `dir`, sorted. Links to folders are listed, not followed (so a walk
/// stays inside `dir` and cannot loop); they are then skipped like any other entry that is
/// not an animation file.
fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let e = e?;
            let p = e.path();
            // `DirEntry::file_type` does not follow links: a link to a folder is not a folder.
            if e.file_type()?.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Runs `job(input file, output file)` on every animation file below `input`, in parallel,
/// the output at the same relative path under `output` with extension `ext` (folders made
/// as needed).
pub fn run<T: Send>(
    input: &Path,
    output: &Path,
    ext: &str,
    job: impl Fn(&Path, &Path) -> Result<T> + Sync,
) -> Result<Batch<T>> {
    std::fs::create_dir_all(output).map_err(|e| format!("{}: {e}", output.display()))?;
    let (inputs, skipped): (Vec<PathBuf>, Vec<PathBuf>) = files(input)?
        .into_iter()
        .partition(|p| skelett_io::is_known_extension(p));
    let bar = ProgressBar::new(inputs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed_precise} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // Files that would write the same output (walk.fbx and walk.glb) keep their source's
    // extension in its name (walk.fbx.skl, walk.glb.skl).
    let target_of = |p: &Path| {
        output
            .join(p.strip_prefix(input).unwrap_or(p))
            .with_extension(ext)
    };
    let mut seen = std::collections::HashMap::new();
    for p in &inputs {
        *seen.entry(target_of(p)).or_insert(0) += 1;
    }
    let results = inputs
        .par_iter()
        .map(|p| {
            let rel = p.strip_prefix(input).unwrap_or(p);
            let plain = target_of(p);
            let target = if seen.get(&plain).copied().unwrap_or(0) > 1 {
                let mut name = rel.file_name().unwrap_or_default().to_os_string();
                name.push(".");
                name.push(ext);
                output.join(rel).with_file_name(name)
            } else {
                plain
            };
            let r = target
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .map_err(|e| e.into())
                .and_then(|()| job(p, &target));
            bar.set_message(rel.display().to_string());
            bar.inc(1);
            (p.clone(), r)
        })
        .collect();
    bar.finish_and_clear();
    Ok(Batch { results, skipped })
}

impl<T> Batch<T> {
    /// Files that failed.
    pub fn failed(&self) -> usize {
        self.results.iter().filter(|r| r.1.is_err()).count()
    }
}

//! Animation graph files ([`skelett::graph::GraphDef`]) as JSON: read, checked against an
//! asset's skeleton and clips, and written back.
//!
//! The format is the definition types field for field (the README's "Animation graphs"
//! section documents it, `examples/*.graph.json` are complete ones):
//!
//! ```json
//! { "version": 1,
//!   "parameters": [{"name": "speed", "type": "float"}, {"name": "jump", "type": "trigger"}],
//!   "layers": [{"name": "base", "machine": {"entry": "Idle", "states": [
//!     {"name": "Idle", "motion": {"clip": "Robot_Idle"},
//!      "transitions": [{"to": "Jump", "conditions": [{"param": "jump"}], "duration": 0.1}]},
//!     {"name": "Jump", "motion": {"clip": "Robot_Jump"}, "wrap": "once",
//!      "transitions": [{"to": "Idle", "exit_time": 1.0, "duration": 0.2}]}]}}] }
//! ```
//!
//! The version is read first, so a file of another version is refused for that reason and
//! not for a field this build does not know. serde_json parses (its errors give line and
//! column; unknown fields are refused, so a misspelt key does not pass silently); the
//! graph's own validation ([`skelett::graph::Graph::build`]) gives the JSON path of every
//! other problem.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use skelett::graph::{Graph, GraphDef, GRAPH_VERSION};
use skelett::Clip;

use crate::{Asset, Error};

/// The largest graph file read (16 MiB): a graph is hand-written logic, not data.
pub const MAX_FILE_SIZE: u64 = 16 << 20;

/// Reads a graph definition from JSON text; `name` is the file named in errors.
///
/// ```
/// use std::path::Path;
/// let def = skelett_io::graph_file::from_str(r#"{"version": 1, "layers": [{"name": "base",
///     "machine": {"entry": "Idle", "states": [{"name": "Idle", "motion": {"clip": "idle"}}]}}]}"#,
///     Path::new("g.json"))?;
/// assert_eq!(def.layers[0].machine.states[0].name, "Idle");
/// let e = skelett_io::graph_file::from_str(r#"{"version": 7, "layers": []}"#, Path::new("g.json"));
/// assert!(e.unwrap_err().to_string().contains("version 7"));
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// # Errors
/// [`Error::Syntax`] with line and column for text that is not a graph of this format;
/// [`Error::Invalid`] for another format version, or a number past the 32-bit range (named
/// by its place).
pub fn from_str(text: &str, name: &Path) -> Result<GraphDef, Error> {
    #[derive(Deserialize)]
    struct Version {
        version: Option<serde_json::Value>,
    }
    let v: Version =
        serde_json::from_str(text).map_err(|e| crate::json_syntax(name, &e, "a JSON object"))?;
    match v.version {
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(GRAPH_VERSION as u64) => {}
        other => {
            return Err(Error::Invalid {
                file: name.to_path_buf(),
                location: "version".into(),
                problem: format!(
                    "format version {} is not supported (this build reads version {GRAPH_VERSION})",
                    other.map_or("missing".into(), |v| v.to_string())
                ),
            })
        }
    }
    let def: GraphDef = serde_json::from_str(text)
        .map_err(|e| crate::json_syntax(name, &e, "an animation graph"))?;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| crate::json_syntax(name, &e, "a JSON object"))?;
    if let Some((at, x)) = crate::json_past_f32(&value) {
        return Err(Error::Invalid {
            file: name.to_path_buf(),
            location: at,
            problem: format!(
                "{x:e} is outside the range of 32-bit numbers (at most {:e})",
                f32::MAX
            ),
        });
    }
    Ok(def)
}

/// The definition as pretty-printed JSON (what [`from_str`] reads back).
pub fn to_string(def: &GraphDef) -> String {
    serde_json::to_string_pretty(def).unwrap_or_default() + "\n"
}

/// Reads a graph file (at most [`MAX_FILE_SIZE`] bytes).
///
/// # Errors
/// [`Error::Io`], [`Error::Malformed`] for a file too large or not UTF-8, and those of
/// [`from_str`].
pub fn load(path: impl AsRef<Path>) -> Result<GraphDef, Error> {
    let path = path.as_ref();
    let size = std::fs::metadata(path)
        .map_err(|source| Error::Io {
            file: path.to_path_buf(),
            source,
        })?
        .len();
    if size > MAX_FILE_SIZE {
        return Err(Error::Malformed {
            file: path.to_path_buf(),
            offset: MAX_FILE_SIZE,
            expected: format!("a graph file of at most {MAX_FILE_SIZE} bytes, not {size}"),
        });
    }
    from_str(&crate::read_text(path)?, path)
}

/// Checks `def` against `asset` (its skeleton, and `clips`: the asset's clips, maybe with
/// events added) and builds the graph; `name` is the file named in errors.
///
/// # Errors
/// [`Error::Invalid`] with the JSON path of the first problem.
pub fn build(
    def: &GraphDef,
    asset: &Asset,
    clips: &[Arc<Clip>],
    name: &Path,
) -> Result<Graph, Error> {
    Graph::build(def, asset.skeleton.clone(), clips).map_err(|e| Error::Invalid {
        file: name.to_path_buf(),
        location: e.path,
        problem: e.problem.to_string(),
    })
}

/// Reads a graph file and builds it for `asset`'s skeleton and clips.
///
/// # Errors
/// Those of [`load`] and [`build`].
pub fn load_for(path: impl AsRef<Path>, asset: &Asset) -> Result<Graph, Error> {
    let path = path.as_ref();
    build(&load(path)?, asset, &asset.clips, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A number past f32's range is refused by its place instead of becoming infinity.
    #[test]
    fn a_number_past_f32_is_refused_by_place() {
        let text = r#"{"version": 1, "layers": [{"name": "Base", "weight": 1e300,
            "machine": {"entry": "Idle", "states": [{"name": "Idle", "motion": {"clip": "idle"}}]}}]}"#;
        let e = from_str(text, Path::new("g.json")).unwrap_err().to_string();
        assert!(
            e.contains("g.json") && e.contains("layers[0].weight") && e.contains("1e300"),
            "{e}"
        );
        assert!(from_str(&text.replace("1e300", "1"), Path::new("g.json")).is_ok());
    }
}

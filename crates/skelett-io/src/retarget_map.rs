//! Joint maps for retargeting ([`skelett::retarget::JointMap`]) as small JSON files, to print,
//! edit and pass back (`skelett retarget --print-map`, `--map`):
//!
//! ```json
//! {
//!   "source": "01_01.bvh",
//!   "target": "robot_quaternius.glb",
//!   "joints": [
//!     { "source": "Hips", "target": "Body", "found": "part" },
//!     { "source": "LeftUpLeg", "target": "UpperLeg.L" }
//!   ]
//! }
//! ```
//!
//! `joints` pairs a source joint with a target joint; `found` (`part`, `name`, `user`) says how
//! an automatic map found the pair and may be left out. `source` and `target` at the top are
//! for the reader. Unknown fields are refused, so that a misspelt key does not pass silently.
//! serde_json does the parsing (its errors give line and column).

use std::path::Path;

use serde::{Deserialize, Serialize};
use skelett::retarget::{Found, JointMap, MapPair};

use crate::Error;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    joints: Vec<Pair>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pair {
    source: String,
    target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    found: Option<String>,
}

/// The map as JSON; `source` and `target` name the files it pairs (for the reader).
pub fn to_string(map: &JointMap, source: &str, target: &str) -> String {
    let file = File {
        source: Some(source.to_owned()),
        target: Some(target.to_owned()),
        joints: map
            .pairs
            .iter()
            .map(|p| Pair {
                source: p.source.clone(),
                target: p.target.clone(),
                found: Some(
                    match p.found {
                        Found::Part => "part",
                        Found::Name => "name",
                        Found::User => "user",
                    }
                    .to_owned(),
                ),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&file).unwrap_or_default() + "\n"
}

/// Reads a map from JSON text; `name` is the file named in errors.
///
/// ```
/// let map = skelett_io::retarget_map::from_str(
///     r#"{ "joints": [ { "source": "Hips", "target": "pelvis" } ] }"#,
///     std::path::Path::new("map.json"),
/// )?;
/// assert_eq!(map.source_of("pelvis"), Some("Hips"));
/// let bad = skelett_io::retarget_map::from_str(r#"{ "joints": [ { "source": "Hips" } ] }"#,
///     std::path::Path::new("map.json"));
/// assert!(bad.unwrap_err().to_string().contains("line 1"));
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// # Errors
/// [`Error::Syntax`] with line and column for text that is not such a map;
/// [`Error::Invalid`] for a pair with an empty name or an unknown `found`.
pub fn from_str(text: &str, name: &Path) -> Result<JointMap, Error> {
    let file: File =
        serde_json::from_str(text).map_err(|e| crate::json_syntax(name, &e, "a joint map"))?;
    let mut pairs = Vec::with_capacity(file.joints.len());
    for (i, p) in file.joints.into_iter().enumerate() {
        let invalid = |problem: String| Error::Invalid {
            file: name.to_path_buf(),
            location: format!("joints[{i}]"),
            problem,
        };
        if p.source.is_empty() || p.target.is_empty() {
            return Err(invalid("a joint name is empty".into()));
        }
        let found = match p.found.as_deref() {
            None | Some("user") => Found::User,
            Some("part") => Found::Part,
            Some("name") => Found::Name,
            Some(other) => {
                return Err(invalid(format!(
                    "found is {other:?}; expected \"part\", \"name\" or \"user\""
                )))
            }
        };
        pairs.push(MapPair {
            source: p.source,
            target: p.target,
            found,
        });
    }
    Ok(JointMap { pairs })
}

/// Reads a map file.
///
/// # Errors
/// [`Error::Io`], and those of [`from_str`].
pub fn load(path: impl AsRef<Path>) -> Result<JointMap, Error> {
    let path = path.as_ref();
    from_str(&crate::read_text(path)?, path)
}

/// Writes a map file.
///
/// # Errors
/// [`Error::Io`].
pub fn save(
    map: &JointMap,
    source: &str,
    target: &str,
    path: impl AsRef<Path>,
) -> Result<(), Error> {
    crate::write_file(path.as_ref(), to_string(map, source, target).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_round_trip_and_errors_say_where() {
        let map = JointMap::from_pairs([("Hips", "pelvis"), ("LeftArm", "upperarm_l")]);
        let text = to_string(&map, "a.bvh", "b.glb");
        let back = from_str(&text, Path::new("m.json")).unwrap();
        assert_eq!(back.pairs, map.pairs);
        match from_str("{\"joints\": [\n  {\"source\": 1}\n]}", Path::new("m.json")) {
            Err(Error::Syntax {
                line,
                column,
                expected,
                ..
            }) => {
                assert_eq!((line, column), (2, 14));
                assert!(!expected.contains("at line"), "{expected}");
                assert!(expected.contains("expected a string"), "{expected}");
            }
            other => panic!("{:?}", other.map(|m| m.pairs)),
        }
        assert!(matches!(
            from_str("{\"joints\": [], \"extra\": 1}", Path::new("m.json")),
            Err(Error::Syntax { .. })
        ));
    }
}

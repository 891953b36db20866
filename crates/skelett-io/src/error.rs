//! The I/O crate's error type: every importer error names the file, where in it, and what was
//! expected there.

use std::path::PathBuf;

use thiserror::Error;

/// What went wrong reading or writing an asset.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes at `offset` are not what the format requires.
    #[error("{file}: byte {offset}: {expected}")]
    Malformed {
        /// The file.
        file: PathBuf,
        /// Byte offset of the problem from the start of the file.
        offset: u64,
        /// What the format requires there.
        expected: String,
    },
    /// Text that does not parse, at a line and column.
    #[error("{file}: line {line}, column {column}: {expected}")]
    Syntax {
        /// The file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the format requires there.
        expected: String,
    },
    /// A well-formed file whose content breaks the format's rules, at an element such as
    /// `accessors[3]` or `animations[0].channels[2]`.
    #[error("{file}: {location}: {problem}")]
    Invalid {
        /// The file.
        file: PathBuf,
        /// The element at fault.
        location: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The content was read but the runtime rejected it (for example a clip's keys).
    #[error("{file}: {location}: {source}")]
    Build {
        /// The file.
        file: PathBuf,
        /// The element at fault.
        location: String,
        /// The runtime's error.
        #[source]
        source: Box<skelett::Error>,
    },
    /// A feature of the format skelett does not read.
    #[error("{file}: not supported: {what}")]
    Unsupported {
        /// The file.
        file: PathBuf,
        /// What is not supported.
        what: String,
    },
    /// The file's extension names no format skelett knows.
    #[error("{file}: unknown format (expected one of: {known})")]
    UnknownFormat {
        /// The file.
        file: PathBuf,
        /// The extensions skelett reads.
        known: &'static str,
    },
}

impl Error {
    /// [`Error::Build`]: the runtime rejected what `file` holds at `location`.
    pub(crate) fn build(
        file: impl Into<PathBuf>,
        location: impl Into<String>,
        source: skelett::Error,
    ) -> Self {
        Error::Build {
            file: file.into(),
            location: location.into(),
            source: Box::new(source),
        }
    }
}

/// A token from a file as messages quote it: in double quotes, control characters and
/// quotes escaped (a name from a file never drives a terminal), and cut after 40 characters
/// with its full length said, so a 4 MB line does not become a 4 MB message.
pub(crate) fn quote(token: &str) -> String {
    const KEEP: usize = 40;
    let mut out = String::from("\"");
    let mut chars = token.chars();
    for c in chars.by_ref().take(KEEP) {
        out.extend(c.escape_debug());
    }
    out.push('"');
    if chars.next().is_some() {
        out.push_str(&format!("… ({} bytes)", token.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoted_tokens_are_escaped_and_cut() {
        assert_eq!(quote("Hips"), "\"Hips\"");
        assert_eq!(quote("a\u{1b}[2J\0"), "\"a\\u{1b}[2J\\0\"");
        let long = "x".repeat(4_000_000);
        let q = quote(&long);
        assert!(q.len() < 80 && q.ends_with("(4000000 bytes)"), "{q}");
    }
}

//! The library half of the `skelett` command: what the binary (`main.rs`, its argument
//! parsing and subcommands) shares with the `play_script` fuzz target. Not a stable API; use
//! `skelett` and `skelett-io` from code.
//!
//! - [`load`]: FILE, standard input (`-`) or the embedded default character, read with the
//!   command line's [`load_options`];
//! - [`play`]: `skelett play` scripts, parsed, bound to an asset and run;
//! - [`term_text`] and [`term_safe`]: names from files made safe for a terminal.

pub mod play;

use std::path::Path;

use skelett_io::Asset;

/// The error every command returns: any error, with its message for the user (Send + Sync so
/// that batch work on rayon's pool can return it).
pub type Error = Box<dyn std::error::Error + Send + Sync>;
/// What every command returns.
pub type Result<T> = std::result::Result<T, Error>;

/// The embedded default character: Khronos' Fox (CC-BY 4.0, see `--help`).
pub const DEFAULT_ASSET: &[u8] = include_bytes!("../assets/Fox.glb");
/// What messages call the embedded default character.
pub const DEFAULT_NAME: &str = "Fox.glb (embedded)";

/// The load options of this run, set once from the command line before any command runs:
/// they apply to every file a command reads, so they are process-wide rather than threaded
/// through each command.
static LOAD_OPTIONS: std::sync::OnceLock<skelett_io::LoadOptions> = std::sync::OnceLock::new();

/// Sets the load options of this run (the first call wins; the binary calls it once, from
/// its global flags, before any command runs).
pub fn set_load_options(options: skelett_io::LoadOptions) {
    let _ = LOAD_OPTIONS.set(options);
}

/// How to read files: what the command line asked for (the files' own units and axes by
/// default).
pub fn load_options() -> skelett_io::LoadOptions {
    LOAD_OPTIONS.get().cloned().unwrap_or_default()
}

/// Loads FILE (`-`: standard input), or the embedded default when `None`; returns the asset
/// and a display name.
///
/// ```
/// let (fox, name) = skelett_cli::load(None)?;
/// assert_eq!(name, "Fox.glb (embedded)");
/// assert!(fox.clip("Walk").is_some());
/// # Ok::<(), skelett_io::Error>(())
/// ```
///
/// # Errors
/// The format's errors ([`skelett_io::load_with`]).
pub fn load(file: Option<&Path>) -> std::result::Result<(Asset, String), skelett_io::Error> {
    match file {
        Some(f) => {
            let name = if f == Path::new(skelett_io::STDIN_PATH) {
                skelett_io::STDIN_NAME.to_string()
            } else {
                f.display().to_string()
            };
            Ok((skelett_io::load_with(f, &load_options())?, name))
        }
        None => Ok((
            skelett_io::gltf::from_bytes(DEFAULT_ASSET, Path::new(DEFAULT_NAME))?,
            DEFAULT_NAME.to_string(),
        )),
    }
}

/// Text for a terminal: control characters other than newline and tab written as Rust
/// escapes (`\u{1b}`), so a joint named with an escape sequence cannot drive the terminal.
///
/// ```
/// assert_eq!(skelett_cli::term_text("a\u{1b}[31m\tb\n"), "a\\u{1b}[31m\tb\n");
/// // A right-to-left override, as a JSON-valid escape.
/// assert_eq!(skelett_cli::term_text("x\u{202e}y"), "x\\u202ey");
/// ```
pub fn term_text(s: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(s, |c| c != '\n' && c != '\t')
}

/// A name from a file made safe for a terminal, on one line: control characters (escape
/// sequences and newlines among them) are written as Rust escapes instead of reaching the
/// terminal.
///
/// ```
/// assert_eq!(skelett_cli::term_safe("a\nb"), "a\\nb");
/// ```
pub fn term_safe(s: &str) -> String {
    escape_controls(s, |_| true).into_owned()
}

/// `s` with the characters that can drive or mislead a terminal written as escapes: the
/// control characters `escape` picks as Rust escapes (`\u{1b}`), and the C1 controls, the
/// bidirectional overrides and isolates and the line and paragraph separators as `\u202e`.
/// That second form is also a valid JSON escape: serde_json escapes C0 controls itself but
/// leaves these raw inside strings, so JSON output stays valid JSON.
fn escape_controls(s: &str, escape: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    let wide = |c: char| {
        matches!(c, '\u{80}'..='\u{9f}' | '\u{061c}' | '\u{200e}' | '\u{200f}'
            | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    let hit = |c: char| wide(c) || (c.is_control() && escape(c));
    if !s.chars().any(hit) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if wide(c) {
            out += &format!("\\u{:04x}", c as u32);
        } else if hit(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

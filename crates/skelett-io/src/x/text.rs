//! The text form of `.x` (`txt `, and the body of a compressed `tzip` file): bytes to the tree
//! of data objects that `mod.rs` reads. Templates are skipped (the standard ones are known);
//! separators are kept on the numbers they follow, so that counts can be checked.

use std::path::Path;

use super::{Num, Obj, Place, Sep, Value, MAX_DEPTH};
use crate::error::quote;
use crate::Error;

/// Parses the data objects of a text `.x` body starting at byte `start` (16, after the header
/// line's first 16 bytes, for a `txt ` file; 0 for the decompressed body of a `tzip` file,
/// which has no header).
pub(super) fn parse(
    bytes: &[u8],
    start: usize,
    file: &Path,
    inflated: bool,
) -> Result<Vec<Obj>, Error> {
    let mut lx = Lexer {
        b: bytes,
        pos: start,
        line: 1,
        line_start: 0,
        tok_column: 1,
        file,
        inflated,
    };
    let mut top = Vec::new();
    loop {
        match lx.next_unseparated()? {
            Tok::Eof => break,
            Tok::Ident(t) if t == "template" => {
                // template Name { ... } — skipped, nested braces included.
                let mut depth = 0usize;
                loop {
                    match lx.next()? {
                        Tok::Open => depth += 1,
                        Tok::Close => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                break;
                            }
                        }
                        Tok::Eof => return Err(lx.err("} closing a template")),
                        _ => {}
                    }
                }
            }
            Tok::Ident(t) => {
                let oname = lx.open_object(&t)?;
                top.push(lx.body(t, oname, 0)?);
            }
            _ => return Err(lx.err("a template or a data object")),
        }
    }
    Ok(top)
}

struct Lexer<'a> {
    b: &'a [u8],
    pos: usize,
    line: usize,
    line_start: usize,
    /// The column where the last token returned starts.
    tok_column: usize,
    file: &'a Path,
    /// The text is the decompressed body of a `tzip` file: lines count from its start.
    inflated: bool,
}

#[derive(Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    Sep(u8),
    Ident(String),
    Str(String),
    Eof,
}

impl<'a> Lexer<'a> {
    fn err(&self, expected: &str) -> Error {
        self.place(self.line, self.pos.saturating_sub(self.line_start) + 1)
            .error(self.file, expected.to_string())
    }

    /// A line and column of this text (clamped past 4 billion: the input limit refuses such
    /// a file long before).
    fn place(&self, line: usize, column: usize) -> Place {
        Place::Text {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
            inflated: self.inflated,
        }
    }

    fn newline(&mut self) {
        self.line += 1;
        self.line_start = self.pos + 1;
    }

    fn next(&mut self) -> Result<Tok, Error> {
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return Ok(Tok::Eof);
            };
            self.tok_column = self.pos.saturating_sub(self.line_start) + 1;
            match c {
                b'\n' => {
                    self.newline();
                    self.pos += 1;
                }
                b';' | b',' => {
                    self.pos += 1;
                    return Ok(Tok::Sep(c));
                }
                c if c.is_ascii_whitespace() => self.pos += 1,
                b'/' if self.b.get(self.pos + 1) == Some(&b'/') => self.skip_line(),
                b'#' => self.skip_line(),
                b'<' => {
                    // A GUID: skip to '>'.
                    while let Some(&c) = self.b.get(self.pos) {
                        if c == b'\n' {
                            self.newline();
                        }
                        self.pos += 1;
                        if c == b'>' {
                            break;
                        }
                    }
                }
                b'{' => {
                    self.pos += 1;
                    return Ok(Tok::Open);
                }
                b'}' => {
                    self.pos += 1;
                    return Ok(Tok::Close);
                }
                b'"' => {
                    let (line, column) = (self.line, self.pos - self.line_start + 1);
                    self.pos += 1;
                    let start = self.pos;
                    while let Some(&c) = self.b.get(self.pos) {
                        if c == b'"' {
                            break;
                        }
                        if c == b'\\' {
                            self.pos += 1;
                        }
                        if c == b'\n' {
                            self.newline();
                        }
                        self.pos += 1;
                    }
                    if self.pos >= self.b.len() {
                        return Err(self.place(line, column).error(
                            self.file,
                            "a closing quote for the string that starts here".into(),
                        ));
                    }
                    let s = String::from_utf8_lossy(&self.b[start..self.pos]).into_owned();
                    self.pos += 1;
                    return Ok(Tok::Str(s));
                }
                _ => {
                    let start = self.pos;
                    while let Some(&c) = self.b.get(self.pos) {
                        if c.is_ascii_whitespace() || b"{};,<\"".contains(&c) {
                            break;
                        }
                        self.pos += 1;
                    }
                    return Ok(Tok::Ident(
                        String::from_utf8_lossy(&self.b[start..self.pos]).into_owned(),
                    ));
                }
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if c == b'\n' {
                break;
            }
            self.pos += 1;
        }
    }

    /// The next token that is not a separator (between objects, where separators mean
    /// nothing).
    fn next_unseparated(&mut self) -> Result<Tok, Error> {
        loop {
            match self.next()? {
                Tok::Sep(_) => {}
                t => return Ok(t),
            }
        }
    }

    /// After an object's type: its optional name and the `{` that opens it.
    fn open_object(&mut self, kind: &str) -> Result<Option<String>, Error> {
        let (name, open) = match self.next_unseparated()? {
            Tok::Open => (None, true),
            Tok::Ident(n) => (Some(n), self.next_unseparated()? == Tok::Open),
            _ => (None, false),
        };
        if !open {
            return Err(self.err(&format!("{{ opening a {} object", quote(kind))));
        }
        Ok(name)
    }

    /// The body of a data object after its `{`, up to the matching `}`.
    fn body(&mut self, kind: String, name: Option<String>, depth: usize) -> Result<Obj, Error> {
        if depth > MAX_DEPTH {
            return Err(self.err(&format!("objects nested at most {MAX_DEPTH} deep")));
        }
        let mut o = Obj {
            kind,
            name,
            values: Vec::new(),
            children: Vec::new(),
            refs: Vec::new(),
            at: self.place(self.line, self.tok_column),
        };
        // Whether the last token was a number still waiting for its separator.
        let mut open_num = false;
        loop {
            let tok = self.next()?;
            let column = self.tok_column;
            if let Tok::Sep(c) = tok {
                if open_num {
                    if let Some(Value::Num(n)) = o.values.last_mut() {
                        n.sep = if c == b';' {
                            Sep::Semicolon
                        } else {
                            Sep::Comma
                        };
                    }
                }
                open_num = false;
                continue;
            }
            open_num = false;
            match tok {
                Tok::Close => return Ok(o),
                Tok::Sep(_) => {}
                Tok::Eof => {
                    return Err(self.err(&format!("}} closing {} ({})", quote(&o.kind), o.at)))
                }
                Tok::Str(s) => o.values.push(Value::Str(s)),
                Tok::Open => {
                    // A reference: { Name } (or an empty { }).
                    match self.next_unseparated()? {
                        Tok::Ident(n) => {
                            if self.next_unseparated()? != Tok::Close {
                                return Err(self.err("} after a reference's name"));
                            }
                            o.refs.push(n);
                        }
                        Tok::Close => {}
                        _ => return Err(self.err("a name in a { reference }")),
                    }
                }
                Tok::Ident(t) => {
                    if let Some((v, int)) = parse_num(&t) {
                        o.values.push(Value::Num(Num {
                            v,
                            int,
                            sep: Sep::None,
                            at: self.place(self.line, column),
                        }));
                        open_num = true;
                        continue;
                    }
                    // A nested data object: Type [name] {
                    let name = self.open_object(&t)?;
                    let child = self.body(t, name, depth + 1)?;
                    o.children.push(child);
                }
            }
        }
    }
}

/// A number token: its value and whether it is an integer literal; `None` for a word.
fn parse_num(t: &str) -> Option<(f64, bool)> {
    let c = t.as_bytes().first()?;
    if !(c.is_ascii_digit() || *c == b'-' || *c == b'+' || *c == b'.') {
        return None;
    }
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    let int = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    t.parse::<f64>().ok().map(|v| (v, int))
}

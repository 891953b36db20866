//! The binary form of `.x` (`bin `, and the body of a compressed `bzip` file): a stream of
//! little-endian tokens to the same tree of data objects the text form gives, so that
//! `mod.rs` reads both alike.
//!
//! ```text
//! u16 code, then by code:   1 NAME  u32 n, n bytes        2 STRING  u32 n, n bytes (then ';')
//!                           3 INTEGER  u32                5 GUID  16 bytes
//!                           6 INTEGER_LIST  u32 n, n × u32
//!                           7 FLOAT_LIST  u32 n, n × f32 (n × f64 in `0064` files)
//!                           10 { 11 } 12 ( 13 ) 14 [ 15 ] 16 < 17 > 18 . 19 , 20 ;
//!                           31 template, 40-52 the template keywords (WORD .. array)
//! ```
//!
//! Numbers carry no separators: a writer packs each run of integers into one list and each
//! run of floats into another, across member boundaries (a Mesh is `[24] [72 floats]
//! [12, 3, 0, 2, 1, ...]`), so the numbers of an object are read as one flat stream, exactly
//! as the text form's are. Every record's length is checked against what is left before it
//! is read (a count can never ask for more than the file holds: the tree then takes about
//! ten times the bytes of the numbers it holds, as the text form's does), and every error
//! names the byte offset (in the decompressed data for a `bzip` file). A STRING record is
//! followed by a separator token; the SDK's table calls that terminator a DWORD, but real
//! files (the shared exporter's cube, Wine's and assimp's readers) write a 2-byte token,
//! and a separator is skipped wherever it stands.

use std::path::Path;

use super::{Num, Obj, Place, Sep, Value, MAX_DEPTH};
use crate::error::quote;
use crate::Error;

/// Parses the data objects of a binary `.x` token stream starting at byte `start`; `double`
/// for `0064` files (8-byte floats).
pub(super) fn parse(
    bytes: &[u8],
    start: usize,
    double: bool,
    file: &Path,
    inflated: bool,
) -> Result<Vec<Obj>, Error> {
    let mut r = Reader {
        b: bytes,
        pos: start,
        tok_at: start,
        double,
        file,
        inflated,
    };
    let mut top = Vec::new();
    loop {
        match r.next()? {
            Tok::Eof => break,
            Tok::Template => {
                // template Name { GUID members [restrictions] }: skipped by its tokens.
                let mut depth = 0usize;
                loop {
                    match r.next()? {
                        Tok::Open => depth += 1,
                        Tok::Close => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                break;
                            }
                        }
                        Tok::Eof => return Err(r.err("} closing a template")),
                        _ => {}
                    }
                }
            }
            Tok::Name(t) => {
                let at = r.place(r.tok_at);
                let oname = r.open_object(&t)?;
                top.push(r.body(t, oname, at, 0)?);
            }
            _ => return Err(r.err("a template or a data object")),
        }
    }
    Ok(top)
}

/// One binary token (list contents stay in the file: their offset and count).
#[derive(Debug, PartialEq)]
enum Tok {
    Name(String),
    Str(String),
    Int(u32),
    Guid,
    IntList {
        at: usize,
        count: usize,
    },
    FloatList {
        at: usize,
        count: usize,
    },
    Open,
    Close,
    Sep,
    Template,
    /// A token of templates only: brackets, parentheses, angles, the dot, a type keyword.
    Keyword(u16),
    Eof,
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    /// Where the last token returned starts.
    tok_at: usize,
    double: bool,
    file: &'a Path,
    inflated: bool,
}

impl Reader<'_> {
    fn place(&self, offset: usize) -> Place {
        Place::Byte {
            offset: offset as u64,
            inflated: self.inflated,
        }
    }

    /// An error at the last token read.
    fn err(&self, expected: &str) -> Error {
        self.place(self.tok_at)
            .error(self.file, expected.to_string())
    }

    /// `n` bytes at the current position, or an error naming what they were for.
    fn bytes(&mut self, n: u64, what: &str) -> Result<&[u8], Error> {
        let left = (self.b.len() - self.pos) as u64;
        if n > left {
            return Err(self.place(self.pos).error(
                self.file,
                format!("{what} ({n} bytes; the data ends {left} bytes on)"),
            ));
        }
        let s = &self.b[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A NAME's or STRING's text: a 4-byte length, then that many bytes.
    fn text(&mut self, what: &str) -> Result<String, Error> {
        let n = self.u32(&format!("the length of a {what}"))?;
        let b = self.bytes(u64::from(n), &format!("a {what} of {n} bytes"))?;
        // A NUL some exporters may add is not part of the name.
        let b = b.strip_suffix(&[0]).unwrap_or(b);
        Ok(String::from_utf8_lossy(b).into_owned())
    }

    /// A list's count and where its elements start, after checking they are all there (an
    /// error names the list's token).
    fn list(&mut self, size: u64, what: &str) -> Result<(usize, usize), Error> {
        let count = self.u32(&format!("the count of {what}"))?;
        let at = self.pos;
        let need = u64::from(count) * size;
        let left = (self.b.len() - at) as u64;
        if need > left {
            return Err(self.err(&format!(
                "{what} of {count} elements of {size} bytes ({need} bytes; the data ends \
                 {left} bytes on)"
            )));
        }
        self.pos += need as usize;
        Ok((at, count as usize))
    }

    fn next(&mut self) -> Result<Tok, Error> {
        self.tok_at = self.pos;
        // Less than a token code left is the end of the stream (a compressed file's last
        // block may end in a padding byte).
        if self.b.len() - self.pos < 2 {
            self.pos = self.b.len();
            return Ok(Tok::Eof);
        }
        let code = u16::from_le_bytes([self.b[self.pos], self.b[self.pos + 1]]);
        self.pos += 2;
        Ok(match code {
            1 => Tok::Name(self.text("name")?),
            2 => Tok::Str(self.text("string")?),
            3 => Tok::Int(self.u32("an integer")?),
            5 => {
                self.bytes(16, "a GUID")?;
                Tok::Guid
            }
            6 => {
                let (at, count) = self.list(4, "an integer list")?;
                Tok::IntList { at, count }
            }
            7 => {
                let size = if self.double { 8 } else { 4 };
                let (at, count) = self.list(size, "a float list")?;
                Tok::FloatList { at, count }
            }
            10 => Tok::Open,
            11 => Tok::Close,
            19 | 20 => Tok::Sep,
            31 => Tok::Template,
            12..=18 | 40..=52 => Tok::Keyword(code),
            _ => {
                return Err(self.err(&format!(
                    "a token code (1-3, 5-7, 10-20, 31 or 40-52), found {code}"
                )))
            }
        })
    }

    /// The next token that is not a separator or a GUID.
    fn next_data(&mut self) -> Result<Tok, Error> {
        loop {
            match self.next()? {
                Tok::Sep | Tok::Guid => {}
                t => return Ok(t),
            }
        }
    }

    /// After an object's type: its optional name and the `{` that opens it.
    fn open_object(&mut self, kind: &str) -> Result<Option<String>, Error> {
        let (name, open) = match self.next_data()? {
            Tok::Open => (None, true),
            Tok::Name(n) => (Some(n), self.next_data()? == Tok::Open),
            _ => (None, false),
        };
        if !open {
            return Err(self.err(&format!("{{ opening a {} object", quote(kind))));
        }
        Ok(name)
    }

    /// The body of a data object after its `{`, up to the matching `}`.
    fn body(
        &mut self,
        kind: String,
        name: Option<String>,
        at: Place,
        depth: usize,
    ) -> Result<Obj, Error> {
        if depth > MAX_DEPTH {
            return Err(self.err(&format!("objects nested at most {MAX_DEPTH} deep")));
        }
        let mut o = Obj {
            kind,
            name,
            values: Vec::new(),
            children: Vec::new(),
            refs: Vec::new(),
            at,
        };
        loop {
            match self.next()? {
                Tok::Close => return Ok(o),
                Tok::Sep | Tok::Guid => {}
                Tok::Int(v) => {
                    o.values
                        .push(Value::Num(self.num(f64::from(v), true, self.tok_at + 2)))
                }
                Tok::IntList { at, count } => {
                    o.values.reserve(count);
                    for i in 0..count {
                        let p = at + 4 * i;
                        let v = u32::from_le_bytes([
                            self.b[p],
                            self.b[p + 1],
                            self.b[p + 2],
                            self.b[p + 3],
                        ]);
                        o.values.push(Value::Num(self.num(f64::from(v), true, p)));
                    }
                }
                Tok::FloatList { at, count } => {
                    o.values.reserve(count);
                    for i in 0..count {
                        let v = if self.double {
                            let p = at + 8 * i;
                            let mut a = [0u8; 8];
                            a.copy_from_slice(&self.b[p..p + 8]);
                            (f64::from_le_bytes(a), p)
                        } else {
                            let p = at + 4 * i;
                            let a = [self.b[p], self.b[p + 1], self.b[p + 2], self.b[p + 3]];
                            (f64::from(f32::from_le_bytes(a)), p)
                        };
                        o.values.push(Value::Num(self.num(v.0, false, v.1)));
                    }
                }
                Tok::Str(s) => o.values.push(Value::Str(s)),
                Tok::Open => {
                    // A reference: { Name [GUID] } (or an empty { }).
                    match self.next_data()? {
                        Tok::Name(n) => {
                            if self.next_data()? != Tok::Close {
                                return Err(self.err("} after a reference's name"));
                            }
                            o.refs.push(n);
                        }
                        Tok::Close => {}
                        _ => return Err(self.err("a name in a { reference }")),
                    }
                }
                Tok::Name(t) => {
                    let at = self.place(self.tok_at);
                    let name = self.open_object(&t)?;
                    let child = self.body(t, name, at, depth + 1)?;
                    o.children.push(child);
                }
                Tok::Eof => {
                    return Err(self.err(&format!("}} closing {} ({})", quote(&o.kind), o.at)))
                }
                Tok::Template | Tok::Keyword(_) => {
                    return Err(self.err(&format!(
                        "numbers, strings, objects or references in {} ({}), not a template's \
                         token",
                        quote(&o.kind),
                        o.at
                    )))
                }
            }
        }
    }

    fn num(&self, v: f64, int: bool, offset: usize) -> Num {
        Num {
            v,
            int,
            sep: Sep::None,
            at: self.place(offset),
        }
    }
}

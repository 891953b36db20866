//! DirectX `.x` beyond text: the binary (`bin `, `0032` and `0064`) and compressed (`bzip`,
//! `tzip`) forms read exactly as the text form of the same content.
//!
//! Two sources of truth:
//! - the shared cube written by a DirectX exporter in all three forms
//!   (`../shared/data/xbin`), and a trueSpace binary mesh, with assimp's readings of them
//!   (`../shared/data/reference/*.x.json`);
//! - an encoder written here, from the format's documentation (the DirectX SDK's token
//!   records, MSZIP as in CAB files), that turns every text file of `../shared/data/x` into
//!   the other four forms. Skeletons, rest poses, meshes, skins, clips and warnings must
//!   come out equal, bit for bit.
//!
//! The encoded files are also written to `target/tmp/x_encoded/` as seeds for the fuzz
//! targets (`fuzz/seed_corpus.sh` copies them).

mod common;

use std::path::{Path, PathBuf};

use glam::Mat4;
use serde_json::Value;
use skelett::local_to_model;
use skelett_io::x::{from_bytes_with, Options};
use skelett_io::{Asset, Error};

// ---------------------------------------------------------------------------------------
// The encoder.

/// One token of a text `.x` body.
#[derive(Debug, Clone, PartialEq)]
enum T {
    Open,
    Close,
    Semi,
    Comma,
    LBracket,
    RBracket,
    Dot,
    Guid,
    Str(String),
    Word(String),
}

/// Splits a text `.x` body (after its 16-byte header) into tokens.
fn tokens(text: &[u8]) -> Vec<T> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        match c {
            b'{' => out.push(T::Open),
            b'}' => out.push(T::Close),
            b';' => out.push(T::Semi),
            b',' => out.push(T::Comma),
            b'[' => out.push(T::LBracket),
            b']' => out.push(T::RBracket),
            b'/' if text.get(i + 1) == Some(&b'/') => {
                while i < text.len() && text[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < text.len() && text[i] != b'\n' {
                    i += 1;
                }
            }
            b'<' => {
                while text[i] != b'>' {
                    i += 1;
                }
                out.push(T::Guid);
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while text[i] != b'"' {
                    if text[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                out.push(T::Str(
                    String::from_utf8_lossy(&text[start..i]).into_owned(),
                ));
            }
            c if c.is_ascii_whitespace() => {}
            _ => {
                let start = i;
                while i < text.len() && !b" \t\r\n{};,[]<\"".contains(&text[i]) {
                    i += 1;
                }
                let w = String::from_utf8_lossy(&text[start..i]).into_owned();
                if w == "..." {
                    out.extend([T::Dot, T::Dot, T::Dot]);
                } else {
                    out.push(T::Word(w));
                }
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Token codes of the binary format.
const NAME: u16 = 1;
const STRING: u16 = 2;
const INTEGER: u16 = 3;
const GUID: u16 = 5;
const INTEGER_LIST: u16 = 6;
const FLOAT_LIST: u16 = 7;

struct Writer {
    out: Vec<u8>,
    double: bool,
    ints: Vec<u32>,
    floats: Vec<f64>,
}

impl Writer {
    fn code(&mut self, c: u16) {
        self.out.extend(c.to_le_bytes());
    }
    fn text(&mut self, code: u16, s: &str) {
        self.code(code);
        self.out.extend((s.len() as u32).to_le_bytes());
        self.out.extend(s.as_bytes());
    }
    /// Writes the pending run of numbers as one list, as DirectX's writer packs them.
    fn flush(&mut self) {
        if !self.ints.is_empty() {
            self.code(INTEGER_LIST);
            self.out.extend((self.ints.len() as u32).to_le_bytes());
            for v in std::mem::take(&mut self.ints) {
                self.out.extend(v.to_le_bytes());
            }
        }
        if !self.floats.is_empty() {
            self.code(FLOAT_LIST);
            self.out.extend((self.floats.len() as u32).to_le_bytes());
            for v in std::mem::take(&mut self.floats) {
                if self.double {
                    self.out.extend(v.to_le_bytes());
                } else {
                    self.out.extend((v as f32).to_le_bytes());
                }
            }
        }
    }
    fn number(&mut self, w: &str) -> bool {
        let Ok(v) = w.parse::<f64>() else {
            return false;
        };
        let int = w.bytes().all(|b| b.is_ascii_digit()) && v <= f64::from(u32::MAX);
        if int {
            if !self.floats.is_empty() {
                self.flush();
            }
            self.ints.push(v as u32);
        } else {
            if !self.ints.is_empty() {
                self.flush();
            }
            self.floats.push(v);
        }
        true
    }
}

/// The template keywords and their codes.
fn keyword(w: &str) -> Option<u16> {
    Some(match w {
        "WORD" => 40,
        "DWORD" => 41,
        "FLOAT" => 42,
        "DOUBLE" => 43,
        "CHAR" => 44,
        "UCHAR" => 45,
        "SWORD" => 46,
        "SDWORD" => 47,
        "VOID" => 48,
        "STRING" => 49,
        "UNICODE" => 50,
        "CSTRING" => 51,
        "array" => 52,
        _ => return None,
    })
}

/// A text `.x` file's body as a binary token stream (no header).
fn binary_body(text: &[u8], double: bool) -> Vec<u8> {
    let mut w = Writer {
        out: Vec::new(),
        double,
        ints: Vec::new(),
        floats: Vec::new(),
    };
    let toks = tokens(&text[16..]);
    let mut i = 0;
    // Inside a template: 1 after its keyword, 2 inside its braces; 0 in data.
    let mut template = 0usize;
    while i < toks.len() {
        let t = &toks[i];
        if template > 0 {
            match t {
                T::Open => {
                    template += 1;
                    w.code(10)
                }
                T::Close => {
                    template -= 1;
                    w.code(11)
                }
                T::Semi => w.code(20),
                T::Comma => w.code(19),
                T::LBracket => w.code(14),
                T::RBracket => w.code(15),
                T::Dot => w.code(18),
                T::Guid => {
                    w.code(GUID);
                    w.out.extend([0u8; 16]);
                }
                T::Word(s) => {
                    if let Some(k) = keyword(s) {
                        w.code(k);
                    } else if let Ok(n) = s.parse::<u32>() {
                        w.code(INTEGER);
                        w.out.extend(n.to_le_bytes());
                    } else {
                        w.text(NAME, s);
                    }
                }
                T::Str(s) => w.text(STRING, s),
            }
            if template == 1 && *t == T::Close {
                template = 0;
            }
            i += 1;
            continue;
        }
        match t {
            T::Word(s) if s == "template" => {
                w.flush();
                w.code(31);
                template = 1;
            }
            T::Word(s) => {
                if !w.number(s) {
                    w.flush();
                    w.text(NAME, s);
                }
            }
            T::Str(s) => {
                w.flush();
                w.text(STRING, s);
                // The separator after a string is a token of its own.
                if matches!(toks.get(i + 1), Some(T::Semi | T::Comma)) {
                    w.code(if toks[i + 1] == T::Semi { 20 } else { 19 });
                    i += 1;
                }
            }
            T::Open => {
                w.flush();
                w.code(10)
            }
            T::Close => {
                w.flush();
                w.code(11)
            }
            T::Guid => {
                w.flush();
                w.code(GUID);
                w.out.extend([0u8; 16]);
            }
            // Separators between numbers are not written in binary.
            T::Semi | T::Comma | T::LBracket | T::RBracket | T::Dot => {}
        }
        i += 1;
    }
    w.flush();
    w.out
}

/// A whole binary `.x` file.
fn binary_file(text: &[u8], double: bool) -> Vec<u8> {
    let mut out = format!("xof 0303bin {}", if double { "0064" } else { "0032" }).into_bytes();
    out.extend(binary_body(text, double));
    out
}

/// MSZIP blocks of `body` (each 32 KB at most, deflated on its own).
fn mszip(header: &str, body: &[u8]) -> Vec<u8> {
    let mut out = header.as_bytes().to_vec();
    out.extend(((body.len() + 16) as u32).to_le_bytes());
    for chunk in body.chunks(32 * 1024) {
        let packed = miniz_oxide::deflate::compress_to_vec(chunk, 6);
        out.extend((chunk.len() as u16).to_le_bytes());
        out.extend(((packed.len() + 2) as u16).to_le_bytes());
        out.extend(b"CK");
        out.extend(packed);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Comparison.

fn read(bytes: &[u8], name: &str) -> Result<Asset, Error> {
    from_bytes_with(bytes, Path::new(name), &Options::default())
}

fn assert_same(a: &Asset, b: &Asset, what: &str) {
    assert_eq!(a.skeleton.names(), b.skeleton.names(), "{what}: joints");
    assert_eq!(
        a.skeleton.parents(),
        b.skeleton.parents(),
        "{what}: parents"
    );
    assert_eq!(
        a.skeleton.rest_pose(),
        b.skeleton.rest_pose(),
        "{what}: rest pose"
    );
    assert!(a.skins == b.skins, "{what}: skins differ");
    assert!(a.meshes == b.meshes, "{what}: meshes differ");
    assert_eq!(a.clips.len(), b.clips.len(), "{what}: clip count");
    for (x, y) in a.clips.iter().zip(&b.clips) {
        assert!(x == y, "{what}: clip {} differs", x.name());
        assert_eq!(x.frame_rate(), y.frame_rate(), "{what}: frame rate");
    }
    assert_eq!(a.warnings, b.warnings, "{what}: warnings");
}

fn encoded_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("x_encoded");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every text file of the shared data, and the text cube.
fn text_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(common::data("x"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.push(common::data("xbin/test_cube_text.x"));
    files
}

#[test]
fn every_text_file_reads_the_same_in_binary_and_compressed_forms() {
    let dir = encoded_dir();
    for path in text_files() {
        let text = std::fs::read(&path).unwrap();
        assert_eq!(&text[8..12], b"txt ", "{}", path.display());
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let want = read(&text, &stem).unwrap_or_else(|e| panic!("{e}"));
        let bin32 = binary_file(&text, false);
        let bin64 = binary_file(&text, true);
        let bzip = mszip("xof 0303bzip0032", &bin32[16..]);
        let tzip = mszip("xof 0303tzip0032", &text[16..]);
        for (form, bytes) in [
            ("bin32", &bin32),
            ("bin64", &bin64),
            ("bzip", &bzip),
            ("tzip", &tzip),
        ] {
            std::fs::write(dir.join(format!("{stem}.{form}.x")), bytes).unwrap();
            let got = read(bytes, &stem).unwrap_or_else(|e| panic!("{stem} {form}: {e}"));
            assert_same(&want, &got, &format!("{stem} {form}"));
        }
        // The binary forms are smaller than the text, as the format intends.
        assert!(
            bin32.len() < text.len(),
            "{stem}: {} >= {}",
            bin32.len(),
            text.len()
        );
        assert!(bzip.len() < bin32.len());
    }
}

/// The exporter's own three cubes: the same asset, and assimp's frames and offsets.
#[test]
fn the_shared_cube_reads_alike_in_text_binary_and_compressed_form() {
    let load = |f: &str| {
        let bytes = std::fs::read(common::data(&format!("xbin/{f}"))).unwrap();
        read(&bytes, f).unwrap_or_else(|e| panic!("{e}"))
    };
    let text = load("test_cube_text.x");
    for f in ["test_cube_binary.x", "test_cube_compressed.x"] {
        let other = load(f);
        assert_same(&text, &other, f);
        check_reference(&other, f);
    }
    check_reference(&text, "test_cube_text.x");
    // 12 triangles, as assimp counts them; 24 vertices, each with its one bone.
    let p = &text.meshes[0].primitives[0];
    assert_eq!(p.indices.len(), 36);
    assert_eq!(p.positions.len(), 24);
}

/// Frames' world matrices and skin offset matrices against assimp's (file axes).
fn check_reference(asset: &Asset, file: &str) {
    let r = common::reference(file);
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    local_to_model(&asset.skeleton, asset.skeleton.rest_pose(), 0, &mut model).unwrap();
    let frames = r["frames"].as_array().unwrap();
    for f in frames {
        let name = f["name"].as_str().unwrap();
        let j = asset
            .skeleton
            .find(name)
            .unwrap_or_else(|| panic!("{file}: no frame {name}"));
        let got = (asset.skeleton.root_transform() * model[j as usize]).to_cols_array();
        let want = floats(&f["world"]);
        for i in 0..16 {
            assert!(
                (got[i] - want[i]).abs() < 1e-5,
                "{file} frame {name} [{i}]: {} vs {}",
                got[i],
                want[i]
            );
        }
    }
    for (s, rs) in asset.skins.iter().zip(r["skins"].as_array().unwrap()) {
        let names: Vec<&str> = rs["joints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        for (k, want) in rs["offset_matrices"].as_array().unwrap().iter().enumerate() {
            let j = s.joints()[k];
            assert_eq!(asset.skeleton.name(j), names[k]);
            let got = s.inverse_bind()[k].to_cols_array();
            let want = floats(want);
            for i in 0..16 {
                assert!((got[i] - want[i]).abs() < 1e-5, "{file} offset {k} [{i}]");
            }
        }
    }
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

/// trueSpace's binary export: no templates, a `Header` object, no separators at all.
#[test]
fn a_truespace_binary_mesh_reads_with_its_frame() {
    let f = "fromtruespace_bin32.x";
    let bytes = std::fs::read(common::data(&format!("xbin/{f}"))).unwrap();
    let asset = read(&bytes, f).unwrap_or_else(|e| panic!("{e}"));
    check_reference(&asset, f);
    let p = &asset.meshes[0].primitives[0];
    // The file's 6656 triangles over its 4132 vertices (assimp reports 4554 vertices after
    // splitting them by normal and UV; the faces are the same).
    assert_eq!(p.indices.len(), 6656 * 3);
    assert_eq!(p.positions.len(), 4132);
}

// ---------------------------------------------------------------------------------------
// MSZIP history across blocks.

/// Bits of a DEFLATE stream, least significant first.
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    n: u32,
}

impl Bits {
    fn put(&mut self, v: u32, count: u32) {
        for k in 0..count {
            if self.n % 8 == 0 {
                self.out.push(0);
            }
            let bit = ((v >> k) & 1) as u8;
            *self.out.last_mut().unwrap() |= bit << (self.n % 8);
            self.n += 1;
        }
    }
    /// A Huffman code: most significant bit first.
    fn code(&mut self, v: u32, count: u32) {
        for k in (0..count).rev() {
            self.put((v >> k) & 1, 1);
        }
    }
}

/// A final, fixed-Huffman DEFLATE block holding one match: copy 38 bytes from 38 back.
fn copy_38_from_38_back() -> Vec<u8> {
    let mut b = Bits::default();
    b.put(1, 1); // BFINAL
    b.put(1, 2); // BTYPE 01: fixed Huffman
                 // Length 38: code 273 (lengths 35-42, 3 extra bits), 7-bit code 273 - 256.
    b.code(273 - 256, 7);
    b.put(38 - 35, 3);
    // Distance 38: code 10 (distances 33-48, 4 extra bits), 5-bit code.
    b.code(10, 5);
    b.put(38 - 33, 4);
    b.code(0, 7); // end of block (256)
    b.out
}

/// A block may copy from the block before it (MSZIP keeps the window): the second block
/// here is nothing but such a copy, of the object that ends the first block.
#[test]
fn a_compressed_block_may_copy_from_the_block_before_it() {
    let mut text = std::fs::read(common::data("xbin/test_cube_text.x")).unwrap();
    text.extend(b"\nAnimTicksPerSecond {\n 24;\n}\n");
    let body = binary_body(&text, false);
    // The last object: NAME "AnimTicksPerSecond" (24 bytes), `{`, INTEGER_LIST of one (10),
    // `}`: 38 bytes.
    let tail = &body[body.len() - 38..];
    assert_eq!(&tail[6..24], b"AnimTicksPerSecond");
    let mut whole = body.clone();
    whole.extend_from_slice(tail);
    let plain = read(&[b"xof 0303bin 0032".as_slice(), &whole].concat(), "cube")
        .unwrap_or_else(|e| panic!("{e}"));

    let mut file = b"xof 0303bzip0032".to_vec();
    file.extend(((whole.len() + 16) as u32).to_le_bytes());
    let first = miniz_oxide::deflate::compress_to_vec(&body, 6);
    file.extend((body.len() as u16).to_le_bytes());
    file.extend(((first.len() + 2) as u16).to_le_bytes());
    file.extend(b"CK");
    file.extend(&first);
    let second = copy_38_from_38_back();
    file.extend(38u16.to_le_bytes());
    file.extend(((second.len() + 2) as u16).to_le_bytes());
    file.extend(b"CK");
    file.extend(&second);
    let packed = read(&file, "cube").unwrap_or_else(|e| panic!("{e}"));
    assert_same(&plain, &packed, "history");

    // The same copy as the first block has nothing to copy from: refused, with its offset.
    let mut alone = b"xof 0303bzip0032".to_vec();
    alone.extend((38u32 + 16).to_le_bytes());
    alone.extend(38u16.to_le_bytes());
    alone.extend(((second.len() + 2) as u16).to_le_bytes());
    alone.extend(b"CK");
    alone.extend(&second);
    let e = read(&alone, "alone.x").unwrap_err().to_string();
    assert!(
        e.contains("alone.x") && e.contains("byte 26") && e.contains("block 0"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------
// Bad input.

/// Every cut of the binary and compressed cubes is refused with a typed error naming the
/// file and a byte offset (or, for the text inside a tzip, a line), never a panic; a cut
/// inside a compressed block names the block.
#[test]
fn truncated_binary_and_compressed_files_are_refused_with_their_offset() {
    let text = std::fs::read(common::data("x/Testwuson.X")).unwrap();
    let forms = [
        ("bin", binary_file(&text, false)),
        (
            "bzip",
            mszip("xof 0303bzip0032", &binary_file(&text, false)[16..]),
        ),
        ("tzip", mszip("xof 0303tzip0032", &text[16..])),
    ];
    for (form, bytes) in &forms {
        let step = (bytes.len() / 300).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let name = format!("cut.{form}.x");
            match read(&bytes[..cut], &name) {
                Ok(_) => panic!("{form} cut at {cut} of {} loaded", bytes.len()),
                Err(e) => {
                    let m = e.to_string();
                    assert!(m.contains(&name), "{m}");
                    assert!(m.contains("byte") || m.contains("line"), "{m}");
                    if *form != "bin" && cut > 30 {
                        assert!(
                            m.contains("block") || m.contains("bytes the file gives"),
                            "{m}"
                        );
                    }
                }
            }
        }
    }
    // Binary: an object cut short names its byte offset.
    let bin = &forms[0].1;
    let e = read(&bin[..bin.len() - 3], "short.x").unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("byte"), "{e}");
    // An unknown token code.
    let mut bad = b"xof 0303bin 0032".to_vec();
    bad.extend(99u16.to_le_bytes());
    let e = read(&bad, "code.x").unwrap_err().to_string();
    assert!(
        e.contains("code.x") && e.contains("byte 16") && e.contains("found 99"),
        "{e}"
    );
    // A list longer than the file.
    let mut bad = b"xof 0303bin 0032".to_vec();
    bad.extend(1u16.to_le_bytes());
    bad.extend(4u32.to_le_bytes());
    bad.extend(b"Mesh");
    bad.extend(10u16.to_le_bytes());
    bad.extend(7u16.to_le_bytes());
    bad.extend(u32::MAX.to_le_bytes());
    let e = read(&bad, "list.x").unwrap_err().to_string();
    assert!(
        e.contains("byte 28") && e.contains("a float list of 4294967295"),
        "{e}"
    );
    // A decompressed size past the input limit, and a block that inflates to more than it
    // says.
    let mut bad = b"xof 0303bzip0032".to_vec();
    bad.extend(u32::MAX.to_le_bytes());
    let e = read(&bad, "huge.x").unwrap_err().to_string();
    assert!(e.contains("input limit"), "{e}");
    let mut cube = std::fs::read(common::data("xbin/test_cube_compressed.x")).unwrap();
    cube[20] = 10; // the block's decompressed size, 2800, becomes 2570
    let e = read(&cube, "cube.x").unwrap_err().to_string();
    assert!(e.contains("block 0") && e.contains("holds more"), "{e}");
    // A float size other than 0032 or 0064.
    let e = read(b"xof 0303bin 0016", "f.x").unwrap_err().to_string();
    assert!(e.contains("float size"), "{e}");
}

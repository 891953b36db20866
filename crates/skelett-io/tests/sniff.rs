//! Loading by content (`from_bytes_with`, the path `-`): every file of `../shared/data` in a
//! format skelett reads is recognised from its first bytes as the format its extension names,
//! and loads to the same asset as through its path; bytes of no known format are refused at
//! byte 0 with the name given.

use std::path::Path;

use skelett_io::{from_bytes_with, sniff, Error, Format, LoadOptions};
use skelett_testdata::data_dir;

fn expected(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "glb" => Format::Glb,
        "gltf" => Format::Gltf,
        "fbx" => Format::Fbx,
        "bvh" => Format::Bvh,
        "x" => Format::X,
        "skl" => Format::Skl,
        _ => return None,
    })
}

#[test]
fn every_shared_file_is_recognised_by_content() {
    let mut checked = 0;
    for dir in ["bvh", "fbx", "gltf", "morph", "x", "xbin"] {
        for entry in std::fs::read_dir(data_dir().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let Some(format) = expected(&path) else {
                continue;
            };
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(sniff(&bytes), Some(format), "{}", path.display());
            // Through memory and through the path: the same asset, or the same refusal. The
            // name without its folder (a BVH clip is named after its file).
            let name = Path::new(path.file_name().unwrap());
            let by_content = from_bytes_with(&bytes, name, &LoadOptions::default());
            let by_path = skelett_io::load(&path);
            match (by_content, by_path) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.skeleton.names(), b.skeleton.names(), "{}", path.display());
                    assert_eq!(a.skeleton.rest_pose(), b.skeleton.rest_pose());
                    assert!(a.meshes == b.meshes, "{}: meshes differ", path.display());
                    assert!(a.clips == b.clips, "{}: clips differ", path.display());
                }
                (Err(a), Err(b)) => {
                    let b = b
                        .to_string()
                        .replace(&path.display().to_string(), &name.display().to_string());
                    assert_eq!(a.to_string(), b, "{}", path.display());
                }
                (a, b) => panic!(
                    "{}: by content {:?}, by path {:?}",
                    path.display(),
                    a.err(),
                    b.err()
                ),
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} files");
    // skelett's own format.
    let fox = skelett_io::load(data_dir().join("gltf/Fox.glb")).unwrap();
    let skl = skelett_io::native::to_bytes(&fox);
    assert_eq!(sniff(&skl), Some(Format::Skl));
    let back = from_bytes_with(&skl, Path::new("fox.skl"), &LoadOptions::default()).unwrap();
    assert!(back.clips == fox.clips, "Fox via .skl: clips differ");
}

#[test]
fn unknown_content_is_refused_at_byte_zero() {
    for bytes in [&b""[..], b"hello", b"\x00\x01\x02", b"rite model\n"] {
        assert_eq!(sniff(bytes), None);
        match from_bytes_with(
            bytes,
            Path::new("(standard input)"),
            &LoadOptions::default(),
        ) {
            Err(Error::Malformed {
                file,
                offset,
                expected,
            }) => {
                assert_eq!(file, Path::new("(standard input)"));
                assert_eq!(offset, 0);
                assert!(
                    expected.contains("BVH") && expected.contains(".ram"),
                    "{expected}"
                );
            }
            other => panic!("{bytes:?}: {:?}", other.map(|a| a.skeleton.len())),
        }
    }
}

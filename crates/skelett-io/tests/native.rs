//! `.skl` round trips and bad input: every asset of `../shared/data` (glTF and BVH) written
//! and read back exactly (clips compare equal: the same keys, timelines and angles); a
//! truncated, corrupted, newer or foreign file is refused with an error and a byte offset.

mod common;

use std::path::Path;

use skelett::{sample_uncached, Pose};
use skelett_io::{native, Error};

#[test]
fn every_asset_round_trips_exactly() {
    for path in common::all_assets() {
        let a = skelett_io::load(&path).unwrap();
        let bytes = native::to_bytes(&a);
        let b = native::from_bytes(&bytes, Path::new("x.skl"))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(a.skeleton.names(), b.skeleton.names());
        assert_eq!(a.skeleton.parents(), b.skeleton.parents());
        assert_eq!(a.skeleton.rest_pose(), b.skeleton.rest_pose());
        assert_eq!(a.skeleton.root_transform(), b.skeleton.root_transform());
        assert_eq!(a.skins, b.skins);
        assert_eq!(a.meshes, b.meshes);
        assert_eq!(a.clips, b.clips, "{}", path.display());
        assert_eq!(a.warnings, b.warnings);
        for (x, y) in a.clips.iter().zip(&b.clips) {
            assert_eq!(x.counts(), y.counts());
            let mut p = Pose::rest(&a.skeleton);
            let mut q = Pose::rest(&b.skeleton);
            for i in 0..20 {
                let t = x.start() + x.duration() * i as f32 / 19.0;
                sample_uncached(x, t, &mut p).unwrap();
                sample_uncached(y, t, &mut q).unwrap();
                assert_eq!(p, q);
            }
        }
        // Written twice, the same bytes.
        assert_eq!(native::to_bytes(&b), bytes);
    }
}

fn fox_bytes() -> Vec<u8> {
    native::to_bytes(&skelett_io::load(common::data("gltf/Fox.glb")).unwrap())
}

#[test]
fn truncated_corrupted_newer_and_foreign_files_are_refused() {
    let good = fox_bytes();
    for cut in (0..good.len())
        .step_by(997)
        .chain([0, 5, 19, 20, good.len() - 1])
    {
        match native::from_bytes(&good[..cut], Path::new("cut.skl")) {
            Err(Error::Malformed { offset, .. }) => assert!(offset as usize <= good.len()),
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    let mut corrupt = good.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0x40;
    let e = native::from_bytes(&corrupt, Path::new("c.skl"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("CRC-32") && e.contains("byte 16"), "{e}");
    let mut newer = good.clone();
    newer[4..8].copy_from_slice(&(native::VERSION + 1).to_le_bytes());
    let e = native::from_bytes(&newer, Path::new("n.skl"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("newer") && e.contains("byte 4"), "{e}");
    let e = native::from_bytes(b"glTF\x02\0\0\0 and more bytes here", Path::new("f.skl"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("magic"), "{e}");
}

/// With a valid checksum over a hostile payload (as a fuzzer or an attacker can make), the
/// parser still refuses without panicking or allocating what the counts claim.
#[test]
fn hostile_payloads_with_valid_checksums_are_refused() {
    let good = fox_bytes();
    let seal = |mut b: Vec<u8>| {
        let crc = crc32fast_hash(&b[20..]);
        b[16..20].copy_from_slice(&crc.to_le_bytes());
        b
    };
    // A joint count of 4 billion.
    let mut b = good.clone();
    b[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = native::from_bytes(&seal(b), Path::new("h.skl"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("too short"), "{e}");
    // Every single-byte change of the first 4 KiB of the payload: an error or a valid asset.
    for i in (20..good.len().min(4096)).step_by(7) {
        let mut b = good.clone();
        b[i] = b[i].wrapping_add(0x55);
        let _ = native::from_bytes(&seal(b), Path::new("h.skl"));
    }
}

fn crc32fast_hash(b: &[u8]) -> u32 {
    // The same CRC-32 (IEEE) the format uses, computed independently.
    let mut crc = !0u32;
    for &x in b {
        crc ^= x as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

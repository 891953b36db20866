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
    assert!(
        e.contains("a count that fits") && e.contains("4294967295"),
        "{e}"
    );
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

/// Morph targets, channels and weight tracks survive `.skl` exactly: the Khronos morph
/// assets and Maya's in-between shapes, each clip also compressed and made additive (whose base weights differ from the
/// rest weights), written and read back: meshes and skeleton channels equal, every clip's
/// weight tracks bit for bit, and sampled weights equal at 20 times.
#[test]
fn morph_targets_and_weight_tracks_round_trip() {
    use skelett::compress::{compress, CompressOptions};
    for name in [
        "AnimatedMorphCube.glb",
        "AnimatedMorphSphere.glb",
        "MorphStressTest.glb",
        "SimpleMorph.glb",
        // Maya in-between shapes (their full weights kept).
        "maya_blend_inbetween_7500_binary.fbx",
    ] {
        let path = if name.starts_with("maya_blend_inbetween") {
            skelett_testdata::maya_inbetween(name)
        } else {
            common::data(&format!("morph/{name}"))
        };
        let mut a = skelett_io::load(path).unwrap();
        assert!(a.skeleton.morph_channel_count() > 0, "{name}");
        if name.starts_with("maya") {
            assert!(!a.meshes[0].morph_full_weights.is_empty());
        }
        let mut extra = Vec::new();
        for c in &a.clips {
            let (compact, _) = compress(&a.skeleton, c, &CompressOptions::default()).unwrap();
            assert!(compact.is_compact());
            extra.push(std::sync::Arc::new(compact));
            extra.push(std::sync::Arc::new(c.to_additive_from_first_frame()));
        }
        a.clips.extend(extra);
        let bytes = native::to_bytes(&a);
        let b = native::from_bytes(&bytes, Path::new("m.skl"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            a.skeleton.morph_channels(),
            b.skeleton.morph_channels(),
            "{name}"
        );
        assert_eq!(a.skeleton.id(), b.skeleton.id(), "{name}");
        assert_eq!(a.meshes, b.meshes, "{name}");
        assert!(a
            .meshes
            .iter()
            .any(|m| m.primitives.iter().any(|p| !p.morph_targets.is_empty())));
        assert_eq!(a.clips.len(), b.clips.len());
        let n = a.skeleton.morph_channel_count();
        for (x, y) in a.clips.iter().zip(&b.clips) {
            assert!(x.animates_morph_weights(), "{name} {}", x.name());
            let tracks =
                |c: &skelett::Clip| -> Vec<(usize, skelett::Interpolation, Vec<u32>, Vec<u32>)> {
                    c.morph_tracks()
                        .map(|t| {
                            (
                                t.channel,
                                t.interpolation,
                                t.times.iter().map(|v| v.to_bits()).collect(),
                                t.values.iter().map(|v| v.to_bits()).collect(),
                            )
                        })
                        .collect()
                };
            assert_eq!(tracks(x), tracks(y), "{name} {}", x.name());
            let (mut wx, mut wy) = (vec![0.0; n], vec![0.0; n]);
            for i in 0..20 {
                let t = x.start() + x.duration() * i as f32 / 19.0;
                skelett::sample_morph_weights(x, t, &mut wx).unwrap();
                skelett::sample_morph_weights(y, t, &mut wy).unwrap();
                let bits = |w: &[f32]| w.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&wx), bits(&wy), "{name} {} t={t}", x.name());
            }
        }
        assert_eq!(
            native::to_bytes(&b),
            bytes,
            "{name}: written twice, the same bytes"
        );
    }
}

/// A version 2 file (before morph targets) still loads. A BVH asset has no meshes, so its
/// version 3 bytes are version 2's with two empty morph counts added: the skeleton's channel
/// count after the root transform and each clip's track count (with no base weights) after
/// its events. Removing them and sealing the payload as version 2 gives what a version 2
/// writer wrote.
#[test]
fn version_2_files_still_load() {
    let a = skelett_io::load(common::data("bvh/01_01.bvh")).unwrap();
    assert!(a.meshes.is_empty() && a.clips.len() == 1 && a.warnings.is_empty());
    let mut payload = payload_before_frame_rates(&a);
    // The last clip ends 8 bytes before the end (warning count 0, metres per unit).
    let end = payload.len() - 8;
    assert_eq!(&payload[end - 4..end], &[0; 4]);
    payload.drain(end - 4..end);
    let root_end = 4
        + a.skeleton
            .names()
            .iter()
            .map(|n| 4 + n.len() + 2 + 40)
            .sum::<usize>()
        + 64;
    assert_eq!(&payload[root_end..root_end + 4], &[0; 4]);
    payload.drain(root_end..root_end + 4);
    let v2 = seal(2, &payload);
    let b = native::from_bytes(&v2, Path::new("v2.skl")).unwrap();
    assert_eq!(a.clips, b.clips);
    assert_eq!(a.skeleton.names(), b.skeleton.names());
    // The same bytes read as version 3 are refused, not misread.
    let mut as_v3 = v2.clone();
    as_v3[4..8].copy_from_slice(&3u32.to_le_bytes());
    assert!(native::from_bytes(&as_v3, Path::new("v2.skl")).is_err());
}

/// A version 3 file (before in-between shapes) still loads: a morph asset's version 4 bytes
/// are version 3's with one empty full-weight count after each mesh's morph channel list.
/// AnimatedMorphCube has one mesh with channels [0, 1]: removing the count after them and
/// sealing the payload as version 3 gives what a version 3 writer wrote.
#[test]
fn version_3_files_still_load() {
    let a = skelett_io::load(common::data("morph/AnimatedMorphCube.glb")).unwrap();
    assert_eq!(a.meshes.len(), 1);
    assert_eq!(a.meshes[0].morph_channels, [0, 1]);
    let mut payload = payload_before_frame_rates(&a);
    let pattern: Vec<u8> = [2u32, 0, 1, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let at: Vec<usize> = payload
        .windows(pattern.len())
        .enumerate()
        .filter(|(_, w)| *w == &pattern[..])
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        at.len(),
        1,
        "the channel list and the empty count are not unique"
    );
    payload.drain(at[0] + 12..at[0] + 16);
    let v3 = seal(3, &payload);
    let b = native::from_bytes(&v3, Path::new("v3.skl")).unwrap();
    assert_eq!(a.meshes, b.meshes);
    assert_eq!(a.clips, b.clips);
    // The same bytes read as version 4 are refused, not misread.
    let mut as_v4 = v3.clone();
    as_v4[4..8].copy_from_slice(&4u32.to_le_bytes());
    assert!(native::from_bytes(&as_v4, Path::new("v3.skl")).is_err());
}

/// The payload of `asset`'s `.skl` bytes as version 4 wrote it: version 5 only appends one
/// frame rate (4 bytes) per clip at the end.
fn payload_before_frame_rates(asset: &skelett_io::Asset) -> Vec<u8> {
    let bytes = native::to_bytes(asset);
    let mut payload = bytes[20..].to_vec();
    let rates = 4 * asset.clips.len();
    for (i, c) in asset.clips.iter().enumerate() {
        let at = payload.len() - rates + 4 * i;
        let stored = f32::from_le_bytes(payload[at..at + 4].try_into().unwrap());
        match c.frame_rate() {
            Some(r) => assert_eq!(stored, r),
            None => assert!(stored.is_nan()),
        }
    }
    payload.truncate(payload.len() - rates);
    payload
}

/// `.skl` bytes around `payload`: magic, `version`, length and checksum.
fn seal(version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(native::MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Version 5 keeps each clip's frame rate (BVH's 120 fps here); a version 4 file (the same
/// payload without the rates) still loads, with the clips equal and no rate.
#[test]
fn frame_rates_round_trip_and_version_4_files_still_load() {
    let a = skelett_io::load(common::data("bvh/01_01.bvh")).unwrap();
    assert_eq!(a.clips[0].frame_rate(), Some(120.0));
    let back = native::from_bytes(&native::to_bytes(&a), Path::new("a.skl")).unwrap();
    assert_eq!(back.clips[0].frame_rate(), Some(120.0));
    let v4 = seal(4, &payload_before_frame_rates(&a));
    let old = native::from_bytes(&v4, Path::new("v4.skl")).unwrap();
    assert_eq!(old.clips, a.clips);
    assert_eq!(old.clips[0].frame_rate(), None);
    // The same bytes read as version 5 are refused, not misread.
    assert!(native::from_bytes(
        &seal(5, &payload_before_frame_rates(&a)),
        Path::new("v4.skl")
    )
    .is_err());
}

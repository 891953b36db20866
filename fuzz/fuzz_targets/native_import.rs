//! Fuzzes `.skl` loading behind the checksum: the input's header is re-sealed with the
//! payload's real length and CRC-32 so that mutations reach the parser, which must refuse
//! them (or load a valid asset) without panicking or allocating what counts claim.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = data.to_vec();
    if b.len() >= 20 {
        let payload_len = (b.len() - 20) as u64;
        b[8..16].copy_from_slice(&payload_len.to_le_bytes());
        let crc = crc32fast::hash(&b[20..]);
        b[16..20].copy_from_slice(&crc.to_le_bytes());
    }
    if let Ok(asset) = skelett_io::native::load_bytes(&b, Path::new("fuzz.skl")) {
        let mut pose = skelett::Pose::rest(&asset.skeleton);
        for clip in &asset.clips {
            skelett::sample_uncached(clip, clip.start() + clip.duration() * 0.5, &mut pose)
                .unwrap();
        }
    }
});

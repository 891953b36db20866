//! Fuzzes binary .x token streams: the input after a `bin ` header (its first byte picks
//! 0032 or 0064 floats), both handednesses, then samples what loaded.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use skelett_io::x::{from_bytes_with, Options};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let header: &[u8] = if first & 1 == 0 { b"xof 0303bin 0032" } else { b"xof 0303bin 0064" };
    let bytes = [header, rest].concat();
    for right_handed in [false, true] {
        let options = Options { right_handed, animation_options: right_handed };
        let Ok(asset) = from_bytes_with(&bytes, Path::new("fuzz.x"), &options) else {
            continue;
        };
        let mut pose = skelett::Pose::rest(&asset.skeleton);
        for clip in &asset.clips {
            skelett::sample_uncached(clip, clip.start() + clip.duration() * 0.5, &mut pose)
                .unwrap();
        }
    }
});

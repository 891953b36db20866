//! Fuzzes DirectX .x import (any form the header names: the corpus is text), both
//! handednesses, then samples what loaded.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use skelett_io::x::{from_bytes_with, Options};

fuzz_target!(|data: &[u8]| {
    for right_handed in [false, true] {
        let Ok(asset) = from_bytes_with(data, Path::new("fuzz.x"), &Options { right_handed, animation_options: right_handed }) else {
            continue;
        };
        let mut pose = skelett::Pose::rest(&asset.skeleton);
        for clip in &asset.clips {
            skelett::sample_uncached(clip, clip.start() + clip.duration() * 0.5, &mut pose)
                .unwrap();
        }
    }
});

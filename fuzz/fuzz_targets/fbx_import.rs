//! Fuzzes FBX import (ufbx, then what skelett builds from its scene), with and without unit
//! and axis conversion, then samples its clips and prepares its meshes for skinning. ufbx
//! is C and is not instrumented for coverage: the fuzzer's guidance comes from skelett's
//! side, but any abort or runaway allocation inside ufbx is still caught.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use skelett_io::fbx::{from_bytes_with, Options};

fuzz_target!(|data: &[u8]| {
    for convert in [false, true] {
        let opts = Options {
            to_meters: convert,
            y_up: convert,
        };
        let Ok(asset) = from_bytes_with(data, Path::new("fuzz.fbx"), &opts) else {
            continue;
        };
        let mut pose = skelett::Pose::rest(&asset.skeleton);
        for clip in &asset.clips {
            skelett::sample_uncached(clip, clip.start() + clip.duration() * 0.5, &mut pose)
                .unwrap();
        }
        for m in &asset.meshes {
            for p in &m.primitives {
                skelett::SkinningMesh::new(p, asset.skins[m.skin].len()).unwrap();
            }
        }
    }
});

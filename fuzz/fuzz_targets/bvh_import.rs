//! Fuzzes BVH import, then samples what loaded. Errors are expected; panics, hangs and
//! runaway allocations are bugs.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use skelett::{local_to_model, sample, Pose, SamplingCache};

fuzz_target!(|data: &[u8]| {
    let Ok(asset) = skelett_io::bvh::from_bytes(data, Path::new("fuzz.bvh")) else {
        return;
    };
    let mut pose = Pose::rest(&asset.skeleton);
    let mut model = vec![glam::Mat4::IDENTITY; asset.skeleton.len()];
    for clip in &asset.clips {
        let mut cache = SamplingCache::for_clip(clip);
        for t in [
            -1.0,
            0.0,
            clip.duration() * 0.5,
            clip.end(),
            clip.end() + 1.0,
        ] {
            sample(clip, t, &mut cache, &mut pose).unwrap();
            local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
        }
    }
});

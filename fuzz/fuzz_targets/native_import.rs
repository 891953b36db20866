//! Fuzzes `.skl` loading behind the checksum: the input's header is re-sealed with the
//! payload's real length and CRC-32 so that mutations reach the parser, which must refuse
//! them (or load a valid asset) without panicking or allocating what counts claim; whatever
//! loads is sampled, with and without a cache and one joint alone (compact clips' decoders,
//! every layout, included).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

#[path = "common/reseal.rs"]
mod reseal;

fuzz_target!(|data: &[u8]| {
    let b = reseal::reseal(data);
    if let Ok(asset) = skelett_io::native::from_bytes(&b, Path::new("fuzz.skl")) {
        let mut pose = skelett::Pose::rest(&asset.skeleton);
        for clip in &asset.clips {
            skelett::sample_uncached(clip, clip.start() + clip.duration() * 0.5, &mut pose)
                .unwrap();
            // One joint alone (the seekable layout's one-lane path).
            if !pose.is_empty() {
                let last = (pose.len() - 1) as skelett::JointIndex;
                skelett::sample_joint(clip, last, clip.start() + clip.duration() * 0.3);
            }
            // Forward through a cache, then back (compact clips: the cursors' paths).
            let mut cache = skelett::SamplingCache::for_clip(clip);
            for k in [0.0, 0.2, 0.45, 0.7, 1.0, 1.2, 0.1] {
                let t = clip.start() + clip.duration() * k;
                skelett::sample(clip, t, &mut cache, &mut pose).unwrap();
            }
        }
    }
});

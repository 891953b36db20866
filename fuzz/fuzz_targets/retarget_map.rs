//! Fuzzes the joint map reader (`skelett_io::retarget_map::from_str`), then resolves what
//! it read against a real pair of skeletons (the CMU capture and robot_quaternius from
//! `../shared/data`, loaded once) and retargets one pose through it. Errors are expected;
//! panics, hangs and runaway allocations are bugs.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use skelett::retarget::{Options, Retargeter};
use std::sync::Arc;

use skelett::Skeleton;

fn skeletons() -> &'static (Arc<Skeleton>, Arc<Skeleton>) {
    static PAIR: OnceLock<(Arc<Skeleton>, Arc<Skeleton>)> = OnceLock::new();
    PAIR.get_or_init(|| {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
        let load = |f: &str| {
            skelett_io::load(data.join(f))
                .unwrap_or_else(|e| panic!("{f}: {e}"))
                .skeleton
        };
        (load("bvh/01_01.bvh"), load("gltf/robot_quaternius.glb"))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(map) = skelett_io::retarget_map::from_str(text, Path::new("fuzz.json")) else {
        return;
    };
    let (source, target) = skeletons();
    let Ok(r) = Retargeter::new(source, target, &map, &Options::default()) else {
        return;
    };
    let mut out = target.rest_pose().to_vec();
    r.retarget(source.rest_pose(), &mut out, &mut r.scratch())
        .unwrap();
    assert!(out.iter().all(|t| t.is_finite()));
});

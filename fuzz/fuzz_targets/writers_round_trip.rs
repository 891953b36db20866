//! Fuzzes every writer: whatever `.skl` loads (the format that reaches every part of an asset:
//! clips keyed and compact, meshes, morph targets, events) is written as `.skl`, `.glb` and
//! RAM + RAA, and each output must load again. A writer that emits what a reader refuses
//! panics here (issue 21: "skelett's own outputs always load again"). The input's header is
//! re-sealed with the payload's real length and CRC-32, as in `native_import`.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

#[path = "common/reseal.rs"]
mod reseal;

fuzz_target!(|data: &[u8]| {
    let b = reseal::reseal(data);
    let Ok(asset) = skelett_io::native::from_bytes(&b, Path::new("fuzz.skl")) else {
        return;
    };
    let skl = skelett_io::native::to_bytes(&asset);
    if let Err(e) = skelett_io::native::from_bytes(&skl, Path::new("out.skl")) {
        panic!(".skl written and refused: {e}");
    }
    let glb = skelett_io::gltf::to_bytes(&asset);
    if let Err(e) = skelett_io::gltf::from_bytes(&glb, Path::new("out.glb")) {
        panic!(".glb written and refused: {e}");
    }
    let ram = skelett_io::rite::to_string(&asset);
    // The RAA budget save applies (a few MB here, to keep executions fast).
    let small = skelett_io::rite::raa_key_count(&asset, 0, skelett_io::rite::DEFAULT_FPS)
        .is_some_and(|k| k <= 200_000);
    let raa = small
        .then(|| skelett_io::rite::animation_to_string(&asset, 0, skelett_io::rite::DEFAULT_FPS))
        .flatten();
    let loaded = skelett_io::rite::from_str(
        &ram,
        Path::new("out.ram"),
        raa.as_deref().map(|r| (r, Path::new("out.raa"))),
    );
    if let Err(e) = loaded {
        panic!(".ram/.raa written and refused: {e}");
    }
});

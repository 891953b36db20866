//! Fuzzes the whole glTF path: container, JSON, accessors, skeleton, clips, meshes, and then
//! sampling (joints and morph weights), local-to-model, and morph then skin of whatever
//! loaded. (Writer round trips are not fuzzed here: issue 21 covers them, since a mutated
//! rotation key of zero length is exported as read and refused on reading, a known gap.) Any panic, hang or runaway allocation is a
//! bug; errors are the expected outcome for most inputs.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use skelett::{local_to_model, sample, Pose, SamplingCache};

fuzz_target!(|data: &[u8]| {
    let Ok(asset) = skelett_io::gltf::from_bytes(data, Path::new("fuzz.glb")) else {
        return;
    };
    let mut pose = Pose::rest(&asset.skeleton);
    let mut weights = asset.skeleton.morph_rest().to_vec();
    let mut model = vec![glam::Mat4::IDENTITY; asset.skeleton.len()];
    for clip in &asset.clips {
        let mut cache = SamplingCache::for_clip(clip);
        for t in [
            clip.start() - 1.0,
            clip.start(),
            clip.start() + clip.duration() * 0.5,
            clip.end(),
            clip.end() + 1.0,
        ] {
            sample(clip, t, &mut cache, &mut pose).unwrap();
            skelett::sample_morph_weights(clip, t, &mut weights).unwrap();
            local_to_model(&asset.skeleton, &pose, 0, &mut model).unwrap();
        }
    }
    for (mesh, skin) in asset.meshes.iter().map(|m| (m, &asset.skins[m.skin])) {
        let mut palette = vec![glam::Mat4::IDENTITY; skin.len()];
        skelett::skinning_palette(skin, &model, &mut palette).unwrap();
        assert!(mesh.validate(skin).is_ok());
        let mut palette = skelett::SkinPalette::new(skelett::SkinningMethod::Linear);
        palette.update(skin, &model).unwrap();
        for p in &mesh.primitives {
            let mut cpu = skelett::SkinningMesh::new(p, skin.len()).unwrap();
            cpu.set_morph_channels(&mesh.morph_channels).unwrap();
            let mut morphed = skelett::morph::Morphed::new(&cpu);
            skelett::morph::morph(&cpu, &weights, &mut morphed).unwrap();
            let mut out = vec![glam::Vec3::ZERO; cpu.vertex_count()];
            skelett::morph::skin_morphed(
                &cpu,
                &palette,
                &morphed,
                skelett::SkinOutput {
                    positions: &mut out,
                    normals: None,
                    tangents: None,
                },
            )
            .unwrap();
        }
    }
});

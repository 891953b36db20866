//! Fuzzes the animation graph reader (`skelett_io::graph_file::from_str`), builds what it
//! read against robot_quaternius from `../shared/data` (loaded once) and plays it: every
//! parameter set from the input's bytes, 40 updates with triggers fired along the way.
//! Errors are expected; panics, hangs, runaway allocations and non-finite poses are bugs.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use skelett::graph::{Graph, GraphInstance, ParameterId, ParameterKind};
use skelett_io::Asset;

fn robot() -> &'static Asset {
    static ROBOT: OnceLock<Asset> = OnceLock::new();
    ROBOT.get_or_init(|| {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
        skelett_io::load(data.join("gltf/robot_quaternius.glb")).expect("robot_quaternius.glb")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(def) = skelett_io::graph_file::from_str(text, Path::new("fuzz.json")) else {
        return;
    };
    let asset = robot();
    let Ok(graph) = Graph::build(&def, asset.skeleton.clone(), &asset.clips) else {
        return;
    };
    let graph = Arc::new(graph);
    let mut ch = GraphInstance::new(graph.clone());
    let bytes = data.iter().copied().cycle();
    for (step, b) in (0..40).zip(bytes) {
        for (i, p) in graph.parameters().iter().enumerate() {
            let id = ParameterId(i as u32);
            let v = (b.wrapping_add(i as u8).wrapping_mul(step as u8 | 1)) as f32 / 32.0 - 4.0;
            let _ = match p.kind {
                ParameterKind::Float => ch.set_float(id, v),
                ParameterKind::Int => ch.set_int(id, v as i32),
                ParameterKind::Bool => ch.set_bool(id, v > 0.0),
                ParameterKind::Trigger if step % 7 == (i % 7) => ch.set_trigger(id),
                ParameterKind::Trigger => Ok(()),
            };
        }
        ch.update(1.0 / 30.0);
        assert!(ch.pose().iter().all(|t| t.is_finite()), "non-finite pose");
    }
});

//! The per-frame path allocates nothing: a counting global allocator watches sampling,
//! the hierarchy, the palette, animator updates (cross-fades, sync, events, additive
//! layers, root motion, IK modifiers: foot placement, aim, chains), CPU skinning (linear and
//! dual quaternion) and animation graph updates (transitions, blend trees, both layers)
//! once they are set up; crowds' prefetching (`Animator::prefetch`, `crowd::prefetch`) too.

use skelett_testdata::data;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;

use glam::Mat4;
use skelett::animator::{Animator, BlendMode, Curve, EventPolicy, PlayOptions, RootMotionConfig};
use skelett::*;

struct Counting;

thread_local! {
    /// Only the thread under test counts: libtest's main thread prints and formats (and so
    /// allocates) concurrently, more visibly on a loaded machine, and the tests run on
    /// threads of their own at the same time.
    static COUNTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// This thread's allocations while counted.
    static ALLOCATED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn count() {
    // `try_with`: during thread teardown the key may be gone; such allocations are not ours.
    if COUNTED.try_with(|c| c.get()).unwrap_or(false) {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + 1));
    }
}

/// Allocations this thread made while counted.
fn allocations() -> usize {
    ALLOCATED.with(|a| a.get())
}

// SAFETY: forwards every call to the system allocator unchanged; it only counts (a
// const-initialised thread-local `Cell<bool>` read, which never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn per_frame_path_does_not_allocate() {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let sk = fox.skeleton.clone();
    let walk = Arc::new(
        (**fox.clip("Walk").unwrap())
            .clone()
            .with_events(vec![ClipEvent {
                time: 0.1,
                name: "step".into(),
                payload: None,
            }])
            .unwrap(),
    );
    let run = fox.clip("Run").unwrap().clone();
    let survey = Arc::new(fox.clip("Survey").unwrap().to_additive_from_first_frame());
    let skin = fox.skins[0].clone();
    let mut anim = Animator::new(sk.clone());
    anim.set_event_policy(EventPolicy {
        min_weight: 0.0,
        sync_leader_only: false,
    });
    anim.set_root_motion(Some(RootMotionConfig {
        joint: 1,
        ..Default::default()
    }))
    .unwrap();
    let sync = PlayOptions {
        sync_group: Some(1),
        ..Default::default()
    };
    anim.play(0, walk.clone(), sync).unwrap();
    anim.crossfade(0, run.clone(), 1000.0, Curve::SmoothStep, sync)
        .unwrap();
    let add = anim
        .add_layer(
            BlendMode::Additive,
            0.5,
            Some(JointMask::subtree(&sk, "b_Neck_04").unwrap()),
        )
        .unwrap();
    anim.play(add, survey, PlayOptions::default()).unwrap();
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let mut palette = vec![Mat4::IDENTITY; skin.len()];
    let mut pose = Pose::rest(&sk);
    let mut cache = SamplingCache::for_clip(&run);
    let prim = &fox.meshes[0].primitives[0];
    let mesh = SkinningMesh::new(prim, skin.len()).unwrap();
    let mut skin_palettes = [
        SkinPalette::new(SkinningMethod::Linear),
        SkinPalette::new(SkinningMethod::DualQuaternion),
    ];
    let mut positions = vec![glam::Vec3::ZERO; mesh.vertex_count()];
    let mut normals = positions.clone();
    let skin_all = |palettes: &mut [SkinPalette; 2],
                    model: &[Mat4],
                    positions: &mut [glam::Vec3],
                    normals: &mut [glam::Vec3]| {
        for p in palettes.iter_mut() {
            p.update(&skin, model).unwrap();
            skelett::skin(
                &mesh,
                p,
                SkinOutput {
                    positions: &mut *positions,
                    normals: Some(&mut *normals),
                    tangents: None,
                },
            )
            .unwrap();
        }
    };
    skin_all(&mut skin_palettes, &model, &mut positions, &mut normals);
    // Pose modifiers: the Fox's four paws on a slope (contacts from the walk), its head
    // looking at a point, its tail reaching, the tail fading in while the update runs.
    use skelett::animator::{ChainSolver, Modifier};
    use skelett::ik::*;
    let leg = |names: [&str; 3]| {
        let chain = TwoBoneChain::by_name(&sk, names).unwrap();
        Leg::from_rest(&sk, chain, chain.joints()[2], glam::Vec3::Y).unwrap()
    };
    let feet = Feet::new(
        &sk,
        vec![
            leg(["b_LeftLeg01_015", "b_LeftLeg02_016", "b_LeftFoot01_017"]),
            leg(["b_RightLeg01_019", "b_RightLeg02_020", "b_RightFoot01_021"]),
            leg(["b_LeftUpperArm_09", "b_LeftForeArm_010", "b_LeftHand_011"]),
            leg(["b_RightUpperArm_06", "b_RightForeArm_07", "b_RightHand_08"]),
        ],
        sk.find("b_Hip_01"),
        glam::Vec3::Y,
    )
    .unwrap();
    let contacts = feet.contacts(&sk, &walk);
    let slope = Arc::new(Plane::slope(15.0));
    anim.add_modifier(
        Modifier::feet(feet, Placement::new(Mat4::IDENTITY, 30.0), slope)
            .with_contacts(walk.clone(), contacts),
        1.0,
    )
    .unwrap();
    let head = sk.find("b_Head_05").unwrap();
    anim.add_modifier(
        Modifier::Aim {
            chain: vec![sk.find("b_Neck_04").unwrap(), head],
            weights: vec![0.4, 1.0],
            aim: Aim::new(glam::Vec3::new(40.0, 60.0, 80.0), glam::Vec3::Z),
        },
        1.0,
    )
    .unwrap();
    let tail = Chain::by_name(&sk, &["b_Tail01_012", "b_Tail02_013", "b_Tail03_014"]).unwrap();
    let reach_tail = anim
        .add_modifier(
            Modifier::Chain {
                chain: tail,
                reach: Reach::new(glam::Vec3::new(10.0, 50.0, -60.0)),
                solver: ChainSolver::Fabrik,
            },
            0.0,
        )
        .unwrap();
    anim.fade_modifier(reach_tail, 1.0, 2.0).unwrap();
    // Warm up: the first updates may size reusable buffers.
    for _ in 0..10 {
        anim.update(1.0 / 60.0);
    }
    COUNTED.with(|c| c.set(true));
    let before = allocations();
    let mut events = 0;
    for i in 0..600 {
        // A crowd's prefetch (the update then notes its blocks, from the first frame on).
        anim.prefetch();
        crowd::prefetch(&model);
        events += anim.update(1.0 / 60.0).events.len();
        anim.set_modifier_target(
            reach_tail,
            glam::Vec3::new(10.0, 50.0 + i as f32 * 0.01, -60.0),
        )
        .unwrap();
        local_to_model(&sk, anim.pose(), 0, &mut model).unwrap();
        skinning_palette(&skin, &model, &mut palette).unwrap();
        sample(&run, i as f32 * 0.013, &mut cache, &mut pose).unwrap();
        skin_all(&mut skin_palettes, &model, &mut positions, &mut normals);
    }
    let after = allocations();
    COUNTED.with(|c| c.set(false));
    assert!(events > 10, "events fired: {events}");
    for m in 0..anim.modifier_count() {
        let (weight, error) = anim.modifier_state(m).unwrap();
        assert_eq!(weight, 1.0, "modifier {m} faded in");
        assert!(error.is_none(), "modifier {m}: {error:?}");
    }
    assert_eq!(after - before, 0, "allocations in 600 frames");
}

/// The animator's pose in blocks (`Animator::local_to_model`, `pose_soa`): updates in
/// blocks, rows asked for now and then (written from the blocks, then made by the update
/// after), cross-fades and inertial switches in between (started outside the count), and
/// the palette from the animator (`Animator::skinning_palette`). A full animator, and a
/// lean one (`Animator::new_lean`) once a first cycle has made its buffers.
#[test]
fn pose_in_blocks_does_not_allocate() {
    for lean in [false, true] {
        pose_in_blocks(lean);
    }
}

fn pose_in_blocks(lean: bool) {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let sk = fox.skeleton.clone();
    let (walk, run) = (fox.clip("Walk").unwrap(), fox.clip("Run").unwrap());
    let skin = fox.skins[0].clone();
    let mut palette = vec![Mat4::IDENTITY; skin.len()];
    let mut anim = if lean {
        Animator::new_lean(sk.clone())
    } else {
        Animator::new(sk.clone())
    };
    anim.play(0, walk.clone(), PlayOptions::default()).unwrap();
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    // Starting clips allocates (their sampling caches): only the frames are counted.
    let mut frame = |anim: &mut Animator, i: usize| {
        let counted = COUNTED.with(|c| c.replace(false));
        match i % 200 {
            40 => anim
                .crossfade(
                    0,
                    run.clone(),
                    0.5,
                    Curve::SmoothStep,
                    PlayOptions::default(),
                )
                .unwrap(),
            120 => anim
                .inertialize(0, walk.clone(), 0.3, PlayOptions::default())
                .unwrap(),
            _ => {}
        }
        COUNTED.with(|c| c.set(counted));
        anim.prefetch();
        anim.update(1.0 / 60.0);
        anim.local_to_model(&mut model).unwrap();
        anim.skinning_palette(&skin, &mut palette).unwrap();
        if i % 50 == 7 {
            std::hint::black_box(anim.pose());
        }
        anim.pose_soa().is_some()
    };
    // Blocks where the CPU samples into blocks (AVX, not the `scalar` build). Warm-up: one
    // whole cycle (the first cross-fade and inertial switch size reusable buffers).
    let possible = frame(&mut anim, 0);
    for i in 1..200 {
        frame(&mut anim, i);
    }
    COUNTED.with(|c| c.set(true));
    let before = allocations();
    let in_blocks = (0..600).filter(|&i| frame(&mut anim, i)).count();
    let after = allocations();
    COUNTED.with(|c| c.set(false));
    assert_eq!(
        after - before,
        0,
        "allocations in 600 frames (lean: {lean})"
    );
    if possible {
        assert!(in_blocks > 400, "{in_blocks} frames in blocks");
    } else {
        assert_eq!(in_blocks, 0);
    }
}

#[test]
fn graph_updates_do_not_allocate() {
    use skelett::graph::{Graph, GraphInstance};
    let robot = skelett_io::load(data("gltf/robot_quaternius.glb")).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/robot_quaternius.graph.json");
    let def = skelett_io::graph_file::load(path).unwrap();
    let g = Arc::new(Graph::build(&def, robot.skeleton.clone(), &robot.clips).unwrap());
    let mut ch = GraphInstance::new(g.clone());
    let [speed, jump, punch, wave] =
        ["speed", "jump", "punch", "wave"].map(|n| g.parameter(n).unwrap());
    // Every state and transition, blend-space parameters moving, triggers on both layers.
    let drive = |ch: &mut GraphInstance, frames: usize| {
        let mut taken = 0;
        for i in 0..frames {
            let t = i as f32 / 60.0;
            let s = if (t % 8.0) < 1.0 {
                0.0
            } else {
                1.0 + (t * 0.7).sin().abs() * 2.0
            };
            ch.set_float(speed, s).unwrap();
            if i % 170 == 60 {
                ch.set_trigger(jump).unwrap();
            }
            if i % 130 == 20 {
                ch.set_trigger(punch).unwrap();
            }
            if i % 310 == 200 {
                ch.set_trigger(wave).unwrap();
            }
            ch.prefetch();
            taken += ch.update(1.0 / 60.0).transitions.len();
        }
        taken
    };
    // Set-up: the first passes build a second source for states re-entered while their
    // last run still fades out (once each; `sources_built` counts them).
    drive(&mut ch, 1200);
    drive(&mut ch, 1200);
    let built = ch.sources_built();
    COUNTED.with(|c| c.set(true));
    let before = allocations();
    let taken = drive(&mut ch, 1200);
    let after = allocations();
    COUNTED.with(|c| c.set(false));
    assert_eq!(
        ch.sources_built(),
        built,
        "sources built in the second pass"
    );
    assert!(taken > 20, "transitions taken: {taken}");
    assert_eq!(after - before, 0, "allocations in 1200 graph updates");
}

#[test]
fn morph_weights_and_morph_skinning_do_not_allocate() {
    use skelett::morph::{morph, skin_morphed, Morphed};
    use skelett::skin::{SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
    let asset = skelett_io::load(data("morph/MorphStressTest.glb")).unwrap();
    let sk = asset.skeleton.clone();
    let mesh = &asset.meshes[0];
    let skin = &asset.skins[mesh.skin];
    let prim = &mesh.primitives[1];
    let mut cpu = SkinningMesh::new(prim, skin.len()).unwrap();
    cpu.bind_morph(&mesh.morph_channels, &mesh.morph_full_weights)
        .unwrap();
    let mut morphed = Morphed::new(&cpu);
    let mut anim = Animator::new(sk.clone());
    anim.play(0, asset.clips[0].clone(), PlayOptions::default())
        .unwrap();
    anim.crossfade(
        0,
        asset.clips[1].clone(),
        1000.0,
        Curve::Linear,
        PlayOptions::default(),
    )
    .unwrap();
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    let mut palette = SkinPalette::new(SkinningMethod::Linear);
    let n = cpu.vertex_count();
    let mut positions = vec![glam::Vec3::ZERO; n];
    let mut normals = vec![glam::Vec3::ZERO; n];
    let (mut active, mut before) = (0, 0);
    // The first frames may size reusable buffers (the palette's).
    for frame in 0..310 {
        if frame == 10 {
            COUNTED.with(|c| c.set(true));
            before = allocations();
            active = 0;
        }
        anim.update(1.0 / 60.0);
        local_to_model(&sk, anim.pose(), 0, &mut model).unwrap();
        palette.update(skin, &model).unwrap();
        morph(&cpu, anim.morph_weights(), &mut morphed).unwrap();
        active += morphed.active_targets();
        skin_morphed(
            &cpu,
            &palette,
            &morphed,
            SkinOutput {
                positions: &mut positions,
                normals: Some(&mut normals),
                tangents: None,
            },
        )
        .unwrap();
    }
    let after = allocations();
    COUNTED.with(|c| c.set(false));
    assert!(active > 300, "targets were active: {active}");
    assert_eq!(after - before, 0, "allocations in 300 frames");
}

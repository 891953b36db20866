//! One character update, end to end (criterion): the animator cross-fading two synchronised
//! clips, then local-to-model and the skinning palette — the workload of
//! `../shared/bench/ozz`'s harness. ozz-animation 0.16 measured with it on this machine
//! (2026-11-26, ten runs over two sessions): 1.01-1.09 µs per robot_quaternius character
//! (58 joints in ozz's conversion), 0.58-0.62 per Fox and 0.49-0.52 per CesiumMan updated
//! over and over; 1.8-2.8, 0.65-1.5 and 0.54-1.3 µs when 1024 different characters are
//! (ozz's crowd runs vary that much). On a noisier 2-core Intel Xeon (2026-11-27, eight runs
//! in four `compare.sh`): 1.61-4.96, 1.04-1.78 and 0.82-1.65 µs for one character, 2.35-4.38,
//! 1.16-2.01 and 1.01-1.75 for the crowds. CesiumMan has one clip: it cross-fades into itself
//! (two players, both sampled and blended).
//!
//! - `one`: the same character again and again (its data stays in the caches), its model
//!   matrices from `Animator::local_to_model` (the pose left in blocks, no rows made);
//! - `one_rows`: the same through `Animator::pose` and `local_to_model` (the animator then
//!   makes rows: the way before 2026-11-29; 6 % more instructions per update here, callgrind);
//! - `crowd_1024`: 1024 characters sharing the clips, with their own animators and buffers
//!   (about 20-25 KB each: far more than the caches hold), each updated once per iteration
//!   (throughput is per character: 1/thrpt is the per-character cost);
//! - `crowd_1024_rayon`: the same crowd split across the machine's cores with rayon;
//! - `crowd_1024_prefetch`, `crowd_1024_rayon_prefetch`: both again, each character's
//!   animator and buffers prefetched while the one before it is updated
//!   (`crowd::for_each_prefetched`, `Animator::prefetch`; on rayon, within chunks of 64);
//! - `crowd_1024_palette_prefetch`: the prefetched crowd writing its palettes alone
//!   (`Animator::skinning_palette`: the model matrices in the thread's buffer, not each
//!   character's);
//! - `crowd_1024_lean_prefetch`, `crowd_1024_lean_palette_prefetch`,
//!   `crowd_1024_rayon_lean_palette_prefetch`: a crowd of lean animators
//!   (`Animator::new_lean`: no buffers for paths in rows until one is needed), prefetched,
//!   with model matrices, and writing palettes alone (also on rayon);
//! - `one_blend_space`, `one_blend_tree`: the two clips as a 1D blend space, and as a blend
//!   tree's 1D space, at 40 % of the way from the first to the second (both sampled and
//!   mixed every update, in blocks since 2026-11-29: 17-27 % fewer instructions per update
//!   than the rows' mix before, callgrind);
//! - `stateless_one`, `stateless_crowd_1024`, `stateless_crowd_1024_prefetch`,
//!   `stateless_crowd_1024_rayon_prefetch`: the same two clips through the stateless calls
//!   alone, the shape of ozz's harness (`sample_soa` into a cache each, `blend_soa` half
//!   and half, `local_to_model_soa`, `skinning_palette`; no animator, so nothing fades,
//!   syncs or fires events): one character, and 1024 in turn, prefetched, and prefetched on
//!   rayon;
//! - `graph_robot/one`, `graph_robot/crowd_1024`: robot_quaternius driven by the example
//!   graph (`examples/robot_quaternius.graph.json`) at speed 2: its walk-run blend tree.

use skelett_testdata::data;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use glam::Mat4;
use rayon::prelude::*;
use skelett::animator::{
    Animator, BlendSpace1D, BlendTree, Curve, PlayOptions, Transition, TreeNode, TreeShape,
};
use skelett::graph::{Graph, GraphInstance};
use skelett::{crowd, local_to_model, skinning_palette, Skeleton, Skin, SoaPose};

// The stateless character, shared with `skelett-io`'s `cost_probe` example.
#[path = "support/stateless.rs"]
mod stateless;
use stateless::{Shared, Stateless};

struct Character {
    animator: Animator,
    model: Vec<Mat4>,
    palette: Vec<Mat4>,
}

impl Character {
    /// The animator's model matrices (from its pose in blocks where it leaves it there).
    fn update(&mut self, skin: &Skin, dt: f32) {
        self.animator.update(dt);
        self.animator.local_to_model(&mut self.model).unwrap();
        skinning_palette(skin, &self.model, &mut self.palette).unwrap();
    }

    /// The same through the pose as rows ([`Animator::pose`], then [`local_to_model`]):
    /// the animator then makes rows.
    fn update_rows(&mut self, skeleton: &Skeleton, skin: &Skin, dt: f32) {
        self.animator.update(dt);
        local_to_model(skeleton, self.animator.pose(), 0, &mut self.model).unwrap();
        skinning_palette(skin, &self.model, &mut self.palette).unwrap();
    }

    /// What the next update reads and writes, on its way into the caches.
    fn prefetch(&self) {
        self.animator.prefetch();
        crowd::prefetch(&self.model);
        crowd::prefetch(&self.palette);
    }

    /// The palette alone ([`Animator::skinning_palette`]: the model matrices in the
    /// thread's buffer, not the character's).
    fn update_palette(&mut self, skin: &Skin, dt: f32) {
        self.animator.update(dt);
        self.animator
            .skinning_palette(skin, &mut self.palette)
            .unwrap();
    }

    /// [`Character::prefetch`] for [`Character::update_palette`], which writes no model
    /// matrices of the character's.
    fn prefetch_palette(&self) {
        self.animator.prefetch();
        crowd::prefetch(&self.palette);
    }
}

/// A character playing `a` cross-fading to `b`, sharing the asset's skeleton and clips (as
/// every character of a game does), with its own animator and buffers.
fn character(
    asset: &skelett_io::Asset,
    a: &str,
    b: &str,
    phase: f32,
) -> (Character, Arc<Skeleton>, Skin) {
    character_with(asset, a, b, phase, false)
}

/// [`character`], with `lean` on an [`Animator::new_lean`].
fn character_with(
    asset: &skelett_io::Asset,
    a: &str,
    b: &str,
    phase: f32,
    lean: bool,
) -> (Character, Arc<Skeleton>, Skin) {
    let (ca, cb) = (
        asset.clip(a).unwrap().clone(),
        asset.clip(b).unwrap().clone(),
    );
    let mut animator = if lean {
        Animator::new_lean(asset.skeleton.clone())
    } else {
        Animator::new(asset.skeleton.clone())
    };
    let sync = PlayOptions {
        sync_group: Some(0),
        start: phase,
        ..Default::default()
    };
    animator.play(0, ca, sync).unwrap();
    // A transition that stays in progress for the whole benchmark: both clips sampled,
    // weights fading, synchronised.
    animator
        .crossfade(0, cb, 1.0e6, Curve::SmoothStep, sync)
        .unwrap();
    animator.update(0.5);
    let n = asset.skeleton.len();
    let skin = asset.skins[0].clone();
    let c = Character {
        animator,
        model: vec![Mat4::IDENTITY; n],
        palette: vec![Mat4::IDENTITY; skin.len()],
    };
    (c, asset.skeleton.clone(), skin)
}

/// A character playing `a` and `b` mixed 60:40, as a blend space (`tree`: false) or as a
/// blend tree's 1D space.
fn blended(asset: &skelett_io::Asset, a: &str, b: &str, tree: bool) -> Character {
    let (ca, cb) = (
        asset.clip(a).unwrap().clone(),
        asset.clip(b).unwrap().clone(),
    );
    let mut animator = Animator::new(asset.skeleton.clone());
    if tree {
        let shape = TreeShape::new(
            vec![
                TreeNode::Clip(ca),
                TreeNode::Clip(cb),
                TreeNode::Space1D {
                    parameter: 0,
                    children: vec![(0.0, 0), (1.0, 1)],
                },
            ],
            1,
        )
        .unwrap();
        let mut t = BlendTree::new(Arc::new(shape));
        t.set_parameter(0, 0.4);
        let po = PlayOptions::default();
        animator.play_tree(0, t, Transition::Immediate, po).unwrap();
    } else {
        let space = BlendSpace1D::new(vec![(0.0, ca), (1.0, cb)]);
        animator
            .play_blend_space(0, space, Transition::Immediate)
            .unwrap();
        animator.set_parameter(0, 0.4).unwrap();
    }
    animator.update(0.5);
    let n = asset.skeleton.len();
    Character {
        animator,
        model: vec![Mat4::IDENTITY; n],
        palette: vec![Mat4::IDENTITY; asset.skins[0].len()],
    }
}

/// A robot driven by the example graph at speed 2 (walking into running), `phase` seconds
/// in.
struct GraphCharacter {
    graph: GraphInstance,
    model: Vec<Mat4>,
    palette: Vec<Mat4>,
}

impl GraphCharacter {
    fn new(graph: &Arc<Graph>, skin: &Skin, phase: f32) -> Self {
        let mut ch = GraphInstance::new(graph.clone());
        let speed = graph.parameter("speed").unwrap();
        ch.set_float(speed, 2.0).unwrap();
        // Through the transition from standing into the blend tree.
        ch.update(1.0 + phase);
        let n = graph.skeleton().len();
        GraphCharacter {
            graph: ch,
            model: vec![Mat4::IDENTITY; n],
            palette: vec![Mat4::IDENTITY; skin.len()],
        }
    }

    fn update(&mut self, skin: &Skin, dt: f32) {
        self.graph.update(dt);
        self.graph.local_to_model(&mut self.model).unwrap();
        skinning_palette(skin, &self.model, &mut self.palette).unwrap();
    }
}

fn bench(c: &mut Criterion) {
    for (label, file, a, b) in [
        (
            "robot",
            "gltf/robot_quaternius.glb",
            "Robot_Walking",
            "Robot_Running",
        ),
        ("fox", "gltf/Fox.glb", "Walk", "Run"),
        ("cesium_man", "gltf/CesiumMan.glb", "0", "0"),
    ] {
        let mut group = c.benchmark_group(format!("character_{label}"));
        let asset = skelett_io::load(data(file)).expect("shared data beside the repository");
        let (mut one, skeleton, skin) = character(&asset, a, b, 0.0);
        group.throughput(Throughput::Elements(1));
        group.bench_function("one", |bch| {
            bch.iter(|| one.update(&skin, black_box(1.0 / 60.0)))
        });
        let (mut one_rows, ..) = character(&asset, a, b, 0.0);
        group.bench_function("one_rows", |bch| {
            bch.iter(|| one_rows.update_rows(&skeleton, &skin, black_box(1.0 / 60.0)))
        });
        for (name, tree) in [("one_blend_space", false), ("one_blend_tree", true)] {
            let mut one = blended(&asset, a, b, tree);
            group.bench_function(name, |bch| {
                bch.iter(|| one.update(&skin, black_box(1.0 / 60.0)))
            });
        }

        let mut crowd: Vec<Character> = (0..1024)
            .map(|i| character(&asset, a, b, (i as f32 * 0.618).fract()).0)
            .collect();
        group.throughput(Throughput::Elements(crowd.len() as u64));
        group.bench_function("crowd_1024", |bch| {
            bch.iter(|| {
                for ch in crowd.iter_mut() {
                    ch.update(&skin, black_box(1.0 / 60.0));
                }
            })
        });
        group.bench_function("crowd_1024_rayon", |bch| {
            bch.iter(|| {
                crowd
                    .par_iter_mut()
                    .for_each(|ch| ch.update(&skin, black_box(1.0 / 60.0)))
            })
        });
        group.bench_function("crowd_1024_prefetch", |bch| {
            bch.iter(|| {
                crowd::for_each_prefetched(&mut crowd, Character::prefetch, |ch| {
                    ch.update(&skin, black_box(1.0 / 60.0))
                })
            })
        });
        group.bench_function("crowd_1024_rayon_prefetch", |bch| {
            bch.iter(|| {
                crowd.par_chunks_mut(64).for_each(|chunk| {
                    crowd::for_each_prefetched(chunk, Character::prefetch, |ch| {
                        ch.update(&skin, black_box(1.0 / 60.0))
                    })
                })
            })
        });
        group.bench_function("crowd_1024_palette_prefetch", |bch| {
            bch.iter(|| {
                crowd::for_each_prefetched(&mut crowd, Character::prefetch_palette, |ch| {
                    ch.update_palette(&skin, black_box(1.0 / 60.0))
                })
            })
        });
        drop(crowd);
        let mut lean: Vec<Character> = (0..1024)
            .map(|i| character_with(&asset, a, b, (i as f32 * 0.618).fract(), true).0)
            .collect();
        group.bench_function("crowd_1024_lean_prefetch", |bch| {
            bch.iter(|| {
                crowd::for_each_prefetched(&mut lean, Character::prefetch, |ch| {
                    ch.update(&skin, black_box(1.0 / 60.0))
                })
            })
        });
        group.bench_function("crowd_1024_lean_palette_prefetch", |bch| {
            bch.iter(|| {
                crowd::for_each_prefetched(&mut lean, Character::prefetch_palette, |ch| {
                    ch.update_palette(&skin, black_box(1.0 / 60.0))
                })
            })
        });
        group.bench_function("crowd_1024_rayon_lean_palette_prefetch", |bch| {
            bch.iter(|| {
                lean.par_chunks_mut(64).for_each(|chunk| {
                    crowd::for_each_prefetched(chunk, Character::prefetch_palette, |ch| {
                        ch.update_palette(&skin, black_box(1.0 / 60.0))
                    })
                })
            })
        });
        drop(lean);
        let shared = Shared {
            skeleton: &asset.skeleton,
            rest: SoaPose::rest(&asset.skeleton),
            clips: [asset.clip(a).unwrap(), asset.clip(b).unwrap()],
            skin: &skin,
        };
        let mut one = Stateless::new(&shared, 0.0);
        group.throughput(Throughput::Elements(1));
        group.bench_function("stateless_one", |bch| {
            bch.iter(|| one.update(&shared, black_box(1.0 / 60.0)))
        });
        let mut crowd: Vec<Stateless> = (0..1024)
            .map(|i| Stateless::new(&shared, (i as f32 * 0.618).fract()))
            .collect();
        group.throughput(Throughput::Elements(crowd.len() as u64));
        group.bench_function("stateless_crowd_1024", |bch| {
            bch.iter(|| {
                for ch in crowd.iter_mut() {
                    ch.update(&shared, black_box(1.0 / 60.0));
                }
            })
        });
        group.bench_function("stateless_crowd_1024_prefetch", |bch| {
            bch.iter(|| {
                crowd::for_each_prefetched(&mut crowd, Stateless::prefetch, |ch| {
                    ch.update(&shared, black_box(1.0 / 60.0))
                })
            })
        });
        group.bench_function("stateless_crowd_1024_rayon_prefetch", |bch| {
            bch.iter(|| {
                crowd.par_chunks_mut(64).for_each(|chunk| {
                    crowd::for_each_prefetched(chunk, Stateless::prefetch, |ch| {
                        ch.update(&shared, black_box(1.0 / 60.0))
                    })
                })
            })
        });
        group.finish();
    }

    let asset = skelett_io::load(data("gltf/robot_quaternius.glb")).unwrap();
    let def = skelett_io::graph_file::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/robot_quaternius.graph.json"
    ))
    .unwrap();
    let graph = Arc::new(Graph::build(&def, asset.skeleton.clone(), &asset.clips).unwrap());
    let skin = asset.skins[0].clone();
    let mut group = c.benchmark_group("graph_robot");
    group.throughput(Throughput::Elements(1));
    let mut one = GraphCharacter::new(&graph, &skin, 0.0);
    group.bench_function("one", |bch| {
        bch.iter(|| one.update(&skin, black_box(1.0 / 60.0)))
    });
    let mut crowd: Vec<GraphCharacter> = (0..1024)
        .map(|i| GraphCharacter::new(&graph, &skin, (i as f32 * 0.618).fract()))
        .collect();
    group.throughput(Throughput::Elements(crowd.len() as u64));
    group.bench_function("crowd_1024", |bch| {
        bch.iter(|| {
            for ch in crowd.iter_mut() {
                ch.update(&skin, black_box(1.0 / 60.0));
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = skelett_testdata::bench::criterion(20, 3);
    targets = bench
}
criterion_main!(benches);

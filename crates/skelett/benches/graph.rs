//! The animation graph's cost over the same work done by direct animator calls (issue 17):
//! robot_quaternius (43 joints) with three layers (a 2D blend space of 5 clips cross-fading
//! to an idle, the transition kept under way; an upper-body wave; a head nod at half
//! weight), the blend-space parameters moving every frame.
//!
//! - `graph/one`, `animator/one`: one character updated again and again (throughput in
//!   joints: 1/thrpt is ns per joint);
//! - `graph/crowd_1024`, `animator/crowd_1024`: 1024 characters each updated once per
//!   iteration, on one core (throughput in characters);
//! - `graph/crowd_1024_rayon`: the same crowd over both cores with rayon;
//! - `graph/crowd_1024_prefetch`: the crowd on one core, each character prefetched while the
//!   one before it updates (`crowd::for_each_prefetched`, `GraphInstance::prefetch`).
//!
//! Characters per 60 Hz frame = 16.67 ms / the per-character time of a crowd.

use skelett_testdata::data;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use glam::Vec2;
use rayon::prelude::*;
use skelett::animator::{
    Animator, BlendMode, BlendTree, Curve, PlayOptions, Space2D, Transition, TreeNode, TreeShape,
};
use skelett::graph::*;
use skelett::{crowd, JointMask};

const CLIPS: [(&str, [f32; 2]); 5] = [
    ("Robot_Idle", [0.0, 0.0]),
    ("Robot_Walking", [0.0, 1.0]),
    ("Robot_Running", [0.0, 3.0]),
    ("Robot_WalkJump", [1.0, 1.0]),
    ("Robot_Dance", [-1.0, 1.0]),
];

fn definition() -> GraphDef {
    let space = Motion::Blend2d(Blend2dDef {
        x: "x".into(),
        y: "y".into(),
        mode: Space2D::Directional,
        children: CLIPS
            .iter()
            .map(|(c, at)| Child2d {
                at: *at,
                motion: Motion::Clip(c.to_string()),
            })
            .collect(),
    });
    let mut loco = StateDef::new("Loco", space);
    loco.transitions.push(TransitionDef {
        conditions: vec![Condition::Is { param: "go".into() }],
        duration: 1.0e6,
        ..TransitionDef::to("Idle")
    });
    let layer = |name: &str, mask: Option<&str>, weight: f32, clip: &str| LayerDef {
        name: name.into(),
        blend: BlendMode::Override,
        weight,
        weight_parameter: None,
        mask: mask.map(|m| MaskDef {
            subtree: vec![m.into()],
            ..Default::default()
        }),
        machine: MachineDef {
            entry: "S".into(),
            entry_transitions: vec![],
            any_state: vec![],
            states: vec![StateDef::new("S", Motion::Clip(clip.into()))],
        },
    };
    GraphDef {
        version: GRAPH_VERSION,
        parameters: vec![
            ParameterDef {
                name: "x".into(),
                kind: ParameterKind::Float,
                default: None,
            },
            ParameterDef {
                name: "y".into(),
                kind: ParameterKind::Float,
                default: None,
            },
            ParameterDef {
                name: "go".into(),
                kind: ParameterKind::Trigger,
                default: None,
            },
        ],
        layers: vec![
            LayerDef {
                machine: MachineDef {
                    entry: "Loco".into(),
                    entry_transitions: vec![],
                    any_state: vec![],
                    states: vec![
                        loco,
                        StateDef::new("Idle", Motion::Clip("Robot_Idle".into())),
                    ],
                },
                ..layer("base", None, 1.0, "")
            },
            layer("upper", Some("Abdomen"), 1.0, "Robot_Wave"),
            layer("head", Some("Neck"), 0.5, "Robot_Yes"),
        ],
    }
}

/// A graph character with the transition under way, at its own phase.
fn graph_character(graph: &Arc<Graph>, phase: f32) -> GraphInstance {
    let mut ch = GraphInstance::new(graph.clone());
    ch.update(phase);
    ch.set_trigger(graph.parameter("go").unwrap()).unwrap();
    ch.update(0.1);
    assert!(ch.transition(0).is_some());
    ch
}

/// The same work by direct animator calls: the tree, the cross-fade, two masked layers.
fn animator_character(asset: &skelett_io::Asset, phase: f32) -> Animator {
    let sk = &asset.skeleton;
    let mut nodes: Vec<TreeNode> = CLIPS
        .iter()
        .map(|(c, _)| TreeNode::Clip(asset.clip(c).unwrap().clone()))
        .collect();
    nodes.push(TreeNode::Space2D {
        x: 0,
        y: 1,
        mode: Space2D::Directional,
        children: CLIPS
            .iter()
            .enumerate()
            .map(|(i, (_, at))| (Vec2::from(*at), i))
            .collect(),
    });
    let shape = Arc::new(TreeShape::new(nodes, 2).unwrap());
    let mut a = Animator::new(sk.clone());
    a.add_layer(
        BlendMode::Override,
        1.0,
        Some(JointMask::subtree(sk, "Abdomen").unwrap()),
    )
    .unwrap();
    a.add_layer(
        BlendMode::Override,
        0.5,
        Some(JointMask::subtree(sk, "Neck").unwrap()),
    )
    .unwrap();
    a.play_tree(
        0,
        BlendTree::new(shape),
        Transition::Immediate,
        PlayOptions::default(),
    )
    .unwrap();
    a.play(
        1,
        asset.clip("Robot_Wave").unwrap().clone(),
        PlayOptions::default(),
    )
    .unwrap();
    a.play(
        2,
        asset.clip("Robot_Yes").unwrap().clone(),
        PlayOptions::default(),
    )
    .unwrap();
    a.update(phase);
    a.crossfade(
        0,
        asset.clip("Robot_Idle").unwrap().clone(),
        1.0e6,
        Curve::SmoothStep,
        PlayOptions::default(),
    )
    .unwrap();
    a.update(0.1);
    a
}

/// The blend-space parameters at frame `i`: a slow circle through the space.
fn params(i: u64) -> (f32, f32) {
    let t = i as f32 * 0.01;
    (t.cos() * 0.8, 1.5 + t.sin() * 1.2)
}

fn bench(c: &mut Criterion) {
    let robot = skelett_io::load(data("gltf/robot_quaternius.glb")).unwrap();
    let graph =
        Arc::new(Graph::build(&definition(), robot.skeleton.clone(), &robot.clips).unwrap());
    let (x, y) = (graph.parameter("x").unwrap(), graph.parameter("y").unwrap());
    let joints = robot.skeleton.len() as u64;
    let dt = 1.0 / 60.0;

    let mut g = c.benchmark_group("graph");
    g.throughput(Throughput::Elements(joints));
    let mut ch = graph_character(&graph, 0.0);
    let mut i = 0u64;
    g.bench_function("one", |b| {
        b.iter(|| {
            i += 1;
            let (px, py) = params(i);
            ch.set_float(x, px).unwrap();
            ch.set_float(y, py).unwrap();
            black_box(ch.update(dt).events.len());
        })
    });
    let mut crowd: Vec<GraphInstance> = (0..1024)
        .map(|k| graph_character(&graph, k as f32 * 0.0137))
        .collect();
    g.throughput(Throughput::Elements(crowd.len() as u64));
    g.bench_function("crowd_1024", |b| {
        b.iter(|| {
            i += 1;
            let (px, py) = params(i);
            for ch in &mut crowd {
                ch.set_float(x, px).unwrap();
                ch.set_float(y, py).unwrap();
                black_box(ch.update(dt).events.len());
            }
        })
    });
    g.bench_function("crowd_1024_rayon", |b| {
        b.iter(|| {
            i += 1;
            let (px, py) = params(i);
            crowd.par_iter_mut().for_each(|ch| {
                ch.set_float(x, px).unwrap();
                ch.set_float(y, py).unwrap();
                black_box(ch.update(dt).events.len());
            })
        })
    });
    g.bench_function("crowd_1024_prefetch", |b| {
        b.iter(|| {
            i += 1;
            let (px, py) = params(i);
            crowd::for_each_prefetched(&mut crowd, GraphInstance::prefetch, |ch| {
                ch.set_float(x, px).unwrap();
                ch.set_float(y, py).unwrap();
                black_box(ch.update(dt).events.len());
            })
        })
    });
    g.finish();

    let mut g = c.benchmark_group("animator");
    g.throughput(Throughput::Elements(joints));
    let mut a = animator_character(&robot, 0.0);
    g.bench_function("one", |b| {
        b.iter(|| {
            i += 1;
            let (px, py) = params(i);
            a.set_tree_parameter(0, 0, px).unwrap();
            a.set_tree_parameter(0, 1, py).unwrap();
            black_box(a.update(dt).events.len());
        })
    });
    let mut crowd: Vec<Animator> = (0..1024)
        .map(|k| animator_character(&robot, k as f32 * 0.0137))
        .collect();
    g.throughput(Throughput::Elements(crowd.len() as u64));
    g.bench_function("crowd_1024", |b| {
        b.iter(|| {
            i += 1;
            let (px, py) = params(i);
            for a in &mut crowd {
                a.set_tree_parameter(0, 0, px).unwrap();
                a.set_tree_parameter(0, 1, py).unwrap();
                black_box(a.update(dt).events.len());
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = skelett_testdata::bench::criterion(20, 3);
    targets = bench
}
criterion_main!(benches);

//! Morph targets in the runtime: weight tracks (glTF's formulas computed here from the keys),
//! weights through the animator (cross-fades, layers, masks, additive, inertial), sparse morph
//! against the dense formula (property test), morph then skin against skinning a mesh whose
//! bind pose was morphed by hand, and the per-frame path without allocation.

use std::sync::Arc;

use glam::{Mat4, Quat, Vec3, Vec4};
use proptest::prelude::*;
use skelett::animator::{Animator, BlendMode, Curve, PlayOptions};
use skelett::morph::{morph, skin_morphed, Morphed};
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::*;

fn skeleton(channels: &[(&str, f32)]) -> Arc<Skeleton> {
    Arc::new(
        RawSkeleton {
            joints: vec![
                RawJoint {
                    name: "root".into(),
                    parent: None,
                    rest: Transform::IDENTITY,
                },
                RawJoint {
                    name: "head".into(),
                    parent: Some(0),
                    rest: Transform::new(Vec3::Y, Quat::IDENTITY, Vec3::ONE),
                },
            ],
            ..Default::default()
        }
        .build()
        .unwrap()
        .with_morph_channels(
            channels
                .iter()
                .map(|&(n, r)| MorphChannel {
                    name: n.into(),
                    rest: r,
                })
                .collect(),
        )
        .unwrap(),
    )
}

fn clip(sk: &Skeleton, name: &str, tracks: Vec<RawMorphTrack>) -> Arc<Clip> {
    Arc::new(
        RawClip {
            name: name.into(),
            duration: 1.0,
            ..Default::default()
        }
        .build(sk)
        .unwrap()
        .with_morph_tracks(sk, tracks)
        .unwrap(),
    )
}

fn linear(channel: &str, times: &[f32], values: &[f32]) -> RawMorphTrack {
    RawMorphTrack {
        channel: channel.into(),
        interpolation: Interpolation::Linear,
        times: times.to_vec(),
        values: values.to_vec(),
    }
}

fn constant(sk: &Skeleton, name: &str, values: &[(&str, f32)]) -> Arc<Clip> {
    clip(
        sk,
        name,
        values
            .iter()
            .map(|&(c, v)| linear(c, &[0.0, 1.0], &[v, v]))
            .collect(),
    )
}

#[test]
fn cubic_weights_follow_the_gltf_hermite_formula() {
    let sk = skeleton(&[("a", 0.0)]);
    // Keys at 0.5 and 2.0: (in-tangent, value, out-tangent) each.
    let keys = [0.3f32, 0.2, -1.5, 2.0, 0.9, 0.7];
    let c = clip(
        &sk,
        "cubic",
        vec![RawMorphTrack {
            channel: "a".into(),
            interpolation: Interpolation::CubicSpline,
            times: vec![0.5, 2.0],
            values: keys.to_vec(),
        }],
    );
    let mut w = [0.0];
    for i in 0..=30 {
        let t = 0.5 + 1.5 * i as f64 / 30.0;
        sample_morph_weights(&c, t as f32, &mut w).unwrap();
        // glTF 2.0 Appendix C, in f64: p(s) = h00 v0 + h10 dt b0 + h01 v1 + h11 dt a1.
        let (dt, s) = (1.5f64, (t - 0.5) / 1.5);
        let want = (2.0 * s.powi(3) - 3.0 * s * s + 1.0) * 0.2
            + (s.powi(3) - 2.0 * s * s + s) * dt * -1.5
            + (-2.0 * s.powi(3) + 3.0 * s * s) * 0.9
            + (s.powi(3) - s * s) * dt * 2.0;
        assert!(
            (w[0] as f64 - want).abs() < 1e-5,
            "t={t}: {} vs {want}",
            w[0]
        );
    }
    // Outside the keys the end values hold; values leave 0..=1 freely.
    sample_morph_weights(&c, -3.0, &mut w).unwrap();
    assert_eq!(w[0], 0.2);
    sample_morph_weights(&c, 9.0, &mut w).unwrap();
    assert_eq!(w[0], 0.9);
    let wild = clip(&sk, "wild", vec![linear("a", &[0.0, 1.0], &[-2.0, 3.0])]);
    sample_morph_weights(&wild, 0.5, &mut w).unwrap();
    assert_eq!(w[0], 0.5);
    sample_morph_weights(&wild, 0.0, &mut w).unwrap();
    assert_eq!(w[0], -2.0);
}

#[test]
fn weight_tracks_are_validated_with_their_name() {
    let sk = skeleton(&[("a", 0.0)]);
    let base = RawClip {
        name: "c".into(),
        duration: 1.0,
        ..Default::default()
    }
    .build(&sk)
    .unwrap();
    let bad = |t: RawMorphTrack| {
        base.clone()
            .with_morph_tracks(&sk, vec![t])
            .unwrap_err()
            .to_string()
    };
    assert!(bad(linear("b", &[0.0], &[1.0])).contains("no such morph channel"));
    assert!(bad(linear("a", &[0.0, 0.0], &[1.0, 1.0])).contains("strictly increasing"));
    assert!(bad(linear("a", &[0.0, 1.0], &[1.0])).contains("1 values for 2 keys"));
    assert!(bad(linear("a", &[0.0, 1.0], &[1.0, f32::NAN])).contains("value 1 is NaN"));
    assert!(bad(linear("a", &[f32::INFINITY], &[1.0])).contains("key 0 has time inf"));
    let twice = base
        .clone()
        .with_morph_tracks(
            &sk,
            vec![linear("a", &[0.0], &[1.0]), linear("a", &[0.0], &[1.0])],
        )
        .unwrap_err();
    assert!(twice.to_string().contains("same channel"), "{twice}");
    // A one-key track is the clip's constant weight.
    let c = base
        .with_morph_tracks(&sk, vec![linear("a", &[0.3], &[0.6])])
        .unwrap();
    assert_eq!(c.morph_base(), [0.6]);
    assert_eq!(c.morph_tracks().len(), 0);
    // Skeletons with other channels are other skeletons.
    let other = skeleton(&[("b", 0.0)]);
    assert_ne!(sk.id(), other.id());
    assert!(Animator::new(other)
        .play(0, Arc::new(c), PlayOptions::default())
        .is_err());
}

#[test]
fn the_animator_crossfades_layers_and_masks_weights() {
    let sk = skeleton(&[("smile", 0.1), ("blink", 0.0), ("frown", 0.0)]);
    let smile = constant(&sk, "smile", &[("smile", 1.0)]);
    let frown = constant(&sk, "frown", &[("frown", 0.8)]);
    let mut a = Animator::new(sk.clone());
    // Nothing playing: the rest weights.
    a.update(0.1);
    assert_eq!(a.morph_weights(), [0.1, 0.0, 0.0]);
    a.play(0, smile.clone(), PlayOptions::default()).unwrap();
    a.update(0.1);
    assert_eq!(a.morph_weights(), [1.0, 0.0, 0.0]);
    // A linear cross-fade halfway: each channel halfway, the un-animated one at rest.
    a.crossfade(0, frown.clone(), 1.0, Curve::Linear, PlayOptions::default())
        .unwrap();
    a.update(0.5);
    let w = a.morph_weights();
    assert!(
        (w[0] - 0.55).abs() < 1e-6 && (w[2] - 0.4).abs() < 1e-6,
        "{w:?}"
    );
    a.update(1.0);
    assert_eq!(a.morph_weights(), [0.1, 0.0, 0.8]);

    // A face layer that owns "blink" only, over a body layer.
    let blink = constant(&sk, "blink", &[("blink", 1.0), ("smile", 0.9)]);
    let mut mask = JointMask::uniform(&sk, 0.0);
    mask.set_morph_channels(&sk, &["blink"], 1.0).unwrap();
    let face = a.add_layer(BlendMode::Override, 0.5, Some(mask)).unwrap();
    a.play(face, blink.clone(), PlayOptions::default()).unwrap();
    a.update(0.1);
    assert_eq!(a.morph_weights(), [0.1, 0.5, 0.8]);
    // A joint mask without morph channels leaves the weights to the layers below.
    a.set_layer_mask(face, Some(JointMask::subtree(&sk, "head").unwrap()))
        .unwrap();
    a.update(0.1);
    assert_eq!(a.morph_weights(), [0.1, 0.0, 0.8]);
    // An additive layer adds its weights times the layer weight.
    let add = a.add_layer(BlendMode::Additive, 0.5, None).unwrap();
    a.play(add, smile.clone(), PlayOptions::default()).unwrap();
    a.update(0.1);
    let w = a.morph_weights();
    assert!((w[0] - 0.6).abs() < 1e-6, "{w:?}");
}

#[test]
fn inertial_switches_decay_weights_without_a_pop() {
    let sk = skeleton(&[("smile", 0.0)]);
    let on = constant(&sk, "on", &[("smile", 1.0)]);
    let off = constant(&sk, "off", &[("smile", 0.0)]);
    let mut a = Animator::new(sk.clone());
    a.play(0, on, PlayOptions::default()).unwrap();
    a.update(0.1);
    a.update(0.1);
    a.inertialize(0, off, 0.5, PlayOptions::default()).unwrap();
    let mut last = 1.0;
    for i in 0..30 {
        a.update(1.0 / 60.0);
        let w = a.morph_weights()[0];
        assert!(
            w <= last + 1e-6 && w >= -1e-4,
            "frame {i}: {w} after {last}"
        );
        if i == 0 {
            assert!(w > 0.9, "the first frame starts from the old weight: {w}");
        }
        last = w;
    }
    assert!(last < 0.01, "decayed: {last}");
}

#[test]
fn blend_spaces_and_trees_blend_weights_with_their_clip_weights() {
    use skelett::animator::{BlendTree, Transition, TreeNode, TreeShape};
    let sk = skeleton(&[("a", 0.0), ("b", 0.0)]);
    let x = constant(&sk, "x", &[("a", 1.0)]);
    let y = constant(&sk, "y", &[("b", 1.0)]);
    let shape = Arc::new(
        TreeShape::new(
            vec![
                TreeNode::Clip(x),
                TreeNode::Clip(y),
                TreeNode::Space1D {
                    parameter: 0,
                    children: vec![(0.0, 0), (1.0, 1)],
                },
            ],
            1,
        )
        .unwrap(),
    );
    let mut a = Animator::new(sk);
    a.play_tree(
        0,
        BlendTree::new(shape),
        Transition::Immediate,
        PlayOptions::default(),
    )
    .unwrap();
    a.set_tree_parameter(0, 0, 0.25).unwrap();
    a.update(0.1);
    let w = a.morph_weights();
    assert!(
        (w[0] - 0.75).abs() < 1e-6 && (w[1] - 0.25).abs() < 1e-6,
        "{w:?}"
    );
}

/// A small mesh with `targets` dense targets from the strategy's numbers.
fn mesh(
    positions: Vec<Vec3>,
    normals: Vec<Vec3>,
    targets: Vec<(Vec<Vec3>, Vec<Vec3>)>,
) -> MeshPrimitive {
    let n = positions.len();
    MeshPrimitive {
        positions,
        normals: Some(normals),
        influences: 2,
        joints: (0..n).flat_map(|v| [0u16, (v % 2) as u16]).collect(),
        weights: (0..n)
            .flat_map(|v| [0.25 + (v % 3) as f32 * 0.25, 0.75 - (v % 3) as f32 * 0.25])
            .collect(),
        indices: (0..(n as u32 / 3) * 3).collect(),
        base_color: Vec4::ONE,
        morph_targets: targets
            .into_iter()
            .map(|(p, nn)| MorphTarget {
                positions: Some(p),
                normals: Some(nn),
                tangents: None,
            })
            .collect(),
        ..Default::default()
    }
}

fn v3() -> impl Strategy<Value = Vec3> {
    (-2.0f32..2.0, -2.0f32..2.0, -2.0f32..2.0).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// Offsets that are zero for about half the vertices (sparse targets).
fn offset() -> impl Strategy<Value = Vec3> {
    prop_oneof![Just(Vec3::ZERO), v3()]
}

proptest! {
    /// Sparse morph then skin equals skinning a mesh whose bind pose was morphed densely
    /// (`POSITION + Σ w·offset`, the glTF formula) before building it.
    #[test]
    fn morph_then_skin_equals_skinning_the_morphed_bind_pose(
        n in 1usize..24,
        seed in prop::collection::vec((v3(), v3(), prop::collection::vec((offset(), offset()), 24)), 24),
        weights in prop::collection::vec(prop_oneof![Just(0.0f32), -1.5f32..1.5], 3),
        angle in -3.0f32..3.0,
    ) {
        let positions: Vec<Vec3> = seed[..n].iter().map(|s| s.0).collect();
        let normals: Vec<Vec3> = seed[..n].iter().map(|s| s.1.normalize_or(Vec3::Y)).collect();
        let targets: Vec<(Vec<Vec3>, Vec<Vec3>)> = (0..3)
            .map(|k| {
                (
                    seed[..n].iter().map(|s| s.2[k].0).collect(),
                    seed[..n].iter().map(|s| s.2[k].1 * 0.1).collect(),
                )
            })
            .collect();
        let p = mesh(positions.clone(), normals.clone(), targets.clone());
        // The morphed bind pose, by the formula, as a plain mesh.
        let mut dense = mesh(positions, normals, Vec::new());
        for (v, (pos, nrm)) in dense.positions.iter_mut().zip(dense.normals.as_mut().unwrap()).enumerate() {
            for (k, t) in targets.iter().enumerate() {
                *pos += weights[k] * t.0[v];
                *nrm += weights[k] * t.1[v];
            }
            *nrm = nrm.normalize_or(*nrm);
        }
        // Channels in another order than the targets: target k reads channel 2 - k.
        let mut sparse = SkinningMesh::new(&p, 2).unwrap();
        sparse.set_morph_channels(&[2, 1, 0]).unwrap();
        let channel_weights = [weights[2], weights[1], weights[0]];
        let plain = SkinningMesh::new(&dense, 2).unwrap();
        prop_assert_eq!(sparse.source_vertices(), plain.source_vertices());
        let mut palette = SkinPalette::new(SkinningMethod::Linear);
        palette.set_matrices(&[
            Mat4::from_rotation_translation(Quat::from_rotation_z(angle), Vec3::X),
            Mat4::from_scale_rotation_translation(Vec3::splat(1.5), Quat::from_rotation_y(angle), Vec3::Z),
        ]);
        let mut morphed = Morphed::new(&sparse);
        morph(&sparse, &channel_weights, &mut morphed).unwrap();
        prop_assert_eq!(morphed.active_targets(), weights.iter().filter(|&&w| w != 0.0).count());
        let (mut pa, mut na) = (vec![Vec3::ZERO; n], vec![Vec3::ZERO; n]);
        let (mut pb, mut nb) = (vec![Vec3::ZERO; n], vec![Vec3::ZERO; n]);
        skin_morphed(&sparse, &palette, &morphed, SkinOutput { positions: &mut pa, normals: Some(&mut na), tangents: None }).unwrap();
        skin(&plain, &palette, SkinOutput { positions: &mut pb, normals: Some(&mut nb), tangents: None }).unwrap();
        for v in 0..n {
            let scale = 1.0 + pb[v].length();
            prop_assert!((pa[v] - pb[v]).length() <= 1e-5 * scale, "vertex {}: {} vs {}", v, pa[v], pb[v]);
            if nb[v].length() > 0.5 {
                prop_assert!((na[v] - nb[v]).length() <= 1e-4, "normal {}: {} vs {}", v, na[v], nb[v]);
            }
        }
    }
}

#[test]
fn sparse_targets_keep_only_the_vertices_they_move() {
    let mut offsets = vec![Vec3::ZERO; 999];
    for v in (0..999).step_by(100) {
        offsets[v] = Vec3::X;
    }
    let p = mesh(
        vec![Vec3::ONE; 999],
        vec![Vec3::Y; 999],
        vec![(offsets, vec![Vec3::ZERO; 999])],
    );
    let m = SkinningMesh::new(&p, 2).unwrap();
    assert_eq!(m.morph_target_sizes().collect::<Vec<_>>(), [10]);
    // Nothing active: no copy, the bind pose applies.
    let mut morphed = Morphed::new(&m);
    morph(&m, &[0.0], &mut morphed).unwrap();
    assert!(morphed.positions().is_none());
    // NaN weights count as zero, short weight arrays are refused.
    morph(&m, &[f32::NAN], &mut morphed).unwrap();
    assert_eq!(morphed.active_targets(), 0);
    assert!(morph(&m, &[], &mut morphed).is_err());
    // Target counts that disagree with the mesh's channels are a mesh error.
    let mesh = SkinnedMesh {
        name: "m".into(),
        skin: 0,
        primitives: vec![p.clone()],
        morph_channels: vec![0, 1],
        morph_full_weights: Vec::new(),
    };
    let skin = Skin::new("s", vec![0, 1], vec![Mat4::IDENTITY; 2]).unwrap();
    assert!(mesh
        .validate(&skin)
        .unwrap_err()
        .to_string()
        .contains("1 morph targets"));
    let mut bad = p;
    bad.morph_targets[0].positions.as_mut().unwrap()[3] = Vec3::NAN;
    assert!(SkinningMesh::new(&bad, 2)
        .unwrap_err()
        .to_string()
        .contains("morph target 0 positions offset 3 is not finite"));
}

fn one_channel_skeleton() -> Arc<Skeleton> {
    Arc::new(
        RawSkeleton {
            joints: vec![RawJoint {
                name: "head".into(),
                parent: None,
                rest: Transform::IDENTITY,
            }],
            ..Default::default()
        }
        .build()
        .unwrap()
        .with_morph_channels(vec![MorphChannel {
            name: "smile".into(),
            rest: 0.0,
        }])
        .unwrap(),
    )
}

proptest! {
    /// Weight compression keeps every sampled weight within the budget divided by the reach
    /// (checked at 200 times, not only at keys), keeps the first and last keys, never adds
    /// keys, and reports a displacement within the budget.
    #[test]
    fn compressed_weights_stay_within_the_budget(
        values in proptest::collection::vec(-1.5f32..1.5, 2..60),
        step in any::<bool>(),
        reach in 0.001f32..0.5,
        budget in 0.0f32..0.01,
    ) {
        let sk = one_channel_skeleton();
        let n = values.len();
        let times: Vec<f32> = (0..n).map(|i| i as f32 / 30.0).collect();
        let clip = RawClip { name: "c".into(), duration: times[n - 1], ..Default::default() }
            .build(&sk)
            .unwrap()
            .with_morph_tracks(&sk, vec![RawMorphTrack {
                channel: "smile".into(),
                interpolation: if step { Interpolation::Step } else { Interpolation::Linear },
                times: times.clone(),
                values,
            }])
            .unwrap();
        let (small, report) = compress::compress_morph_weights(&clip, &[reach], budget).unwrap();
        prop_assert!(report.keys_after <= report.keys_before);
        prop_assert!(report.max_displacement <= budget * 1.0001 + 1e-7);
        let t = small.morph_tracks().next().unwrap();
        prop_assert_eq!(t.times[0], times[0]);
        prop_assert_eq!(*t.times.last().unwrap(), times[n - 1]);
        let (mut a, mut b) = ([0.0f32], [0.0f32]);
        for i in 0..=200 {
            let at = times[n - 1] * i as f32 / 200.0;
            sample_morph_weights(&clip, at, &mut a).unwrap();
            sample_morph_weights(&small, at, &mut b).unwrap();
            prop_assert!(
                (a[0] - b[0]).abs() * reach <= budget * 1.001 + 1e-6,
                "t={}: {} became {} (budget {} / reach {})", at, a[0], b[0], budget, reach
            );
        }
    }
}

#[test]
fn weight_compression_refuses_bad_budgets_and_reach() {
    let sk = one_channel_skeleton();
    let clip = RawClip {
        name: "c".into(),
        duration: 1.0,
        ..Default::default()
    }
    .build(&sk)
    .unwrap();
    assert!(compress::compress_morph_weights(&clip, &[1.0], -1.0).is_err());
    assert!(compress::compress_morph_weights(&clip, &[1.0], f32::NAN).is_err());
    assert!(compress::compress_morph_weights(&clip, &[], 0.1).is_err());
    // A channel that moves nothing loses every inner key.
    let times: Vec<f32> = (0..10).map(|i| i as f32 / 9.0).collect();
    let wavy: Vec<f32> = (0..10).map(|i| (i % 2) as f32).collect();
    let clip = clip
        .with_morph_tracks(
            &sk,
            vec![RawMorphTrack {
                channel: "smile".into(),
                interpolation: Interpolation::Linear,
                times,
                values: wavy,
            }],
        )
        .unwrap();
    let (_, r) = compress::compress_morph_weights(&clip, &[0.0], 0.0).unwrap();
    assert_eq!((r.keys_before, r.keys_after), (10, 2));
    // With a real reach and no budget, nothing changes.
    let (_, r) = compress::compress_morph_weights(&clip, &[1.0], 0.0).unwrap();
    assert_eq!(r.keys_after, 10);
}

proptest! {
    /// In-between shapes (`MorphBinding`): for any distinct non-zero full weights on one
    /// channel and any channel weight, the target weights reproduce a linear ramp exactly
    /// (shapes that lie on a line, `shape_k = full_k · d`, give `w · d`: Σ weight_k · full_k
    /// = w, extrapolation included), at most two targets are active, each target is fully
    /// applied alone at its own full weight, and the blend is continuous in the weight.
    #[test]
    fn in_between_weights_interpolate_linearly_between_shapes(
        fulls in proptest::collection::btree_set(-40i32..40, 1..6),
        w in -3.0f32..3.0,
    ) {
        let fulls: Vec<f32> = fulls.into_iter().filter(|&f| f != 0).map(|f| f as f32 / 10.0).collect();
        prop_assume!(!fulls.is_empty());
        let channels = vec![0u32; fulls.len()];
        let b = skelett::morph::MorphBinding::new(&channels, &fulls).unwrap();
        let mut t = vec![0.0; fulls.len()];
        let active = b.target_weights(&[w], &mut t).unwrap();
        prop_assert!(active <= 2);
        let ramp: f32 = t.iter().zip(&fulls).map(|(a, f)| a * f).sum();
        prop_assert!((ramp - w).abs() < 1e-4 * (1.0 + w.abs()), "{ramp} for {w} ({t:?} at {fulls:?})");
        for (k, &f) in fulls.iter().enumerate() {
            b.target_weights(&[f], &mut t).unwrap();
            for (j, &x) in t.iter().enumerate() {
                let want = if j == k { 1.0 } else { 0.0 };
                prop_assert!((x - want).abs() < 1e-5, "at {f}: target {j} {x} ({fulls:?})");
            }
        }
        // Continuity: a small step in the weight moves each target's weight by at most the
        // step over the shortest gap between neighbouring full weights (0 included).
        let mut knots = fulls.clone();
        knots.push(0.0);
        knots.sort_by(f32::total_cmp);
        let gap = knots.windows(2).map(|p| p[1] - p[0]).fold(f32::INFINITY, f32::min);
        let (mut a, mut c) = (vec![0.0; fulls.len()], vec![0.0; fulls.len()]);
        let eps = 1e-3;
        b.target_weights(&[w], &mut a).unwrap();
        b.target_weights(&[w + eps], &mut c).unwrap();
        for (x, y) in a.iter().zip(&c) {
            prop_assert!((x - y).abs() <= eps / gap * 1.01 + 1e-5, "{x} -> {y} over {eps} ({fulls:?} at {w})");
        }
    }
}

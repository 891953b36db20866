//! CPU skinning (`skelett::skin`): the grouped, last-weight-implied layout against a plain
//! f64 linear blend written out here; inverse-transposed normals under non-uniform scale;
//! dual quaternion skinning keeping volume where linear blending collapses; the per-vertex
//! fallback; parallel skinning equal to serial.

use glam::{DMat3, DVec3, Mat4, Quat, Vec3, Vec4};
use proptest::prelude::*;
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::MeshPrimitive;

/// One vertex by the textbook formula, in f64, on source data: normalised positive weights.
fn naive(p: &MeshPrimitive, palette: &[Mat4], v: usize) -> (DVec3, Option<DVec3>) {
    let k = p.influences;
    let sum: f64 = p.weights[v * k..v * k + k].iter().map(|&w| w as f64).sum();
    if sum <= 0.0 {
        return (
            p.positions[v].as_dvec3(),
            p.normals.as_ref().map(|n| n[v].as_dvec3()),
        );
    }
    let mut pos = DVec3::ZERO;
    let mut nrm = DVec3::ZERO;
    for i in 0..k {
        let w = p.weights[v * k + i] as f64 / sum;
        if w > 0.0 {
            let m = palette[p.joints[v * k + i] as usize].as_dmat4();
            pos += m.transform_point3(p.positions[v].as_dvec3()) * w;
            if let Some(n) = &p.normals {
                let it = DMat3::from_mat4(m).inverse().transpose();
                nrm += it * n[v].as_dvec3() * w;
            }
        }
    }
    (pos, p.normals.as_ref().map(|_| nrm.normalize()))
}

fn run(mesh: &SkinningMesh, palette: &SkinPalette) -> (Vec<Vec3>, Vec<Vec3>) {
    let mut pos = vec![Vec3::ZERO; mesh.vertex_count()];
    let mut nrm = pos.clone();
    skin(
        mesh,
        palette,
        SkinOutput {
            positions: &mut pos,
            normals: Some(&mut nrm),
            tangents: None,
        },
    )
    .unwrap();
    (pos, nrm)
}

fn transform() -> impl Strategy<Value = Mat4> {
    (
        prop::array::uniform3(-2.0f32..2.0),
        prop::array::uniform4(-1.0f32..1.0),
        prop::array::uniform3(0.5f32..2.0),
        any::<bool>(),
    )
        .prop_map(|(t, q, s, uniform)| {
            let q = Quat::from_array(q);
            let q = if q.length() > 1e-3 {
                q.normalize()
            } else {
                Quat::IDENTITY
            };
            let s = if uniform {
                Vec3::splat(s[0])
            } else {
                Vec3::from(s)
            };
            Mat4::from_scale_rotation_translation(s, q, Vec3::from(t))
        })
}

fn primitive(joints: u16) -> impl Strategy<Value = MeshPrimitive> {
    (1usize..=8, 1usize..40).prop_flat_map(move |(k, n)| {
        (
            prop::collection::vec(prop::array::uniform3(-1.0f32..1.0), n),
            prop::collection::vec(prop::array::uniform3(-1.0f32..1.0), n),
            prop::collection::vec(0..joints, n * k),
            // A third of the weights are zero, so counts vary within a vertex's slots.
            prop::collection::vec(prop_oneof![Just(0.0f32), 0.01f32..1.0, 0.01f32..1.0], n * k),
        )
            .prop_map(move |(p, nr, j, w)| MeshPrimitive {
                positions: p.into_iter().map(Vec3::from).collect(),
                normals: Some(
                    nr.into_iter()
                        .map(|v| Vec3::from(v).try_normalize().unwrap_or(Vec3::Y))
                        .collect(),
                ),
                influences: k,
                joints: j,
                weights: w,
                indices: (0..n as u32).collect::<Vec<_>>().repeat(3),
                base_color: Vec4::ONE,
                ..Default::default()
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn grouped_linear_skinning_matches_the_textbook_formula(
        palette in prop::collection::vec(transform(), 6),
        p in primitive(6),
    ) {
        let mesh = SkinningMesh::new(&p, palette.len()).unwrap();
        let mut sp = SkinPalette::new(SkinningMethod::Linear);
        sp.set_matrices(&palette);
        let (pos, nrm) = run(&mesh, &sp);
        for (at, &v) in mesh.source_vertices().iter().enumerate() {
            let (want_p, want_n) = naive(&p, &palette, v as usize);
            let err = (pos[at].as_dvec3() - want_p).length();
            prop_assert!(err < 1e-4 * (1.0 + want_p.length()), "vertex {v}: {} vs {want_p}", pos[at]);
            let want_n = want_n.unwrap();
            if want_n.is_finite() {
                prop_assert!((nrm[at].as_dvec3() - want_n).length() < 2e-3,
                    "normal {v}: {} vs {want_n}", nrm[at]);
            }
        }
        // The remapped index buffer draws the same triangles.
        for (a, b) in mesh.indices().iter().zip(&p.indices) {
            prop_assert_eq!(mesh.source_vertices()[*a as usize], *b);
        }
        // Stored weights reproduce the normalised source weights, the last one implied.
        for (at, &v) in mesh.source_vertices().iter().enumerate() {
            let k = p.influences;
            let sum: f32 = p.weights[v as usize * k..][..k].iter().sum();
            let total: f32 = mesh.influences(at).map(|(_, w)| w).sum();
            if sum > 0.0 {
                prop_assert!((total - 1.0).abs() < 1e-5);
            } else {
                prop_assert_eq!(mesh.influences(at).count(), 0);
            }
        }
    }

    #[test]
    fn dual_quaternions_equal_linear_for_single_influences_and_rigid_unit_distance(
        palette in prop::collection::vec(transform(), 4),
        p in primitive(4),
    ) {
        let mesh = SkinningMesh::new(&p, palette.len()).unwrap();
        // Rigid versions of the palette: dual quaternions apply everywhere.
        let rigid: Vec<Mat4> = palette.iter().map(|m| {
            let (_, r, t) = m.to_scale_rotation_translation();
            Mat4::from_rotation_translation(r, t)
        }).collect();
        let mut lin = SkinPalette::new(SkinningMethod::Linear);
        let mut dq = SkinPalette::new(SkinningMethod::DualQuaternion);
        lin.set_matrices(&rigid);
        dq.set_matrices(&rigid);
        let (lp, _) = run(&mesh, &lin);
        let (dp, dn) = run(&mesh, &dq);
        for g in mesh.groups().iter().filter(|g| g.influences <= 1) {
            for v in g.start..g.start + g.len {
                prop_assert!((lp[v] - dp[v]).length() < 1e-4, "{} vs {}", lp[v], dp[v]);
            }
        }
        // A blend of rigid transforms is rigid: normals stay unit length.
        for n in &dn {
            prop_assert!((n.length() - 1.0).abs() < 1e-4);
        }
    }
}

/// A cylinder around the X axis from x = -1 to 1, bound to joint 0 (x < 0) and joint 1
/// (x > 0), blended 50/50 at x = 0.
fn cylinder() -> MeshPrimitive {
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    let mut joints = Vec::new();
    let mut weights = Vec::new();
    for i in 0..=10 {
        let x = -1.0 + 0.2 * i as f32;
        let w1 = ((x + 0.5) / 1.0).clamp(0.0, 1.0);
        for a in 0..16 {
            let t = a as f32 / 16.0 * std::f32::consts::TAU;
            positions.push(Vec3::new(x, t.cos(), t.sin()));
            normals.push(Vec3::new(0.0, t.cos(), t.sin()));
            joints.extend([0u16, 1]);
            weights.extend([1.0 - w1, w1]);
        }
    }
    MeshPrimitive {
        positions,
        normals: Some(normals),
        influences: 2,
        joints,
        weights,
        base_color: Vec4::ONE,
        ..Default::default()
    }
}

#[test]
fn dual_quaternions_keep_volume_where_linear_blending_collapses() {
    let p = cylinder();
    let mesh = SkinningMesh::new(&p, 2).unwrap();
    // Joint 1 twists half a turn about the cylinder's axis.
    let palette = [
        Mat4::IDENTITY,
        Mat4::from_rotation_x(std::f32::consts::PI * 0.999),
    ];
    let radius = |method| {
        let mut sp = SkinPalette::new(method);
        sp.set_matrices(&palette);
        let (pos, _) = run(&mesh, &sp);
        // The ring at x = 0 has weights 0.5 / 0.5.
        mesh.source_vertices()
            .iter()
            .zip(&pos)
            .filter(|(&v, _)| p.positions[v as usize].x.abs() < 1e-4)
            .map(|(_, q)| glam::Vec2::new(q.y, q.z).length())
            .fold(f32::INFINITY, f32::min)
    };
    let lbs = radius(SkinningMethod::Linear);
    let dqs = radius(SkinningMethod::DualQuaternion);
    assert!(
        lbs < 0.01,
        "linear blending collapses the twisted ring: radius {lbs}"
    );
    assert!(
        (dqs - 1.0).abs() < 1e-4,
        "dual quaternions keep it: radius {dqs}"
    );
}

#[test]
fn dual_quaternions_fall_back_to_linear_per_vertex_where_a_joint_scales() {
    let p = cylinder();
    let mesh = SkinningMesh::new(&p, 2).unwrap();
    let palette = [
        Mat4::from_rotation_x(0.3),
        Mat4::from_scale_rotation_translation(
            Vec3::splat(1.5),
            Quat::from_rotation_x(2.0),
            Vec3::X,
        ),
    ];
    let mut lin = SkinPalette::new(SkinningMethod::Linear);
    let mut dq = SkinPalette::new(SkinningMethod::DualQuaternion);
    lin.set_matrices(&palette);
    dq.set_matrices(&palette);
    let (lp, _) = run(&mesh, &lin);
    let (dp, _) = run(&mesh, &dq);
    for g in mesh.groups() {
        for v in g.start..g.start + g.len {
            let uses_scaled = mesh.influences(v).any(|(j, _)| j == 1);
            if uses_scaled {
                assert_eq!(lp[v], dp[v], "vertex {v} falls back to linear");
            } else {
                // Rigid single-joint vertices: DQS equals LBS up to rounding.
                assert!((lp[v] - dp[v]).length() < 1e-5);
            }
        }
    }
}

#[test]
fn normals_use_the_inverse_transpose_under_non_uniform_scale() {
    // A slanted plane: normal (1, 1, 0)/sqrt 2, surface direction (1, -1, 0).
    let n = Vec3::new(1.0, 1.0, 0.0).normalize();
    let t = Vec3::new(1.0, -1.0, 0.0).normalize();
    let p = MeshPrimitive {
        positions: vec![Vec3::ZERO],
        normals: Some(vec![n]),
        tangents: Some(vec![t.extend(-1.0)]),
        influences: 1,
        joints: vec![0],
        weights: vec![1.0],
        base_color: Vec4::ONE,
        ..Default::default()
    };
    let mesh = SkinningMesh::new(&p, 1).unwrap();
    let mut sp = SkinPalette::new(SkinningMethod::Linear);
    sp.set_matrices(&[Mat4::from_scale(Vec3::new(1.0, 3.0, 1.0))]);
    assert!(sp.uses_normal_matrices());
    let mut pos = [Vec3::ZERO];
    let mut nrm = [Vec3::ZERO];
    let mut tan = [Vec4::ZERO];
    skin(
        &mesh,
        &sp,
        SkinOutput {
            positions: &mut pos,
            normals: Some(&mut nrm),
            tangents: Some(&mut tan),
        },
    )
    .unwrap();
    let (n2, t2) = (nrm[0], tan[0].truncate());
    assert!(
        n2.dot(t2).abs() < 1e-6,
        "normal {n2} stays perpendicular to tangent {t2}"
    );
    assert!((n2.length() - 1.0).abs() < 1e-6 && (t2.length() - 1.0).abs() < 1e-6);
    assert_eq!(tan[0].w, -1.0, "handedness kept");
    // Without the inverse-transpose the normal would lean toward the stretched axis.
    let wrong = (Mat4::from_scale(Vec3::new(1.0, 3.0, 1.0)).transform_vector3(n)).normalize();
    assert!(wrong.dot(t2).abs() > 0.1);
    // A uniform scale needs no normal matrices.
    sp.set_matrices(&[Mat4::from_scale(Vec3::splat(3.0))]);
    assert!(!sp.uses_normal_matrices());
}

#[test]
fn bad_sizes_are_errors_not_panics() {
    let p = cylinder();
    let mesh = SkinningMesh::new(&p, 2).unwrap();
    let mut sp = SkinPalette::new(SkinningMethod::Linear);
    sp.set_matrices(&[Mat4::IDENTITY]);
    let mut pos = vec![Vec3::ZERO; mesh.vertex_count()];
    let out = SkinOutput {
        positions: &mut pos,
        normals: None,
        tangents: None,
    };
    assert!(skin(&mesh, &sp, out).is_err(), "palette too short");
    sp.set_matrices(&[Mat4::IDENTITY; 2]);
    let mut short = vec![Vec3::ZERO; 3];
    let out = SkinOutput {
        positions: &mut short,
        normals: None,
        tangents: None,
    };
    assert!(skin(&mesh, &sp, out).is_err(), "output too short");
    let mut bad = p.clone();
    bad.joints[5] = 2;
    assert!(
        SkinningMesh::new(&bad, 2).is_err(),
        "palette index out of range"
    );
    let mut bad = p.clone();
    bad.influences = 9;
    assert!(SkinningMesh::new(&bad, 2).is_err(), "nine influences");
}

#[cfg(feature = "rayon")]
#[test]
fn parallel_skinning_equals_serial() {
    let p = cylinder();
    // Make it big enough to split: 40 copies.
    let mut big = p.clone();
    for _ in 0..40 {
        big.positions.extend_from_slice(&p.positions);
        big.normals
            .as_mut()
            .unwrap()
            .extend_from_slice(p.normals.as_ref().unwrap());
        big.joints.extend_from_slice(&p.joints);
        big.weights.extend_from_slice(&p.weights);
    }
    let mesh = SkinningMesh::new(&big, 2).unwrap();
    for method in [SkinningMethod::Linear, SkinningMethod::DualQuaternion] {
        let mut sp = SkinPalette::new(method);
        sp.set_matrices(&[Mat4::from_rotation_z(0.4), Mat4::from_rotation_x(2.5)]);
        let (pos, nrm) = run(&mesh, &sp);
        let mut pp = vec![Vec3::ZERO; mesh.vertex_count()];
        let mut pn = pp.clone();
        skelett::skin::skin_par(
            &mesh,
            &sp,
            SkinOutput {
                positions: &mut pp,
                normals: Some(&mut pn),
                tangents: None,
            },
            300,
        )
        .unwrap();
        assert_eq!(pos, pp);
        assert_eq!(nrm, pn);
    }
}

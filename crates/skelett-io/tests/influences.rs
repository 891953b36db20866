//! More than 8 influences on a vertex: `.x` and RAM files keep the heaviest 8, renormalised,
//! and say so in a warning naming the mesh and the count (as FBX does); files written here
//! by hand, ten joints weighting one vertex 1, 2, ..., 10.

use std::path::Path;

use skelett_io::Asset;

/// Vertex `corner`'s influences as (joint name, weight), heaviest first.
fn influences(a: &Asset, corner: usize) -> Vec<(String, f32)> {
    let mesh = &a.meshes[0];
    let p = &mesh.primitives[0];
    let skin = &a.skins[mesh.skin];
    (0..p.influences)
        .map(|k| {
            let slot = p.joints[corner * p.influences + k] as usize;
            let joint = skin.joints()[slot];
            (
                a.skeleton.name(joint).to_string(),
                p.weights[corner * p.influences + k],
            )
        })
        .collect()
}

/// The heaviest eight of weights 1..=10 on joints j0..j9: j9..j2, over 52.
fn assert_heaviest_eight(a: &Asset, corner: usize) {
    let got = influences(a, corner);
    assert_eq!(got.len(), 8);
    for (k, (name, w)) in got.iter().enumerate() {
        let j = 9 - k;
        assert_eq!(name, &format!("j{j}"));
        assert!((w - (j + 1) as f32 / 52.0).abs() < 1e-6, "{name}: {w}");
    }
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("1 vertices had more than 8 bone weights")
                && w.contains("8 heaviest were kept")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn a_ram_vertex_with_ten_weights_keeps_the_heaviest_eight() {
    let mut ram = String::from("joints 10\n");
    for j in 0..10 {
        let parent = if j == 0 { -1 } else { 0 };
        ram += &format!(
            "{j} \"j{j}\"\n parent {parent}\n orientation 0 0 0 1\n translation {j} 0 0\n rotation 0 0 0 1\n"
        );
    }
    ram += "vertices 3\n0 0 0 0\n1 1 0 0\n2 0 1 0\nnormals 1\n0 0 0 1\nuvs 1\n0 0 0\n";
    ram += "triangles 1\n0 0 0 1 2 0 0 0 0 0 0\n";
    ram += "weights 12\n";
    for j in 0..10 {
        ram += &format!("{j} 0 {j} \"j{j}\" {}\n", j + 1);
    }
    ram += "10 1 0 \"j0\" 1\n11 2 0 \"j0\" 1\n";
    let a = skelett_io::rite::from_str(&ram, Path::new("ten.ram"), None).unwrap();
    assert_heaviest_eight(&a, 0);
    // Four or fewer stay four slots, without a warning.
    let four = ram.replace("weights 12\n", "weights 6\n");
    let mut lines: Vec<&str> = four.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("weights")).unwrap();
    lines.drain(at + 1..at + 7);
    let a = skelett_io::rite::from_str(&(lines.join("\n") + "\n"), Path::new("four.ram"), None)
        .unwrap();
    assert_eq!(a.meshes[0].primitives[0].influences, 4);
    assert!(a.warnings.iter().all(|w| !w.contains("bone weights")));
}

#[test]
fn a_dot_x_vertex_with_ten_weights_keeps_the_heaviest_eight() {
    let mut x = String::from(
        "xof 0303txt 0032\nFrame j0 {\n FrameTransformMatrix { 1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1;; }\n",
    );
    for j in 1..10 {
        x += &format!(
            " Frame j{j} {{\n  FrameTransformMatrix {{ 1,0,0,0, 0,1,0,0, 0,0,1,0, {j},0,0,1;; }}\n }}\n"
        );
    }
    x += " Mesh Tri {\n  3;\n  0;0;0;,\n  1;0;0;,\n  0;1;0;;\n  1;\n  3;0,1,2;;\n";
    for j in 0..10 {
        let (count, verts, weights) = if j == 0 {
            (3, "0,1,2".to_string(), "1,1,1".to_string())
        } else {
            (1, "0".to_string(), format!("{}", j + 1))
        };
        x += &format!(
            "  SkinWeights {{\n   \"j{j}\";\n   {count};\n   {verts};\n   {weights};\n   1,0,0,0, 0,1,0,0, 0,0,1,0, {},0,0,1;;\n  }}\n",
            -j
        );
    }
    x += " }\n}\n";
    let a = skelett_io::x::from_bytes(x.as_bytes(), Path::new("ten.x")).unwrap();
    assert_heaviest_eight(&a, 0);
}

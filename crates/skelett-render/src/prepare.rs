//! Preparing meshes for drawing, once, at [`crate::Renderer::new`]: what the renderer adds
//! to a mesh that the GPU needs and the file may lack (smooth normals for lighting).

use glam::Vec3;

/// Area-weighted vertex normals from the triangles, for meshes that come without normals
/// (Fox, for one), so they can be lit.
pub(crate) fn smooth_normals(positions: &[Vec3], indices: &[u32]) -> Vec<Vec3> {
    let mut n = vec![Vec3::ZERO; positions.len()];
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [t[0] as usize, t[1] as usize, t[2] as usize];
        if let (Some(&pa), Some(&pb), Some(&pc)) =
            (positions.get(a), positions.get(b), positions.get(c))
        {
            let face = (pb - pa).cross(pc - pa);
            n[a] += face;
            n[b] += face;
            n[c] += face;
        }
    }
    n.iter()
        .map(|v| v.try_normalize().unwrap_or(Vec3::Y))
        .collect()
}

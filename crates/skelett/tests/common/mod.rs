//! What the IK tests share: model matrices of a pose, and random rotations and directions.

#![allow(dead_code)] // each test binary uses its own subset

use glam::{Mat4, Quat, Vec3};
use proptest::prelude::*;
use skelett::{local_to_model, Skeleton, Transform};

/// The model-space matrices of `pose`.
pub fn model_of(skeleton: &Skeleton, pose: &[Transform]) -> Vec<Mat4> {
    let mut model = vec![Mat4::IDENTITY; skeleton.len()];
    local_to_model(skeleton, pose, 0, &mut model).unwrap();
    model
}

/// A model matrix's translation.
pub fn pos(m: &Mat4) -> Vec3 {
    m.w_axis.truncate()
}

/// A random unit quaternion (normalized from a 4D box, away from zero).
pub fn quat() -> impl Strategy<Value = Quat> {
    (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0).prop_filter_map(
        "non-zero",
        |(x, y, z, w)| {
            let q = Quat::from_xyzw(x, y, z, w);
            (q.length() > 0.1).then(|| q.normalize())
        },
    )
}

/// A random unit vector.
pub fn unit() -> impl Strategy<Value = Vec3> {
    (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0)
        .prop_filter_map("non-zero", |(x, y, z)| Vec3::new(x, y, z).try_normalize())
}

/// A file of the repository's `examples/` folder.
pub fn example(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

//! Where skelett's tests and benchmarks find their data: the real third-party assets and the
//! independent reference files in `../shared/data` beside the repository (never copied into
//! it). One definition for every crate's tests and benches; a dev-dependency only.
//!
//! ```
//! let fox = skelett_testdata::data("gltf/Fox.glb");
//! assert!(fox.ends_with("shared/data/gltf/Fox.glb"));
//! ```

use std::path::PathBuf;

/// `../shared/data` beside the repository.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// A file or folder under `../shared/data`, by its path relative to it.
pub fn data(rel: &str) -> PathBuf {
    data_dir().join(rel)
}

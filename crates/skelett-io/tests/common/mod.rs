//! Helpers shared by the integration tests: where the shared data lives, and reading the
//! independent reference files.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/data` beside the repository.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

pub fn data(rel: &str) -> PathBuf {
    data_dir().join(rel)
}

pub fn reference(name: &str) -> serde_json::Value {
    let path = data_dir().join("reference").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (is ../shared beside the repository?)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

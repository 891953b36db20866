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

/// The scaffolding every criterion benchmark shares: the times it samples at and the
/// measurement settings, so that benches differ only in what they measure.
pub mod bench {
    use std::time::Duration;

    /// Criterion with `samples` samples of `seconds` each after half a second of warm-up
    /// (the machine is shared: medians over many short samples are what the notes quote).
    pub fn criterion(samples: usize, seconds: u64) -> criterion::Criterion {
        criterion::Criterion::default()
            .sample_size(samples)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(seconds))
    }

    /// Playback at `hz` frames per second over a clip from `start`, `duration` seconds long:
    /// every frame time, the last one clamped to the clip's end.
    ///
    /// ```
    /// let t = skelett_testdata::bench::forward_times(1.0, 0.6, 4.0);
    /// assert_eq!(t, [1.0, 1.25, 1.5, 1.6]);
    /// ```
    pub fn forward_times(start: f32, duration: f32, hz: f32) -> Vec<f32> {
        let frames = ((duration * hz).ceil() as usize).max(1);
        (0..=frames)
            .map(|i| start + (i as f32 / hz).min(duration))
            .collect()
    }

    /// `count` times spread pseudo-randomly over a clip (xorshift with a fixed seed: the same
    /// times in every run and every benchmark).
    pub fn random_times(start: f32, duration: f32, count: usize) -> Vec<f32> {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        (0..count)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                start + duration * ((s >> 40) as f32 / (1u64 << 24) as f32)
            })
            .collect()
    }
}

//! # skelett for Python
//!
//! The `skelett` Python module (PyO3, built into a wheel by maturin): every format skelett
//! reads, loaded into objects whose data comes out as NumPy arrays, and the work on them done
//! in Rust, in one call per batch, with the GIL released and all cores used.
//!
//! ```text
//! skelett.load(path) ──▶ Asset ──┬─ .skeleton: Skeleton   names, parents, rest pose, FK from arrays
//!   (skelett_io)                 ├─ .clips: [Clip]        sample_local / sample_world / sample_positions
//!                                ├─ .skins, .meshes       arrays; Asset.skin(mesh, clip, times)
//!                                └─ save / compress / with_clips / pickling (.skl bytes)
//! skelett.Animator(skeleton)     play, cross-fade, layers, events, root motion
//! ```
//!
//! Data flow: files → `skelett_io` readers → [`asset::Asset`] (shared, immutable: `Arc`s of
//! the Rust asset) → batch functions in [`clip`] and [`asset`] that sample, compose and skin
//! with `rayon` over the requested times → NumPy arrays (C-contiguous, float32) owned by
//! Python. Errors from skelett's typed errors become `skelett.SkelettError` (with the file,
//! place and cause the Rust error names) or `FileNotFoundError`; bad arguments (shapes,
//! NaN times, unknown names) `ValueError` or `TypeError`.
//!
//! Conventions, as the Python docs (`skelett.pyi`) state them: a local transform is 10
//! floats, `[tx, ty, tz, qx, qy, qz, qw, sx, sy, sz]`; a matrix is 4x4 for column vectors
//! (`M @ [x, y, z, 1]`, translation in `M[:3, 3]`); world matrices and positions are in the
//! scene space of the file (the skeleton's root transform applied).

use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;

mod animator;
mod asset;
mod clip;

pyo3::create_exception!(
    skelett,
    SkelettError,
    pyo3::exceptions::PyException,
    "A file skelett cannot read or write, or data that does not fit: the message names the \
     file, the place in it and what was expected."
);

/// A skelett_io error as a Python exception: a missing file is `FileNotFoundError`, anything
/// else `SkelettError`, with skelett's message (file, place, cause).
pub(crate) fn io_error(e: skelett_io::Error) -> PyErr {
    if let skelett_io::Error::Io { source, .. } = &e {
        if source.kind() == std::io::ErrorKind::NotFound {
            return PyFileNotFoundError::new_err(e.to_string());
        }
    }
    SkelettError::new_err(e.to_string())
}

/// A runtime error (a clip of another skeleton, a layer that is not there): `ValueError`,
/// since it comes from the arguments.
pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// rayon's thread pool for this process. Python's `fork` (multiprocessing's default start
/// method on Linux before 3.14) copies a process without its threads: a child that used the
/// parent's pool would wait forever for workers that do not exist there. So the pool is made
/// per process id, and a child makes its own on first use (the parent's copy is leaked in
/// the child, never dropped: dropping it would signal threads that are not there).
pub(crate) fn pool() -> PyResult<std::sync::Arc<rayon::ThreadPool>> {
    use std::sync::{Arc, Mutex};
    static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, pool)) = slot.as_ref() {
        if *p == pid {
            return Ok(pool.clone());
        }
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("skelett-{i}"))
            .build()
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?,
    );
    if let Some(old) = slot.replace((pid, pool.clone())) {
        std::mem::forget(old);
    }
    Ok(pool)
}

/// The module.
#[pymodule(name = "skelett")]
fn skelett_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SkelettError", m.py().get_type::<SkelettError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<asset::Asset>()?;
    m.add_class::<asset::Skeleton>()?;
    m.add_class::<asset::Skin>()?;
    m.add_class::<asset::Mesh>()?;
    m.add_class::<clip::Clip>()?;
    m.add_class::<animator::Animator>()?;
    m.add_function(wrap_pyfunction!(asset::load, m)?)?;
    m.add_function(wrap_pyfunction!(asset::load_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(asset::convert, m)?)?;
    m.add_function(wrap_pyfunction!(asset::from_skl_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(clip::clip_from_skl_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(clip::joint_map, m)?)?;
    m.add_function(wrap_pyfunction!(asset::skeleton_from_skl_bytes, m)?)?;
    Ok(())
}

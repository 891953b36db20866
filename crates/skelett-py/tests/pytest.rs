//! Runs the Python package's tests (`tests/test_*.py`, pytest) as part of `cargo test`, in the
//! virtual environment `scripts/setup.sh` makes at `.venv-py` with the package built from this
//! checkout (`maturin develop --release`). Without that environment the test says how to make
//! it and passes, unless `SKELETT_REQUIRE_PYTHON=1` (set by `.ci/run`) makes it a failure. A
//! package older than its sources is a failure too: it would test yesterday's code.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The newest modification time of the Rust sources the package is built from.
fn newest_source(dirs: &[PathBuf]) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack: Vec<PathBuf> = dirs.to_vec();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
                    newest = newest.max(t);
                }
            }
        }
    }
    newest
}

#[test]
fn the_python_package_passes_its_tests() {
    let repo = repo();
    let python = repo.join(".venv-py/bin/python");
    let required = std::env::var("SKELETT_REQUIRE_PYTHON").is_ok_and(|v| v == "1");
    if !python.exists() {
        let msg = format!(
            "{} is missing: run scripts/setup.sh to make the Python environment and build the \
             package",
            python.display()
        );
        assert!(!required, "{msg}");
        eprintln!("skipped: {msg}");
        return;
    }
    // Where the installed module is, and whether it is as new as the sources.
    let out = Command::new(&python)
        .args(["-c", "import skelett; print(skelett.__file__)"])
        .output()
        .expect("run the environment's python");
    assert!(
        out.status.success(),
        "the package is not installed in .venv-py (run scripts/setup.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let module = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let built = std::fs::metadata(&module)
        .and_then(|m| m.modified())
        .expect("the module's file");
    let crates = repo.join("crates");
    let sources = newest_source(&[
        crates.join("skelett-py/src"),
        crates.join("skelett/src"),
        crates.join("skelett-io/src"),
    ]);
    assert!(
        built >= sources,
        "{} is older than the Rust sources: run scripts/setup.sh (it rebuilds the package)",
        module.display()
    );
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "crates/skelett-py/tests"])
        .current_dir(&repo)
        .status()
        .expect("run pytest");
    assert!(status.success(), "pytest failed (its report is above)");
}

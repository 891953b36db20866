#!/usr/bin/env bash
# One-time set-up for the demo and the tests on a fresh Debian/Ubuntu machine; safe to rerun.
#  - Mesa's software Vulkan (lavapipe), so the offscreen renderer has an adapter on any
#    machine (a real GPU's driver, when present, is preferred);
#  - the Khronos glTF validator (npm), which the glTF export tests run on every file they write.
set -euo pipefail
cd "$(dirname "$0")/.."

# Mesa's software Vulkan and the loader. Checked by file, not by any ICD: a GPU driver's
# ICD can be present in a container that has no device, and lavapipe beside a real GPU is
# harmless (wgpu prefers the real one).
have_lavapipe() {
  compgen -G '/usr/share/vulkan/icd.d/lvp_icd*.json' >/dev/null &&
    compgen -G '/usr/lib/*/libvulkan.so.1' >/dev/null
}

if ! have_lavapipe; then
  echo "== installing Mesa's software Vulkan (mesa-vulkan-drivers libvulkan1)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi

if [ ! -d .ci/validator/node_modules/gltf-validator ]; then
  echo "== installing the Khronos glTF validator (npm)"
  (cd .ci/validator && npm install --no-audit --no-fund --no-package-lock >/dev/null)
fi

# The Python package (crates/skelett-py): a virtual environment with maturin and the test
# dependencies, and the package built from this checkout into it (maturin is incremental: a
# rerun with unchanged sources takes seconds). `cargo test` runs its pytest suite there.
if [ ! -x .venv-py/bin/python ]; then
  echo "== making the Python environment .venv-py (maturin, numpy, pytest, mypy, dask, bvhio)"
  if ! python3 -m venv .venv-py 2>/dev/null; then
    # Debian's Python needs its venv module from apt.
    rm -rf .venv-py
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv .venv-py
  fi
  .venv-py/bin/pip install -q --upgrade pip
  .venv-py/bin/pip install -q -r crates/skelett-py/requirements-dev.txt
fi
echo "== building the skelett Python package into .venv-py"
VIRTUAL_ENV="$PWD/.venv-py" PATH="$PWD/.venv-py/bin:$PATH" \
  maturin develop --release -q -m crates/skelett-py/Cargo.toml

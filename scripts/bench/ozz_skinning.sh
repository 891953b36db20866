#!/usr/bin/env bash
# Builds scripts/bench/ozz_skinning.cc against ozz-animation's sources (tag 0.16.0) with ozz's
# Release flags (-O3, SSE2 baseline), writes the cases of skelett's skinning bench and runs
# ozz's SkinningJob on them. Usage, from the repository root: ozz_skinning.sh OZZ_SRC [BUILD_DIR]
# The skinning job needs only its own source and ozz's math: no cmake.
set -euo pipefail
OZZ_SRC=$(realpath "${1:?OZZ_SRC: ozz-animation source tree, tag 0.16.0}")
BUILD=$(realpath -m "${2:-/tmp/ozz_skinning_build}")
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$BUILD/cases"
g++ -std=c++17 -O3 -DNDEBUG -Wno-ignored-attributes -I"$OZZ_SRC/include" -I"$OZZ_SRC/src" \
  "$HERE/ozz_skinning.cc" \
  "$OZZ_SRC/src/geometry/runtime/skinning_job.cc" \
  "$OZZ_SRC/src/base/maths/simd_math.cc" \
  -o "$BUILD/ozz_skinning"
# The bench writes its cases before measuring; filtering to a row that does not exist skips
# the measuring.
SKELETT_SKIN_CASES="$BUILD/cases" cargo bench -q -p skelett --bench skinning -- write-cases-only >/dev/null
"$BUILD/ozz_skinning" "$BUILD"/cases/*.bin

#!/usr/bin/env bash
# Builds scripts/bench/ozz_ik_bench.cc against ozz-animation's sources (tag 0.16.0) with
# ozz's Release flags (-O3, SSE2 baseline) and runs it. Usage: ozz_ik_bench.sh OZZ_SRC [BUILD_DIR]
# The IK jobs need only their own sources and ozz's math: no cmake.
set -euo pipefail
OZZ_SRC=$(realpath "${1:?OZZ_SRC: ozz-animation source tree, tag 0.16.0}")
BUILD=$(realpath -m "${2:-/tmp/ozz_ik_build}")
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$BUILD"
g++ -std=c++17 -O3 -DNDEBUG -Wno-ignored-attributes -I"$OZZ_SRC/include" -I"$OZZ_SRC/src" \
  "$HERE/ozz_ik_bench.cc" \
  "$OZZ_SRC/src/animation/runtime/ik_two_bone_job.cc" \
  "$OZZ_SRC/src/animation/runtime/ik_aim_job.cc" \
  "$OZZ_SRC/src/base/maths/simd_math.cc" \
  -o "$BUILD/ozz_ik_bench"
"$BUILD/ozz_ik_bench"

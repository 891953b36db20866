#!/usr/bin/env bash
# Builds scripts/bench/ozz_skinning.cc against ozz-animation's sources (tag 0.16.0) with ozz's
# Release flags (-O3, SSE2 baseline) and again with AVX2 and FMA; writes the cases of
# skelett's skinning bench and runs ozz's SkinningJob (both builds) on them.
# Usage, from the repository root: ozz_skinning.sh OZZ_SRC [BUILD_DIR]
# The skinning job needs only its own source and ozz's math: no cmake.
set -euo pipefail
OZZ_SRC=$(realpath "${1:?OZZ_SRC: ozz-animation source tree, tag 0.16.0}")
BUILD=$(realpath -m "${2:-/tmp/ozz_skinning_build}")
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$BUILD/cases"
# Twice: for ozz's SSE2 baseline (as its releases are built) and with AVX2 and FMA, which
# ozz's maths uses when the compiler enables them (the instructions skelett's kernel uses).
for build in sse2 avx2_fma; do
  flags=""
  [ "$build" = avx2_fma ] && flags="-mavx2 -mfma"
  g++ -std=c++17 -O3 -DNDEBUG $flags -DBUILD_NAME="\"$build\"" -Wno-ignored-attributes \
    -I"$OZZ_SRC/include" -I"$OZZ_SRC/src" \
    "$HERE/ozz_skinning.cc" \
    "$OZZ_SRC/src/geometry/runtime/skinning_job.cc" \
    "$OZZ_SRC/src/base/maths/simd_math.cc" \
    -o "$BUILD/ozz_skinning_$build"
done
# The bench writes its cases before measuring; filtering to a row that does not exist skips
# the measuring.
SKELETT_SKIN_CASES="$BUILD/cases" cargo bench -q -p skelett --bench skinning -- write-cases-only >/dev/null
"$BUILD/ozz_skinning_sse2" "$BUILD"/cases/*.bin
"$BUILD/ozz_skinning_avx2_fma" "$BUILD"/cases/*.bin

#!/usr/bin/env bash
# Builds scripts/bench/acl_compare.cc against ACL's sources (tag v2.1.0 with the rtm commit
# its submodule names) with -O3, for the SSE2 baseline and with AVX2 and FMA; writes the CMU
# clips from skelett's compression bench (which also prints skelett's compression time) and
# runs both ACL builds on them. Usage, from the repository root: acl_compare.sh ACL_SRC [BUILD_DIR]
#   ACL_SRC   ACL's source tree: includes/ from nfrechette/acl v2.1.0 and, under
#             external/rtm/includes/, nfrechette/rtm at commit d7982f2b (the submodule's);
#             with the search tool's fetch:
#               git --git-dir=ACL_GIT archive v2.1.0 -- includes | tar x -C ACL_SRC
#               git --git-dir=RTM_GIT archive d7982f2b2524feeb322f424b29cf43df30b5d5b7 -- includes \
#                 | tar x -C ACL_SRC/external/rtm
# ACL is header-only: no cmake.
set -euo pipefail
ACL_SRC=$(realpath "${1:?ACL_SRC: ACL source tree (see the header)}")
BUILD=$(realpath -m "${2:-/tmp/acl_compare_build}")
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$BUILD/cases"
# Twice: the SSE2 baseline and AVX2 with FMA (which ACL's maths library, rtm, uses when the
# compiler enables them).
for build in sse2 avx2_fma; do
  flags=""
  [ "$build" = avx2_fma ] && flags="-mavx2 -mfma"
  g++ -std=c++17 -O3 -DNDEBUG $flags -DBUILD_NAME="\"$build\"" -Wno-ignored-attributes \
    -I"$ACL_SRC/includes" -I"$ACL_SRC/external/rtm/includes" \
    "$HERE/acl_compare.cc" -o "$BUILD/acl_compare_$build"
done
# The bench writes its cases and times skelett's compression before measuring; filtering to
# a row that does not exist skips the measuring. Twice: on one thread (as ACL compresses),
# and with the `rayon` feature on all of the machine's cores.
SKELETT_ACL_CASES="$BUILD/cases" cargo bench -q -p skelett --bench compress -- write-cases-only | grep '^{'
SKELETT_ACL_CASES="$BUILD/cases" cargo bench -q -p skelett --features rayon --bench compress -- write-cases-only | grep '^{'
"$BUILD/acl_compare_sse2" "$BUILD/cases"/*.bin
"$BUILD/acl_compare_avx2_fma" "$BUILD/cases"/*.bin

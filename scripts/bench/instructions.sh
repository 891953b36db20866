#!/usr/bin/env bash
# Instructions per item of skelett's runtime, counted by callgrind (deterministic where timings
# on a shared machine are not): runs `cost_probe` (crates/skelett-io/examples) with two counts
# and prints the difference per item, so the loading drops out.
#
# Usage, from anywhere (needs valgrind; ../shared/data beside the repository):
#   scripts/bench/instructions.sh updates [blocks|rows|one|palette]   # per character update
#   scripts/bench/instructions.sh samples FILE CLIP_INDEX     # per forward sample, keyed and lanes
#   scripts/bench/instructions.sh skin FILE                   # per vertex: linear and dual
#                                                             # quaternions, mixed and four influences
# FILE is taken relative to the directory the script is run from. BIN=path runs a copy of the
# example built elsewhere (e.g. before a change); without it the example is built here, into
# CARGO_TARGET_DIR where that is set.
set -euo pipefail
# A failing probe inside $(...) stops the script too.
shopt -s inherit_errexit
usage() { sed -n '2,13p' "$0" >&2; exit 2; }
# An absolute path for FILE before the script moves to the repository root.
absolute() { [ -e "$1" ] || { echo "instructions.sh: no file $1" >&2; exit 1; }; realpath "$1"; }
mode=${1:-}
case "$mode" in
  updates) ;;
  samples) [ $# -ge 3 ] || usage; file=$(absolute "$2"); clip=$3 ;;
  skin) [ $# -ge 2 ] || usage; file=$(absolute "$2") ;;
  *) usage ;;
esac
cd "$(dirname "$0")/../.."
DATA=${DATA:-../shared/data}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p skelett-io --example cost_probe
  BIN=${CARGO_TARGET_DIR:-target}/release/examples/cost_probe
fi
[ -x "$BIN" ] || { echo "instructions.sh: no program $BIN" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Instructions callgrind counts for `cost_probe ARGS...`; stops the script when the probe fails.
count() {
  if ! valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" "$@" >"$log" 2>&1; then
    grep -v '^==' "$log" >&2
    echo "instructions.sh: cost_probe $* failed" >&2
    exit 1
  fi
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log"
}
# Instructions per item of `cost_probe ARGS...` where the argument "N" is the count:
# (count at HI - count at LO) / (HI - LO).
per_item() {
  local lo=$1 hi=$2; shift 2
  local with_lo=() with_hi=() x a b
  for x in "$@"; do
    if [ "$x" = N ]; then with_lo+=("$lo"); with_hi+=("$hi"); else with_lo+=("$x"); with_hi+=("$x"); fi
  done
  a=$(count "${with_lo[@]}")
  b=$(count "${with_hi[@]}")
  echo $(( (b - a) / (hi - lo) ))
}
case "$mode" in
  updates)
    m=${2:-blocks}
    for spec in "robot_quaternius.glb Robot_Walking Robot_Running" "Fox.glb Walk Run" "CesiumMan.glb 0 0"; do
      set -- $spec
      per=$(per_item 1000 3000 updates "$DATA/gltf/$1" "$2" "$3" N "$m")
      echo "$1 ($m): $per instructions per update"
    done
    ;;
  samples)
    for m in keyed lanes; do
      per=$(per_item 1000 3000 samples "$file" "$clip" N "$m")
      echo "$(basename "$file") clip $clip ($m): $per instructions per sample"
    done
    ;;
  skin)
    out=$("$BIN" skin "$file" 1)
    vertices=${out%% *}
    for method in linear dual; do
      for inf in mixed four; do
        per=$(per_item 10 30 skin "$file" N "$method" "$inf")
        echo "$(basename "$file") ($method, $inf influences): $per instructions per skinning, $(( per * 100 / vertices ))/100 per vertex"
      done
    done
    ;;
esac

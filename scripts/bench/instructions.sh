#!/usr/bin/env bash
# Instructions per item of skelett's runtime, counted by callgrind (deterministic where timings
# on a shared machine are not): runs `cost_probe` (crates/skelett-io/examples) with two counts
# and prints the difference per item, so the loading drops out.
#
# Usage, from the repository root (needs valgrind; ../shared/data beside it):
#   scripts/bench/instructions.sh updates [blocks|rows|one]   # per character update, 3 assets
#   scripts/bench/instructions.sh samples FILE CLIP           # per forward sample, keyed and lanes
# BIN=path runs a copy of the example built elsewhere (e.g. before a change).
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${DATA:-../shared/data}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p skelett-io --example cost_probe
  BIN=target/release/examples/cost_probe
fi
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" "$@" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
# Instructions of `cost_probe ARGS... N MODE` per item: (count at 3000 - count at 1000) / 2000.
per_item() {
  local mode=$1; shift
  local lo hi
  lo=$(count "$@" 1000 "$mode")
  hi=$(count "$@" 3000 "$mode")
  echo $(( (hi - lo) / 2000 ))
}
case "${1:-}" in
  updates)
    mode=${2:-blocks}
    for spec in "robot_quaternius.glb Robot_Walking Robot_Running" "Fox.glb Walk Run" "CesiumMan.glb 0 0"; do
      set -- $spec
      echo "$1 ($mode): $(per_item "$mode" updates "$DATA/gltf/$1" "$2" "$3") instructions per update"
    done
    ;;
  samples)
    file=$2; clip=$3
    for mode in keyed lanes; do
      echo "$(basename "$file") clip $clip ($mode): $(per_item "$mode" samples "$file" "$clip") instructions per sample"
    done
    ;;
  *)
    sed -n '2,9p' "$0"
    exit 1
    ;;
esac

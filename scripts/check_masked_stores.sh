#!/usr/bin/env bash
# Fails if skelett's code in a binary holds masked vector stores: `vmaskmovps`, `vmaskmovpd`,
# `vpmaskmovd` or `vpmaskmovq` with a register mask and a memory destination (the forms a
# compiler makes from a load, blend and store; `maskmovdqu`, whose destination is implicit,
# is not looked for). AMD's Zen cores run them in microcode: on the build machine (a Zen 3)
# one masked 256-bit store took 6.0 ns where a load, blend and store took 1.6, and LLVM makes
# them from a plain load, blend and store of one address (see `store_lanes` in
# crates/skelett/src/play/sampling/lanes.rs, which reads the row with a volatile load so that
# it does not). Masked loads are not slow and are allowed.
#
# Usage: scripts/check_masked_stores.sh [BINARY]   (default: the release `skelett` program in
# cargo's target directory)
set -euo pipefail
if [ $# -ge 1 ]; then
  bin=$1
else
  target=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  bin=$target/release/skelett
fi
[ -x "$bin" ] || { echo "check_masked_stores.sh: no binary $bin" >&2; exit 2; }
# AT&T syntax: the store form is `vmaskmovps %ymmSRC,%ymmMASK,MEM`, the load form ends in a
# register.
# Only skelett's own functions (and generic code instantiated for its types, whose names
# mention it) count: a dependency's kernel (the viewer's font rasteriser has one) is not
# ours to change.
found=$(objdump -d --no-show-raw-insn -C "$bin" | awk '
  /^[0-9a-f]+ <.*>:$/ { fn = $0 }
  fn ~ /skelett/ && /v(p)?maskmov(ps|pd|d|q)[ \t]+%[xy]mm[0-9]+,%[xy]mm[0-9]+,[^%]/ { n[fn]++ }
  END { for (f in n) print n[f], f }')
if [ -n "$found" ]; then
  echo "masked vector stores in $bin (count, function):" >&2
  echo "$found" >&2
  exit 1
fi
echo "no masked vector stores in $bin"

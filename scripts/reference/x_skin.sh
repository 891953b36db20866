#!/bin/sh
# x_skin.sh: skinned-vertex references of the skinned DirectX .x files, by assimp + three.js.
#
# Writes crates/skelett-io/tests/reference/x_skin/<FILE>.skin.json for each file below.
# Needs assimp 5.2.5 (Debian: apt-get install -y assimp-utils), Node 20 and three 0.187.0 in
# $THREE_ORACLE_DIR (default /tmp/three_oracle; made with
#   mkdir -p /tmp/three_oracle && cd /tmp/three_oracle && npm init -y && npm install three@0.187.0).
# Run from anywhere: sh scripts/reference/x_skin.sh
#
# Each .x file is converted with `assimp export FILE.x FILE.glb -fglb2` (no post-processing
# flags) into a temporary directory, then scripts/reference/three_x_skin.mjs samples it (its
# header comment says what it computes).
#
# anim_test.x is not done: it has SkinWeights for joint3 and joint4, bones that have no Frame
# in the file, and assimp 5.2.5's glTF 2 exporter segfaults on it (so does its FBX exporter).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
data=${X_DATA_DIR:-$repo/../shared/data/x}
outdir=$repo/crates/skelett-io/tests/reference/x_skin
oracle=${THREE_ORACLE_DIR:-/tmp/three_oracle}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ASSIMP_VERSION=$(dpkg-query -W -f '${Version}' libassimp5 2>/dev/null | sed 's/~.*//') ||
	ASSIMP_VERSION=$(assimp version 2>/dev/null | sed -n 's/.*Version \([0-9][0-9.]*\).*/\1/p' | head -n 1)
export ASSIMP_VERSION
export THREE_ORACLE_DIR="$oracle"

for f in BCN_Epileptic.X Testwuson.X; do
	assimp export "$data/$f" "$tmp/$f.glb" -fglb2 >"$tmp/$f.log" 2>&1 || { cat "$tmp/$f.log"; exit 1; }
	(cd "$oracle" && node "$here/three_x_skin.mjs" "$tmp/$f.glb" "$outdir/$f.skin.json" "$f")
done

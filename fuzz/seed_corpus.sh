#!/usr/bin/env bash
# Seeds fuzz/corpus/<target> from ../shared/data (not committed: the corpus is derived data).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data="$here/../../shared/data"
mkdir -p "$here/corpus/gltf_import" "$here/corpus/bvh_import" "$here/corpus/native_import" "$here/corpus/x_import"
cp "$data"/x/*.x "$data"/x/*.X "$here/corpus/x_import/" 2>/dev/null || true
# Binary and compressed .x: the shared cubes and trueSpace mesh, and the text files encoded
# by the x_binary test (cargo test -p skelett-io --test x_binary writes them), each without
# its 16-byte header behind a first byte that picks the form (even: 0032 / bzip).
mkdir -p "$here/corpus/x_binary_import" "$here/corpus/x_compressed_import"
(cd "$here/.." && cargo test -q -p skelett-io --test x_binary >/dev/null)
enc="$here/../target/tmp/x_encoded"
for f in "$data"/xbin/test_cube_binary.x "$data"/xbin/fromtruespace_bin32.x "$enc"/*.bin32.x; do
  { printf '\x00'; tail -c +17 "$f"; } > "$here/corpus/x_binary_import/$(basename "$f")"
done
for f in "$enc"/*.bin64.x; do
  { printf '\x01'; tail -c +17 "$f"; } > "$here/corpus/x_binary_import/$(basename "$f")"
done
for f in "$data"/xbin/test_cube_compressed.x "$enc"/*.bzip.x; do
  { printf '\x00'; tail -c +17 "$f"; } > "$here/corpus/x_compressed_import/$(basename "$f")"
done
for f in "$enc"/*.tzip.x; do
  { printf '\x01'; tail -c +17 "$f"; } > "$here/corpus/x_compressed_import/$(basename "$f")"
done
mkdir -p "$here/corpus/fbx_import"
cp "$data"/fbx/*.fbx "$data"/morph/*.fbx "$here/corpus/fbx_import/"
# Maya in-between blend shapes (ufbx's test file, kept with its Maya OBJ references).
inb="$here/../crates/skelett-io/tests/reference/maya_blend_inbetween/maya_blend_inbetween_7500_binary.fbx"
cp "$inb" "$here/corpus/fbx_import/"
# A stepped variant (cubic keys made constant), for the step handling.
sed 's/a: 24840/a: 2/' "$data/fbx/maya_game_sausage_7500_ascii_wiggle.fbx" \
  > "$here/corpus/fbx_import/maya_stepped.fbx"
cp "$data"/gltf/*.glb "$data"/gltf/*.gltf "$data"/morph/*.glb "$here/corpus/gltf_import/"
# Whole captures are megabytes; seed with their hierarchies and a few frames as well.
for f in "$data"/bvh/*.bvh; do
  cp "$f" "$here/corpus/bvh_import/"
  awk '/^Frames:/{print "Frames: 3"; next} {print} /^Frame Time/{n=NR} n && NR>n+3{exit}' "$f" \
    > "$here/corpus/bvh_import/$(basename "$f" .bvh)_short.bvh"
done
# .skl files made from the shared assets by the CLI (built first).
cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
  convert "$data/gltf/Fox.glb" "$here/corpus/native_import/Fox.skl" >/dev/null
cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
  convert "$data/gltf/CesiumMan_cubic.glb" "$here/corpus/native_import/CesiumMan_cubic.skl" >/dev/null
# Morph targets and weight tracks (version 3).
for f in MorphStressTest AnimatedMorphSphere; do
  cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
    convert "$data/morph/$f.glb" "$here/corpus/native_import/$f.skl" >/dev/null
done
# In-between shapes (version 4: per-target full weights).
cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
  convert "$inb" "$here/corpus/native_import/maya_blend_inbetween.skl" >/dev/null
# Compressed clips (compact data, version 2).
for f in gltf/RiggedFigure.glb gltf/Fox.glb; do
  cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
    compress "$data/$f" "$here/corpus/native_import/$(basename "$f" .glb)_compact.skl" >/dev/null
done
# A dense mocap clip compressed (order-2 prediction, sparse and dense segments): the first
# 100 frames of a CMU capture.
tmp=$(mktemp -d)
awk '/^Frames:/{print "Frames: 100"; next} {print} /^Frame Time/{n=NR} n && NR>n+100{exit}' \
  "$data/bvh/01_01.bvh" > "$tmp/01_01_100.bvh"
cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
  compress "$tmp/01_01_100.bvh" "$here/corpus/native_import/01_01_100_compact.skl" \
  --cm-per-unit 6.822 >/dev/null
# The same two in the seekable layout (version 6, clip kind 2).
cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
  compress "$tmp/01_01_100.bvh" "$here/corpus/native_import/01_01_100_seekable.skl" \
  --cm-per-unit 6.822 --seekable >/dev/null
cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
  compress "$data/gltf/RiggedFigure.glb" "$here/corpus/native_import/RiggedFigure_seekable.skl" \
  --seekable >/dev/null
# And in the lanes layout (version 7, clip kind 3).
cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
  compress "$tmp/01_01_100.bvh" "$here/corpus/native_import/01_01_100_lanes.skl" \
  --cm-per-unit 6.822 --lanes >/dev/null
for f in RiggedFigure Fox; do
  cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
    compress "$data/gltf/$f.glb" "$here/corpus/native_import/${f}_lanes.skl" --lanes >/dev/null
done
rm -rf "$tmp"
# RAM + NUL + RAA pairs written by the CLI, in the article's layout and the counted one, and
# the article's layout without its headings.
mkdir -p "$here/corpus/rite_import"
tmp=$(mktemp -d)
for f in "$data/gltf/RiggedSimple.glb" "$data/gltf/Fox.glb"; do
  n=$(basename "$f" .glb)
  cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- convert "$f" "$tmp/$n.ram" >/dev/null
  { cat "$tmp/$n.ram"; printf '\0'; cat "$tmp/$n.raa"; } > "$here/corpus/rite_import/$n"
  { grep -v '^[A-Z]' "$tmp/$n.ram"; printf '\0'; cat "$tmp/$n.raa"; } > "$here/corpus/rite_import/${n}_bare"
  cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- convert "$f" "$tmp/$n.ram" --ram-counts >/dev/null
  { cat "$tmp/$n.ram"; printf '\0'; cat "$tmp/$n.raa"; } > "$here/corpus/rite_import/${n}_counted"
done
rm -rf "$tmp"
# Joint maps as `skelett retarget --print-map` writes them, for three pairs.
mkdir -p "$here/corpus/retarget_map"
for t in gltf/robot_quaternius.glb gltf/KayKit_Rig_Medium_General.glb fbx/blender_293_barbarian_7400_binary.fbx; do
  cargo run -q --release --manifest-path "$here/../Cargo.toml" -p skelett-cli -- \
    retarget "$data/bvh/01_01.bvh" "$data/$t" --print-map \
    > "$here/corpus/retarget_map/$(basename "$t").json"
done
# Animation graphs: the repository's examples (the robot's is built against the target's
# asset; the others exercise the parser and validation).
mkdir -p "$here/corpus/graph_file"
cp "$here"/../examples/*.graph.json "$here/corpus/graph_file/"
# Every writer round trip starts from the .skl files above.
mkdir -p "$here/corpus/writers_round_trip"
cp "$here/corpus/native_import/"*.skl "$here/corpus/writers_round_trip/"
# Play scripts: the repository's (the Fox's runs to its end; the others name joints and
# clips the Fox lacks, which exercises the checks) and the README's.
mkdir -p "$here/corpus/play_script"
cp "$here"/../scripts/*.json "$here"/../examples/*.script.json "$here/corpus/play_script/"
awk '/^### `skelett play` scripts/{s=1} s&&/^```json/{p=1;next} p&&/^```/{exit} p' \
  "$here/../README.md" > "$here/corpus/play_script/readme.json"

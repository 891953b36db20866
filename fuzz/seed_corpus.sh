#!/usr/bin/env bash
# Seeds fuzz/corpus/<target> from ../shared/data (not committed: the corpus is derived data).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data="$here/../../shared/data"
mkdir -p "$here/corpus/gltf_import"
cp "$data"/gltf/*.glb "$data"/gltf/*.gltf "$here/corpus/gltf_import/"

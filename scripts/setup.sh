#!/usr/bin/env bash
# One-time set-up for the demo and the tests on a fresh Debian/Ubuntu machine; safe to rerun.
#  - a Vulkan driver for the offscreen renderer: Mesa's software Vulkan (lavapipe) when the
#    machine has no Vulkan driver at all (a real GPU's driver is used when present);
#  - the Khronos glTF validator (npm), which the glTF export tests run on every file they write.
set -euo pipefail
cd "$(dirname "$0")/.."

have_vulkan_driver() {
  compgen -G '/usr/share/vulkan/icd.d/*.json' >/dev/null || compgen -G '/etc/vulkan/icd.d/*.json' >/dev/null || return 1
  ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'
}

if ! have_vulkan_driver; then
  echo "== installing Mesa's software Vulkan (mesa-vulkan-drivers libvulkan1)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi

if [ ! -d .ci/validator/node_modules/gltf-validator ]; then
  echo "== installing the Khronos glTF validator (npm)"
  (cd .ci/validator && npm install --no-audit --no-fund --no-package-lock >/dev/null)
fi

#!/usr/bin/env bash
# Installs what building and testing need on Debian: a Vulkan loader and Mesa's lavapipe (software
# Vulkan), so the GPU tests run without a GPU.
set -euo pipefail
if ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || ! ldconfig -p | grep -q libvulkan.so.1; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi
command -v cargo >/dev/null || { echo "cargo is needed (rustup)" >&2; exit 1; }

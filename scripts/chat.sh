#!/usr/bin/env bash
# Chats with the default model: installs what is missing, fetches the model, builds and runs `wick chat`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-model.sh
[ "$(uname)" = Linux ] && export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
cargo build --release -p wick-cli
exec target/release/wick chat "$@"

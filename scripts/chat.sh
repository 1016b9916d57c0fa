#!/usr/bin/env bash
# Chats with the default model: installs what is missing, fetches the model, builds and runs `wick chat`.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "wick: checking for a Vulkan driver (installs Mesa's lavapipe on Debian where none is found)" >&2
scripts/install-deps.sh
echo "wick: fetching the default model (97 MB, once)" >&2
scripts/fetch-model.sh
[ "$(uname)" = Linux ] && export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
echo "wick: building the CLI (the first time: 5 to 8 minutes on 2 cores)" >&2
cargo build --release -p wick-cli
exec target/release/wick chat "$@"

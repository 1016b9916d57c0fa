#!/usr/bin/env bash
# Runs every test: kernels against CPU references, quant formats against goldens, the tokenizer and chat
# templates against llama.cpp's goldens, and the real model's greedy output against llama.cpp's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-model.sh
[ "$(uname)" = Linux ] && export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
chmod 700 "$XDG_RUNTIME_DIR"
cargo test --release --workspace "$@"

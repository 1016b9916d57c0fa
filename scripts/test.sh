#!/usr/bin/env bash
# Runs every test: kernels against CPU references, quant formats against goldens, the tokenizer and chat
# templates against llama.cpp's goldens, the real model's greedy output and perplexity against llama.cpp's,
# and `wick serve` against the official openai client.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-model.sh
export WICK_TEST_PYTHON=${WICK_TEST_PYTHON:-$(scripts/test-python.sh)}
[ "$(uname)" = Linux ] && export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
chmod 700 "$XDG_RUNTIME_DIR"
cargo test --release --workspace --no-fail-fast "$@"

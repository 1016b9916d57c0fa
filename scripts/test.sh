#!/usr/bin/env bash
# Runs every test: the code's formatting (rustfmt), kernels against CPU references, quant formats
# against goldens, the tokenizer and chat templates against llama.cpp's goldens, the real model's
# greedy output and perplexity against llama.cpp's, `wick serve` against the official openai client,
# the kernels on matrix cores on a newer lavapipe (scripts/test-matrix-cores.sh; as root on Linux,
# WICK_MATRIX_CORE_TESTS=off skips them), and beside them the browser tests (the chat page and the
# npm package in headless Chromium on WebGPU), whose output comes last. Arguments go to `cargo test`;
# WICK_BROWSER_TESTS=filter runs only the browser tests whose names contain it, WICK_BROWSER_TESTS=off
# none.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each part says how long it took: CI has an hour, and on 2 CPU cores the parts share it unevenly.
started=$SECONDS
took() { echo "test.sh: $1 took $((SECONDS - started)) s"; started=$SECONDS; }
scripts/install-deps.sh
scripts/fetch-model.sh all # the default model, and the Gemma 3 and Qwen2.5 files tests/families.rs reads
export WICK_TEST_PYTHON=${WICK_TEST_PYTHON:-$(scripts/test-python.sh)}
[ "$(uname)" = Linux ] && export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
# A clean clone builds once: incremental compilation's bookkeeping only slows that build down.
[ "${CI:-}" = true ] && export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
# The CLI tunes new kernel shapes once and keeps them; the tests start from none and keep nothing.
export WICK_TUNING=${WICK_TUNING:-$(mktemp -d)/tuning.json}
chmod 700 "$XDG_RUNTIME_DIR"
took "installing and fetching"

status=0
browser=${WICK_BROWSER_TESTS:-}
if [ "$browser" != off ] && [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

# The browser's part runs beside the native build and tests, its output kept until they end: the
# browser build (wasm with one codegen unit and LTO: long stretches on one core) beside the native
# build, then the browser tests beside the native tests once the native engine they compare each
# page's reply with is built. Alone, a page's JavaScript and loads left a fifth to two fifths of the
# two cores idle.
native_built=$(mktemp -d)/native-built
browser_part() {
  local began=$SECONDS
  scripts/build-web.sh > target/build-web.log 2>&1 || { echo "test.sh: scripts/build-web.sh failed" >&2; return 2; }
  until [ -e "$native_built" ]; do
    kill -0 $$ 2>/dev/null || return 2 # the script was stopped
    sleep 2
  done
  [ "$(cat "$native_built")" = 0 ] || { echo "test.sh: the native build failed: no browser tests" >&2; return 2; }
  # `cargo test --workspace` builds the CLI for its tests; building wick-cli alone would resolve other
  # features and build the engine again.
  [ -x target/release/wick ] || cargo build --release -p wick-cli
  echo "test.sh: the browser tests start at $((SECONDS - began)) s of the browser's part"
  node tests/browser/run.mjs "$browser"
}
if [ "$browser" != off ]; then
  mkdir -p target
  browser_part > target/browser-part.log 2>&1 &
  browser_job=$!
fi
# The code as rustfmt writes it (rustup's default profile has rustfmt).
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all --check >/dev/null || { echo "test.sh: cargo fmt --all would change the code" >&2; status=1; }
else
  echo "test.sh: rustfmt is missing (rustup component add rustfmt); formatting not checked"
fi
built=0
cargo test --release --workspace --no-fail-fast --no-run "$@" || built=$?
echo "$built" > "$native_built.part" && mv "$native_built.part" "$native_built"
took "the native build"
if [ "$built" = 0 ]; then
  cargo test --release --workspace --no-fail-fast "$@" || status=$?
  took "cargo test"
else
  status=$built
fi

if [ "${WICK_MATRIX_CORE_TESTS:-}" != off ]; then
  if [ "$(uname)" = Linux ] && [ "$(id -u)" = 0 ]; then
    scripts/test-matrix-cores.sh || status=$?
    took "the matrix-core tests"
  else
    echo "matrix-core tests skipped: scripts/test-matrix-cores.sh needs root on Linux (chroot)"
  fi
fi

if [ "$browser" != off ]; then
  browser_status=0
  wait "$browser_job" || browser_status=$?
  cat target/build-web.log target/browser-part.log
  [ "$browser_status" = 0 ] || status=1
  took "the rest of the browser's part"
fi
rm -r "$(dirname "$native_built")"
exit $status

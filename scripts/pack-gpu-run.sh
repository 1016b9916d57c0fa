#!/usr/bin/env bash
# Packs what a GPU machine without a Rust toolchain needs to check and measure Wick there, into
# target/gpu-run/: the release CLI and the tests' binary (tests/suite.rs, whose kernel tests,
# tests/ops*.rs, check every kernel candidate against a CPU reference, at the adapter's own subgroup
# width, which a CPU adapter cannot show for 32 or 64 lanes), stripped and in one archive,
# bins.tar.xz, that unpacks at the repository's root (target/release/wick, target/gpu-run/suite). There:
#
#   tar -xJf target/gpu-run/bins.tar.xz
#   scripts/check-kernels.sh                  # also the first thing bench-against-llama-cpp.sh runs
#
#   scripts/pack-gpu-run.sh [EXTRA_DIR]
#
# EXTRA_DIR (a folder of other things that machine lacks, e.g. Vulkan's loader and llama.cpp's
# source) is copied in beside the archive.
set -euo pipefail
cd "$(dirname "$0")/.."
# The workspace's tests build the CLI too, with the engine's features resolved once for both.
cargo test --release --workspace --no-run
out=target/gpu-run
rm -rf "$out" && mkdir -p "$out/stage/target/release" "$out/stage/target/gpu-run"
strip -o "$out/stage/target/release/wick" target/release/wick
# The newest build of the tests: cargo keeps the older ones beside it.
suite=$(ls -t target/release/deps/suite-* | grep -v '\.d$' | head -1)
strip -o "$out/stage/target/gpu-run/suite" "$suite"
tar -C "$out/stage" -cf - target | xz -T0 -6 > "$out/bins.tar.xz"
rm -rf "$out/stage"
[ -n "${1:-}" ] && cp -r "$1" "$out/"
du -sh "$out"/*

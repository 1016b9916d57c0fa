#!/usr/bin/env bash
# Builds the browser engine into pkg/: the wasm module (wasm-bindgen's JS glue, optimized with
# binaryen's wasm-opt from npm). Installs what it needs: the wasm target, the wasm-bindgen CLI of the
# exact version in Cargo.lock, and the npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
  echo "installing wasm-bindgen-cli $version (a few minutes, once)" >&2
  cargo install wasm-bindgen-cli --version "$version"
fi
# npm records what it installed in node_modules/.package-lock.json; older than the lock file means stale.
[ node_modules/.package-lock.json -nt package-lock.json ] || npm install --no-audit --no-fund --loglevel=error

cargo build --target wasm32-unknown-unknown --profile wasm -p wick-web
wasm-bindgen --target web --out-dir pkg target/wasm32-unknown-unknown/wasm/wick_web.wasm
# The features Rust's wasm32 target emits; wasm-opt must be told, or it rejects the module.
node_modules/.bin/wasm-opt -O3 \
  --enable-bulk-memory --enable-mutable-globals --enable-nontrapping-float-to-int \
  --enable-reference-types --enable-sign-ext --enable-multivalue \
  pkg/wick_web_bg.wasm -o pkg/wick_web_bg.wasm
echo "built pkg/ ($(du -h pkg/wick_web_bg.wasm | cut -f1) of wasm) in $SECONDS s"

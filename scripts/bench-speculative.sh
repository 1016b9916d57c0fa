#!/usr/bin/env bash
# Decode speed with and without speculative decoding, greedy, on three kinds of prompt (code, chat,
# a JSON schema) and a code edit for lookup drafting, with and without the edit's expected text as a
# prediction: `wick run`'s stats lines, each run alternated with its baseline. MODEL and DRAFT name
# the pair (default: Qwen2.5-Coder-1.5B drafted by 0.5B, `scripts/fetch-model.sh qwen2.5-coder
# qwen2.5-coder-1.5b`); N tokens a reply (default 64). With LLAMA_CPP_BIN (a llama.cpp build's bin/
# with llama-completion and llama-speculative), llama.cpp's plain and speculative decoding of the code
# prompt on the same pair follow, on its own backend (the CPU, for a CPU build).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${MODEL:-models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf}
draft=${DRAFT:-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
n=${N:-64}
wick=target/release/wick
chat() { printf '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$1"; }
code=$(chat 'Write a Python function that returns the n-th Fibonacci number iteratively.')
talk=$(chat 'Why is the sky blue? Answer in two sentences.')
schema='{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"city":{"type":"string"}},"required":["name","age","city"]}'
json=$(chat 'Describe a fictional person as JSON with name, age and city.')
edit=$(chat 'Rename the variable total to result in this function and return it unchanged otherwise:

def add_numbers(first_value, second_value):
    total = first_value + second_value
    print("adding", first_value, "and", second_value)
    return total')
run() { "$wick" run -m "$model" -n "$n" --temp 0 "$@" 2>&1 >/dev/null | grep -E 'generated|checks|measured|prediction'; }
for kind in code talk json; do
  prompt=${!kind}
  extra=(); [ $kind = json ] && extra=(-j "$schema")
  echo "== $kind, no draft"; run -p "$prompt" "${extra[@]}"
  echo "== $kind, --draft"; run -p "$prompt" "${extra[@]}" --draft "$draft"
done
# What the edit is expected to give back (`--prediction-file`, the server's `prediction`).
expected=$(mktemp)
cat > "$expected" <<'PY'
def add_numbers(first_value, second_value):
    result = first_value + second_value
    print("adding", first_value, "and", second_value)
    return result
PY
echo "== edit, no draft"; run -p "$edit"
echo "== edit, --lookup"; run -p "$edit" --lookup
echo "== edit, --lookup --prediction-file"; run -p "$edit" --lookup --prediction-file "$expected"
rm -f "$expected"
if [ -n "${LLAMA_CPP_BIN:-}" ]; then
  # Their timing lines: decode speed, and what was drafted and kept.
  llama() { "$LLAMA_CPP_BIN/$1" -m "$model" -p "$code" -n "$n" --temp 0 -t "$(nproc)" "${@:2}" 2>&1 >/dev/null; }
  echo "== code, llama.cpp llama-completion"
  llama llama-completion -no-cnv --no-warmup | grep -E 'eval time' | grep -v prompt
  echo "== code, llama.cpp llama-speculative --draft-max 8"
  llama llama-speculative -md "$draft" --draft-max 8 | grep -E 'decoded|n_drafted|n_accept|accept'
fi

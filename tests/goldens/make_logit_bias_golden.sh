#!/usr/bin/env bash
# llama.cpp's greedy reply under a logit_bias, for tests/sampling.rs: SmolLM2-135M-Instruct Q4_1, the
# raw prompt "The capital of France is", 12 tokens at temperature 0, with " Paris" (7042) banned,
# "," (28) raised by 2.5 and "capital" (3575, a prompt token) lowered by 3.
#
#   LLAMA_COMPLETION=path/to/llama-completion bash tests/goldens/make_logit_bias_golden.sh
#
# (llama.cpp's llama-completion, built for the CPU: cmake -B build && ninja -C build llama-completion.)
# Writes tests/goldens/llama.cpp/smollm2-q4_1-logit-bias.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
prompt="The capital of France is"
out=$("${LLAMA_COMPLETION:?the path of llama.cpp\'s llama-completion}" -m "$model" -p "$prompt" -n 12 \
  --temp 0 -l 7042-100 -l 28+2.5 -l 3575-3 -no-cnv -t 2 --no-warmup 2>/dev/null)
python3 - "$prompt" "$out" <<'PY' > tests/goldens/llama.cpp/smollm2-q4_1-logit-bias.json
import json, sys
prompt, out = sys.argv[1], sys.argv[2]
assert out.startswith(prompt), out
print(json.dumps({
    "model": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "made_with": "llama.cpp b11312 llama-completion, CPU, --temp 0 -n 12",
    "prompt": prompt,
    "logit_bias": {"7042": -100, "28": 2.5, "3575": -3},
    "max_tokens": 12,
    "reply": out[len(prompt):],
}, indent=1))
PY
cat tests/goldens/llama.cpp/smollm2-q4_1-logit-bias.json

#!/usr/bin/env bash
# f32 numpy goldens (numpy_dense.py) for SmolLM2 re-quantized by `wick quantize`: the exact math on each
# file, so tests/quantized.rs can hold Wick tightly to it while llama.cpp's 8-bit activations need a
# loose tolerance. Run from the repository root after `cargo build --release`, with a Python that has
# numpy and gguf:  PYTHON=/path/to/python tests/goldens/make_quantized_numpy.sh
set -euo pipefail
PYTHON=${PYTHON:-python3}
out=tests/goldens/numpy/quantized
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ty in Q4_0 Q8_0 Q4_K Q5_K Q6_K; do
    target/release/wick quantize models/SmolLM2-135M-Instruct.Q4_1.gguf "$tmp/m.gguf" "$ty" >/dev/null 2>&1
    # "The capital of France is", as in smollm2-quantized-greedy.json.
    "$PYTHON" tests/goldens/numpy_dense.py "$tmp/m.gguf" 6 504 3575 282 4649 314 > "$out/smollm2-$ty.json"
    echo "$ty: $(head -c 200 "$out/smollm2-$ty.json")"
done

#!/usr/bin/env python3
"""llama.cpp's greedy run on a Qwen3.5 shape file (scripts/make-qwen35-shape.py), for the on-demand check
that Wick decodes the real dimensions as llama.cpp does (head_dim 256, RoPE on 64 of them over the
sections [11, 11, 10, 0], 16 + 16 linear heads of 128, a 248,320-row tied head):

    python scripts/qwen35-shape-greedy.py models/shape/qwen3.5-0.8b.shape.Q8_0.gguf
    WICK_QWEN35_SHAPE=models/shape/qwen3.5-0.8b.shape.Q8_0.gguf \\
        cargo test --release --test suite random_qwen35::shape -- --ignored

Needs llama-cpp-python and numpy. Writes target/FILE.greedy.json: {file, prompt_ids,
steps: [{id, gap, top: [[id, logit] x 4]}]} for N steps (default 300) after an 8-token prompt, from
llama.cpp's CPU path (2 threads, n_ctx 512).
"""
import json
import os
import sys

import llama_cpp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    prompt = [100, 7, 300, 42, 256, 9, 77, 400]
    llm = llama_cpp.Llama(model_path=path, n_ctx=512, logits_all=True, n_threads=2, seed=0, verbose=False)
    llm.eval(prompt)
    steps = []
    for i in range(n):
        logits = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        idx = np.argsort(-logits, kind="stable")[:4]
        top = [[int(j), round(float(logits[j]), 4)] for j in idx]
        steps.append({"id": top[0][0], "gap": round(top[0][1] - top[1][1], 4), "top": top})
        if i + 1 < n:
            llm.eval([top[0][0]])
    out = os.path.join(ROOT, "target", os.path.basename(path) + ".greedy.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"file": path, "prompt_ids": prompt, "steps": steps}, f)
    gaps = sorted(s["gap"] for s in steps)
    print(f"wrote {out}: {n} steps, smallest gaps {gaps[:5]}")


if __name__ == "__main__":
    main()

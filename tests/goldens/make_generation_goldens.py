#!/usr/bin/env python3
"""Greedy-decoding goldens for SmolLM2-135M-Instruct Q4_1, made with llama.cpp on the CPU.

Run from the repository root with a venv that has llama-cpp-python (built with CMAKE_ARGS="-DGGML_NATIVE=OFF";
without it, -march=native can pick instructions the CPU's OS does not enable):

    python tests/goldens/make_generation_goldens.py [models/SmolLM2-135M-Instruct.Q4_1.gguf]

Writes tests/goldens/llama.cpp/smollm2-q4_1-greedy.json. Each record holds the prompt, its ids (special tokens
parsed, no BOS: the model's add_bos_token is false), and per generated step the chosen id, its logit, the
gap between the two highest logits (so a test can tell a clear choice from a near-tie), and the top 8
(id, logit) pairs. Decoding stops at an end-of-generation token or after 32 tokens.
"""
import hashlib
import json
import os
import sys

import llama_cpp
import numpy as np

MAX_NEW = 32
TOP_K = 8

RAW_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea, there lived",
]
CHAT_QUESTIONS = [
    "What is 2+2?",
    "Write a haiku about the ocean.",
    "Translate 'good morning' into French and Spanish.",
    "List three primary colors.",
]


def chatml(question):
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def top(logits, k):
    idx = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), round(float(logits[i]), 4)] for i in idx]


def greedy(llm, vocab, prompt, add_bos=False, max_new=MAX_NEW):
    """add_bos: a BOS first where the model's add_bos_token says so (llama.cpp's add_special)."""
    ids = llm.tokenize(prompt.encode(), add_bos=add_bos, special=True)
    llm.reset()
    llm.eval(ids)
    steps = []
    for _ in range(max_new):
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        best = top(logits, TOP_K)
        tok = best[0][0]
        steps.append({
            "id": tok,
            "logit": best[0][1],
            "gap": round(best[0][1] - best[1][1], 4),
            "top": best,
        })
        if llama_cpp.llama_vocab_is_eog(vocab, tok):
            break
        llm.eval([tok])
    gen = [s["id"] for s in steps]
    text = llm.detokenize(gen, special=True).decode("utf-8", errors="replace")
    return {"prompt": prompt, "prompt_ids": ids, "gen_ids": gen, "steps": steps, "text": text}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    llm = llama_cpp.Llama(model_path=path, n_ctx=512, logits_all=True, n_threads=2, seed=0, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    prompts = RAW_PROMPTS + [chatml(q) for q in CHAT_QUESTIONS]
    records = [greedy(llm, vocab, p) for p in prompts]
    out = {
        "model": os.path.basename(path),
        "model_sha256": sha,
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx=512, argmax",
        "n_vocab": llm.n_vocab(),
        "records": records,
    }
    dest = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama.cpp", "smollm2-q4_1-greedy.json")
    with open(dest, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for r in records:
        print(repr(r["prompt"][:40]), len(r["prompt_ids"]), "->", r["gen_ids"][:8], repr(r["text"][:60]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Goldens for the real qwen2 and gemma3 files (scripts/fetch-model.sh qwen2.5-coder gemma3): greedy
decoding by llama.cpp on the CPU, the same prompts' first steps by an f32 numpy reference
(numpy_dense.py), and the tokenizations of a few texts by llama.cpp.

Run from the repository root with the venv that make_generation_goldens.py uses (llama-cpp-python built
with CMAKE_ARGS="-DGGML_NATIVE=OFF", plus numpy and gguf):

    python tests/goldens/make_family_goldens.py

Writes tests/goldens/families/<name>.json: {model, model_sha256, made_with, n_vocab, tokenize: [{text, ids}],
llama_cpp: [records], f32: [records]}, a record as make_generation_goldens.py writes one ({prompt,
prompt_ids, steps: [{id, logit, gap, top}], text}; the f32 records' steps have id and top only). Prompts are
tokenized as llama.cpp does for generation: special tokens parsed, a BOS first where the model's
add_bos_token says so (Gemma: yes, Qwen: no). Chat prompts are each family's format written out: Qwen's
ChatML as its template renders one user turn with its default system prompt, Gemma's turns as
llama.cpp's built-in gemma template writes them.
"""
import hashlib
import json
import os
import subprocess
import sys

import llama_cpp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_generation_goldens import greedy  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_NEW, F32_NEW = 24, 8

QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
MODELS = {
    "qwen2.5-coder-0.5b-q4_k_m": (
        "models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        lambda q: f"<|im_start|>system\n{QWEN_SYSTEM}<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n",
    ),
    "gemma-3-270m-q4_k_m": (
        "models/gemma-3-270m-q4_k_m.gguf",
        lambda q: f"<start_of_turn>user\n{q}<end_of_turn>\n<start_of_turn>model\n",
    ),
}
RAW_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
]
CHAT_QUESTIONS = [
    "What is 2+2?",
    "Write a haiku about the ocean.",
    "List three primary colors.",
]
TOKENIZE = [
    "Hello world",
    " leading space and  double  spaces",
    "Ünïcödé — emoji 🦙 and 中文字符",
    "numbers 1234567 and 3.14159, code: x += y[i] * 2;",
    "line one\nline two\n\n\tindented",
]


def f32(path, record):
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "numpy_dense.py"), path, str(F32_NEW)]
        + [str(i) for i in record["prompt_ids"]],
        check=True, capture_output=True, text=True,
    ).stdout
    r = json.loads(out)
    r["prompt"] = record["prompt"]
    return r


def main():
    os.makedirs(os.path.join(HERE, "families"), exist_ok=True)
    only = sys.argv[1:]
    for name, (path, chat) in MODELS.items():
        if only and name not in only:
            continue
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        llm = llama_cpp.Llama(model_path=path, n_ctx=512, logits_all=True, n_threads=2, seed=0, verbose=False)
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        prompts = RAW_PROMPTS + [chat(q) for q in CHAT_QUESTIONS]
        records = [greedy(llm, vocab, p, add_bos=True, max_new=MAX_NEW) for p in prompts]
        for r in records:
            print(name, repr(r["prompt"][-30:]), "->", repr(r["text"][:60]), flush=True)
        tokenize = [{"text": t, "ids": llm.tokenize(t.encode(), add_bos=False, special=False)} for t in TOKENIZE]
        f32_records = [f32(path, r) for r in records[:1] + records[2:4]]
        out = {
            "model": os.path.basename(path),
            "model_sha256": sha,
            "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx=512, argmax; "
            "f32: tests/goldens/numpy_dense.py",
            "n_vocab": llm.n_vocab(),
            "tokenize": tokenize,
            "llama_cpp": records,
            "f32": f32_records,
        }
        with open(os.path.join(HERE, "families", f"{name}.json"), "w") as f:
            json.dump(out, f, indent=1, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()

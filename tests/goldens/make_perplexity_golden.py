#!/usr/bin/env python3
"""Perplexity goldens by llama-perplexity's method, computed over llama.cpp's logits on the CPU.

Run from the repository root, after `cargo build --release` (for the Q8_0 file), with the venv that
make_generation_goldens.py uses (llama-cpp-python built with CMAKE_ARGS="-DGGML_NATIVE=OFF"):

    python tests/goldens/make_perplexity_golden.py [--wick target/release/wick] [--ctx 128]
                                                   [models/SmolLM2-135M-Instruct.Q4_1.gguf]

Scores tests/data/perplexity.txt (an original essay on lighthouses, ~1,270 words, written for this purpose) with the
source model and with the Q8_0 file that `wick quantize` makes of it (made again here in a temporary folder; its
sha256 is checked against tests/goldens/smollm2-quantized-greedy.json when that exists), for the first 2 chunks and
for all of them. Writes tests/goldens/smollm2-perplexity.json: {text_file, text_sha256, n_ctx, made_with, method,
records: [{model, model_sha256, chunks, ppl, per_chunk_ppl, n_tokens, scored_tokens}]}; per_chunk_ppl is the running
value after each chunk, which llama-perplexity prints as [1]x,[2]y,...; the values are stored unrounded (it prints 4
decimals). n_tokens counts the text's tokens as llama-perplexity has them.

The method, as in llama.cpp's tools/perplexity/perplexity.cpp, perplexity() (checked against its source):
  - `-f` reads the file and drops one final '\\n'; the text is tokenized with add_special=true, parse_special=false
    (so a BOS is put first only where the model's add_bos_token says so; SmolLM2: false);
  - fewer than 2 * n_ctx tokens is an error; n_chunk = n_tokens / n_ctx (rounded down), capped by --chunks;
  - chunk i is tokens[i*n_ctx, (i+1)*n_ctx), its first token replaced by BOS where add_bos, evaluated from an
    empty KV cache;
  - positions j = n_ctx/2 .. n_ctx-2 of each chunk are scored, each predicting token j+1: nll += -log_softmax,
    with the max logit in f32, sum of expf(logit - max) accumulated in double, and nll accumulated in double;
  - after each chunk it prints exp(nll / count); the final value is the same.
llama-perplexity evaluates n_batch / n_ctx chunks side by side as separate sequences of one batch; this script runs
them one at a time (llm.reset(), llm.eval(chunk) with logits_all), which changes nothing but float rounding.

Why: `wick perplexity` implements the same method; these goldens let a test (or a person, on the GPU) check Wick's
value against llama.cpp's on the same model and text, and see what Q8_0 re-quantization costs.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import llama_cpp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quantized_goldens import DEST as QUANT_GOLDEN  # noqa: E402
from make_quantized_goldens import SOURCE, quantize, sha256  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEXT = "tests/data/perplexity.txt"
DEST = os.path.join(HERE, "smollm2-perplexity.json")
FEW_CHUNKS = 2


def read_text(path):
    """The text as llama-perplexity's -f has it: the file's bytes, less one final newline."""
    with open(path, "rb") as f:
        data = f.read()
    if data.endswith(b"\n"):
        data = data[:-1]
    return data


def nll_at(logits, tok):
    """-log softmax(logits)[tok] as perplexity.cpp's log_softmax computes it."""
    max_logit = np.float32(logits.max())
    sum_exp = float(np.exp(logits - max_logit, dtype=np.float32).sum(dtype=np.float64))
    return -(float(np.float32(logits[tok] - max_logit)) - np.log(sum_exp))


def running_perplexity(tokens, n_ctx, bos, chunk_logits):
    """llama-perplexity's loop over `tokens`: chunks of n_ctx, each starting with `bos` where it is not None,
    their second halves scored by `chunk_logits(chunk)` ((n_ctx, n_vocab) logits of every position, from an
    empty cache). Returns the running perplexity after each chunk."""
    if len(tokens) < 2 * n_ctx:
        sys.exit(f"{len(tokens)} tokens: llama-perplexity needs at least {2 * n_ctx} for n_ctx {n_ctx}")
    first = n_ctx // 2
    nll, count, running = 0.0, 0, []
    for i in range(len(tokens) // n_ctx):
        chunk = list(tokens[i * n_ctx:(i + 1) * n_ctx])
        if bos is not None:
            chunk[0] = bos
        scores = np.asarray(chunk_logits(chunk), dtype=np.float32)
        for j in range(first, n_ctx - 1):
            nll += nll_at(scores[j], chunk[j + 1])
            count += 1
        running.append(float(np.exp(nll / count)))
    return running


def text_tokens(llm, text):
    """The text's tokens as llama-perplexity has them, and the BOS it puts first in each chunk (or None)."""
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    assert not llama_cpp.llama_vocab_get_add_eos(vocab)
    tokens = llm.tokenize(text, add_bos=True, special=False)  # add_bos here is llama_tokenize's add_special
    bos = llama_cpp.llama_vocab_bos(vocab) if llama_cpp.llama_vocab_get_add_bos(vocab) else None
    return tokens, bos


def perplexity(path, text, n_ctx):
    """Returns (n_tokens, the running perplexity after each of all the chunks), by llama.cpp's logits."""
    llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=n_ctx, logits_all=True, n_threads=2, seed=0,
                          verbose=False)
    tokens, bos = text_tokens(llm, text)

    def chunk_logits(chunk):
        llm.reset()
        llm.eval(chunk)
        return llm.scores[:n_ctx]

    return len(tokens), running_perplexity(tokens, n_ctx, bos, chunk_logits)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", nargs="?", default=SOURCE)
    ap.add_argument("--wick", default="target/release/wick")
    ap.add_argument("--ctx", type=int, default=128)
    args = ap.parse_args()
    text = read_text(os.path.join(ROOT, TEXT))
    with open(os.path.join(ROOT, TEXT), "rb") as f:
        text_sha = hashlib.sha256(f.read()).hexdigest()
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        q8 = os.path.join(tmp, "smollm2.Q8_0.gguf")
        quantize(args.wick, args.source, q8, "Q8_0")
        if os.path.exists(QUANT_GOLDEN):
            with open(QUANT_GOLDEN) as f:
                want = {e["type"]: e["sha256"] for e in json.load(f)["files"]}.get("Q8_0")
            if want and want != sha256(q8):
                print(f"warning: this Q8_0 file differs from the one in {os.path.basename(QUANT_GOLDEN)}")
        for name, path in [(os.path.basename(args.source), args.source), ("smollm2.Q8_0.gguf (wick quantize)", q8)]:
            n_tokens, running = perplexity(path, text, args.ctx)
            sha = sha256(path)
            for chunks in [FEW_CHUNKS, len(running)]:
                records.append({
                    "model": name,
                    "model_sha256": sha,
                    "chunks": chunks,
                    "ppl": running[chunks - 1],
                    "per_chunk_ppl": running[:chunks],
                    "n_tokens": n_tokens,
                    "scored_tokens": chunks * (args.ctx - 1 - args.ctx // 2),
                })
                print(f"{name}: {n_tokens} tokens, {chunks} chunks of {args.ctx}: PPL = {running[chunks - 1]:.4f}")
                print("   ", ",".join(f"[{i + 1}]{p:.4f}" for i, p in enumerate(running[:chunks])))
    out = {
        "text_file": TEXT,
        "text_sha256": text_sha,
        "n_ctx": args.ctx,
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, one chunk per eval",
        "method": "llama-perplexity (tools/perplexity/perplexity.cpp, perplexity()): final newline dropped, "
                  "add_special tokenization, n_tokens / n_ctx chunks, BOS first where add_bos, empty cache per "
                  "chunk, positions n_ctx/2 .. n_ctx-2 scored, PPL = exp(mean nll)",
        "records": records,
    }
    with open(DEST, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", DEST)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Perplexity goldens for the real qwen2 and gemma3 files: tests/data/perplexity.txt scored by
llama-perplexity's method (make_perplexity_golden.py says how it goes) over the logits of the f32 numpy
reference (numpy_dense.forward), and, for comparison only, over llama.cpp's CPU logits, which round
activations to 8 bits.

Run from the repository root with the venv that make_family_goldens.py uses (llama-cpp-python, numpy,
gguf), after scripts/fetch-model.sh gemma3 qwen2.5-coder:

    python tests/goldens/make_family_perplexity.py [--ctx 128] [NAME ...]

Writes tests/goldens/families/<name>-perplexity.json: {model, model_sha256, text_file, text_sha256,
n_ctx, n_tokens, method, f32: {made_with, per_chunk_ppl}, llama_cpp: {made_with, per_chunk_ppl}}, where
per_chunk_ppl is the running value after each chunk of all the text holds (llama-perplexity prints them
as [1]x,[2]y,...), unrounded. The text is tokenized by llama.cpp, as llama-perplexity does.
"""
import argparse
import hashlib
import json
import os
import sys

import llama_cpp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_dense  # noqa: E402
from make_family_goldens import MODELS  # noqa: E402
from make_perplexity_golden import TEXT, perplexity, read_text, running_perplexity, text_tokens  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    text = read_text(os.path.join(ROOT, TEXT))
    for name, (path, _) in MODELS.items():
        if args.names and name not in args.names:
            continue
        vocab_only = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        tokens, bos = text_tokens(vocab_only, text)
        meta, w = numpy_dense.load(path)
        f32 = running_perplexity(tokens, args.ctx, bos, lambda chunk: numpy_dense.forward(meta, w, chunk))
        print(f"{name}: {len(tokens)} tokens, f32 PPL = {f32[-1]:.4f}; after 2 chunks {f32[1]:.4f}")
        del w
        n_tokens, cpu = perplexity(path, text, args.ctx)
        assert n_tokens == len(tokens)
        print(f"{name}: llama.cpp CPU PPL = {cpu[-1]:.4f} ({(cpu[-1] / f32[-1] - 1) * 100:+.2f}% from f32)")
        out = {
            "model": os.path.basename(path),
            "model_sha256": sha256(path),
            "text_file": TEXT,
            "text_sha256": sha256(os.path.join(ROOT, TEXT)),
            "n_ctx": args.ctx,
            "n_tokens": len(tokens),
            "method": "llama-perplexity (tools/perplexity/perplexity.cpp, perplexity()): final newline dropped, "
                      "add_special tokenization, n_tokens / n_ctx chunks, BOS first where add_bos, empty cache per "
                      "chunk, positions n_ctx/2 .. n_ctx-2 scored, PPL = exp(mean nll)",
            "f32": {
                "made_with": "tests/goldens/numpy_dense.py forward(), f32 over the gguf package's dequantized weights",
                "per_chunk_ppl": f32,
            },
            "llama_cpp": {
                "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, one chunk per eval",
                "per_chunk_ppl": cpu,
            },
        }
        dest = os.path.join(HERE, "families", f"{name}-perplexity.json")
        with open(dest, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        print("wrote", dest)


if __name__ == "__main__":
    main()

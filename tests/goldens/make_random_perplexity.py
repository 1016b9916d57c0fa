#!/usr/bin/env python3
"""Perplexity goldens of a family's random-weight files over tests/data/perplexity.txt, by
llama-perplexity's method (make_perplexity_golden.py says how), from llama.cpp's logits and from the
family's float64 numpy forward pass (numpy_<family>.py).

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf:

    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_perplexity.py qwen35
    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_perplexity.py gemma4
    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_perplexity.py qwen3moe
    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_perplexity.py qwen35moe
    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_perplexity.py gpt-oss

Writes tests/goldens/random-<family>-perplexity.json: {text_file, text_sha256, n_ctx, made_with, records:
[{model, model_sha256, chunks, n_tokens, scored_tokens, llama_cpp, f32}]}, for the first 4 chunks of 128
tokens, each read from empty states and an empty cache as llama-perplexity reads it.
- qwen35: the random byte-level vocabulary cuts the text into about 3 tokens a word.
- gemma4: the random vocabulary has no capitals and few words, so the text comes out at about 4 tokens
  a word; each chunk starts with BOS, which Gemma 4's add_bos_token asks for and llama.cpp would add
  anyway; 128 positions are 16 sliding windows of 8, and the chunk's second half, which is scored, lies
  wholly beyond the first window.
- qwen3moe, qwen35moe (make_random_moe.py's files): the byte-level vocabularies of random-qwen3.gguf and
  random-qwen35*.gguf, so about 3 tokens a word as qwen35.
- gpt-oss (make_random_gpt_oss.py's files): its byte-level vocabulary under the gpt-4o pre-tokenizer;
  128 positions are 8 sliding windows of 16 on the windowed blocks.
"""
import hashlib
import importlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_perplexity_golden import read_text, running_perplexity, text_tokens  # noqa: E402

import llama_cpp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEXT = "tests/data/perplexity.txt"
N_CTX, CHUNKS = 128, 4

# Each family's files, its reference module, and what the reference is.
FAMILIES = {
    "qwen35": (["random-qwen35-f16.gguf", "random-qwen35-q8_0.gguf", "random-qwen35-q4_k_m.gguf"],
               "numpy_qwen35", "numpy_qwen35.py (float64)"),
    "gemma4": (["random-gemma4-f32.gguf", "random-gemma4-q8_0.gguf", "random-gemma4-q4_k.gguf"],
               "numpy_gemma4", "numpy_gemma4.py (float64, exact GELU)"),
    "qwen3moe": (["random-qwen3moe-f16.gguf", "random-qwen3moe-q8_0.gguf", "random-qwen3moe-q4_k_m.gguf"],
                 "numpy_moe", "numpy_moe.py (float64)"),
    "qwen35moe": (["random-qwen35moe-f16.gguf", "random-qwen35moe-q8_0.gguf", "random-qwen35moe-q4_k_m.gguf"],
                  "numpy_moe", "numpy_moe.py (float64)"),
    "gpt-oss": (["random-gpt-oss-mxfp4.gguf", "random-gpt-oss-q8_0.gguf"],
                "numpy_moe", "numpy_moe.py over numpy_gpt_oss.py (float64)"),
}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main(family):
    files, module, reference = FAMILIES[family]
    numpy_model = importlib.import_module(module)
    text = read_text(os.path.join(ROOT, TEXT))
    records = []
    for name in files:
        path = os.path.join(ROOT, "tests", "data", name)
        llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, n_batch=N_CTX, logits_all=True, n_threads=2,
                              seed=0, verbose=False)
        tokens, bos = text_tokens(llm, text)
        tokens = tokens[: CHUNKS * N_CTX]

        def llama_logits(chunk):
            llm.reset()
            llm.eval(chunk)
            return llm.scores[:N_CTX]

        meta, w = numpy_model.load(path)
        llama = running_perplexity(tokens, N_CTX, bos, llama_logits)
        f32 = running_perplexity(tokens, N_CTX, bos, lambda chunk: numpy_model.forward(meta, w, chunk))
        del llm
        records.append({
            "model": f"tests/data/{name}",
            "model_sha256": sha256(path),
            "chunks": CHUNKS,
            "n_tokens": len(text_tokens_all(path, text)),
            "scored_tokens": CHUNKS * (N_CTX - 1 - N_CTX // 2),
            "llama_cpp": llama[-1],
            "f32": f32[-1],
        })
        off = llama[-1] / f32[-1] - 1
        print(f"{name}: PPL llama.cpp {llama[-1]:.4f}, f32 {f32[-1]:.4f} (llama.cpp {off:+.2%} from f32)")
    with open(os.path.join(ROOT, TEXT), "rb") as f:
        text_sha = hashlib.sha256(f.read()).hexdigest()
    out = {
        "text_file": TEXT,
        "text_sha256": text_sha,
        "n_ctx": N_CTX,
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, one chunk per eval; "
                     f"f32: {reference}",
        "records": records,
    }
    dest = os.path.join(HERE, f"random-{family}-perplexity.json")
    with open(dest, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", dest)


def text_tokens_all(path, text):
    """The whole text's tokens, as llama-perplexity counts them."""
    llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, vocab_only=True, verbose=False)
    return text_tokens(llm, text)[0]


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in FAMILIES:
        sys.exit(f"usage: make_random_perplexity.py {{{','.join(FAMILIES)}}}")
    main(sys.argv[1])

#!/usr/bin/env python3
"""Embeddings of the random dense files (tests/data/random-{qwen3,llama3,gemma2}.gguf) with pooling set in
their metadata, from llama.cpp (`Llama(embedding=True).embed`, normalized) and from numpy_dense's f32
states pooled here; checked by tests/embeddings.rs.

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf:

    python tests/goldens/make_embedding_goldens.py

Each case copies its file with `{arch}.pooling_type` (and where it says, tokenizer.ggml.add_eos_token) set,
as the test does in memory:
- qwen3, last-token pooling over inputs that end with EOS: Qwen3-Embedding's layout.
- llama3, mean pooling, BOS first: sentence-transformers' default over a Llama 3 block.
- gemma2, first-token pooling (BERT's CLS) through post-norms, a sliding window and soft-capping.
Writes tests/goldens/embeddings.json: per case the file, its sha256, the metadata set, and per input text
llama.cpp's tokens and both unit vectors (rounded to 6 decimals).
"""
import hashlib
import json
import os
import sys
import tempfile

import gguf
import llama_cpp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_dense  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "goldens", "embeddings.json")
N_CTX = 64
POOLING = {"mean": 1, "cls": 2, "last": 3}
CASES = [
    ("tests/data/random-qwen3.gguf", "last", True),
    ("tests/data/random-llama3.gguf", "mean", False),
    ("tests/data/random-gemma2.gguf", "cls", False),
]
# Short and long (the long ones span several of the test's 8-token chunks); plain text, no special tokens.
TEXTS = [
    "the cat sat on the mat",
    "A quiet harbour at dawn, gulls over the water and boats still tied to the pier.",
    "embeddings",
    "Rust compiles to wasm; WGSL runs on the GPU.",
]


def with_metadata(src, dst, arch, pooling, add_eos):
    """`src` copied to `dst` with the pooling type (and add_eos_token) set."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, arch)
    set_keys = {f"{arch}.pooling_type": (POOLING[pooling], gguf.GGUFValueType.UINT32)}
    if add_eos:
        set_keys["tokenizer.ggml.add_eos_token"] = (True, gguf.GGUFValueType.BOOL)
    for field in r.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF.") or field.name in set_keys:
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    for key, (value, kind) in set_keys.items():
        w.add_key_value(key, value, kind)
    for t in r.tensors:
        w.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in r.tensors:
        w.write_tensor_data(t.data)
    w.close()


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def pooled(states, pooling):
    return {"mean": states.mean(0), "cls": states[0], "last": states[-1]}[pooling]


def main():
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel, pooling, add_eos in CASES:
            src = os.path.join(ROOT, rel)
            arch = gguf.GGUFReader(src).get_field("general.architecture").contents()
            path = os.path.join(tmp, os.path.basename(rel))
            with_metadata(src, path, arch, pooling, add_eos)
            llm = llama_cpp.Llama(model_path=path, embedding=True, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX,
                                  n_threads=2, verbose=False)
            meta, w = numpy_dense.load(path)
            inputs = []
            for text in TEXTS:
                ids = llm.tokenize(text.encode())
                llama_cpp_vec = unit(llm.embed(text, normalize=True))
                states = numpy_dense.forward(meta, w, ids, n_ctx=N_CTX, hidden=True)
                f32_vec = unit(pooled(states, pooling))
                cos = float(llama_cpp_vec @ f32_vec)
                print(f"{arch} {pooling}: {len(ids)} tokens, cosine llama.cpp vs f32 {cos:.7f}")
                inputs.append({
                    "text": text,
                    "ids": ids,
                    "llama_cpp": [round(float(x), 6) for x in llama_cpp_vec],
                    "f32": [round(float(x), 6) for x in f32_vec],
                })
            del llm
            with open(src, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            records.append({"file": rel, "sha256": sha, "pooling": pooling, "add_eos": add_eos,
                            "inputs": inputs})
    out = {
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx={N_CTX}, embed(normalize=True)",
        "records": records,
    }
    with open(GOLDEN, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {GOLDEN}: {os.path.getsize(GOLDEN)} bytes")


if __name__ == "__main__":
    sys.exit(main())

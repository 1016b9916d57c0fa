#!/usr/bin/env python3
"""Embeddings of the random dense files (tests/data/random-{qwen3,llama3,gemma2}.gguf) with pooling set in
their metadata, and of a random EmbeddingGemma file written here (tests/data/random-gemma-embedding.gguf),
from llama.cpp (`Llama(embedding=True).embed`, normalized) and from numpy_dense's f32 states pooled (and
projected) here; checked by tests/embeddings.rs.

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf:

    python tests/goldens/make_embedding_goldens.py

Each case copies its file with `{arch}.pooling_type` (and where it says, tokenizer.ggml.add_eos_token) set,
as the test does in memory:
- qwen3, last-token pooling over inputs that end with EOS: Qwen3-Embedding's layout.
- llama3, mean pooling, BOS first: sentence-transformers' default over a Llama 3 block.
- gemma2, first-token pooling (BERT's CLS) through post-norms, a sliding window and soft-capping.
- bert (first-token pooling: [CLS]) and nomic-bert (mean), as their files say: random_bert.py's
  layouts and WordPiece vocabulary, [CLS] and [SEP] around each input; numpy_bert.py's reference.
- gemma-embedding, as its file says (mean pooling, BOS and EOS added): EmbeddingGemma's layout at width
  128, 6 layers (5 sliding, a window of 8, i.e. 4 positions either side, then 1 global), 4 heads of 32
  over 2 kv heads, F16 matrices, bidirectional attention, dense_2 (128 -> 256) and dense_3 (256 -> 128)
  after the pooling. Nothing is set: the case runs the file as written.
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
import numpy_bert  # noqa: E402
import numpy_dense  # noqa: E402
import random_bert  # noqa: E402
from random_vocab import N_VOCAB, vocabulary  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "goldens", "embeddings.json")
N_CTX = 96
POOLING = {"mean": 1, "cls": 2, "last": 3}
# (file, pooling, add_eos, whether the metadata is set here or the file says it).
CASES = [
    ("tests/data/random-qwen3.gguf", "last", True, True),
    ("tests/data/random-llama3.gguf", "mean", False, True),
    ("tests/data/random-gemma2.gguf", "cls", False, True),
    ("tests/data/random-gemma-embedding.gguf", "mean", True, False),
    ("tests/data/random-bert.gguf", "cls", True, False),
    ("tests/data/random-nomic-bert.gguf", "mean", True, False),
]
SEED = 20261126
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


def gemma_embedding_file(path, rng):
    """A random EmbeddingGemma (GGUF architecture `gemma-embedding`) in llama.cpp's layout."""
    d, n_head, n_kv, hd, n_ff, n_layer, dense = 128, 4, 2, 32, 256, 6, 256
    mat = lambda rows, cols, scale=1.0: (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float16)
    gain = lambda n: rng.uniform(0.6, 1.4, n).astype(np.float32)
    tokens, types, merges = vocabulary(rng)
    w = {"token_embd.weight": (rng.standard_normal((N_VOCAB, d)) / np.sqrt(d)).astype(np.float16)}
    for l in range(n_layer):
        p = f"blk.{l}."
        w[p + "attn_norm.weight"] = gain(d)
        w[p + "attn_q.weight"] = mat(n_head * hd, d, 2.0)
        w[p + "attn_k.weight"] = mat(n_kv * hd, d, 2.0)
        w[p + "attn_v.weight"] = mat(n_kv * hd, d)
        w[p + "attn_q_norm.weight"] = gain(hd)
        w[p + "attn_k_norm.weight"] = gain(hd)
        w[p + "attn_output.weight"] = mat(d, n_head * hd)
        w[p + "post_attention_norm.weight"] = gain(d)
        w[p + "ffn_norm.weight"] = gain(d)
        w[p + "ffn_gate.weight"], w[p + "ffn_up.weight"] = mat(n_ff, d), mat(n_ff, d)
        w[p + "ffn_down.weight"] = mat(d, n_ff)
        w[p + "post_ffw_norm.weight"] = gain(d)
    w["output_norm.weight"] = gain(d)
    w["dense_2.weight"] = mat(dense, d)
    w["dense_3.weight"] = mat(d, dense)
    arch = "gemma-embedding"
    wr = gguf.GGUFWriter(path, arch)
    wr.add_name("tiny-random")
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_context_length(256)
    wr.add_embedding_length(d)
    wr.add_block_count(n_layer)
    wr.add_feed_forward_length(n_ff)
    wr.add_head_count(n_head)
    wr.add_head_count_kv(n_kv)
    wr.add_key_length(hd)
    wr.add_value_length(hd)
    wr.add_rope_freq_base(1e6)
    wr.add_layer_norm_rms_eps(1e-6)
    wr.add_sliding_window(8)
    wr.add_pooling_type(gguf.PoolingType.MEAN)
    wr.add_uint32(f"{arch}.dense_2_feat_in", d)
    wr.add_uint32(f"{arch}.dense_2_feat_out", dense)
    wr.add_uint32(f"{arch}.dense_3_feat_in", dense)
    wr.add_uint32(f"{arch}.dense_3_feat_out", d)
    wr.add_vocab_size(N_VOCAB)
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(N_VOCAB - 1)
    wr.add_eos_token_id(N_VOCAB - 1)
    wr.add_add_bos_token(True)
    wr.add_add_eos_token(True)
    for name, t in w.items():
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def pooled(states, pooling):
    return {"mean": states.mean(0), "cls": states[0], "last": states[-1]}[pooling]


def main():
    records = []
    rng = np.random.default_rng(SEED)
    gemma_embedding_file(os.path.join(ROOT, "tests/data/random-gemma-embedding.gguf"), rng)
    random_bert.write(os.path.join(ROOT, "tests/data/random-bert.gguf"), "bert", rng, gguf.PoolingType.CLS)
    random_bert.write(os.path.join(ROOT, "tests/data/random-nomic-bert.gguf"), "nomic-bert", rng,
                      gguf.PoolingType.MEAN)
    with tempfile.TemporaryDirectory() as tmp:
        for rel, pooling, add_eos, set_here in CASES:
            src = os.path.join(ROOT, rel)
            arch = gguf.GGUFReader(src).get_field("general.architecture").contents()
            path = src
            if set_here:
                path = os.path.join(tmp, os.path.basename(rel))
                with_metadata(src, path, arch, pooling, add_eos)
            llm = llama_cpp.Llama(model_path=path, embedding=True, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX,
                                  n_threads=2, verbose=False)
            meta, w = numpy_dense.load(path)
            inputs = []
            for text in TEXTS:
                ids = llm.tokenize(text.encode())
                llama_cpp_vec = unit(llm.embed(text, normalize=True))
                if arch in ("bert", "nomic-bert"):
                    states = numpy_bert.forward(meta, w, ids)
                else:
                    states = numpy_dense.forward(meta, w, ids, n_ctx=N_CTX, hidden=True)
                v = pooled(states, pooling)
                for dense in ("dense_2.weight", "dense_3.weight"):
                    if dense in w:
                        v = w[dense] @ v
                f32_vec = unit(v)
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
                            "set_here": set_here, "inputs": inputs})
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

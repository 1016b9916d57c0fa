#!/usr/bin/env python3
"""Tiny random-weight files in the exact GGUF layouts of qwen3, gemma2, phi3 and Llama 3, with llama.cpp's
logits and an f32 numpy reference's as goldens (checked by tests/random_families.rs).

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf:

    python tests/goldens/make_random_families.py

Writes tests/data/random-<family>.gguf and tests/goldens/random-families.json, whose records have the
shape tests/common/random_model.rs reads (make_random_llama.py says what each field holds): 24 token ids
teacher-forced with the full logits at every position from llama.cpp (CPU, n_threads=2, n_ctx 64, the
context the test runs with) and from numpy_dense.forward, llama.cpp's greedy continuation of the first 8,
and its tokenization of a short text.

What each file exercises (every one: width 128, 4 heads over 2 kv heads, n_ff 256, 2 layers, F16
matrices, the 512-token byte-level BPE of random_vocab.py, rms eps 1e-6):
- qwen3: heads of 64 (q is 256 rows, wider than the model), q and k RMS-normed per head, NeoX RoPE with
  base 1e6, untied head.
- gemma2: embeddings scaled, post-norms, GELU, NeoX RoPE; attention scores soft-capped at 4 and final
  logits at 8 (caps small enough to bend random logits), a window of 6 on layer 0 and the whole sequence
  on layer 1; tied head.
- phi3: q, k and v in one attn_qkv, gate and up in one ffn_up; NeoX RoPE with LongRoPE factors: the
  context (64) is past rope.scaling.original_context_length (16), so rope_factors_long apply, with
  rope.scaling.attn_factor 1.19; untied head.
- llama (Llama 3.x's layout): rope_freqs from Llama 3's scaling (factor 8, low/high frequency factors 1
  and 4, original context 8192 scaled down with the model), the llama-bpe pre-tokenizer, a BOS added;
  tied head (Llama 3.2). Its vocabulary is small: the 128k-row head and table are covered by the real
  Qwen2.5 (151936) and Gemma 3 (262144) files.
"""
import hashlib
import json
import math
import os
import sys
import tempfile

import gguf
import llama_cpp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_dense  # noqa: E402
from make_random_llama import N_TEACHER, goldens  # noqa: E402  (llama.cpp's goldens, as for the llama files)
from random_vocab import N_VOCAB, vocabulary  # noqa: E402

SEED = 20261124
N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM, N_FF, N_LAYER, N_CTX_TRAIN = 128, 4, 2, 32, 256, 2, 256
N_CTX = 64  # the context llama.cpp runs with here, and the test (tests/common/mod.rs options(64))
RMS_EPS = 1e-6

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
GOLDEN = os.path.join(ROOT, "tests", "goldens", "random-families.json")


def mat(rng, rows, cols, scale=1.0):
    return (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float16)


def gain(rng, n):
    return rng.uniform(0.6, 1.4, n).astype(np.float32)


def llama3_rope_freqs(head_dim, base, factor=8.0, low=1.0, high=4.0, orig=8192):
    """Llama 3's per-pair frequency divisors, as convert_hf_to_gguf.py writes rope_freqs."""
    low_wavelen, high_wavelen = orig / low, orig / high
    out = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi / (1.0 / base ** (i / head_dim))
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def family_file(path, family, rng):
    """Writes one file; returns its architecture."""
    arch = {"llama3": "llama"}.get(family, family)
    hd = 64 if family == "qwen3" else HEAD_DIM
    q_dim, kv_dim = N_HEAD * hd, N_HEAD_KV * hd
    tokens, types, merges = vocabulary(rng)
    w = {"token_embd.weight": rng.standard_normal((N_VOCAB, N_EMBD)).astype(np.float16)}
    for l in range(N_LAYER):
        p = f"blk.{l}."
        w[p + "attn_norm.weight"] = gain(rng, N_EMBD)
        q, k, v = mat(rng, q_dim, N_EMBD, 2.0), mat(rng, kv_dim, N_EMBD, 2.0), mat(rng, kv_dim, N_EMBD)
        if family == "phi3":
            w[p + "attn_qkv.weight"] = np.concatenate([q, k, v])
        else:
            w[p + "attn_q.weight"], w[p + "attn_k.weight"], w[p + "attn_v.weight"] = q, k, v
        if family == "qwen3":
            w[p + "attn_q_norm.weight"] = gain(rng, hd)
            w[p + "attn_k_norm.weight"] = gain(rng, hd)
        w[p + "attn_output.weight"] = mat(rng, N_EMBD, q_dim)
        if family == "gemma2":
            w[p + "post_attention_norm.weight"] = gain(rng, N_EMBD)
        w[p + "ffn_norm.weight"] = gain(rng, N_EMBD)
        gate, up = mat(rng, N_FF, N_EMBD), mat(rng, N_FF, N_EMBD)
        if family == "phi3":
            w[p + "ffn_up.weight"] = np.concatenate([gate, up])
        else:
            w[p + "ffn_gate.weight"], w[p + "ffn_up.weight"] = gate, up
        w[p + "ffn_down.weight"] = mat(rng, N_EMBD, N_FF)
        if family == "gemma2":
            w[p + "post_ffw_norm.weight"] = gain(rng, N_EMBD)
    w["output_norm.weight"] = gain(rng, N_EMBD)
    if family in ("qwen3", "phi3"):
        w["output.weight"] = mat(rng, N_VOCAB, N_EMBD, 4.0)
    else:
        # A tied head reads the embedding table: keep its logits spread like an untied one's.
        w["token_embd.weight"] = (w["token_embd.weight"].astype(np.float32) * 4.0 / np.sqrt(N_EMBD)).astype(np.float16)
    base = 1e6 if family == "qwen3" else 10000.0
    if family == "llama3":
        w["rope_freqs.weight"] = llama3_rope_freqs(hd, base, orig=N_CTX_TRAIN // 4)
    if family == "phi3":
        w["rope_factors_long.weight"] = rng.uniform(1.0, 6.0, hd // 2).astype(np.float32)
        w["rope_factors_short.weight"] = rng.uniform(1.0, 1.5, hd // 2).astype(np.float32)

    wr = gguf.GGUFWriter(path, arch)
    # Not the family's name: llama.cpp gives a model named "phi3" special-token handling that needs
    # Phi-3's own tokens.
    wr.add_name("tiny-random")
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_context_length(N_CTX_TRAIN)
    wr.add_embedding_length(N_EMBD)
    wr.add_block_count(N_LAYER)
    wr.add_feed_forward_length(N_FF)
    wr.add_head_count(N_HEAD)
    wr.add_head_count_kv(N_HEAD_KV)
    wr.add_key_length(hd)
    wr.add_value_length(hd)
    wr.add_rope_dimension_count(hd)
    wr.add_rope_freq_base(base)
    wr.add_layer_norm_rms_eps(RMS_EPS)
    if family == "gemma2":
        wr.add_sliding_window(6)
        wr.add_attn_logit_softcapping(4.0)
        wr.add_final_logit_softcapping(8.0)
    if family == "phi3":
        wr.add_rope_scaling_orig_ctx_len(16)
        wr.add_rope_scaling_attn_factors(1.19)
    wr.add_vocab_size(N_VOCAB)
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre({"llama3": "llama-bpe", "qwen3": "qwen2"}.get(family, "default"))
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(N_VOCAB - 1)
    wr.add_eos_token_id(N_VOCAB - 1)
    wr.add_add_bos_token(family in ("llama3", "gemma2"))
    for name, t in w.items():
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def main():
    rng = np.random.default_rng(SEED)
    records = []
    for family in ["qwen3", "gemma2", "phi3", "llama3"]:
        rel = f"tests/data/random-{family}.gguf"
        path = os.path.join(ROOT, rel)
        family_file(path, family, rng)
        teacher_ids = [N_VOCAB - 1] + [int(x) for x in rng.integers(0, N_VOCAB - 1, N_TEACHER - 1)]
        teacher, greedy, tokenized = goldens(path, teacher_ids, n_ctx=N_CTX)
        meta, w = numpy_dense.load(path)
        ref = numpy_dense.forward(meta, w, teacher_ids, n_ctx=N_CTX)
        err = np.abs(ref - np.array(teacher))
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        records.append({
            "file": rel,
            "sha256": sha,
            "bytes": os.path.getsize(path),
            "tensor_types": {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors},
            "teacher_ids": teacher_ids,
            "teacher_logits": teacher,
            "f32_logits": [[round(float(x), 4) for x in row] for row in ref],
            "greedy": greedy,
            "tokenize": tokenized,
        })
        print(f"{family}: {os.path.getsize(path)} bytes; llama.cpp vs f32: max abs {err.max():.4f}, "
              f"mean {err.mean():.5f}; logit std {ref.std(1).mean():.3f}; greedy gaps "
              f"{[s['gap'] for s in greedy['steps']]}")
    out = {
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx={N_CTX}, logits_all, argmax",
        "seed": SEED,
        "n_vocab": N_VOCAB,
        "records": records,
    }
    with open(GOLDEN, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {GOLDEN}: {os.path.getsize(GOLDEN)} bytes")


if __name__ == "__main__":
    sys.exit(main())

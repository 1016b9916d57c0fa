#!/usr/bin/env python3
"""Random-weight qwen35 (Qwen3.5 dense) GGUFs at the REAL dimensions of Qwen3.5-0.8B and -2B, for
`wick bench` and llama-bench: what a token costs in dispatches, weight bytes and time at full size. The
numbers the model computes are meaningless.

Run from the repository root with a Python that has numpy and gguf (0.19 or newer):

    python scripts/make-qwen35-shape.py                     # both, Q8_0
    python scripts/make-qwen35-shape.py --model 0.8b --q4k  # also a Q4_K copy (wick quantize)

Files go to models/shape/ (git ignores models/): qwen3.5-0.8b.shape.Q8_0.gguf, qwen3.5-2b.shape.Q8_0.gguf.

Layout: tensor names, shapes and metadata keys as llama.cpp's converter writes a Qwen3.5 checkpoint
(conversion/qwen.py, Qwen3_5TextModel; the same as tests/goldens/make_random_qwen35.py): of every 4
layers 3 Gated DeltaNet (attn_qkv, attn_gate, ssm_conv1d, ssm_dt.bias, ssm_a, ssm_beta, ssm_alpha,
ssm_norm, ssm_out) and one gated attention (attn_q with q and gate per head, attn_k, attn_v, q/k norms,
attn_output); post_attention_norm before the SwiGLU feed-forward block; tied embeddings; rope sections
[11, 11, 10, 0] over 64 of the 256 dimensions of a head. Matrices are Q8_0 (a quantized block of 256 random
rows tiled, as make-shape-model.py does); the conv weights, ssm_a and ssm_dt stay F32 as llama.cpp keeps
them. No MTP layer is written. The tokenizer is the 512-token test vocabulary padded to 248320 rows.

Dimensions (2026-11-25): hidden 1024 / 2048, 24 layers, FFN 3584 / 6144, 8 query heads over 2 KV heads
of 256, rope base 1e7, vocab 248320, tied embeddings, from public model cards of Qwen3.5-0.8B and -2B.
The linear-attention heads (16 key and 16 value heads of 128, a 4-tap convolution) are Qwen3-Next's
and Qwen3.5's published defaults; not confirmed from these two checkpoints' config.json.
"""
import argparse
import math
import os
import subprocess
import sys
import time

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from random_weights import Weights, add_vocabulary, write_tensors  # noqa: E402

ARCH = "qwen35"
Q = gguf.GGMLQuantizationType
COMMON = dict(n_layer=24, n_head=8, n_head_kv=2, head_dim=256, n_rot=64, k_heads=16, v_heads=16,
              ssm_dim=128, conv=4, interval=4, n_vocab=248320, n_ctx=262144, rope_base=1e7)
MODELS = {
    "0.8b": dict(name="qwen3.5-0.8b", title="Qwen3.5-0.8B (random weights, real shape)",
                 n_embd=1024, n_ff=3584, **COMMON),
    "2b": dict(name="qwen3.5-2b", title="Qwen3.5-2B (random weights, real shape)",
               n_embd=2048, n_ff=6144, **COMMON),
}


def build(m, qtype, rng):
    """name -> (array, raw_dtype or None)."""
    W = Weights(qtype, rng)
    d, hd, nv, nk, sd = m["n_embd"], m["head_dim"], m["v_heads"], m["k_heads"], m["ssm_dim"]
    conv_dim = 2 * nk * sd + nv * sd
    t = {"token_embd.weight": (W.mat((m["n_vocab"], d), math.sqrt(d) * 0.1), qtype)}
    for l in range(m["n_layer"]):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = (W.norm(d), None)
        if (l + 1) % m["interval"]:
            t[p + "attn_qkv.weight"] = (W.mat((conv_dim, d)), qtype)
            t[p + "attn_gate.weight"] = (W.mat((nv * sd, d)), qtype)
            t[p + "ssm_conv1d.weight"] = ((rng.standard_normal((conv_dim, m["conv"])) * 0.5).astype(np.float32), None)
            t[p + "ssm_dt.bias"] = (rng.standard_normal(nv).astype(np.float32), None)
            t[p + "ssm_a"] = (-np.exp(rng.uniform(-1, 1, nv)).astype(np.float32), None)
            t[p + "ssm_beta.weight"] = (W.mat((nv, d)), qtype)
            t[p + "ssm_alpha.weight"] = (W.mat((nv, d)), qtype)
            t[p + "ssm_norm.weight"] = (W.norm(sd), None)
            t[p + "ssm_out.weight"] = (W.mat((d, nv * sd)), qtype)
        else:
            t[p + "attn_q.weight"] = (W.mat((2 * m["n_head"] * hd, d), 2.0), qtype)
            t[p + "attn_k.weight"] = (W.mat((m["n_head_kv"] * hd, d), 2.0), qtype)
            t[p + "attn_v.weight"] = (W.mat((m["n_head_kv"] * hd, d)), qtype)
            t[p + "attn_q_norm.weight"] = (W.norm(hd), None)
            t[p + "attn_k_norm.weight"] = (W.norm(hd), None)
            t[p + "attn_output.weight"] = (W.mat((d, m["n_head"] * hd)), qtype)
        t[p + "post_attention_norm.weight"] = (W.norm(d), None)
        t[p + "ffn_gate.weight"] = (W.mat((m["n_ff"], d)), qtype)
        t[p + "ffn_up.weight"] = (W.mat((m["n_ff"], d)), qtype)
        t[p + "ffn_down.weight"] = (W.mat((d, m["n_ff"])), qtype)
    t["output_norm.weight"] = (W.norm(d) * 2.5, None)
    return t


def write(path, m, qtype, rng):
    tensors = build(m, qtype, rng)
    wr = gguf.GGUFWriter(path, ARCH)
    wr.add_name(m["title"])
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    wr.add_quantization_version(gguf.GGML_QUANT_VERSION)
    wr.add_context_length(m["n_ctx"])
    wr.add_embedding_length(m["n_embd"])
    wr.add_block_count(m["n_layer"])
    wr.add_feed_forward_length(m["n_ff"])
    wr.add_head_count(m["n_head"])
    wr.add_head_count_kv(m["n_head_kv"])
    wr.add_key_length(m["head_dim"])
    wr.add_value_length(m["head_dim"])
    wr.add_layer_norm_rms_eps(1e-6)
    wr.add_rope_freq_base(m["rope_base"])
    wr.add_rope_dimension_count(m["n_rot"])
    wr.add_rope_dimension_sections([11, 11, 10, 0])
    wr.add_ssm_conv_kernel(m["conv"])
    wr.add_ssm_state_size(m["ssm_dim"])
    wr.add_ssm_group_count(m["k_heads"])
    wr.add_ssm_time_step_rank(m["v_heads"])
    wr.add_ssm_inner_size(m["v_heads"] * m["ssm_dim"])
    wr.add_full_attention_interval(m["interval"])
    add_vocabulary(wr, m["n_vocab"])
    return write_tensors(wr, tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["0.8b", "2b", "all"], default="all")
    ap.add_argument("--q4k", action="store_true", help="also write a Q4_K copy with target/release/wick quantize")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "shape"))
    ap.add_argument("--seed", type=int, default=20261125)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for key in (["0.8b", "2b"] if args.model == "all" else [args.model]):
        m = MODELS[key]
        path = os.path.join(args.out, f"{m['name']}.shape.Q8_0.gguf")
        t0 = time.time()
        n_params = write(path, m, Q.Q8_0, np.random.default_rng([args.seed, len(key)]))
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, {n_params / 1e9:.3f}B parameters, {time.time() - t0:.1f} s")
        if args.q4k:
            dst = path.replace(".Q8_0.gguf", ".Q4_K.gguf")
            t0 = time.time()
            subprocess.run([os.path.join(ROOT, "target", "release", "wick"), "quantize", path, dst, "Q4_K"], check=True)
            print(f"{dst}: {os.path.getsize(dst) / 1e6:.1f} MB, {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

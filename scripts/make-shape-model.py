#!/usr/bin/env python3
"""Random-weight deepseek2 GGUFs at the REAL dimensions of two models, for `wick bench`: what a token
costs in dispatches and weight bytes at full size. The numbers the model computes are meaningless.

Run from the repository root with the venv that has numpy and gguf:

    python scripts/make-shape-model.py                  # both models
    python scripts/make-shape-model.py --model glm --layers 5
    python scripts/make-shape-model.py --q4k            # also a Q4_K copy

Files go to models/shape/ (git ignores models/):
- youtu-llm-2b.shape.Q8_0.gguf         Youtu-LLM 2B, all 32 layers (about 1.96B parameters, ~2.1 GB).
- glm-4.7-flash.shape-3L.Q8_0.gguf     GLM-4.7-Flash with its real per-layer dimensions but only
                                       --layers N layers (default 3: its one leading dense layer and
                                       2 MoE layers; the real model has 47, about 30B parameters,
                                       too big for this disk and for lavapipe). A full-depth figure is
                                       extrapolated from the per-layer ones (see BENCHMARKS.md).
- with --q4k, the same files as *.Q4_K.gguf, made by `target/release/wick quantize IN OUT Q4_K`
  (rows that are not a multiple of 256, e.g. attn_k_b's 128/192, fall back to Q5_0 as in llama.cpp).

How the files are written
-------------------------
Tensor names, shapes and metadata keys are those llama.cpp's convert_hf_to_gguf.py (class
DeepseekV2Model, which both Youtu and GLM-4.7-Flash convert through) writes, in the split MLA layout
(attn_k_b + attn_v_b, head_count_kv 1, key_length = kv_lora + rope, value_length = kv_lora, the
per-head sizes in key_length_mla / value_length_mla), as tests/goldens/make_random_deepseek2.py does.
Matrices are written directly as Q8_0 (or Q4_0 with --type Q4_0): a block of 256 random rows per
shape is quantized with gguf.quants.quantize and tiled to the full row count, and layers share the
tiled arrays, so writing takes seconds and little memory. Norm gains, the MoE router (ffn_gate_inp,
kept F32 as llama.cpp keeps it) and exp_probs_b are fully random per layer, so routing varies.
The tokenizer is the 512-token byte-level one of tests/goldens/random_vocab.py, padded with
UNUSED "[PAD<i>]" tokens up to the real vocabulary size, so token_embd/output have the real shape.

Configurations and where each number comes from (looked up 2026-11-22)
-----------------------------------------------------------------------
Youtu-LLM 2B (tencent/Youtu-LLM-2B, HF architecture YoutuForCausalLM, dense MLA, no MoE):
  hidden 2048, layers 32, heads 16, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64,
  v_head 128, intermediate 6144, vocab 128256, context 131072, rms eps 1e-6, tied embeddings:
    the defaults of transformers' YoutuConfig (src/transformers/models/youtu/configuration_youtu.py,
    documented as matching tencent/Youtu-LLM-2B) and the model's README (gass88wei/youtu-tip,
    youtu-llm/README.md: 1.96B parameters, 32 layers, 16 heads, MLA ranks 1536/512, dims 128/64/128,
    context 131072, vocab 128256).
  rope theta 1600000, rope_type "default" (no YaRN): quoted from the config.json in two third-party
    places (a Nano-vLLM adaptation plan for Youtu-LLM and a Rust model-detection test fixture); not
    confirmed from the checkpoint itself.
  No experts: llama.cpp's converter writes leading_dense_block_count = 32 (all dense),
    expert_feed_forward_length = intermediate_size (6144) and expert_shared_count 0 for it
    (convert_hf_to_gguf.py DeepseekV2Model.set_gguf_parameters); gating function: none.
GLM-4.7-Flash (zai-org/GLM-4.7-Flash, HF architecture Glm4MoeLiteForCausalLM, MLA + MoE, ~30B-A3B):
  hidden 2048, layers 47 (1 dense + 46 MoE), heads 20, q_lora_rank 768, kv_lora_rank 512, qk_nope
  192, qk_rope 64, v_head 256, dense intermediate 10240, moe_intermediate 1536, 64 routed experts,
  1 shared, 4 per token, first_k_dense_replace 1, norm_topk_prob true, routed_scaling_factor 1.8,
  topk_method noaux_tc (so an e_score_correction_bias -> exp_probs_b), n_group 1 / topk_group 1,
  vocab 154880, context 202752, rope theta 1e6 with rope_scaling null (no YaRN), rms eps 1e-5,
  untied output:
    a vLLM unit test that writes the checkpoint's config.json values (tests for glm4_moe_lite), the
    transformers Glm4MoeLiteConfig defaults (configuration_glm4_moe_lite.py), and slime's training
    script scripts/models/glm4.7-30B-A3B.sh (1 dense + 46 MoE layers, 64 experts top-4, 1 shared,
    sigmoid router score with expert bias, top-k scaling 1.8, q/kv lora 768/512, qk 192 + 64, v 256,
    vocab 154880, rotary base 1e6) agree on every number.
  Gating: sigmoid (expert_gating_func 2): slime's script (--moe-router-score-function sigmoid) and
    llama.cpp PR #18980 ("GLM 4.7 Lite uses SIGMOID, not SOFTMAX").
  GGUF facts seen in llama.cpp load logs of real GLM-4.7-Flash GGUFs (llama.cpp issue #19613,
    LM Studio bug tracker #1495): block_count 47, expert_shared_count 1, expert_weights_scale 1.8,
    expert_weights_norm true, rope.dimension_count 64, 154880 tokens. The MTP (next-n) layer that the
    checkpoint also carries is skipped by llama.cpp's converter and is not written here.
  Not confirmed from the checkpoint itself: the exact rms eps (1e-5 in both configs above) and that the
  released config has no rope scaling (the vLLM test says null); neither changes the benchmark.
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
from random_weights import Weights, add_vocabulary, write_tensors  # noqa: E402

ARCH = "deepseek2"
Q = gguf.GGMLQuantizationType

MODELS = {
    "youtu": dict(
        name="youtu-llm-2b", title="Youtu-LLM 2B (random weights, real shape)",
        n_embd=2048, n_layer=32, n_head=16, q_lora=1536, kv_lora=512, nope=128, rope=64, v=128,
        n_ff=6144, n_vocab=128256, n_ctx=131072, rope_base=1600000.0, rms_eps=1e-6, tied=True,
        n_dense=None,  # None: every layer dense
        n_expert=0, n_used=0, n_ff_exp=6144, n_shared=0, gating=None, norm_w=None, w_scale=None,
        probs_b=False,
    ),
    "glm": dict(
        name="glm-4.7-flash", title="GLM-4.7-Flash (random weights, real shape)",
        n_embd=2048, n_layer=47, n_head=20, q_lora=768, kv_lora=512, nope=192, rope=64, v=256,
        n_ff=10240, n_vocab=154880, n_ctx=202752, rope_base=1000000.0, rms_eps=1e-5, tied=False,
        n_dense=1, n_expert=64, n_used=4, n_ff_exp=1536, n_shared=1, gating=2, norm_w=True,
        w_scale=1.8, probs_b=True, default_layers=3,
    ),
}


def build(m, n_layer, qtype, rng):
    """name -> (array, raw_dtype or None)."""
    W = Weights(qtype, rng)
    d, nh, dk = m["n_embd"], m["n_head"], m["nope"] + m["rope"]
    n_dense = n_layer if m["n_dense"] is None else m["n_dense"]
    t = {"token_embd.weight": (W.mat((m["n_vocab"], d), math.sqrt(d) * (0.1 if m["tied"] else 1.0)), qtype)}
    for l in range(n_layer):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = (W.norm(d), None)
        t[p + "attn_q_a.weight"] = (W.mat((m["q_lora"], d)), qtype)
        t[p + "attn_q_a_norm.weight"] = (W.norm(m["q_lora"]), None)
        t[p + "attn_q_b.weight"] = (W.mat((nh * dk, m["q_lora"]), 2.0), qtype)
        t[p + "attn_kv_a_mqa.weight"] = (W.mat((m["kv_lora"] + m["rope"], d), 2.0), qtype)
        t[p + "attn_kv_a_norm.weight"] = (W.norm(m["kv_lora"]), None)
        # numpy shapes (ggml's ne reversed): k_b (n_head, kv_lora, nope), v_b (n_head, v, kv_lora)
        t[p + "attn_k_b.weight"] = (W.mat((nh, m["kv_lora"], m["nope"])), qtype)
        t[p + "attn_v_b.weight"] = (W.mat((nh, m["v"], m["kv_lora"])), qtype)
        t[p + "attn_output.weight"] = (W.mat((d, nh * m["v"])), qtype)
        t[p + "ffn_norm.weight"] = (W.norm(d), None)
        if l < n_dense:
            t[p + "ffn_gate.weight"] = (W.mat((m["n_ff"], d)), qtype)
            t[p + "ffn_up.weight"] = (W.mat((m["n_ff"], d)), qtype)
            t[p + "ffn_down.weight"] = (W.mat((d, m["n_ff"])), qtype)
        else:
            ne, fe = m["n_expert"], m["n_ff_exp"]
            router = rng.standard_normal((ne, d)) * (2.0 / math.sqrt(d))
            t[p + "ffn_gate_inp.weight"] = (router.astype(np.float32), None)
            if m["probs_b"]:
                t[p + "exp_probs_b.bias"] = ((rng.standard_normal(ne) * 0.25).astype(np.float32), None)
            t[p + "ffn_gate_exps.weight"] = (W.mat((ne, fe, d)), qtype)
            t[p + "ffn_up_exps.weight"] = (W.mat((ne, fe, d)), qtype)
            t[p + "ffn_down_exps.weight"] = (W.mat((ne, d, fe)), qtype)
            fs = fe * m["n_shared"]
            t[p + "ffn_gate_shexp.weight"] = (W.mat((fs, d)), qtype)
            t[p + "ffn_up_shexp.weight"] = (W.mat((fs, d)), qtype)
            t[p + "ffn_down_shexp.weight"] = (W.mat((d, fs)), qtype)
    t["output_norm.weight"] = (W.norm(d) * (2.5 if m["tied"] else 1.0), None)
    if not m["tied"]:
        t["output.weight"] = (W.mat((m["n_vocab"], d), 4.0), qtype)
    return t, n_dense


def write(path, m, n_layer, qtype, rng):
    tensors, n_dense = build(m, n_layer, qtype, rng)

    wr = gguf.GGUFWriter(path, ARCH)
    wr.add_name(m["title"] + (f", {n_layer} of {m['n_layer']} layers" if n_layer != m["n_layer"] else ""))
    wr.add_file_type({Q.Q8_0: gguf.LlamaFileType.MOSTLY_Q8_0, Q.Q4_0: gguf.LlamaFileType.MOSTLY_Q4_0}[qtype])
    wr.add_quantization_version(gguf.GGML_QUANT_VERSION)
    wr.add_context_length(m["n_ctx"])
    wr.add_embedding_length(m["n_embd"])
    wr.add_block_count(n_layer)
    wr.add_feed_forward_length(m["n_ff"])
    wr.add_head_count(m["n_head"])
    wr.add_head_count_kv(1)
    wr.add_key_length(m["kv_lora"] + m["rope"])
    wr.add_value_length(m["kv_lora"])
    wr.add_key_length_mla(m["nope"] + m["rope"])
    wr.add_value_length_mla(m["v"])
    wr.add_layer_norm_rms_eps(m["rms_eps"])
    wr.add_leading_dense_block_count(n_dense)
    wr.add_q_lora_rank(m["q_lora"])
    wr.add_kv_lora_rank(m["kv_lora"])
    wr.add_rope_dimension_count(m["rope"])
    wr.add_rope_freq_base(m["rope_base"])
    wr.add_expert_feed_forward_length(m["n_ff_exp"])
    wr.add_expert_shared_count(m["n_shared"])
    if m["n_expert"]:
        wr.add_expert_count(m["n_expert"])
        wr.add_expert_used_count(m["n_used"])
        wr.add_expert_weights_scale(m["w_scale"])
        wr.add_expert_weights_norm(m["norm_w"])
        wr.add_expert_gating_func(gguf.ExpertGatingFuncType(m["gating"]))
    add_vocabulary(wr, m["n_vocab"])
    return write_tensors(wr, tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["youtu", "glm", "all"], default="all")
    ap.add_argument("--layers", type=int, default=None,
                    help="layers to write (default: Youtu all 32; GLM-4.7-Flash 3 = 1 dense + 2 MoE)")
    ap.add_argument("--type", choices=["Q8_0", "Q4_0"], default="Q8_0", help="type of the matrices")
    ap.add_argument("--q4k", action="store_true",
                    help="also write a Q4_K copy with target/release/wick quantize")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "shape"))
    ap.add_argument("--seed", type=int, default=20261122)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    qtype = Q[args.type]
    for key in (["youtu", "glm"] if args.model == "all" else [args.model]):
        m = MODELS[key]
        n_layer = args.layers or m.get("default_layers", m["n_layer"])
        n_dense = n_layer if m["n_dense"] is None else m["n_dense"]
        if n_layer < 1 or (m["n_expert"] and n_layer <= n_dense):
            sys.exit(f"{key}: --layers must be more than its {n_dense} dense layer(s)")
        depth = "" if n_layer == m["n_layer"] else f"-{n_layer}L"
        path = os.path.join(args.out, f"{m['name']}.shape{depth}.{args.type}.gguf")
        t0 = time.time()
        n_params = write(path, m, n_layer, qtype, np.random.default_rng([args.seed, len(key)]))
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, {n_params / 1e9:.3f}B parameters, "
              f"{n_layer} layers ({n_dense} dense), {time.time() - t0:.1f} s")
        if args.q4k:
            dst = path.replace(f".{args.type}.gguf", ".Q4_K.gguf")
            t0 = time.time()
            subprocess.run([os.path.join(ROOT, "target", "release", "wick"), "quantize", path, dst, "Q4_K"],
                           check=True)
            print(f"{dst}: {os.path.getsize(dst) / 1e6:.1f} MB, {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Random-weight mixture-of-experts GGUFs (qwen3moe, gpt-oss) at the REAL per-layer dimensions of two
models, with only a few layers, for `wick bench`: what a token costs in dispatches and weight bytes at
full width. The numbers the model computes are meaningless.

Run from the repository root with a Python that has numpy and gguf (0.19 or newer: it quantizes MXFP4):

    python scripts/make-moe-shape.py                            # both models, 4 layers each
    python scripts/make-moe-shape.py --model qwen3moe --layers 8 --type Q4_0
    python scripts/make-moe-shape.py --model gpt-oss --layers 2

Files go to models/shape/ (git ignores models/):
- qwen3-30b-a3b.shape-<N>L.<TYPE>.gguf   Qwen3-30B-A3B's layer, --layers N of its 48 (default 4:
                                         3.3 GB in Q8_0, 1.8 GB in Q4_0; the real model is about 30.5B
                                         parameters). Matrices Q8_0, or Q4_0 with --type Q4_0.
- gpt-oss-20b.shape-<N>L.MXFP4.gguf      gpt-oss-20b's layer, --layers N of its 24 (default 4: 3.0 GB,
                                         of which 1.2 GB are the two 201088-row tables). Experts MXFP4,
                                         every other matrix Q8_0 (--type does not apply).
A full-depth figure is extrapolated from the per-layer ones, as for make-shape-model.py's GLM file.

How the files are written
-------------------------
Tensor names, shapes, types and metadata keys are those llama.cpp's converter writes, as the tiny
random-file generators that are checked against llama.cpp write them for one layer:
- qwen3moe (tests/goldens/make_random_moe.py, conversion/qwen.py Qwen3MoeModel): per block attn_norm,
  attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm (per head, head_dim gains), ffn_norm,
  ffn_gate_inp (the router, F32: llama.cpp's quantizer leaves it F32 by name), ffn_gate_exps,
  ffn_up_exps, ffn_down_exps; token_embd, output_norm and an untied output. Keys: context_length,
  embedding_length, feed_forward_length (HF's intermediate_size, which llama.cpp does not use when
  expert_feed_forward_length is there), head_count, head_count_kv, rope.freq_base, rms eps,
  expert_count, expert_used_count, attention.key_length / value_length (head_dim), file_type,
  expert_feed_forward_length (one value). No rope.dimension_count. Pre-tokenizer "qwen2".
- gpt-oss (tests/goldens/make_random_gpt_oss.py, conversion/gpt_oss.py GptOssModel), as its
  random-gpt-oss-q8_0.gguf, llama.cpp's MXFP4_MOE quantization (general.file_type 38): per block
  attn_norm, attn_q / attn_k / attn_v / attn_output each with its F32 bias, attn_sinks (one F32 logit
  per query head), post_attention_norm (the norm before the experts), ffn_gate_inp weight (F32) and
  bias, ffn_{gate,up,down}_exps weights in MXFP4 (gguf-py's gguf.quants.quantize, as the converter
  writes the real model's experts; ggml's blocks are byte-identical for the same numbers) with their
  2-D F32 biases [n_expert, rows]; token_embd, output_norm and the untied output Q8_0. Keys as that
  file has them: feed_forward_length and expert_feed_forward_length both HF's intermediate_size,
  attention.sliding_window (llama.cpp and Wick slide on the even layers, full attention on the odd
  ones: no sliding_window_pattern key is written, as the converter writes none), rope.scaling.type yarn
  with factor, original_context_length, yarn_beta_fast 32 and yarn_beta_slow 1, key/value_length
  head_dim, no rope.dimension_count. Pre-tokenizer "gpt-4o", with the tiny generator's two extra
  merges ("a B", "4 2") in place of random_vocab's last two.
Both: the tokenizer is the 512-token byte-level BPE of tests/goldens/random_vocab.py (from
scripts/random_weights.py's seed), padded with UNUSED "[PAD<i>]" tokens up to the real vocabulary size
so that token_embd and output have the real shape; <|endoftext|> (511) is BOS and EOS, no BOS added;
the chat template is tests/goldens/chat_template/qwen3.jinja or gpt-oss.jinja, as the tiny files have.
Like the tiny generators (and the converter), no {arch}.vocab_size key is written.

Matrices are written directly quantized (scripts/random_weights.py's Weights): a block of 256 random
rows per shape is quantized with gguf.quants.quantize and tiled to the full row count, and layers share
the tiled arrays (so every layer has the same attention and expert matrices, and an expert tensor's
experts repeat the same 256 rows), so writing takes seconds to a minute (disk-bound) and memory stays
about the size of one layer plus the two tables (1.6 GB peak for
both default files, measured). Norm gains, the routers (weights and,
for gpt-oss, biases), the attention sinks and every bias are fully random per layer, so routing varies
from layer to layer and token to token. Scales follow the tiny generators: matrices std 1/sqrt(fan_in),
projections back into the residual stream 0.7/sqrt(fan_in), output 4/sqrt(n_embd), routers
8/sqrt(n_embd) (qwen3moe) and 4/sqrt(n_embd) with biases 0.3 (gpt-oss), gpt-oss expert gate/up
2.5/sqrt(n_embd) with biases 0.2, down bias 0.1, q/k/v biases 0.2, output bias 0.1, sinks std 1.

Configurations and where each number comes from (the models' public config.json, 2026-11-27)
-------------------------------------------------------------------------------------------
Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B, HF architecture Qwen3MoeForCausalLM, 30.5B parameters, 3.3B active):
  hidden_size 2048, num_hidden_layers 48, num_attention_heads 32, num_key_value_heads 4, head_dim 128,
  intermediate_size 6144, moe_intermediate_size 768, num_experts 128, num_experts_per_tok 8,
  norm_topk_prob true (llama.cpp's qwen3moe always renormalizes; no key), decoder_sparse_step 1 and
  mlp_only_layers [] (every layer MoE), vocab_size 151936, max_position_embeddings 40960 (written as
  context_length), rope_theta 1e6 with rope_scaling null, rms_norm_eps 1e-6, tie_word_embeddings false,
  no attention bias:
    the model's config.json; cross-checked against slime's
    training script scripts/models/qwen3-30B-A3B.sh (48 layers, hidden 2048, ffn 6144, 32 heads over 4
    query groups of 128, norm eps 1e-6, rotary base 1e6, untied, vocab 151936, moe ffn 768, 128
    experts, top-8 softmax router, every layer MoE). max_position_embeddings 40960 is not in that script
    and was not confirmed here from the checkpoint; it changes nothing in a benchmark.
gpt-oss-20b (openai/gpt-oss-20b, HF architecture GptOssForCausalLM, 20.9B parameters, 3.6B active):
  hidden_size 2880, num_hidden_layers 24, num_attention_heads 64, num_key_value_heads 8, head_dim 64,
  intermediate_size 2880, num_local_experts 32, experts_per_token 4, vocab_size 201088, sliding_window
  128 with layer_types alternating sliding_attention / full_attention (even layers slide), rope_theta
  150000, rope_scaling {rope_type yarn, factor 32, original_max_position_embeddings 4096, beta_fast 32,
  beta_slow 1}, max_position_embeddings 131072, rms_norm_eps 1e-5, attention_bias true, swiglu_limit 7,
  tie_word_embeddings false; experts stored MXFP4 in the checkpoint, attention, router and tables BF16:
    the model's config.json; cross-checked against a model-inspector report of
    openai/gpt-oss-20b's config (ParagEkbote/hf-model-inspector, model_inspection_report.md: hidden
    2880, 24 layers, 64 heads, 8 KV heads, intermediate 2880, vocab 201088, max positions 131072, rope
    theta 150000, sliding window 128, the YaRN dict above) and a repository snapshot summary
    (EchoCog/gpt-oss-20b docs/gpt-oss-20b-architecture.md: head_dim 64, 32 local experts, top-4,
    even layers sliding, rms eps 1e-5, untied, MXFP4 experts with attention/router/embeddings BF16).
"""
import argparse
import math
import os
import sys
import time

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from random_weights import VOCAB_SEED, Weights, write_tensors  # noqa: E402  (also puts tests/goldens on the path)
from random_vocab import vocabulary  # noqa: E402

Q = gguf.GGMLQuantizationType
OUT_SCALE = 0.7  # make_random_qwen35.OUT_SCALE: projections back into the residual stream

MODELS = {
    "qwen3moe": dict(
        arch="qwen3moe", name="qwen3-30b-a3b", title="Qwen3-30B-A3B (random weights, real shape)",
        n_embd=2048, n_layer=48, n_head=32, n_kv=4, head_dim=128, n_ff=6144, n_expert=128, n_used=8,
        n_ff_exp=768, n_vocab=151936, n_ctx=40960, rope_base=1e6, rms_eps=1e-6,
        pre="qwen2", template="qwen3.jinja", extra_merges=[], router=8.0,
    ),
    "gpt-oss": dict(
        arch="gpt-oss", name="gpt-oss-20b", title="gpt-oss-20b (random weights, real shape)",
        n_embd=2880, n_layer=24, n_head=64, n_kv=8, head_dim=64, n_ff=2880, n_expert=32, n_used=4,
        n_ff_exp=2880, n_vocab=201088, n_ctx=131072, rope_base=150000.0, rms_eps=1e-5,
        window=128, factor=32.0, orig_ctx=4096,
        pre="gpt-4o", template="gpt-oss.jinja", extra_merges=[("a", "B"), ("4", "2")], router=4.0,
    ),
}
DEFAULT_LAYERS = 4
# make_random_gpt_oss.py's scales
GATE_UP = 2.5
BIAS_QKV, BIAS_OUT, BIAS_EXP, BIAS_DOWN, BIAS_ROUTER, SINK_STD = 0.2, 0.1, 0.2, 0.1, 0.3, 1.0


def add_vocabulary(wr, m):
    """The test models' 512-token vocabulary (with gpt-oss's extra merges, as make_random_gpt_oss.py's
    gpt_oss_vocabulary puts them), padded with UNUSED "[PAD<i>]" tokens to the real vocabulary size;
    the tokenizer keys and chat template as the tiny generators write them."""
    tokens, types, merges = vocabulary(np.random.default_rng(VOCAB_SEED))
    extra = m["extra_merges"]
    if extra:
        n = len(tokens)
        tokens = tokens[:n - 1 - len(extra)]
        merges = merges[:len(merges) - len(extra)]
        for a, b in extra:
            assert a + b not in tokens
            merges.append(f"{a} {b}")
            tokens.append(a + b)
        tokens.append("<|endoftext|>")
        assert len(tokens) == n and len(set(tokens)) == n
    eos = len(tokens) - 1  # <|endoftext|>
    n_vocab = m["n_vocab"]
    tokens = tokens + [f"[PAD{i}]" for i in range(len(tokens), n_vocab)]
    types = types + [gguf.TokenType.UNUSED] * (n_vocab - len(types))
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre(m["pre"])
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(eos)
    wr.add_eos_token_id(eos)
    wr.add_add_bos_token(False)
    with open(os.path.join(ROOT, "tests", "goldens", "chat_template", m["template"])) as f:
        wr.add_chat_template(f.read())


def build_qwen3moe(m, n_layer, qtype, rng):
    """name -> (array, raw_dtype or None), in make_random_moe.qwen3moe_weights's order."""
    W = Weights(qtype, rng)
    d, hd, E, f = m["n_embd"], m["head_dim"], m["n_expert"], m["n_ff_exp"]
    t = {"token_embd.weight": (W.mat((m["n_vocab"], d), math.sqrt(d)), qtype)}
    for l in range(n_layer):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = (W.norm(d), None)
        t[p + "attn_q.weight"] = (W.mat((m["n_head"] * hd, d)), qtype)
        t[p + "attn_k.weight"] = (W.mat((m["n_kv"] * hd, d)), qtype)
        t[p + "attn_v.weight"] = (W.mat((m["n_kv"] * hd, d)), qtype)
        t[p + "attn_output.weight"] = (W.mat((d, m["n_head"] * hd), OUT_SCALE), qtype)
        t[p + "attn_q_norm.weight"] = (W.norm(hd), None)
        t[p + "attn_k_norm.weight"] = (W.norm(hd), None)
        t[p + "ffn_norm.weight"] = (W.norm(d), None)
        router = rng.standard_normal((E, d)) * (m["router"] / math.sqrt(d))
        t[p + "ffn_gate_inp.weight"] = (router.astype(np.float32), None)
        t[p + "ffn_gate_exps.weight"] = (W.mat((E, f, d)), qtype)
        t[p + "ffn_up_exps.weight"] = (W.mat((E, f, d)), qtype)
        t[p + "ffn_down_exps.weight"] = (W.mat((E, d, f), OUT_SCALE), qtype)
    t["output_norm.weight"] = (W.norm(d), None)
    t["output.weight"] = (W.mat((m["n_vocab"], d), 4.0), qtype)
    return t


def build_gpt_oss(m, n_layer, rng):
    """name -> (array, raw_dtype or None), in make_random_gpt_oss.weights's order: experts MXFP4, the
    other matrices Q8_0, norms, biases, sinks and the router F32."""
    W = Weights(Q.Q8_0, rng)
    X = Weights(Q.MXFP4, rng)
    d, hd, E, f = m["n_embd"], m["head_dim"], m["n_expert"], m["n_ff_exp"]
    H, Hkv = m["n_head"], m["n_kv"]
    normal = lambda *shape, std: (rng.standard_normal(shape) * std).astype(np.float32)
    t = {"token_embd.weight": (W.mat((m["n_vocab"], d), math.sqrt(d)), Q.Q8_0)}
    for l in range(n_layer):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = (W.norm(d), None)
        t[p + "attn_q.weight"] = (W.mat((H * hd, d)), Q.Q8_0)
        t[p + "attn_q.bias"] = (normal(H * hd, std=BIAS_QKV), None)
        t[p + "attn_k.weight"] = (W.mat((Hkv * hd, d)), Q.Q8_0)
        t[p + "attn_k.bias"] = (normal(Hkv * hd, std=BIAS_QKV), None)
        t[p + "attn_v.weight"] = (W.mat((Hkv * hd, d)), Q.Q8_0)
        t[p + "attn_v.bias"] = (normal(Hkv * hd, std=BIAS_QKV), None)
        t[p + "attn_output.weight"] = (W.mat((d, H * hd), OUT_SCALE), Q.Q8_0)
        t[p + "attn_output.bias"] = (normal(d, std=BIAS_OUT), None)
        t[p + "attn_sinks.weight"] = (normal(H, std=SINK_STD), None)
        t[p + "post_attention_norm.weight"] = (W.norm(d), None)
        t[p + "ffn_gate_inp.weight"] = (normal(E, d, std=m["router"] / math.sqrt(d)), None)
        t[p + "ffn_gate_inp.bias"] = (normal(E, std=BIAS_ROUTER), None)
        t[p + "ffn_gate_exps.weight"] = (X.mat((E, f, d), GATE_UP), Q.MXFP4)
        t[p + "ffn_gate_exps.bias"] = (normal(E, f, std=BIAS_EXP), None)
        t[p + "ffn_up_exps.weight"] = (X.mat((E, f, d), GATE_UP), Q.MXFP4)
        t[p + "ffn_up_exps.bias"] = (normal(E, f, std=BIAS_EXP), None)
        t[p + "ffn_down_exps.weight"] = (X.mat((E, d, f), OUT_SCALE / GATE_UP), Q.MXFP4)
        t[p + "ffn_down_exps.bias"] = (normal(E, d, std=BIAS_DOWN), None)
    t["output_norm.weight"] = (W.norm(d), None)
    t["output.weight"] = (W.mat((m["n_vocab"], d), 4.0), Q.Q8_0)
    return t


def write(path, m, n_layer, qtype, rng):
    """Metadata in the tiny generators' order; returns the parameter count."""
    gpt_oss = m["arch"] == "gpt-oss"
    tensors = build_gpt_oss(m, n_layer, rng) if gpt_oss else build_qwen3moe(m, n_layer, qtype, rng)
    wr = gguf.GGUFWriter(path, m["arch"])
    wr.add_name(m["title"] + (f", {n_layer} of {m['n_layer']} layers" if n_layer != m["n_layer"] else ""))
    wr.add_block_count(n_layer)
    wr.add_context_length(m["n_ctx"])
    wr.add_embedding_length(m["n_embd"])
    wr.add_feed_forward_length(m["n_ff"])
    wr.add_head_count(m["n_head"])
    wr.add_head_count_kv(m["n_kv"])
    if gpt_oss:
        wr.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        wr.add_rope_scaling_factor(m["factor"])
        wr.add_rope_scaling_orig_ctx_len(m["orig_ctx"])
        wr.add_rope_scaling_yarn_beta_fast(32.0)
        wr.add_rope_scaling_yarn_beta_slow(1.0)
    wr.add_rope_freq_base(m["rope_base"])
    wr.add_layer_norm_rms_eps(m["rms_eps"])
    wr.add_expert_count(m["n_expert"])
    wr.add_expert_used_count(m["n_used"])
    wr.add_key_length(m["head_dim"])
    wr.add_value_length(m["head_dim"])
    if gpt_oss:
        wr.add_file_type(gguf.LlamaFileType.MOSTLY_MXFP4_MOE)
        wr.add_sliding_window(m["window"])
    else:
        wr.add_file_type({Q.Q8_0: gguf.LlamaFileType.MOSTLY_Q8_0, Q.Q4_0: gguf.LlamaFileType.MOSTLY_Q4_0}[qtype])
    wr.add_expert_feed_forward_length(m["n_ff_exp"])
    wr.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_vocabulary(wr, m)
    return write_tensors(wr, tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["qwen3moe", "gpt-oss", "all"], default="all")
    ap.add_argument("--layers", type=int, default=DEFAULT_LAYERS,
                    help=f"layers to write (default {DEFAULT_LAYERS}; the real models have 48 and 24)")
    ap.add_argument("--type", choices=["Q8_0", "Q4_0"], default="Q8_0",
                    help="type of qwen3moe's matrices (gpt-oss: always MXFP4 experts, Q8_0 elsewhere)")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "shape"))
    ap.add_argument("--seed", type=int, default=20261127)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for key in (["qwen3moe", "gpt-oss"] if args.model == "all" else [args.model]):
        m = MODELS[key]
        n_layer = args.layers
        if not 1 <= n_layer <= m["n_layer"]:
            sys.exit(f"{key}: --layers must be 1 to {m['n_layer']}")
        gpt_oss = m["arch"] == "gpt-oss"
        label = "MXFP4" if gpt_oss else args.type
        path = os.path.join(args.out, f"{m['name']}.shape-{n_layer}L.{label}.gguf")
        t0 = time.time()
        n_params = write(path, m, n_layer, Q[args.type], np.random.default_rng([args.seed, len(key)]))
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, {n_params / 1e9:.3f}B parameters, "
              f"{n_layer} of {m['n_layer']} layers, {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

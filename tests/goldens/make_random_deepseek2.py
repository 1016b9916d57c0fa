#!/usr/bin/env python3
"""Tiny random-weight DeepSeek-V2 models (GGUF architecture `deepseek2`): Multi-head Latent Attention in
both tensor layouts, dense and mixture-of-experts feed-forward layers, softmax and sigmoid routing, with
llama.cpp's logits as goldens and an f32 numpy reference (checked by Wick's deepseek2 tests).

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf:

    /work/venv-llama/bin/python tests/goldens/make_random_deepseek2.py

Deterministic given the seed and the llama.cpp version (llama.cpp's quantizer is deterministic).
Writes tests/data/random-deepseek2-*.gguf and tests/goldens/random-deepseek2.json, whose records have the
same fields as random-llama.json (file, sha256, bytes, tensor_types, teacher_ids, teacher_logits,
f32_logits, greedy, tokenize) plus `config` (every metadata key/value written, tokenizer excepted),
`llama_vs_f32` (max and mean |llama.cpp - numpy| over the teacher logits) and, for MoE files, `routing`
(how often exp_probs_b changes the chosen experts, and the smallest top-k margin of the choice).
llama.cpp goldens: CPU, n_threads=2, logits_all, no flash attention, f16 KV cache (its default); greedy
steps carry id, logit, the top-1/top-2 gap and the top 4 (id, logit).

Files (all: vocab 512, n_embd 256, n_head 4, context 256, rope base 10000, rms eps 1e-6, 2 layers):
- dense-q0          every layer dense (leading_dense_block_count = block_count); q_lora_rank 0 (one
                    attn_q); the split layout attn_k_b + attn_v_b (head_count_kv 1, key_length
                    kv_lora+rope, value_length kv_lora, key/value_length_mla the per-head sizes); plain
                    rope; kv_lora 128, qk_nope 32, qk_rope 16, v 32; n_ff 128; untied output; F16.
- dense-qlora-kvb   every layer dense; q_lora_rank 64 (attn_q_a, attn_q_a_norm, attn_q_b); the OLDER
                    layout with attn_kv_b only (head_count_kv = n_head, key_length/value_length the
                    per-head sizes, no *_mla keys); YaRN keys as DeepSeek-V2-Lite has them (scaling type
                    yarn, factor 4, original_context_length 64, yarn_log_multiplier 0.1*mscale_all_dim
                    with mscale_all_dim 0.707); kv_lora 128, qk_nope 32, qk_rope 32, v 64 (v != nope on
                    purpose); tied output (no output.weight); F16. llama.cpp still loads this layout (its
                    non-MLA path), so its goldens come from this very file.
- moe-softmax       block 0 dense, block 1 MoE: 4 experts, 2 used, softmax gating (expert_gating_func 1),
                    no weight normalization, expert_weights_scale 1.0, 1 shared expert, n_ff_exp 64;
                    q_lora 0, split layout, kv_lora 64; tied output; F16 (ffn_gate_inp F32).
- moe-sigmoid-q8_0, moe-sigmoid-q4_k_m: llama.cpp's Q8_0 and Q4_K_M of one F16 model (kept only in a
                    temporary directory: 8 experts of 3 x 256 x 256 are 4.8 MB in F16) with block 0 dense
                    and block 1 MoE: 8 experts, 2 used, sigmoid gating (2) with exp_probs_b, weights
                    normalized, expert_weights_scale 2.5, 1 shared expert, n_ff_exp 256 (so every expert
                    matrix row is a multiple of 256 and takes K-quants: Q4_K_M puts Q4_K on gate/up and
                    Q6_K on down); q_lora 64, split layout, kv_lora 128, qk_nope 32, rope 16, v 32;
                    untied output. The F16 base is also run through llama.cpp and numpy (printed only),
                    which checks the routing math without activation quantization.

What llama.cpp (src/models/deepseek2.cpp, llama-graph.cpp build_moe_ffn, llama-context.cpp) computes
----------------------------------------------------------------------------------------------------
Per layer, h = rms_norm(x) * attn_norm:
- Query: q = attn_q h, or q = attn_q_b (rms_norm(attn_q_a h) * attn_q_a_norm). Per head it is
  [q_nope (qk_nope) | q_pe (qk_rope)]; rope (NORMAL mode: pairs (2i, 2i+1)) on q_pe only.
- kv_a = attn_kv_a_mqa h = [c (kv_lora) | k_pe (qk_rope)]. c = rms_norm(c) * attn_kv_a_norm (the latent
  that is cached); k_pe is ONE rope'd vector shared by all heads (MQA-like), rope'd with the same rope.
- Naive (decompressed) form: per head k_nope = W_k[h] c, v = W_v[h] c, where attn_kv_b (numpy shape
  (n_head*(qk_nope+v), kv_lora)) holds, per head, qk_nope rows of W_k then v rows of W_v. Key
  [k_nope | k_pe], query [q_nope | q_pe], score = q.k * kq_scale, softmax over positions, o = sum p v,
  then x += attn_output concat_h(o). This is what llama.cpp runs for the attn_kv_b layout (non-MLA path,
  head_count_kv = n_head).
- Absorbed form (attn_k_b/attn_v_b layout, what llama.cpp runs when key_length_mla/value_length_mla are
  present): attn_k_b (numpy (n_head, kv_lora, qk_nope)) = W_k[h] transposed, attn_v_b (numpy (n_head,
  v, kv_lora)) = W_v[h]. Query in latent space q_lat = k_b[h] q_nope (kv_lora); the cache holds
  [c | k_pe] (kv_lora + rope = key_length); score = (q_lat.c + q_pe.k_pe) * kq_scale (same number as
  the naive score); o_lat = sum p c (the "value" is c itself, value_length = kv_lora); o = v_b[h] o_lat.
  kq_scale uses the per-head key size qk_nope + qk_rope (key_length_mla), never key_length.
- kq_scale = mscale^2 / sqrt(qk_nope + qk_rope). Without YaRN mscale = 1. With YaRN (rope.scaling.type
  yarn, factor f = rope.scaling.factor, freq_scale = 1/f): llama.cpp divides the stored
  yarn_log_multiplier by 0.1 to recover mscale_all_dim, and mscale = 1 + 0.1 * mscale_all_dim * ln(f)
  (= 1.0980 here). The rope's cos/sin are NOT scaled in the end: llama.cpp sets attn_factor =
  1/(1 + 0.1 ln f) and ggml's rope multiplies it back by (1 + 0.1 ln f). (If yarn_log_multiplier were
  absent, mscale would be 1 + 0.1 ln f.)
- YaRN rope angle for pair i of n_rot = qk_rope dims: t_ext = pos * base^(-2i/n_rot), t_int = t_ext / f,
  ramp(i) = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1), theta = t_int (1 - ramp) + t_ext ramp, with
  lo = max(0, floor(d(32))), hi = min(n_rot - 1, ceil(d(1))), d(beta) = n_rot ln(n_ctx_orig /
  (2 pi beta)) / (2 ln base), n_ctx_orig = rope.scaling.original_context_length (beta_fast 32, beta_slow
  1 are llama.cpp's defaults). In dense-qlora-kvb (n_rot 32, n_ctx_orig 64): lo = 0, hi = 5, so
  pairs 0-4 are partly extrapolated and 5-15 purely interpolated; kq_scale = 1.0980^2 / 8 = 0.150704.
- Dense FFN (blocks < leading_dense_block_count): ffn_down (silu(ffn_gate h2) * ffn_up h2),
  h2 = rms_norm(x) * ffn_norm.
- MoE FFN: router logits r = ffn_gate_inp h2 (n_expert); p = softmax(r) (gating 1) or sigmoid(r)
  (gating 2); choose the top n_used by p + exp_probs_b (the bias only chooses); weights w = p of the
  chosen; if expert_weights_norm: w /= max(sum w, 6.1e-5); if expert_weights_scale is not 0 or 1:
  w *= scale; out = sum_e w_e ffn_down_exps[e] (silu(ffn_gate_exps[e] h2) * ffn_up_exps[e] h2) + the
  shared expert (an ordinary FFN ffn_*_shexp of width n_ff_exp * expert_shared_count); x += out.
- Then output_norm and output (or token_embd when output.weight is absent).

Loading notes: attention.q_lora_rank is a REQUIRED key unless block_count is 26/27 (the "lite"
models), so dense-q0 writes q_lora_rank 0. expert_feed_forward_length and expert_shared_count are
required even for all-dense files (written as n_ff and 0, as convert_hf_to_gguf.py does for Youtu).
Missing expert_gating_func means softmax. llama.cpp's quantizer leaves ffn_gate_inp unquantized and
does quantize attn_k_b/attn_v_b (falling back from K-quants where rows are not multiples of 256).

Weights: matrices normal with std 1/sqrt(fan_in) (queries and kv_a 2/sqrt(fan_in), output
4/sqrt(fan_in), routers 2/sqrt(fan_in)), norm gains uniform in [0.6, 1.4], token embeddings standard
normal (tied files, which take their logits from it: std 0.1 and output_norm gains x2.5), exp_probs_b normal with std 0.25. The vocabulary is the byte-level gpt2 one of
make_random_llama.py (same seed, so the same tokens and merges).
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
import make_random_llama as rl  # noqa: E402  (its vocabulary, quantizer call and helpers)

SEED = 20240612
VOCAB_SEED = 20240611  # make_random_llama.py's seed: its vocabulary is the first thing drawn
ARCH = "deepseek2"
N_EMBD, N_HEAD, N_VOCAB, N_CTX = 256, 4, 512, 256
ROPE_BASE, RMS_EPS = 10000.0, 1e-6
N_TEACHER, N_PROMPT, N_GEN, TOP_K = 24, 8, 12, 4
TOKENIZE_TEXT = rl.TOKENIZE_TEXT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
GOLDEN = os.path.join(ROOT, "tests", "goldens", "random-deepseek2.json")

BASE = dict(n_layer=2, q_lora=0, kv_lora=128, nope=32, rope=16, v=32, n_ff=128, layout="split", yarn=None,
            tied=False, n_expert=0, n_used=0, n_ff_exp=None, n_shared=0, gating=None, norm_w=None,
            w_scale=None, probs_b=False)
MODELS = [
    dict(BASE, name="dense-q0", n_dense=2),
    dict(BASE, name="dense-qlora-kvb", n_dense=2, q_lora=64, rope=32, v=64, layout="kv_b", tied=True,
         yarn=dict(factor=4.0, orig_ctx=64, mscale_all_dim=0.707)),
    dict(BASE, name="moe-softmax", n_dense=1, kv_lora=64, tied=True, n_expert=4, n_used=2, n_ff_exp=64,
         n_shared=1, gating=1, norm_w=False, w_scale=1.0),
    dict(BASE, name="moe-sigmoid", n_dense=1, q_lora=64, n_expert=8, n_used=2, n_ff_exp=256, n_shared=1,
         gating=2, norm_w=True, w_scale=2.5, probs_b=True,
         quantized=[("q8_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0), ("q4_k_m", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M)]),
]


# ---------------------------------------------------------------------------------------------- writing

def weights(m, rng):
    f16 = np.float16

    def mat(rows, cols, scale=1.0, dtype=f16):
        return (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(dtype)

    def norm(n):
        return rng.uniform(0.6, 1.4, n).astype(np.float32)

    d, nh, dk = N_EMBD, N_HEAD, m["nope"] + m["rope"]
    # Tied files read their logits off token_embd: small embeddings (so a token's own embedding does not
    # dominate the residual and greedy decoding does not just repeat it) and a larger output_norm gain.
    emb_std = 0.1 if m["tied"] else 1.0
    w = {"token_embd.weight": (rng.standard_normal((N_VOCAB, d)) * emb_std).astype(f16)}
    for l in range(m["n_layer"]):
        p = f"blk.{l}."
        w[p + "attn_norm.weight"] = norm(d)
        if m["q_lora"]:
            w[p + "attn_q_a.weight"] = mat(m["q_lora"], d)
            w[p + "attn_q_a_norm.weight"] = norm(m["q_lora"])
            w[p + "attn_q_b.weight"] = mat(nh * dk, m["q_lora"], 2.0)
        else:
            w[p + "attn_q.weight"] = mat(nh * dk, d, 2.0)
        w[p + "attn_kv_a_mqa.weight"] = mat(m["kv_lora"] + m["rope"], d, 2.0)
        w[p + "attn_kv_a_norm.weight"] = norm(m["kv_lora"])
        # HF's kv_b_proj: per head, nope rows of k then v rows of v, each kv_lora wide.
        kv_b = mat(nh * (m["nope"] + m["v"]), m["kv_lora"])
        if m["layout"] == "kv_b":
            w[p + "attn_kv_b.weight"] = kv_b
        else:  # as convert_hf_to_gguf.py splits it
            kv = kv_b.reshape(nh, m["nope"] + m["v"], m["kv_lora"])
            w[p + "attn_k_b.weight"] = np.ascontiguousarray(kv[:, : m["nope"], :].transpose(0, 2, 1))
            w[p + "attn_v_b.weight"] = np.ascontiguousarray(kv[:, m["nope"]:, :])
        w[p + "attn_output.weight"] = mat(d, nh * m["v"])
        w[p + "ffn_norm.weight"] = norm(d)
        if l < m["n_dense"]:
            w[p + "ffn_gate.weight"] = mat(m["n_ff"], d)
            w[p + "ffn_up.weight"] = mat(m["n_ff"], d)
            w[p + "ffn_down.weight"] = mat(d, m["n_ff"])
        else:
            ne, fe = m["n_expert"], m["n_ff_exp"]
            w[p + "ffn_gate_inp.weight"] = mat(ne, d, 2.0, np.float32)
            if m["probs_b"]:
                w[p + "exp_probs_b.bias"] = (rng.standard_normal(ne) * 0.25).astype(np.float32)
            w[p + "ffn_gate_exps.weight"] = np.stack([mat(fe, d) for _ in range(ne)])
            w[p + "ffn_up_exps.weight"] = np.stack([mat(fe, d) for _ in range(ne)])
            w[p + "ffn_down_exps.weight"] = np.stack([mat(d, fe) for _ in range(ne)])
            fs = fe * m["n_shared"]
            w[p + "ffn_gate_shexp.weight"] = mat(fs, d)
            w[p + "ffn_up_shexp.weight"] = mat(fs, d)
            w[p + "ffn_down_shexp.weight"] = mat(d, fs)
    w["output_norm.weight"] = norm(d) * (2.5 if m["tied"] else 1.0)
    if not m["tied"]:
        w["output.weight"] = mat(N_VOCAB, d, 4.0)
    return w


def write_gguf(path, m, w, vocab, f32=False):
    """The F16 file, or with f32 the same values with every float16 tensor widened to float32."""
    tokens, types, merges = vocab
    dk = m["nope"] + m["rope"]
    wr = gguf.GGUFWriter(path, ARCH)
    wr.add_name(f"random-deepseek2-{m['name']}")
    wr.add_file_type(gguf.LlamaFileType.ALL_F32 if f32 else gguf.LlamaFileType.MOSTLY_F16)
    wr.add_context_length(N_CTX)
    wr.add_embedding_length(N_EMBD)
    wr.add_block_count(m["n_layer"])
    wr.add_feed_forward_length(m["n_ff"])
    wr.add_head_count(N_HEAD)
    if m["layout"] == "kv_b":  # the pre-MLA layout: plain multi-head attention after decompression
        wr.add_head_count_kv(N_HEAD)
        wr.add_key_length(dk)
        wr.add_value_length(m["v"])
    else:  # as convert_hf_to_gguf.py writes it now: MQA over the latent
        wr.add_head_count_kv(1)
        wr.add_key_length(m["kv_lora"] + m["rope"])
        wr.add_value_length(m["kv_lora"])
        wr.add_key_length_mla(dk)
        wr.add_value_length_mla(m["v"])
    wr.add_layer_norm_rms_eps(RMS_EPS)
    wr.add_leading_dense_block_count(m["n_dense"])
    wr.add_q_lora_rank(m["q_lora"])  # required by llama.cpp unless block_count is 26 or 27
    wr.add_kv_lora_rank(m["kv_lora"])
    wr.add_rope_dimension_count(m["rope"])
    wr.add_rope_freq_base(ROPE_BASE)
    if m["yarn"]:
        y = m["yarn"]
        wr.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        wr.add_rope_scaling_factor(y["factor"])
        wr.add_rope_scaling_orig_ctx_len(y["orig_ctx"])
        wr.add_rope_scaling_yarn_log_mul(0.1 * y["mscale_all_dim"])
    wr.add_expert_feed_forward_length(m["n_ff_exp"] or m["n_ff"])
    wr.add_expert_shared_count(m["n_shared"])
    if m["n_expert"]:
        wr.add_expert_count(m["n_expert"])
        wr.add_expert_used_count(m["n_used"])
        wr.add_expert_weights_scale(m["w_scale"])
        wr.add_expert_weights_norm(m["norm_w"])
        wr.add_expert_gating_func(gguf.ExpertGatingFuncType(m["gating"]))
    wr.add_vocab_size(N_VOCAB)
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(N_VOCAB - 1)
    wr.add_eos_token_id(N_VOCAB - 1)
    wr.add_add_bos_token(False)
    for name, t in w.items():
        wr.add_tensor(name, t.astype(np.float32) if f32 else t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def read_gguf(path):
    r = gguf.GGUFReader(path)
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.") and not k.startswith("GGUF.")}
    w = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64) for t in r.tensors}
    info = {t.name: {"type": t.tensor_type.name, "ne": [int(x) for x in t.shape]} for t in r.tensors}
    return meta, w, info


# ------------------------------------------------------------------------------------ numpy reference

def yarn_corr_dims(n_rot, n_ctx_orig, base, beta_fast=32.0, beta_slow=1.0):
    dim = lambda beta: n_rot * math.log(n_ctx_orig / (beta * 2 * math.pi)) / (2 * math.log(base))
    return max(0.0, math.floor(dim(beta_fast))), min(n_rot - 1.0, math.ceil(dim(beta_slow)))


class Rope:
    """llama.cpp's rope and kq_scale for deepseek2 (llama-context.cpp, deepseek2.cpp, ggml rope_yarn)."""

    def __init__(self, meta, dk):
        a = ARCH
        self.base = meta.get(f"{a}.rope.freq_base", 10000.0)
        self.n_rot = meta[f"{a}.rope.dimension_count"]
        yarn = meta.get(f"{a}.rope.scaling.type", "linear") == "yarn"
        factor = meta.get(f"{a}.rope.scaling.factor", 0.0)
        self.freq_scale = 1.0 / factor if factor else 1.0
        self.ext = 1.0 if yarn else 0.0
        log_mul = meta.get(f"{a}.rope.scaling.yarn_log_multiplier", 0.0) / 0.1
        attn_factor = 1.0
        if self.ext:
            get_mscale = lambda s, ms: 1.0 if s <= 1 else 0.1 * ms * math.log(s) + 1.0
            f = 1.0 / self.freq_scale
            if log_mul:
                ms = log_mul if log_mul != 1.0 else 1.0
                attn_factor = get_mscale(f, ms) / get_mscale(f, log_mul)
            else:
                attn_factor = get_mscale(f, 1.0)
            attn_factor /= 1.0 + 0.1 * math.log(f)
        self.attn_factor = attn_factor
        n_ctx_orig = meta.get(f"{a}.rope.scaling.original_context_length", meta[f"{a}.context_length"])
        self.corr = yarn_corr_dims(self.n_rot, n_ctx_orig, self.base)
        org = attn_factor * (1.0 + 0.1 * math.log(1.0 / self.freq_scale))
        mscale = org * (1.0 + 0.1 * log_mul * math.log(1.0 / self.freq_scale))
        self.kq_scale = mscale * mscale / math.sqrt(dk)

    def __call__(self, x, pos):
        """x: (heads, n_rot), NORMAL mode (pairs 2i, 2i+1)."""
        i = np.arange(self.n_rot // 2)
        t_ext = pos * self.base ** (-2.0 * i / self.n_rot)
        t_int = self.freq_scale * t_ext
        mscale = self.attn_factor
        if self.ext:
            lo, hi = self.corr
            ramp = (1 - np.clip((i - lo) / max(0.001, hi - lo), 0, 1)) * self.ext
            theta = t_int * (1 - ramp) + t_ext * ramp
            mscale *= 1.0 + 0.1 * math.log(1.0 / self.freq_scale)
        else:
            theta = t_int
        c, s = np.cos(theta) * mscale, np.sin(theta) * mscale
        a, b = x[:, 0::2].copy(), x[:, 1::2].copy()
        out = np.empty_like(x)
        out[:, 0::2] = a * c - b * s
        out[:, 1::2] = a * s + b * c
        return out


def f32_forward(path, ids):
    """Teacher-forced logits of the naive (decompressed) MLA forward pass in numpy (float64 accumulation)
    over the gguf package's dequantized weights, with routing statistics for MoE layers."""
    meta, w, _ = read_gguf(path)
    a = ARCH
    n_layer, nh = meta[f"{a}.block_count"], meta[f"{a}.attention.head_count"]
    eps, kv_lora = meta[f"{a}.attention.layer_norm_rms_epsilon"], meta[f"{a}.attention.kv_lora_rank"]
    n_dense = meta.get(f"{a}.leading_dense_block_count", 0)
    if f"{a}.attention.key_length_mla" in meta:
        dk, dv = meta[f"{a}.attention.key_length_mla"], meta[f"{a}.attention.value_length_mla"]
    else:
        dk, dv = meta[f"{a}.attention.key_length"], meta[f"{a}.attention.value_length"]
    n_rot = meta[f"{a}.rope.dimension_count"]
    nope = dk - n_rot
    n_used = meta.get(f"{a}.expert_used_count", 0)
    gating = meta.get(f"{a}.expert_gating_func", 1)
    norm_w = meta.get(f"{a}.expert_weights_norm", False)
    w_scale = meta.get(f"{a}.expert_weights_scale", 0.0)
    rope = Rope(meta, dk)
    rms = lambda x, g: x / np.sqrt(np.mean(x * x) + eps) * g
    silu = lambda x: x / (1 + np.exp(-x))
    ffn = lambda h, g, u, d: d @ (silu(g @ h) * (u @ h))
    kc, vc = [[] for _ in range(n_layer)], [[] for _ in range(n_layer)]
    out, changed, margins, n_routed = [], 0, [], 0
    for pos, t in enumerate(ids):
        x = w["token_embd.weight"][t].copy()
        for l in range(n_layer):
            p = f"blk.{l}."
            h = rms(x, w[p + "attn_norm.weight"])
            if p + "attn_q.weight" in w:
                q = w[p + "attn_q.weight"] @ h
            else:
                q = w[p + "attn_q_b.weight"] @ rms(w[p + "attn_q_a.weight"] @ h, w[p + "attn_q_a_norm.weight"])
            q = q.reshape(nh, dk)
            q = np.concatenate([q[:, :nope], rope(q[:, nope:], pos)], axis=1)
            kv = w[p + "attn_kv_a_mqa.weight"] @ h
            c = rms(kv[:kv_lora], w[p + "attn_kv_a_norm.weight"])
            k_pe = rope(kv[None, kv_lora:], pos)[0]
            if p + "attn_kv_b.weight" in w:
                dec = (w[p + "attn_kv_b.weight"] @ c).reshape(nh, nope + dv)
                k_nope, v = dec[:, :nope], dec[:, nope:]
            else:
                k_nope = np.einsum("hcn,c->hn", w[p + "attn_k_b.weight"], c)  # (nh, kv_lora, nope)
                v = w[p + "attn_v_b.weight"] @ c  # (nh, dv, kv_lora) @ c
            kc[l].append(np.concatenate([k_nope, np.repeat(k_pe[None], nh, 0)], axis=1))
            vc[l].append(v)
            K, V = np.stack(kc[l]), np.stack(vc[l])  # (n, nh, dk), (n, nh, dv)
            o = np.zeros((nh, dv))
            for hh in range(nh):
                s = K[:, hh, :] @ q[hh] * rope.kq_scale
                e = np.exp(s - s.max())
                o[hh] = (e / e.sum()) @ V[:, hh, :]
            x = x + w[p + "attn_output.weight"] @ o.reshape(-1)
            h = rms(x, w[p + "ffn_norm.weight"])
            if l < n_dense:
                x = x + ffn(h, w[p + "ffn_gate.weight"], w[p + "ffn_up.weight"], w[p + "ffn_down.weight"])
                continue
            r = w[p + "ffn_gate_inp.weight"] @ h
            probs = np.exp(r - r.max()) / np.exp(r - r.max()).sum() if gating == 1 else 1 / (1 + np.exp(-r))
            sel = probs + w.get(p + "exp_probs_b.bias", 0.0)
            order = np.argsort(-sel, kind="stable")
            chosen = order[:n_used]
            if len(order) > n_used:
                margins.append(float(sel[order[n_used - 1]] - sel[order[n_used]]))
            changed += set(chosen.tolist()) != set(np.argsort(-probs, kind="stable")[:n_used].tolist())
            n_routed += 1
            wt = probs[chosen]
            if norm_w:
                wt = wt / max(wt.sum(), 6.103515625e-5)
            if w_scale not in (0.0, 1.0):
                wt = wt * w_scale
            y = ffn(h, w[p + "ffn_gate_shexp.weight"], w[p + "ffn_up_shexp.weight"], w[p + "ffn_down_shexp.weight"])
            for e, we in zip(chosen, wt):
                y = y + we * ffn(h, w[p + "ffn_gate_exps.weight"][e], w[p + "ffn_up_exps.weight"][e],
                                 w[p + "ffn_down_exps.weight"][e])
            x = x + y
        out_w = w.get("output.weight", w["token_embd.weight"])
        out.append(out_w @ rms(x, w["output_norm.weight"]))
    routing = None
    if n_routed:
        routing = {"routed": n_routed, "bias_changed_choice": int(changed),
                   "min_margin": round(min(margins), 5) if margins else None}
    return np.array(out), routing


# --------------------------------------------------------------------------------------------- goldens

def goldens(path, teacher_ids):
    llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, logits_all=True, n_threads=2, seed=0, verbose=False)
    assert llm.n_vocab() == N_VOCAB
    llm.reset()
    llm.eval(teacher_ids)
    teacher = [[round(float(x), 4) for x in np.asarray(llm.scores[i], dtype=np.float32)] for i in range(len(teacher_ids))]
    tokenized = llm.tokenize(TOKENIZE_TEXT.encode(), add_bos=False, special=False)
    prompt = teacher_ids[:N_PROMPT]
    llm.reset()
    llm.eval(prompt)
    steps = []
    for _ in range(N_GEN):
        logits = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        best = rl.top(logits, TOP_K)
        steps.append({"id": best[0][0], "logit": best[0][1], "gap": round(best[0][1] - best[1][1], 4), "top": best})
        llm.eval([best[0][0]])
    del llm
    return teacher, {"prompt_ids": prompt, "steps": steps}, {"text": TOKENIZE_TEXT, "ids": tokenized}


def f32_check(path, teacher_ids):
    """max |llama.cpp - numpy| on an all-F32 file with an F32 KV cache: llama.cpp then rounds nothing to
    16 or 8 bits, so this checks the numpy reference's math (rope, YaRN, kq_scale, routing) tightly."""
    llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, logits_all=True, n_threads=2, seed=0, verbose=False,
                          type_k=0, type_v=0)  # GGML_TYPE_F32
    llm.reset()
    llm.eval(teacher_ids)
    got = np.array([np.asarray(llm.scores[i], dtype=np.float64) for i in range(len(teacher_ids))])
    del llm
    ref, _ = f32_forward(path, teacher_ids)
    return round(float(np.abs(got - ref).max()), 6)


def jsonable(v):
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, float):
        return round(v, 7)
    if isinstance(v, (np.floating,)):
        return round(float(v), 7)
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


def record(path, teacher_ids, label):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    meta, _, info = read_gguf(path)
    teacher, greedy, tokenized = goldens(path, teacher_ids)
    ref, routing = f32_forward(path, teacher_ids)
    err = np.abs(ref - np.array(teacher))
    rec = {
        "file": os.path.relpath(path, ROOT),
        "sha256": sha,
        "bytes": os.path.getsize(path),
        "config": {k: jsonable(v) for k, v in meta.items()},
        "tensor_types": {n: i["type"] for n, i in info.items()},
        "teacher_ids": teacher_ids,
        "teacher_logits": teacher,
        "f32_logits": [[round(float(x), 4) for x in row] for row in ref],
        "llama_vs_f32": {"max_abs": round(float(err.max()), 4), "mean_abs": round(float(err.mean()), 5)},
        "greedy": greedy,
        "tokenize": tokenized,
    }
    if routing:
        rec["routing"] = routing
    gaps = [s["gap"] for s in greedy["steps"]]
    print(f"{label}: {rec['bytes']} bytes, greedy {[s['id'] for s in greedy['steps']]}, min gap {min(gaps):.4f}")
    print(f"  types: {sorted(set(rec['tensor_types'].values()))}")
    print(f"  llama.cpp vs f32: max abs {err.max():.4f}, mean {err.mean():.5f}; f32 logit std {ref.std(1).mean():.3f}")
    print(f"  per position max abs: {' '.join(f'{e:.3f}' for e in err.max(1))}")
    if routing:
        print(f"  routing: {routing}")
    return rec, info


def main():
    vocab = rl.vocabulary(np.random.default_rng(VOCAB_SEED))
    os.makedirs(DATA, exist_ok=True)
    teacher_ids = [N_VOCAB - 1] + [int(x) for x in np.random.default_rng([SEED, 99]).integers(0, N_VOCAB - 1, N_TEACHER - 1)]
    records, infos, checks = [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for idx, m in enumerate(MODELS):
            w = weights(m, np.random.default_rng([SEED, idx]))
            wide = os.path.join(tmp, f"random-deepseek2-{m['name']}-f32.gguf")
            write_gguf(wide, m, w, vocab, f32=True)
            err = f32_check(wide, teacher_ids)
            print(f"{m['name']} as all-F32 with an F32 KV cache: max |llama.cpp - numpy| {err}")
            checks[f"{m['name']}-all-f32"] = {"llama_vs_f32": {"max_abs": err}}
            if "quantized" not in m:
                dst = os.path.join(DATA, f"random-deepseek2-{m['name']}.gguf")
                write_gguf(dst, m, w, vocab)
                rec, info = record(dst, teacher_ids, m["name"])
                records.append(rec)
                infos[m["name"]] = info
                continue
            base = os.path.join(tmp, f"random-deepseek2-{m['name']}-f16.gguf")
            write_gguf(base, m, w, vocab)
            rec, info = record(base, teacher_ids, f"{m['name']} (F16 base, not kept)")
            checks[f"{m['name']}-f16"] = {"bytes": rec["bytes"], "llama_vs_f32": rec["llama_vs_f32"], "routing": rec.get("routing")}
            for suffix, ftype in m["quantized"]:
                dst = os.path.join(DATA, f"random-deepseek2-{m['name']}-{suffix}.gguf")
                rl.quantize(base, dst, ftype, None)
                rec, info = record(dst, teacher_ids, f"{m['name']}-{suffix}")
                records.append(rec)
                infos[f"{m['name']}-{suffix}"] = info

    for name in ("dense-q0", "moe-sigmoid-q4_k_m"):
        print(f"\ntensors of {name}:")
        for n, i in infos[name].items():
            print(f"  {n:32s} {i['type']:6s} ne={i['ne']}")
    total = sum(r["bytes"] for r in records)
    print(f"\ntotal {total} bytes in {len(records)} files")

    out = {
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx={N_CTX}, logits_all, argmax",
        "seed": SEED,
        "n_vocab": N_VOCAB,
        "unkept_checks": checks,
        "records": records,
    }
    with open(GOLDEN, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {GOLDEN}: {os.path.getsize(GOLDEN)} bytes")


if __name__ == "__main__":
    sys.exit(main())

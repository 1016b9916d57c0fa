"""A float64 reference forward pass of a `gemma4` GGUF (Gemma 4 text models: sliding-window layers beside
full-attention layers with other head sizes, KV shared by the last layers, per-layer embeddings) in numpy,
over the `gguf` package's dequantized weights: no activation quantization, no f16 cache. Written from
llama.cpp's graph (src/models/gemma4.cpp; llama-model.cpp's head sizes, n_rot / n_rot_swa and KV-reuse
rule; llama-hparams.h is_masked_swa; ggml-cpu rope with freq factors, rms_norm, gelu), not from Wick's
kernels.

usage: python numpy_gemma4.py MODEL.gguf N_GEN TOKEN_ID [TOKEN_ID ...]
Feeds the prompt ids, then decodes N_GEN tokens greedily; prints one JSON record with, per generated
step, the chosen id, the top-1/top-2 gap and the top-4 (id, logit).

As a module (the interface of numpy_qwen35.py): `load(path)` gives (meta, weights) and `forward(meta, w,
ids)` the logits (len(ids), n_vocab) of every position, teacher-forced; `greedy(meta, w, prompt, n)`.
Tokens are processed one at a time with a KV cache (`Model.step`), the same math as a batched prefill.
`gelu="ggml"` reproduces llama.cpp's CPU GELU instead of the exact one: ggml looks GELU up in a table
indexed by the f16 rounding of its input and holding f16 values (GGML_GELU_FP16), a relative error of
up to ~1e-3 per activation; only the tight comparison with llama.cpp uses it.

The math (x: the residual stream, d = embedding_length, A = "gemma4.", rms(v) = v / sqrt(mean(v^2) +
eps) with eps = A.attention.layer_norm_rms_epsilon everywhere; norm gains are used as stored: Gemma 4
keeps no +1 in its norms, and the converter writes them unchanged):
- Layer kinds: A.attention.sliding_window_pattern, one bool per layer (true: sliding window).
  Sliding layers have head size A.attention.key_length_swa (= value_length_swa), rotate the first
  A.rope.dimension_count_swa dims (default: rope.dimension_count) with base A.rope.freq_base_swa
  (default 10000) and see keys at positions p' with p - p' < A.attention.sliding_window (llama.cpp's
  LLAMA_SWA_TYPE_STANDARD: the window counts the query's own position). Full layers have head size
  A.attention.key_length, rotate A.rope.dimension_count dims (default: the head size) with base
  A.rope.freq_base and the frequency factors rope_freqs.weight (one per pair; the converter writes 1.0
  for the pairs "proportional" RoPE turns and 1e30 for the rest, which then stay put), and see every
  earlier key. Head counts: A.attention.head_count and A.attention.head_count_kv, each a number or one
  per layer.
- KV sharing: with s = A.attention.shared_kv_layers (default 0) and n0 = block_count - s, layer l >= n0
  computes no K or V: it reads the cache of layer n0 - 2 if it is a sliding layer, else of layer n0 - 1
  (llama-model.cpp's reuse rule: the last non-shared layer of its kind when the pattern ends (.., T, F)
  before n0). Its queries, norms, output projection and FFN are its own. attn_k / attn_v of such
  layers are ignored when the file has them.
- Input: x = token_embd[t] * sqrt(d).
  Per-layer inputs (when per_layer_token_embd.weight is present; n = A.embedding_length_per_layer_input,
  L = block_count): tok = per_layer_token_embd[t] (L n values, layer-major) * sqrt(n);
  proj = per_layer_model_proj x / sqrt(d), cut into L pieces of n, each rms(.) * per_layer_proj_norm;
  pl[l] = (proj[l] + tok[l]) / sqrt(2).
- Every layer: h = rms(x) * attn_norm;
    q = rms(attn_q h per head) * attn_q_norm, RoPE; with KV: k = rms(attn_k h per kv head) *
    attn_k_norm, RoPE; v = rms(attn_v h per kv head) WITHOUT a gain (attn_k h when attn_v is absent).
    RoPE is NeoX-style: pair i = dims (i, i + n_rot/2), i < n_rot/2, angle p * base^(-2i/n_rot) /
    factor_i at position p.
    Attention scale 1 (no 1/sqrt(head size): the q/k norms set the scale); query head j reads kv head
    j // (n_head / n_head_kv); o = attn_output concat_j(o_j).
    x = x + rms(o) * post_attention_norm;
    x = x + rms(ffn_down (gelu(ffn_gate u) * ffn_up u)) * post_ffw_norm, u = rms(x) * ffn_norm;
    with per-layer inputs: x = x + rms(proj (gelu(inp_gate x) * pl[l])) * post_norm;
    x = x * layer_output_scale (a single number per layer, when present).
  gelu is the tanh approximation 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))).
- Logits = c tanh(z / c) with z = output (or token_embd when output.weight is absent) rms(x) *
  output_norm and c = A.final_logit_softcapping (no capping when absent).
"""
import json
import sys

import gguf
import numpy as np


def load(path):
    r = gguf.GGUFReader(path)
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.")}
    w = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32) for t in r.tensors}
    return meta, w


SQRT_2_OVER_PI = 0.79788456080286535587989211986876
GELU_COEF_A = 0.044715


def gelu_exact(x):
    return 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x)))


def gelu_ggml(x):
    """ggml-cpu's GELU: f16 table lookup of the f16-rounded input, exact outside [-10, 10]."""
    h = x.astype(np.float16).astype(np.float32).astype(np.float64)
    y = gelu_exact(h.astype(np.float32)).astype(np.float32).astype(np.float16).astype(np.float64)
    return np.where(x <= -10.0, 0.0, np.where(x >= 10.0, x, y))


def per_layer(meta, key, n_layer, default=None):
    a = meta["general.architecture"]
    v = meta.get(f"{a}.{key}", default)
    if isinstance(v, (list, tuple, np.ndarray)):
        assert len(v) == n_layer, key
        return [int(x) for x in v]
    return [v] * n_layer


def rope_neox(x, pos, n_rot, base, factors=None):
    """x: (heads, head_dim); pair i = dims (i, i + n_rot/2) turns by pos * base^(-2i/n_rot) / factors[i]."""
    half = n_rot // 2
    theta = pos * base ** (-2.0 * np.arange(half) / n_rot)
    if factors is not None:
        theta = theta / factors[:half]
    c, s = np.cos(theta), np.sin(theta)
    a, b = x[:, :half].copy(), x[:, half:n_rot].copy()
    x = x.copy()
    x[:, :half] = a * c - b * s
    x[:, half:n_rot] = a * s + b * c
    return x


class Model:
    """Token-by-token gemma4 forward in float64, holding the KV caches of the layers that have KV."""

    def __init__(self, meta, w, gelu="exact"):
        a = meta["general.architecture"]
        g = lambda k, d=None: meta.get(f"{a}.{k}", d)
        self.w = {k: v.astype(np.float64) for k, v in w.items()}
        self.gelu = gelu_exact if gelu == "exact" else gelu_ggml
        self.n_layer = L = int(g("block_count"))
        self.d = int(g("embedding_length"))
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.swa = [bool(v) for v in g("attention.sliding_window_pattern")]
        assert len(self.swa) == L
        self.n_swa = int(g("attention.sliding_window"))
        self.n_head = per_layer(meta, "attention.head_count", L)
        self.n_kv = per_layer(meta, "attention.head_count_kv", L, g("attention.head_count"))
        hd_full = int(g("attention.key_length", self.d // self.n_head[0]))
        hd_swa = int(g("attention.key_length_swa", hd_full))
        assert int(g("attention.value_length", hd_full)) == hd_full
        assert int(g("attention.value_length_swa", hd_swa)) == hd_swa
        rot_full = int(g("rope.dimension_count", hd_full))
        rot_swa = int(g("rope.dimension_count_swa", rot_full))
        base_full = float(g("rope.freq_base", 10000.0))
        base_swa = float(g("rope.freq_base_swa", 10000.0))
        self.hd = [hd_swa if s else hd_full for s in self.swa]
        self.rot = [rot_swa if s else rot_full for s in self.swa]
        self.base = [base_swa if s else base_full for s in self.swa]
        factors = self.w.get("rope_freqs.weight")
        self.factors = [None if s else factors for s in self.swa]
        n0 = L - int(g("attention.shared_kv_layers", 0))
        self.kv_src = [l if l < n0 else n0 - (2 if self.swa[l] else 1) for l in range(L)]
        self.n_pl = int(g("embedding_length_per_layer_input", 0))
        self.ple = self.n_pl > 0 and "per_layer_token_embd.weight" in self.w
        self.softcap = g("final_logit_softcapping")
        self.out_w = self.w.get("output.weight", self.w["token_embd.weight"])
        self.reset()

    def reset(self):
        self.pos = 0
        self.kc = [[] for _ in range(self.n_layer)]
        self.vc = [[] for _ in range(self.n_layer)]
        self.kpos = [[] for _ in range(self.n_layer)]

    def rms(self, x, gain=None):
        y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return y if gain is None else y * gain

    def per_layer_inputs(self, token, x):
        w, L, n = self.w, self.n_layer, self.n_pl
        tok = w["per_layer_token_embd.weight"][token].reshape(L, n) * np.sqrt(n)
        proj = (w["per_layer_model_proj.weight"] @ x / np.sqrt(self.d)).reshape(L, n)
        proj = self.rms(proj, w["per_layer_proj_norm.weight"])
        return (proj + tok) / np.sqrt(2.0)

    def attention(self, l, h):
        p, w = f"blk.{l}.", self.w
        hd, nh, pos = self.hd[l], self.n_head[l], self.pos
        rope = lambda t: rope_neox(t, pos, self.rot[l], self.base[l], self.factors[l])
        q = rope(self.rms((w[p + "attn_q.weight"] @ h).reshape(nh, hd), w[p + "attn_q_norm.weight"]))
        src = self.kv_src[l]
        if src == l:
            nkv = self.n_kv[l]
            kraw = (w[p + "attn_k.weight"] @ h).reshape(nkv, hd)
            vraw = (w[p + "attn_v.weight"] @ h).reshape(nkv, hd) if p + "attn_v.weight" in w else kraw
            self.kc[l].append(rope(self.rms(kraw, w[p + "attn_k_norm.weight"])))
            self.vc[l].append(self.rms(vraw))
            self.kpos[l].append(pos)
        K, V, kp = np.stack(self.kc[src]), np.stack(self.vc[src]), np.array(self.kpos[src])
        assert K.shape[2] == hd
        visible = kp <= pos
        if self.swa[l]:
            visible &= pos - kp < self.n_swa
        K, V = K[visible], V[visible]
        group = nh // K.shape[1]
        o = np.zeros((nh, hd))
        for j in range(nh):
            s = K[:, j // group, :] @ q[j]  # attention scale 1.0
            e = np.exp(s - s.max())
            o[j] = (e / e.sum()) @ V[:, j // group, :]
        return w[p + "attn_output.weight"] @ o.reshape(-1)

    def step(self, token):
        """Feeds one token; returns the logits (n_vocab,) of the next."""
        w = self.w
        x = w["token_embd.weight"][token] * np.sqrt(self.d)
        pl = self.per_layer_inputs(token, x) if self.ple else None
        for l in range(self.n_layer):
            p = f"blk.{l}."
            h = self.rms(x, w[p + "attn_norm.weight"])
            x = x + self.rms(self.attention(l, h), w[p + "post_attention_norm.weight"])
            u = self.rms(x, w[p + "ffn_norm.weight"])
            f = w[p + "ffn_down.weight"] @ (self.gelu(w[p + "ffn_gate.weight"] @ u) * (w[p + "ffn_up.weight"] @ u))
            x = x + self.rms(f, w[p + "post_ffw_norm.weight"])
            if pl is not None:
                gate = self.gelu(w[p + "inp_gate.weight"] @ x) * pl[l]
                x = x + self.rms(w[p + "proj.weight"] @ gate, w[p + "post_norm.weight"])
            if p + "layer_output_scale.weight" in w:
                x = x * w[p + "layer_output_scale.weight"][0]
        self.pos += 1
        z = self.out_w @ self.rms(x, w["output_norm.weight"])
        if self.softcap:
            z = np.tanh(z / self.softcap) * self.softcap
        return z


def forward(meta, w, ids, gelu="exact"):
    """The logits (len(ids), n_vocab) of every position of `ids`, each seeing the ones before it."""
    m = Model(meta, w, gelu)
    return np.array([m.step(int(t)) for t in ids])


def greedy(meta, w, prompt, n_gen, top_k=4, gelu="exact"):
    """Greedy continuation of `prompt`: per step the chosen id, the top-1/top-2 gap and the top k."""
    m = Model(meta, w, gelu)
    for t in prompt:
        logits = m.step(int(t))
    steps = []
    for i in range(n_gen):
        idx = np.argsort(-logits, kind="stable")[:top_k]
        top = [[int(j), round(float(logits[j]), 4)] for j in idx]
        steps.append({"id": top[0][0], "gap": round(float(logits[idx[0]] - logits[idx[1]]), 4), "top": top})
        if i + 1 < n_gen:
            logits = m.step(top[0][0])
    return steps


def main():
    meta, w = load(sys.argv[1])
    n_gen = int(sys.argv[2])
    prompt = [int(t) for t in sys.argv[3:]]
    print(json.dumps({"prompt_ids": prompt, "steps": greedy(meta, w, prompt, n_gen)}))


if __name__ == "__main__":
    main()

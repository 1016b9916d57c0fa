"""A float64 reference forward pass of a `gpt-oss` GGUF (OpenAI's gpt-oss-20b/120b: attention with biases,
learned per-head sinks and a sliding window on every other layer, YaRN RoPE, and a mixture of experts with
biased experts and a clamped SwiGLU) in numpy, over the `gguf` package's dequantized weights (MXFP4
included): no activation quantization, no f16 cache. Written from llama.cpp's graph (src/models/
openai-moe.cpp; llama-graph.cpp build_qkv, build_attn_mha with sinks, build_moe_ffn with
LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT and LLM_FFN_SWIGLU_OAI_MOE; llama-context.cpp's YaRN
attn_factor; ggml-cpu ops.cpp rope_yarn, soft_max with sinks, swiglu_oai; ggml.c ggml_rope_yarn_corr_dims),
not from Wick's kernels.

usage: python numpy_gpt_oss.py MODEL.gguf N_GEN TOKEN_ID [TOKEN_ID ...]
Feeds the prompt ids, then decodes N_GEN tokens greedily; prints one JSON record with, per generated
step, the chosen id, the top-1/top-2 gap and the top-4 (id, logit).

As a module (the interface of numpy_moe.py, which dispatches gpt-oss files here and passes its recording
Router as `ffn`): `load(path)` gives (meta, weights), `forward(meta, w, ids)` the logits (len(ids),
n_vocab) of every position, teacher-forced, in one pass; `Model(meta, w).step(token)` one token at a
time over a kv cache (the same numbers); `greedy(meta, w, prompt, n_gen)` the greedy steps.

The math (x: the residual stream, d = embedding_length, A = "gpt-oss."; numpy shapes are ggml's ne
reversed):
- x = token_embd[id]. Every block l: x += attn(rms(x) * attn_norm); x += moe(rms(x) * post_attention_norm)
  (post_attention_norm is the pre-FFN norm: HF's post_attention_layernorm). rms(v) = v / sqrt(mean(v^2)
  + eps), eps = A.attention.layer_norm_rms_epsilon. Logits = output (rms(x) * output_norm) (untied).
- Attention: head_dim = A.attention.key_length (= value_length = n_rot), n_head, n_kv = head_count_kv.
  q = attn_q h + attn_q.bias, k = attn_k h + attn_k.bias, v = attn_v h + attn_v.bias (biases optional in
  llama.cpp, always present in gpt-oss). RoPE NeoX (pair i = dims (i, i + head_dim/2)) with YaRN, below,
  on q and k. Query head j reads kv head j // (n_head / n_kv); score s = q.k / sqrt(head_dim); layer l
  slides a window iff l % 2 == 0 (llama.cpp load_swa_pattern(ml, 2): il % 2 < 1), where a query at
  position p sees the keys at p - W + 1 .. p, W = A.attention.sliding_window; other layers see 0 .. p.
  Sinks: attn_sinks (n_head) is one extra logit per head in the softmax, unscaled, with no value:
  m = max(max_j s_j, sink); a_j = exp(s_j - m) / (sum_j exp(s_j - m) + exp(sink - m)); o = sum_j a_j v_j.
  out = attn_output concat_j(o_j) + attn_output.bias.
- YaRN (A.rope.scaling.type "yarn", factor f = A.rope.scaling.factor, freq_scale = 1/f, n_ctx_orig =
  A.rope.scaling.original_context_length; every layer, windowed or not, uses A.rope.freq_base (A.rope.
  freq_base_swa on windowed layers where present) and the same freq_scale): for pair i of n_dims =
  head_dim, theta_extrap = pos * base^(-2i/n_dims), theta_interp = freq_scale * theta_extrap,
  corr = [max(0, floor(c(beta_fast))), min(n_dims - 1, ceil(c(beta_slow)))] with c(beta) = n_dims *
  ln(n_ctx_orig / (2 pi beta)) / (2 ln base), beta_fast 32, beta_slow 1 (llama.cpp's defaults: gpt-oss
  reads no rope.scaling.yarn_beta_* key), ramp(i) = 1 - clamp((i - corr0) / max(0.001, corr1 - corr0),
  0, 1) (ext_factor 1), theta = theta_interp (1 - ramp) + theta_extrap ramp. (cos, sin) times mscale =
  attn_factor (1 + 0.1 ln f), where llama.cpp sets attn_factor = (1 + 0.1 ln f) / (1 + 0.1 ln f) (times
  rope.scaling.attn_factor, 1 when absent; gpt-oss reads no yarn_log_multiplier), so the rotation keeps
  magnitude 1. HF's gpt-oss config says truncate: false (corr dims not rounded); llama.cpp floors and
  ceils them, and this follows llama.cpp.
- MoE (E = A.expert_count, k = A.expert_used_count, f = A.expert_feed_forward_length): router logits
  r = ffn_gate_inp u + ffn_gate_inp.bias (E); the k experts of largest r (ties to the lowest id); their
  weights softmax over the k chosen logits only (SOFTMAX_WEIGHT gating; no renormalization, no scale).
  Expert e: g = ffn_gate_exps[e] u + ffn_gate_exps.bias[e], y = ffn_up_exps[e] u + ffn_up_exps.bias[e]
  (numpy (E, f, d) weights and (E, f) biases), a = swiglu_oai(g, y) = min(g, 7) sigmoid(1.702 min(g, 7))
  (clamp(y, -7, 7) + 1), out_e = ffn_down_exps[e] a + ffn_down_exps.bias[e] ((E, d, f) and (E, d)); the
  down bias is added before the weighting, so it is weighted with its expert. moe(u) = sum_e w_e out_e.
"""
import json
import math
import sys

import numpy as np

import numpy_dense

ALPHA, LIMIT = 1.702, 7.0  # llama-graph.cpp LLM_FFN_SWIGLU_OAI_MOE
BETA_FAST, BETA_SLOW = 32.0, 1.0  # llama_hparams' yarn_beta_fast / yarn_beta_slow defaults


def load(path):
    return numpy_dense.load(path)


def swiglu_oai(g, y):
    x = np.minimum(g, LIMIT)
    return x / (1.0 + np.exp(-ALPHA * x)) * (np.clip(y, -LIMIT, LIMIT) + 1.0)


def softmax(r, axis=-1):
    e = np.exp(r - r.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def router_logits(w, p, u):
    """(n, n_expert) router logits of normed inputs u (n, n_embd) in block prefix p."""
    return u @ w[p + "ffn_gate_inp.weight"].T + w[p + "ffn_gate_inp.bias"]


def expert_order(r):
    """Experts in decreasing logit order (ties to the lowest id); the first k are chosen."""
    return np.argsort(-r, axis=1, kind="stable")


def chosen_weights(r, chosen):
    """SOFTMAX_WEIGHT: softmax over the chosen experts' logits."""
    return softmax(np.take_along_axis(r, chosen, axis=1), axis=1)


def experts(w, p, u, chosen, weights):
    """sum over slots s of weights[:, s] * expert chosen[:, s] (u), each expert with its biases."""
    gate, up, down = (w[p + f"ffn_{n}_exps.weight"] for n in ("gate", "up", "down"))
    gate_b, up_b, down_b = (w[p + f"ffn_{n}_exps.bias"] for n in ("gate", "up", "down"))
    out = np.zeros_like(u)
    for e in range(gate.shape[0]):
        rows, slot = np.nonzero(chosen == e)
        if len(rows):
            h = u[rows]
            a = swiglu_oai(h @ gate[e].T + gate_b[e], h @ up[e].T + up_b[e])
            out[rows] += weights[rows, slot][:, None] * (a @ down[e].T + down_b[e])
    return out


def moe(w, n_used):
    """The feed-forward sublayer as ffn(prefix, u), without recording (numpy_moe.Router records)."""
    def ffn(p, u):
        r = router_logits(w, p, u)
        chosen = expert_order(r)[:, :n_used]
        return experts(w, p, u, chosen, chosen_weights(r, chosen))
    return ffn


def yarn_corr_dims(n_dims, n_ctx_orig, base, beta_fast, beta_slow):
    dim = lambda beta: n_dims * math.log(n_ctx_orig / (beta * 2 * math.pi)) / (2 * math.log(base))
    return max(0.0, math.floor(dim(beta_fast))), min(n_dims - 1.0, math.ceil(dim(beta_slow)))


class Rope:
    """ggml_rope_ext in NeoX mode as llama.cpp calls it for gpt-oss (rope_yarn, rope_yarn_ramp)."""

    def __init__(self, meta, base):
        a = meta["general.architecture"]
        g = lambda k, d=None: meta.get(f"{a}.{k}", d)
        self.n_dims = int(g("attention.key_length"))
        self.base = float(base)
        kind = g("rope.scaling.type", "linear")
        factor = float(g("rope.scaling.factor", 0.0))
        self.freq_scale = 1.0 / factor if factor and kind != "none" else 1.0
        self.ext = 1.0 if kind == "yarn" else 0.0
        attn_factor = 1.0
        if self.ext:
            f = 1.0 / self.freq_scale
            attn_factor = (1.0 + 0.1 * math.log(f)) if f > 1.0 else 1.0  # get_mscale(factor, 1)
            attn_factor *= 1.0 / (1.0 + 0.1 * math.log(f))  # llama-context.cpp cancels ggml's mscale
        attn_factor *= float(g("rope.scaling.attn_factor", 1.0))
        self.mscale = attn_factor * ((1.0 + 0.1 * math.log(1.0 / self.freq_scale)) if self.ext else 1.0)
        n_ctx_orig = int(g("rope.scaling.original_context_length", g("context_length")))
        self.corr = yarn_corr_dims(self.n_dims, n_ctx_orig, self.base, BETA_FAST, BETA_SLOW)
        i = np.arange(self.n_dims // 2)
        self.inv_freq = self.base ** (-2.0 * i / self.n_dims)
        lo, hi = self.corr
        self.ramp = (1.0 - np.clip((i - lo) / max(0.001, hi - lo), 0.0, 1.0)) * self.ext

    def angles(self, pos):
        """(len(pos), n_dims/2) rotation angles."""
        t_ext = np.asarray(pos, dtype=np.float64)[:, None] * self.inv_freq
        t_int = self.freq_scale * t_ext
        return t_int * (1.0 - self.ramp) + t_ext * self.ramp

    def __call__(self, x, pos):
        """x: (n, heads, n_dims) at positions pos (n)."""
        theta = self.angles(pos)[:, None, :]
        c, s = np.cos(theta) * self.mscale, np.sin(theta) * self.mscale
        half = self.n_dims // 2
        a, b = x[..., :half], x[..., half:self.n_dims]
        out = x.copy()
        out[..., :half] = a * c - b * s
        out[..., half:self.n_dims] = a * s + b * c
        return out


class Model:
    """gpt-oss in float64 over a kv cache: `run(ids)` feeds ids after the ones already fed and returns
    their logits; `step(token)` feeds one. `ffn(prefix, u)`: the feed-forward sublayer (numpy_moe's
    Router, which records routings; this module's `moe` if not given)."""

    def __init__(self, meta, w, ffn=None):
        a = meta["general.architecture"]
        g = lambda k, d=None: meta.get(f"{a}.{k}", d)
        self.meta = meta
        self.w = {k: v.astype(np.float64) for k, v in w.items()}
        self.n_layer = int(g("block_count"))
        self.n_head, self.n_kv = int(g("attention.head_count")), int(g("attention.head_count_kv"))
        self.hd = int(g("attention.key_length"))
        assert int(g("attention.value_length", self.hd)) == self.hd
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.window = int(g("attention.sliding_window"))
        base = float(g("rope.freq_base", 10000.0))
        base_swa = float(g("rope.freq_base_swa", base))
        self.swa = [l % 2 < 1 for l in range(self.n_layer)]
        self.rope = [Rope(meta, base_swa if s else base) for s in self.swa]
        self.scale = 1.0 / math.sqrt(self.hd)
        if ffn is None:
            ffn = moe(self.w, int(g("expert_used_count")))
        elif hasattr(ffn, "w"):
            ffn.w = self.w
        self.ffn = ffn
        self.reset()

    def reset(self):
        self.pos = 0
        self.kc = [np.zeros((0, self.n_kv, self.hd)) for _ in range(self.n_layer)]
        self.vc = [np.zeros((0, self.n_kv, self.hd)) for _ in range(self.n_layer)]

    def rms(self, x, gain):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * gain

    def attention(self, l, h, pos):
        p, w, n = f"blk.{l}.", self.w, len(h)
        q = (h @ w[p + "attn_q.weight"].T + w[p + "attn_q.bias"]).reshape(n, self.n_head, self.hd)
        k = (h @ w[p + "attn_k.weight"].T + w[p + "attn_k.bias"]).reshape(n, self.n_kv, self.hd)
        v = (h @ w[p + "attn_v.weight"].T + w[p + "attn_v.bias"]).reshape(n, self.n_kv, self.hd)
        q, k = self.rope[l](q, pos), self.rope[l](k, pos)
        self.kc[l] = np.concatenate([self.kc[l], k])
        self.vc[l] = np.concatenate([self.vc[l], v])
        K, V = self.kc[l], self.vc[l]
        kpos = np.arange(len(K))
        seen = kpos[None, :] <= pos[:, None]
        if self.swa[l]:
            seen &= pos[:, None] - kpos[None, :] < self.window
        sinks = w[p + "attn_sinks.weight"]
        group = self.n_head // self.n_kv
        o = np.empty((n, self.n_head, self.hd))
        for j in range(self.n_head):
            s = np.where(seen, q[:, j] @ K[:, j // group].T * self.scale, -np.inf)
            m = np.maximum(s.max(axis=1), sinks[j])[:, None]
            e = np.exp(s - m)
            o[:, j] = (e @ V[:, j // group]) / (e.sum(axis=1, keepdims=True) + np.exp(sinks[j] - m))
        return o.reshape(n, -1) @ w[p + "attn_output.weight"].T + w[p + "attn_output.bias"]

    def run(self, ids):
        w = self.w
        pos = np.arange(self.pos, self.pos + len(ids))
        self.pos += len(ids)
        x = w["token_embd.weight"][np.asarray(ids, dtype=np.int64)].copy()
        for l in range(self.n_layer):
            p = f"blk.{l}."
            x = x + self.attention(l, self.rms(x, w[p + "attn_norm.weight"]), pos)
            x = x + self.ffn(p, self.rms(x, w[p + "post_attention_norm.weight"]))
        return self.rms(x, w["output_norm.weight"]) @ w["output.weight"].T

    def step(self, token):
        return self.run([int(token)])[0]


def forward(meta, w, ids, n_ctx=None, ffn=None):
    """The logits (len(ids), n_vocab) of every position of `ids`, each seeing the ones before it."""
    return Model(meta, w, ffn).run(ids)


def greedy(meta, w, prompt, n_gen, top_k=4, ffn=None):
    """Greedy continuation of `prompt`: per step the chosen id, the top-1/top-2 gap and the top k."""
    m = Model(meta, w, ffn)
    logits = m.run(prompt)[-1]
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

"""A float64 reference forward pass of a `qwen35` GGUF (Qwen3.5: Gated DeltaNet linear-attention layers
beside gated full-attention layers) in numpy, over the `gguf` package's dequantized weights: no activation
quantization, no f16 cache. Written from llama.cpp's graph (src/models/qwen35.cpp, delta-net-base.cpp,
models.h build_gdn_l2_norm, llama-graph.cpp llm_graph_input_pos, ggml-cpu ops.cpp gated_delta_net,
ssm_conv, rope (imrope), rms_norm), not from Wick's kernels.

usage: python numpy_qwen35.py MODEL.gguf N_GEN TOKEN_ID [TOKEN_ID ...]
Feeds the prompt ids, then decodes N_GEN tokens greedily; prints one JSON record with, per generated
step, the chosen id, the top-1/top-2 gap and the top-4 (id, logit).

As a module (the interface of numpy_dense.py): `load(path)` gives (meta, weights) and `forward(meta, w,
ids)` the logits (len(ids), n_vocab) of every position, teacher-forced. Tokens are processed one at a
time with the recurrent state (`Model.step`), which is the same math as llama.cpp's chunked prefill.

The math (x: the residual stream, d = embedding_length, A = "qwen35."):
- Layer kinds: A.attention.recurrent_layers (one bool per block) if present, else layer i is a linear
  (recurrent) layer iff (i + 1) % A.full_attention_interval != 0 (interval 4 when absent).
- Every layer: h = rms(x) * attn_norm; x += mixer(h); x += ffn(rms(x) * post_attention_norm) with
  ffn(u) = ffn_down (silu(ffn_gate u) * ffn_up u). rms(v) = v / sqrt(mean(v^2) + eps), eps =
  A.attention.layer_norm_rms_epsilon everywhere. Every stored norm gain is used as is: the converter
  already added Qwen3.5's +1 to attn_norm, post_attention_norm, attn_q_norm, attn_k_norm and
  output_norm (not to ssm_norm, which HF applies as a plain weight).
- Linear layer (Gated DeltaNet). Sizes: S = A.ssm.state_size (head size of k and v), H_k =
  A.ssm.group_count k heads, H_v = A.ssm.time_step_rank v heads (A.ssm.inner_size = S * H_v), conv
  width K = A.ssm.conv_kernel, conv_dim = 2 S H_k + S H_v.
    mixed = attn_qkv h (conv_dim rows: q of every k head, k of every k head, v of every v head);
    z = attn_gate h (S H_v); beta = sigmoid(ssm_beta h) (H_v);
    g = softplus(ssm_alpha h + ssm_dt.bias) * ssm_a (H_v; ssm_a holds -exp(A_log), so g < 0).
    Causal depthwise conv: c[ch] = sum_{j<K} ssm_conv1d[ch, j] * in[t - (K-1) + j][ch] over the last K
    inputs (the K-1 previous ones are the conv state, zeros at the start; numpy shape of ssm_conv1d is
    (conv_dim, K), the last column multiplies the current token); then c = silu(c).
    q_i, k_i (k heads i) = c's first two blocks, each L2-normalised per head:
    v / sqrt(sum(v^2) + eps) (ggml: rms_norm with eps/S, times 1/sqrt(S); eps is the rms eps).
    v_h (v heads h) = the third block. V head h reads k head h % H_k (tiled, ggml_repeat; the converter
    reorders HF's grouped v heads into this order).
    Per v head, state M (S x S, M[i, j]: key dim i, value dim j), zeros at the start:
      M *= exp(g_h); delta = (v_h - M^T k) * beta_h; M += k delta^T; o_h = M^T q / sqrt(S).
    y_h = rms(o_h) * ssm_norm (ssm_norm: S gains shared by every head) * silu(z_h);
    mixer = ssm_out concat_h(y_h).
- Full-attention layer. head_dim = A.attention.key_length, n_head, n_kv = head_count_kv.
    attn_q h gives 2 head_dim rows per head, interleaved [q_0, gate_0, q_1, gate_1, ...];
    q = rms(q_h) * attn_q_norm, k = rms(attn_k h per kv head) * attn_k_norm, v = attn_v h.
    RoPE "imrope" (interleaved M-RoPE) on the first n_rot = A.rope.dimension_count dims of each head in
    NeoX pairing (pair i = dims (i, i + n_rot/2)), base A.rope.freq_base: pair i turns by
    p_s * base^(-2i/n_rot) where, with sections A.rope.dimension_sections = [s0, s1, s2, s3] and sector
    = i % (s0+s1+s2+s3), s is h if sector % 3 == 1 and sector < 3 s1, w if sector % 3 == 2 and
    sector < 3 s2, t if sector % 3 == 0 and sector < 3 s0, else e. A text token at position p has
    (p_t, p_h, p_w, p_e) = (p, p, p, 0), so only pairs that fall to e stay unrotated (none when
    s0+s1+s2 = n_rot/2, as in Qwen3.5's [11, 11, 10, 0] over 64 dims).
    Causal softmax attention, query head j reading kv head j // (n_head / n_kv), scale 1/sqrt(head_dim);
    o_j *= sigmoid(gate_j); mixer = attn_output concat_j(o_j).
- Logits = output (or token_embd when output.weight is absent) rms(x) * output_norm.
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


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0.0, x)


def recurrent_layers(meta):
    a = meta["general.architecture"]
    n_layer = meta[f"{a}.block_count"]
    if f"{a}.attention.recurrent_layers" in meta:
        kinds = [bool(v) for v in meta[f"{a}.attention.recurrent_layers"]]
        assert len(kinds) == n_layer
        return kinds
    interval = meta.get(f"{a}.full_attention_interval", 4)
    return [(i + 1) % interval != 0 for i in range(n_layer)]


def imrope_angles(pos, n_rot, base, sections):
    """The angle of each of the n_rot/2 NeoX pairs at text position `pos` (positions (pos, pos, pos, 0))."""
    s0, s1, s2, s3 = sections
    total = s0 + s1 + s2 + s3
    p_t = p_h = p_w = pos
    p_e = 0
    out = np.zeros(n_rot // 2)
    for i in range(n_rot // 2):
        sector = i % total
        if sector % 3 == 1 and sector < 3 * s1:
            p = p_h
        elif sector % 3 == 2 and sector < 3 * s2:
            p = p_w
        elif sector % 3 == 0 and sector < 3 * s0:
            p = p_t
        else:
            p = p_e
        out[i] = p * base ** (-2.0 * i / n_rot)
    return out


def rope_neox(x, theta):
    """x: (heads, head_dim); rotates pairs (i, i + n_rot/2) for i < n_rot/2 = len(theta)."""
    half = len(theta)
    c, s = np.cos(theta), np.sin(theta)
    a, b = x[:, :half].copy(), x[:, half:2 * half].copy()
    x = x.copy()
    x[:, :half] = a * c - b * s
    x[:, half:2 * half] = a * s + b * c
    return x


class Model:
    """Token-by-token qwen35 forward in float64, holding the conv and delta-net states and the kv cache."""

    def __init__(self, meta, w):
        a = meta["general.architecture"]
        self.meta = meta
        self.w = {k: v.astype(np.float64) for k, v in w.items()}
        g = lambda k, d=None: meta.get(f"{a}.{k}", d)
        self.n_layer = g("block_count")
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.n_head, self.n_kv = g("attention.head_count"), g("attention.head_count_kv")
        self.hd = g("attention.key_length", g("embedding_length") // self.n_head)
        self.n_rot = g("rope.dimension_count", self.hd)
        self.base = float(g("rope.freq_base", 10000.0))
        self.sections = [int(s) for s in g("rope.dimension_sections")]
        self.S = g("ssm.state_size")
        self.H_k, self.H_v = g("ssm.group_count"), g("ssm.time_step_rank")
        self.K = g("ssm.conv_kernel")
        assert g("ssm.inner_size") == self.S * self.H_v
        self.recurrent = recurrent_layers(meta)
        self.out_w = self.w.get("output.weight", self.w["token_embd.weight"])
        self.reset()

    def reset(self):
        conv_dim = 2 * self.S * self.H_k + self.S * self.H_v
        self.pos = 0
        self.conv = [np.zeros((self.K - 1, conv_dim)) for _ in range(self.n_layer)]
        self.state = [np.zeros((self.H_v, self.S, self.S)) for _ in range(self.n_layer)]
        self.kc = [[] for _ in range(self.n_layer)]
        self.vc = [[] for _ in range(self.n_layer)]

    def rms(self, x, gain):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * gain

    def l2(self, x):
        return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + self.eps)

    def linear(self, l, h):
        p, w, S, H_k, H_v = f"blk.{l}.", self.w, self.S, self.H_k, self.H_v
        mixed = w[p + "attn_qkv.weight"] @ h
        z = (w[p + "attn_gate.weight"] @ h).reshape(H_v, S)
        beta = sigmoid(w[p + "ssm_beta.weight"] @ h)
        gate = softplus(w[p + "ssm_alpha.weight"] @ h + w[p + "ssm_dt.bias"]) * w[p + "ssm_a"]
        window = np.concatenate([self.conv[l], mixed[None, :]])  # (K, conv_dim), oldest first
        self.conv[l] = window[1:]
        c = silu(np.sum(window.T * w[p + "ssm_conv1d.weight"], axis=1))
        q = self.l2(c[:S * H_k].reshape(H_k, S))
        k = self.l2(c[S * H_k:2 * S * H_k].reshape(H_k, S))
        v = c[2 * S * H_k:].reshape(H_v, S)
        M = self.state[l]
        o = np.zeros((H_v, S))
        for hv in range(H_v):
            kk, qq = k[hv % H_k], q[hv % H_k]
            M[hv] *= np.exp(gate[hv])
            delta = (v[hv] - M[hv].T @ kk) * beta[hv]
            M[hv] += np.outer(kk, delta)
            o[hv] = M[hv].T @ qq / np.sqrt(S)
        y = self.rms(o, w[p + "ssm_norm.weight"]) * silu(z)
        return w[p + "ssm_out.weight"] @ y.reshape(-1)

    def attention(self, l, h):
        p, w, hd, nh, nkv = f"blk.{l}.", self.w, self.hd, self.n_head, self.n_kv
        qg = (w[p + "attn_q.weight"] @ h).reshape(nh, 2, hd)
        q, gate = qg[:, 0, :], qg[:, 1, :].reshape(-1)
        k = (w[p + "attn_k.weight"] @ h).reshape(nkv, hd)
        v = (w[p + "attn_v.weight"] @ h).reshape(nkv, hd)
        q = self.rms(q, w[p + "attn_q_norm.weight"])
        k = self.rms(k, w[p + "attn_k_norm.weight"])
        theta = imrope_angles(self.pos, self.n_rot, self.base, self.sections)
        q, k = rope_neox(q, theta), rope_neox(k, theta)
        self.kc[l].append(k)
        self.vc[l].append(v)
        K, V = np.stack(self.kc[l]), np.stack(self.vc[l])
        o = np.zeros((nh, hd))
        for j in range(nh):
            g = j // (nh // nkv)
            s = K[:, g, :] @ q[j] / np.sqrt(hd)
            e = np.exp(s - s.max())
            o[j] = (e / e.sum()) @ V[:, g, :]
        return w[p + "attn_output.weight"] @ (o.reshape(-1) * sigmoid(gate))

    def ffn(self, l, h):
        """The feed-forward sublayer of block l on its normed input h (numpy_moe.py overrides it)."""
        p, w = f"blk.{l}.", self.w
        gt, up = w[p + "ffn_gate.weight"] @ h, w[p + "ffn_up.weight"] @ h
        return w[p + "ffn_down.weight"] @ (silu(gt) * up)

    def step(self, token):
        """Feeds one token; returns the logits (n_vocab,) of the next."""
        w = self.w
        x = w["token_embd.weight"][token].copy()
        for l in range(self.n_layer):
            p = f"blk.{l}."
            h = self.rms(x, w[p + "attn_norm.weight"])
            x = x + (self.linear(l, h) if self.recurrent[l] else self.attention(l, h))
            x = x + self.ffn(l, self.rms(x, w[p + "post_attention_norm.weight"]))
        self.pos += 1
        return self.out_w @ self.rms(x, w["output_norm.weight"])


def forward(meta, w, ids, n_ctx=None):
    """The logits (len(ids), n_vocab) of every position of `ids`, each seeing the ones before it."""
    m = Model(meta, w)
    return np.array([m.step(int(t)) for t in ids])


def greedy(meta, w, prompt, n_gen, top_k=4):
    """Greedy continuation of `prompt`: per step the chosen id, the top-1/top-2 gap and the top k."""
    m = Model(meta, w)
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

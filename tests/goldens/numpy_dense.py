"""An f32 reference forward pass of a dense-architecture GGUF (llama, qwen2, gemma3) in numpy, with the
`gguf` package's dequantizers: no activation quantization, no f16 cache. Written from llama.cpp's graphs
(src/models/{llama,qwen2,gemma3}.cpp), not from Wick's kernels.

usage: python numpy_dense.py MODEL.gguf N_GEN TOKEN_ID [TOKEN_ID ...]
Feeds the prompt ids, then decodes N_GEN tokens greedily; prints one JSON record with, per generated
step, the chosen id and the top-4 (id, logit).

As a module: `load(path)` gives (meta, weights) and `forward(meta, w, ids)` the logits of every position
of a sequence at once (causal, teacher-forced), which perplexities and goldens are made from.

Per family:
- llama: RoPE on pairs (2i, 2i+1), SwiGLU.
- qwen2: llama with q/k/v biases and NeoX RoPE (pairs (i, i + n_rot/2)).
- gemma3: embeddings times sqrt(n_embd); q and k RMS-normed per head; NeoX RoPE; GELU (tanh) gate;
  a norm after attention and after the FFN before each residual add; of every 6 layers the first 5
  see only the last `sliding_window` positions with RoPE base 10000, the 6th all with the file's base.
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


def rope(x, pos, base, n_rot, neox=False):
    """Rotates x: (heads, head_dim) at position `pos`, or (n, heads, head_dim) at positions `pos`: (n).
    theta_i = pos * base^(-2i / n_rot) for pair i."""
    i = np.arange(n_rot // 2)
    theta = np.asarray(pos, dtype=np.float64)[..., None, None] * base ** (-2.0 * i / n_rot)
    c, s = np.cos(theta).astype(x.dtype), np.sin(theta).astype(x.dtype)
    if neox:
        ia, ib = i, i + n_rot // 2
    else:
        ia, ib = 2 * i, 2 * i + 1
    a, b = x[..., ia].copy(), x[..., ib].copy()
    x[..., ia] = a * c - b * s
    x[..., ib] = a * s + b * c
    return x


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * x * (1.0 + 0.044715 * x * x)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def forward(meta, w, ids):
    """The logits (len(ids), n_vocab) of every position of `ids`, each seeing the ones before it."""
    a = meta["general.architecture"]
    n_layer, n_head = meta[f"{a}.block_count"], meta[f"{a}.attention.head_count"]
    n_kv = meta[f"{a}.attention.head_count_kv"]
    eps, base = meta[f"{a}.attention.layer_norm_rms_epsilon"], meta.get(f"{a}.rope.freq_base", 10000.0)
    d = meta[f"{a}.embedding_length"]
    hd = meta.get(f"{a}.attention.key_length", d // n_head)
    n_rot = meta.get(f"{a}.rope.dimension_count", hd)
    gemma = a == "gemma3"
    neox = a in ("qwen2", "gemma3")
    window = meta.get(f"{a}.attention.sliding_window", 0) if gemma else 0
    # Per layer: (RoPE base, window or 0).
    layers = [(base, 0)] * n_layer
    if window:
        layers = [(10000.0, window) if l % 6 < 5 else (base, 0) for l in range(n_layer)]
    scale = 1.0 / np.sqrt(hd)
    act = gelu_tanh if gemma else silu
    norm = lambda x, g: x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g
    bias = lambda name: w.get(name, 0.0)
    n = len(ids)
    pos = np.arange(n)
    x = w["token_embd.weight"][np.asarray(ids)].copy()
    if gemma:
        x = x * np.float32(np.sqrt(d))
    for l in range(n_layer):
        p = f"blk.{l}."
        l_base, l_window = layers[l]
        # Query i sees key j when j <= i, and on a windowed layer when i - j < window.
        seen = pos[None, :] <= pos[:, None]
        if l_window:
            seen &= pos[:, None] - pos[None, :] < l_window
        h = norm(x, w[p + "attn_norm.weight"])
        q = (h @ w[p + "attn_q.weight"].T + bias(p + "attn_q.bias")).reshape(n, n_head, hd)
        k = (h @ w[p + "attn_k.weight"].T + bias(p + "attn_k.bias")).reshape(n, n_kv, hd)
        v = (h @ w[p + "attn_v.weight"].T + bias(p + "attn_v.bias")).reshape(n, n_kv, hd)
        if gemma:
            q = norm(q, w[p + "attn_q_norm.weight"])
            k = norm(k, w[p + "attn_k_norm.weight"])
        q = rope(q, pos, l_base, n_rot, neox)
        k = rope(k, pos, l_base, n_rot, neox)
        o = np.zeros((n, n_head, hd), np.float32)
        for hh in range(n_head):
            g = hh // (n_head // n_kv)
            s = q[:, hh, :] @ k[:, g, :].T * scale  # (query, key)
            s = np.where(seen, s, -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            o[:, hh, :] = (e / e.sum(axis=1, keepdims=True)) @ v[:, g, :]
        attn = o.reshape(n, -1) @ w[p + "attn_output.weight"].T
        if gemma:
            attn = norm(attn, w[p + "post_attention_norm.weight"])
        x = x + attn
        h = norm(x, w[p + "ffn_norm.weight"])
        gt, up = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
        ffn = (act(gt) * up) @ w[p + "ffn_down.weight"].T
        if gemma:
            ffn = norm(ffn, w[p + "post_ffw_norm.weight"])
        x = x + ffn
    out_w = w.get("output.weight", w["token_embd.weight"])
    return norm(x, w["output_norm.weight"]) @ out_w.T


def main():
    meta, w = load(sys.argv[1])
    n_gen = int(sys.argv[2])
    prompt = [int(t) for t in sys.argv[3:]]
    toks, steps = list(prompt), []
    while len(steps) < n_gen:
        logits = forward(meta, w, toks)[-1]
        top = np.argsort(-logits)[:4]
        steps.append({"id": int(top[0]), "top": [[int(i), round(float(logits[i]), 4)] for i in top]})
        toks.append(int(top[0]))
    print(json.dumps({"prompt_ids": prompt, "steps": steps}))


if __name__ == "__main__":
    main()

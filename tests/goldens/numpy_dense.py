"""An f32 reference forward pass of a dense-architecture GGUF (llama, qwen2, gemma3) in numpy, with the
`gguf` package's dequantizers: no activation quantization, no f16 cache. Written from llama.cpp's graphs
(src/models/{llama,qwen2,gemma3}.cpp), not from Wick's kernels.

usage: python numpy_dense.py MODEL.gguf N_GEN TOKEN_ID [TOKEN_ID ...]
Feeds the prompt ids, then decodes N_GEN tokens greedily; prints one JSON record with, per generated
step, the chosen id and the top-4 (id, logit).

As a module: `load(path)` gives (meta, weights) and `forward(meta, w, ids)` the logits of every position
of a sequence at once (causal, teacher-forced), which perplexities and goldens are made from.

Per family:
- llama: RoPE on pairs (2i, 2i+1), SwiGLU; rope_freqs (Llama 3's scaling) divide each pair's frequency.
- qwen2: llama with q/k/v biases and NeoX RoPE (pairs (i, i + n_rot/2)).
- qwen3: llama with q and k RMS-normed per head before RoPE, and NeoX RoPE. qwen3moe: the same block
  with a mixture of experts for the FFN (numpy_moe.py passes it as `ffn`).
- phi3: llama with q, k and v in one matrix (attn_qkv) and gate and up in one (ffn_up, gate first);
  NeoX RoPE; LongRoPE's rope_factors_long where the context exceeds rope.scaling.original_context_length,
  else rope_factors_short, and rope.scaling.attn_factor scaling (cos, sin).
- gemma2, gemma3: embeddings times sqrt(n_embd); NeoX RoPE; GELU (tanh) gate; a norm after attention and
  after the FFN before each residual add; attention scaled by 1/sqrt(n_embd / n_head) in the 27B models
  (46 and 62 layers), else 1/sqrt(head_dim); the final logits soft-capped (cap * tanh(x / cap)) where the
  file says so. gemma2: scores soft-capped too; of every 2 layers the first sees only the last
  `sliding_window` positions (4096 unless the file says). gemma3: q and k RMS-normed per head; of every
  6 layers the first 5 see only the last `sliding_window` positions, with RoPE base 10000.
- gemma-embedding (EmbeddingGemma): gemma3's block, bidirectional: every position sees every other, on
  the sliding layers those within sliding_window // 2 either side; always 1/sqrt(head_dim).
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


def rope(x, pos, base, n_rot, neox=False, factors=None, magnitude=1.0):
    """Rotates x: (heads, head_dim) at position `pos`, or (n, heads, head_dim) at positions `pos`: (n).
    theta_i = pos * base^(-2i / n_rot) / factors[i] for pair i; (cos, sin) times `magnitude`, as ggml's
    rotation scales them (the dimensions past n_rot are left as they are)."""
    i = np.arange(n_rot // 2)
    freq = base ** (-2.0 * i / n_rot)
    if factors is not None:
        freq = freq / np.asarray(factors, dtype=np.float64)
    theta = np.asarray(pos, dtype=np.float64)[..., None, None] * freq
    c, s = (np.cos(theta) * magnitude).astype(x.dtype), (np.sin(theta) * magnitude).astype(x.dtype)
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


def forward(meta, w, ids, n_ctx=None, ffn=None, hidden=False):
    """The logits (len(ids), n_vocab) of every position of `ids`, each seeing the ones before it. `n_ctx`:
    the context the model runs with (phi3 picks its RoPE factors by it). `ffn(prefix, h)`, where given,
    replaces the feed-forward sublayer: it maps the normed inputs h (positions, n_embd) of the block whose
    tensor names start with `prefix` ("blk.3.") to its outputs (numpy_moe.py's mixture of experts). The
    arithmetic runs in the weights' dtype (float32 from load; float64 if the caller converts them). With
    `hidden`, the states after the final norm (len(ids), n_embd) instead of the logits: what embeddings
    pool."""
    a = meta["general.architecture"]
    n_layer, n_head = meta[f"{a}.block_count"], meta[f"{a}.attention.head_count"]
    n_kv = meta[f"{a}.attention.head_count_kv"]
    eps, base = meta[f"{a}.attention.layer_norm_rms_epsilon"], meta.get(f"{a}.rope.freq_base", 10000.0)
    d = meta[f"{a}.embedding_length"]
    hd = meta.get(f"{a}.attention.key_length", d // n_head)
    n_rot = meta.get(f"{a}.rope.dimension_count", hd)
    gemma = a in ("gemma2", "gemma3", "gemma-embedding")
    neox = a in ("qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "gemma-embedding", "phi3")
    qk_norm = a in ("qwen3", "qwen3moe", "gemma3", "gemma-embedding")
    causal = a != "gemma-embedding"
    # Per layer: (RoPE base, window or 0).
    layers = [(base, 0)] * n_layer
    if a in ("gemma3", "gemma-embedding") and meta.get(f"{a}.attention.sliding_window", 0):
        window = meta[f"{a}.attention.sliding_window"]
        local = meta.get(f"{a}.rope.freq_base_swa", 10000.0)
        layers = [(local, window) if l % 6 < 5 else (base, 0) for l in range(n_layer)]
    if a == "gemma2":
        window = meta.get(f"{a}.attention.sliding_window", 4096)
        layers = [(base, window) if l % 2 == 0 else (base, 0) for l in range(n_layer)]
    scale = 1.0 / np.sqrt(hd)
    if a in ("gemma2", "gemma3") and n_layer in (46, 62):
        scale = 1.0 / np.sqrt(d // n_head)
    attn_cap = meta.get(f"{a}.attn_logit_softcapping", 0.0) if a == "gemma2" else 0.0
    final_cap = meta.get(f"{a}.final_logit_softcapping", 0.0) if gemma else 0.0
    # Each pair's frequency divisor, and the magnitude of (cos, sin).
    factors, magnitude = w.get("rope_freqs.weight"), 1.0
    if a == "phi3" and "rope_factors_long.weight" in w:
        orig = meta[f"{a}.rope.scaling.original_context_length"]
        factors = w["rope_factors_long.weight" if n_ctx > orig else "rope_factors_short.weight"]
        magnitude = meta.get(f"{a}.rope.scaling.attn_factor", 1.0)
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
        # Query i sees key j when j <= i, and on a windowed layer when i - j < window. Bidirectional
        # (gemma-embedding): every key, on a windowed layer those with |i - j| <= window // 2.
        if causal:
            seen = pos[None, :] <= pos[:, None]
            if l_window:
                seen &= pos[:, None] - pos[None, :] < l_window
        else:
            seen = np.ones((n, n), dtype=bool)
            if l_window:
                seen &= np.abs(pos[:, None] - pos[None, :]) <= l_window // 2
        h = norm(x, w[p + "attn_norm.weight"])
        if p + "attn_qkv.weight" in w:
            q, k, v = np.split(h @ w[p + "attn_qkv.weight"].T, [n_head * hd, (n_head + n_kv) * hd], axis=1)
        else:
            q = h @ w[p + "attn_q.weight"].T + bias(p + "attn_q.bias")
            k = h @ w[p + "attn_k.weight"].T + bias(p + "attn_k.bias")
            v = h @ w[p + "attn_v.weight"].T + bias(p + "attn_v.bias")
        q, k, v = q.reshape(n, n_head, hd), k.reshape(n, n_kv, hd), v.reshape(n, n_kv, hd)
        if qk_norm:
            q = norm(q, w[p + "attn_q_norm.weight"])
            k = norm(k, w[p + "attn_k_norm.weight"])
        q = rope(q, pos, l_base, n_rot, neox, factors, magnitude)
        k = rope(k, pos, l_base, n_rot, neox, factors, magnitude)
        o = np.zeros((n, n_head, hd), w[p + "attn_output.weight"].dtype)
        for hh in range(n_head):
            g = hh // (n_head // n_kv)
            s = q[:, hh, :] @ k[:, g, :].T * scale  # (query, key)
            if attn_cap:
                s = attn_cap * np.tanh(s / attn_cap)
            s = np.where(seen, s, -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            o[:, hh, :] = (e / e.sum(axis=1, keepdims=True)) @ v[:, g, :]
        attn = o.reshape(n, -1) @ w[p + "attn_output.weight"].T
        if gemma:
            attn = norm(attn, w[p + "post_attention_norm.weight"])
        x = x + attn
        h = norm(x, w[p + "ffn_norm.weight"])
        if ffn is not None:
            x = x + ffn(p, h)
            continue
        if p + "ffn_gate.weight" in w:
            gt, up = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
        else:
            gt, up = np.split(h @ w[p + "ffn_up.weight"].T, 2, axis=1)
        out = (act(gt) * up) @ w[p + "ffn_down.weight"].T
        if gemma:
            out = norm(out, w[p + "post_ffw_norm.weight"])
        x = x + out
    x = norm(x, w["output_norm.weight"])
    if hidden:
        return x
    out_w = w.get("output.weight", w["token_embd.weight"])
    logits = x @ out_w.T
    if final_cap:
        logits = final_cap * np.tanh(logits / final_cap)
    return logits


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

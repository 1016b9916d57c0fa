"""An f32 reference of the BERT family's encoders in numpy (GGUF architectures `bert` and `nomic-bert`),
written from llama.cpp's graph (src/models/bert.cpp), not from Wick's kernels: the hidden state of every
token after the last layer, which embeddings pool.

- bert: token + learned position + token type 0 embeddings, LayerNorm (token_embd_norm); per layer,
  bidirectional attention with biased q, k, v and output projections, the output added to the layer's
  input and LayerNormed (attn_output_norm), then up (biased), GELU (tanh), down (biased), added and
  LayerNormed (layer_output_norm).
- nomic-bert: no position table; q and k turn by NeoX RoPE; q, k and v may come from one attn_qkv;
  the feed-forward is SwiGLU (ffn_gate, ffn_up, ffn_down) without biases.
"""
import numpy as np

from numpy_dense import gelu_tanh, load, rope, silu  # noqa: F401  (load: for callers)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def forward(meta, w, ids):
    a = meta["general.architecture"]
    d, n_head = meta[f"{a}.embedding_length"], meta[f"{a}.attention.head_count"]
    n_layer, eps = meta[f"{a}.block_count"], meta[f"{a}.attention.layer_norm_epsilon"]
    hd = d // n_head
    n = len(ids)
    pos = np.arange(n)
    x = w["token_embd.weight"][np.asarray(ids)].copy()
    if "token_types.weight" in w:
        x = x + w["token_types.weight"][0]
    if a == "bert":
        x = x + w["position_embd.weight"][pos]
    x = layer_norm(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"], eps)
    for l in range(n_layer):
        p = f"blk.{l}."
        bias = lambda name: w.get(p + name, 0.0)
        if p + "attn_qkv.weight" in w:
            qkv = x @ w[p + "attn_qkv.weight"].T + bias("attn_qkv.bias")
            q, k, v = np.split(qkv, 3, axis=1)
        else:
            q = x @ w[p + "attn_q.weight"].T + bias("attn_q.bias")
            k = x @ w[p + "attn_k.weight"].T + bias("attn_k.bias")
            v = x @ w[p + "attn_v.weight"].T + bias("attn_v.bias")
        q, k, v = q.reshape(n, n_head, hd), k.reshape(n, n_head, hd), v.reshape(n, n_head, hd)
        if a == "nomic-bert":
            base = meta.get(f"{a}.rope.freq_base", 10000.0)
            q, k = rope(q, pos, base, hd, neox=True), rope(k, pos, base, hd, neox=True)
        o = np.zeros((n, n_head, hd), x.dtype)
        for h in range(n_head):
            s = q[:, h, :] @ k[:, h, :].T / np.sqrt(hd)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            o[:, h, :] = (e / e.sum(axis=1, keepdims=True)) @ v[:, h, :]
        attn = o.reshape(n, d) @ w[p + "attn_output.weight"].T + bias("attn_output.bias")
        x = layer_norm(x + attn, w[p + "attn_output_norm.weight"], w[p + "attn_output_norm.bias"], eps)
        if p + "ffn_gate.weight" in w:
            f = (silu(x @ w[p + "ffn_gate.weight"].T) * (x @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        else:
            f = gelu_tanh(x @ w[p + "ffn_up.weight"].T + bias("ffn_up.bias")) @ w[p + "ffn_down.weight"].T
            f = f + bias("ffn_down.bias")
        x = layer_norm(x + f, w[p + "layer_output_norm.weight"], w[p + "layer_output_norm.bias"], eps)
    return x

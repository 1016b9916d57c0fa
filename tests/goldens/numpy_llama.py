"""An f32 reference forward pass of a llama-architecture GGUF in numpy, with the `gguf` package's
dequantizers: no activation quantization, no f16 cache. Prints the logits' top entries per step.

usage: python numpy_llama.py MODEL.gguf N_GEN TOKEN_ID [TOKEN_ID ...]
Feeds the prompt ids, then decodes N_GEN tokens greedily; prints one JSON record with, per generated
step, the chosen id and the top-4 (id, logit).
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


def rope(x, pos, base, n_rot):
    # x: (heads, head_dim); normal ordering rotates (2i, 2i+1).
    i = np.arange(n_rot // 2)
    theta = pos * base ** (-2.0 * i / n_rot)
    c, s = np.cos(theta), np.sin(theta)
    a, b = x[:, 0:n_rot:2].copy(), x[:, 1:n_rot:2].copy()
    x[:, 0:n_rot:2] = a * c - b * s
    x[:, 1:n_rot:2] = a * s + b * c
    return x


def main():
    meta, w = load(sys.argv[1])
    n_gen = int(sys.argv[2])
    toks = [int(t) for t in sys.argv[3:]]
    prompt = list(toks)
    steps = []
    a = meta["general.architecture"]
    n_layer, n_head = meta[f"{a}.block_count"], meta[f"{a}.attention.head_count"]
    n_kv = meta[f"{a}.attention.head_count_kv"]
    eps, base = meta[f"{a}.attention.layer_norm_rms_epsilon"], meta.get(f"{a}.rope.freq_base", 10000.0)
    d = meta[f"{a}.embedding_length"]
    hd = d // n_head
    norm = lambda x, g: x / np.sqrt(np.mean(x * x) + eps) * g
    kc = [[] for _ in range(n_layer)]
    vc = [[] for _ in range(n_layer)]
    out_w = w.get("output.weight", w["token_embd.weight"])
    pos = 0
    while pos < len(toks):
        t = toks[pos]
        x = w["token_embd.weight"][t].copy()
        for l in range(n_layer):
            p = f"blk.{l}."
            h = norm(x, w[p + "attn_norm.weight"])
            q = rope((w[p + "attn_q.weight"] @ h).reshape(n_head, hd), pos, base, hd)
            k = rope((w[p + "attn_k.weight"] @ h).reshape(n_kv, hd), pos, base, hd)
            v = (w[p + "attn_v.weight"] @ h).reshape(n_kv, hd)
            kc[l].append(k)
            vc[l].append(v)
            K, V = np.stack(kc[l]), np.stack(vc[l])  # (n, n_kv, hd)
            o = np.zeros((n_head, hd), np.float32)
            for hh in range(n_head):
                g = hh // (n_head // n_kv)
                s = K[:, g, :] @ q[hh] / np.sqrt(hd)
                e = np.exp(s - s.max())
                o[hh] = (e / e.sum()) @ V[:, g, :]
            x = x + w[p + "attn_output.weight"] @ o.reshape(-1)
            h = norm(x, w[p + "ffn_norm.weight"])
            gt, up = w[p + "ffn_gate.weight"] @ h, w[p + "ffn_up.weight"] @ h
            x = x + w[p + "ffn_down.weight"] @ (gt / (1 + np.exp(-gt)) * up)
        logits = out_w @ norm(x, w["output_norm.weight"])
        pos += 1
        if pos == len(toks) and len(steps) < n_gen:
            top = np.argsort(-logits)[:4]
            steps.append({"id": int(top[0]), "top": [[int(i), round(float(logits[i]), 4)] for i in top]})
            if len(steps) < n_gen:
                toks.append(int(top[0]))
    print(json.dumps({"prompt_ids": prompt, "steps": steps}))


if __name__ == "__main__":
    main()

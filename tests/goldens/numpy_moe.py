"""A float64 reference forward pass of the mixture-of-experts Qwen files in numpy, over the `gguf`
package's dequantized weights (no activation quantization, no f16 cache): `qwen3moe` (Qwen3-30B-A3B:
numpy_dense.py's qwen3 block) and `qwen35moe` (Qwen3.5-35B-A3B: numpy_qwen35.py's hybrid block), each
with the feed-forward sublayer below in place of the dense one, and `gpt-oss` (numpy_gpt_oss.py's block
and its experts, with this Router recording). Written from llama.cpp's graphs (src/models/qwen3moe.cpp,
qwen35moe.cpp, openai-moe.cpp, llama-graph.cpp build_moe_ffn), not from Wick's kernels.

usage: python numpy_moe.py MODEL.gguf N_GEN TOKEN_ID [TOKEN_ID ...]
Feeds the prompt ids, then decodes N_GEN tokens greedily; prints one JSON record with, per generated
step, the chosen id, the top-1/top-2 gap and the top-4 (id, logit).

As a module (the interface of numpy_dense.py and numpy_qwen35.py): `load(path)` gives (meta, weights),
`forward(meta, w, ids)` the logits (len(ids), n_vocab) of every position, teacher-forced, and
`greedy(meta, w, prompt, n_gen)` the greedy steps. `Router` records the routing margins and can reverse
one routing's k-th choice (`flip`), to see what a near tie decided the other way would do.

The feed-forward sublayer (A = the architecture; u: the sublayer's normed input, ffn_norm in qwen3moe,
post_attention_norm in qwen35moe):
- Router: r = ffn_gate_inp u (numpy shape (n_expert, n_embd), A.expert_count rows); p = softmax(r) over
  all experts; the k = A.expert_used_count experts of largest p; their weights p_e / max(sum of the k
  p_e, 6.103515625e-5) (llama.cpp's norm_w, on for both architectures), times expert_weights_scale when
  that is not 0 or 1. llama.cpp reads no expert_weights_scale for qwen3moe or qwen35moe (its hparam
  stays 0), so `scale` is 0 here and the key is ignored if a file has it.
- Each chosen expert e: ffn_down_exps[e] (silu(ffn_gate_exps[e] u) * ffn_up_exps[e] u); numpy shapes
  (n_expert, n_ff_exp, n_embd) for gate and up and (n_expert, n_embd, n_ff_exp) for down (ggml ne
  {n_embd, n_ff_exp, n_expert} and {n_ff_exp, n_embd, n_expert}); n_ff_exp = A.expert_feed_forward_length
  (one value, or an array with one per layer: llama.cpp sizes every layer's tensors by layer 0's).
  Out = sum over the chosen e of weight_e * expert_e(u).
- qwen35moe adds the shared expert: sigmoid(ffn_gate_inp_shexp . u) * ffn_down_shexp (silu(ffn_gate_shexp
  u) * ffn_up_shexp u), width A.expert_shared_feed_forward_length; ffn_gate_inp_shexp is HF's
  Linear(hidden, 1) weight: ggml ne {n_embd, 1} as the converter writes it (numpy (1, n_embd)), which
  llama.cpp loads as {n_embd}.
- gpt-oss (numpy_gpt_oss.py's block; its docstring has the math): router logits r = ffn_gate_inp u +
  ffn_gate_inp.bias; the k experts of largest r; weights softmax over the k chosen logits; experts with
  biases and the clamped SwiGLU (numpy_gpt_oss.experts). The margins below are computed the same way
  (p = softmax of r over all experts, which orders the experts as r does: (p_k - p_k+1) / p_k =
  1 - exp(-(r_k - r_k+1))); a flip's weights are the softmax over the logits of the experts it uses.
"""
import json
import sys

import numpy as np

import numpy_dense
import numpy_gpt_oss
import numpy_qwen35

WEIGHT_SUM_MIN = 6.103515625e-5  # llama.cpp clamps the chosen probabilities' sum below at this (f16's min)


def load(path):
    return numpy_dense.load(path)


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class Router:
    """The mixture-of-experts sublayer of a file, callable as ffn(prefix, u) on normed inputs u
    (positions, n_embd) of the block whose tensor names start with prefix. Counts the positions it has
    routed per block (a forward over a sequence routes positions 0, 1, ...) and records, for each, the
    margin of the top-k choice in `routings`: (prefix, position, (p_k - p_k+1) / p_k, r_k - r_k+1, the
    k-th chosen expert's weight), p the probabilities and r the router logits in decreasing order.
    `flip` = (prefix, position) swaps that routing's k-th expert for the (k+1)-th, as an engine whose
    rounding reverses a near tie would (weights from the probabilities of the experts it then uses)."""

    def __init__(self, meta, w, flip=None):
        a = meta["general.architecture"]
        self.w = w
        self.n_expert = int(meta[f"{a}.expert_count"])
        self.n_used = int(meta[f"{a}.expert_used_count"])
        self.scale = 0.0  # llama.cpp's hparams.expert_weights_scale: never read for qwen3moe/qwen35moe/gpt-oss
        self.shared = a == "qwen35moe"
        self.gpt_oss = a == "gpt-oss"
        self.flip = flip
        self.seen = {}
        self.routings = []

    def __call__(self, p, u):
        w, k, n = self.w, self.n_used, len(u)
        start = self.seen.get(p, 0)
        self.seen[p] = start + n
        if self.gpt_oss:
            r = numpy_gpt_oss.router_logits(w, p, u)
        else:
            r = u @ w[p + "ffn_gate_inp.weight"].T  # (n, n_expert)
        e = np.exp(r - r.max(axis=1, keepdims=True))
        probs = e / e.sum(axis=1, keepdims=True)
        order = numpy_gpt_oss.expert_order(r) if self.gpt_oss else np.argsort(-probs, axis=1, kind="stable")
        chosen = order[:, :k].copy()
        if self.flip is not None and self.flip[0] == p and start <= self.flip[1] < start + n:
            chosen[self.flip[1] - start, k - 1] = order[self.flip[1] - start, k]
        if self.gpt_oss:
            weights = numpy_gpt_oss.chosen_weights(r, chosen)
        else:
            weights = np.take_along_axis(probs, chosen, axis=1)
            weights = weights / np.maximum(weights.sum(axis=1, keepdims=True), WEIGHT_SUM_MIN)
        if self.scale != 0.0 and self.scale != 1.0:
            weights = weights * self.scale
        pk = np.take_along_axis(probs, order[:, k - 1:k + 1], axis=1)
        rk = np.take_along_axis(r, order[:, k - 1:k + 1], axis=1)
        for i in range(n):
            self.routings.append((p, start + i, float((pk[i, 0] - pk[i, 1]) / pk[i, 0]),
                                  float(rk[i, 0] - rk[i, 1]), float(weights[i, k - 1])))
        if self.gpt_oss:
            return numpy_gpt_oss.experts(w, p, u, chosen, weights)
        gate, up, down = w[p + "ffn_gate_exps.weight"], w[p + "ffn_up_exps.weight"], w[p + "ffn_down_exps.weight"]
        out = np.zeros_like(u)
        for x in range(self.n_expert):
            rows, slot = np.nonzero(chosen == x)
            if len(rows):
                h = u[rows]
                y = (silu(h @ gate[x].T) * (h @ up[x].T)) @ down[x].T
                out[rows] += weights[rows, slot][:, None] * y
        if self.shared:
            g = sigmoid(u @ w[p + "ffn_gate_inp_shexp.weight"].reshape(-1))
            y = (silu(u @ w[p + "ffn_gate_shexp.weight"].T) * (u @ w[p + "ffn_up_shexp.weight"].T)) @ w[p + "ffn_down_shexp.weight"].T
            out = out + g[:, None] * y
        return out

    def closest(self):
        """The routing with the smallest relative margin: (prefix, position, margin, logit margin, weight)."""
        return min(self.routings, key=lambda x: x[2])


class Qwen35Moe(numpy_qwen35.Model):
    """numpy_qwen35's token-by-token model with the mixture of experts as its feed-forward sublayer."""

    def __init__(self, meta, w, router=None):
        super().__init__(meta, w)
        self.router = router or Router(meta, self.w)
        self.router.w = self.w

    def ffn(self, l, h):
        return self.router(f"blk.{l}.", h[None, :])[0]


def f64(w):
    return {k: v.astype(np.float64) for k, v in w.items()}


class Qwen3Moe:
    """qwen3moe token by token, the interface of Qwen35Moe: numpy_dense has no cache, so each step runs
    the whole sequence again (the earlier positions give the same numbers, and the router records them
    again)."""

    def __init__(self, meta, w, router=None):
        self.meta, self.w = meta, f64(w)
        self.router = router or Router(meta, self.w)
        self.router.w = self.w
        self.ids = []

    def step(self, token):
        self.ids.append(int(token))
        self.router.seen = {}
        return numpy_dense.forward(self.meta, self.w, self.ids, ffn=self.router)[-1]


def model(meta, w, router=None):
    """A token-by-token model of the file: `.step(token)` feeds one token and returns the next's logits."""
    a = meta["general.architecture"]
    if a == "qwen3moe":
        return Qwen3Moe(meta, w, router)
    if a == "qwen35moe":
        return Qwen35Moe(meta, w, router)
    if a == "gpt-oss":
        return numpy_gpt_oss.Model(meta, w, router or Router(meta, w))
    raise ValueError(f"numpy_moe: architecture {a}")


def forward(meta, w, ids, n_ctx=None, router=None):
    """The logits (len(ids), n_vocab) of every position of `ids`, each seeing the ones before it.
    `router`: a Router to record the routing margins in (one is made if not given)."""
    a = meta["general.architecture"]
    if a == "qwen3moe":
        w = f64(w)
        router = router or Router(meta, w)
        router.w = w
        return numpy_dense.forward(meta, w, ids, n_ctx, ffn=router)
    if a == "gpt-oss":
        return model(meta, w, router).run(ids)  # one pass over a kv cache (numpy_gpt_oss.Model)
    m = model(meta, w, router)
    return np.array([m.step(int(t)) for t in ids])


def greedy(meta, w, prompt, n_gen, top_k=4, router=None):
    """Greedy continuation of `prompt`: per step the chosen id, the top-1/top-2 gap and the top k."""
    m = model(meta, w, router)
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

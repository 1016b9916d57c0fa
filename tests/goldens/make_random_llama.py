#!/usr/bin/env python3
"""A tiny random-weight llama whose every matrix dimension is a multiple of 256, quantized by llama.cpp to
K-quant mixes, with llama.cpp's logits as goldens (checked by tests/random_llama.rs).

Why: the real test model (SmolLM2-135M, width 576) has rows that are not a multiple of 256, so
quantizers fall back from the K types to Q5_0/Q8_0 on most of its tensors and the Q4_K, Q5_K and Q6_K
matvec kernels barely run end to end. Here every matrix role (token_embd, attn_q/k/v/output,
ffn_gate/up/down, output) is Q4_K in one file, Q5_K in another and Q6_K in a third, and two of the
files mix types within the model (llama.cpp's _M recipes put Q6_K on the last layer's attn_v and
ffn_down).

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf:

    /work/venv-llama/bin/python tests/goldens/make_random_llama.py

Deterministic given the seed and the llama.cpp version (llama.cpp's quantizer is deterministic).
Writes:
- tests/data/random-llama-q4_k_m.gguf  llama.cpp Q4_K_M, output.weight forced to Q4_K
- tests/data/random-llama-q5_k_m.gguf  llama.cpp Q5_K_M, output.weight forced to Q5_K
- tests/data/random-llama-q6_k.gguf    llama.cpp Q6_K
  (the F16 base they are quantized from is written to a temporary directory and not kept: 3.7 MB)
- tests/goldens/random-llama.json: per file, its sha256, each tensor's type, and from llama.cpp (CPU,
  n_threads=2, logits_all): the full logits at every position of a fixed 24-token sequence fed
  teacher-forced, and a 12-token greedy continuation of its first 8 ids with each step's chosen id,
  the top-1/top-2 gap and the top 4 (id, logit); the same teacher-forced logits from an f32 numpy forward
  pass over the gguf package's dequantized weights (llama.cpp rounds activations to 8 bits before
  K-quant dot products, which puts its logits up to ~0.7 from exact math on this model; the f32
  reference allows a tight check); and llama.cpp's tokenization of a short text.

Model: n_embd 256, n_head 4, n_head_kv 2 (head_dim 64, GQA), n_ff 768, 2 layers, vocab 512, context
256, rope base 10000, rms eps 1e-5, untied output. Matrices are normal with std 1/sqrt(fan_in)
(attn_q and attn_k 2/sqrt(fan_in) for less uniform attention; output 4/sqrt(fan_in), so top-1/top-2 logit gaps are mostly well above llama.cpp's activation
quantization noise), norm gains uniform in [0.6, 1.4], token embeddings standard normal. The
vocabulary is a valid gpt2 byte-level BPE: the 256 byte tokens (GPT-2's byte-to-unicode mapping, id =
byte value), 255 merge results, and <|endoftext|> (id 511, BOS and EOS).
"""
import hashlib
import json
import os
import sys
import tempfile

import gguf
import llama_cpp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_dense  # noqa: E402  (its loader and rope)
from random_vocab import vocabulary  # noqa: E402

SEED = 20240611
N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_LAYER, N_VOCAB, N_CTX = 256, 4, 2, 768, 2, 512, 256
ROPE_BASE, RMS_EPS = 10000.0, 1e-5
N_TEACHER, N_PROMPT, N_GEN, TOP_K = 24, 8, 12, 4
TOKENIZE_TEXT = " the cat sat on a mat, then 42 dogs ran away!\n"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
GOLDEN = os.path.join(ROOT, "tests", "goldens", "random-llama.json")

# (file suffix, llama ftype, output.weight type or None for llama.cpp's choice)
FILES = [
    ("q4_k_m", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M, gguf.GGMLQuantizationType.Q4_K),
    ("q5_k_m", llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_M, gguf.GGMLQuantizationType.Q5_K),
    ("q6_k", llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K, None),
]
ROLES = ["token_embd", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "output"]
K_TYPES = ["Q4_K", "Q5_K", "Q6_K"]


def weights(rng):
    def mat(rows, cols, scale=1.0):
        return (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float16)

    def norm():
        return rng.uniform(0.6, 1.4, N_EMBD).astype(np.float32)

    hd = N_EMBD // N_HEAD
    w = {"token_embd.weight": rng.standard_normal((N_VOCAB, N_EMBD)).astype(np.float16)}
    for l in range(N_LAYER):
        p = f"blk.{l}."
        w[p + "attn_norm.weight"] = norm()
        w[p + "attn_q.weight"] = mat(N_HEAD * hd, N_EMBD, 2.0)  # sharper attention than uniform
        w[p + "attn_k.weight"] = mat(N_HEAD_KV * hd, N_EMBD, 2.0)
        w[p + "attn_v.weight"] = mat(N_HEAD_KV * hd, N_EMBD)
        w[p + "attn_output.weight"] = mat(N_EMBD, N_HEAD * hd)
        w[p + "ffn_norm.weight"] = norm()
        w[p + "ffn_gate.weight"] = mat(N_FF, N_EMBD)
        w[p + "ffn_up.weight"] = mat(N_FF, N_EMBD)
        w[p + "ffn_down.weight"] = mat(N_EMBD, N_FF)
    w["output_norm.weight"] = norm()
    w["output.weight"] = mat(N_VOCAB, N_EMBD, 4.0)
    return w


def write_f16(path, rng):
    tokens, types, merges = vocabulary(rng)
    w = weights(rng)
    wr = gguf.GGUFWriter(path, "llama")
    wr.add_name("random-llama")
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_context_length(N_CTX)
    wr.add_embedding_length(N_EMBD)
    wr.add_block_count(N_LAYER)
    wr.add_feed_forward_length(N_FF)
    wr.add_head_count(N_HEAD)
    wr.add_head_count_kv(N_HEAD_KV)
    wr.add_rope_dimension_count(N_EMBD // N_HEAD)
    wr.add_rope_freq_base(ROPE_BASE)
    wr.add_layer_norm_rms_eps(RMS_EPS)
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
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def quantize(src, dst, ftype, output_type):
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 2
    if output_type is not None:
        params.output_tensor_type = int(output_type)
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), params)
    assert rc == 0, f"llama_model_quantize({dst}) returned {rc}"


def tensor_types(path):
    return {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors}


def role(name):
    return name.split(".")[-2]


def top(logits, k):
    idx = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), round(float(logits[i]), 4)] for i in idx]


def f32_forward(path, ids):
    """Teacher-forced logits of an f32 forward pass (numpy, float64 accumulation) over the `gguf` package's
    dequantized weights: the math Wick's kernels do, without llama.cpp's 8-bit activation rounding."""
    meta, w = numpy_dense.load(path)
    n_layer, n_head = meta["llama.block_count"], meta["llama.attention.head_count"]
    n_kv, eps = meta["llama.attention.head_count_kv"], meta["llama.attention.layer_norm_rms_epsilon"]
    base, hd = meta["llama.rope.freq_base"], meta["llama.embedding_length"] // n_head
    w = {k: v.astype(np.float64) for k, v in w.items()}
    norm = lambda x, g: x / np.sqrt(np.mean(x * x) + eps) * g
    kc, vc = [[] for _ in range(n_layer)], [[] for _ in range(n_layer)]
    out = []
    for pos, t in enumerate(ids):
        x = w["token_embd.weight"][t].copy()
        for l in range(n_layer):
            p = f"blk.{l}."
            h = norm(x, w[p + "attn_norm.weight"])
            q = numpy_dense.rope((w[p + "attn_q.weight"] @ h).reshape(n_head, hd), pos, base, hd)
            kc[l].append(numpy_dense.rope((w[p + "attn_k.weight"] @ h).reshape(n_kv, hd), pos, base, hd))
            vc[l].append((w[p + "attn_v.weight"] @ h).reshape(n_kv, hd))
            K, V = np.stack(kc[l]), np.stack(vc[l])
            o = np.zeros((n_head, hd))
            for hh in range(n_head):
                g = hh // (n_head // n_kv)
                s = K[:, g, :] @ q[hh] / np.sqrt(hd)
                e = np.exp(s - s.max())
                o[hh] = (e / e.sum()) @ V[:, g, :]
            x = x + w[p + "attn_output.weight"] @ o.reshape(-1)
            h = norm(x, w[p + "ffn_norm.weight"])
            gt, up = w[p + "ffn_gate.weight"] @ h, w[p + "ffn_up.weight"] @ h
            x = x + w[p + "ffn_down.weight"] @ (gt / (1 + np.exp(-gt)) * up)
        out.append(w["output.weight"] @ norm(x, w["output_norm.weight"]))
    return np.array(out)


def goldens(path, teacher_ids, n_ctx=N_CTX):
    """llama.cpp's teacher-forced logits of `teacher_ids`, its greedy continuation of their first N_PROMPT,
    and its tokenization of TOKENIZE_TEXT, at a context of `n_ctx`."""
    llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, logits_all=True, n_threads=2, seed=0, verbose=False)
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
        best = top(logits, TOP_K)
        steps.append({"id": best[0][0], "gap": round(best[0][1] - best[1][1], 4), "top": best})
        llm.eval([best[0][0]])
    del llm
    return teacher, {"prompt_ids": prompt, "steps": steps}, {"text": TOKENIZE_TEXT, "ids": tokenized}


def main():
    rng = np.random.default_rng(SEED)
    os.makedirs(DATA, exist_ok=True)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "random-llama-f16.gguf")
        write_f16(base, rng)
        # BOS, then random ids below it.
        teacher_ids = [N_VOCAB - 1] + [int(x) for x in rng.integers(0, N_VOCAB - 1, N_TEACHER - 1)]
        for suffix, ftype, out_type in FILES:
            dst = os.path.join(DATA, f"random-llama-{suffix}.gguf")
            quantize(base, dst, ftype, out_type)
            with open(dst, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            types = tensor_types(dst)
            teacher, greedy, tokenized = goldens(dst, teacher_ids)
            ref = f32_forward(dst, teacher_ids)
            err = np.abs(ref - np.array(teacher))
            records.append({
                "file": f"tests/data/random-llama-{suffix}.gguf",
                "sha256": sha,
                "bytes": os.path.getsize(dst),
                "tensor_types": types,
                "teacher_ids": teacher_ids,
                "teacher_logits": teacher,
                "f32_logits": [[round(float(x), 4) for x in row] for row in ref],
                "greedy": greedy,
                "tokenize": tokenized,
            })
            gaps = [s["gap"] for s in greedy["steps"]]
            print(f"{suffix}: {os.path.getsize(dst)} bytes, greedy {[s['id'] for s in greedy['steps']]}, gaps {gaps}")
            print("  types:", sorted(set(types.values())))
            print(f"  llama.cpp vs f32: max abs {err.max():.4f}, mean {err.mean():.5f}; logit std {ref.std(1).mean():.3f}")

    # Every matrix role must carry each of Q4_K, Q5_K and Q6_K in some file.
    for r in ROLES:
        have = {t for rec in records for n, t in rec["tensor_types"].items() if role(n) == r}
        missing = [k for k in K_TYPES if k not in have]
        assert not missing, f"role {r} lacks {missing} (has {sorted(have)})"
        print(f"{r:12s} {sorted(have)}")

    out = {
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx={N_CTX}, logits_all, argmax",
        "seed": SEED,
        "n_vocab": N_VOCAB,
        "records": records,
    }
    with open(GOLDEN, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {GOLDEN}: {os.path.getsize(GOLDEN)} bytes")


if __name__ == "__main__":
    sys.exit(main())

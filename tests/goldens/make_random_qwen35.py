#!/usr/bin/env python3
"""Tiny random-weight Qwen3.5 models (GGUF architecture `qwen35`: Gated DeltaNet linear-attention layers
beside gated full-attention layers) in the exact layout of llama.cpp's converter (conversion/qwen.py,
Qwen3_5TextModel), with llama.cpp's logits and numpy_qwen35.py's as goldens.

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf (gguf-py 0.19 from
llama.cpp's tree: PyPI's older gguf lacks add_recurrent_layers):

    /work/venv-llama/bin/python tests/goldens/make_random_qwen35.py

Deterministic given the seed and the llama.cpp version (llama.cpp's quantizer is deterministic).
Writes tests/data/random-qwen35-*.gguf and tests/goldens/random-qwen35.json, whose records have the
fields tests/common/random_model.rs reads (make_random_llama.py says what each holds: file, sha256,
bytes, tensor_types, teacher_ids (24), teacher_logits (llama.cpp), f32_logits (numpy_qwen35, float64),
greedy (llama.cpp, 12 steps from the first 8 teacher ids), tokenize) plus:
- greedy_long: llama.cpp's greedy continuation of 300 tokens from the same 8 ids (steps {id, gap, top 4});
- f32_greedy_long: numpy_qwen35's greedy continuation of 300 tokens from the same prompt (same format);
- greedy_long_parting: the first step where the two pick different ids (null if never), with both
  gaps there;
- config: every metadata key/value written (tokenizer excepted);
- llama_vs_f32: max and mean |llama.cpp - numpy| over the teacher logits.
llama.cpp goldens: CPU, n_threads=2, n_ctx 512, logits_all, its default f16 KV cache. The printout also
compares numpy with llama.cpp on an F32 copy of each base (temporary, F32 KV cache), the tight check:
the 24 teacher positions, a 200-token prefill and a 300-step greedy run compared at every step.

Two random bases, each written as the converter writes an F16 model (matrices F16; norms, ssm_a,
ssm_dt.bias and ssm_conv1d F32), then quantized by llama.cpp (llama_model_quantize):
- big (the shapes of the request; only its Q4_K_M is kept, the F16 base would be 8 MB):
  n_embd 256, 6 blocks, full_attention_interval 3 and NO attention.recurrent_layers key (so layers 2 and
  5 are full attention by the interval rule), n_head 4, n_head_kv 2, head_dim 64 (attn_q 512 rows),
  rope.dimension_count 16, sections [3, 3, 2, 0] (every pair rotates by the text position), rope base
  1e7 (Qwen3.5's rope_theta), n_ff 512; linear: state 64, 2 k heads (group_count), 4 v heads
  (time_step_rank), inner 256, conv kernel 4; untied output; context_length 1024; rms eps 1e-6.
  -> random-qwen35-q4_k_m.gguf: llama.cpp Q4_K_M (Q4_K and Q6_K matrices).
- small: n_embd 128, 4 blocks with attention.recurrent_layers [true, false, true, false] beside
  full_attention_interval 4 (the array wins: the interval alone would make only block 3 full
  attention), n_head 4, n_head_kv 2, head_dim 64 (q wider than the model), rope.dimension_count 16,
  sections [3, 3, 1, 0] (sum 7 < 8 pairs: pair 5 falls to the 4th section and stays unrotated, pair 7
  wraps to sector 0), rope base 1e7, n_ff 256; linear: state 64, 2 k heads, 6 v heads (3 per k head:
  tiled v-head -> k-head mapping h % 2 differs from grouped h // 3), inner 384, conv kernel 4; tied
  output (no output.weight); context_length 1024; rms eps 1e-6.
  -> random-qwen35-f16.gguf (the base itself) and random-qwen35-q8_0.gguf (llama.cpp Q8_0).

Weights: matrices normal with std 1/sqrt(fan_in) (ssm_out, attn_output and ffn_down 0.7/sqrt(fan_in);
the untied output 4/sqrt(fan_in); a tied table 1/sqrt(n_embd)), token embeddings of the untied file
standard normal; attn_norm/post_attention_norm/output_norm/ssm_norm gains uniform [0.6, 1.4] (the tied
file's output_norm [2.4, 5.6]: with a small table and large final gains the residual stream is mostly
the layers' output, and greedy does not lock onto repeating one token as a tied random head does),
attn_q_norm/attn_k_norm uniform [0.8, 1.8] (sharper attention after the per-head RMS norm);
ssm_a = -exp(A_log) with exp(A_log) uniform [0.2, 1.0]; ssm_dt.bias uniform [-2, 0]; ssm_alpha std
0.7/sqrt(fan_in); ssm_conv1d normal std 0.5. Over the teacher ids the decays exp(g) then spread over
0.5..0.98 and beta = sigmoid(...) over 0.14..0.86 (5th-95th percentiles, printed).

llama.cpp's logits on the quantized files sit up to ~1.4 from exact math (mean 0.13-0.18): it rounds
activations to 8 bits (Q8_0 / Q8_K blocks) before quantized dot products, and 4-6 layers amplify that
(numpy with the same rounding simulated moves by as much). The F16 file: 0.04; F32 copies: 3e-5.

Every file carries Qwen3.5-4B's chat template (tests/goldens/chat_template/qwen3.5.jinja), which
renders over the byte-level vocabulary as plain text.

Vocabulary: random_vocab.vocabulary's 512-token byte-level BPE, its last three merges replaced by merges
over combining-mark bytes ("Ì ģ" = U+0301's bytes, "e Ìģ" = e + U+0301, and "¤ à" = the bytes between
त and a following Devanagari sign), so that the qwen35 pre-tokenizer's [\\p{L}\\p{M}]+ (which keeps a
word and its marks in one piece) gives different ids from qwen2's \\p{L}+ on TOKENIZE_TEXT (checked).
tokenizer.ggml.pre "qwen35", no BOS added, <|endoftext|> (511) is BOS and EOS.
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
import numpy_qwen35  # noqa: E402
from random_vocab import N_VOCAB, vocabulary  # noqa: E402

SEED = 20260311
N_TEACHER, N_PROMPT, N_GEN, N_LONG, TOP_K = 24, 8, 12, 300, 4
N_CTX = 512  # llama.cpp's context here: the prompt and 300 generated tokens fit
N_CTX_TRAIN = 1024
RMS_EPS = 1e-6
ROPE_BASE = 1e7
# Projections back into the residual stream (ssm_out, attn_output, ffn_down) are scaled down to limit how
# far llama.cpp's 8-bit activation rounding moves its logits (1.0 put it at 1.2-1.6 on the quantized
# files); resetting the recurrent states each step still changes the top-1 at about half the positions.
OUT_SCALE = 0.7
TOKENIZE_TEXT = "cafe\u0301 na\u0308ive \u0301ok नमस्ते दुनिया, the cat's 42 e\u0301\u0301!\n"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
GOLDEN = os.path.join(ROOT, "tests", "goldens", "random-qwen35.json")

BIG = dict(n_embd=256, n_layer=6, interval=3, recurrent=None, n_head=4, n_kv=2, head_dim=64, n_rot=16,
           sections=[3, 3, 2, 0], n_ff=512, state=64, k_heads=2, v_heads=4, conv=4, tied=False)
SMALL = dict(n_embd=128, n_layer=4, interval=4, recurrent=[True, False, True, False], n_head=4, n_kv=2,
             head_dim=64, n_rot=16, sections=[3, 3, 1, 0], n_ff=256, state=64, k_heads=2, v_heads=6,
             conv=4, tied=True)


def qwen35_vocabulary(rng):
    tokens, types, merges = vocabulary(rng)
    # The last merges' results are used by no other merge: replace them.
    extra = [("Ì", "ģ"), ("e", "Ìģ"), ("¤", "à")]
    tokens = tokens[:N_VOCAB - 1 - len(extra)]
    merges = merges[:len(merges) - len(extra)]
    for a, b in extra:
        assert a + b not in tokens
        merges.append(f"{a} {b}")
        tokens.append(a + b)
    tokens.append("<|endoftext|>")
    assert len(tokens) == N_VOCAB and len(set(tokens)) == N_VOCAB
    return tokens, types, merges


def weights(rng, c):
    """The tensors, in float64, named and shaped (numpy: rows = ggml ne[1]) as the converter writes them."""
    d, hd, S = c["n_embd"], c["head_dim"], c["state"]
    Hk, Hv = c["k_heads"], c["v_heads"]
    mat = lambda rows, cols, scale=1.0: rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)
    gain = lambda n, lo=0.6, hi=1.4: rng.uniform(lo, hi, n)
    kinds = c["recurrent"] or [(i + 1) % c["interval"] != 0 for i in range(c["n_layer"])]
    w = {}
    if c["tied"]:
        w["token_embd.weight"] = rng.standard_normal((N_VOCAB, d)) / np.sqrt(d)
    else:
        w["token_embd.weight"] = rng.standard_normal((N_VOCAB, d))
    for l, linear in enumerate(kinds):
        p = f"blk.{l}."
        w[p + "attn_norm.weight"] = gain(d)
        if linear:
            conv_dim = 2 * S * Hk + S * Hv
            w[p + "attn_qkv.weight"] = mat(conv_dim, d)
            w[p + "attn_gate.weight"] = mat(S * Hv, d)
            w[p + "ssm_conv1d.weight"] = rng.standard_normal((conv_dim, c["conv"])) * 0.5
            w[p + "ssm_dt.bias"] = rng.uniform(-2.0, 0.0, Hv)
            w[p + "ssm_a"] = -rng.uniform(0.2, 1.0, Hv)
            w[p + "ssm_beta.weight"] = mat(Hv, d)
            w[p + "ssm_alpha.weight"] = mat(Hv, d, 0.7)
            w[p + "ssm_norm.weight"] = gain(S)
            w[p + "ssm_out.weight"] = mat(d, S * Hv, OUT_SCALE)
        else:
            w[p + "attn_q.weight"] = mat(2 * hd * c["n_head"], d)
            w[p + "attn_k.weight"] = mat(hd * c["n_kv"], d)
            w[p + "attn_v.weight"] = mat(hd * c["n_kv"], d)
            w[p + "attn_output.weight"] = mat(d, hd * c["n_head"], OUT_SCALE)
            w[p + "attn_q_norm.weight"] = gain(hd, 0.8, 1.8)
            w[p + "attn_k_norm.weight"] = gain(hd, 0.8, 1.8)
        w[p + "post_attention_norm.weight"] = gain(d)
        w[p + "ffn_gate.weight"] = mat(c["n_ff"], d)
        w[p + "ffn_up.weight"] = mat(c["n_ff"], d)
        w[p + "ffn_down.weight"] = mat(d, c["n_ff"], OUT_SCALE)
    # A tied head: a small table (so that the residual stream is mostly the layers' output and greedy does
    # not fall into repeating one token) and output_norm gains 4 times larger (logits spread as untied).
    w["output_norm.weight"] = gain(d, 2.4, 5.6) if c["tied"] else gain(d)
    if not c["tied"]:
        w["output.weight"] = mat(N_VOCAB, d, 4.0)
    return w


def f32_by_converter(name, t):
    """The converter keeps 1-D tensors, norms, ssm_conv1d and names not ending in .weight in F32."""
    return t.ndim <= 1 or name.endswith("_norm.weight") or "ssm_conv1d" in name or not name.endswith(".weight")


def write(path, c, w, vocab, all_f32=False, pre="qwen35"):
    tokens, types, merges = vocab
    wr = gguf.GGUFWriter(path, "qwen35")
    config = {}

    def put(method, key, value):
        getattr(wr, method)(value)
        config[key.format(arch="qwen35")] = value

    put("add_name", "general.name", "tiny-random")
    put("add_block_count", "{arch}.block_count", c["n_layer"])
    put("add_context_length", "{arch}.context_length", N_CTX_TRAIN)
    put("add_embedding_length", "{arch}.embedding_length", c["n_embd"])
    put("add_feed_forward_length", "{arch}.feed_forward_length", c["n_ff"])
    put("add_head_count", "{arch}.attention.head_count", c["n_head"])
    put("add_head_count_kv", "{arch}.attention.head_count_kv", c["n_kv"])
    put("add_rope_dimension_sections", "{arch}.rope.dimension_sections", c["sections"])
    put("add_rope_freq_base", "{arch}.rope.freq_base", ROPE_BASE)
    put("add_layer_norm_rms_eps", "{arch}.attention.layer_norm_rms_epsilon", RMS_EPS)
    put("add_key_length", "{arch}.attention.key_length", c["head_dim"])
    put("add_value_length", "{arch}.attention.value_length", c["head_dim"])
    ftype = gguf.LlamaFileType.ALL_F32 if all_f32 else gguf.LlamaFileType.MOSTLY_F16
    put("add_file_type", "general.file_type", int(ftype))
    put("add_ssm_conv_kernel", "{arch}.ssm.conv_kernel", c["conv"])
    put("add_ssm_state_size", "{arch}.ssm.state_size", c["state"])
    put("add_ssm_group_count", "{arch}.ssm.group_count", c["k_heads"])
    put("add_ssm_time_step_rank", "{arch}.ssm.time_step_rank", c["v_heads"])
    put("add_ssm_inner_size", "{arch}.ssm.inner_size", c["state"] * c["v_heads"])
    if c["recurrent"] is not None:
        put("add_recurrent_layers", "{arch}.attention.recurrent_layers", c["recurrent"])
    put("add_full_attention_interval", "{arch}.full_attention_interval", c["interval"])
    put("add_rope_dimension_count", "{arch}.rope.dimension_count", c["n_rot"])
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre(pre)
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(N_VOCAB - 1)
    wr.add_eos_token_id(N_VOCAB - 1)
    wr.add_add_bos_token(False)
    # Qwen3.5's own template, so that chat runs on these files (the browser tests' package replies).
    with open(os.path.join(ROOT, "tests", "goldens", "chat_template", "qwen3.5.jinja")) as f:
        wr.add_chat_template(f.read())
    for name, t in w.items():
        if all_f32 or f32_by_converter(name, t):
            wr.add_tensor(name, t.astype(np.float32))
        else:
            wr.add_tensor(name, t.astype(np.float16))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return config


def quantize(src, dst, ftype):
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), params)
    assert rc == 0, f"llama_model_quantize({dst}) returned {rc}"


def tensor_types(path):
    return {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors}


def top(logits, k=TOP_K):
    idx = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), round(float(logits[i]), 4)] for i in idx]


def llama(path, f32_cache=False):
    kw = dict(type_k=0, type_v=0) if f32_cache else {}  # GGML_TYPE_F32
    llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, logits_all=True, n_threads=2, seed=0, verbose=False, **kw)
    assert llm.n_vocab() == N_VOCAB
    return llm


def teacher_logits(llm, ids):
    llm.reset()
    llm.eval(ids)
    return np.array([np.asarray(llm.scores[i], dtype=np.float32) for i in range(len(ids))])


def goldens(path, teacher_ids):
    """llama.cpp's teacher-forced logits, its greedy continuation (N_LONG steps) of the first N_PROMPT
    teacher ids, and its tokenization of TOKENIZE_TEXT."""
    llm = llama(path)
    teacher = teacher_logits(llm, teacher_ids)
    tokenized = llm.tokenize(TOKENIZE_TEXT.encode(), add_bos=False, special=False)
    prompt = teacher_ids[:N_PROMPT]
    llm.reset()
    llm.eval(prompt)
    steps = []
    for i in range(N_LONG):
        logits = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        best = top(logits)
        steps.append({"id": best[0][0], "gap": round(best[0][1] - best[1][1], 4), "top": best})
        if i + 1 < N_LONG:
            llm.eval([best[0][0]])
    del llm
    return teacher, prompt, steps, {"text": TOKENIZE_TEXT, "ids": tokenized}


def gate_stats(path, ids):
    """Range of the decays exp(g) and of beta over the teacher ids, in the numpy reference."""
    meta, w = numpy_qwen35.load(path)
    m = numpy_qwen35.Model(meta, w)
    decays, betas = [], []
    orig = m.linear

    def spy(l, h):
        p = f"blk.{l}."
        g = numpy_qwen35.softplus(m.w[p + "ssm_alpha.weight"] @ h + m.w[p + "ssm_dt.bias"]) * m.w[p + "ssm_a"]
        decays.extend(np.exp(g))
        betas.extend(numpy_qwen35.sigmoid(m.w[p + "ssm_beta.weight"] @ h))
        return orig(l, h)

    m.linear = spy
    for t in ids:
        m.step(t)
    q = lambda v: f"{np.min(v):.2f}..{np.max(v):.2f} (5-95%: {np.percentile(v, 5):.2f}..{np.percentile(v, 95):.2f})"
    return f"decay {q(decays)}, beta {q(betas)}"


def check_f32(name, c, w, vocab, teacher_ids, tmp):
    """numpy vs llama.cpp on an all-F32 copy of the base with an F32 KV cache: the tight check."""
    path = os.path.join(tmp, f"{name}-f32.gguf")
    write(path, c, w, vocab, all_f32=True)
    llm = llama(path, f32_cache=True)
    meta, wt = numpy_qwen35.load(path)
    ll = teacher_logits(llm, teacher_ids)
    ref = numpy_qwen35.forward(meta, wt, teacher_ids)
    err = np.abs(ref - ll)
    print(f"{name} F32 copy, F32 KV cache: llama.cpp vs numpy max abs {err.max():.2e}, mean {err.mean():.2e}; "
          f"logit std {ref.std(1).mean():.3f}; {gate_stats(path, teacher_ids)}")
    # A 200-token prefill in one batch (llama.cpp's chunked delta net: 64-token chunks) ...
    ids = [N_VOCAB - 1] + [int(x) for x in np.random.default_rng(1).integers(0, N_VOCAB - 1, 199)]
    long_err = np.abs(teacher_logits(llm, ids) - numpy_qwen35.forward(meta, wt, ids)).max()
    # ... and N_LONG greedy steps one token at a time (its autoregressive path), compared at every step.
    llm.reset()
    llm.eval(teacher_ids[:N_PROMPT])
    m = numpy_qwen35.Model(meta, wt)
    for t in teacher_ids[:N_PROMPT]:
        lr = m.step(t)
    step_err, parted = 0.0, None
    for i in range(N_LONG):
        lc = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        step_err = max(step_err, np.abs(lc - lr).max())
        if int(np.argmax(lc)) != int(np.argmax(lr)):
            parted = i
            break
        llm.eval([int(np.argmax(lc))])
        lr = m.step(int(np.argmax(lc)))
    del llm
    print(f"  200-token prefill max abs {long_err:.2e}; {N_LONG}-step greedy max abs {step_err:.2e}, "
          f"{'never parts' if parted is None else f'parts at step {parted}'}")
    return err.max()


def record(path, rel, teacher_ids, config):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    teacher, prompt, steps, tokenized = goldens(path, teacher_ids)
    meta, w = numpy_qwen35.load(path)
    ref = numpy_qwen35.forward(meta, w, teacher_ids)
    ref_long = numpy_qwen35.greedy(meta, w, prompt, N_LONG)
    err = np.abs(ref - teacher)
    parting = next((i for i in range(N_LONG) if steps[i]["id"] != ref_long[i]["id"]), None)
    part = None if parting is None else {
        "step": parting, "llama_cpp_gap": steps[parting]["gap"], "f32_gap": ref_long[parting]["gap"]}
    gaps = [s["gap"] for s in steps[:N_GEN]]
    print(f"{rel}: {os.path.getsize(path)} bytes; llama.cpp vs f32 max abs {err.max():.4f}, mean {err.mean():.5f}; "
          f"greedy gaps {gaps}")
    print(f"  types: {sorted(set(tensor_types(path).values()))}; long greedy parts at {part}; "
          f"smallest gap in the first 100 llama.cpp steps {min(s['gap'] for s in steps[:100]):.4f}")
    return {
        "file": rel,
        "sha256": sha,
        "bytes": os.path.getsize(path),
        "tensor_types": tensor_types(path),
        "config": config,
        "teacher_ids": teacher_ids,
        "teacher_logits": [[round(float(x), 4) for x in row] for row in teacher],
        "f32_logits": [[round(float(x), 4) for x in row] for row in ref],
        "llama_vs_f32": {"max": round(float(err.max()), 5), "mean": round(float(err.mean()), 6)},
        "greedy": {"prompt_ids": prompt, "steps": steps[:N_GEN]},
        "greedy_long": {"prompt_ids": prompt, "steps": steps},
        "f32_greedy_long": {"prompt_ids": prompt, "steps": ref_long},
        "greedy_long_parting": part,
        "tokenize": tokenized,
    }


def check_pre_tokenizer(c, w, vocab, tmp, want):
    """TOKENIZE_TEXT must tokenize differently under the qwen2 pre-tokenizer."""
    path = os.path.join(tmp, "qwen2-pre.gguf")
    write(path, c, w, vocab, pre="qwen2")
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    other = llm.tokenize(TOKENIZE_TEXT.encode(), add_bos=False, special=False)
    del llm
    assert other != want, "TOKENIZE_TEXT does not tell qwen35's pre-tokenizer from qwen2's"
    print(f"tokenize: qwen35 {len(want)} ids, qwen2 pre-tokenizer {len(other)} ids (differ)")


def main():
    rng = np.random.default_rng(SEED)
    os.makedirs(DATA, exist_ok=True)
    vocab = qwen35_vocabulary(rng)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, c, outputs in [
            ("big", BIG, [("q4_k_m", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M)]),
            ("small", SMALL, [("f16", None), ("q8_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0)]),
        ]:
            w = weights(rng, c)
            # Round the matrices to f16 once, so that the F32 copy holds the very numbers of the F16 base.
            w = {k: (v.astype(np.float16).astype(np.float64) if not f32_by_converter(k, v) else v) for k, v in w.items()}
            teacher_ids = [N_VOCAB - 1] + [int(x) for x in rng.integers(0, N_VOCAB - 1, N_TEACHER - 1)]
            check_f32(name, c, w, vocab, teacher_ids, tmp)
            base = os.path.join(tmp, f"{name}-f16.gguf")
            config = write(base, c, w, vocab)
            for suffix, ftype in outputs:
                rel = f"tests/data/random-qwen35-{suffix}.gguf"
                dst = os.path.join(ROOT, rel)
                if ftype is None:
                    write(dst, c, w, vocab)
                else:
                    quantize(base, dst, ftype)
                records.append(record(dst, rel, teacher_ids, config))
        check_pre_tokenizer(SMALL, weights(np.random.default_rng(0), SMALL), vocab, tmp, records[-1]["tokenize"]["ids"])
    assert all(r["tokenize"] == records[0]["tokenize"] for r in records)

    out = {
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx={N_CTX}, logits_all, "
                     "f16 KV cache, argmax; f32: numpy_qwen35.py (float64)",
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

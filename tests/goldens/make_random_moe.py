#!/usr/bin/env python3
"""Tiny random-weight mixture-of-experts Qwen models, GGUF architectures `qwen3moe` (Qwen3-30B-A3B: Qwen
3's block with routed experts) and `qwen35moe` (Qwen3.5-35B-A3B: Qwen3.5's hybrid Gated DeltaNet /
gated attention block with routed experts and a gated shared expert), in the exact layout of llama.cpp's
converter (conversion/qwen.py Qwen3MoeModel, Qwen3_5MoeTextModel), with llama.cpp's logits and
numpy_moe.py's as goldens.

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf (gguf-py from
llama.cpp's tree), once per family:

    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_moe.py qwen3moe
    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_moe.py qwen35moe

Deterministic given the seed and the llama.cpp version (llama.cpp's quantizer is deterministic).
Writes tests/data/random-<family>-*.gguf and tests/goldens/random-<family>.json, whose records have the
fields of random-qwen35.json (make_random_qwen35.py says what each holds: file, sha256, bytes,
tensor_types, config, teacher_ids (24), teacher_logits (llama.cpp), f32_logits (numpy_moe, float64),
llama_vs_f32, greedy (llama.cpp, 12 steps from the first 8 teacher ids), greedy_long, f32_greedy_long,
greedy_long_parting (300 steps), tokenize) plus `routing`: per id sequence the reference is run on
(teacher: the 24 teacher ids; f32_greedy_long and greedy_long: the prompt and the tokens each greedy
run feeds), the routing (block, position) where the k-th and (k+1)-th router probabilities are closest,
its relative margin (p_k - p_k+1) / p_k and logit margin, the k-th chosen expert's weight there, and the
largest logit change when that routing takes the (k+1)-th expert instead (numpy_moe.Router's flip).
llama.cpp goldens: CPU, n_threads=2, n_ctx 512, logits_all, its default f16 KV cache. The printout also
compares numpy with llama.cpp on an F32 copy of each base (temporary, F32 KV cache): the 24 teacher
positions, a 200-token prefill and a 300-step greedy run compared at every step (max abs 7e-6 to 3.5e-5,
never parting).

Per family two random bases, each written as the converter writes an F16 model (matrices F16; norms,
ffn_gate_inp, ffn_gate_inp_shexp and, for qwen35moe, ssm_a, ssm_dt.bias and ssm_conv1d F32), then:
- small -> random-<family>-f16.gguf (the base itself) and -q8_0.gguf (llama.cpp Q8_0): n_embd 128,
  3 blocks, 16 experts, 4 used, expert_feed_forward_length 32 (every file well under 3 MB: 16 experts
  of width 64 over 4 blocks would be 4.2 MB in F16).
  qwen3moe: expert_feed_forward_length written as a per-layer array [32, 32, 32] (gguf-py writes INT32
  elements; llama.cpp reads the key as one value or an array of one per layer, but sizes every layer's
  expert tensors by layer 0's value, so the values must be equal); feed_forward_length 256 (the
  converter writes HF's intermediate_size; llama.cpp uses it only where expert_feed_forward_length is
  absent, as n_ff / n_used); n_head 4 over 2 kv heads of 32, rope base 1e6; untied output.
  qwen35moe: the small qwen35 file's block (make_random_qwen35.py SMALL: 2 k heads / 6 v heads, imrope
  sections [3, 3, 1, 0], tied output) over 3 blocks, recurrent_layers [true, false, true] beside
  full_attention_interval 3 (the array wins: the interval alone makes block 2 the attention one), with
  expert_shared_feed_forward_length 64 and NO feed_forward_length (Qwen3_5MoeTextConfig has no
  intermediate_size, so the converter writes none).
- big -> random-<family>-q4_k_m.gguf only (llama.cpp Q4_K_M, 4.3-4.6 MB): n_embd 256, 16 experts,
  8 used, expert_feed_forward_length 256 (every expert row a multiple of 256, so K-quants: Q4_K gate and
  up, Q4_K down in block 0 and Q6_K in block 1), 2 blocks: 16 experts of 3 x 256 x 256 are 2 MB per
  block in Q4_K_M (32 experts over 4-6 blocks would be 15-22 MB).
  qwen3moe: n_head 4 over 2 kv heads of 64 (q 256 rows), feed_forward_length 2048, untied.
  qwen35moe: blocks [linear, attention] by full_attention_interval 2 (no recurrent_layers key), the big
  qwen35 file's linear shapes (2 k heads, 4 v heads, sections [3, 3, 2, 0]), shared expert 256, untied.
llama.cpp's quantizer leaves ffn_gate_inp F32 by name, and ffn_gate_inp_shexp F32 because ggml counts
its ne {n_embd, 1} as 1-D: in the Q8_0 and Q4_K_M files it is written back as a 1-D tensor {n_embd},
while the converter's F16 file has the 2-D {n_embd, 1}.

Weights: as make_random_qwen35.py's (matrices normal with std 1/sqrt(fan_in), projections back into the
residual stream 0.7/sqrt(fan_in), norm gains uniform [0.6, 1.4], tied tables 1/sqrt(n_embd) with
output_norm gains [2.4, 5.6]); experts like dense FFN matrices; ffn_gate_inp_shexp 1/sqrt(n_embd);
routers ffn_gate_inp ROUTER_SCALES[family]/sqrt(n_embd), so router logits spread with std 6 (qwen35moe)
or 8 (qwen3moe). A random router puts the k-th and (k+1)-th experts within ~1e-4 of each other
somewhere among the 2000-2700 routings of a file's runs, where an engine's rounding can choose the
other expert; a larger spread widens the margins but leaves the top expert more alone in the mix (the
chosen experts' mean weights by rank over a greedy run: 0.80, 0.14, 0.04, 0.015 at std 6; 0.85, 0.11,
0.03, 0.008 at std 8). So the seeds are picked (among ~20 tried for qwen35moe, ~90 for qwen3moe, whose
3 blocks at std 6 never cleared it) so that every record's smallest relative margin over its teacher and
greedy runs is above 1e-3 (`routing`: 1.1e-3 to 4.6e-3).

Vocabulary: qwen3moe random_vocab's 512-token byte-level BPE with the qwen2 pre-tokenizer (as
random-qwen3.gguf); qwen35moe make_random_qwen35's (pre-tokenizer qwen35). No BOS added; <|endoftext|>
(511) is BOS and EOS. Chat templates: chat_template/qwen3.jinja and qwen3.5.jinja.
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
import make_random_qwen35 as rq  # noqa: E402  (its vocabulary, block weights and llama.cpp helpers)
import numpy_moe  # noqa: E402
from random_vocab import N_VOCAB, vocabulary  # noqa: E402

SEEDS = {"qwen3moe": 20261711, "qwen35moe": 20261305}
N_TEACHER, N_PROMPT, N_GEN, N_LONG, TOP_K = rq.N_TEACHER, rq.N_PROMPT, rq.N_GEN, rq.N_LONG, rq.TOP_K
N_CTX, N_CTX_TRAIN, RMS_EPS = rq.N_CTX, rq.N_CTX_TRAIN, rq.RMS_EPS
OUT_SCALE = rq.OUT_SCALE
ROUTER_SCALES = {"qwen3moe": 8.0, "qwen35moe": 6.0}
TOKENIZE_TEXT = rq.TOKENIZE_TEXT

ROOT = rq.ROOT
DATA = rq.DATA

QWEN3_SMALL = dict(n_embd=128, n_layer=3, n_head=4, n_kv=2, head_dim=32, rope_base=1e6, n_ff=256,
                   n_expert=16, n_used=4, n_ff_exp=32, ff_exp_array=True, tied=False)
QWEN3_BIG = dict(n_embd=256, n_layer=2, n_head=4, n_kv=2, head_dim=64, rope_base=1e6, n_ff=2048,
                 n_expert=16, n_used=8, n_ff_exp=256, ff_exp_array=False, tied=False)
QWEN35_SMALL = dict(rq.SMALL, n_layer=3, recurrent=[True, False, True], interval=3, n_expert=16, n_used=4,
                    n_ff_exp=32, n_ff_shexp=64)
QWEN35_BIG = dict(rq.BIG, n_layer=2, interval=2, n_expert=16, n_used=8, n_ff_exp=256, n_ff_shexp=256)
CONFIGS = {f: tuple(dict(c, router_scale=ROUTER_SCALES[f]) for c in cs)
           for f, cs in {"qwen3moe": (QWEN3_SMALL, QWEN3_BIG), "qwen35moe": (QWEN35_SMALL, QWEN35_BIG)}.items()}


def moe_weights(rng, c, w, p):
    """Adds one block's experts (and shared expert for qwen35moe) to w under prefix p."""
    d, E, f = c["n_embd"], c["n_expert"], c["n_ff_exp"]
    w[p + "ffn_gate_inp.weight"] = rng.standard_normal((E, d)) * c["router_scale"] / np.sqrt(d)
    w[p + "ffn_gate_exps.weight"] = rng.standard_normal((E, f, d)) / np.sqrt(d)
    w[p + "ffn_up_exps.weight"] = rng.standard_normal((E, f, d)) / np.sqrt(d)
    w[p + "ffn_down_exps.weight"] = rng.standard_normal((E, d, f)) * OUT_SCALE / np.sqrt(f)
    if "n_ff_shexp" in c:
        s = c["n_ff_shexp"]
        w[p + "ffn_gate_inp_shexp.weight"] = rng.standard_normal((1, d)) / np.sqrt(d)
        w[p + "ffn_gate_shexp.weight"] = rng.standard_normal((s, d)) / np.sqrt(d)
        w[p + "ffn_up_shexp.weight"] = rng.standard_normal((s, d)) / np.sqrt(d)
        w[p + "ffn_down_shexp.weight"] = rng.standard_normal((d, s)) * OUT_SCALE / np.sqrt(s)


def qwen3moe_weights(rng, c):
    d, hd = c["n_embd"], c["head_dim"]
    mat = lambda rows, cols, scale=1.0: rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)
    gain = lambda n, lo=0.6, hi=1.4: rng.uniform(lo, hi, n)
    w = {"token_embd.weight": rng.standard_normal((N_VOCAB, d)) / (np.sqrt(d) if c["tied"] else 1.0)}
    for l in range(c["n_layer"]):
        p = f"blk.{l}."
        w[p + "attn_norm.weight"] = gain(d)
        w[p + "attn_q.weight"] = mat(hd * c["n_head"], d)
        w[p + "attn_k.weight"] = mat(hd * c["n_kv"], d)
        w[p + "attn_v.weight"] = mat(hd * c["n_kv"], d)
        w[p + "attn_output.weight"] = mat(d, hd * c["n_head"], OUT_SCALE)
        w[p + "attn_q_norm.weight"] = gain(hd, 0.8, 1.8)
        w[p + "attn_k_norm.weight"] = gain(hd, 0.8, 1.8)
        w[p + "ffn_norm.weight"] = gain(d)
        moe_weights(rng, c, w, p)
    w["output_norm.weight"] = gain(d, 2.4, 5.6) if c["tied"] else gain(d)
    if not c["tied"]:
        w["output.weight"] = mat(N_VOCAB, d, 4.0)
    return w


def qwen35moe_weights(rng, c):
    """make_random_qwen35's block weights with the dense FFN replaced by the experts (drawn in its place)."""
    dense = rq.weights(rng, dict(c, n_ff=1))  # the dense FFN's draws are tiny (n_ff 1) and dropped
    w = {}
    for k, v in dense.items():
        if k.endswith("ffn_gate.weight") or k.endswith("ffn_up.weight"):
            continue
        if k.endswith("ffn_down.weight"):
            moe_weights(rng, c, w, k[:-len("ffn_down.weight")])
            continue
        w[k] = v
    return w


def f32_by_converter(name, t):
    """The converter keeps 1-D tensors, norms, the routers (ffn_gate_inp, ffn_gate_inp_shexp),
    ssm_conv1d and names not ending in .weight in F32."""
    return rq.f32_by_converter(name, t) or "ffn_gate_inp" in name


def write(path, family, c, w, vocab, all_f32=False, pre=None):
    tokens, types, merges = vocab
    wr = gguf.GGUFWriter(path, family)
    config = {}

    def put(method, key, value):
        getattr(wr, method)(value)
        config[key.format(arch=family)] = value

    put("add_name", "general.name", "tiny-random")
    put("add_block_count", "{arch}.block_count", c["n_layer"])
    put("add_context_length", "{arch}.context_length", N_CTX_TRAIN)
    put("add_embedding_length", "{arch}.embedding_length", c["n_embd"])
    if family == "qwen3moe":
        put("add_feed_forward_length", "{arch}.feed_forward_length", c["n_ff"])
    put("add_head_count", "{arch}.attention.head_count", c["n_head"])
    put("add_head_count_kv", "{arch}.attention.head_count_kv", c["n_kv"])
    if family == "qwen35moe":
        put("add_rope_dimension_sections", "{arch}.rope.dimension_sections", c["sections"])
    put("add_rope_freq_base", "{arch}.rope.freq_base", c.get("rope_base", rq.ROPE_BASE))
    put("add_layer_norm_rms_eps", "{arch}.attention.layer_norm_rms_epsilon", RMS_EPS)
    put("add_expert_count", "{arch}.expert_count", c["n_expert"])
    put("add_expert_used_count", "{arch}.expert_used_count", c["n_used"])
    put("add_key_length", "{arch}.attention.key_length", c["head_dim"])
    put("add_value_length", "{arch}.attention.value_length", c["head_dim"])
    ftype = gguf.LlamaFileType.ALL_F32 if all_f32 else gguf.LlamaFileType.MOSTLY_F16
    put("add_file_type", "general.file_type", int(ftype))
    ff_exp = [c["n_ff_exp"]] * c["n_layer"] if c.get("ff_exp_array") else c["n_ff_exp"]
    put("add_expert_feed_forward_length", "{arch}.expert_feed_forward_length", ff_exp)
    if family == "qwen35moe":
        put("add_expert_shared_feed_forward_length", "{arch}.expert_shared_feed_forward_length", c["n_ff_shexp"])
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
    wr.add_tokenizer_pre(pre or ("qwen35" if family == "qwen35moe" else "qwen2"))
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(N_VOCAB - 1)
    wr.add_eos_token_id(N_VOCAB - 1)
    wr.add_add_bos_token(False)
    template = "qwen3.5.jinja" if family == "qwen35moe" else "qwen3.jinja"
    with open(os.path.join(ROOT, "tests", "goldens", "chat_template", template)) as f:
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


def shapes(path):
    """name -> [ggml ne..., type] of every tensor."""
    return {t.name: [int(n) for n in t.shape] + [t.tensor_type.name] for t in gguf.GGUFReader(path).tensors}


def check_f32(name, family, c, w, vocab, teacher_ids, tmp, write_f32=None):
    """numpy vs llama.cpp on an all-F32 copy of the base with an F32 KV cache: the tight check.
    `write_f32(path)` writes the copy where this module's `write` does not (make_random_gpt_oss.py)."""
    path = os.path.join(tmp, f"{name}-f32.gguf")
    if write_f32 is not None:
        write_f32(path)
    else:
        write(path, family, c, w, vocab, all_f32=True)
    llm = rq.llama(path, f32_cache=True)
    meta, wt = numpy_moe.load(path)
    ll = rq.teacher_logits(llm, teacher_ids)
    ref = numpy_moe.forward(meta, wt, teacher_ids)
    err = np.abs(ref - ll)
    print(f"{family} {name} F32 copy, F32 KV cache: llama.cpp vs numpy max abs {err.max():.2e}, "
          f"mean {err.mean():.2e}; logit std {ref.std(1).mean():.3f}")
    # A 200-token prefill in one batch ...
    ids = [N_VOCAB - 1] + [int(x) for x in np.random.default_rng(1).integers(0, N_VOCAB - 1, 199)]
    long_ll = rq.teacher_logits(llm, ids)
    long_err = np.abs(long_ll - numpy_moe.forward(meta, wt, ids))
    # ... and N_LONG greedy steps one token at a time, compared at every step.
    llm.reset()
    llm.eval(teacher_ids[:N_PROMPT])
    m = numpy_moe.model(meta, wt)
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
    print(f"  200-token prefill max abs {long_err.max():.2e} (mean {long_err.mean():.2e}); {N_LONG}-step greedy "
          f"max abs {step_err:.2e}, {'never parts' if parted is None else f'parts at step {parted}'}")
    return {"teacher_max": float(err.max()), "teacher_mean": float(err.mean()),
            "prefill_max": float(long_err.max()), "greedy_max": float(step_err), "greedy_parts": parted}


def routing(meta, w, seqs):
    """Per named id sequence, fed teacher-forced to the numpy reference: the routing (block, position)
    whose k-th and (k+1)-th router probabilities are closest, its margins, the k-th expert's weight
    there, and the largest change of any logit of the sequence when that one routing takes the (k+1)-th
    expert instead (what an engine whose rounding reverses the near tie would get)."""
    out = {}
    for name, ids in seqs.items():
        router = numpy_moe.Router(meta, w)
        base = numpy_moe.forward(meta, w, ids, router=router)
        p, pos, margin, logit_margin, weight = router.closest()
        flipped = numpy_moe.forward(meta, w, ids, router=numpy_moe.Router(meta, w, flip=(p, pos)))
        out[name] = {"block": int(p.split(".")[1]), "position": pos, "relative_margin": float(f"{margin:.4g}"),
                     "logit_margin": float(f"{logit_margin:.4g}"), "kth_weight": float(f"{weight:.4g}"),
                     "flip_logit_change": float(f"{np.abs(flipped - base).max():.4g}")}
    return out


def record(path, rel, teacher_ids, config):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    teacher, prompt, steps, tokenized = rq.goldens(path, teacher_ids)
    meta, w = numpy_moe.load(path)
    ref = numpy_moe.forward(meta, w, teacher_ids)
    ref_long = numpy_moe.greedy(meta, w, prompt, N_LONG)
    routes = routing(meta, w, {
        "teacher": teacher_ids,
        "f32_greedy_long": prompt + [s["id"] for s in ref_long[:-1]],
        "greedy_long": prompt + [s["id"] for s in steps[:-1]],
    })
    err = np.abs(ref - teacher)
    parting = next((i for i in range(N_LONG) if steps[i]["id"] != ref_long[i]["id"]), None)
    part = None if parting is None else {
        "step": parting, "llama_cpp_gap": steps[parting]["gap"], "f32_gap": ref_long[parting]["gap"]}
    gaps = [s["gap"] for s in steps[:N_GEN]]
    print(f"{rel}: {os.path.getsize(path)} bytes; llama.cpp vs f32 max abs {err.max():.4f}, mean {err.mean():.5f}; "
          f"greedy gaps {gaps}")
    print(f"  types: {sorted(set(rq.tensor_types(path).values()))}; long greedy parts at {part}; "
          f"smallest gap in the first 100 llama.cpp steps {min(s['gap'] for s in steps[:100]):.4f}")
    for name, r in routes.items():
        print(f"  closest routing over {name}: {r}")
    return {
        "file": rel,
        "sha256": sha,
        "bytes": os.path.getsize(path),
        "tensor_types": rq.tensor_types(path),
        "config": config,
        "teacher_ids": teacher_ids,
        "teacher_logits": [[round(float(x), 4) for x in row] for row in teacher],
        "f32_logits": [[round(float(x), 4) for x in row] for row in ref],
        "llama_vs_f32": {"max": round(float(err.max()), 5), "mean": round(float(err.mean()), 6)},
        "greedy": {"prompt_ids": prompt, "steps": steps[:N_GEN]},
        "greedy_long": {"prompt_ids": prompt, "steps": steps},
        "f32_greedy_long": {"prompt_ids": prompt, "steps": ref_long},
        "greedy_long_parting": part,
        "routing": routes,
        "tokenize": tokenized,
    }


def main(family):
    rng = np.random.default_rng(SEEDS[family])
    os.makedirs(DATA, exist_ok=True)
    vocab = rq.qwen35_vocabulary(rng) if family == "qwen35moe" else vocabulary(rng)
    small, big = CONFIGS[family]
    make_weights = qwen35moe_weights if family == "qwen35moe" else qwen3moe_weights
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, c, outputs in [
            ("big", big, [("q4_k_m", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M)]),
            ("small", small, [("f16", None), ("q8_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0)]),
        ]:
            w = make_weights(rng, c)
            # Round the matrices to f16 once, so that the F32 copy holds the very numbers of the F16 base.
            w = {k: (v.astype(np.float16).astype(np.float64) if not f32_by_converter(k, v) else v) for k, v in w.items()}
            teacher_ids = [N_VOCAB - 1] + [int(x) for x in rng.integers(0, N_VOCAB - 1, N_TEACHER - 1)]
            check_f32(name, family, c, w, vocab, teacher_ids, tmp)
            base = os.path.join(tmp, f"{name}-f16.gguf")
            config = write(base, family, c, w, vocab)
            print(f"  {name} base: {os.path.getsize(base)} bytes")
            for suffix, ftype in outputs:
                rel = f"tests/data/random-{family}-{suffix}.gguf"
                dst = os.path.join(ROOT, rel)
                if ftype is None:
                    write(dst, family, c, w, vocab)
                else:
                    rq.quantize(base, dst, ftype)
                for k, v in shapes(dst).items():
                    if k.startswith("blk.0.") or not k.startswith("blk."):
                        print(f"    {k}: {v}")
                records.append(record(dst, rel, teacher_ids, config))
        if family == "qwen35moe":
            rq.check_pre_tokenizer(rq.SMALL, rq.weights(np.random.default_rng(0), rq.SMALL), vocab, tmp,
                                   records[-1]["tokenize"]["ids"])
    assert all(r["tokenize"] == records[0]["tokenize"] for r in records)

    out = {
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx={N_CTX}, logits_all, "
                     "f16 KV cache, argmax; f32: numpy_moe.py (float64)",
        "seed": SEEDS[family],
        "n_vocab": N_VOCAB,
        "records": records,
    }
    golden = os.path.join(ROOT, "tests", "goldens", f"random-{family}.json")
    with open(golden, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {golden}: {os.path.getsize(golden)} bytes")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SEEDS:
        sys.exit(f"usage: make_random_moe.py {{{','.join(SEEDS)}}}")
    main(sys.argv[1])

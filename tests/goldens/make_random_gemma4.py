#!/usr/bin/env python3
"""Tiny random-weight Gemma 4 text models (GGUF architecture `gemma4`: sliding-window layers beside
full-attention layers with wider heads and proportional RoPE, the last layers reusing earlier layers' KV,
per-layer embeddings, double-wide FFNs on the shared layers) in the exact layout of llama.cpp's converter
(conversion/gemma.py, Gemma4Model over Gemma3Model), with llama.cpp's logits and numpy_gemma4.py's as
goldens.

Run from the repository root with the venv that has llama-cpp-python, numpy and gguf (gguf-py from
llama.cpp's tree: it knows the gemma4 keys):

    nice -n 10 /work/venv-llama/bin/python tests/goldens/make_random_gemma4.py

Deterministic given the seed and the llama.cpp version (llama.cpp's quantizer is deterministic).
Writes tests/data/random-gemma4-{f32,q8_0,q4_k}.gguf and tests/goldens/random-gemma4.json, whose records
have the fields tests/common/random_model.rs reads (make_random_llama.py says what each holds: file,
sha256, bytes, tensor_types, teacher_ids (24), teacher_logits (llama.cpp), f32_logits (numpy_gemma4,
float64), greedy (llama.cpp, 12 steps from the first 8 teacher ids), tokenize) plus:
- greedy_long: llama.cpp's greedy continuation of 300 tokens from the same 8 ids (steps {id, gap, top 4});
- f32_greedy_long: numpy_gemma4's greedy continuation of 300 tokens from the same prompt (same format);
- greedy_long_parting: the first step where the two pick different ids (null if never), with both
  gaps there;
- config: every metadata key/value written (tokenizer and chat template excepted);
- llama_vs_f32: max and mean |llama.cpp - numpy| over the teacher logits.
llama.cpp goldens: CPU, n_threads=2, n_ctx 512, logits_all, its default f16 KV cache, no flash attention.

The printout also compares numpy with llama.cpp on the F32 file with an F32 KV cache, the tight check:
the 24 teacher positions, a 200-token prefill (the window and the shared KV over many positions) and a
300-step greedy run compared at every step. llama.cpp's CPU GELU is a table of f16 values indexed by the
f16 rounding of the input (GGML_GELU_FP16 in ggml-cpu/vec.h), 1e-3 relative per activation, which puts
it 1.7e-2 from exact math on this file; numpy with that table (gelu="ggml") is hardly closer (8e-3): an
input within float32 noise of an f16 rounding boundary rounds the other way now and then, and six
layers compound it. The check is tight with a libggml-cpu built without the table: comment out
`#define GGML_GELU_FP16` in a copy of the llama.cpp tree of this llama-cpp-python, build the ggml-cpu
target (cmake -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON -DGGML_OPENMP=ON), and run

    LD_LIBRARY_PATH=DIR_OF_IT /work/venv-llama/bin/python tests/goldens/make_random_gemma4.py --check

(DIR_OF_IT holding that libggml-cpu.so.0), which writes nothing (the F32 file goes to a temporary
directory) and prints the check: max |llama.cpp - numpy| 2.7e-5 over the teacher positions, 1.6e-4 over
the 200-token prefill and 1.9e-4 over 300 greedy steps, which never part.

One random model (every gemma4 feature of the E2B/E4B text stack, at toy size):
  n_embd 128, 6 blocks, attention.sliding_window_pattern [T, F, T, F, T, F], shared_kv_layers 2 (layers
  4 and 5 compute no KV: by llama.cpp's rule, n0 = 6 - 2 = 4, the sliding layer 4 reads layer n0 - 2 = 2
  and the full layer 5 reads layer n0 - 1 = 3), n_head 4 on every layer, head_count_kv per layer
  [2, 1, 2, 1, 2, 1], head size 32 on sliding layers (key_length_swa / value_length_swa) and 64 on full
  ones (key_length / value_length), sliding_window 8 (so that it cuts the 24 teacher positions),
  rope.freq_base 1e6 with rope.dimension_count 64 and rope_freqs.weight = [1.0] * 8 + [1e30] * 24
  ("proportional" RoPE, partial factor 0.25: 8 of the 32 pairs of a full head turn, at the
  frequencies of a 64-dim rotation), rope.freq_base_swa 1e4 with rope.dimension_count_swa 32 (the
  whole sliding head turns), feed_forward_length per layer [256, 256, 256, 256, 512, 512] (the shared
  layers' double-wide MLP), embedding_length_per_layer_input 32 (per_layer_token_embd 192 values per
  token, per_layer_model_proj, per_layer_proj_norm; inp_gate, proj, post_norm in every block),
  layer_output_scale on every block, final_logit_softcapping 30, tied output (no output.weight),
  context_length 1024, rms eps 1e-6.
  -> random-gemma4-f32.gguf (every tensor F32; 5.9 MB, the FFNs being most of it),
     random-gemma4-q8_0.gguf (llama.cpp Q8_0 of it),
     random-gemma4-q4_k.gguf (llama.cpp Q4_K_M of a copy WITHOUT attn_k / attn_v / attn_k_norm on the
     shared layers 4 and 5: Google's original checkpoints carry these unused tensors on every layer,
     later exports (QAT, most quantized GGUFs) leave them out; llama.cpp accepts both, so the first two
     files hold them, random and unused, and the third does not. With n_embd 128 most matrices have
     rows too short for 256-value K blocks, and llama.cpp falls back to other types for them: the file
     mixes Q4_K / Q6_K with Q5_0 / Q8_0 (tensor_types has each)).

Weights: matrices normal with std 1/sqrt(fan_in); token_embd normal with std 1/sqrt(n_embd) (x starts at
unit size after the sqrt(n_embd) scale), per_layer_token_embd std 1/sqrt(32) (unit size after its
sqrt(32) scale); attn_norm, post_attention_norm, ffn_norm, post_ffw_norm, post_norm, per_layer_proj_norm
gains uniform [0.6, 1.4]; attn_q_norm / attn_k_norm gains uniform [0.35, 0.7] (the attention scale
is 1, so these set how sharp attention is: q.k has std ~ sqrt(head size) * gain^2, about 1.6 on sliding
and 2.2 on full heads; sharper attention moves llama.cpp's quantized logits further from exact math, 2.3
with gains [0.4, 0.8]); layer_output_scale uniform [0.3, 1.0]; output_norm gains uniform [2.0, 4.6] (a
tied head: as for the qwen35 file, large final gains keep greedy from locking onto one token; the layer
output scales also shrink the token's own embedding in the residual stream, by their product, 0.08).

llama.cpp's logits on the quantized files sit up to ~1 from exact math (Q8_0: 1.12, mean 0.14; Q4_K_M:
0.93, mean 0.15; the F32 file with its f16 KV cache: 0.04): it rounds activations to 8 bits (Q8_0 / Q8_K
blocks) before quantized dot products, and its CPU GELU is an f16 table (see above).

Every file carries Gemma 4's chat template (tests/goldens/chat_template/gemma4.jinja, the template of
llama.cpp's models/ggml-vocab-gemma-4.gguf).

Vocabulary (640 tokens), laid out as Gemma 4's: tokenizer.ggml.model "gemma4" and no
tokenizer.ggml.pre (llama.cpp then takes the gemma4 pre-tokenizer: spaces become U+2581 "▁", text is
split only at newline runs, BPE merges run over raw UTF-8 characters, characters no token covers fall
back to <0xNN> byte tokens), scores -1000 for every token as in the real file (BPE ignores them), ids:
0..4 <pad> <eos> <bos> <unk> <mask> (CONTROL), then <|turn> <turn|> <|think|> <|tool> <tool|> (CONTROL) and
<|channel> <channel|> <|tool_call> <tool_call|> <|tool_response> <tool_response|> <|"|> (USER_DEFINED:
the converter's visible tokens, matched in text even without special parsing), "\\n", "\\n\\n", the 256
<0xNN> (BYTE), the merged tokens in merge order, then the single characters (▁, a-z, 0-9, some
punctuation; no capitals: "H" falls back to <0x48>), as the real vocabulary keeps single characters at
its end. Merges: "\\n \\n" (whose result "\\n\\n" is a token before it: a run of three newlines is no
token, so it is merged into "\\n\\n" + "\\n", while the two-newline run is found whole), "▁ ▁", "▁ x" for
every letter, then random pairs of known pieces and letters: 313 merged tokens and 52 single characters,
314 merges. bos 2, eos 1, unk 3, pad 0, mask 4, add_bos_token true (llama.cpp would force it for the
gemma4 pre-tokenizer anyway), add_space_prefix false. TOKENIZE_TEXT, tokenized as llama_tokenize does
with add_special and parse_special off, has a capital and characters outside the vocabulary (byte
fallback: 1, 2 and 3-byte UTF-8), two spaces (the "▁▁" merge takes the first space of " the"), a run of
three newlines and a final run of two, the user-defined <|"|> (matched as a token) and the control
<|turn> (not matched without special parsing: plain characters).
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
import numpy_gemma4  # noqa: E402

SEED = 20261126
N_TEACHER, N_PROMPT, N_GEN, N_LONG, TOP_K = 24, 8, 12, 300, 4
N_CTX = 512  # llama.cpp's context here: the prompt and 300 generated tokens fit
N_CTX_TRAIN = 1024
N_VOCAB = 640
RMS_EPS = 1e-6
ATTN_LO, ATTN_HI = 0.35, 0.7
OUT_LO, OUT_HI = 2.0, 4.6
TOKENIZE_TEXT = "Hello w\u00f6rld,  the cat's\n\n\nnew\nline <|\"|>quote<|\"|> <|turn>user 42 \u65e5\u672c!\n\n"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
GOLDEN = os.path.join(ROOT, "tests", "goldens", "random-gemma4.json")
TEMPLATE = os.path.join(ROOT, "tests", "goldens", "chat_template", "gemma4.jinja")

CONFIG = dict(n_embd=128, n_layer=6, swa=[True, False, True, False, True, False], shared_kv=2, n_head=4,
              n_kv=[2, 1, 2, 1, 2, 1], hd_swa=32, hd_full=64, n_swa=8, rope_base=1e6, rope_base_swa=1e4,
              n_rot=64, n_rot_swa=32, partial_full=0.25, n_ff=[256, 256, 256, 256, 512, 512], n_pl=32,
              softcap=30.0)

T = gguf.TokenType
SPECIAL = [("<pad>", T.CONTROL), ("<eos>", T.CONTROL), ("<bos>", T.CONTROL), ("<unk>", T.CONTROL),
           ("<mask>", T.CONTROL), ("<|turn>", T.CONTROL), ("<turn|>", T.CONTROL), ("<|think|>", T.CONTROL),
           ("<|tool>", T.CONTROL), ("<tool|>", T.CONTROL), ("<|channel>", T.USER_DEFINED),
           ("<channel|>", T.USER_DEFINED), ("<|tool_call>", T.USER_DEFINED), ("<tool_call|>", T.USER_DEFINED),
           ("<|tool_response>", T.USER_DEFINED), ("<tool_response|>", T.USER_DEFINED),
           ('<|"|>', T.USER_DEFINED)]
PAD, EOS, BOS, UNK, MASK = 0, 1, 2, 3, 4
SPACE = "\u2581"


def vocabulary(rng):
    """(tokens, types, merges) as described above; N_VOCAB tokens."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    singles = [SPACE] + letters + [str(i) for i in range(10)] + list(".,'!?-:;<>|\"()/")
    head = [t for t, _ in SPECIAL] + ["\n", "\n\n"] + [f"<0x{b:02X}>" for b in range(256)]
    n_merged = N_VOCAB - len(head) - len(singles)
    have = set(head) | set(singles)
    merges, merged = ["\n \n"], []

    def merge(a, b):
        if a + b not in have and len(merged) < n_merged:
            merges.append(f"{a} {b}")
            merged.append(a + b)
            have.add(a + b)
            return True
        return False

    merge(SPACE, SPACE)
    for c in letters:
        merge(SPACE, c)
    pieces = letters + [SPACE + c for c in letters]
    while len(merged) < n_merged:  # random pairs of known pieces, so longer words grow out of earlier merges
        a = pieces[rng.integers(len(pieces))]
        b = letters[rng.integers(len(letters))]
        if len(a) < 5 and merge(a, b):
            pieces.append(a + b)
    tokens = head + merged + singles
    types = [t for _, t in SPECIAL] + [T.NORMAL] * 2 + [T.BYTE] * 256 + [T.NORMAL] * (n_merged + len(singles))
    assert len(tokens) == N_VOCAB == len(set(tokens)) == len(types)
    return tokens, types, merges


def weights(rng, c):
    """The tensors, in float64, named and shaped (numpy: rows = ggml ne[1]) as the converter writes them."""
    d, L, npl = c["n_embd"], c["n_layer"], c["n_pl"]
    mat = lambda rows, cols, scale=1.0: rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)
    gain = lambda n, lo=0.6, hi=1.4: rng.uniform(lo, hi, n)
    w = {}
    w["token_embd.weight"] = rng.standard_normal((N_VOCAB, d)) / np.sqrt(d)
    w["per_layer_token_embd.weight"] = rng.standard_normal((N_VOCAB, L * npl)) / np.sqrt(npl)
    w["per_layer_model_proj.weight"] = mat(L * npl, d)
    w["per_layer_proj_norm.weight"] = gain(npl)
    n_pairs = c["hd_full"] // 2
    n_turn = int(c["hd_full"] * c["partial_full"] / 2)
    w["rope_freqs.weight"] = np.array([1.0] * n_turn + [1e30] * (n_pairs - n_turn))
    for l in range(L):
        p = f"blk.{l}."
        hd = c["hd_swa"] if c["swa"][l] else c["hd_full"]
        nh, nkv, ff = c["n_head"], c["n_kv"][l], c["n_ff"][l]
        w[p + "attn_norm.weight"] = gain(d)
        w[p + "attn_q.weight"] = mat(nh * hd, d)
        w[p + "attn_k.weight"] = mat(nkv * hd, d)
        w[p + "attn_v.weight"] = mat(nkv * hd, d)
        w[p + "attn_output.weight"] = mat(d, nh * hd)
        w[p + "attn_q_norm.weight"] = gain(hd, ATTN_LO, ATTN_HI)
        w[p + "attn_k_norm.weight"] = gain(hd, ATTN_LO, ATTN_HI)
        w[p + "post_attention_norm.weight"] = gain(d)
        w[p + "ffn_norm.weight"] = gain(d)
        w[p + "ffn_gate.weight"] = mat(ff, d)
        w[p + "ffn_up.weight"] = mat(ff, d)
        w[p + "ffn_down.weight"] = mat(d, ff)
        w[p + "post_ffw_norm.weight"] = gain(d)
        w[p + "inp_gate.weight"] = mat(npl, d)
        w[p + "proj.weight"] = mat(d, npl)
        w[p + "post_norm.weight"] = gain(d)
        w[p + "layer_output_scale.weight"] = rng.uniform(0.3, 1.0, 1)
    w["output_norm.weight"] = gain(d, OUT_LO, OUT_HI)
    return w


def without_shared_kv(c, w):
    """The tensors less attn_k / attn_v / attn_k_norm of the layers that reuse another layer's KV."""
    n0 = c["n_layer"] - c["shared_kv"]
    drop = {f"blk.{l}.{t}.weight" for l in range(n0, c["n_layer"]) for t in ("attn_k", "attn_v", "attn_k_norm")}
    return {k: v for k, v in w.items() if k not in drop}


def write(path, c, w, vocab):
    """An all-F32 file with the converter's keys, in its order."""
    tokens, types, merges = vocab
    wr = gguf.GGUFWriter(path, "gemma4")
    config = {}

    def put(method, key, value):
        getattr(wr, method)(value)
        config[key.format(arch="gemma4")] = value

    put("add_name", "general.name", "tiny-random")
    put("add_block_count", "{arch}.block_count", c["n_layer"])
    put("add_context_length", "{arch}.context_length", N_CTX_TRAIN)
    put("add_embedding_length", "{arch}.embedding_length", c["n_embd"])
    put("add_feed_forward_length", "{arch}.feed_forward_length", c["n_ff"])
    put("add_head_count", "{arch}.attention.head_count", c["n_head"])
    put("add_head_count_kv", "{arch}.attention.head_count_kv", c["n_kv"])
    put("add_rope_freq_base", "{arch}.rope.freq_base", c["rope_base"])
    put("add_rope_freq_base_swa", "{arch}.rope.freq_base_swa", c["rope_base_swa"])
    put("add_layer_norm_rms_eps", "{arch}.attention.layer_norm_rms_epsilon", RMS_EPS)
    put("add_key_length", "{arch}.attention.key_length", c["hd_full"])
    put("add_value_length", "{arch}.attention.value_length", c["hd_full"])
    put("add_file_type", "general.file_type", int(gguf.LlamaFileType.ALL_F32))
    put("add_final_logit_softcapping", "{arch}.final_logit_softcapping", c["softcap"])
    put("add_sliding_window", "{arch}.attention.sliding_window", c["n_swa"])
    put("add_shared_kv_layers", "{arch}.attention.shared_kv_layers", c["shared_kv"])
    put("add_embedding_length_per_layer_input", "{arch}.embedding_length_per_layer_input", c["n_pl"])
    put("add_sliding_window_pattern", "{arch}.attention.sliding_window_pattern", c["swa"])
    put("add_key_length_swa", "{arch}.attention.key_length_swa", c["hd_swa"])
    put("add_value_length_swa", "{arch}.attention.value_length_swa", c["hd_swa"])
    put("add_rope_dimension_count", "{arch}.rope.dimension_count", c["n_rot"])
    put("add_rope_dimension_count_swa", "{arch}.rope.dimension_count_swa", c["n_rot_swa"])
    put("add_quantization_version", "general.quantization_version", gguf.GGML_QUANT_VERSION)
    wr.add_tokenizer_model("gemma4")
    wr.add_token_list(tokens)
    wr.add_token_scores([-1000.0] * len(tokens))
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(BOS)
    wr.add_eos_token_id(EOS)
    wr.add_unk_token_id(UNK)
    wr.add_pad_token_id(PAD)
    wr.add_mask_token_id(MASK)
    with open(TEMPLATE) as f:
        wr.add_chat_template(f.read())
    wr.add_add_space_prefix(False)
    wr.add_add_bos_token(True)
    for name, t in w.items():
        wr.add_tensor(name, t.astype(np.float32))
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


def check_f32(path, teacher_ids):
    """numpy vs llama.cpp on the all-F32 file with an F32 KV cache: the tight check. numpy runs with the
    exact GELU and with ggml's f16-table GELU; the closer of the two also runs the long checks."""
    llm = llama(path, f32_cache=True)
    meta, w = numpy_gemma4.load(path)
    ll = teacher_logits(llm, teacher_ids)
    errs = {}
    for gelu in ("exact", "ggml"):
        ref = numpy_gemma4.forward(meta, w, teacher_ids, gelu)
        err = np.abs(ref - ll)
        errs[gelu] = err.max()
        print(f"F32 file, F32 KV cache, numpy with {gelu} GELU: llama.cpp vs numpy max abs {err.max():.2e}, "
              f"mean {err.mean():.2e}; logit std {ref.std(1).mean():.3f}")
    gelu = min(errs, key=errs.get)
    # A 200-token prefill in one batch (the window slides over 190 positions) ...
    ids = [BOS] + [int(x) for x in np.random.default_rng(1).integers(len(SPECIAL), N_VOCAB, 199)]
    long_err = np.abs(teacher_logits(llm, ids) - numpy_gemma4.forward(meta, w, ids, gelu)).max()
    # ... and N_LONG greedy steps one token at a time (its autoregressive path), compared at every step.
    llm.reset()
    llm.eval(teacher_ids[:N_PROMPT])
    m = numpy_gemma4.Model(meta, w, gelu)
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
    print(f"  numpy with {gelu} GELU: 200-token prefill max abs {long_err:.2e}; {N_LONG}-step greedy max abs "
          f"{step_err:.2e}, {'never parts' if parted is None else f'parts at step {parted}'}")
    return errs


def record(path, rel, teacher_ids, config):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    teacher, prompt, steps, tokenized = goldens(path, teacher_ids)
    meta, w = numpy_gemma4.load(path)
    ref = numpy_gemma4.forward(meta, w, teacher_ids)
    ref_long = numpy_gemma4.greedy(meta, w, prompt, N_LONG)
    err = np.abs(ref - teacher)
    parting = next((i for i in range(N_LONG) if steps[i]["id"] != ref_long[i]["id"]), None)
    part = None if parting is None else {
        "step": parting, "llama_cpp_gap": steps[parting]["gap"], "f32_gap": ref_long[parting]["gap"]}
    gaps = [s["gap"] for s in steps[:N_GEN]]
    print(f"{rel}: {os.path.getsize(path)} bytes; llama.cpp vs f32 max abs {err.max():.4f}, mean {err.mean():.5f}; "
          f"greedy gaps {gaps}")
    print(f"  types: {sorted(set(tensor_types(path).values()))}; long greedy parts at {part}; "
          f"smallest gap in the first 100 llama.cpp steps {min(s['gap'] for s in steps[:100]):.4f}; "
          f"{len(set(s['id'] for s in steps))} distinct ids in {N_LONG} steps")
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


def main():
    check_only = "--check" in sys.argv[1:]
    rng = np.random.default_rng(SEED)
    os.makedirs(DATA, exist_ok=True)
    vocab = vocabulary(rng)
    c = CONFIG
    w = weights(rng, c)
    teacher_ids = [BOS] + [int(x) for x in rng.integers(len(SPECIAL), N_VOCAB, N_TEACHER - 1)]
    if check_only:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "random-gemma4-f32.gguf")
            write(path, c, w, vocab)
            check_f32(path, teacher_ids)
        return
    f32 = os.path.join(DATA, "random-gemma4-f32.gguf")
    config = write(f32, c, w, vocab)
    check_f32(f32, teacher_ids)
    records = [record(f32, "tests/data/random-gemma4-f32.gguf", teacher_ids, config)]
    q8 = os.path.join(DATA, "random-gemma4-q8_0.gguf")
    quantize(f32, q8, llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0)
    records.append(record(q8, "tests/data/random-gemma4-q8_0.gguf", teacher_ids, config))
    q4 = os.path.join(DATA, "random-gemma4-q4_k.gguf")
    with tempfile.TemporaryDirectory() as tmp:
        trimmed = os.path.join(tmp, "trimmed-f32.gguf")
        write(trimmed, c, without_shared_kv(c, w), vocab)
        quantize(trimmed, q4, llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M)
    records.append(record(q4, "tests/data/random-gemma4-q4_k.gguf", teacher_ids, config))
    assert all(r["tokenize"] == records[0]["tokenize"] for r in records)

    out = {
        "made_with": f"llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx={N_CTX}, logits_all, "
                     "f16 KV cache, argmax; f32: numpy_gemma4.py (float64, exact GELU)",
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

#!/usr/bin/env python3
"""A random-weight gemma4 GGUF at the REAL dimensions of Gemma 4 E2B (text stack), for `wick bench` and
llama-bench: what a token costs in dispatches, weight bytes and time at full size. The numbers the model
computes are meaningless.

Run from the repository root with the venv that has llama-cpp-python (0.3.36 or newer: it knows gemma4),
numpy and gguf (gguf-py from llama.cpp's tree), after scripts/fetch-model.sh has put llama.cpp's
vocabulary files in models/vocab/:

    nice -n 10 /work/venv-llama/bin/python scripts/make-gemma4-shape.py
    nice -n 10 /work/venv-llama/bin/python scripts/make-gemma4-shape.py --layers 10 --shared 5   # a quick test

Files go to models/shape/ (git ignores models/): gemma-4-e2b.shape.Q4_K_M.gguf (with --layers N:
gemma-4-e2b-<N>l.shape.Q4_K_M.gguf). On the way it writes an F16 file as llama.cpp's converter writes
one (matrices F16, norms, layer scales and rope_freqs F32; 9.3 GB at full size) beside it, quantizes
that with llama.cpp's own quantizer (llama_model_quantize, LLAMA_FTYPE_MOSTLY_Q4_K_M: llama.cpp picks
Q4_K / Q6_K per tensor as for a real E2B: Q6_K for token_embd, which is also the head, and for
per_layer_token_embd, and keeps per_layer_model_proj F16) and deletes it unless --keep-f16. The F16
file is written tensor by tensor, the 4.7 GB per_layer_token_embd in slabs of rows, and the quantizer
works in slabs too, so memory stays well under 8 GB. Each matrix is one block of
random rows (std 1/sqrt(fan_in)) tiled to its full row count, one block per shape shared by the layers:
writing is disk-bound, quantizing takes minutes. At 10 layers (--layers 10 --shared 5: 1.59B parameters,
3.2 GB F16, 1.2 GB Q4_K_M) on 2 cores: 40 s to write, 126 s to quantize; the full 35 layers hold 4.63B
parameters (9.3 GB F16).

Layout: tensor names, shapes and metadata keys as llama.cpp's converter (conversion/gemma.py,
Gemma4Model) writes a Gemma 4 E2B checkpoint, the same as tests/goldens/make_random_gemma4.py writes
its toy: token_embd (tied: no output.weight), per_layer_token_embd, per_layer_model_proj,
per_layer_proj_norm, rope_freqs, output_norm, and per block attn_norm, attn_q, attn_k, attn_v,
attn_q_norm, attn_k_norm, attn_output, post_attention_norm, ffn_norm, ffn_gate, ffn_up, ffn_down,
post_ffw_norm, inp_gate, proj, post_norm, layer_output_scale. The KV-shared blocks carry no attn_k /
attn_v / attn_k_norm (they read an earlier block's cache), as Google's QAT exports and most published
GGUFs have them; --shared-kv-tensors writes them there too, as the original bf16 checkpoint has them.
The vocabulary, its merges, special ids and chat template are Gemma 4's own, copied from
models/vocab/ggml-vocab-gemma-4.gguf (262144 tokens).

Dimensions (the E2B text model as Wick's tests take it): hidden 1536, 35 layers, sliding_window_pattern
(4 sliding + 1 full) x 7, 8 query heads and 1 KV head on every layer, head size 256 on sliding layers
(rope.dimension_count_swa 256, freq_base_swa 1e4) and 512 on full ones (rope.dimension_count 512,
freq_base 1e6, rope_freqs = [1.0] * 64 + [1e30] * 192: proportional RoPE with partial factor 0.25),
sliding_window 512, FFN 6144 (12288 on the 20 KV-shared layers: use_double_wide_mlp), shared_kv_layers
20 (layers 15..34 read layer 13's cache if sliding, 14's if full), per-layer input 256, vocab 262144,
final_logit_softcapping 30, rms eps 1e-6, context 131072.
"""
import argparse
import math
import os
import sys
import time

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCH = "gemma4"
E2B = dict(n_embd=1536, n_layer=35, period=5, n_head=8, n_kv=1, hd_swa=256, hd_full=512, n_ff=6144,
           shared=20, n_pl=256, n_swa=512, rope_base=1e6, rope_base_swa=1e4, partial_full=0.25,
           softcap=30.0, n_ctx=131072)
TOKENIZER_KEYS = ["tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                  "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id",
                  "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                  "tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id", "tokenizer.chat_template",
                  "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.add_bos_token"]
SLAB_BYTES = 256 << 20  # rows of a big tensor written at a time


def copy_tokenizer(wr, path):
    """Gemma 4's tokenizer keys, as the vocabulary file has them. Returns the vocabulary size."""
    r = gguf.GGUFReader(path)
    assert r.fields["general.architecture"].contents() == ARCH, path
    for key in TOKENIZER_KEYS:
        f = r.fields[key]
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            wr.add_key_value(key, f.contents(), vtype, sub_type=f.types[-1])
        else:
            wr.add_key_value(key, f.contents(), vtype)
    return len(r.fields["tokenizer.ggml.tokens"].data)


def plan(m, n_vocab, shared_kv_tensors):
    """[(name, numpy shape (rows = ggml ne[1]), dtype, kind)] in the order written; kind: "mat" (random
    rows, F16), "norm" (gains), "scale" (layer_output_scale), "rope" (rope_freqs)."""
    d, L, npl = m["n_embd"], m["n_layer"], m["n_pl"]
    n0 = L - m["shared"]
    f16, f32 = np.float16, np.float32
    t = [("token_embd.weight", (n_vocab, d), f16, "mat"),
         ("per_layer_token_embd.weight", (n_vocab, L * npl), f16, "mat"),
         ("per_layer_model_proj.weight", (L * npl, d), f16, "mat"),
         ("per_layer_proj_norm.weight", (npl,), f32, "norm"),
         ("rope_freqs.weight", (m["hd_full"] // 2,), f32, "rope")]
    for l in range(L):
        p = f"blk.{l}."
        swa = l % m["period"] != m["period"] - 1
        hd = m["hd_swa"] if swa else m["hd_full"]
        ff = m["n_ff"] * (2 if l >= n0 else 1)
        t.append((p + "attn_norm.weight", (d,), f32, "norm"))
        t.append((p + "attn_q.weight", (m["n_head"] * hd, d), f16, "mat"))
        if l < n0 or shared_kv_tensors:
            t.append((p + "attn_k.weight", (m["n_kv"] * hd, d), f16, "mat"))
            t.append((p + "attn_v.weight", (m["n_kv"] * hd, d), f16, "mat"))
            t.append((p + "attn_k_norm.weight", (hd,), f32, "norm"))
        t.append((p + "attn_q_norm.weight", (hd,), f32, "norm"))
        t.append((p + "attn_output.weight", (d, m["n_head"] * hd), f16, "mat"))
        t.append((p + "post_attention_norm.weight", (d,), f32, "norm"))
        t.append((p + "ffn_norm.weight", (d,), f32, "norm"))
        t.append((p + "ffn_gate.weight", (ff, d), f16, "mat"))
        t.append((p + "ffn_up.weight", (ff, d), f16, "mat"))
        t.append((p + "ffn_down.weight", (d, ff), f16, "mat"))
        t.append((p + "post_ffw_norm.weight", (d,), f32, "norm"))
        t.append((p + "inp_gate.weight", (npl, d), f16, "mat"))
        t.append((p + "proj.weight", (d, npl), f16, "mat"))
        t.append((p + "post_norm.weight", (d,), f32, "norm"))
        t.append((p + "layer_output_scale.weight", (1,), f32, "scale"))
    t.append(("output_norm.weight", (d,), f32, "norm"))
    return t


def write_f16(path, m, vocab_path, shared_kv_tensors, rng):
    """The converter's F16 file, streamed. Returns the parameter count."""
    L, n0 = m["n_layer"], m["n_layer"] - m["shared"]
    wr = gguf.GGUFWriter(path, ARCH)
    wr.add_name(f"Gemma 4 E2B (random weights, real shape{'' if L == 35 else f', {L} layers'})")
    wr.add_block_count(L)
    wr.add_context_length(m["n_ctx"])
    wr.add_embedding_length(m["n_embd"])
    wr.add_feed_forward_length([m["n_ff"] * (2 if l >= n0 else 1) for l in range(L)])
    wr.add_head_count(m["n_head"])
    wr.add_head_count_kv(m["n_kv"])
    wr.add_rope_freq_base(m["rope_base"])
    wr.add_rope_freq_base_swa(m["rope_base_swa"])
    wr.add_layer_norm_rms_eps(1e-6)
    wr.add_key_length(m["hd_full"])
    wr.add_value_length(m["hd_full"])
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_final_logit_softcapping(m["softcap"])
    wr.add_sliding_window(m["n_swa"])
    wr.add_shared_kv_layers(m["shared"])
    wr.add_embedding_length_per_layer_input(m["n_pl"])
    wr.add_sliding_window_pattern([l % m["period"] != m["period"] - 1 for l in range(L)])
    wr.add_key_length_swa(m["hd_swa"])
    wr.add_value_length_swa(m["hd_swa"])
    wr.add_rope_dimension_count(m["hd_full"])
    wr.add_rope_dimension_count_swa(m["hd_swa"])
    wr.add_quantization_version(gguf.GGML_QUANT_VERSION)
    n_vocab = copy_tokenizer(wr, vocab_path)
    tensors = plan(m, n_vocab, shared_kv_tensors)
    for name, shape, dtype, _ in tensors:
        wr.add_tensor_info(name, shape, np.dtype(dtype), math.prod(shape) * np.dtype(dtype).itemsize)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_ti_data_to_file()
    fout = wr.fout[0]
    blocks = {}
    for name, shape, dtype, kind in tensors:
        wr.write_padding(fout, fout.tell())
        if kind == "mat":
            rows, cols = shape
            if shape not in blocks:  # one block of random rows per shape, tiled into a slab
                n = min(rows, 256)
                blocks[shape] = (rng.standard_normal((n, cols), dtype=np.float32) / np.sqrt(cols)).astype(np.float16)
                n_tile = min(-(-rows // n), max(1, SLAB_BYTES // blocks[shape].nbytes))
                blocks[shape] = np.tile(blocks[shape], (n_tile, 1))  # a slab of rows
            slab = blocks[shape]
            for r0 in range(0, rows, len(slab)):
                slab[:min(len(slab), rows - r0)].tofile(fout)
        elif kind == "norm":
            rng.uniform(0.6, 1.4, shape).astype(np.float32).tofile(fout)
        elif kind == "scale":
            rng.uniform(0.3, 1.0, shape).astype(np.float32).tofile(fout)
        else:
            n_turn = int(m["hd_full"] * m["partial_full"] / 2)
            np.array([1.0] * n_turn + [1e30] * (shape[0] - n_turn), dtype=np.float32).tofile(fout)
        wr.write_padding(fout, math.prod(shape) * np.dtype(dtype).itemsize)
    wr.close()
    return sum(math.prod(s) for _, s, _, _ in tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=E2B["n_layer"], help="block count (a multiple of 5; 35 is E2B)")
    ap.add_argument("--shared", type=int, default=E2B["shared"], help="KV-shared blocks at the end (20 in E2B)")
    ap.add_argument("--shared-kv-tensors", action="store_true",
                    help="also write the unused attn_k / attn_v / attn_k_norm of the KV-shared blocks")
    ap.add_argument("--vocab", default=os.path.join(ROOT, "models", "vocab", "ggml-vocab-gemma-4.gguf"))
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "shape"))
    ap.add_argument("--keep-f16", action="store_true", help="keep the F16 file the Q4_K_M one is made from")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=20261126)
    args = ap.parse_args()
    m = dict(E2B, n_layer=args.layers, shared=args.shared)
    n0 = m["n_layer"] - m["shared"]
    # llama.cpp's KV reuse needs a sliding layer at n0 - 2 and a full one at n0 - 1.
    assert m["n_layer"] % m["period"] == 0 and 2 <= n0 and n0 % m["period"] == 0, "layers/shared"
    if not os.path.exists(args.vocab):
        sys.exit(f"{args.vocab} is missing: scripts/fetch-model.sh fetches llama.cpp's vocabulary files")
    os.makedirs(args.out, exist_ok=True)
    stem = "gemma-4-e2b" if m["n_layer"] == E2B["n_layer"] else f"gemma-4-e2b-{m['n_layer']}l"
    f16 = os.path.join(args.out, f"{stem}.shape.F16.gguf")
    dst = os.path.join(args.out, f"{stem}.shape.Q4_K_M.gguf")
    t0 = time.time()
    n_params = write_f16(f16, m, args.vocab, args.shared_kv_tensors, np.random.default_rng(args.seed))
    print(f"{f16}: {os.path.getsize(f16) / 1e9:.2f} GB, {n_params / 1e9:.3f}B parameters, {time.time() - t0:.0f} s",
          flush=True)
    import llama_cpp  # only now: the F16 file needs no llama.cpp

    t0 = time.time()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = args.threads
    rc = llama_cpp.llama_model_quantize(f16.encode(), dst.encode(), params)
    assert rc == 0, f"llama_model_quantize returned {rc}"
    print(f"{dst}: {os.path.getsize(dst) / 1e9:.2f} GB, {time.time() - t0:.0f} s")
    if not args.keep_f16:
        os.remove(f16)


if __name__ == "__main__":
    main()

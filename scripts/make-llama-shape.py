#!/usr/bin/env python3
"""Random-weight llama GGUFs at the REAL dimensions of Llama 3.2 1B, Llama 3.1 8B or Qwen2.5 1.5B, for `wick bench`: what a token
costs in dispatches and weight bytes at full size. The numbers the model computes are meaningless.

Run from the repository root with a Python that has numpy and gguf (pip install numpy gguf):

    python scripts/make-llama-shape.py                  # Q4_0
    python scripts/make-llama-shape.py --type Q8_0
    python scripts/make-llama-shape.py --model 8b       # Llama 3.1 8B, Q4_0 (about 4.4 GB)
    python scripts/make-llama-shape.py --model qwen2.5-1.5b --type Q8_0   # its matrices, no biases

Files go to models/shape/ (git ignores models/):
- llama-3.2-1b.shape.<TYPE>.gguf   all 16 layers, 1,235,814,432 parameters (the real
                                   1,235,814,400 + 32 rope factors; Q4_0 698 MB, Q8_0 1316 MB).

Quant types: Q4_0 and Q8_0 only. Every matrix, token_embd included, is written in that type; the norm
gains and rope_freqs are F32. Q4_K and Q6_K are not offered: the gguf package (checked with gguf 0.19.0
from PyPI) has only dequantizers for the K types, and gguf.quants.quantize(x, Q4_K / Q6_K) raises
NotImplementedError. A K-quant copy can be made from the Q8_0 file with the project's own quantizer,
as scripts/make-shape-model.py --q4k does (`target/release/wick quantize IN OUT Q4_K`).

How the files are written
-------------------------
Tensor names, shapes and metadata keys are those llama.cpp's convert_hf_to_gguf.py (class LlamaModel)
writes for a llama, as tests/goldens/make_random_llama.py writes them. Matrices are written directly in
the chosen type: a block of 256 random rows per shape is quantized with gguf.quants.quantize and tiled
to the full row count, and layers share the tiled arrays (scripts/random_weights.py, which
scripts/make-shape-model.py uses too), so writing takes seconds and little memory. Norm gains are
random per layer. The tokenizer is the test models' 512-token byte-level gpt2 BPE
(tests/goldens/random_vocab.py, same seed, so the same tokens and merges), padded with UNUSED
"[PAD<i>]" tokens up to the real vocabulary size, so token_embd has the real shape (128256 x 2048).
The chat template is tests/goldens/chat_template/llama3.jinja. Embeddings are tied as in the real 1B model: there is no output.weight, token_embd is also the head;
the 8B file has its own output.weight, as the real one.

Configuration (meta-llama/Llama-3.2-1B, HF architecture LlamaForCausalLM, its config.json)
-----------------------------------------------------------------------------------------
  hidden 2048, layers 16, heads 32, kv heads 8, head_dim 64, intermediate 8192, vocab 128256,
  context (max_position_embeddings) 131072, rms eps 1e-5, rope theta 500000, tie_word_embeddings true,
  rope_scaling {rope_type llama3, factor 32, low_freq_factor 1, high_freq_factor 4,
  original_max_position_embeddings 8192}.
Metadata as the converter writes it: general.architecture llama, llama.block_count,
  llama.context_length, llama.embedding_length, llama.feed_forward_length, llama.attention.head_count,
  llama.attention.head_count_kv, llama.rope.freq_base, llama.attention.layer_norm_rms_epsilon,
  llama.rope.dimension_count (64), llama.attention.key_length / value_length (64: written by current
  converters because the config has head_dim), llama.vocab_size, general.file_type,
  general.quantization_version. llama3 rope scaling leaves no metadata key; it is the tensor
  rope_freqs.weight, head_dim/2 = 32 F32 factors that divide the rope frequencies, computed as
  LlamaModel.generate_extra_tensors in convert_hf_to_gguf.py computes them (rope_factors() below):
  freqs = 1 / base^(2i/dim); wavelen = 2 pi / freq; factor 1 where wavelen < 8192/4, factor 32 where
  wavelen > 8192/1, else 1 / ((1 - s)/32 + s) with s = (8192/wavelen - 1) / (4 - 1).
"""
import argparse
import math
import os
import time

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from random_weights import Weights, add_vocabulary, write_tensors  # noqa: E402

ARCH = "llama"
Q = gguf.GGMLQuantizationType
FILE_TYPES = {"Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}

MODELS = {
    # meta-llama/Llama-3.2-1B
    "1b": dict(
        name="llama-3.2-1b", title="Llama 3.2 1B (random weights, real shape)",
        n_embd=2048, n_layer=16, n_head=32, n_head_kv=8, head_dim=64, n_ff=8192, n_vocab=128256,
        n_ctx=131072, rope_base=500000.0, rms_eps=1e-5, tied=True,
        rope_scaling=dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original_context=8192),
    ),
    # meta-llama/Llama-3.1-8B: a head of its own (tie_word_embeddings false), rope factor 8
    "8b": dict(
        name="llama-3.1-8b", title="Llama 3.1 8B (random weights, real shape)",
        n_embd=4096, n_layer=32, n_head=32, n_head_kv=8, head_dim=128, n_ff=14336, n_vocab=128256,
        n_ctx=131072, rope_base=500000.0, rms_eps=1e-5, tied=False,
        rope_scaling=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_context=8192),
    ),
    # Qwen/Qwen2.5-1.5B's matrices on the llama block (Qwen2's q/k/v biases left out): what its
    # decode reads and dispatches, tied head, no rope scaling
    "qwen2.5-1.5b": dict(
        name="qwen2.5-1.5b", title="Qwen2.5 1.5B layout (random weights, llama block)",
        n_embd=1536, n_layer=28, n_head=12, n_head_kv=2, head_dim=128, n_ff=8960, n_vocab=151936,
        n_ctx=32768, rope_base=1000000.0, rms_eps=1e-6, tied=True, rope_scaling=None,
    ),
}



def rope_factors(m):
    """llama3 rope scaling as rope_freqs.weight: convert_hf_to_gguf.py LlamaModel.generate_extra_tensors."""
    s, dim = m["rope_scaling"], m["head_dim"]
    freqs = 1.0 / (np.float32(m["rope_base"]) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))
    factor, low, high, old = s["factor"], s["low_freq_factor"], s["high_freq_factor"], s["original_context"]
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def build(m, qtype, rng):
    """name -> (array, raw_dtype or None), in llama.cpp's order."""
    W = Weights(qtype, rng)
    d, hd = m["n_embd"], m["head_dim"]
    # Tied: token_embd is also the head, so small entries (std 0.1) as make-shape-model.py does.
    t = {"token_embd.weight": (W.mat((m["n_vocab"], d), math.sqrt(d) * 0.1), qtype)}
    if m["rope_scaling"]:
        t["rope_freqs.weight"] = (rope_factors(m), None)
    for l in range(m["n_layer"]):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = (W.norm(d), None)
        t[p + "attn_q.weight"] = (W.mat((m["n_head"] * hd, d), 2.0), qtype)
        t[p + "attn_k.weight"] = (W.mat((m["n_head_kv"] * hd, d), 2.0), qtype)
        t[p + "attn_v.weight"] = (W.mat((m["n_head_kv"] * hd, d)), qtype)
        t[p + "attn_output.weight"] = (W.mat((d, m["n_head"] * hd)), qtype)
        t[p + "ffn_norm.weight"] = (W.norm(d), None)
        t[p + "ffn_gate.weight"] = (W.mat((m["n_ff"], d)), qtype)
        t[p + "ffn_up.weight"] = (W.mat((m["n_ff"], d)), qtype)
        t[p + "ffn_down.weight"] = (W.mat((d, m["n_ff"])), qtype)
    t["output_norm.weight"] = (W.norm(d) * 2.5, None)
    if not m["tied"]:
        t["output.weight"] = (W.mat((m["n_vocab"], d)), qtype)
    return t


def write(path, m, type_name, rng):
    qtype = Q[type_name]
    tensors = build(m, qtype, rng)

    wr = gguf.GGUFWriter(path, ARCH)
    wr.add_name(m["title"])
    wr.add_file_type(FILE_TYPES[type_name])
    wr.add_quantization_version(gguf.GGML_QUANT_VERSION)
    wr.add_context_length(m["n_ctx"])
    wr.add_embedding_length(m["n_embd"])
    wr.add_block_count(m["n_layer"])
    wr.add_feed_forward_length(m["n_ff"])
    wr.add_head_count(m["n_head"])
    wr.add_head_count_kv(m["n_head_kv"])
    wr.add_key_length(m["head_dim"])
    wr.add_value_length(m["head_dim"])
    wr.add_rope_dimension_count(m["head_dim"])
    wr.add_rope_freq_base(m["rope_base"])
    wr.add_layer_norm_rms_eps(m["rms_eps"])
    add_vocabulary(wr, m["n_vocab"], bos=True)
    # The chat template of the tiny files, so that the chat page and the package can talk to it.
    with open(os.path.join(ROOT, "tests", "goldens", "chat_template", "llama3.jinja")) as f:
        wr.add_chat_template(f.read())
    return write_tensors(wr, tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--type", choices=sorted(FILE_TYPES), default="Q4_0",
                    help="type of every matrix, token_embd included (norms and rope_freqs stay F32)")
    ap.add_argument("--model", choices=sorted(MODELS), default="1b")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "shape"))
    ap.add_argument("--seed", type=int, default=20261123)
    args = ap.parse_args()
    M = MODELS[args.model]
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{M['name']}.shape.{args.type}.gguf")
    t0 = time.time()
    n_params = write(path, M, args.type, np.random.default_rng(args.seed))
    print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, {n_params / 1e9:.4f}B parameters "
          f"({n_params}), {M['n_layer']} layers, {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

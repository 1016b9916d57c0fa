#!/usr/bin/env python3
"""A tiny random-weight Gemma 3 vision projector in llama.cpp's exact mmproj layout (what its converter
writes for Gemma 3: `clip` architecture, projector type gemma3), a random Gemma 3 text model of the
projection's width for it to feed, a test image, and the image's embeddings from llama.cpp (libmtmd:
preprocessing, encoder and projector) and from numpy_siglip's f64 reference: tests/vision.rs checks Wick's
against both.

Run from the repository root with numpy, Pillow and llama.cpp's gguf package, and llama.cpp built with
libmtmd (its tools/mtmd) into LLAMA_CPP_BUILD:

    LLAMA_CPP=path/to/llama.cpp LLAMA_CPP_BUILD=path/to/build python tests/goldens/make_random_gemma3_vision.py

The projector: 56 x 56 pixels in 7 x 7 patches (an 8 x 8 grid), width 64, 4 heads, n_ff 120, 2 layers,
pooled 2 x 2 (clip.vision.projector.scale_factor, as llama.cpp's tiny test model has it) into 16 image
tokens of width 128; F16 matrices, F32 patch bias and positions, mean and std 0.5 as Gemma 3's. A patch
(147 values) and the MLP (120) are not multiples of 32, as SigLIP's 588 and 4304 are not. The image is
100 x 75 (random colours over gradients), so preprocessing scales it down to 56 x 42 and pads it.
"""
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_siglip  # noqa: E402
from random_vocab import N_VOCAB, vocabulary  # noqa: E402
from vision_goldens import (PICTURE, ROOT, add_tower, bias, gain, golden, llama_cpp_run, mat,  # noqa: E402
                            picture, row_cosines, rounded, write_gguf, write_golden)

SEED = 20261129
IMAGE, PATCH, D, N_HEAD, N_FF, N_LAYER, MERGE, EPS = 56, 7, 64, 4, 120, 2, 2, 1e-6
TEXT_EMBD = 128

MMPROJ = "tests/data/random-gemma3-mmproj.gguf"
TEXT = "tests/data/random-gemma3.gguf"
GOLDEN = "tests/goldens/random-gemma3-vision.json"
# The image at mtmd's marker, between <start_of_image> and <end_of_image>; BOS added.
PROMPT = "look at <__media__> and tell"
N_GREEDY = 12


# The projector's shape: this file's tiny one; scripts/make-siglip-shape.py writes Gemma 3's own.
TINY = dict(name="tiny-random-gemma3-vision", image=IMAGE, patch=PATCH, d=D, n_head=N_HEAD, n_ff=N_FF,
            n_layer=N_LAYER, merge=MERGE, text=TEXT_EMBD)


def mmproj(path, rng, shape=TINY):
    image, patch, d, n_ff, text = shape["image"], shape["patch"], shape["d"], shape["n_ff"], shape["text"]
    n_patch = (image // patch) ** 2
    w = {
        "v.patch_embd.weight": (rng.standard_normal((d, 3, patch, patch)) / np.sqrt(3 * patch * patch)).astype(np.float16),
        "v.patch_embd.bias": bias(rng, d),
        "v.position_embd.weight": (0.5 * rng.standard_normal((n_patch, d))).astype(np.float32),
    }
    for i in range(shape["n_layer"]):
        p = f"v.blk.{i}."
        for n in ["attn_q", "attn_k", "attn_v", "attn_out"]:
            w[p + n + ".weight"] = mat(rng, d, d, 2.0 if n in ("attn_q", "attn_k") else 1.0)
            w[p + n + ".bias"] = bias(rng, d)
        w[p + "ln1.weight"], w[p + "ln1.bias"] = gain(rng, d), bias(rng, d)
        w[p + "ln2.weight"], w[p + "ln2.bias"] = gain(rng, d), bias(rng, d)
        w[p + "ffn_up.weight"], w[p + "ffn_up.bias"] = mat(rng, n_ff, d), bias(rng, n_ff)
        w[p + "ffn_down.weight"], w[p + "ffn_down.bias"] = mat(rng, d, n_ff), bias(rng, d)
    w["v.post_ln.weight"], w["v.post_ln.bias"] = gain(rng, d), bias(rng, d)
    w["mm.soft_emb_norm.weight"] = gain(rng, d)
    # Gemma 3's projection is stored as the product reads it: (vision width, text width).
    w["mm.input_projection.weight"] = (rng.standard_normal((d, text)) / np.sqrt(d)).astype(np.float16)

    wr = gguf.GGUFWriter(path, "clip")
    wr.add_name(shape["name"])
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_bool("clip.has_vision_encoder", True)
    wr.add_clip_projector_type(gguf.VisionProjectorType.GEMMA3)
    wr.add_vision_image_size(image)
    add_tower(wr, shape)
    wr.add_vision_projection_dim(text)
    wr.add_vision_image_mean([0.5, 0.5, 0.5])
    wr.add_vision_image_std([0.5, 0.5, 0.5])
    wr.add_vision_attention_layernorm_eps(EPS)
    wr.add_vision_use_gelu(True)
    if shape["merge"] != 4:  # llama.cpp's converter writes it only where it is not Gemma 3's 4
        wr.add_vision_projector_scale_factor(shape["merge"])
    write_gguf(wr, w)


def text_model(path, rng):
    """A Gemma 3 text model of the projection's width: 2 layers, 4 heads over 2 kv heads of 32, n_ff
    256, q and k normed per head, post-norms, sliding windows of 16, the vocabulary of random_vocab.py
    with Gemma 3's image markers as its last two tokens, a chat template that writes the messages'
    text alone."""
    n_head, n_kv, hd, n_ff = 4, 2, 32, 256
    tokens, types, merges = vocabulary(rng)
    # The last two merges made the tokens the markers replace; no later merge builds on them.
    tokens[-3], tokens[-2] = "<start_of_image>", "<end_of_image>"
    merges = merges[:-2]
    types[-3] = types[-2] = gguf.TokenType.CONTROL
    w = {"token_embd.weight": (rng.standard_normal((N_VOCAB, TEXT_EMBD)) * 0.5 / np.sqrt(TEXT_EMBD)).astype(np.float16)}
    for i in range(2):
        p = f"blk.{i}."
        w[p + "attn_norm.weight"] = gain(rng, TEXT_EMBD)
        w[p + "attn_q.weight"] = mat(rng, n_head * hd, TEXT_EMBD, 2.0)
        w[p + "attn_k.weight"] = mat(rng, n_kv * hd, TEXT_EMBD, 2.0)
        w[p + "attn_v.weight"] = mat(rng, n_kv * hd, TEXT_EMBD)
        w[p + "attn_q_norm.weight"] = gain(rng, hd)
        w[p + "attn_k_norm.weight"] = gain(rng, hd)
        w[p + "attn_output.weight"] = mat(rng, TEXT_EMBD, n_head * hd)
        w[p + "post_attention_norm.weight"] = gain(rng, TEXT_EMBD)
        w[p + "ffn_norm.weight"] = gain(rng, TEXT_EMBD)
        w[p + "ffn_gate.weight"] = mat(rng, n_ff, TEXT_EMBD)
        w[p + "ffn_up.weight"] = mat(rng, n_ff, TEXT_EMBD)
        w[p + "ffn_down.weight"] = mat(rng, TEXT_EMBD, n_ff)
        w[p + "post_ffw_norm.weight"] = gain(rng, TEXT_EMBD)
    w["output_norm.weight"] = gain(rng, TEXT_EMBD)
    wr = gguf.GGUFWriter(path, "gemma3")
    wr.add_name("tiny-random")
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_context_length(256)
    wr.add_embedding_length(TEXT_EMBD)
    wr.add_block_count(2)
    wr.add_feed_forward_length(n_ff)
    wr.add_head_count(n_head)
    wr.add_head_count_kv(n_kv)
    wr.add_key_length(hd)
    wr.add_value_length(hd)
    wr.add_rope_freq_base(10000.0)
    wr.add_layer_norm_rms_eps(EPS)
    wr.add_sliding_window(16)
    wr.add_vocab_size(N_VOCAB)
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    wr.add_bos_token_id(N_VOCAB - 1)
    wr.add_eos_token_id(N_VOCAB - 1)
    wr.add_add_bos_token(True)
    # The messages' text as it is, so a chat request renders to the golden's prompt.
    wr.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    write_gguf(wr, w)


def main():
    os.chdir(ROOT)
    rng = np.random.default_rng(SEED)
    mmproj(MMPROJ, rng)
    text_model(TEXT, rng)
    picture(PICTURE, rng, 100, 75, (2.5, 3.4, 1.4))
    meta, w = numpy_siglip.load(MMPROJ)
    ref = numpy_siglip.encode(meta, w, numpy_siglip.preprocess(meta, PICTURE))
    ours, prompt, logits, greedy = llama_cpp_run(TEXT, MMPROJ, PICTURE, PROMPT, N_GREEDY)
    cos = row_cosines(ref, ours)
    print(f"{ref.shape[0]} image tokens of {ref.shape[1]}; llama.cpp against f64: cosine min {cos.min():.6f}, "
          f"max abs {np.abs(ref - ours).max():.5f}, embedding std {ref.std():.3f}")
    out = {
        **golden("numpy_siglip.py", SEED, MMPROJ, TEXT, PROMPT, prompt, logits, greedy),
        "llama_cpp": rounded(ours),
        "f64": rounded(ref),
    }
    print(f"prompt {prompt}; greedy {greedy}")
    write_golden(GOLDEN, out)


if __name__ == "__main__":
    main()

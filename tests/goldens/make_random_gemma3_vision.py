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
import json
import os
import subprocess
import sys

import gguf
import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_siglip  # noqa: E402
from random_vocab import N_VOCAB, vocabulary  # noqa: E402

SEED = 20261129
IMAGE, PATCH, D, N_HEAD, N_FF, N_LAYER, MERGE, EPS = 56, 7, 64, 4, 120, 2, 2, 1e-6
TEXT_EMBD = 128

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MMPROJ = "tests/data/random-gemma3-mmproj.gguf"
TEXT = "tests/data/random-gemma3.gguf"
PICTURE = "tests/data/vision-test.png"
GOLDEN = "tests/goldens/random-gemma3-vision.json"
# The image at mtmd's marker, between <start_of_image> and <end_of_image>; BOS added.
PROMPT = "look at <__media__> and tell"
N_GREEDY = 12


def mat(rng, rows, cols, scale=1.0):
    return (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float16)


def vec(rng, n, scale=0.1):
    return (rng.standard_normal(n) * scale).astype(np.float32)


def gain(rng, n):
    return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)


# The projector's shape: this file's tiny one; scripts/make-siglip-shape.py writes Gemma 3's own.
TINY = dict(name="tiny-random-gemma3-vision", image=IMAGE, patch=PATCH, d=D, n_head=N_HEAD, n_ff=N_FF,
            n_layer=N_LAYER, merge=MERGE, text=TEXT_EMBD)


def mmproj(path, rng, shape=TINY):
    image, patch, d, n_ff, text = shape["image"], shape["patch"], shape["d"], shape["n_ff"], shape["text"]
    n_patch = (image // patch) ** 2
    w = {
        "v.patch_embd.weight": (rng.standard_normal((d, 3, patch, patch)) / np.sqrt(3 * patch * patch)).astype(np.float16),
        "v.patch_embd.bias": vec(rng, d),
        "v.position_embd.weight": (0.5 * rng.standard_normal((n_patch, d))).astype(np.float32),
    }
    for i in range(shape["n_layer"]):
        p = f"v.blk.{i}."
        for n in ["attn_q", "attn_k", "attn_v", "attn_out"]:
            w[p + n + ".weight"] = mat(rng, d, d, 2.0 if n in ("attn_q", "attn_k") else 1.0)
            w[p + n + ".bias"] = vec(rng, d)
        w[p + "ln1.weight"], w[p + "ln1.bias"] = gain(rng, d), vec(rng, d)
        w[p + "ln2.weight"], w[p + "ln2.bias"] = gain(rng, d), vec(rng, d)
        w[p + "ffn_up.weight"], w[p + "ffn_up.bias"] = mat(rng, n_ff, d), vec(rng, n_ff)
        w[p + "ffn_down.weight"], w[p + "ffn_down.bias"] = mat(rng, d, n_ff), vec(rng, d)
    w["v.post_ln.weight"], w["v.post_ln.bias"] = gain(rng, d), vec(rng, d)
    w["mm.soft_emb_norm.weight"] = gain(rng, d)
    # Gemma 3's projection is stored as the product reads it: (vision width, text width).
    w["mm.input_projection.weight"] = (rng.standard_normal((d, text)) / np.sqrt(d)).astype(np.float16)

    wr = gguf.GGUFWriter(path, "clip")
    wr.add_name(shape["name"])
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_bool("clip.has_vision_encoder", True)
    wr.add_clip_projector_type(gguf.VisionProjectorType.GEMMA3)
    wr.add_vision_image_size(image)
    wr.add_vision_patch_size(patch)
    wr.add_vision_embedding_length(d)
    wr.add_vision_feed_forward_length(n_ff)
    wr.add_vision_block_count(shape["n_layer"])
    wr.add_vision_head_count(shape["n_head"])
    wr.add_vision_projection_dim(text)
    wr.add_vision_image_mean([0.5, 0.5, 0.5])
    wr.add_vision_image_std([0.5, 0.5, 0.5])
    wr.add_vision_attention_layernorm_eps(EPS)
    wr.add_vision_use_gelu(True)
    if shape["merge"] != 4:  # llama.cpp's converter writes it only where it is not Gemma 3's 4
        wr.add_vision_projector_scale_factor(shape["merge"])
    for name, t in w.items():
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


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
    for name, t in w.items():
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def picture(path, rng):
    y, x = np.mgrid[0:75, 0:100]
    base = np.stack([x * 2.5, y * 3.4, (x + y) * 1.4], -1)
    noise = rng.integers(0, 90, (75, 100, 3))
    Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8)).save(path)


def llama_cpp_run():
    """The image's embeddings, the prompt's tokens, the logits after it and the greedy reply, from
    libmtmd and llama.cpp, through tests/goldens/mtmd_embed.cpp."""
    src, build = os.environ["LLAMA_CPP"], os.environ["LLAMA_CPP_BUILD"]
    exe = os.path.join(build, "mtmd_embed")
    subprocess.run(
        ["c++", "-O2", "-std=c++17", os.path.join(ROOT, "tests/goldens/mtmd_embed.cpp"), "-o", exe,
         f"-I{src}/include", f"-I{src}/ggml/include", f"-I{src}/tools/mtmd",
         f"-L{build}/bin", "-lmtmd", "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{build}/bin"],
        check=True)
    out = subprocess.run([exe, TEXT, MMPROJ, PICTURE, PROMPT, str(N_GREEDY)], check=True, capture_output=True,
                         text=True, cwd=ROOT)
    lines = [line.split() for line in out.stdout.strip().splitlines()]
    embd = np.array([[float(v) for v in l[1:]] for l in lines if l[0] == "embd"])
    prompt = next([int(v) for v in l[1:]] for l in lines if l[0] == "prompt")
    logits = next([round(float(v), 4) for v in l[1:]] for l in lines if l[0] == "logits")
    greedy = [{"id": int(l[1]), "gap": round(float(l[2]), 4)} for l in lines if l[0] == "greedy"]
    return embd, prompt, logits, greedy


def main():
    os.chdir(ROOT)
    rng = np.random.default_rng(SEED)
    mmproj(MMPROJ, rng)
    text_model(TEXT, rng)
    picture(PICTURE, rng)
    meta, w = numpy_siglip.load(MMPROJ)
    ref = numpy_siglip.encode(meta, w, numpy_siglip.preprocess(meta, PICTURE))
    ours, prompt, logits, greedy = llama_cpp_run()
    cos = (ref * ours).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(ours, axis=1)
    print(f"{ref.shape[0]} image tokens of {ref.shape[1]}; llama.cpp against f64: cosine min {cos.min():.6f}, "
          f"max abs {np.abs(ref - ours).max():.5f}, embedding std {ref.std():.3f}")
    out = {
        "made_with": "llama.cpp b11312 libmtmd (CPU, mtmd_encode_chunk) and tests/goldens/numpy_siglip.py",
        "seed": SEED,
        "mmproj": MMPROJ,
        "text_model": TEXT,
        "image": PICTURE,
        "prompt_text": PROMPT,
        "prompt_ids": prompt,
        "first_logits": logits,
        "greedy": greedy,
        "llama_cpp": [[round(float(v), 5) for v in row] for row in ours],
        "f64": [[round(float(v), 5) for v in row] for row in ref],
    }
    with open(GOLDEN, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"prompt {prompt}; greedy {greedy}")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()

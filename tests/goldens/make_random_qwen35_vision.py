#!/usr/bin/env python3
"""A tiny random-weight Qwen3.5 vision projector in llama.cpp's exact mmproj layout (what its converter,
conversion/qwen3vl.py Qwen3VLVisionModel, writes for a Qwen3.5 model: `clip` architecture,
clip.projector_type qwen3vl_merger), and the test images' embeddings from llama.cpp (libmtmd:
preprocessing, encoder and projector) and from numpy_qwen3vl's f64 reference, with llama.cpp's reading
of a prompt around the first image by the random Qwen3.5 text model of tests/data/random-qwen35-f16.gguf
(make_random_qwen35.py; not rewritten here): Wick's Qwen3.5 vision tests check Wick's against them.

Run from the repository root with numpy, Pillow and llama.cpp's gguf package, and llama.cpp built with
libmtmd (its tools/mtmd) into LLAMA_CPP_BUILD:

    LLAMA_CPP=path/to/llama.cpp LLAMA_CPP_BUILD=path/to/build python tests/goldens/make_random_qwen35_vision.py

The projector: patches of 8 x 8 pixels, width 64, 4 heads of 16, n_ff 96 (not a multiple of 32), 2
layers, each 2 x 2 patches merged (clip.vision.spatial_merge_size 2) into a token of width 128, the text
model's, by an MLP 256 -> 256 -> 128. A learned position table of 8 x 8 rows (clip.vision.image_size 64 =
8 patches of 8, as the converter derives it from num_position_embeddings), resized to each image's grid
of patches. F16 matrices and the two patch kernels (the Conv3D's two time steps, split as the converter
splits them); F32 biases, norms and position table. Mean and std 0.5, LayerNorm eps 1e-6 (the converter
writes the text model's rms_norm_eps), clip.use_gelu true, and clip.vision.is_deepstack_layers all false
(the converter writes the array whatever the model: Qwen3.5 has no deepstack_visual_indexes; llama.cpp
does not read the key, it looks for v.deepstack.* tensors, and there are none).

An image gives between 8 and 4096 tokens on a canvas whose sides are multiples of 16 pixels (patch *
merge), each side the image's rounded to one; vision-test.png (100 x 75, written by
make_random_gemma3_vision.py) scaled to 96 x 72, centered on a 96 x 80 canvas (4 black rows above and
below; 12 x 10 patches, 6 x 5 = 30 tokens); vision-test-tall.png (37 x 120, written by
make_random_gemma4_vision.py) to 32 x 104 on 32 x 128 (12 black rows above and below; 4 x 16 patches,
2 x 8 = 16 tokens): both sides shrink, where Pillow's own resize takes its two passes in the other order
and moves a third of the values by up to 7 levels (1 - cosine 4e-5 here), so the reference resamples as
llama.cpp does (numpy_gemma4v.resize_bicubic). A third case reads vision-test.png with a budget of 48 to
64 tokens, as llama.cpp's --image-min-tokens 48 --image-max-tokens 64 set it: 30 tokens are too few, so
both sides grow by sqrt(48 * 256 / (100 * 75)) = 1.28 and are ceiled to multiples of 16: 128 x 96, the
image scaled to fill it (16 x 12 patches, 8 x 6 = 48 tokens). The position table (8 x 8) is stretched in every case and
shrunk in one (the tall image's 4 columns), and the run prints how far the embeddings move without the
rotation, with the rotation's row and column swapped, and with the table resized by half-pixel rather
than aligned-corner sampling: each of these is a mistake the goldens catch.

The text model has no image marker tokens (Qwen's are <|vision_start|> and <|vision_end|>): mtmd writes
them as text around the image's embeddings, which llama.cpp and Wick then read as plain text. The image's
tokens take M-RoPE positions (t, t + row, t + col) in the merged grid and the text after it resumes at
t + max(rows, cols); llama.cpp applies that (the golden records its logits, not a numpy text model).
A fourth case puts both test images in one prompt (TWO_PROMPT): the second image's positions start where
the text after the first has moved them, which is where a span of several images goes wrong.
"""
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_qwen3vl  # noqa: E402
from vision_goldens import (PICTURE, ROOT, TALL, add_tower, bias, gain, golden, llama_cpp_run, mat,  # noqa: E402
                            row_cosines, rounded, write_gguf, write_golden)

SEED = 20261214
PATCH, D, N_HEAD, N_FF, N_LAYER, SIDE, MERGE, EPS = 8, 64, 4, 96, 2, 8, 2, 1e-6
TEXT_EMBD = 128

MMPROJ = "tests/data/random-qwen35-mmproj.gguf"
TEXT = "tests/data/random-qwen35-f16.gguf"
# The third case's token budget (mtmd_context_params.image_min_tokens / image_max_tokens).
BUDGET_MIN_TOKENS, BUDGET_MAX_TOKENS = 48, 64
GOLDEN = "tests/goldens/random-qwen35-vision.json"
# The image at mtmd's marker, between <|vision_start|> and <|vision_end|> written as text; BOS added
# where the text model says so.
PROMPT = "look at <__media__> and tell"
# 73 prompt tokens (30 of them the image's) and the reply fit mtmd_embed.cpp's context of 128.
N_GREEDY = 12
# Both test images, 30 and 16 tokens, in one prompt; it and its reply fit the context of 128 too.
TWO_PROMPT = "look at <__media__> then <__media__> and tell"
N_GREEDY_TWO = 8


# The projector's shape.
TINY = dict(name="tiny-random-qwen35-vision", patch=PATCH, d=D, n_head=N_HEAD, n_ff=N_FF, n_layer=N_LAYER,
            side=SIDE, merge=MERGE, text=TEXT_EMBD)


def mmproj(path, rng, shape=TINY):
    patch, d, n_ff, side, merge, text = (shape[k] for k in ("patch", "d", "n_ff", "side", "merge", "text"))
    n_layer = shape["n_layer"]
    fan = 3 * patch * patch
    w = {
        # The Conv3D weight (d, 3, 2, p, p) split along time into two (d, 3, p, p) kernels, as the
        # converter splits it; its bias beside them.
        "v.patch_embd.weight": (rng.standard_normal((d, 3, patch, patch)) / np.sqrt(fan)).astype(np.float16),
        "v.patch_embd.weight.1": (rng.standard_normal((d, 3, patch, patch)) / np.sqrt(fan)).astype(np.float16),
        "v.patch_embd.bias": bias(rng, d, 0.3),
        # side * side rows, row y * side + x. As large as the patch embeddings, so that where the
        # resized table samples shows.
        "v.position_embd.weight": (0.8 * rng.standard_normal((side * side, d))).astype(np.float32),
    }
    for i in range(n_layer):
        p = f"v.blk.{i}."
        w[p + "ln1.weight"] = gain(rng, d)
        w[p + "ln1.bias"] = bias(rng, d)
        # q, k and v stacked (3 d rows). q and k at 1.6 / sqrt(d): scores q.k / sqrt(16) of standard
        # deviation about 2.5, attention neither uniform nor one-hot.
        w[p + "attn_qkv.weight"] = np.concatenate([mat(rng, d, d, 1.6), mat(rng, d, d, 1.6), mat(rng, d, d)])
        w[p + "attn_qkv.bias"] = bias(rng, 3 * d, 0.2)
        w[p + "attn_out.weight"] = mat(rng, d, d)
        w[p + "attn_out.bias"] = bias(rng, d)
        w[p + "ln2.weight"] = gain(rng, d)
        w[p + "ln2.bias"] = bias(rng, d)
        w[p + "ffn_up.weight"] = mat(rng, n_ff, d)
        w[p + "ffn_up.bias"] = bias(rng, n_ff)
        w[p + "ffn_down.weight"] = mat(rng, d, n_ff)
        w[p + "ffn_down.bias"] = bias(rng, d)
    # The merger: its LayerNorm (visual.merger.norm, written as v.post_ln), then linear_fc1 and
    # linear_fc2 (written as mm.0 and mm.2) over each token's 4 patches concatenated.
    w["v.post_ln.weight"] = gain(rng, d)
    w["v.post_ln.bias"] = bias(rng, d)
    w["mm.0.weight"] = mat(rng, merge * merge * d, merge * merge * d)
    w["mm.0.bias"] = bias(rng, merge * merge * d)
    w["mm.2.weight"] = mat(rng, text, merge * merge * d, 1.5)
    w["mm.2.bias"] = bias(rng, text)

    wr = gguf.GGUFWriter(path, "clip")
    wr.add_type(gguf.GGUFType.MMPROJ)
    wr.add_name(shape["name"])
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_clip_has_vision_encoder(True)
    wr.add_vision_projection_dim(text)
    # As the converter computes it when the vision config has no image_size: sqrt(positions) * patch.
    wr.add_vision_image_size(side * patch)
    add_tower(wr, shape)
    wr.add_vision_image_mean([0.5, 0.5, 0.5])
    wr.add_vision_image_std([0.5, 0.5, 0.5])
    # clip.projector_type (the converter's add_clip_projector_type for a vision-only mmproj).
    wr.add_clip_projector_type(gguf.VisionProjectorType.QWEN3VL)
    # clip.use_gelu: tanh GELU in llama.cpp's encoder FFN (Qwen3.5's hidden_act gelu_pytorch_tanh).
    wr.add_vision_use_gelu(True)
    wr.add_vision_spatial_merge_size(merge)
    wr.add_vision_attention_layernorm_eps(EPS)
    wr.add_vision_is_deepstack_layers([False] * n_layer)
    write_gguf(wr, w)


def reference(meta, w, image, **budget):
    """numpy_qwen3vl's embeddings of the image, its grid of tokens and of patches (each {cols, rows}),
    its preprocessed pixels and the encoder's attention statistics. budget: preprocess's min_tokens /
    max_tokens, where not the projector's own."""
    pixels, (cols, rows) = numpy_qwen3vl.preprocess(meta, image, **budget)
    stats = {}
    ref = numpy_qwen3vl.encode(meta, w, pixels, stats)
    merge = numpy_qwen3vl.merge_of(meta)
    grid = {"cols": cols // merge, "rows": rows // merge}
    return ref, grid, {"cols": cols, "rows": rows}, pixels, stats


def resize_axis_half_pixel(n_in, n_out):
    """Bilinear weights sampling at pixel centres (align_corners=False): the mistake the aligned corners
    guard against."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        t = min(max((i + 0.5) * n_in / n_out - 0.5, 0.0), n_in - 1)
        i0 = min(int(np.floor(t)), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        m[i, i0] += 1 - (t - i0)
        m[i, i1] += t - i0
    return m


def sensitivity(meta, w, pixels, ref):
    """The smallest row cosine between ref and numpy_qwen3vl's embeddings with one part done wrong."""
    rope, resize = numpy_qwen3vl.rope_vision, numpy_qwen3vl.resize_axis
    variants = {
        "no rotation": ("rope_vision", lambda x, row, col: x),
        "rotation by (col, row)": ("rope_vision", lambda x, row, col: rope(x, col, row)),
        "half-pixel table": ("resize_axis", resize_axis_half_pixel),
    }
    out = {}
    for name, (attr, fn) in variants.items():
        setattr(numpy_qwen3vl, attr, fn)
        try:
            alt = numpy_qwen3vl.encode(meta, w, pixels)
        finally:
            numpy_qwen3vl.rope_vision, numpy_qwen3vl.resize_axis = rope, resize
        out[name] = float(row_cosines(ref, alt).min())
    return out


def compare(image, grid, patch_grid, ref, ours, stats, moved):
    assert ref.shape == ours.shape, (ref.shape, ours.shape)
    cos = row_cosines(ref, ours)
    print(f"{image}: {patch_grid['cols']} x {patch_grid['rows']} patches, {grid['cols']} x {grid['rows']} = "
          f"{ref.shape[0]} image tokens of {ref.shape[1]}; llama.cpp against f64: cosine min {cos.min():.7f}, "
          f"max abs {np.abs(ref - ours).max():.5f}, embedding std {ref.std():.3f}")
    print("  mean largest attention weight per layer: "
          + ", ".join(f"{a:.3f}" for a in stats["attention_max"])
          + f" (uniform {1 / (4 * ref.shape[0]):.3f})")
    print("  f64 with one part wrong, cosine min: " + ", ".join(f"{k} {v:.4f}" for k, v in moved.items()))
    assert cos.min() >= 0.99999, "llama.cpp and the f64 reference disagree"
    # Each mistake moves some token far more than llama.cpp's rounding does.
    assert max(moved.values()) < 0.999, "a part of the encoder barely matters"


def case(meta, w, image, n_greedy, min_tokens=-1, max_tokens=-1):
    budget = {} if min_tokens == -1 else {"min_tokens": min_tokens, "max_tokens": max_tokens}
    ref, grid, patch_grid, pixels, stats = reference(meta, w, image, **budget)
    ours, prompt, logits, greedy = llama_cpp_run(TEXT, MMPROJ, image, PROMPT, n_greedy, min_tokens, max_tokens)
    label = image if not budget else f"{image} (tokens {min_tokens} to {max_tokens})"
    compare(label, grid, patch_grid, ref, ours, stats, sensitivity(meta, w, pixels, ref))
    record = {
        "image": image,
        "grid": grid,
        "patch_grid": patch_grid,
        "n_tokens": int(ref.shape[0]),
        "llama_cpp": rounded(ours),
        "f64": rounded(ref),
    }
    return record, prompt, logits, greedy


def main():
    os.chdir(ROOT)
    rng = np.random.default_rng(SEED)
    mmproj(MMPROJ, rng)
    meta, w = numpy_qwen3vl.load(MMPROJ)

    first, prompt, logits, greedy = case(meta, w, PICTURE, N_GREEDY)
    tall, _, _, _ = case(meta, w, TALL, 0)
    budget, _, _, _ = case(meta, w, PICTURE, 0, BUDGET_MIN_TOKENS, BUDGET_MAX_TOKENS)
    assert sum(1 for t in prompt if t == -1) == first["n_tokens"]
    _, two_prompt, two_logits, two_greedy = llama_cpp_run(TEXT, MMPROJ, f"{PICTURE},{TALL}", TWO_PROMPT, N_GREEDY_TWO)
    assert sum(1 for t in two_prompt if t == -1) == first["n_tokens"] + tall["n_tokens"]

    out = {
        **golden("numpy_qwen3vl.py", SEED, MMPROJ, TEXT, PROMPT, prompt, logits, greedy),
        "grid": first["grid"],
        "patch_grid": first["patch_grid"],
        "n_tokens": first["n_tokens"],
        "llama_cpp": first["llama_cpp"],
        "f64": first["f64"],
        "tall": tall,
        "budget": {"min_tokens": BUDGET_MIN_TOKENS, "max_tokens": BUDGET_MAX_TOKENS, **budget},
        "two_images": {
            "images": [PICTURE, TALL],
            "prompt_text": TWO_PROMPT,
            "prompt_ids": two_prompt,
            "first_logits": two_logits,
            "greedy": two_greedy,
        },
    }
    print(f"prompt {prompt}; greedy {greedy}")
    print(f"two images: prompt {two_prompt}; greedy {two_greedy}")
    write_golden(GOLDEN, out)


if __name__ == "__main__":
    main()

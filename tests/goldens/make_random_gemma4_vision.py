#!/usr/bin/env python3
"""A tiny random-weight Gemma 4 vision projector in llama.cpp's exact mmproj layout (what its converter
writes for Gemma 4: `clip` architecture, clip.vision.projector_type gemma4v), a second test image, and
the images' embeddings from llama.cpp (libmtmd: preprocessing, encoder and projector) and from
numpy_gemma4v's f64 reference, with llama.cpp's reading of a prompt around the first image by the random
Gemma 4 text model of tests/data/random-gemma4-f32.gguf (make_random_gemma4.py; not rewritten here):
tests/vision_gemma4.rs checks Wick's against them.

Run from the repository root with numpy, Pillow and llama.cpp's gguf package, and llama.cpp built with
libmtmd (its tools/mtmd) into LLAMA_CPP_BUILD:

    LLAMA_CPP=path/to/llama.cpp LLAMA_CPP_BUILD=path/to/build python tests/goldens/make_random_gemma4_vision.py

The projector: patches of 4 x 4 pixels, width 64, 4 heads of 16, n_ff 96 (not a multiple of 32), 2 layers,
pooled 3 x 3 (llama.cpp's default for gemma4v: the file has no clip.vision.projector.scale_factor, as
converted Gemma 4 files have none) into tokens of width 128, the text model's. F16 matrices and patch embedding;
F32 position tables (2, 64, 64) (column, row), norms, out_scale, std_bias / std_scale and the clamp
scalars. image_size 224 is written and unused, as the converter does; mean and std 0.5. An image gives
between 70 and 1120 tokens on a canvas whose sides are multiples of 12 pixels, so both test images are
scaled up (bicubic): vision-test.png (100 x 75, written by make_random_gemma3_vision.py) to 120 x 90,
centered on a 120 x 96 canvas (3 black rows above and below; 30 x 24 patches, 80 tokens);
vision-test-tall.png (37 x 120, written here) to 60 x 192, the whole canvas (15 x 48 patches, 80
tokens). A third case reads vision-test.png with a budget of 20 to 40 tokens, as llama.cpp's
--image-min-tokens 20 --image-max-tokens 40 set it: 96 x 72 would be 48 tokens, so the canvas shrinks to
84 x 60 (the image scaled down to 80 x 60, 2 black columns left and right; 21 x 15 patches, 35 tokens).

Gemma 4's "clippable" linear layers clamp their input and output to bounds stored as one-value tensors
beside the weight (NAME.input_min, .input_max, .output_min, .output_max); llama.cpp looks for them beside
every matrix of the tower and the projection, and an absent one is no bound. This file carries a few
(CLAMPS), set where they change a few percent of the values, and the run prints how many each changed
in the f64 reference.

The text model has no image marker tokens (Gemma 4's are <|image> and <image|>): mtmd writes them as
text around the image's embeddings, which llama.cpp and Wick then read as plain text.
"""
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_gemma4v  # noqa: E402
from vision_goldens import (PICTURE, ROOT, TALL, add_tower, gain, golden, llama_cpp_run, mat,  # noqa: E402
                            picture, row_cosines, rounded, write_gguf, write_golden)

SEED = 20261207
PATCH, D, N_HEAD, N_FF, N_LAYER, POS_SIZE, EPS = 4, 64, 4, 96, 2, 64, 1e-6
TEXT_EMBD = 128
# Bounds of the clippable layers; every other bound is absent. Each sits about two standard deviations
# out in the values it bounds (the inputs of attn_q and of the projection are RMS-normed; layer 1's FFN
# output was measured on the first image).
CLAMPS = {
    "v.blk.0.attn_q.input_min": -1.9,
    "v.blk.0.attn_q.input_max": 1.7,
    "v.blk.1.ffn_down.output_min": -1.1,
    "v.blk.1.ffn_down.output_max": 1.0,
    "mm.input_projection.input_max": 1.8,
}

MMPROJ = "tests/data/random-gemma4-mmproj.gguf"
TEXT = "tests/data/random-gemma4-f32.gguf"
# The third case's token budget (mtmd_context_params.image_min_tokens / image_max_tokens).
BUDGET_MIN_TOKENS, BUDGET_MAX_TOKENS = 20, 40
GOLDEN = "tests/goldens/random-gemma4-vision.json"
# The image at mtmd's marker, between <|image> and <image|>; BOS added.
PROMPT = "look at <__media__> and tell"
# 107 prompt tokens (80 of them the image's) and the reply fit mtmd_embed.cpp's context of 128.
N_GREEDY = 12


def scalar(v):
    return np.array([v], dtype=np.float32)


# The projector's shape: this file's tiny one; scripts/make-gemma4v-shape.py writes Gemma 4's own. `clamps`:
# the bounds of clippable layers, by tensor name.
TINY = dict(name="tiny-random-gemma4-vision", patch=PATCH, d=D, n_head=N_HEAD, n_ff=N_FF, n_layer=N_LAYER,
            positions=POS_SIZE, text=TEXT_EMBD, clamps=CLAMPS)


def mmproj(path, rng, shape=TINY):
    patch, d, n_ff, positions, text = (shape[k] for k in ("patch", "d", "n_ff", "positions", "text"))
    hd = d // shape["n_head"]
    w = {
        # Conv weight (n_embd, 3, p, p), no bias.
        "v.patch_embd.weight": (rng.standard_normal((d, 3, patch, patch)) / np.sqrt(3 * patch * patch)).astype(np.float16),
        # [0] by column, [1] by row.
        "v.position_embd.weight": (0.5 * rng.standard_normal((2, positions, d))).astype(np.float32),
    }
    for i in range(shape["n_layer"]):
        p = f"v.blk.{i}."
        w[p + "ln1.weight"] = gain(rng, d)
        for n in ["attn_q", "attn_k", "attn_v", "attn_out"]:
            w[p + n + ".weight"] = mat(rng, d, d)
        # Attention is not scaled by 1/sqrt(head_dim): q.k of unit-RMS heads would have a standard
        # deviation of 4, softmax close to one-hot. Gains of 0.8 bring it to about 2.5.
        w[p + "attn_q_norm.weight"] = gain(rng, hd, 0.8)
        w[p + "attn_k_norm.weight"] = gain(rng, hd, 0.8)
        w[p + "attn_post_norm.weight"] = gain(rng, d)
        w[p + "ln2.weight"] = gain(rng, d)
        w[p + "ffn_gate.weight"] = mat(rng, n_ff, d)
        w[p + "ffn_up.weight"] = mat(rng, n_ff, d)
        w[p + "ffn_down.weight"] = mat(rng, d, n_ff)
        w[p + "ffn_post_norm.weight"] = gain(rng, d)
        w[p + "out_scale.weight"] = scalar([0.9, 1.1][i % 2])
    # The pooled tokens are scaled by sqrt(d) before this standardization.
    w["v.std_bias"] = (2.0 * rng.standard_normal(d)).astype(np.float32)
    w["v.std_scale"] = ((1.0 + 0.2 * rng.standard_normal(d)) / np.sqrt(d)).astype(np.float32)
    # Stored (text width, vision width), as Gemma 4's converter writes it (Gemma 3's is the transpose).
    w["mm.input_projection.weight"] = mat(rng, text, d)
    for name, v in shape["clamps"].items():
        w[name] = scalar(v)

    wr = gguf.GGUFWriter(path, "clip")
    wr.add_name(shape["name"])
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_bool("clip.has_vision_encoder", True)
    # The converter writes the vision-specific key (Gemma 4's mmproj may also hold an audio encoder);
    # llama.cpp reads clip.projector_type first and this one when that is absent.
    wr.add_clip_vision_projector_type(gguf.VisionProjectorType.GEMMA4V)
    wr.add_vision_projection_dim(text)
    wr.add_vision_image_size(224)
    add_tower(wr, shape)
    wr.add_vision_image_mean([0.5, 0.5, 0.5])
    wr.add_vision_image_std([0.5, 0.5, 0.5])
    wr.add_vision_attention_layernorm_eps(EPS)
    # clip.use_gelu: tanh GELU in llama.cpp's FFN. Without it llama.cpp takes quick GELU, and its converter
    # does not write it for Gemma 4, whose FFN is tanh GELU.
    wr.add_vision_use_gelu(True)
    write_gguf(wr, w)


def reference(meta, w, image, **budget):
    """numpy_gemma4v's embeddings of the image, its grid of patches and the values each clamp changed.
    budget: preprocess's min_tokens / max_tokens, where not the projector's own."""
    pixels, (cols, rows) = numpy_gemma4v.preprocess(meta, image, **budget)
    clipped = {}
    ref = numpy_gemma4v.encode(meta, w, pixels, clipped)
    return ref, {"cols": cols, "rows": rows}, clipped


def compare(image, grid, ref, ours, clipped):
    assert ref.shape == ours.shape, (ref.shape, ours.shape)
    cos = row_cosines(ref, ours)
    print(f"{image}: grid {grid['cols']} x {grid['rows']} patches, {ref.shape[0]} image tokens of {ref.shape[1]}; "
          f"llama.cpp against f64: cosine min {cos.min():.7f}, max abs {np.abs(ref - ours).max():.5f}, "
          f"embedding std {ref.std():.3f}")
    print("  values clipped: " + ", ".join(f"{k} {n} of {total} ({100 * n / total:.1f}%)"
                                           for k, (n, total) in clipped.items()))
    # They agree to about 2e-7 (llama.cpp rounds matrix inputs, K and V and its GELU to f16). Quick
    # GELU in place of tanh GELU would be 5e-5 off, so the bound is tighter than that.
    assert cos.min() >= 0.99999, "llama.cpp and the f64 reference disagree"


def main():
    os.chdir(ROOT)
    rng = np.random.default_rng(SEED)
    mmproj(MMPROJ, rng)
    picture(TALL, rng, 37, 120, (6.5, 2.0, 1.5))
    meta, w = numpy_gemma4v.load(MMPROJ)

    ref, grid, clipped = reference(meta, w, PICTURE)
    ours, prompt, logits, greedy = llama_cpp_run(TEXT, MMPROJ, PICTURE, PROMPT, N_GREEDY)
    compare(PICTURE, grid, ref, ours, clipped)
    tall_ref, tall_grid, tall_clipped = reference(meta, w, TALL)
    tall_ours, _, _, _ = llama_cpp_run(TEXT, MMPROJ, TALL, PROMPT, 0)
    compare(TALL, tall_grid, tall_ref, tall_ours, tall_clipped)
    budget_ref, budget_grid, budget_clipped = reference(meta, w, PICTURE, min_tokens=BUDGET_MIN_TOKENS,
                                                        max_tokens=BUDGET_MAX_TOKENS)
    budget_ours, _, _, _ = llama_cpp_run(TEXT, MMPROJ, PICTURE, PROMPT, 0, BUDGET_MIN_TOKENS, BUDGET_MAX_TOKENS)
    compare(f"{PICTURE} (tokens {BUDGET_MIN_TOKENS} to {BUDGET_MAX_TOKENS})", budget_grid, budget_ref, budget_ours,
            budget_clipped)

    out = {
        **golden("numpy_gemma4v.py", SEED, MMPROJ, TEXT, PROMPT, prompt, logits, greedy),
        "grid": grid,
        "n_tokens": int(ref.shape[0]),
        "llama_cpp": rounded(ours),
        "f64": rounded(ref),
        "tall": {
            "image": TALL,
            "grid": tall_grid,
            "n_tokens": int(tall_ref.shape[0]),
            "llama_cpp": rounded(tall_ours),
            "f64": rounded(tall_ref),
        },
        "budget": {
            "image": PICTURE,
            "min_tokens": BUDGET_MIN_TOKENS,
            "max_tokens": BUDGET_MAX_TOKENS,
            "grid": budget_grid,
            "n_tokens": int(budget_ref.shape[0]),
            "llama_cpp": rounded(budget_ours),
            "f64": rounded(budget_ref),
        },
    }
    print(f"prompt {prompt}; greedy {greedy}")
    write_golden(GOLDEN, out)


if __name__ == "__main__":
    main()

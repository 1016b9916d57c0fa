"""An f64 numpy reference for Gemma 4's vision projector (llama.cpp projector type gemma4v: a ViT with RMS
norms, per-head q/k/v norms, a 2D RoPE and Gemma's sandwich norms, then average pooling and a projection
into the text model's width), read from its mmproj GGUF: what tests/goldens/make_random_gemma4_vision.py
records beside llama.cpp's embeddings. Written from the model's definition, not from Wick's code.

    meta, w = load(path)
    pixels, grid = preprocess(meta, "image.png")   # (3, H, W) in [-3, 1] for mean = std = 0.5; (cols, rows)
    embeddings = encode(meta, w, pixels)           # (n_tokens, projection_dim), tokens row-major

Unlike Gemma 3's square encoder, the input keeps the image's aspect ratio: its sides are multiples of
patch * merge, chosen so that the image gives between 70 and 1120 tokens. Positions come from two learned
tables (one for the column, one for the row) and from a RoPE that turns the first half of each head by
the patch's column and the second half by its row. Every matrix of the tower may carry scalar clamps on
its input and output ("clippable linear" layers).
"""
import math

import numpy as np
from PIL import Image

from numpy_vision import ffn_act, load, normalize, patches, tower  # noqa: F401  (load: for callers)

# Gemma 4's vision RoPE base (llama.cpp sets it for gemma4v; the GGUF has no key for it).
ROPE_THETA = 100.0
# The pooling kernel when the file has no clip.vision.projector.scale_factor.
DEFAULT_MERGE = 3
# The token budget of an image (llama.cpp's set_limit_image_tokens for gemma4v).
MIN_TOKENS, MAX_TOKENS = 70, 1120


def merge_of(meta):
    return meta.get("clip.vision.projector.scale_factor", DEFAULT_MERGE)


def target_size(width, height, align, min_pixels, max_pixels):
    """The canvas an image of width x height is scaled onto: each side rounded to a multiple of align,
    then, if that has too many or too few pixels, both sides rescaled by one factor (floored to the
    multiple when shrinking, ceiled when growing), as transformers' smart_resize does. In float32, as
    llama.cpp computes it, and rounding halves away from zero as C's round does."""
    f32 = np.float32
    fa = f32(align)

    def round_by(x):
        return int(math.floor(float(f32(x) / fa) + 0.5)) * align

    def ceil_by(x):
        return int(math.ceil(float(f32(x) / fa))) * align

    def floor_by(x):
        return int(math.floor(float(f32(x) / fa))) * align

    w_bar = max(align, round_by(width))
    h_bar = max(align, round_by(height))
    if h_bar * w_bar > max_pixels:
        beta = np.sqrt(f32(height) * f32(width) / f32(max_pixels))
        h_bar = max(align, floor_by(f32(height) / beta))
        w_bar = max(align, floor_by(f32(width) / beta))
    elif h_bar * w_bar < min_pixels:
        beta = np.sqrt(f32(min_pixels) / (f32(height) * f32(width)))
        h_bar = ceil_by(f32(height) * beta)
        w_bar = ceil_by(f32(width) * beta)
    return w_bar, h_bar


def cubic(x, a=-0.5):
    x = abs(x)
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def bicubic_weights(n_in, n_out):
    """The weights of Pillow's bicubic resampling (a = -0.5, the kernel widened by the factor when
    shrinking, each output's weights normalized), in fixed point with 22 fractional bits as Pillow and
    llama.cpp's resize_pillow round them: (n_out, n_in) integers."""
    scale = n_in / n_out
    filterscale = max(scale, 1.0)
    support = 2.0 * filterscale
    m = np.zeros((n_out, n_in), dtype=np.int64)
    for o in range(n_out):
        center = (o + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        w = [cubic((i - center + 0.5) * (1.0 / filterscale)) for i in range(lo, hi)]
        total = 0.0
        for v in w:
            total += v
        for i, v in enumerate(w):
            v = v / total if total != 0.0 else v
            m[o, lo + i] = int(v * (1 << 22) + (-0.5 if v < 0 else 0.5))
    return m


def resize_bicubic(pixels, width, height):
    """(h, w, 3) uint8 pixels resampled to (height, width, 3) as llama.cpp's resize_pillow does: the
    horizontal pass, rounded to uint8, then the vertical pass, each skipped where the side is unchanged.
    Pillow computes the same passes but (13.0) sometimes takes the vertical one first, which moves some
    pixels by a few levels when both sides shrink."""
    x = pixels.astype(np.int64)
    if width != x.shape[1]:
        x = np.einsum("oi,yic->yoc", bicubic_weights(x.shape[1], width), x)
        x = np.clip((x + (1 << 21)) >> 22, 0, 255)
    if height != x.shape[0]:
        x = np.einsum("oi,ixc->oxc", bicubic_weights(x.shape[0], height), x)
        x = np.clip((x + (1 << 21)) >> 22, 0, 255)
    return x.astype(np.uint8)


def on_canvas(img, tw, th):
    """The RGB image img scaled to fit a tw x th canvas with its aspect ratio kept (resize_bicubic) and
    centered on black, as mtmd's resize with PAD_CEIL does: (3, th, tw) values in [0, 1]."""
    # In float32, as llama.cpp computes it; a side of the scaled image is at most the canvas's.
    f32 = np.float32
    scale = min(f32(tw) / f32(img.width), f32(th) / f32(img.height))
    nw = min(int(np.ceil(f32(img.width) * scale)), tw)
    nh = min(int(np.ceil(f32(img.height) * scale)), th)
    canvas = np.zeros((th, tw, 3), dtype=np.uint8)
    left, top = (tw - nw) // 2, (th - nh) // 2
    canvas[top:top + nh, left:left + nw] = resize_bicubic(np.asarray(img), nw, nh)
    return canvas.astype(np.float64).transpose(2, 0, 1) / 255.0


def normalized_canvas(meta, path, merge, min_tokens, max_tokens):
    """The image on its canvas (target_size, on_canvas) for between min_tokens and max_tokens tokens of
    merge x merge patches, values in [0, 1] normalized by the file's mean and std, and the canvas's grid
    of patches (cols, rows). numpy_qwen3vl's preprocessing too."""
    p = meta["clip.vision.patch_size"]
    align = p * merge
    img = Image.open(path).convert("RGB")
    tw, th = target_size(img.width, img.height, align, min_tokens * align * align, max_tokens * align * align)
    return normalize(meta, on_canvas(img, tw, th)), (tw // p, th // p)


def preprocess(meta, path, min_tokens=MIN_TOKENS, max_tokens=MAX_TOKENS):
    """The image on its canvas and the canvas's grid of patches (cols, rows) (normalized_canvas); the
    normalized values then mapped by 2 v - 1 (Gemma 4's encoder does that to its input)."""
    x, grid = normalized_canvas(meta, path, merge_of(meta), min_tokens, max_tokens)
    return 2.0 * x - 1.0, grid


def rms_norm(x, eps, weight=None):
    x = x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)
    return x if weight is None else x * weight


def clipped_linear(w, name, x, clipped=None):
    """x @ NAME.weight^T with Gemma 4's optional clamps: the input clamped to [NAME.input_min,
    NAME.input_max] and the product to [NAME.output_min, NAME.output_max], each a one-value tensor that
    may be absent (no bound). If clipped is a dict, each bound present counts into clipped["NAME.input_min"]
    and so on: [values it changed, values it saw]."""
    def bound(suffix, default):
        t = w.get(f"{name}.{suffix}")
        return default if t is None else float(t.reshape(-1)[0])

    def clamp(v, lo_key, hi_key):
        lo, hi = bound(lo_key, -np.inf), bound(hi_key, np.inf)
        if clipped is not None:
            for key, n in ((lo_key, int((v < lo).sum())), (hi_key, int((v > hi).sum()))):
                if f"{name}.{key}" in w:
                    count = clipped.setdefault(f"{name}.{key}", [0, 0])
                    count[0] += n
                    count[1] += v.size
        return np.clip(v, lo, hi)

    x = clamp(x, "input_min", "input_max")
    return clamp(x @ w[f"{name}.weight"].T, "output_min", "output_max")


def rope_neox(x, pos, theta):
    """NEOX RoPE over the last axis of x (n, ..., d): dims i and i + d/2 turn together by pos * theta^(-2i/d)."""
    d = x.shape[-1]
    freq = theta ** (-np.arange(d // 2) * 2.0 / d)
    ang = pos.reshape((-1,) + (1,) * (x.ndim - 1)) * freq
    cos, sin = np.cos(ang), np.sin(ang)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)


def rope_2d(x, col, row, theta=ROPE_THETA):
    """Gemma 4's 2D RoPE on (n_patches, n_head, head_dim): the head's first half is a NEOX RoPE of half
    the head's width at the patch's column, its second half the same at the patch's row."""
    half = x.shape[-1] // 2
    return np.concatenate([rope_neox(x[..., :half], col, theta), rope_neox(x[..., half:], row, theta)], -1)


def encode(meta, w, pixels, clipped=None):
    """The image tokens of a preprocessed image (3, H, W): the encoder over its patches, each n_merge x
    n_merge square of patches averaged into a token (tokens row-major), and the projection. If clipped
    is a dict, it counts the values each clamp changed (clipped_linear)."""
    p, d, n_head, eps, n_layer = tower(meta)
    merge = merge_of(meta)
    act = ffn_act(meta)
    hd = d // n_head
    rows, cols = pixels.shape[1] // p, pixels.shape[2] // p
    # The patch embedding has no bias.
    x = patches(pixels, p) @ w["v.patch_embd.weight"].reshape(d, -1).T
    # Two learned tables, (2, pos_size, d): [0] indexed by the patch's column, [1] by its row.
    col = np.arange(rows * cols) % cols
    row = np.arange(rows * cols) // cols
    table = w["v.position_embd.weight"]
    x = x + table[0][col] + table[1][row]
    for i in range(n_layer):
        b = f"v.blk.{i}."
        g = lambda n: w[b + n]  # noqa: E731
        lin = lambda n, v: clipped_linear(w, b + n, v, clipped)  # noqa: E731
        h = rms_norm(x, eps, g("ln1.weight"))
        q = rms_norm(lin("attn_q", h).reshape(-1, n_head, hd), eps, g("attn_q_norm.weight"))
        k = rms_norm(lin("attn_k", h).reshape(-1, n_head, hd), eps, g("attn_k_norm.weight"))
        # v is normed per head too, without a gain.
        v = rms_norm(lin("attn_v", h).reshape(-1, n_head, hd), eps)
        q, k = rope_2d(q, col, row), rope_2d(k, col, row)
        # Every patch sees every patch; no 1/sqrt(head_dim): the q and k norms set the sharpness.
        q, k, v = (t.transpose(1, 0, 2) for t in (q, k, v))
        s = q @ k.transpose(0, 2, 1)
        s = np.exp(s - s.max(-1, keepdims=True))
        a = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(-1, d)
        x = x + rms_norm(lin("attn_out", a), eps, g("attn_post_norm.weight"))
        h = rms_norm(x, eps, g("ln2.weight"))
        ffn = lin("ffn_down", act(lin("ffn_gate", h)) * lin("ffn_up", h))
        x = x + rms_norm(ffn, eps, g("ffn_post_norm.weight"))
        if b + "out_scale.weight" in w:
            x = x * g("out_scale.weight")
    # No final norm. Each merge x merge square of the (rows, cols) grid averaged into one token.
    x = x.reshape(rows // merge, merge, cols // merge, merge, d).mean(axis=(1, 3)).reshape(-1, d)
    x = x * np.sqrt(d)
    if "v.std_bias" in w and "v.std_scale" in w:
        x = (x - w["v.std_bias"]) * w["v.std_scale"]
    return clipped_linear(w, "mm.input_projection", rms_norm(x, eps), clipped)

"""An f64 numpy reference for Qwen3-VL's and Qwen3.5's vision projector (llama.cpp projector type qwen3vl,
"qwen3vl_merger": a ViT with LayerNorms, a fused QKV, a 2D rotary embedding and a learned position table
resized to the image, then each 2 x 2 square of patches merged into one token by an MLP into the text
model's width), read from its mmproj GGUF: what tests/goldens/make_random_qwen35_vision.py records beside
llama.cpp's embeddings. Written from the model's definition, not from Wick's code.

    meta, w = load(path)
    pixels, grid = preprocess(meta, "image.png")   # (3, H, W) in [-1, 1] for mean = std = 0.5; (cols, rows)
    embeddings = encode(meta, w, pixels)           # (n_tokens, projection_dim), tokens row-major

The input keeps the image's aspect ratio: its sides are multiples of patch * merge (merge = 2), chosen so
that the image gives between 8 and 4096 tokens (llama.cpp's bounds for qwen3vl). The encoder sees the
patches in merge order: for each token (row-major over the merged grid), its four patches (y, x),
(y, x + 1), (y + 1, x), (y + 1, x + 1); the merger then concatenates each 4 consecutive patches. The
2D rotation turns the first quarter of each head's pairs by the patch's row and the second by its column.
Deepstack (features of some layers merged into the output beside the last layer's, Qwen3-VL's) is not
modelled: Qwen3.5's files have none.
"""
import numpy as np

import numpy_gemma4v
from numpy_vision import ffn_act, gelu_tanh, load, patches, tower  # noqa: F401  (load: for callers)

# Qwen's vision rotary base (fixed in llama.cpp's graph; the GGUF has no key for it).
ROPE_THETA = 10000.0
# The merge when the file has no clip.vision.spatial_merge_size (llama.cpp's default for Qwen-VL).
DEFAULT_MERGE = 2
# The token budget of an image (llama.cpp's set_limit_image_tokens for qwen3vl).
MIN_TOKENS, MAX_TOKENS = 8, 4096


def merge_of(meta):
    return meta.get("clip.vision.spatial_merge_size", DEFAULT_MERGE)


def preprocess(meta, path, min_tokens=None, max_tokens=None):
    """The image on its canvas and the canvas's grid of patches (cols, rows), as
    numpy_gemma4v.normalized_canvas makes them. The canvas's sides are multiples of patch * merge, each
    the image's rounded, rescaled by one factor where that gives more than max_tokens or fewer than
    min_tokens tokens (numpy_gemma4v.target_size; None: the projector's own bound); the image is scaled to
    fit it and centered on black (numpy_gemma4v.on_canvas), values in [0, 1] normalized by the file's mean
    and std."""
    lo = MIN_TOKENS if min_tokens is None else min_tokens
    hi = MAX_TOKENS if max_tokens is None else max_tokens
    return numpy_gemma4v.normalized_canvas(meta, path, merge_of(meta), lo, hi)


def layer_norm(x, eps, weight, bias):
    x = x - x.mean(-1, keepdims=True)
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * weight + bias


def merge_order(cols, rows, merge):
    """The row-major index of the patch at each place of the encoder's sequence: tokens row-major over
    the (rows / merge, cols / merge) grid, each token's merge x merge patches row-major within it."""
    y, x = np.mgrid[0:rows, 0:cols]
    idx = (y * cols + x).reshape(rows // merge, merge, cols // merge, merge)
    return idx.transpose(0, 2, 1, 3).reshape(-1)


def resize_axis(n_in, n_out):
    """Bilinear weights with aligned corners (ggml_interpolate's BILINEAR | ALIGN_CORNERS, as
    torch.linspace(0, n_in - 1, n_out) in transformers): output i samples input i * (n_in - 1) / (n_out - 1),
    clamped into the input; an (n_out, n_in) matrix."""
    sf = (n_out - 1) / (n_in - 1) if n_out > 1 and n_in > 1 else n_out / n_in
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        t = i / sf
        i0 = min(max(int(np.floor(t)), 0), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        f = min(max(t - i0, 0.0), 1.0)
        m[i, i0] += 1 - f
        m[i, i1] += f
    return m


def positions(table, cols, rows):
    """The learned position table (side * side, d), a side x side grid row-major (row y * side + x),
    resized to the (rows, cols) patch grid: (rows * cols, d) row-major."""
    side = int(round(np.sqrt(table.shape[0])))
    grid = table.reshape(side, side, -1)
    out = np.einsum("ys,sxd->yxd", resize_axis(side, rows), grid)
    out = np.einsum("xs,ysd->yxd", resize_axis(side, cols), out)
    return out.reshape(rows * cols, -1)


def rope_vision(x, row, col, theta=ROPE_THETA):
    """The 2D rotation of (n, n_head, head_dim): pair p of the head's first half turns dims p and
    p + head_dim / 2 together; pairs p < head_dim / 4 by the patch's row at theta^(-2p / (head_dim / 2)),
    the others by its column at theta^(-2(p - head_dim / 4) / (head_dim / 2)) (ggml_rope_multi in
    GGML_ROPE_TYPE_VISION mode with four sections of head_dim / 4)."""
    half = x.shape[-1] // 2
    quarter = half // 2
    j = np.arange(half) % quarter
    freq = theta ** (-2.0 * j / half)
    pos = np.where(np.arange(half) < quarter, row[:, None], col[:, None])
    ang = (pos * freq)[:, None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)


def encode(meta, w, pixels, stats=None):
    """The image tokens of a preprocessed image (3, H, W): the encoder over its patches in merge order
    (merge_order), the final LayerNorm, each merge x merge patches' rows concatenated and the merger MLP
    (tokens row-major). If stats is a dict, it gets "attention_max": per layer, the mean over queries and
    heads of the largest attention weight (1 / n_patches for uniform attention, 1 for one-hot)."""
    p, d, n_head, eps, n_layer = tower(meta)
    merge = merge_of(meta)
    # The encoder's FFN takes llama.cpp's ffn_op; the merger's GELU is tanh GELU whatever the file says
    # (llama.cpp's graph; transformers' merger has nn.GELU(), the erf form).
    act = ffn_act(meta)
    hd = d // n_head
    rows, cols = pixels.shape[1] // p, pixels.shape[2] // p
    # The Conv3D's two time steps see the same image, so their kernels add up.
    kernel = w["v.patch_embd.weight"] + w["v.patch_embd.weight.1"]
    x = patches(pixels, p) @ kernel.reshape(d, -1).T + w["v.patch_embd.bias"]
    x = x + positions(w["v.position_embd.weight"], cols, rows)
    order = merge_order(cols, rows, merge)
    x = x[order]
    row, col = order // cols, order % cols
    for i in range(n_layer):
        b = f"v.blk.{i}."
        g = lambda n: w[b + n]  # noqa: E731
        h = layer_norm(x, eps, g("ln1.weight"), g("ln1.bias"))
        qkv = h @ g("attn_qkv.weight").T + g("attn_qkv.bias")
        q, k, v = (qkv[:, j * d:(j + 1) * d].reshape(-1, n_head, hd) for j in range(3))
        q, k = rope_vision(q, row, col), rope_vision(k, row, col)
        # Every patch sees every patch.
        q, k, v = (t.transpose(1, 0, 2) for t in (q, k, v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        if stats is not None:
            stats.setdefault("attention_max", []).append(float(s.max(-1).mean()))
        a = (s @ v).transpose(1, 0, 2).reshape(-1, d)
        x = x + a @ g("attn_out.weight").T + g("attn_out.bias")
        h = layer_norm(x, eps, g("ln2.weight"), g("ln2.bias"))
        h = act(h @ g("ffn_up.weight").T + g("ffn_up.bias"))
        x = x + h @ g("ffn_down.weight").T + g("ffn_down.bias")
    x = layer_norm(x, eps, w["v.post_ln.weight"], w["v.post_ln.bias"])
    x = x.reshape(-1, merge * merge * d)
    x = gelu_tanh(x @ w["mm.0.weight"].T + w["mm.0.bias"])
    return x @ w["mm.2.weight"].T + w["mm.2.bias"]

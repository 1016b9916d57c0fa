"""An f32/f64 numpy reference for Gemma 3's vision projector (a SigLIP encoder, then Gemma 3's pooling and
projection), read from its mmproj GGUF: what tests/goldens/make_random_gemma3_vision.py records beside
llama.cpp's embeddings. Written from the model's definition, not from Wick's code.

    meta, w = load(path)
    pixels = preprocess(meta, "image.png")   # (3, size, size), normalized
    embeddings = encode(meta, w, pixels)     # (n_tokens, projection_dim)
"""
import numpy as np
from PIL import Image

from numpy_vision import gelu_tanh, load, normalize, patches, tower  # noqa: F401  (load: for callers)


def preprocess(meta, path):
    """The image scaled to fit the encoder's square (bilinear, with Pillow's antialiasing when
    shrinking), centered on black, as values in [0, 1] normalized by the file's mean and std."""
    size = meta["clip.vision.image_size"]
    img = Image.open(path).convert("RGB")
    # In f32, as mtmd computes it: 75 * 0.56 is 42 there and 42.00000000000001 in f64.
    f32 = np.float32
    scale = min(f32(size) / f32(img.width), f32(size) / f32(img.height))
    w = min(int(np.ceil(f32(img.width) * scale)), size)
    h = min(int(np.ceil(f32(img.height) * scale)), size)
    resized = img.resize((w, h), Image.BILINEAR) if (w, h) != img.size else img
    canvas = Image.new("RGB", (size, size), (0, 0, 0))
    canvas.paste(resized, ((size - w) // 2, (size - h) // 2))
    x = np.asarray(canvas, dtype=np.float64).transpose(2, 0, 1) / 255.0
    return normalize(meta, x)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def encode(meta, w, pixels):
    p, d, n_head, eps, n_layer = tower(meta)
    merge = meta.get("clip.vision.projector.scale_factor", 4)
    side = pixels.shape[1] // p
    x = patches(pixels, p) @ w["v.patch_embd.weight"].reshape(d, -1).T + w["v.patch_embd.bias"]
    x = x + w["v.position_embd.weight"]
    hd = d // n_head
    for i in range(n_layer):
        g = lambda n: w[f"v.blk.{i}.{n}"]  # noqa: E731
        h = layer_norm(x, g("ln1.weight"), g("ln1.bias"), eps)
        q = (h @ g("attn_q.weight").T + g("attn_q.bias")).reshape(-1, n_head, hd).transpose(1, 0, 2)
        k = (h @ g("attn_k.weight").T + g("attn_k.bias")).reshape(-1, n_head, hd).transpose(1, 0, 2)
        v = (h @ g("attn_v.weight").T + g("attn_v.bias")).reshape(-1, n_head, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        a = (s / s.sum(-1, keepdims=True)) @ v
        a = a.transpose(1, 0, 2).reshape(-1, d)
        x = x + a @ g("attn_out.weight").T + g("attn_out.bias")
        h = layer_norm(x, g("ln2.weight"), g("ln2.bias"), eps)
        up = gelu_tanh(h @ g("ffn_up.weight").T + g("ffn_up.bias"))
        x = x + up @ g("ffn_down.weight").T + g("ffn_down.bias")
    x = layer_norm(x, w["v.post_ln.weight"], w["v.post_ln.bias"], eps)
    # Gemma 3: the grid averaged in merge x merge squares, RMS-normed, projected to the text model's width.
    out = side // merge
    x = x.reshape(out, merge, out, merge, d).mean(axis=(1, 3)).reshape(out * out, d)
    x = x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * w["mm.soft_emb_norm.weight"]
    return x @ w["mm.input_projection.weight"]

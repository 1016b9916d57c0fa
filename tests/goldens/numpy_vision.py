"""What the f64 numpy references for vision projectors (numpy_siglip.py, numpy_gemma4v.py and
numpy_qwen3vl.py) share: reading an mmproj GGUF, the encoder's sizes, normalizing an image by the file's
mean and std, cutting it into patches, and the two GELUs llama.cpp's encoder FFNs choose between.
"""
import gguf
import numpy as np


def load(path):
    """The file's metadata by key and its tensors as f64 arrays (row-major, the shape reversed from
    GGUF's)."""
    r = gguf.GGUFReader(path)
    meta = {}
    for f in r.fields.values():
        if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
            meta[f.name] = [f.parts[i].tolist()[0] for i in f.data]
        elif f.types and f.types[0] == gguf.GGUFValueType.STRING:
            meta[f.name] = bytes(f.parts[f.data[0]]).decode()
        elif f.data:
            meta[f.name] = f.parts[f.data[0]].tolist()[0]
    w = {}
    for t in r.tensors:
        shape = [int(d) for d in reversed(t.shape)]
        w[t.name] = gguf.dequantize(t.data, t.tensor_type).astype(np.float64).reshape(shape)
    return meta, w


def tower(meta):
    """The encoder's patch size, width, head count, norm epsilon and layer count."""
    return (meta["clip.vision.patch_size"], meta["clip.vision.embedding_length"],
            meta["clip.vision.attention.head_count"], meta["clip.vision.attention.layer_norm_epsilon"],
            meta["clip.vision.block_count"])


def normalize(meta, x):
    """Values (3, H, W) in [0, 1] normalized by the file's mean and std (three values each, one a
    channel)."""
    mean = np.array(meta["clip.vision.image_mean"])[:, None, None]
    std = np.array(meta["clip.vision.image_std"])[:, None, None]
    return (x - mean) / std


def patches(pixels, p):
    """The p x p patches of an image (3, H, W), row-major (y, then x); each patch's values channel,
    then y, then x (the convolution's order): (H / p * W / p, 3 * p * p)."""
    rows, cols = pixels.shape[1] // p, pixels.shape[2] // p
    return pixels.reshape(3, rows, p, cols, p).transpose(1, 3, 0, 2, 4).reshape(rows * cols, 3 * p * p)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def gelu_quick(x):
    return x / (1 + np.exp(-1.702 * x))


def ffn_act(meta):
    """llama.cpp's ffn_op for the encoder's FFN: tanh GELU where the file says clip.use_gelu (not under
    clip.vision), quick GELU where it says nothing."""
    return gelu_tanh if meta.get("clip.use_gelu", False) else gelu_quick

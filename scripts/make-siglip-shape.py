#!/usr/bin/env python3
"""A random-weight Gemma 3 vision projector at the real shape (SigLIP-so400m as Gemma 3 ships it: 896 x 896
pixels in 14 x 14 patches, width 1152, 16 heads, n_ff 4304, 27 layers, the 64 x 64 grid pooled 4 x 4 into
256 tokens), projecting to a text model's width, in llama.cpp's mmproj layout, F16 matrices (830 MB):
for timing an image's encoding, not for what it says.

    python scripts/make-siglip-shape.py OUT.gguf [TEXT_WIDTH] [LAYERS]

TEXT_WIDTH: 640 (default) pairs it with Gemma 3 270M (scripts/fetch-model.sh gemma); Gemma 3 4B's is
2560. LAYERS: 27 (default); fewer make a file that times a layer where the whole encoder takes long (a
CPU-backed adapter). Needs numpy and gguf.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "goldens"))
from make_random_gemma3_vision import mmproj  # noqa: E402

out = sys.argv[1]
text = int(sys.argv[2]) if len(sys.argv) > 2 else 640
layers = int(sys.argv[3]) if len(sys.argv) > 3 else 27
shape = dict(name="random-gemma3-vision-shape", image=896, patch=14, d=1152, n_head=16, n_ff=4304, n_layer=layers,
             merge=4, text=text)
mmproj(out, np.random.default_rng(20261129), shape)
print(f"wrote {out}: {os.path.getsize(out) / 1e6:.0f} MB")

#!/usr/bin/env python3
"""A random-weight Qwen3.5 vision projector at a real tower's shape (patches of 16 x 16 pixels merged
2 x 2, width 1024, 16 heads of 64, n_ff 4096, 24 layers, a 48 x 48 square of learned positions),
projecting to a text model's width, in llama.cpp's qwen3vl mmproj layout, F16 matrices: for timing an
image's encoding, not for what it says.

    python scripts/make-qwen3vl-shape.py OUT.gguf [TEXT_WIDTH] [LAYERS]

TEXT_WIDTH: 128 (default) pairs it with tests/data/random-qwen35-f16.gguf. LAYERS: 24 (default); fewer
make a file that times a layer where the whole encoder takes long (a CPU-backed adapter). Needs numpy
and gguf.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "goldens"))
from make_random_qwen35_vision import TINY, mmproj  # noqa: E402

out = sys.argv[1]
text = int(sys.argv[2]) if len(sys.argv) > 2 else 128
layers = int(sys.argv[3]) if len(sys.argv) > 3 else 24
shape = dict(TINY, name="random-qwen35-vision-shape", patch=16, d=1024, n_head=16, n_ff=4096,
             n_layer=layers, side=48, text=text)
mmproj(out, np.random.default_rng(20261129), shape)
print(f"wrote {out}: {os.path.getsize(out) / 1e6:.0f} MB")

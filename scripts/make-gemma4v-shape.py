#!/usr/bin/env python3
"""A random-weight Gemma 4 vision projector at the real shape (the E2B / E4B vision tower: patches of 16 x 16
pixels pooled 3 x 3, width 768, 12 heads of 64, n_ff 3072, 16 layers, position tables of 10240 an axis),
projecting to a text model's width, in llama.cpp's gemma4v mmproj layout, F16 matrices, every linear layer
clippable (bounds at +-100, which clip nothing): for timing an image's encoding, not for what it says.

    python scripts/make-gemma4v-shape.py OUT.gguf [TEXT_WIDTH] [LAYERS]

TEXT_WIDTH: 128 (default) pairs it with tests/data/random-gemma4-f32.gguf; E2B's is 1536. LAYERS: 16
(default); fewer make a file that times a layer where the whole encoder takes long (a CPU-backed
adapter). Needs numpy and gguf.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "goldens"))
from make_random_gemma4_vision import mmproj  # noqa: E402

out = sys.argv[1]
text = int(sys.argv[2]) if len(sys.argv) > 2 else 128
layers = int(sys.argv[3]) if len(sys.argv) > 3 else 16
linears = ["attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down"]
clamps = {}
for name in [f"v.blk.{i}.{n}" for i in range(layers) for n in linears] + ["mm.input_projection"]:
    clamps.update({f"{name}.input_min": -100.0, f"{name}.input_max": 100.0,
                   f"{name}.output_min": -100.0, f"{name}.output_max": 100.0})
shape = dict(name="random-gemma4-vision-shape", patch=16, d=768, n_head=12, n_ff=3072, n_layer=layers,
             positions=10240, text=text, clamps=clamps)
mmproj(out, np.random.default_rng(20261129), shape)
print(f"wrote {out}: {os.path.getsize(out) / 1e6:.0f} MB")

"""Random quantized weights for the shape scripts (make-shape-model.py, make-llama-shape.py): files with
real dimensions for benchmarks, written in seconds because one quantized block of rows is tiled."""

import math

import gguf
import numpy as np


class Weights:
    """Quantized matrices made by tiling one quantized block of random rows; one array per shape and
    scale, shared by every layer that asks for it."""

    def __init__(self, qtype, rng):
        self.qtype, self.rng, self.cache = qtype, rng, {}

    def mat(self, shape, scale=1.0):
        key = (tuple(shape), scale)
        if key not in self.cache:
            cols = shape[-1]
            rows = math.prod(shape[:-1])
            block = min(rows, 256)
            x = (self.rng.standard_normal((block, cols)) * (scale / math.sqrt(cols))).astype(np.float32)
            q = gguf.quants.quantize(x, self.qtype)  # (block, row_bytes) uint8
            full = np.tile(q, (-(-rows // block), 1))[:rows]
            self.cache[key] = np.ascontiguousarray(full).reshape(*shape[:-1], q.shape[-1])
        return self.cache[key]

    def norm(self, n):
        return self.rng.uniform(0.6, 1.4, n).astype(np.float32)

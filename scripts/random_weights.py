"""Random quantized weights for the shape scripts (make-shape-model.py, make-llama-shape.py): files with
real dimensions for benchmarks, written in seconds because one quantized block of rows is tiled. Also what
both write after their architecture's metadata: the vocabulary and the tensors."""

import math
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "goldens"))
import random_vocab  # noqa: E402  (the test models' 512-token byte-level vocabulary)

VOCAB_SEED = 20240611  # the test models' seed, so the same tokens and merges


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


def add_vocabulary(wr, n_vocab, bos=False):
    """The test models' vocabulary, padded with UNUSED "[PAD<i>]" tokens to n_vocab so that token_embd and
    output have the real shape; <|endoftext|> is EOS (and BOS, with `bos`)."""
    tokens, types, merges = random_vocab.vocabulary(np.random.default_rng(VOCAB_SEED))
    eos = len(tokens) - 1  # <|endoftext|>
    tokens = tokens + [f"[PAD{i}]" for i in range(len(tokens), n_vocab)]
    types = types + [gguf.TokenType.UNUSED] * (n_vocab - len(types))
    wr.add_vocab_size(n_vocab)
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    if bos:
        wr.add_bos_token_id(eos)
    wr.add_eos_token_id(eos)
    wr.add_add_bos_token(False)


def write_tensors(wr, tensors):
    """Writes the file: `tensors` maps names to (array, raw quant type or None for plain arrays). Returns the
    parameter count."""
    for name, (arr, raw) in tensors.items():
        if raw is None:
            wr.add_tensor(name, arr)
        else:
            wr.add_tensor(name, arr, raw_dtype=raw)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return sum(
        math.prod(gguf.quants.quant_shape_from_byte_shape(a.shape, r)) if r is not None else a.size
        for a, r in tensors.values()
    )

#!/usr/bin/env python3
"""A random-weight `bert` GGUF at the dimensions of all-MiniLM-L6-v2 (the sentence-transformers model
most pages embed with): 6 layers, width 384, 12 heads, n_ff 1536, 512 positions, mean pooling, F16
matrices. For timing embeddings (BENCHMARKS.md); the vectors it makes are meaningless. Its vocabulary
is tests/goldens/random_bert.py's 256 WordPiece tokens (the real one has 30522: a bigger table, read
a row a token, the same work).

    python scripts/make-bert-shape.py   # models/shape/minilm-l6.shape.F16.gguf, and its texts

Also writes models/shape/minilm-l6.texts.json: 64 texts of 100 tokens each ([CLS], 98 one-letter
words, [SEP]), for `wick embed` and `scripts/bench-web.mjs --embed`.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "goldens"))
import gguf  # noqa: E402
import random_bert  # noqa: E402

random_bert.N_EMBD, random_bert.N_HEAD, random_bert.N_FF = 384, 12, 1536
random_bert.N_LAYER, random_bert.N_CTX_TRAIN = 6, 512

os.makedirs("models/shape", exist_ok=True)
rng = np.random.default_rng(384)
random_bert.write("models/shape/minilm-l6.shape.F16.gguf", "bert", rng, gguf.PoolingType.MEAN)
letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
texts = [" ".join(rng.choice(letters, size=98)) for _ in range(64)]
with open("models/shape/minilm-l6.texts.json", "w") as f:
    json.dump(texts, f)
print("wrote models/shape/minilm-l6.shape.F16.gguf and models/shape/minilm-l6.texts.json")

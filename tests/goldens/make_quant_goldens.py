#!/usr/bin/env python3
"""Makes the quant goldens in tests/goldens/quant/ that tests/quant.rs checks Wick against.

    python tests/goldens/make_quant_goldens.py [--llama-lib path/to/libggml-base.so]

Needs `pip install gguf numpy` (gguf 0.19.0 made the committed files), and for the K-type quantization goldens
llama.cpp's libggml-base.so: from `pip install llama-cpp-python` in the same environment (0.3.36 made the
committed files), or given with --llama-lib. Three kinds of file, all small:

  <type>.quant.bin  seeded random f32 weights, the bytes gguf.quants quantizes them to (F32, F16, BF16, Q8_0, Q4_0,
                    Q4_1, Q5_0, Q5_1: the types whose quantizer gguf implements, bit-exact with llama.cpp's
                    reference), and gguf's dequantization of those bytes.
  <type>.raw.bin    random block bytes (any bit pattern, but finite f16 scales) and gguf's dequantization of them:
                    checks the unpacking of every field, for every quantized type.
  <type>.llama.bin  (Q4_K, Q5_K, Q6_K, MXFP4) seeded random weights, the bytes llama.cpp's own reference
                    quantizer (`quantize_row_*_ref` in libggml-base, as `pip install llama-cpp-python` builds
                    it) makes of them, and gguf's dequantization. Written only when that library is found.

MXFP4 (gguf 0.19.0, llama-cpp-python 0.3.36) has its own seed, after the others, so that adding it left
their files as they were. Its raw blocks keep the E8M0 exponent at 250 or below (beyond, 12 * 2^(e - 128)
overflows f32) and start with the subnormal scales 0 and 1.

Layout of every file, little-endian: u32 n (weights), u32 has_input, [f32; n] input if has_input,
the quantized bytes (n / block_len * block_bytes), [f32; n] gguf's dequantization.
"""

import argparse
import ctypes
import glob
import importlib.util
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quant")
GGUF_QUANTIZES = [T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1]
QUANTIZED = [T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q4_K, T.Q5_K, T.Q6_K]
K_TYPES = [T.Q4_K, T.Q5_K, T.Q6_K]
# Byte offsets of the f16 scale fields in each block, which random bytes must not make NaN or Inf.
F16_FIELDS = {T.Q8_0: [0], T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2],
              T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}


def weights(rng, n_blocks, block_len):
    """Random weights, one magnitude per block, with the awkward blocks every quantizer must survive."""
    x = rng.standard_normal((n_blocks, block_len)).astype(np.float32)
    x *= (10.0 ** rng.uniform(-3, 1, (n_blocks, 1))).astype(np.float32)
    if n_blocks >= 4:
        x[0] = 0.0                                  # all zero
        x[1] = np.float32(0.37)                     # constant
        x[2, rng.integers(block_len)] *= 40         # one outlier
        x[3] = np.abs(x[3])                         # all positive (a zero min for the K types)
    if block_len == 256:
        x[-1, 32:64] = 0.0                          # a zero sub-block inside a live super-block
    return x.reshape(-1)


def float_weights(rng, n):
    x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 3, n)).astype(np.float32)
    # f16 overflow, f16 subnormals, and values halfway between two f16 / bf16 values (ties round to even).
    x[:6] = [70000.0, -1e-6, 3e-8, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -8]
    return x


def raw_blocks(rng, ty, n_blocks):
    _, block_bytes = GGML_QUANT_SIZES[ty]
    b = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    for off in F16_FIELDS[ty]:
        d = (rng.standard_normal(n_blocks) * 10.0 ** rng.uniform(-4, 0, n_blocks)).astype(np.float16)
        b[:, off:off + 2] = d.view(np.uint8).reshape(n_blocks, 2)
    return b.reshape(-1)


def write(name, n, x, q, deq):
    q = np.ascontiguousarray(q).view(np.uint8).reshape(-1)
    deq = np.asarray(deq, dtype=np.float32).reshape(-1)
    assert deq.size == n and (x is not None or np.all(np.isfinite(deq)))
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(struct.pack("<II", n, x is not None))
        if x is not None:
            f.write(np.asarray(x, dtype="<f4").tobytes())
        f.write(q.tobytes())
        f.write(deq.astype("<f4").tobytes())
    print(f"{name}: {n} weights, {q.size} bytes")


def find_llama_lib(given):
    """The given path, or the libggml-base.so inside an installed llama-cpp-python."""
    if given:
        return given
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    hits = glob.glob(os.path.join(spec.submodule_search_locations[0], "lib", "libggml-base.so*"))
    return sorted(hits)[0] if hits else None


def llama_quantize(lib, ty, x):
    block_len, block_bytes = GGML_QUANT_SIZES[ty]
    name = "mxfp4" if ty == T.MXFP4 else f"q{ty.name[1:]}"
    fn = getattr(lib, f"quantize_row_{name}_ref")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    fn.restype = None
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.zeros(x.size // block_len * block_bytes, dtype=np.uint8)
    fn(x.ctypes.data, out.ctypes.data, x.size)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-lib", help="libggml-base.so of a llama.cpp build (default: llama-cpp-python's)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20251122)

    for ty in GGUF_QUANTIZES:
        block_len, _ = GGML_QUANT_SIZES[ty]
        x = float_weights(rng, 256) if block_len == 1 else weights(rng, 8, block_len)
        with np.errstate(over="ignore"):  # 70000 is meant to overflow f16
            q = quants.quantize(x, ty)
        write(f"{ty.name.lower()}.quant.bin", x.size, x, q, quants.dequantize(q, ty))

    for ty in QUANTIZED:
        block_len, _ = GGML_QUANT_SIZES[ty]
        n_blocks = 8 if block_len == 32 else 2
        q = raw_blocks(rng, ty, n_blocks)
        write(f"{ty.name.lower()}.raw.bin", n_blocks * block_len, None, q, quants.dequantize(q, ty))

    mx = np.random.default_rng(20261126)
    x = weights(mx, 8, 32)
    q = quants.quantize(x, T.MXFP4)
    write("mxfp4.quant.bin", x.size, x, q, quants.dequantize(q, T.MXFP4))
    q = mxfp4_raw_blocks(mx, 16)
    write("mxfp4.raw.bin", 16 * 32, None, q, quants.dequantize(q, T.MXFP4))

    lib_path = find_llama_lib(args.llama_lib)
    if lib_path is None:
        print("no libggml-base.so found: the .llama.bin goldens were not remade", file=sys.stderr)
        return
    lib = ctypes.CDLL(lib_path)
    for ty in K_TYPES:
        x = weights(rng, 4, 256)
        q = llama_quantize(lib, ty, x)
        write(f"{ty.name.lower()}.llama.bin", x.size, x, q, quants.dequantize(q, ty))
    x = weights(mx, 8, 32)
    q = llama_quantize(lib, T.MXFP4, x)
    write("mxfp4.llama.bin", x.size, x, q, quants.dequantize(q, T.MXFP4))


def mxfp4_raw_blocks(rng, n_blocks):
    """Random codes under exponents from the subnormal (0, 1) through tiny and typical to 250."""
    b = rng.integers(0, 256, (n_blocks, 17), dtype=np.uint8)
    b[:, 0] = rng.integers(0, 251, n_blocks)
    b[:4, 0] = [0, 1, 2, 127]
    return b.reshape(-1)


if __name__ == "__main__":
    main()

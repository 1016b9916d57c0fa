"""Writes the seed corpora under fuzz/seeds/<target>/ (committed; the fuzzers' working corpora under
fuzz/corpus/ are not).

Run from the repository root with the gguf package: python3 fuzz/make_seeds.py

- gguf_header: small valid GGUF files written with the gguf package (every metadata value type, nested
  arrays, every tensor type Wick reads, v2 and v3, a non-default alignment, byte-level BPE and
  SentencePiece tokenizer metadata), plus tests/data/spm-tiny.gguf.
- tokenizer: texts (first byte 0x00: text mode) and token-id lists (first byte 0x01: id mode).
- chat_template: the templates in tests/goldens/chat_template, SmolLM2's template when the model is
  present, and the hostile ones of tests/chat_template.rs (first byte: add_generation_prompt).
"""

import os
import shutil
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFValueType as T

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")


def out(target, name):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def write(path, build, arch="llama"):
    w = gguf.GGUFWriter(path, arch)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# Bytes per block and weights per block of each type Wick reads.
BLOCKS = {
    Q.F32: (4, 1), Q.F16: (2, 1), Q.BF16: (2, 1),
    Q.Q4_0: (18, 32), Q.Q4_1: (20, 32), Q.Q5_0: (22, 32), Q.Q5_1: (24, 32), Q.Q8_0: (34, 32),
    Q.Q4_K: (144, 256), Q.Q5_K: (176, 256), Q.Q6_K: (210, 256),
}


def raw_tensor(w, name, ty, row_len, rows=1, fill=0x11):
    """A tensor of `rows` rows of `row_len` weights of type `ty`, its bytes all `fill` (f16 0x1111 etc.)."""
    bb, bl = BLOCKS[ty]
    row_bytes = row_len // bl * bb
    # Bytes in numpy order (rows first); the writer turns the byte shape into the weight shape.
    shape = (rows, row_bytes) if rows > 1 else (row_bytes,)
    data = np.full(shape, fill, dtype=np.uint8)
    w.add_tensor(name, data, raw_dtype=ty)


def all_value_types(w):
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 65000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "h\u00e9llo \u2581 \U0001F600")
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", -0.25)
    w.add_array("t.arr_u8", [1, 2, 3])
    w.add_array("t.arr_str", ["a", "", "bc"])
    w.add_array("t.arr_f32", [0.5, -1.0])
    w.add_array("t.arr_empty", [])
    w.add_array("t.arr_nested", [[1, 2], [3]])
    w.add_uint32("llama.embedding_length", 64)
    w.add_uint32("llama.attention.head_count", 4)
    w.add_uint32("llama.block_count", 1)
    w.add_uint32("general.alignment", 32)
    raw_tensor(w, "f32", Q.F32, 8, 2)
    raw_tensor(w, "q4_0", Q.Q4_0, 32, 1)


def every_tensor_type(w):
    w.add_custom_alignment(64)
    for ty in BLOCKS:
        _, bl = BLOCKS[ty]
        raw_tensor(w, "t." + ty.name.lower(), ty, bl if bl > 1 else 4, 2, fill=0x3C)


def bpe_tokenizer(w):
    """A byte-level BPE vocabulary: the 256 byte characters, a few merges, special tokens."""
    chars = []
    nxt = 0x100
    for b in range(256):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE:
            chars.append(chr(b))
        else:
            chars.append(chr(nxt))
            nxt += 1
    merges = ["\u0120 t", "h e", "\u0120t he", "i n", "\u0120 a"]
    merged = [m.replace(" ", "", 1) for m in merges]
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + chars + merged + ["<tool>"]
    types = [3, 3, 3] + [1] * (len(chars) + len(merged)) + [4]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_string("tokenizer.chat_template",
                 "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")


def spm_tokenizer(w):
    """A SentencePiece vocabulary: <unk> <s> </s>, byte tokens, pieces with scores, a user-defined token."""
    pieces = ["\u2581", "a", "b", "\u2581a", "ab", "\u2581ab", "\u00e9", "<|user|>"]
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + pieces
    types = [2, 3, 3] + [6] * 256 + [1] * (len(pieces) - 1) + [4]
    scores = [0.0] * (3 + 256) + [-float(i) for i in range(len(pieces))]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_bool("tokenizer.ggml.add_space_prefix", False)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def v2(path):
    """The same file with version 2 in its header (v2 and v3 share the layout for little-endian files)."""
    with open(path, "r+b") as f:
        f.seek(4)
        f.write(struct.pack("<I", 2))


def many_keys(n, duplicate_last):
    """GGUF bytes of `n` one-byte-valued keys, written by hand; the last repeats the first if asked. The
    duplicate-key check was a scan of all earlier keys (O(n^2): 100,000 keys in a 2 MB file took 20 s);
    this is its regression seed, small enough to fuzz (the timing itself is checked in fuzz/README.md)."""
    b = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, n))
    for i in range(n):
        k = b"k%05d" % (0 if duplicate_last and i == n - 1 else i)
        b += struct.pack("<Q", len(k)) + k + struct.pack("<I", 0) + b"\x01"
    b += b"\0" * (-len(b) % 32)
    return bytes(b)


def gguf_header_seeds():
    write(out("gguf_header", "empty.gguf"), lambda w: None)
    write(out("gguf_header", "all-value-types.gguf"), all_value_types)
    write(out("gguf_header", "every-tensor-type.gguf"), every_tensor_type)
    p = out("gguf_header", "every-tensor-type-v2.gguf")
    write(p, every_tensor_type)
    v2(p)
    write(out("gguf_header", "bpe-tokenizer.gguf"), bpe_tokenizer, arch="gpt2")
    write(out("gguf_header", "spm-tokenizer.gguf"), spm_tokenizer)
    shutil.copy(os.path.join(ROOT, "tests", "data", "spm-tiny.gguf"), out("gguf_header", "spm-tiny.gguf"))
    with open(out("gguf_header", "many-keys.gguf"), "wb") as f:
        f.write(many_keys(400, False))
    with open(out("gguf_header", "many-keys-duplicate.gguf"), "wb") as f:
        f.write(many_keys(400, True))


TEXTS = [
    "",
    "Hello world!",
    "The quick brown fox jumps over the lazy dog. It's 12345 o'clock; we'll see.",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|><s></s><unk><|im_end|>",
    "  leading and trailing spaces   \n\n\t\ttabs\r\n",
    "caf\u00e9 na\u00efve \u00fcber \u0416\u0438\u0437\u043d\u044c \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "emoji \U0001F600\U0001F469\u200d\U0001F4BB flags \U0001F1EB\U0001F1F7",
    "\u2581\u2581spm\u2581space",
    "def f(x):\n    return x**2  # comment\n",
    "\u0000\u0001\u007f\u0080\u00ff",
    "a<tool>b <tool><tool> <|sep|> <to<tool>ol>",
    "bytes without a SmolLM2 token: \u0004\u0006\u0013 \U00040000 \U0010FFFF",
]


def tokenizer_seeds():
    for i, t in enumerate(TEXTS):
        with open(out("tokenizer", "text-%02d" % i), "wb") as f:
            f.write(b"\x00" + t.encode("utf-8"))
    with open(out("tokenizer", "invalid-utf8"), "wb") as f:
        f.write(b"\x00ab\xff\xfe\xc3(\xe2\x82")
    ids = [
        [0, 1, 2, 3, 4, 5],
        # Byte tokens of a split emoji in the SentencePiece vocabulary, then <0xF0> alone.
        [3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80, 3 + 0xF0],
        [1000, 2000, 49151, 49152, 0xFFFFFFFF],
    ]
    for i, l in enumerate(ids):
        with open(out("tokenizer", "ids-%02d" % i), "wb") as f:
            f.write(b"\x01" + b"".join(struct.pack("<I", x) for x in l))


HOSTILE = [
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}",
    "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}",
    "{% for message in messages %}{{ message.content }",
    "{{ raise_exception('no system messages, please') }}",
    "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
    "{% macro f(x) %}{{ x }}{{ f(x) }}{% endmacro %}{{ f(1) }}",
    "{{ messages[0].content.strip().startswith('You') }}{{ messages|tojson }}{{ bos_token ~ eos_token }}",
]


def chat_template_seeds():
    d = os.path.join(ROOT, "tests", "goldens", "chat_template")
    for name in sorted(os.listdir(d)):
        if name.endswith(".jinja"):
            with open(os.path.join(d, name), "rb") as f:
                src = f.read()
            with open(out("chat_template", name), "wb") as f:
                f.write(b"\x01" + src)
    model = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if os.path.exists(model):
        r = gguf.GGUFReader(model)
        field = r.fields["tokenizer.chat_template"]
        src = bytes(field.parts[field.data[0]])
        with open(out("chat_template", "smollm2.jinja"), "wb") as f:
            f.write(b"\x01" + src)
    for i, t in enumerate(HOSTILE):
        with open(out("chat_template", "hostile-%02d" % i), "wb") as f:
            f.write(b"\x00" + t.encode("utf-8"))


if __name__ == "__main__":
    targets = sys.argv[1:] or ["gguf_header", "tokenizer", "chat_template"]
    for t in targets:
        {"gguf_header": gguf_header_seeds, "tokenizer": tokenizer_seeds,
         "chat_template": chat_template_seeds}[t]()
    for t in targets:
        d = os.path.join(SEEDS, t)
        print(t, len(os.listdir(d)), "files", sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)), "bytes")

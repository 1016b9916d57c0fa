#!/usr/bin/env python3
"""Tokenizer goldens: the ids llama.cpp gives for a varied set of strings.

Run from the repository root with a venv that has llama-cpp-python and gguf:

    python tests/goldens/make_tokenizer_goldens.py

Vocabularies:
  - the real SmolLM2-135M-Instruct model (gpt2 BPE, pre-tokenizer "smollm");
  - the same vocabulary and merges under other pre-tokenizers, written to /tmp as vocab-only GGUFs
    (the Rust test rebuilds each from the real model's header with tokenizer.ggml.pre replaced);
  - a tiny SentencePiece vocabulary, written to tests/data/spm-tiny.gguf (committed: the Rust test reads
    it), and the same with tokenizer.ggml.add_space_prefix = false (in /tmp; the test flips the key).

Writes tests/goldens/tokenizer/<name>.json: per string the ids with special tokens parsed
(tokenize(..., add_bos=False, special=True)) and without, plus the vocabulary's BOS/EOS, add_bos and its
end-of-generation ids.

"""
import json
import os
import sys

import gguf
import llama_cpp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
OUT = os.path.join(ROOT, "tests", "goldens", "tokenizer")
SPM_PATH = os.path.join(ROOT, "tests", "data", "spm-tiny.gguf")

BPE_PRES = ["llama-bpe", "qwen2", "deepseek-llm", "default", "deepseek-v3", "youtu", "glm4", "gpt-4o", "deepseek-coder"]

TEXTS = [
    "",
    " ",
    "  ",
    "\n",
    "\n\n\n",
    "\t",
    "Hello world",
    " Hello world",
    "Hello  world",
    "hello   \n  world  ",
    "It's a test. I'm sure they'll've done it, we'd say; you're right, I've seen it.",
    "IT'S LOUD, WE'LL SEE. 'quoted' and don't",
    "123",
    "1234567890",
    "3.14159 and 2,000,000 and 007",
    "x = 12345 + 678 * 9",
    "👋 Hello 🌍! 🧑‍💻 coding 🇫🇷",
    "日本語のテキストです。カタカナ",
    "中文测试，你好！世界",
    "한국어 텍스트 ㄱㄴ",
    "Привет, мир! Ελληνικά",
    "مرحبا بالعالم",
    "हिन्दी भाषा",
    "naïve café résumé, e\u0301 combining",
    "def f(x):\n    return x**2  # square\n",
    "fn main() {\n\tprintln!(\"hi {}\", 42);\n}\n",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "text<|im_end|>more",
    "abc<|endoftext|>def <|im_start|>",
    "<|im_start",
    "<repo_name><reponame>x",
    "   leading and trailing   ",
    "a\r\nb\r\n\r\n",
    "\u00a0nbsp\u2003em\u3000ideographic",
    "tabs\t\tand\t spaces",
    "mixed123abc456DEF",
    "!!!???... --- ***",
    "$100 & 50% off #deal @user ~tilde^ `tick`",
    "http://example.com/path?q=1&r=2#frag",
    "zero\u200bwidth and soft\u00adhyphen",
    "a" * 300,
    "\u00ff\u0100 latin ext",
    "ctrl\x01\x7fchars",
    "CamelCaseWord HTTPServer iPhone",
    "Ünïcödé ÀÉÎÕÜ",
    "<tool>call<|sep|> hello world",
]


def copy_fields(reader, writer, replace):
    """Copies every metadata key of `reader` to `writer`, with `replace` (key -> value or None to drop)."""
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name in replace:
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), vtype, sub)
    for name, value in replace.items():
        if value is not None:
            writer.add_key_value(name, value[0], value[1])


def write_vocab_only(src_reader, path, replace):
    w = gguf.GGUFWriter(path, arch="llama")
    copy_fields(src_reader, w, replace)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()


def spm_pieces():
    """A tiny SentencePiece vocabulary: specials, 256 byte tokens, merges in score order, single characters."""
    merges = [
        "▁t", "he", "▁a", "in", "er", "▁the", "on", "▁w", "re", "an", "or", "ll", "▁s", "en", "is", "ed", "▁o",
        "▁h", "it", "at", "ing", "▁c", "nd", "▁f", "ou", "▁b", "es", "▁wor", "ld", "▁world", "▁he", "llo",
        "▁hello", "▁H", "ello", "▁Hello", "▁I", "'s", "▁is", "▁it", "▁in", "▁of", "▁and", "▁▁", "▁▁▁▁", "▁te",
        "st", "▁test", "日本", "▁日本", "ab", "bc",
    ]
    singles = list("▁abcdefghijklmnopqrstuvwxyzHIWT.,!?'0123456789日本語é")
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    pieces += [(f"<0x{b:02X}>", 0.0, 6) for b in range(256)]
    for i, m in enumerate(merges):
        # "ab" and "bc" share a score: the leftmost pair must win the tie.
        score = -20.0 if m in ("ab", "bc") else -float(i)
        pieces.append((m, score, 1))
    pieces += [(c, -100.0 - i, 1) for i, c in enumerate(singles)]
    pieces += [("<tool>", 0.0, 4), ("<|sep|>", 0.0, 3)]
    return pieces


def write_spm(path, src_reader, add_space_prefix=None):
    pieces = spm_pieces()
    w = gguf.GGUFWriter(path, arch="llama")
    # The model hyperparameters llama.cpp reads even for a vocab-only load; the vocabulary is our own.
    for name, field in src_reader.fields.items():
        if name.startswith("llama.") and name != "llama.vocab_size":
            w.add_key_value(name, field.contents(), field.types[0])
    w.add_key_value("llama.vocab_size", len(pieces), gguf.GGUFValueType.UINT32)
    w.add_string("general.name", "spm-tiny")
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", [p[0] for p in pieces])
    w.add_key_value("tokenizer.ggml.scores", [p[1] for p in pieces], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.FLOAT32)
    w.add_key_value("tokenizer.ggml.token_type", [p[2] for p in pieces], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    if add_space_prefix is not None:
        w.add_bool("tokenizer.ggml.add_space_prefix", add_space_prefix)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()


def golden(path, name, pre):
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    null = -1
    opt = lambda t: None if t == null else int(t)
    cases = []
    for text in TEXTS:
        b = text.encode()
        ids = llm.tokenize(b, add_bos=False, special=True)
        plain = llm.tokenize(b, add_bos=False, special=False)
        cases.append({"text": text, "ids": ids, "ids_plain": plain})
    return {
        "vocab": name,
        "pre": pre,
        "n_vocab": n,
        "bos": opt(llama_cpp.llama_vocab_bos(vocab)),
        "eos": opt(llama_cpp.llama_vocab_eos(vocab)),
        "eot": opt(llama_cpp.llama_vocab_eot(vocab)),
        "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
        "eog": [i for i in range(n) if llama_cpp.llama_vocab_is_eog(vocab, i)],
        "cases": cases,
    }


def save(obj, fname):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, fname), "w") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"), indent=None)
        f.write("\n")
    print(fname, len(obj["cases"]), "cases; eog", obj["eog"][:8])


def main():
    reader = gguf.GGUFReader(MODEL)
    save(golden(MODEL, "SmolLM2-135M-Instruct", "smollm"), "smollm.json")

    # The real vocabulary under other pre-tokenizers: header only, no tensors.
    for pre in BPE_PRES:
        tmp = f"/tmp/wick-vocab-{pre}.gguf"
        write_vocab_only(reader, tmp, {"tokenizer.ggml.pre": (pre, gguf.GGUFValueType.STRING)})
        save(golden(tmp, "SmolLM2-135M-Instruct", pre), f"{pre}.json")

    os.makedirs(os.path.dirname(SPM_PATH), exist_ok=True)
    write_spm(SPM_PATH, reader)
    save(golden(SPM_PATH, "spm-tiny", None), "spm.json")
    tmp = "/tmp/wick-spm-no-prefix.gguf"
    write_spm(tmp, reader, add_space_prefix=False)
    save(golden(tmp, "spm-tiny, add_space_prefix=false", None), "spm-no-prefix.json")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Greedy-decoding goldens, made with llama.cpp on the CPU, for SmolLM2-135M-Instruct re-quantized by `wick quantize`.

Run from the repository root, after `cargo build --release`, with the venv that make_generation_goldens.py uses
(llama-cpp-python built with CMAKE_ARGS="-DGGML_NATIVE=OFF"; `gguf` too, for the tensor-type summary):

    python tests/goldens/make_quantized_goldens.py [--wick target/release/wick] [--keep DIR]
                                                   [models/SmolLM2-135M-Instruct.Q4_1.gguf]

For each of Q4_0, Q8_0, Q4_K, Q5_K, Q6_K it runs `wick quantize <source> <tmp>/smollm2.<TYPE>.gguf <TYPE>` (a few
seconds each), loads the result in llama.cpp (n_ctx 512, 2 threads, logits_all) and decodes greedily after two
prompts, "The capital of France is" (raw) and the ChatML prompt for "What is 2+2?", for at most 16 new tokens,
stopping at an end-of-generation token. The files go in a temporary folder, or in DIR with --keep.

Writes tests/goldens/smollm2-quantized-greedy.json: {made_with, source_model, source_model_sha256, files: [{type,
sha256, bytes, tensor_types, wick_quantize_output, llama_load_complaints, records}]}. The records have the shape of
make_generation_goldens.py's (whose greedy() this reuses): prompt, prompt_ids, gen_ids, text, and per step the chosen
id, its logit, the gap between the two highest logits and the top 8 (id, logit) pairs. tensor_types counts the
file's tensors per ggml type (from gguf's GGUFReader; absent when gguf is not installed). llama_load_complaints holds
the lines of llama.cpp's load log that mention a warning or an error (empty: it loaded the file without complaint).
agrees_with_q4_1 gives, per record, how many leading generated ids equal those of the source model's golden in
tests/goldens/llama.cpp/smollm2-q4_1-greedy.json (or tests/goldens/smollm2-q4_1-greedy.json), a quick sign of
whether the re-quantized model still says the same thing.

Why: these goldens check two things at once. That the files Wick writes are valid GGUF that llama.cpp reads and
runs as it would its own (layout, block packing, the fallback types for rows that K-quants cannot hold), and, with
the sha256, that Wick's quantizer output does not drift; and they give Wick's inference on those types a reference
to compare its own greedy decoding against.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import llama_cpp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_generation_goldens as gen  # noqa: E402

TYPES = ["Q4_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K"]
MAX_NEW = 16
PROMPTS = ["The capital of France is", gen.chatml("What is 2+2?")]
HERE = os.path.dirname(os.path.abspath(__file__))
DEST = os.path.join(HERE, "smollm2-quantized-greedy.json")
SOURCE = "models/SmolLM2-135M-Instruct.Q4_1.gguf"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def quantize(wick, src, dst, qtype):
    """Runs `wick quantize`; returns its combined output (it reports tensor counts per type)."""
    p = subprocess.run([wick, "quantize", src, dst, qtype], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"wick quantize {qtype} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return (p.stdout + p.stderr).strip()


def tensor_types(path):
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    counts = {}
    for t in GGUFReader(path).tensors:
        name = t.tensor_type.name
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def load(path):
    """Loads a model in llama.cpp with its log on; returns (llm, the log lines that mention a warning or error)."""
    with tempfile.TemporaryFile(mode="w+b") as log:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            llm = llama_cpp.Llama(model_path=path, n_ctx=512, logits_all=True, n_threads=2, seed=0, verbose=True)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        lines = log.read().decode("utf-8", errors="replace").splitlines()
    complaints = [l for l in lines if any(w in l.lower() for w in ("warn", "error", "fail", "invalid"))]
    return llm, complaints


def reference_ids():
    for p in [os.path.join(HERE, "llama.cpp", "smollm2-q4_1-greedy.json"), os.path.join(HERE, "smollm2-q4_1-greedy.json")]:
        if os.path.exists(p):
            with open(p) as f:
                return {r["prompt"]: r["gen_ids"] for r in json.load(f)["records"]}
    return {}


def agreement(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", nargs="?", default=SOURCE)
    ap.add_argument("--wick", default="target/release/wick")
    ap.add_argument("--keep", help="write the quantized files here and keep them")
    args = ap.parse_args()
    gen.MAX_NEW = MAX_NEW  # greedy() reads the module's limit
    ref = reference_ids()
    with tempfile.TemporaryDirectory() as tmp:
        outdir = args.keep or tmp
        os.makedirs(outdir, exist_ok=True)
        files = []
        for qtype in TYPES:
            path = os.path.join(outdir, f"smollm2.{qtype}.gguf")
            wick_out = quantize(args.wick, args.source, path, qtype)
            llm, complaints = load(path)
            vocab = llama_cpp.llama_model_get_vocab(llm.model)
            records = [gen.greedy(llm, vocab, p) for p in PROMPTS]
            del llm
            entry = {
                "type": qtype,
                "sha256": sha256(path),
                "bytes": os.path.getsize(path),
                "tensor_types": tensor_types(path),
                "wick_quantize_output": wick_out,
                "llama_load_complaints": complaints,
                "agrees_with_q4_1": [agreement(r["gen_ids"], ref[r["prompt"]]) if r["prompt"] in ref else None
                                     for r in records],
                "records": records,
            }
            files.append(entry)
            print(qtype, entry["sha256"][:16], entry["tensor_types"], "complaints:", len(complaints))
            for c in complaints:
                print("   ", c)
            for r, agree in zip(records, entry["agrees_with_q4_1"]):
                print("   ", repr(r["prompt"][:30]), r["gen_ids"][:8], f"agrees {agree}", repr(r["text"]))
    version = subprocess.run([args.wick, "--version"], capture_output=True, text=True).stdout.strip()
    out = {
        "made_with": f"{version} quantize; llama-cpp-python {llama_cpp.__version__}, CPU, n_threads=2, n_ctx=512, "
                     f"argmax, at most {MAX_NEW} new tokens",
        "source_model": os.path.basename(args.source),
        "source_model_sha256": sha256(args.source),
        "files": files,
    }
    with open(DEST, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", DEST)


if __name__ == "__main__":
    main()

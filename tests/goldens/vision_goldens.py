"""What the vision golden scripts (make_random_gemma3_vision.py, make_random_gemma4_vision.py and
make_random_qwen35_vision.py) share: the random weights' helpers, the encoder's size keys and the end of
each GGUF file they write, the test images, llama.cpp's reading of an image prompt (libmtmd, through
tests/goldens/mtmd_embed.cpp) and the golden's JSON. Needs numpy and Pillow; the scripts pass in their
gguf writers. Each helper that takes rng draws one array from it, so a script's files follow from its
seed and the order of its calls.
"""
import json
import os
import subprocess

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The test images, from the repository root: make_random_gemma3_vision.py writes the first (100 x 75),
# make_random_gemma4_vision.py the second (37 x 120); the later scripts read them.
PICTURE = "tests/data/vision-test.png"
TALL = "tests/data/vision-test-tall.png"


def mat(rng, rows, cols, scale=1.0):
    """An F16 (rows, cols) matrix of standard deviation scale / sqrt(cols): unit-variance inputs give
    outputs of standard deviation about scale."""
    return (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float16)


def gain(rng, n, center=1.0):
    """A norm's F32 gains: center plus noise of standard deviation 0.1."""
    return (center + 0.1 * rng.standard_normal(n)).astype(np.float32)


def bias(rng, n, scale=0.1):
    """An F32 bias (or LayerNorm shift) of standard deviation scale."""
    return (scale * rng.standard_normal(n)).astype(np.float32)


def add_tower(wr, shape):
    """The vision encoder's size keys, from a script's shape dict (patch, d, n_ff, n_layer, n_head)."""
    wr.add_vision_patch_size(shape["patch"])
    wr.add_vision_embedding_length(shape["d"])
    wr.add_vision_feed_forward_length(shape["n_ff"])
    wr.add_vision_block_count(shape["n_layer"])
    wr.add_vision_head_count(shape["n_head"])


def write_gguf(wr, w):
    """The tensors w (name: array, in the order given) after the metadata already added to the
    GGUFWriter wr; writes the file and closes it."""
    for name, t in w.items():
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def picture(path, rng, width, height, slopes):
    """A width x height PNG test image: per channel a gradient (red x * slopes[0], green y * slopes[1],
    blue (x + y) * slopes[2]) with random colours (0 to 89 a channel) added, clipped to 255."""
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * slopes[0], y * slopes[1], (x + y) * slopes[2]], -1)
    noise = rng.integers(0, 90, (height, width, 3))
    Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8)).save(path)


def llama_cpp_run(text, mmproj, image, prompt, n_greedy, min_tokens=-1, max_tokens=-1):
    """The image's embeddings, the prompt's tokens, the logits after it (None where n_greedy is 0) and
    the greedy reply, from libmtmd and llama.cpp (the text model and mmproj files given; LLAMA_CPP and
    LLAMA_CPP_BUILD say where its sources and build are), through tests/goldens/mtmd_embed.cpp.
    min_tokens / max_tokens: the image's token budget where positive, the projector's own where -1."""
    src, build = os.environ["LLAMA_CPP"], os.environ["LLAMA_CPP_BUILD"]
    exe = os.path.join(build, "mtmd_embed")
    subprocess.run(
        ["c++", "-O2", "-std=c++17", os.path.join(ROOT, "tests/goldens/mtmd_embed.cpp"), "-o", exe,
         f"-I{src}/include", f"-I{src}/ggml/include", f"-I{src}/tools/mtmd",
         f"-L{build}/bin", "-lmtmd", "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{build}/bin"],
        check=True)
    args = [exe, text, mmproj, image, prompt, str(n_greedy)]
    if (min_tokens, max_tokens) != (-1, -1):
        args += [str(min_tokens), str(max_tokens)]
    out = subprocess.run(args, check=True, capture_output=True, text=True, cwd=ROOT)
    lines = [line.split() for line in out.stdout.strip().splitlines()]
    embd = np.array([[float(v) for v in l[1:]] for l in lines if l[0] == "embd"])
    prompt_ids = next([int(v) for v in l[1:]] for l in lines if l[0] == "prompt")
    logits = next(([round(float(v), 4) for v in l[1:]] for l in lines if l[0] == "logits"), None)
    greedy = [{"id": int(l[1]), "gap": round(float(l[2]), 4)} for l in lines if l[0] == "greedy"]
    return embd, prompt_ids, logits, greedy


def row_cosines(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def rounded(x):
    """Embeddings (n_tokens, width) as lists, to 5 decimals, as the goldens hold them."""
    return [[round(float(v), 5) for v in row] for row in x]


def golden(reference, seed, mmproj, text, prompt_text, prompt_ids, logits, greedy):
    """The fields every vision golden opens with (tests/common/vision.rs reads them alike): what made it,
    the seed, the files, and the prompt around PICTURE with llama.cpp's reading of it (llama_cpp_run's
    prompt tokens, logits and greedy reply). reference: the f64 reference's file in tests/goldens."""
    return {
        "made_with": f"llama.cpp b11312 libmtmd (CPU, mtmd_encode_chunk) and tests/goldens/{reference}",
        "seed": seed,
        "mmproj": mmproj,
        "text_model": text,
        "image": PICTURE,
        "prompt_text": prompt_text,
        "prompt_ids": prompt_ids,
        "first_logits": logits,
        "greedy": greedy,
    }


def write_golden(path, out):
    """The golden out as one line of compact JSON."""
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}")

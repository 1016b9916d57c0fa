#!/usr/bin/env python3
"""Checks /v1/embeddings of a running `wick serve` with the official `openai` client and raw HTTP.

    python native/tests/embeddings_client.py BASE_URL API_KEY GOLDENS FILE

BASE_URL is the server's http://host:port/v1, started with --api-key API_KEY -c 64 on an embedding model:
tests/data/random-llama3.gguf with llama.pooling_type set to mean (native/tests/serve.rs writes it).
GOLDENS is tests/goldens/embeddings.json; FILE names its record ("tests/data/random-llama3.gguf"), whose
vectors are llama.cpp's for the same texts. Exits non-zero with a message on the first failed check.
"""
import json
import math
import sys

import openai

import http_check
from http_check import check, openai_error

BASE, KEY, GOLDENS, FILE = sys.argv[1:5]
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)
MIN_COSINE = 0.9999


def raw(method, path, body=None, key=KEY):
    return http_check.raw(BASE, key, method, path, body)


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    golden = json.load(open(GOLDENS))
    record = next(r for r in golden["records"] if r["file"] == FILE and r["pooling"] == "mean")
    texts = [i["text"] for i in record["inputs"]]
    want = [i["llama_cpp"] for i in record["inputs"]]

    # The client asks for base64 unless told otherwise, and decodes it.
    r = client.embeddings.create(model="any", input=texts)
    check([d.index for d in r.data] == list(range(len(texts))), "one vector per input, in order")
    cosines = [cosine(d.embedding, w) for d, w in zip(r.data, want)]
    check(min(cosines) >= MIN_COSINE, f"base64 vectors match llama.cpp's (cosines {cosines})")
    n_tokens = sum(len(i["ids"]) for i in record["inputs"])
    check(r.usage.prompt_tokens == n_tokens and r.usage.total_tokens == n_tokens,
          f"usage counts the {n_tokens} tokens llama.cpp made of the texts")

    r = client.embeddings.create(model="any", input=texts[0], encoding_format="float")
    check(cosine(r.data[0].embedding, want[0]) >= MIN_COSINE, "a single text, as floats")
    full = r.data[0].embedding

    r = client.embeddings.create(model="any", input=record["inputs"][0]["ids"], encoding_format="float")
    check(cosine(r.data[0].embedding, full) > 0.999999, "token ids embed as their text does")

    r = client.embeddings.create(model="any", input=texts[0], dimensions=32, encoding_format="float")
    cut = r.data[0].embedding
    norm = math.sqrt(sum(x * x for x in full[:32]))
    check(len(cut) == 32 and max(abs(a - b / norm) for a, b in zip(cut, full)) < 1e-5,
          "dimensions keeps the first values, normalized again")

    long_text = " ".join(["harbour"] * 80)
    status, _, body = raw("POST", "/v1/embeddings", {"input": long_text})
    check(status == 400 and openai_error(body) and "context" in body["error"]["message"],
          f"an input longer than the context is refused: {body}")
    status, _, body = raw("POST", "/v1/embeddings", {"input": long_text, "truncate": True})
    check(status == 200 and body["usage"]["prompt_tokens"] == 64, "or cut to fit when asked")

    for bad, param in [({"input": []}, "input"), ({"input": ""}, "input"),
                       ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
                       ({"input": "x", "dimensions": 100000}, "dimensions"),
                       ({"input": [[1, 2], [999999]]}, "input")]:
        status, _, body = raw("POST", "/v1/embeddings", bad)
        check(status == 400 and openai_error(body) and body["error"]["param"] == param,
              f"{json.dumps(bad)} is a 400 naming {param}")
    status, _, body = raw("POST", "/v1/embeddings", {"input": "x"}, key="wrong")
    check(status == 401, "the key is wanted here too")

    try:
        client.chat.completions.create(model="any", messages=[{"role": "user", "content": "hi"}])
        check(False, "a chat request to an embedding model is refused")
    except openai.BadRequestError as e:
        check("embedding model" in str(e), f"a chat request to an embedding model is a 400: {e}")


if __name__ == "__main__":
    main()

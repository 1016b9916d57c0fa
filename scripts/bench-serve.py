#!/usr/bin/env python3
"""Aggregate decode speed of an OpenAI-compatible server under concurrent clients, and the time to
the first token with a long prompt prefix cached against without. Runs against `wick serve` and
llama-server alike (start each with the same model, context and -np).

    python scripts/bench-serve.py URL [--clients 1,2,4,8] [--tokens 32] [--prefix 1000]

For each count of clients, that many threads each ask for a greedy text completion of --tokens
tokens, all at once, each with its own prompt; the figure is the completion tokens of all of them
over the wall time from the first request to the last reply (prompts included, as a user waits for
them). With --prefix N, a prompt of about N tokens is sent twice with different endings, streamed,
and the time to the first streamed token of each is printed: the second reuses the first's cache.
Uses only the standard library.
"""
import argparse
import http.client
import json
import threading
import time
import urllib.parse

PROMPTS = [
    "Once upon a time, in a small village by the sea,",
    "The history of the printing press begins",
    "Here is a recipe for a simple tomato soup:",
    "The three laws of motion are",
    "In the year 2100, cities will",
    "A good way to learn a new language is",
    "The main causes of the French Revolution were",
    "To build a wooden bookshelf, first",
]


def post(url, path, body, stream=False):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
    conn.request("POST", u.path.rstrip("/") + path, body=json.dumps(body),
                 headers={"Content-Type": "application/json", "Authorization": "Bearer none"})
    return conn.getresponse()


def complete(url, prompt, tokens):
    body = {"model": "any", "prompt": prompt, "max_tokens": tokens, "temperature": 0}
    r = post(url, "/completions", body)
    reply = json.loads(r.read())
    return reply["usage"]["completion_tokens"]


def first_token_seconds(url, prompt):
    start = time.monotonic()
    r = post(url, "/completions", {"model": "any", "prompt": prompt, "max_tokens": 2, "temperature": 0,
                                   "stream": True})
    for line in r:
        if line.startswith(b"data: ") and b'"text"' in line:
            first = time.monotonic() - start
            r.read()
            return first
    raise RuntimeError("no streamed token")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--clients", default="1,2,4,8")
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--prefix", type=int, default=0)
    a = p.parse_args()
    complete(a.url, "Hello", 2)  # warm up: shaders, tuning, the first allocations
    for n in [int(c) for c in a.clients.split(",") if c]:
        counts = [0] * n

        def client(i):
            counts[i] = complete(a.url, PROMPTS[i % len(PROMPTS)], a.tokens)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - start
        print(f"{n} clients: {sum(counts)} tokens in {wall:.1f} s, {sum(counts) / wall:.2f} tok/s aggregate",
              flush=True)
    if a.prefix:
        # About one token per word of this text on the common tokenizers.
        prefix = " ".join(f"word{i % 97}" for i in range(a.prefix // 2))
        cold = first_token_seconds(a.url, prefix + " The end. Question one:")
        warm = first_token_seconds(a.url, prefix + " The end. Question two:")
        print(f"first token after a {a.prefix}-token prefix: {cold:.2f} s uncached, {warm:.2f} s cached",
              flush=True)


if __name__ == "__main__":
    main()

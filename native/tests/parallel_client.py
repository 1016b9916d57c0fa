#!/usr/bin/env python3
"""Checks a running `wick serve --parallel 4` with the official `openai` client, threads and raw HTTP.

    WICK_SERVER_PID=PID python native/tests/parallel_client.py BASE_URL API_KEY [speculating]

BASE_URL is the server's http://host:port/v1, started with --api-key API_KEY -c 1024 -np 4 on
SmolLM2-135M-Instruct Q4_1 (256 positions a slot), speculating or not; WICK_FULL_REPLIES=1 sends 200
mixed requests rather than 24 (16 speculating). Exits non-zero with a message on the first failed
check. A reply given alone runs through the one-sequence decode step; given together, through the
parallel step (the batched products): the greedy tokens must be the same.
"""
import os
import random
import sys
import threading
import time

import openai

import http_check
from http_check import check, openai_error

BASE, KEY = sys.argv[1:3]
SPECULATING = "speculating" in sys.argv[3:]
PID = int(os.environ["WICK_SERVER_PID"])
# Waves of 8 mixed requests: 3 (2 where every step drafts: its steps cost several passes on a CPU
# adapter), or 25 (200 requests, about 10 minutes on lavapipe) with WICK_FULL_REPLIES.
WAVES = 25 if os.environ.get("WICK_FULL_REPLIES") else 2 if SPECULATING else 3
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)

# Four requests that differ in kind, length, budget and stop strings.
REQUESTS = [
    dict(prompt="The capital of France is", max_tokens=8),
    dict(prompt="Once upon a time", max_tokens=12, stop=["."]),
    dict(messages=[{"role": "user", "content": "Name a color."}], max_tokens=6),
    dict(prompt="def fibonacci(n):", max_tokens=10, logprobs=2),
]


def ask(request):
    """The reply's text, finish reason and (for text completions with logprobs) its tokens' logprobs."""
    if "messages" in request:
        r = client.chat.completions.create(model="any", temperature=0, **request)
        return r.choices[0].message.content, r.choices[0].finish_reason, None
    if request.get("stream"):
        # Each piece's tokens' logprobs come with it.
        pieces = [c.choices[0] for c in client.completions.create(model="any", temperature=0, **request)]
        log_probs = [x for p in pieces if p.logprobs for x in p.logprobs.token_logprobs]
        return "".join(p.text for p in pieces), pieces[-1].finish_reason, log_probs
    r = client.completions.create(model="any", temperature=0, **request)
    lp = r.choices[0].logprobs
    return r.choices[0].text, r.choices[0].finish_reason, lp and lp.token_logprobs


def together(requests):
    out = [None] * len(requests)

    def run(i):
        out[i] = ask(requests[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def rss_kib():
    with open(f"/proc/{PID}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def metrics():
    _, _, text = http_check.raw(BASE, KEY, "GET", "/metrics")
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line.startswith("wick_")}


def main():
    alone = [ask(r) for r in REQUESTS]
    # Each greedy request without logprobs, alone in its slot, steps a step ahead, but on a server
    # that speculates (a step ahead that a check took back would cost a step).
    ahead = metrics()["wick_steps_ahead_total"]
    check((ahead == 0) == SPECULATING, f"a slot stepping alone steps ahead unless it speculates ({ahead} steps)")
    start = time.monotonic()
    # Together, the one with logprobs streamed.
    both = together(REQUESTS[:3] + [dict(REQUESTS[3], stream=True)])
    for a, b, r in zip(alone, both, REQUESTS):
        check(a[:2] == b[:2], f"given together, {str(r)[:40]}... is answered as alone ({a[:2]} / {b[:2]})")
    lp_alone, lp_together = alone[3][2], both[3][2]
    check(len(lp_alone) == len(lp_together)
          and all(abs(x - y) < 1e-3 for x, y in zip(lp_alone, lp_together)),
          f"logprobs together and streamed are those alone ({lp_alone[:3]} / {lp_together[:3]})")
    print(f"4 requests together: {time.monotonic() - start:.1f} s", flush=True)

    # A request that arrives mid-generation joins at the next step: it is answered while the long
    # one that was already generating goes on.
    done = {}
    generating = threading.Event()

    def long_one():
        done["long_start"] = time.monotonic()
        stream = client.completions.create(model="any", temperature=0, prompt="Once upon a time",
                                           max_tokens=30, stream=True)
        for chunk in stream:
            done["long_pieces"] = done.get("long_pieces", 0) + 1
            generating.set()
        done["long"] = time.monotonic()

    long_thread = threading.Thread(target=long_one)
    long_thread.start()
    generating.wait(timeout=600)
    ask(dict(prompt="The capital of France is", max_tokens=2))
    done["short"] = time.monotonic()
    pieces_by_then = done["long_pieces"]
    long_thread.join()
    check(done["short"] < done["long"] and pieces_by_then < done["long_pieces"],
          f"a request arriving mid-generation is answered while the other goes on "
          f"({done['short'] - done['long_start']:.1f} s against {done['long'] - done['long_start']:.1f} s; "
          f"{pieces_by_then} of the long reply's {done['long_pieces']} pieces had come)")

    # The same conversation again reuses the slot that holds it.
    chat = dict(messages=[{"role": "user", "content": "What is the capital of Italy?"}], max_tokens=3)
    first = client.chat.completions.create(model="any", temperature=0, **chat)
    again = client.chat.completions.create(model="any", temperature=0, **chat)
    cached = again.usage.prompt_tokens_details.cached_tokens
    check(cached == again.usage.prompt_tokens - 1 and first.choices[0].message.content
          == again.choices[0].message.content,
          f"a conversation a slot holds is not read again ({cached} of {again.usage.prompt_tokens} cached)")

    # A slot's context is the server's split four ways.
    status, _, payload = http_check.raw(BASE, KEY, "POST", "/v1/completions",
                                        {"model": "any", "prompt": "hello " * 300, "max_tokens": 1})
    check(status == 400 and openai_error(payload) and "256" in payload["error"]["message"],
          f"a prompt longer than a slot's context is refused ({payload})")

    # Mixed requests, more than the slots, with clients that leave mid-stream: every finished reply
    # well-formed, nothing left running, memory flat.
    rng = random.Random(7)
    failures = []

    def mixed(i):
        leave = rng.random() < 0.3
        try:
            if leave:
                stream = client.completions.create(model="any", prompt=f"Count: {i},", max_tokens=30,
                                                   temperature=0.8, stream=True)
                for n, _ in enumerate(stream):
                    if n == 1:
                        break
                stream.close()
                return
            text, finish, _ = ask(dict(prompt=f"Item {i}:", max_tokens=rng.randint(1, 5)))
            if not isinstance(text, str) or finish not in ("stop", "length"):
                failures.append((i, text, finish))
        except Exception as e:  # noqa: BLE001 - any failure is reported
            failures.append((i, repr(e)))

    rss_before = None
    for wave in range(WAVES):
        threads = [threading.Thread(target=mixed, args=(wave * 8 + k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Memory is measured from after the first wave, which built what its mix of steps needs
        # (pipelines for each count of sequences, a draft model's among them).
        if rss_before is None:
            rss_before = rss_kib()
    check(not failures, f"{WAVES * 8} mixed requests at concurrency 8 with disconnects: all well-formed ({failures})")
    # The engine frees a slot whose client left at its next step: give the steps running then time
    # to end (a step that drafts with a model takes several passes on a software GPU).
    waited = 0
    while metrics()["wick_requests_processing"] > 0 and waited < 30:
        time.sleep(0.5)
        waited += 0.5
    m = metrics()
    check(m["wick_requests_processing"] == 0,
          f"nothing is left running ({m['wick_requests_processing']} after {waited} s)")
    status, _, _ = http_check.raw(BASE, None, "GET", "/health")
    grown = rss_kib() - rss_before
    check(status == 200 and grown < 16 * 1024, f"the server is up and its memory flat ({grown} KiB more)")
    print("all parallel checks passed")


if __name__ == "__main__":
    main()

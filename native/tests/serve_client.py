#!/usr/bin/env python3
"""Checks a running `wick serve` with the official `openai` client and raw HTTP.

    python native/tests/serve_client.py BASE_URL API_KEY WICK_BINARY MODEL GOLDENS

BASE_URL is the server's http://host:port/v1, started with --api-key API_KEY --cors -c 256
--max-body 65536 on MODEL (SmolLM2-135M-Instruct Q4_1); GOLDENS is llama.cpp's greedy goldens for it.
Exits non-zero with a message on the first failed check. Greedy text is compared with `wick run` on the
same rendered template, and with llama.cpp's goldens where their top two tokens are clearly apart.
"""
import json
import os
import subprocess
import sys
import threading
import time

import openai

import http_check
from http_check import check, openai_error

BASE, KEY, WICK, MODEL, GOLDENS = sys.argv[1:6]
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)

SYSTEM = "You are a helpful assistant."
QUESTION = "What is 2+2?"
# SmolLM2's chat template renders these messages so (tests/chat_template.rs checks the renderer against
# jinja2); `wick run` is given the rendered text.
RENDERED = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{QUESTION}<|im_end|>\n"
            "<|im_start|>assistant\n")
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]


def raw(method, path, body=None, headers=None, key=KEY):
    return http_check.raw(BASE, key, method, path, body, headers)


def main():
    models = client.models.list()
    check([m.id for m in models.data] == ["SmolLM2-135M-Instruct.Q4_1"], "/v1/models lists the model")
    status, _, body = raw("POST", "/v1/embeddings", {"input": "hello"})
    check(status == 400 and openai_error(body) and "no pooling" in body["error"]["message"],
          f"a chat model started without --pooling makes no embeddings: {body}")

    whole = client.chat.completions.create(model="any", messages=MESSAGES, temperature=0, max_tokens=12,
                                           extra_body={"an_unknown_field": [1, 2]})
    text = whole.choices[0].message.content
    check(whole.object == "chat.completion" and whole.choices[0].finish_reason in ("stop", "length"),
          f"a chat completion, unknown fields ignored ({text!r}, finish {whole.choices[0].finish_reason})")
    check(whole.usage.prompt_tokens > 20 and 0 < whole.usage.completion_tokens <= 12
          and whole.usage.prompt_tokens_details.cached_tokens == 0,
          f"usage {whole.usage}")

    chunks = list(client.chat.completions.create(model="any", messages=MESSAGES, temperature=0,
                                                 max_tokens=12, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check(streamed == text, f"the streamed chat equals the whole one ({streamed!r})")
    check(chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason, "the last chunk finishes")
    # The same conversation again: every prompt token but the last (which is always run, its logits
    # pick the reply's first token) comes from the cache.
    again = client.chat.completions.create(model="any", messages=MESSAGES, temperature=0, max_tokens=1)
    cached = again.usage.prompt_tokens_details.cached_tokens
    check(cached == again.usage.prompt_tokens - 1, f"usage says which prompt tokens were cached ({cached})")

    run = subprocess.run([WICK, "run", "-m", MODEL, "-c", "256", "-n", "12", "--temp", "0", "-p", RENDERED],
                         capture_output=True, text=True, timeout=600)
    check(run.returncode == 0 and run.stdout == text + "\n",
          f"`wick run` on the rendered template agrees ({run.stdout!r})")

    # llama.cpp's golden as a text completion, over the tokens where its top two are clearly apart (its
    # chat goldens have near ties from the first token, which tests/generation.rs handles).
    golden = json.load(open(GOLDENS))["records"][0]
    clear = next(i for i, s in enumerate(golden["steps"]) if s["gap"] < 1.0)
    done = client.completions.create(model="any", prompt=golden["prompt"], temperature=0, max_tokens=clear)
    check(done.choices[0].text == " Paris.\n\n" and golden["text"].startswith(done.choices[0].text)
          and done.usage.completion_tokens == clear,
          f"the text completion equals llama.cpp's first {clear} tokens ({done.choices[0].text!r})")
    check(done.usage.prompt_tokens == len(golden["prompt_ids"]), "prompt tokens as llama.cpp counts them")
    # Log-probabilities: the text completion's top two apart by llama.cpp's gap at each step, and
    # each token the likeliest (greedy).
    scored = client.completions.create(model="any", prompt=golden["prompt"], temperature=0, max_tokens=clear,
                                       logprobs=2)
    lp = scored.choices[0].logprobs
    check(scored.choices[0].text == done.choices[0].text and "".join(lp.tokens) == done.choices[0].text
          and len(lp.token_logprobs) == clear and lp.text_offset[0] == 0,
          f"a text completion's logprobs name its tokens ({lp.tokens})")
    for i, (top, step) in enumerate(zip(lp.top_logprobs, golden["steps"])):
        ranked = sorted(top.values(), reverse=True)
        check(len(top) == 2 and ranked[0] == lp.token_logprobs[i] < 0
              and abs((ranked[0] - ranked[1]) - step["gap"]) < 0.5,
              f"step {i}: the top two {top} apart by llama.cpp's gap {step['gap']}")
    asked = dict(model="any", messages=MESSAGES, temperature=0, max_tokens=6, logprobs=True, top_logprobs=3)
    chat_lp = client.chat.completions.create(**asked)
    content = chat_lp.choices[0].logprobs.content
    check(len(content) == chat_lp.usage.completion_tokens
          and "".join(c.token for c in content) == chat_lp.choices[0].message.content
          and all(c.top_logprobs[0].token == c.token and c.top_logprobs[0].logprob == c.logprob
                  and len(c.top_logprobs) == 3 and bytes(c.bytes).decode() == c.token for c in content)
          and all(a.logprob >= b.logprob for c in content for a, b in zip(c.top_logprobs, c.top_logprobs[1:])),
          f"a chat reply's logprobs: its tokens, each the likeliest of 3 ({[c.token for c in content]})")
    chunks = list(client.chat.completions.create(**asked, stream=True))
    carrying = [ch.choices[0] for ch in chunks if ch.choices and ch.choices[0].logprobs]
    streamed_lp = [c for choice in carrying for c in choice.logprobs.content]
    # The same prompt again is cached: its first token's logits now come from a decode step, not from
    # the head of the prompt's last chunk, the same math summed in another order.
    check([c.token for c in streamed_lp] == [c.token for c in content]
          and all(abs(a.logprob - b.logprob) < 1e-4 for a, b in zip(streamed_lp, content))
          and len(carrying) > 1 and all(c.delta.content == "".join(t.token for t in c.logprobs.content)
                                        for c in carrying),
          f"streamed, each piece with its own tokens' logprobs, together the whole reply's ({len(carrying)} pieces)")
    pieces = [ch.choices[0] for ch in client.completions.create(
        model="any", prompt=golden["prompt"], temperature=0, max_tokens=clear, logprobs=2, stream=True)]
    joined = {field: [x for p in pieces if p.logprobs for x in getattr(p.logprobs, field)]
              for field in ("tokens", "token_logprobs", "text_offset")}
    check(joined["tokens"] == lp.tokens and joined["text_offset"] == lp.text_offset and not pieces[-1].logprobs
          and all(abs(a - b) < 1e-4 for a, b in zip(joined["token_logprobs"], lp.token_logprobs, strict=True)),
          f"a streamed text completion's logprobs, piece by piece, are the whole reply's ({joined['text_offset']})")
    eog = client.chat.completions.create(model="any", messages=[{"role": "user", "content": QUESTION}],
                                         temperature=0, max_tokens=64)
    check(eog.choices[0].finish_reason == "stop", "the end-of-turn token finishes a chat with 'stop'")

    stopped = client.completions.create(model="any", prompt="The capital of France is", temperature=0,
                                        max_tokens=12, stop=["\n"])
    check(stopped.choices[0].text == " Paris." and stopped.choices[0].finish_reason == "stop",
          f"a stop string ends the text and is left out ({stopped.choices[0].text!r})")
    # The stop string's tokens' logprobs, whose text never goes out, come with the last piece.
    asked = dict(model="any", prompt="The capital of France is", temperature=0, max_tokens=12, stop=["\n"],
                 logprobs=1)
    whole = client.completions.create(**asked).choices[0]
    pieces = [ch.choices[0] for ch in client.completions.create(**asked, stream=True)]
    streamed_tokens = [t for p in pieces if p.logprobs for t in p.logprobs.tokens]
    check(whole.text == " Paris." and "".join(p.text for p in pieces) == whole.text
          and streamed_tokens == whole.logprobs.tokens and "\n" in "".join(streamed_tokens),
          f"stopped by a string, streamed logprobs are the whole reply's ({streamed_tokens})")

    # logit_bias: llama.cpp's greedy reply under the same bias (tests/goldens/make_logit_bias_golden.sh).
    with open(os.path.join(os.path.dirname(GOLDENS), "smollm2-q4_1-logit-bias.json")) as f:
        biased = json.load(f)
    text = client.completions.create(model="any", prompt=biased["prompt"], temperature=0,
                                     max_tokens=biased["max_tokens"],
                                     logit_bias=biased["logit_bias"]).choices[0].text
    check(text == biased["reply"], f"a logit_bias gives llama.cpp's reply under it ({text!r})")
    for bias, what in [({"x": 1}, "a key that is not a token id"), ({"5": 101}, "a bias past 100"),
                       ({"49152": 1}, "a token past the vocabulary")]:
        status, _, payload = raw("POST", "/v1/completions", {"prompt": "x", "logit_bias": bias})
        check(status == 400 and openai_error(payload) and payload["error"].get("param") == "logit_bias",
              f"logit_bias with {what}: 400 ({payload.get('error', payload)})")

    # Bad requests: each gets its status and OpenAI's error shape.
    status, _, payload = raw("POST", "/v1/chat/completions", b"{not json")
    check(status == 400 and openai_error(payload), "malformed JSON: 400")
    status, _, payload = raw("POST", "/v1/chat/completions", {"messages": MESSAGES, "temperature": "hot"})
    check(status == 400 and openai_error(payload), "a known field with the wrong type: 400")
    status, _, payload = raw("POST", "/v1/chat/completions", {"messages": []})
    check(status == 400 and openai_error(payload), "no messages: 400")
    status, _, payload = raw("POST", "/v1/completions", {"prompt": "x", "max_tokens": 0})
    check(status == 400 and openai_error(payload), "max_tokens 0: 400")
    try:
        client.completions.create(model="any", prompt="word " * 400, max_tokens=1)
        check(False, "an over-long prompt is refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.code == "context_length_exceeded", "an over-long prompt: 400")
    status, _, payload = raw("POST", "/v1/completions", b"{\"prompt\": \"" + b"a" * 70000 + b"\"}")
    check(status == 413 and openai_error(payload), "a body over --max-body: 413")
    status, _, payload = raw("GET", "/v1/nowhere")
    check(status == 404 and openai_error(payload), "an unknown route: 404")

    # Keys and CORS.
    try:
        openai.OpenAI(base_url=BASE, api_key="wrong", max_retries=0).models.list()
        check(False, "a wrong key is refused")
    except openai.AuthenticationError as e:
        check(e.status_code == 401, "a wrong key: 401")
    status, _, payload = raw("GET", "/v1/models", key=None)
    check(status == 401 and openai_error(payload), "no key: 401")
    status, _, payload = raw("GET", "/health", key=None)
    check(status == 200 and payload == {"status": "ok"}, "/health needs no key")
    status, headers, _ = raw("OPTIONS", "/v1/chat/completions", key=None,
                             headers={"Origin": "http://example.test", "Access-Control-Request-Method": "POST"})
    check(status == 204 and headers.get("access-control-allow-origin") == "*", "a CORS preflight")

    # Two clients at once: both answered whole and right, one after the other.
    prompts = ("The capital of France is", "Once upon a time")
    alone = {p: client.completions.create(model="any", prompt=p, temperature=0, max_tokens=3).choices[0].text
             for p in prompts}
    together = {}

    def ask(prompt):
        r = client.completions.create(model="any", prompt=prompt, temperature=0, max_tokens=3)
        together[prompt] = r.choices[0].text

    threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(together == alone, f"concurrent requests are answered as if alone ({together})")

    # A client that leaves mid-stream frees the engine: the next request does not wait for 200 tokens.
    stream = client.completions.create(model="any", prompt="Once upon a time", temperature=0, max_tokens=200,
                                       stream=True)
    for i, _ in enumerate(stream):
        if i == 2:
            break
    stream.close()
    start = time.monotonic()
    after = client.completions.create(model="any", prompt="The capital of France is", temperature=0,
                                      max_tokens=2)
    waited = time.monotonic() - start
    check(alone["The capital of France is"].startswith(after.choices[0].text) and waited < 60,
          f"a disconnect mid-stream frees the engine (the next answer came in {waited:.1f} s)")
    status, headers, text = raw("GET", "/metrics")
    metrics = {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line.startswith("wick_")}
    check(status == 200 and headers["content-type"].startswith("text/plain")
          and metrics["wick_requests_total"] >= 10 and metrics["wick_requests_processing"] == 0
          and metrics["wick_requests_deferred"] == 0 and metrics["wick_tokens_predicted_total"] >= 20
          and metrics["wick_prompt_tokens_cached_total"] >= cached
          and metrics["wick_predicted_tokens_seconds"] > 0,
          f"/metrics counts what the server did, in Prometheus' text format ({metrics})")
    status, _, payload = raw("GET", "/metrics", key=None)
    check(status == 401, "/metrics wants the key")

    # An image for a server started without a vision projector: a 400 that says so.
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    body = {"model": "any", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, image]}]}
    status, _, payload = raw("POST", "/v1/chat/completions", body)
    check(status == 400 and openai_error(payload) and "--mmproj" in payload["error"]["message"],
          f"an image without a projector: {status} {payload}")
    print("all serve checks passed")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks a running `wick serve --mmproj` (the random Gemma 3 model and projector of tests/vision.rs)
with the official `openai` client and raw HTTP.

    python native/tests/image_client.py BASE_URL API_KEY IMAGE EXPECTED [together]

A chat request whose content parts hold text and the image as a base64 data: URL gets the greedy reply
EXPECTED (llama.cpp's to the same prompt), whole and streamed, with the image's 16 tokens counted in its
prompt. What a client gets wrong is a 400 in OpenAI's shape that says what: a URL the server would have
to fetch, a data: URL that is not base64 or does not decode, bytes that are no image, an image marker in
the text with no image for it. With `together` (a server with parallel slots), four requests at once,
two prompts with the image twice each, get the replies each gets alone.
"""
import base64
import sys

import openai

from http_check import check, openai_error, raw

BASE, KEY, IMAGE, EXPECTED = sys.argv[1:5]
TOGETHER = sys.argv[5:6] == ["together"]
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)
with open(IMAGE, "rb") as f:
    DATA_URL = "data:image/png;base64," + base64.b64encode(f.read()).decode()


def ask(url=DATA_URL, before="look at "):
    return [{"role": "user", "content": [
        {"type": "text", "text": before},
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "text", "text": " and tell"},
    ]}]


ASK = dict(model="any", temperature=0, max_tokens=12)
whole = client.chat.completions.create(messages=ask(), **ASK)
check(whole.choices[0].message.content == EXPECTED, f"reply {whole.choices[0].message.content!r}")
check(whole.usage.prompt_tokens == 32, f"prompt tokens {whole.usage.prompt_tokens}, the image's 16 among them")
pieces = client.chat.completions.create(messages=ask(), stream=True, **ASK)
streamed = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)
check(streamed == EXPECTED, f"streamed {streamed!r}")

for url, says in [
    ("https://example.org/cat.png", "not fetched"),
    ("data:image/png,abc", "base64"),
    ("data:image/png;base64,@@@@", "does not decode"),
    ("data:image/png;base64," + base64.b64encode(b"not an image").decode(), "cannot be decoded"),
]:
    status, _, payload = raw(BASE, KEY, "POST", "/v1/chat/completions", {"model": "any", "messages": ask(url)})
    check(status == 400 and openai_error(payload) and says in payload["error"]["message"],
          f"{url[:40]}: {status} {payload}")
status, _, payload = raw(BASE, KEY, "POST", "/v1/chat/completions",
                         {"model": "any", "messages": ask(before="<__media__> look at ")})
check(status == 400 and "2 image markers" in payload["error"]["message"], f"markers: {status} {payload}")
# The server goes on answering after refusals.
again = client.chat.completions.create(messages=ask(), **ASK)
check(again.choices[0].message.content == EXPECTED, "the same reply after the refusals")

if TOGETHER:
    from concurrent.futures import ThreadPoolExecutor

    def reply(messages):
        return client.chat.completions.create(messages=messages, **ASK).choices[0].message.content

    asks = [ask(), ask(before="describe "), ask(), ask(before="describe ")]
    with ThreadPoolExecutor(len(asks)) as pool:
        replies = list(pool.map(reply, asks))
    alone = reply(ask(before="describe "))
    check(replies[0] == EXPECTED and replies[2] == EXPECTED, f"together: {replies}")
    check(replies[1] == alone and replies[3] == alone, f"together: {replies}, alone {alone!r}")

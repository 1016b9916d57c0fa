#!/usr/bin/env python3
"""Checks predicted outputs (`prediction`) against a running `wick serve --lookup` with the official
`openai` client and raw HTTP.

    python native/tests/prediction_client.py BASE_URL API_KEY

BASE_URL is the server's http://host:port/v1, started with --api-key API_KEY --lookup on
SmolLM2-135M-Instruct Q4_1. A prediction only proposes drafts, which the model checks: the greedy
reply with one is the reply without, and its usage counts the predicted tokens kept and not kept.
Exits non-zero with a message on the first failed check.
"""
import sys

import openai

import http_check
from http_check import check, openai_error

BASE, KEY = sys.argv[1:3]
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)

MESSAGES = [{"role": "user", "content": (
    "Rename the variable total to result in this function:\n\n"
    "def add_numbers(first_value, second_value):\n"
    "    total = first_value + second_value\n"
    "    return total")}]
# The edit as asked, which the model's reply need not make as it is.
ASKED = ("def add_numbers(first_value, second_value):\n"
         "    result = first_value + second_value\n"
         "    return result\n")


def reply(prediction=None, stream=False):
    extra = {} if prediction is None else {"prediction": {"type": "content", "content": prediction}}
    if not stream:
        r = client.chat.completions.create(model="any", messages=MESSAGES, temperature=0, max_tokens=32,
                                           **extra)
        return r.choices[0].message.content, r.usage
    chunks = list(client.chat.completions.create(model="any", messages=MESSAGES, temperature=0,
                                                 max_tokens=32, stream=True,
                                                 stream_options={"include_usage": True}, **extra))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks[-1].usage


def main():
    plain, usage = reply()
    check(usage.completion_tokens > 10 and usage.completion_tokens_details is None,
          f"a reply without a prediction counts none ({usage})")

    text, usage = reply(plain)
    details = usage.completion_tokens_details
    kept_predicted = details.accepted_prediction_tokens if details else 0
    check(text == plain, f"predicted right, the reply is the same ({text!r})")
    check(details is not None and details.accepted_prediction_tokens >= usage.completion_tokens // 2,
          f"predicted right, most of the reply was drafted from the prediction and kept ({details})")

    text, usage = reply(ASKED, stream=True)
    details = usage.completion_tokens_details
    check(text == plain, f"predicted otherwise, streamed, the reply is the same ({text!r})")
    check(details is not None
          and details.accepted_prediction_tokens + details.rejected_prediction_tokens > 0,
          f"predicted otherwise, the prediction was drafted from ({details})")

    parts = [{"type": "text", "text": plain[:20]}, {"type": "text", "text": plain[20:]}]
    text, usage = reply(parts)
    check(text == plain and usage.completion_tokens_details.accepted_prediction_tokens > 0,
          f"a prediction in text parts ({usage.completion_tokens_details})")
    kept_predicted += usage.completion_tokens_details.accepted_prediction_tokens

    for bad, why in [({"type": "audio", "content": "x"}, "a prediction of another type"),
                     ({"type": "content", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]},
                      "an image in a prediction")]:
        status, _, body = http_check.raw(BASE, KEY, "POST", "/v1/chat/completions",
                                         {"messages": MESSAGES, "prediction": bad})
        check(status == 400 and openai_error(body), f"{why} is refused ({status}: {body})")

    # The server counts its checks of drafted tokens, the predictions' among them.
    _, _, text = http_check.raw(BASE, KEY, "GET", "/metrics")
    m = {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line.startswith("wick_")}
    checks, drafted, kept = (m["wick_draft_checks_total"], m["wick_draft_tokens_total"],
                             m["wick_draft_tokens_accepted_total"])
    check(0 < checks <= drafted and kept_predicted <= kept <= drafted,
          f"/metrics counts the drafts, the predictions' {kept_predicted} kept tokens among them "
          f"({checks:.0f} checks, {kept:.0f} of {drafted:.0f} drafted tokens kept)")


main()

#!/usr/bin/env python3
"""Checks a running `wick serve` on a model whose chat template marks reasoning (the random Qwen3.5
file: its template opens `<think>`), with the official `openai` client and raw HTTP.

    python native/tests/reasoning_client.py BASE_URL API_KEY

A chat reply carries the reasoning as `reasoning_content` beside `content`, streamed as
`delta.reasoning_content`; the stream's pieces together equal the whole reply; a text completion of the
same request's rendered prompt is the raw text, markers and all. With `chat_template_kwargs`
`{"enable_thinking": false}` the template closes an empty reasoning itself: the reply is all answer.
"""
import sys

import openai

from http_check import check

BASE, KEY = sys.argv[1:3]
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)
ASK = dict(model="any", temperature=0, max_tokens=16, messages=[{"role": "user", "content": "What is 2 + 2?"}])

whole = client.chat.completions.create(**ASK).choices[0]
reasoning = whole.message.model_extra.get("reasoning_content")
check(isinstance(reasoning, str) and reasoning.strip() == reasoning and reasoning, f"reasoning: {reasoning!r}")
check(whole.message.content is not None and "<think>" not in whole.message.content, f"content {whole.message.content!r}")

deltas = [c.choices[0].delta for c in client.chat.completions.create(stream=True, **ASK) if c.choices]
streamed = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
content = "".join(d.content or "" for d in deltas)
check((streamed, content) == (reasoning, whole.message.content), f"streamed {streamed!r} {content!r}")
check(sum(1 for d in deltas if (d.model_extra or {}).get("reasoning_content")) > 1, "reasoning streamed in several pieces")

# The raw reply to the same prompt: Qwen3.5's generation prompt as its template renders it.
prompt = "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n<think>\n"
raw = client.completions.create(model="any", prompt=prompt, temperature=0, max_tokens=16).choices[0].text
answer = raw.split("</think>", 1)
check(answer[0].strip() == reasoning, f"raw {raw!r} against reasoning {reasoning!r}")
check((answer[1].lstrip() if len(answer) > 1 else "") == whole.message.content, f"raw {raw!r}")

# Thinking off: the template writes an empty <think></think>, the reply is the answer alone.
off = client.chat.completions.create(**ASK, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
off = off.choices[0].message
check(not (off.model_extra or {}).get("reasoning_content"), f"no reasoning with thinking off: {off!r}")
prompt_off = prompt + "\n</think>\n\n"
raw_off = client.completions.create(model="any", prompt=prompt_off, temperature=0, max_tokens=16).choices[0].text
check(off.content == raw_off.lstrip() and off.content, f"thinking off: {off.content!r} against {raw_off!r}")

for extra, param in [({"chat_template_kwargs": [1]}, "chat_template_kwargs"),
                     ({"chat_template_kwargs": {"add_generation_prompt": False}}, "chat_template_kwargs"),
                     ({"reasoning_effort": "extreme"}, "reasoning_effort")]:
    try:
        client.chat.completions.create(**ASK, extra_body=extra)
        check(False, f"{extra} refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.param == param, f"{extra} refused naming {param}")
print("reasoning: ok")

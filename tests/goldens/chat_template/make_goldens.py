#!/usr/bin/env python3
"""Chat-template goldens, rendered with Python's jinja2 (the engine these templates are written for),
configured as Hugging Face's apply_chat_template configures it.

Run from the repository root with a venv that has jinja2 and gguf:

    python tests/goldens/chat_template/make_goldens.py

Reads the *.jinja templates beside this script, plus SmolLM2's template from the model file (written
beside them as smollm2.jinja; qwen2.5.jinja is Qwen2.5-Coder-0.5B-Instruct's, copied from its file; qwen3.jinja,
gemma2.jinja and phi3.5.jinja are Qwen3-0.6B's, Gemma 2 2B it's and Phi-3.5-mini-instruct's as published with
those models; qwen3.5.jinja is Qwen3.5-4B's and gpt-oss.jinja gpt-oss-120b's (harmony), as llama.cpp's
models/templates carries them; gemma4.jinja is
the template of llama.cpp's Gemma 4 vocabulary file, models/vocab/ggml-vocab-gemma-4.gguf), renders
each for a few conversations, and writes goldens.json: per case the output, or the message of the exception
the template raised. Templates that lay out tool declarations themselves (TOOL_TEMPLATES) are also
rendered with TOOLS. With llama-cpp-python installed it also writes builtins.json: llama.cpp's built-in
formats (BUILTINS) applied to the same conversations.
"""
import glob
import json
import os
import time

import gguf
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

TOKENS = {
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "llama3": ("<|begin_of_text|>", "<|end_of_text|>"),
    "llama3.1-style": ("<|begin_of_text|>", "<|eot_id|>"),
    "deepseek-llm-chat": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek-r1-style": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "mistral-instruct": ("<s>", "</s>"),
    "python-methods": ("<s>", "</s>"),
    "qwen2.5": ("<|endoftext|>", "<|im_end|>"),
    "qwen3": ("<|endoftext|>", "<|im_end|>"),
    "qwen3.5": ("<|endoftext|>", "<|im_end|>"),
    "gemma2": ("<bos>", "<eos>"),
    "phi3.5": ("<s>", "<|endoftext|>"),
    "gemma4": ("<bos>", "<eos>"),
    "gpt-oss": ("<|startoftext|>", "<|return|>"),
}

# strftime_now's "now", as SOURCE_DATE_EPOCH gives it to Wick in tests/chat_template.rs.
NOW = 1_767_323_045  # 2026-01-02 03:04:05 UTC

# Templates that declare tools to the model themselves, and the tools they are given (OpenAI's form).
TOOL_TEMPLATES = ["gemma4", "gpt-oss"]
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers.",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}},
]

# Variables a request sets (llama.cpp's chat_template_kwargs), each rendered for the first two
# conversations: the switches of reasoning models.
VARIABLES = {
    "qwen3": {"enable_thinking": False},
    "qwen3.5": {"enable_thinking": False},
    "gemma4": {"enable_thinking": True},
    "gpt-oss": {"reasoning_effort": "high"},
}

# Formats llama.cpp builds in for files without a template, rendered by llama.cpp itself
# (llama_chat_apply_template) when llama-cpp-python is at hand.
BUILTINS = ["gemma"]

CONVERSATIONS = [
    ([("user", "Hello!")], True),
    ([("system", "You are terse."), ("user", "What is 2+2?"), ("assistant", "4"), ("user", "And 3+3?")], True),
    ([("user", "Hi"), ("assistant", "<think>hmm</think>Hello! How can I help?"), ("user", "  Tell me a joke.  ")], False),
    ([("user", "one"), ("user", "two")], True),
    ([("user", "日本語 👋 \"quotes\" & <tags>\n second line")], True),
    ([], True),
]


class RaisedError(Exception):
    pass


def raise_exception(message):
    raise RaisedError(message)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda f: time.strftime(f, time.gmtime(NOW))
    return env


def smollm2_template():
    reader = gguf.GGUFReader(MODEL)
    template = reader.fields["tokenizer.chat_template"].contents()
    with open(os.path.join(HERE, "smollm2.jinja"), "w") as f:
        f.write(template)


def main():
    smollm2_template()
    env = environment()
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "*.jinja"))):
        name = os.path.basename(path)[: -len(".jinja")]
        with open(path) as f:
            template = env.from_string(f.read())
        bos, eos = TOKENS[name]
        cases = []
        runs = [(conv, gen, None, {}) for conv, gen in CONVERSATIONS]
        if name in TOOL_TEMPLATES:
            runs += [(conv, gen, TOOLS, {}) for conv, gen in CONVERSATIONS[:2]]
        if name in VARIABLES:
            runs += [(conv, gen, None, VARIABLES[name]) for conv, gen in CONVERSATIONS[:2]]
        for conv, gen, tools, variables in runs:
            messages = [{"role": r, "content": c} for r, c in conv]
            case = {"messages": messages, "add_generation_prompt": gen, "bos_token": bos, "eos_token": eos}
            if tools:
                case["tools"] = tools
            if variables:
                case["variables"] = variables
            try:
                case["output"] = template.render(messages=messages, tools=tools, add_generation_prompt=gen,
                                                 bos_token=bos, eos_token=eos, **variables)
            except RaisedError as e:
                case["raised"] = str(e)
            except (TemplateError, IndexError, KeyError, TypeError) as e:
                case["error"] = f"{type(e).__name__}: {e}"
            cases.append(case)
        out.append({"template": name, "cases": cases})
        print(name, [("ok" if "output" in c else "raised" if "raised" in c else "error") for c in cases])
    with open(os.path.join(HERE, "goldens.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    builtins()


def builtins():
    try:
        import ctypes

        import llama_cpp
    except ImportError:
        print("llama-cpp-python is not installed: builtins.json left as it is")
        return
    out = []
    for name in BUILTINS:
        cases = []
        for conv, gen in CONVERSATIONS:
            msgs = (llama_cpp.llama_chat_message * max(1, len(conv)))()
            keep = []
            for i, (role, content) in enumerate(conv):
                keep.append((role.encode(), content.encode()))
                msgs[i].role, msgs[i].content = keep[-1]
            buf = ctypes.create_string_buffer(1 << 16)
            n = llama_cpp.llama_chat_apply_template(name.encode(), msgs, len(conv), gen, buf, len(buf))
            messages = [{"role": r, "content": c} for r, c in conv]
            cases.append({"messages": messages, "add_generation_prompt": gen, "output": buf.raw[:n].decode()})
        out.append({"builtin": name, "cases": cases})
    with open(os.path.join(HERE, "builtins.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tool calls through the official `openai` client against a running `wick serve`.

    python native/tests/tools_client.py BASE_URL API_KEY [quick]

Each call must name an offered tool and carry arguments that validate against its parameters
(`jsonschema`); streamed calls must come as OpenAI streams them; a conversation with the calls and the
tools' answers must go back in. `quick` runs the shorter set, for Qwen 2.5 (a slower model, whose
template writes several calls a reply: asked about two cities it calls twice); the full set is for
the default model, whose JSON envelope carries one call. Exits non-zero on the first failure.
"""
import json
import sys

import jsonschema
import openai

BASE, KEY = sys.argv[1:3]
QUICK = sys.argv[3:] == ["quick"]
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 30},
        "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 30}},
                   "required": ["zone"], "additionalProperties": False}}}
TOOLS = {t["function"]["name"]: t for t in (WEATHER, TIME)}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
TWO_CITIES = [{"role": "user", "content": "What is the weather in Paris and in London?"}]


def fail(what):
    sys.exit(f"FAILED: {what}")


def check_call(name, arguments, allowed):
    if name not in allowed:
        fail(f"called {name!r}, not one of {allowed}")
    try:
        jsonschema.validate(json.loads(arguments), TOOLS[name]["function"]["parameters"])
    except (ValueError, jsonschema.ValidationError) as e:
        fail(f"{name}({arguments}) does not match its parameters: {e}")


def create(**fields):
    return client.chat.completions.create(**{"model": "any", "temperature": 0, "max_tokens": 128, **fields})


def main():
    # Required: calls, whole, each with an id of its own.
    asked, want = (TWO_CITIES, 2) if QUICK else (ASK, 1)
    reply = create(messages=asked, tools=[WEATHER, TIME], tool_choice="required")
    choice = reply.choices[0]
    calls = choice.message.tool_calls or []
    ids = {c.id for c in calls if c.id}
    if choice.finish_reason != "tool_calls" or len(calls) != want or len(ids) != want:
        fail(f"required, {want} calls: {choice}")
    for c in calls:
        check_call(c.function.name, c.function.arguments, ["get_weather", "get_time"])
    print("ok: required -> " + ", ".join(f"{c.function.name}({c.function.arguments})" for c in calls))

    # The calls and the tools' answers go back in; the model answers or calls again.
    messages = asked + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": c.id, "type": "function",
             "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in calls]},
    ] + [
        {"role": "tool", "tool_call_id": c.id, "content": json.dumps({"temperature": 18, "sky": "clear"})}
        for c in calls
    ]
    # Quick: the first tokens of the answer are enough to show the conversation went back in.
    after = create(messages=messages, tools=[WEATHER, TIME], max_tokens=24 if QUICK else 128).choices[0]
    if after.finish_reason == "tool_calls":
        for c in after.message.tool_calls:
            check_call(c.function.name, c.function.arguments, ["get_weather", "get_time"])
    elif after.finish_reason not in ("stop", "length") or not after.message.content:
        fail(f"after the tool's answer: {after}")
    print(f"ok: after the tool's answer -> {after.finish_reason}: "
          f"{after.message.content or after.message.tool_calls[0].function}")
    if QUICK:
        return

    # Streamed, a named function: the call comes in tool_calls deltas, then finish_reason.
    stream = create(messages=ASK, tools=[WEATHER, TIME], stream=True,
                    tool_choice={"type": "function", "function": {"name": "get_time"}})
    parts, finish = {}, None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        for c in delta.tool_calls or []:
            part = parts.setdefault(c.index, {"id": "", "name": "", "arguments": ""})
            part["id"] += c.id or ""
            part["name"] += (c.function and c.function.name) or ""
            part["arguments"] += (c.function and c.function.arguments) or ""
        finish = chunk.choices[0].finish_reason or finish
    if finish != "tool_calls" or len(parts) != 1 or not parts[0]["id"]:
        fail(f"streamed: {parts}, finish {finish}")
    check_call(parts[0]["name"], parts[0]["arguments"], ["get_time"])
    print(f"ok: streamed, named -> {parts[0]['name']}({parts[0]['arguments']})")

    # Auto: a call, or text.
    auto = create(messages=ASK, tools=[WEATHER]).choices[0]
    if auto.finish_reason == "tool_calls":
        check_call(auto.message.tool_calls[0].function.name, auto.message.tool_calls[0].function.arguments,
                   ["get_weather"])
    elif not auto.message.content:
        fail(f"auto: {auto}")
    print(f"ok: auto -> {auto.finish_reason}")

    # None: text, no calls.
    plain = create(messages=ASK, tools=[WEATHER], tool_choice="none", max_tokens=16).choices[0]
    if plain.message.tool_calls or plain.finish_reason not in ("stop", "length") or not plain.message.content:
        fail(f"tool_choice none: {plain}")
    print(f"ok: tool_choice none -> {plain.message.content!r}")

    # Refusals: a choice naming no offered tool, tools with a response format.
    for fields, param in [
        ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
        ({"tools": [WEATHER], "response_format": {"type": "json_object"}}, "response_format"),
    ]:
        try:
            create(messages=ASK, **fields)
            fail(f"{fields} was answered")
        except openai.BadRequestError as e:
            if (e.body or {}).get("param") != param:
                fail(f"{fields}: {e.body}")
            print(f"ok: refused: {e.body['message']}")


main()

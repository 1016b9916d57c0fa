#!/usr/bin/env python3
"""Structured outputs through the official `openai` client against a running `wick serve`.

    python native/tests/structured_client.py BASE_URL API_KEY [quick]

BASE_URL is the server's http://host:port/v1 on SmolLM2-135M-Instruct, with 4 slots (-np 4) of 1024
positions each; the schemas are asked for four at a time. Every schema below is asked for
at temperature 0 and 0.8 with max_tokens 256: each reply must finish with "stop" (a "length" stop
fails) and validate with `jsonschema` (formats checked). Then `client.chat.completions.parse` with a
Pydantic model, `json_object`, and the refusals: a schema feature the grammar engine does not take, and
a field Wick does not honour. `quick` asks for every fourth schema once, at the two temperatures in
turn (a reply costs about 20 s on a CPU-backed adapter). Exits non-zero on the first failure; prints what
each reply was.
"""
import concurrent.futures
import json
import sys
import time
from typing import Literal

import jsonschema
import openai
import pydantic

BASE, KEY = sys.argv[1:3]
QUICK = sys.argv[3:] == ["quick"]
client = openai.OpenAI(base_url=BASE, api_key=KEY, timeout=600, max_retries=0)

NAME = {"type": "string", "minLength": 1, "maxLength": 24}
SHORT = {"type": "string", "minLength": 1, "maxLength": 40}

# (what to ask, schema): the kinds apps send, each bounded so that a reply fits in 256 tokens.
SCHEMAS = [
    ("A person: name and age.",
     {"type": "object", "properties": {"name": NAME, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
      "required": ["name", "age"], "additionalProperties": False}),
    ("A city and its country.",
     {"type": "object", "properties": {"city": NAME, "country": NAME}, "required": ["city", "country"],
      "additionalProperties": False}),
    ("Is the sky blue? Answer yes or no with a reason.",
     {"type": "object", "properties": {"answer": {"type": "boolean"}, "reason": SHORT},
      "required": ["answer", "reason"], "additionalProperties": False}),
    ("Rate this movie from 1 to 5: 'a fine film'.",
     {"type": "object", "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 5}},
      "required": ["rating"], "additionalProperties": False}),
    ("The sentiment of 'I love it'.",
     {"type": "object", "properties": {"sentiment": {"enum": ["positive", "negative", "neutral"]}},
      "required": ["sentiment"], "additionalProperties": False}),
    ("Three colors.",
     {"type": "object", "properties": {"colors": {"type": "array", "items": NAME, "minItems": 3, "maxItems": 3}},
      "required": ["colors"], "additionalProperties": False}),
    ("Between two and four fruits.",
     {"type": "array", "items": NAME, "minItems": 2, "maxItems": 4}),
    ("A temperature in Celsius between -40 and 50.",
     {"type": "object", "properties": {"celsius": {"type": "number", "minimum": -40, "maximum": 50}},
      "required": ["celsius"], "additionalProperties": False}),
    ("A product code like ABC-1234.",
     {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}},
      "required": ["code"], "additionalProperties": False}),
    ("A contact with an email address.",
     {"type": "object", "properties": {"name": NAME, "email": {"type": "string", "format": "email", "maxLength": 40}},
      "required": ["name", "email"], "additionalProperties": False}),
    ("A meeting date.",
     {"type": "object", "properties": {"title": SHORT, "date": {"type": "string", "format": "date"}},
      "required": ["title", "date"], "additionalProperties": False}),
    ("An identifier for a new record.",
     {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}, "required": ["id"],
      "additionalProperties": False}),
    ("A server's address.",
     {"type": "object", "properties": {"host": {"type": "string", "format": "ipv4"},
                                       "port": {"type": "integer", "minimum": 1, "maximum": 65535}},
      "required": ["host", "port"], "additionalProperties": False}),
    ("A book with a title and optionally a year.",
     {"type": "object", "properties": {"title": SHORT, "year": {"type": "integer", "minimum": 1000, "maximum": 2100}},
      "required": ["title"], "additionalProperties": False}),
    ("A user profile with an address.",
     {"type": "object", "properties": {
         "name": NAME,
         "address": {"type": "object", "properties": {"street": SHORT, "city": NAME, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                     "required": ["street", "city", "zip"], "additionalProperties": False}},
      "required": ["name", "address"], "additionalProperties": False}),
    ("A shopping list of one to three items with quantities.",
     {"type": "object", "properties": {"items": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
         "type": "object", "properties": {"item": NAME, "quantity": {"type": "integer", "minimum": 1, "maximum": 99}},
         "required": ["item", "quantity"], "additionalProperties": False}}},
      "required": ["items"], "additionalProperties": False}),
    ("A pet: a dog or a cat.",
     {"anyOf": [
         {"type": "object", "properties": {"kind": {"const": "dog"}, "breed": NAME}, "required": ["kind", "breed"], "additionalProperties": False},
         {"type": "object", "properties": {"kind": {"const": "cat"}, "indoor": {"type": "boolean"}}, "required": ["kind", "indoor"], "additionalProperties": False}]}),
    ("An answer that is a number or a short text.",
     {"type": "object", "properties": {"value": {"anyOf": [{"type": "number"}, SHORT]}}, "required": ["value"],
      "additionalProperties": False}),
    ("Two points on a plane.",
     {"type": "object", "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                            "required": ["x", "y"], "additionalProperties": False}},
      "properties": {"a": {"$ref": "#/$defs/point"}, "b": {"$ref": "#/$defs/point"}}, "required": ["a", "b"],
      "additionalProperties": False}),
    ("A task with a priority.",
     {"type": "object", "properties": {"task": SHORT, "priority": {"enum": ["low", "medium", "high"]},
                                       "done": {"type": "boolean"}},
      "required": ["task", "priority", "done"], "additionalProperties": False}),
    ("The weather: a summary and a chance of rain between 0 and 1.",
     {"type": "object", "properties": {"summary": SHORT, "rain": {"type": "number", "minimum": 0, "maximum": 1}},
      "required": ["summary", "rain"], "additionalProperties": False}),
    ("A recipe name and two to three steps.",
     {"type": "object", "properties": {"name": NAME, "steps": {"type": "array", "items": SHORT, "minItems": 2, "maxItems": 3}},
      "required": ["name", "steps"], "additionalProperties": False}),
    ("An HTTP status code for 'not found'.",
     {"type": "object", "properties": {"status": {"type": "integer", "enum": [200, 301, 404, 500]}},
      "required": ["status"], "additionalProperties": False}),
    ("A color as a hex code.",
     {"type": "object", "properties": {"hex": {"type": "string", "pattern": "^#[0-9a-f]{6}$"}}, "required": ["hex"],
      "additionalProperties": False}),
    ("Tags for a blog post about cooking, one to three of them.",
     {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2,12}$"},
                                                "minItems": 1, "maxItems": 3}},
      "required": ["tags"], "additionalProperties": False}),
    ("A tree of a folder with at most two files.",
     {"type": "object", "$defs": {"file": {"type": "object", "properties": {"name": NAME, "bytes": {"type": "integer", "minimum": 0, "maximum": 1000000}},
                                           "required": ["name", "bytes"], "additionalProperties": False}},
      "properties": {"folder": NAME, "files": {"type": "array", "items": {"$ref": "#/$defs/file"}, "maxItems": 2}},
      "required": ["folder", "files"], "additionalProperties": False}),
    ("A yes or no.",
     {"type": "boolean"}),
    ("A whole number from 1 to 10.",
     {"type": "integer", "minimum": 1, "maximum": 10}),
    ("A country's name.",
     {"type": "string", "minLength": 2, "maxLength": 30}),
    ("An order: an id, a status, and a total price.",
     {"type": "object", "properties": {
         "id": {"type": "integer", "minimum": 1, "maximum": 999999},
         "status": {"enum": ["pending", "shipped", "delivered"]},
         "total": {"type": "number", "minimum": 0, "maximum": 10000},
         "note": {"anyOf": [SHORT, {"type": "null"}]}},
      "required": ["id", "status", "total", "note"], "additionalProperties": False}),
    ("A translation of 'hello' into French and Spanish.",
     {"type": "object", "properties": {"fr": NAME, "es": NAME}, "required": ["fr", "es"], "additionalProperties": False}),
    ("A time range in hours, start before end.",
     {"type": "object", "properties": {"start": {"type": "integer", "minimum": 0, "maximum": 23},
                                       "end": {"type": "integer", "minimum": 0, "maximum": 23}},
      "required": ["start", "end"], "additionalProperties": False}),
]


def fail(what):
    sys.exit(f"FAILED: {what}")


def ask(prompt, schema, temperature):
    response_format = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}
    messages = [{"role": "system", "content": "Answer with JSON only."}, {"role": "user", "content": prompt}]
    return client.chat.completions.create(model="any", messages=messages, temperature=temperature, seed=7,
                                          max_tokens=256, response_format=response_format)


def main():
    checker = jsonschema.FormatChecker()
    started = time.time()
    replies = 0
    if QUICK:
        asks = [(prompt, schema, (0, 0.8)[i % 2]) for i, (prompt, schema) in enumerate(SCHEMAS[::4])]
    else:
        asks = [(prompt, schema, temperature) for temperature in (0, 0.8) for prompt, schema in SCHEMAS]
    # Four at a time: the server runs them in four slots, each reply under its own grammar.
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answered = list(pool.map(lambda a: ask(*a), asks))
    for (prompt, schema, temperature), reply in zip(asks, answered):
        text = reply.choices[0].message.content
        finish = reply.choices[0].finish_reason
        replies += 1
        if finish != "stop":
            fail(f"{prompt!r} at {temperature}: finished with {finish}: {text!r}")
        try:
            value = json.loads(text)
            jsonschema.validate(value, schema, format_checker=checker)
        except (ValueError, jsonschema.ValidationError) as e:
            fail(f"{prompt!r} at {temperature}: {text!r} does not validate: {e}")
        print(f"ok: {temperature} {prompt!r} -> {text}", flush=True)
    print(f"ok: {replies} replies to {len(SCHEMAS)} schemas in {time.time() - started:.0f} s")

    class Step(pydantic.BaseModel):
        action: Literal["open", "close"]
        target: str = pydantic.Field(max_length=20)

    class Plan(pydantic.BaseModel):
        steps: list[Step] = pydantic.Field(min_length=1, max_length=2)

    parsed = client.chat.completions.parse(
        model="any", messages=[{"role": "user", "content": "Plan: open the door, then close it."}],
        temperature=0, max_tokens=256, response_format=Plan)
    plan = parsed.choices[0].message.parsed
    if not isinstance(plan, Plan) or parsed.choices[0].finish_reason != "stop":
        fail(f"parse with a Pydantic model: {parsed}")
    print(f"ok: parse with a Pydantic model -> {plan!r}")

    anything = client.chat.completions.create(
        model="any", messages=[{"role": "user", "content": "Describe a cat as JSON."}], temperature=0.8, seed=1,
        max_tokens=256, response_format={"type": "json_object"})
    text = anything.choices[0].message.content
    if not isinstance(json.loads(text), dict) or anything.choices[0].finish_reason != "stop":
        fail(f"json_object: {text!r}")
    print(f"ok: json_object -> {text}")

    refusals = [
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"$ref": "https://example.com/s.json"}}}},
         "response_format", "ref"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "strin"}}}},
         "response_format", "strin"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {
            "type": "array", "items": {"type": "integer"}, "uniqueItems": True}}}}, "response_format", "uniqueItems"),
        ({"tool_choice": "required"}, "tool_choice", "no tools"),
        ({"extra_body": {"audio": {"voice": "alloy", "format": "wav"}}}, "audio", "audio"),
    ]
    for fields, param, word in refusals:
        try:
            client.chat.completions.create(model="any", messages=[{"role": "user", "content": "x"}], max_tokens=4,
                                           **fields)
            fail(f"{fields} was answered")
        except openai.BadRequestError as e:
            body = e.body or {}
            if body.get("param") != param or word not in body.get("message", ""):
                fail(f"{fields}: {body}")
            print(f"ok: refused: {body['message']}")


main()

"""What the server's client scripts share: a check that stops at the first failure, one raw HTTP
request, and the shape of OpenAI's errors."""
import http.client
import json
import sys
import urllib.parse


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}", flush=True)


def raw(base, key, method, path, body=None, headers=None):
    """One request with http.client to the server at `base`: (status, headers, parsed JSON or text)."""
    url = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    h = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        h["Authorization"] = f"Bearer {key}"
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    text = r.read().decode()
    try:
        payload = json.loads(text)
    except ValueError:
        payload = text
    return r.status, {k.lower(): v for k, v in r.getheaders()}, payload


def openai_error(payload):
    return (isinstance(payload, dict) and isinstance(payload.get("error"), dict)
            and isinstance(payload["error"].get("message"), str) and "type" in payload["error"])

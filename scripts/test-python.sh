#!/usr/bin/env bash
# The Python that tests use as a client: a venv in target/test-venv with the official openai package
# (and pydantic, which it brings) and jsonschema, which checks structured replies.
# Prints the interpreter's path.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/test-venv
if ! "$venv/bin/python" -c "import openai, jsonschema" 2>/dev/null; then
    if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
        sudo=$([ "$(id -u)" = 0 ] || echo sudo)
        $sudo apt-get install -y python3-venv >&2
    fi
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check openai==3.54.0 jsonschema==4.26.0 >&2
fi
echo "$PWD/$venv/bin/python"

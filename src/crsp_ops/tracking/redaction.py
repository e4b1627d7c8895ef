"""Keep secrets out of logged params: by key name and by value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "***"
# Key names that hold secrets; "max_tokens"-style counts must not match, so "token" only as a
# whole word part ("hf_token", "token") and never as "tokens".
_SECRET_KEY = re.compile(r"(api[_-]?key|secret|passw(or)?d|credential|(^|[._-])token$)", re.I)
_SECRET_ENV = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_NAMES_A_VARIABLE = ("_env", "_var")  # e.g. reflector.api_key_env holds a variable's name
_MIN_SECRET_LEN = 8  # shorter env values ("1", "true") would redact innocent params


def secret_values(env: Mapping[str, str]) -> set[str]:
    """Values of environment variables whose names say they hold a secret."""
    return {
        value
        for name, value in env.items()
        if _SECRET_ENV.search(name) and len(value) >= _MIN_SECRET_LEN
    }


def redact_params(params: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """Stringify params, replacing secrets by ``***``.

    A value is redacted when its key names a secret or when it contains the value of a secret
    environment variable (e.g. an API key pasted into a URL).

    >>> redact_params({"reflector.api_key": "sk-123", "n": 3}, {})
    {'reflector.api_key': '***', 'n': '3'}
    """
    secrets = secret_values(env)
    out = {}
    for key, value in params.items():
        text = str(value)
        names_a_secret = _SECRET_KEY.search(key) and not key.endswith(_NAMES_A_VARIABLE)
        if names_a_secret or any(secret in text for secret in secrets):
            text = REDACTED
        out[key] = text
    return out


def redact_text(text: str, env: Mapping[str, str]) -> str:
    """Replace every secret environment value found in ``text`` (for logged messages)."""
    for secret in secret_values(env):
        text = text.replace(secret, REDACTED)
    return text

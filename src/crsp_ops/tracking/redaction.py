"""Keep secrets out of everything that leaves the process: by value, by key name, by pattern.

``Redactor`` applies all three nets together.

Design: docs/design/platform.md#redaction.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "***"
# Key names that hold secrets; "max_tokens"-style counts must not match, so "token" only as a
# whole word part ("hf_token", "token") and never as "tokens".
_SECRET_KEY = re.compile(r"(api[_-]?key|secret|passw(or)?d|credential|(^|[._-])token$)", re.I)
_SECRET_ENV = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_NAMES_A_VARIABLE = ("_env", "_var")  # e.g. reflector.api_key_env holds a variable's name
_MIN_SECRET_LEN = 8  # shorter env values ("1", "true") would redact innocent params

# (pattern, replacement): each keeps the context and replaces only the secret part.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"([a-z][a-z0-9+.-]*://)[^/\s@:]*:[^/\s@]+@", re.I), rf"\1{REDACTED}@"),
    (re.compile(r"\b(bearer|token|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}", re.I), rf"\1\2{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"((?:api[_-]?key|access[_-]?token|secret|password)[\"']?\s*[:=]\s*[\"']?)"
                r"[^\s\"',;&}]{8,}", re.I), rf"\1{REDACTED}"),
)


def secret_values(env: Mapping[str, str]) -> set[str]:
    """Values of environment variables whose names say they hold a secret."""
    return {
        value
        for name, value in env.items()
        if _SECRET_ENV.search(name) and len(value) >= _MIN_SECRET_LEN
    }


def names_a_secret(key: str) -> bool:
    """Whether a param/field name says its value is a secret (``*api_key*``, ``*_token``...).

    >>> names_a_secret("reflector.api_key"), names_a_secret("reflector.api_key_env")
    (True, False)
    >>> names_a_secret("generation.max_tokens")
    False
    """
    return bool(_SECRET_KEY.search(key)) and not key.endswith(_NAMES_A_VARIABLE)


@dataclass(frozen=True)
class Redactor:
    """Replaces secrets in text (by value and by pattern) and in params (also by key name)."""

    secrets: frozenset[str] = frozenset()

    @classmethod
    def from_env(cls, env: Mapping[str, str], extra: Iterable[str] = ()) -> Redactor:
        """Secrets from ``env`` (by variable name) plus ``extra`` values (e.g. a client's key)."""
        explicit = {value for value in extra if value and len(value) >= _MIN_SECRET_LEN}
        return cls(frozenset(secret_values(env) | explicit))

    def text(self, text: str) -> str:
        """``text`` with every secret value and secret-looking pattern replaced by ``***``.

        >>> Redactor(frozenset({"hunter2-long"})).text("key hunter2-long at http://u:p@h/v1")
        'key *** at http://***@h/v1'
        """
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def data(self, data: bytes) -> bytes:
        """Bytes with every secret value replaced (patterns need text: see ``text``)."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            data = data.replace(secret.encode("utf-8", "surrogatepass"), REDACTED.encode())
        return data

    def params(self, params: Mapping[str, Any]) -> dict[str, str]:
        """Stringify params, redacting secrets.

        A secret-named key or a value holding a secret value becomes ``***``; secret-looking
        patterns (URL credentials, keys) are replaced inside other values.

        >>> Redactor().params({"reflector.api_key": "sk-123", "url": "http://u:k@h", "n": 3})
        {'reflector.api_key': '***', 'url': 'http://***@h', 'n': '3'}
        """
        out = {}
        for key, value in params.items():
            text = str(value)
            holds_secret = any(secret in text for secret in self.secrets)
            out[key] = REDACTED if names_a_secret(key) or holds_secret else self.text(text)
        return out


def redact_params(params: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """Stringify params, redacting secrets (see ``Redactor.params``).

    >>> redact_params({"reflector.api_key": "sk-123", "n": 3}, {})
    {'reflector.api_key': '***', 'n': '3'}
    """
    return Redactor.from_env(env).params(params)


_plain_record_factory: Any = None  # the factory before the first install (installs replace)


def install_log_redaction(redactor: Redactor) -> None:
    """Redact every log message of this process (console and files) through ``redactor``."""
    global _plain_record_factory
    if _plain_record_factory is None:
        _plain_record_factory = logging.getLogRecordFactory()
    base = _plain_record_factory

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = base(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is logging's to report
            return record
        record.msg, record.args = redactor.text(message), None
        return record

    logging.setLogRecordFactory(factory)

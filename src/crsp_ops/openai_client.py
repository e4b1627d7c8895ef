"""The one way crsp_ops builds an ``openai.OpenAI`` client: configuration, then the environment.

The configured base URL and key variable win; else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, as
OpenAI users expect. The key is never logged or shown in a ``repr``.

Design: docs/design/platform.md#openai_client.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import openai

logger = logging.getLogger(__name__)

OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
OPENAI_API_KEY_ENV = "OPENAI_API_KEY"
OPENAI_API_URL = "https://api.openai.com/v1"
DUMMY_API_KEY = "EMPTY"


@dataclass(frozen=True)
class Endpoint:
    """Where a client connects and with which key (the key is left out of ``repr``)."""

    base_url: str
    api_key: str = field(repr=False)
    base_url_source: str  # "config", "$OPENAI_BASE_URL" or "default"
    api_key_source: str  # "$NAME" of the variable it came from, or "none (dummy key)"


def effective_base_url(configured: str, environ: Mapping[str, str] | None = None) -> str:
    """The configured base URL, else ``$OPENAI_BASE_URL``, else '' (the OpenAI API).

    >>> effective_base_url("", {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    'http://127.0.0.1:9/v1'
    >>> effective_base_url("http://srv/v1", {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    'http://srv/v1'
    """
    environ = os.environ if environ is None else environ
    return configured.strip() or environ.get(OPENAI_BASE_URL_ENV, "").strip()


def is_openai_api(base_url: str) -> bool:
    """True for the OpenAI API itself (where a real key is required).

    >>> is_openai_api(""), is_openai_api("https://api.openai.com/v1")
    (True, True)
    >>> is_openai_api("http://127.0.0.1:8000/v1")
    False
    """
    return not base_url or (urlsplit(base_url).hostname or "").endswith("openai.com")


def resolve_endpoint(
    *,
    base_url: str,
    api_key_env: str,
    role: str,
    url_option: str,
    key_option: str,
    environ: Mapping[str, str] | None = None,
) -> Endpoint:
    """Resolve a client's base URL and key from configuration and the environment.

    Args:
        base_url: the configured base URL ("" = not configured).
        api_key_env: the configured name of the key's variable ("" = none).
        role: what the client is for, in logs (e.g. ``"reflector"``).
        url_option: the option holding ``base_url``, named in errors.
        key_option: the option holding ``api_key_env``, named in errors.
        environ: the environment to read (default ``os.environ``).

    Raises:
        ValueError: the endpoint is the OpenAI API and no variable holds a key.
    """
    environ = os.environ if environ is None else environ
    configured = base_url.strip()
    url = effective_base_url(configured, environ)
    url_source = "config" if configured else (f"${OPENAI_BASE_URL_ENV}" if url else "default")
    names = [name for name in (api_key_env.strip(), OPENAI_API_KEY_ENV) if name]
    names = list(dict.fromkeys(names))  # OPENAI_API_KEY once, even when it is the configured one
    key_name = next((name for name in names if environ.get(name)), None)
    if key_name is None and is_openai_api(url):
        raise ValueError(
            f"{role}: the OpenAI API needs a key, but ${' and $'.join(names)} "
            f"{'is' if len(names) == 1 else 'are'} not set ({key_option} names the variable); "
            f"export it, or point {url_option} or ${OPENAI_BASE_URL_ENV} at another endpoint"
        )
    endpoint = Endpoint(
        base_url=url or OPENAI_API_URL,
        api_key=environ[key_name] if key_name else DUMMY_API_KEY,
        base_url_source=url_source,
        api_key_source=f"${key_name}" if key_name else "none (dummy key)",
    )
    logger.info(
        "%s endpoint %s (from %s), API key from %s",
        role, endpoint.base_url, endpoint.base_url_source, endpoint.api_key_source,
    )
    return endpoint


def make_openai_client(endpoint: Endpoint, *, timeout_s: float, max_retries: int) -> openai.OpenAI:
    """An ``openai.OpenAI`` client for ``endpoint`` with an explicit timeout and retry count."""
    return openai.OpenAI(
        base_url=endpoint.base_url, api_key=endpoint.api_key, timeout=timeout_s,
        max_retries=max_retries,
    )

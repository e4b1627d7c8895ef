"""Pure helpers that turn ``generation`` settings into a server launch and a client config.

Kept apart from ``runtime`` (which opens and closes things) so the string handling is tested
without a server: the port comes from ``generation.base_url``, the command line is split like a
shell would and its ``{placeholders}`` filled per argument (paths with spaces stay one arg).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from crsp_ops.config.errors import ConfigError
from crsp_ops.steering.table import TABLE_FILE

PLACEHOLDERS = ("model_dir", "port", "host", "token_clusters", "python")


def server_root(base_url: str) -> str:
    """The server root of an OpenAI API URL: health endpoints live there, not under ``/v1``.

    >>> server_root("http://127.0.0.1:8000/v1/")
    'http://127.0.0.1:8000'
    """
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def host_and_port(base_url: str) -> tuple[str, int]:
    """Host and port of ``base_url`` (the scheme's default port when none is written).

    >>> host_and_port("http://127.0.0.1:8123/v1")
    ('127.0.0.1', 8123)
    """
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"generation.base_url={base_url!r} must look like http://HOST:PORT/v1")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def server_argv(
    command: str, *, model_dir: str | os.PathLike, base_url: str, token_clusters: str | None
) -> tuple[str, ...]:
    """Split ``generation.server_command`` and fill its placeholders.

    Args:
        command: a command line with ``{model_dir}``, ``{port}``, ``{host}``,
            ``{token_clusters}`` and ``{python}`` placeholders (literal braces doubled).
        model_dir: the model directory.
        base_url: ``generation.base_url``; gives ``{host}`` and ``{port}``.
        token_clusters: path of ``token_clusters.npy`` (``None`` when not steering).

    Raises:
        ConfigError: an unknown placeholder, or ``{token_clusters}`` without a table.

    >>> server_argv("{python} -m srv --model '{model_dir}' --port {port}",
    ...             model_dir="/m x", base_url="http://127.0.0.1:9/v1", token_clusters=None)[1:]
    ('-m', 'srv', '--model', '/m x', '--port', '9')
    """
    host, port = host_and_port(base_url)
    values: Mapping[str, str] = {
        "model_dir": str(model_dir), "port": str(port), "host": host, "python": sys.executable,
        "token_clusters": "" if token_clusters is None else str(token_clusters),
    }
    argv = []
    for arg in shlex.split(command):
        try:
            argv.append(arg.format(**values))
        except (KeyError, IndexError, ValueError) as error:
            raise ConfigError(
                f"generation.server_command: bad placeholder in {arg!r} ({error!r}); "
                f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            ) from None
        if "{token_clusters}" in arg and token_clusters is None:
            raise ConfigError(
                "generation.server_command uses {token_clusters} but no clusters directory was "
                "given (steering is off)"
            )
    if not argv:
        raise ConfigError("generation.server_command is blank; use '' for a running server")
    return tuple(argv)


def api_key(env_name: str) -> str:
    """The key in environment variable ``env_name``; the dummy "EMPTY" when no name is set.

    Raises:
        ConfigError: a variable is named but unset (a silent dummy key would only fail later).
    """
    if not env_name:
        return "EMPTY"
    value = os.environ.get(env_name)
    if not value:
        raise ConfigError(
            f"generation.api_key_env names {env_name!r}, which is not set: export it, or set "
            "generation.api_key_env='' for servers without a key"
        )
    return value


def served_model_name(served_model: str, model_dir: str | os.PathLike) -> str:
    """``generation.served_model``, else the model path as given (how servers name it)."""
    return served_model or str(model_dir)


def table_path(clusters_dir: str | os.PathLike) -> Path:
    """``token_clusters.npy`` inside a clusters directory (or the file itself), absolute."""
    path = Path(clusters_dir)
    return (path / TABLE_FILE if path.is_dir() else path).resolve()

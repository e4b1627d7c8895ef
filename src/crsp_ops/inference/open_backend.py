"""Open the configured generation backend, steered by a clusters-stage table, and clean up.

``open_backend`` is the one way drivers get a ``GenerationBackend`` (``transformers``,
``vllm_colocate`` or ``openai_server``); whatever it started is stopped on exit, error or Ctrl-C.

Design: docs/design/inference.md#open_backend.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from crsp_ops.config import Settings
from crsp_ops.config.engine_checks import COLOCATED_BACKEND
from crsp_ops.config.errors import ConfigError
from crsp_ops.config.steering_config import GenerationSettings
from crsp_ops.inference.backend import GenerationBackend
from crsp_ops.inference.canary import run_canary
from crsp_ops.inference.completions import LogprobSemantics, SamplingParams
from crsp_ops.inference.hf_chat import checked_template_kwargs
from crsp_ops.inference.openai_backend import OpenAIServerBackend, OpenAIServerSettings
from crsp_ops.inference.request_options import unsupported_extras
from crsp_ops.inference.server_config import ServerConfig
from crsp_ops.inference.server_launch import (
    ENGINE_COMMANDS,
    api_key,
    missing_server_message,
    served_model_name,
    server_launch,
    server_root,
    table_path,
)
from crsp_ops.inference.server_manager import ServerManager, probe_health
from crsp_ops.inference.transformers_backend import TransformersBackend
from crsp_ops.inference.vllm_colocated import ColocatedVLLMBackend
from crsp_ops.models.model_ref import resolve_model_dir, resolve_tokenizer_dir
from crsp_ops.steering.table import load_table_and_count
from crsp_ops.steering.vllm_runner import installed_vllm_version

logger = logging.getLogger(__name__)

STEERING_ENGINES = ("vllm", "sglang", "local")
WIRE_ENGINE = {"local": "vllm"}  # the project's server takes vLLM's request fields
SERVER_RECORD = "server.json"  # in the job's output directory while its server runs


def prompt_template(settings: Settings) -> str:
    """The FinanceBench user-message template with newlines decoded.

    It is ``financebench.prompt_template``, the one the tiny model is trained on, so training
    and generation always agree.
    """
    return settings.financebench.user_template


def sampling_params(settings: Settings) -> SamplingParams:
    """The ``generation`` section's sampling parameters (what minibatches decode with)."""
    return generation_sampling(settings.generation)


def generation_sampling(generation: GenerationSettings) -> SamplingParams:
    """``SamplingParams`` of the ``generation`` section, every knob included."""
    return SamplingParams(
        max_new_tokens=generation.max_new_tokens,
        temperature=generation.temperature,
        top_p=generation.top_p,
        seed=generation.seed,
        top_k=generation.top_k,
        min_p=generation.min_p,
        repetition_penalty=generation.repetition_penalty,
    )


@contextmanager
def open_backend(
    settings: Settings,
    model_dir: str | os.PathLike,
    clusters_dir: str | os.PathLike | None,
    state_dir: str | os.PathLike | None = None,
) -> Iterator[GenerationBackend]:
    """Yield the configured backend; stop everything it started when the context exits.

    Args:
        settings: the effective settings (``generation`` and ``model.device`` are read).
        model_dir: the model directory (in-process: loaded; server: substituted for
            ``{model_dir}`` and used as the served model name unless one is configured).
        clusters_dir: the clusters stage output (``token_clusters.npy`` and
            ``clusters_meta.json``), or ``None`` for an unsteered backend (deltas then raise).
        state_dir: the job's output directory: a server started here is recorded there
            (``SERVER_RECORD``) while it runs, so the next start can stop one a killed job left.

    Raises:
        ConfigError: settings that cannot work (steering with ``engine=openai``, bad command).
        crsp_ops.inference.server_manager.ServerStartupError: a started server never became
            healthy (the message carries its log tail).
        crsp_ops.inference.canary.SteeringCanaryError: the server does not apply the deltas.
    """
    tokenizer_dir = resolve_tokenizer_dir(model_dir)  # where model_ref.json points
    model_dir = resolve_model_dir(model_dir)
    table, n_clusters = _load_table(clusters_dir)
    if settings.generation.backend == "transformers":
        backend = _transformers_backend(settings, model_dir, table, n_clusters, tokenizer_dir)
        try:
            yield backend
        finally:
            backend.close()
        return
    if settings.generation.backend == COLOCATED_BACKEND:
        backend = _colocated_backend(settings, model_dir, clusters_dir, tokenizer_dir)
        try:
            yield backend
        finally:
            backend.close()
        return
    with ExitStack() as stack:
        yield _server_backend(settings, model_dir, clusters_dir, table, n_clusters, stack,
                              tokenizer_dir, state_dir)


def _load_table(clusters_dir: str | os.PathLike | None) -> tuple[Any, int | None]:
    if clusters_dir is None:
        return None, None

    return load_table_and_count(clusters_dir)


def _transformers_backend(
    settings: Settings, model_dir: str | os.PathLike, table: Any, n_clusters: int | None,
    tokenizer_dir: str | os.PathLike | None = None,
) -> GenerationBackend:

    generation = settings.generation
    logger.info(
        "in-process transformers backend: %s on %s (steering %s)",
        model_dir, settings.model.device, "on" if table is not None else "off",
    )
    kwargs = checked_template_kwargs(
        _local_tokenizer(tokenizer_dir or model_dir) if generation.template_kwargs else None,
        generation.template_kwargs)
    return TransformersBackend.from_pretrained(
        model_dir, device=settings.model.device, dtype=generation.dtype,
        tokenizer_dir=tokenizer_dir, token_clusters=table, n_clusters=n_clusters,
        batch_size=generation.batch_size, chat_template_kwargs=kwargs,
    )


def _colocated_backend(settings: Settings, model_dir: str | os.PathLike,
                       clusters_dir: str | os.PathLike | None,
                       tokenizer_dir: str | os.PathLike | None = None) -> GenerationBackend:
    generation = settings.generation
    tokenizer = _local_tokenizer(tokenizer_dir or model_dir)
    logger.info("colocated vLLM backend: %s (steering %s)", model_dir,
                "on" if clusters_dir is not None else "off")
    return ColocatedVLLMBackend(
        model_dir, tokenizer, memory_fraction=generation.memory_fraction,
        dtype=generation.dtype, seed=generation.seed, sleep_mode=generation.vllm_sleep_mode,
        clusters_dir=clusters_dir,
        chat_template_kwargs=checked_template_kwargs(tokenizer, generation.template_kwargs))


def _server_backend(
    settings: Settings,
    model_dir: str | os.PathLike,
    clusters_dir: str | os.PathLike | None,
    table: Any,
    n_clusters: int | None,
    stack: ExitStack,
    tokenizer_dir: str | os.PathLike | None = None,
    state_dir: str | os.PathLike | None = None,
) -> GenerationBackend:
    """Start (or find) the server, build the client backend, run the canary; all on ``stack``."""
    generation = settings.generation
    steering = table is not None
    if steering and generation.engine not in STEERING_ENGINES:
        raise ConfigError(
            f"generation.engine={generation.engine!r} cannot steer, but a clusters directory "
            f"was given: set generation.engine to one of {STEERING_ENGINES} (a server with the "
            "crsp_ops processor loaded), or run without steering"
        )
    tokenizer = _local_tokenizer(tokenizer_dir or model_dir)
    checked_template_kwargs(tokenizer, generation.template_kwargs)
    client = client_settings(generation, base_url=generation.base_url,
                             model=served_model_name(generation.served_model, model_dir),
                             n_clusters=n_clusters)
    server = settings_server_manager(settings, model_dir, clusters_dir, state_dir)
    if server is not None:
        stack.enter_context(server)  # starts it; stops it (process group) on exit
    backend = OpenAIServerBackend(client, server=server, tokenizer=tokenizer)
    stack.callback(backend.close)  # LIFO: the client closes before the server stops
    logger.info(
        "openai_server backend: %s (engine %s, %s, steering %s)", generation.base_url,
        generation.engine, "started here" if server and server.owns_process else "already running",
        "on" if steering else "off",
    )
    if steering and generation.canary:

        run_canary(backend, n_clusters, token_clusters=table, engine=generation.engine)
    return backend


def settings_server_manager(
    settings: Settings, model_dir: str | os.PathLike, clusters_dir: str | os.PathLike | None,
    state_dir: str | os.PathLike | None = None,
):
    """A manager that starts ``server_command``, or health-checks a running vLLM/SGLang server.

    Returns ``None`` for a running generic OpenAI endpoint (hosted APIs have no health path).
    """
    generation = settings.generation
    table = None if clusters_dir is None else str(table_path(clusters_dir))
    if not generation.server_command and generation.engine not in STEERING_ENGINES:
        return None
    command, env = None, None
    launch = generation.server_command or local_command(generation, table)
    if launch:
        command, env = server_launch(
            generation, model_dir=model_dir, token_clusters=table,
            vllm_version=installed_vllm_version(), command=launch,
        )
    elif not probe_health(server_root(generation.base_url) + generation.health_path, 5.0):
        raise ConfigError(missing_server_message(generation.engine, generation.base_url))
    state_path = None if state_dir is None or command is None else Path(state_dir) / SERVER_RECORD
    return server_manager(generation, base_url=generation.base_url, command=command,
                          env=env or None, state_path=state_path)


def local_command(generation: GenerationSettings, table: str | None) -> str:
    """The project's own server command for ``engine=local`` ('' for other engines)."""
    if generation.engine != "local":
        return ""
    steering = " --token-clusters {token_clusters}" if table is not None else ""
    return f"{ENGINE_COMMANDS['local']} --dtype {generation.dtype}{steering}"


def server_manager(
    generation: GenerationSettings,
    *,
    base_url: str,
    command: tuple[str, ...] | None,
    env: dict[str, str] | None = None,
    state_path: str | os.PathLike | None = None,
) -> ServerManager:
    """The ``ServerManager`` for a server at ``base_url`` under the ``generation`` settings.

    The one place server options (health path, startup timeout, restarts, log) become a
    manager: evolve's backend and CRSP's server-backed generation both come through here.
    ``command=None`` health-checks a server that is already running.
    """
    return ServerManager(
        ServerConfig(
            base_url=server_root(base_url),
            command=command,
            health_path=generation.health_path,
            startup_timeout_s=generation.startup_timeout_s,
            max_restarts=generation.server_max_restarts,
            log_path=generation.server_log or None,
            env=env or None,
            state_path=None if state_path is None else str(state_path),
        )
    )


def client_settings(
    generation: GenerationSettings,
    *,
    base_url: str,
    model: str,
    n_clusters: int | None = None,
    logprob_semantics: LogprobSemantics | None = None,
) -> OpenAIServerSettings:
    """How the client talks to the server at ``base_url`` (engine, key, concurrency, timeout).

    Raises:
        ConfigError: one line naming a knob the engine is known not to honour.
    """
    engine = WIRE_ENGINE.get(generation.engine, generation.engine)
    asked = [*generation_sampling(generation).engine_extras,
             *(["chat_template_kwargs"] if generation.template_kwargs else [])]
    refused = unsupported_extras(engine, asked)
    if refused:
        raise ConfigError(
            f"generation.{refused[0]} is set, but generation.engine={generation.engine} cannot "
            "honour it: switch it off, or use an engine that takes it (vllm, sglang, local)")
    return OpenAIServerSettings(
        base_url=base_url,
        model=model,
        engine=engine,
        api_key=api_key(generation.api_key_env),
        max_concurrency=generation.max_concurrency,
        request_timeout_s=generation.request_timeout_s,
        n_clusters=n_clusters,
        logprob_semantics=logprob_semantics,
        chat_template_kwargs=generation.template_kwargs or None,
    )


def _local_tokenizer(model_dir: str | os.PathLike) -> Any | None:
    """The model's tokenizer when ``model_dir`` is a local directory, else ``None``.

    Used only for servers that return no token ids (logprob tokens are mapped back to ids).
    """
    if not (Path(model_dir) / "tokenizer_config.json").is_file():
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)

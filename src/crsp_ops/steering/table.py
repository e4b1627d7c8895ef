"""Load the token→cluster table where engines need it: numpy only, no scikit-learn.

Inference servers (SGLang, vLLM) load the table once per process from the path in
``TOKEN_CLUSTERS_ENV``; only per-cluster deltas travel with requests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

TABLE_FILE = "token_clusters.npy"
META_FILE = "clusters_meta.json"
TOKEN_CLUSTERS_ENV = "CRSP_STEER_TOKEN_CLUSTERS"
"""Environment variable naming ``token_clusters.npy`` (or its directory) for server processes."""


def load_table(path: str | os.PathLike) -> np.ndarray:
    """Load a ``token_clusters.npy`` table (or the directory holding one) as read-only int64."""
    path = Path(path)
    if path.is_dir():
        path = path / TABLE_FILE
    table = np.load(path, allow_pickle=False)
    if table.ndim != 1 or not np.issubdtype(table.dtype, np.integer) or (table < 0).any():
        raise ValueError(f"{path}: expected a 1-D array of non-negative cluster ids")
    table = table.astype(np.int64)
    table.setflags(write=False)
    return table


def load_table_and_count(path: str | os.PathLike) -> tuple[np.ndarray, int]:
    """Load a table and its number of cluster ids.

    The count comes from ``clusters_meta.json`` beside the table when present (so a trailing
    empty cluster still counts and deltas can be checked exactly), else ``max id + 1``.
    """
    table = load_table(path)
    directory = Path(path) if Path(path).is_dir() else Path(path).parent
    meta = directory / META_FILE
    n_clusters = (
        int(json.loads(meta.read_text(encoding="utf-8"))["n_clusters"])
        if meta.exists()
        else int(table.max()) + 1
    )
    if table.size and int(table.max()) >= n_clusters:
        raise ValueError(f"{path}: cluster id {int(table.max())} >= n_clusters={n_clusters}")
    return table, n_clusters


def env_table_path() -> str:
    """Return the resolved table path named by ``TOKEN_CLUSTERS_ENV``.

    Raises:
        RuntimeError: the variable is unset, so the server cannot steer (fail loudly rather
            than serve unsteered completions).
    """
    path = os.environ.get(TOKEN_CLUSTERS_ENV)
    if not path:
        raise RuntimeError(
            f"{TOKEN_CLUSTERS_ENV} is not set: export it to the clusters stage's "
            f"{TABLE_FILE} before starting the inference server"
        )
    return str(Path(path).resolve())

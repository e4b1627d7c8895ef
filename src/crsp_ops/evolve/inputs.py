"""Load what an evolution run starts from: the clusters stage outputs and the initial deltas."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crsp_ops.errors import DataError, MissingInputError
from crsp_ops.steering.cluster_io import DESCRIPTIONS_FILE
from crsp_ops.steering.deltas import Deltas, load_deltas
from crsp_ops.steering.table import TABLE_FILE, load_table_and_count


@dataclass(frozen=True, eq=False)
class ClusterInputs:
    """The clusters stage outputs the loop needs (no scikit-learn state)."""

    directory: Path
    token_clusters: np.ndarray  # (V,) cluster id of each vocab id
    n_clusters: int
    descriptions: dict[str, Any]  # cluster_descriptions.json

    @property
    def table_path(self) -> Path:
        """``token_clusters.npy``."""
        return self.directory / TABLE_FILE


def load_cluster_inputs(directory: str | Path) -> ClusterInputs:
    """Read ``token_clusters.npy``, ``clusters_meta.json`` and ``cluster_descriptions.json``.

    Raises:
        MissingInputError: naming the stage to run when a file is missing.
        DataError: descriptions that do not cover exactly the cluster ids.
    """
    path = Path(directory)
    for name in (TABLE_FILE, DESCRIPTIONS_FILE):
        if not (path / name).is_file():
            raise MissingInputError(
                f"{path / name} is missing: run the clusters stage (crsp-ops clusters) first"
            )
    table, n_clusters = load_table_and_count(path)
    descriptions = json.loads((path / DESCRIPTIONS_FILE).read_text("utf-8"))
    if set(descriptions) != {str(i) for i in range(n_clusters)}:
        raise DataError(
            f"{path / DESCRIPTIONS_FILE} must describe cluster ids 0..{n_clusters - 1}: "
            "re-run the clusters stage (crsp-ops clusters)"
        )
    return ClusterInputs(path, table, n_clusters, descriptions)


def load_initial_deltas(path: str | Path, n_clusters: int) -> Deltas:
    """Read and validate the initial deltas (exactly the cluster ids, finite numbers)."""
    if not Path(path).is_file():
        raise MissingInputError(f"{path} is missing: run the deltas stage (crsp-ops deltas) first")
    return load_deltas(path, n_clusters=n_clusters, clamp=None)

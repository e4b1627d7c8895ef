"""What an evolution run starts from: clusters outputs, initial deltas, questions, minibatches."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from crsp_ops.data.examples import FinanceBenchExample
from crsp_ops.data.financebench import load_financebench, split_pool_heldout
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
    """Read and validate the initial deltas (exactly the cluster ids, finite numbers).

    Raises:
        MissingInputError: no file at ``path``.
        DataError: keys other than the cluster ids, or a value that is not a finite number.
    """
    if not Path(path).is_file():
        raise MissingInputError(f"{path} is missing: run the deltas stage (crsp-ops deltas) first")
    try:
        return load_deltas(path, n_clusters=n_clusters, clamp=None)
    except ValueError as error:  # wrong keys, a non-number, not JSON: the user's file
        raise DataError(f"{error}: fix the file (crsp-ops deltas writes a valid one)") from None


# ---- the question pool, the held-out split and per-iteration minibatches --------------------

POOL_FILE = "pool.jsonl"
HELDOUT_FILE = "heldout.jsonl"

T = TypeVar("T")


@dataclass(frozen=True)
class Questions:
    """The pool and held-out questions, and how many rows of each file were skipped."""

    pool: list[FinanceBenchExample]
    heldout: list[FinanceBenchExample]
    skipped: dict[str, int]  # "pool" / "heldout" (or "file" for one split file) -> rows skipped


def load_questions(source: str | Path, *, heldout_size: int, seed: int) -> Questions:
    """Load the pool and held-out questions (skipped rows are counted and logged).

    Args:
        source: the financebench stage's directory (``pool.jsonl`` + ``heldout.jsonl``), or one
            FinanceBench JSONL file, split here with ``heldout_size`` and ``seed``.
        heldout_size: held-out rows when splitting a single file.
        seed: split seed when splitting a single file.

    Raises:
        MissingInputError: the source (or one of the directory's two files) is missing.
        DataError: a file holds no valid row.
    """
    path = Path(source)
    if path.is_dir():
        files = [path / POOL_FILE, path / HELDOUT_FILE]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise MissingInputError(
                f"{path} is missing {missing}: run the financebench stage (dvc repro financebench) "
                "or pass a FinanceBench JSONL file"
            )
        pool, heldout = (load_financebench(str(f), synthetic_count=0, seed=0) for f in files)
        return Questions(list(pool.rows), list(heldout.rows),
                         {"pool": pool.n_skipped, "heldout": heldout.n_skipped})
    if not path.is_file():
        raise MissingInputError(f"pool {path} does not exist: check --pool")
    loaded = load_financebench(str(path), synthetic_count=0, seed=0)
    pool, heldout = split_pool_heldout(list(loaded.rows), heldout_size=heldout_size, seed=seed)
    return Questions(pool, heldout, {"file": loaded.n_skipped})


def load_pool_and_heldout(
    source: str | Path, *, heldout_size: int, seed: int
) -> tuple[list[FinanceBenchExample], list[FinanceBenchExample]]:
    """``(pool, heldout)`` of ``load_questions``."""
    questions = load_questions(source, heldout_size=heldout_size, seed=seed)
    return questions.pool, questions.heldout


def select_pool(rows: Sequence[T], indices: Sequence[int] | None) -> list[T]:
    """All rows (``None``) or the rows at these 0-based indices.

    >>> select_pool(["a", "b", "c"], [2, 0])
    ['c', 'a']
    """
    if indices is None:
        return list(rows)
    bad = [i for i in indices if not 0 <= i < len(rows)]
    if bad:
        raise ValueError(f"evolve.pool_indices {bad} out of range for a pool of {len(rows)}")
    return [rows[i] for i in indices]


def sample_minibatch(pool: Sequence[T], *, size: int, seed: int, iteration: int) -> list[T]:
    """Draw ``size`` rows without replacement; the same (seed, iteration) gives the same draw.

    >>> sample_minibatch(list(range(10)), size=3, seed=0, iteration=1) == \
sample_minibatch(list(range(10)), size=3, seed=0, iteration=1)
    True
    """
    if not pool:
        raise ValueError("the pool is empty")
    if size < 1:
        raise ValueError(f"minibatch size must be >= 1, got {size}")
    rng = random.Random(f"evolve:{seed}:{iteration}")
    chosen = sorted(rng.sample(range(len(pool)), min(size, len(pool))))
    return [pool[i] for i in chosen]

"""The question pool and held-out split the loop draws from, and per-iteration minibatches."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from crsp_ops.data.examples import FinanceBenchExample
from crsp_ops.data.financebench import load_financebench, split_pool_heldout
from crsp_ops.errors import MissingInputError

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

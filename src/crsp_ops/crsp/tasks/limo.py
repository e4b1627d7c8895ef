"""LIMO rows as self-play math tasks, and the held-out split shared by seeding and self-play.

The last ``heldout`` rows are never trained on: seeding and self-play both call
``split_heldout`` with the same ``crsp.heldout_math``, so the evaluation solves rows neither
has seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crsp_ops.crsp.tasks.task_types import MathTask
from crsp_ops.data.examples import LimoExample
from crsp_ops.data.limo import load_limo
from crsp_ops.data.load_result import LoadResult


def math_tasks(rows: Sequence[LimoExample]) -> list[MathTask]:
    """One ``MathTask`` per LIMO row.

    >>> math_tasks([LimoExample("1+1?", "1+1=2", "2")])
    [MathTask(question='1+1?', solution='1+1=2', answer='2')]
    """
    return [MathTask(row.question, row.solution, row.answer) for row in rows]


def split_heldout(rows: Sequence[LimoExample], heldout: int
                  ) -> tuple[list[LimoExample], list[LimoExample]]:
    """``(train_rows, heldout_rows)``: the last ``heldout`` rows are held out.

    >>> rows = [LimoExample(str(i), "s", "a") for i in range(5)]
    >>> [len(part) for part in split_heldout(rows, 2)]
    [3, 2]
    """
    if heldout < 0:
        raise ValueError(f"heldout must be >= 0, got {heldout}")
    if heldout >= len(rows):
        raise ValueError(f"crsp.heldout_math={heldout} leaves none of the {len(rows)} LIMO rows "
                         "to train on; lower it or provide more rows")
    cut = len(rows) - heldout
    return list(rows[:cut]), list(rows[cut:])


LIMO_STAGE_FILE = "limo.jsonl"


def limo_file(path: str | Path) -> Path:
    """The LIMO rows file at ``path`` (a rows file, or a directory such as the stage output).

    A directory gives its ``limo.jsonl`` (the stage writes it beside ``stats.json``), else its
    one .jsonl/.json/.parquet file.

    Raises:
        FileNotFoundError: nothing there, or a directory holding no (or several) row files.
    """
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no LIMO rows (run `crsp-ops limo` first, or pass "
                                "--limo with a rows file or directory)")
    if (path / LIMO_STAGE_FILE).is_file():  # the limo stage's output (beside its stats.json)
        return path / LIMO_STAGE_FILE
    files = sorted(p for suffix in (".jsonl", ".json", ".parquet") for p in path.glob(f"*{suffix}")
                   if not p.name.startswith(("meta", "manifest")))
    if len(files) != 1:
        raise FileNotFoundError(f"{path}: expected exactly one LIMO rows file (.jsonl/.json/"
                                f".parquet), found {[p.name for p in files]}")
    return files[0]


def load_limo_result(source: str, limo_dir: Path, *, synthetic_count: int, seed: int,
                     hub_split: str) -> LoadResult:
    """LIMO rows and skip counts: ``stage`` reads the limo stage's file in ``limo_dir``.

    Any other ``source`` goes to ``load_limo`` as it is.

    Raises:
        FileNotFoundError: ``stage`` and no rows file in ``limo_dir``.
    """
    path = str(limo_file(limo_dir)) if source == "stage" else source
    return load_limo(path, synthetic_count=synthetic_count, seed=seed, hub_split=hub_split,
                     hub_revision=None)

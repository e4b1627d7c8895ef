"""LIMO-format math data: ``question``, ``solution`` (step-by-step reasoning), ``answer``.

Sources: ``hub:<repo>`` (e.g. ``hub:GAIR/LIMO``, through ``datasets``, only when configured),
a local ``.jsonl``/``.json``/``.parquet`` file, or ``synthetic`` (the offline default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crsp_ops.data.examples import LimoExample
from crsp_ops.data.limo_synthetic import generate_limo_examples
from crsp_ops.data.load_result import LoadResult, RowError, SkipTally, warn_skipped
from crsp_ops.data.row_fields import required_str
from crsp_ops.data.row_files import iter_raw_rows
from crsp_ops.errors import DataError

HUB_PREFIX = "hub:"
SYNTHETIC_SOURCE = "synthetic"


def parse_limo_row(row: Any) -> LimoExample:
    """Validate one raw row.

    Raises:
        RowError: the row is not an object or a field is missing, empty or not a string.
    """
    if not isinstance(row, Mapping):
        raise RowError(f"row is {type(row).__name__}, expected an object")
    return LimoExample(
        question=required_str(row, "question"),
        solution=required_str(row, "solution"),
        answer=required_str(row, "answer"),
    )


def parse_limo_rows(raw_rows: Iterable[Any], tally: SkipTally) -> list[LimoExample]:
    """Parse raw rows, recording each invalid one in ``tally`` instead of raising."""
    examples = []
    for raw in raw_rows:
        try:
            examples.append(parse_limo_row(raw))
        except RowError as error:
            tally.skip(str(error))
    return examples


def load_limo(
    source: str,
    *,
    synthetic_count: int,
    seed: int,
    hub_split: str,
    hub_revision: str | None,
) -> LoadResult[LimoExample]:
    """Load LIMO rows from ``source``.

    Args:
        source: ``synthetic``, ``hub:<dataset repo>`` or a path to a local file.
        synthetic_count: rows to generate when ``source`` is ``synthetic``.
        seed: generator seed when ``source`` is ``synthetic``.
        hub_split: split to read from the hub (e.g. ``train``).
        hub_revision: hub revision (commit, tag or branch); ``None`` for the default branch.

    Returns:
        The valid rows and the count of skipped ones.

    Raises:
        FileNotFoundError: a local file does not exist.
        ValueError: a local file holds no valid row, or the source is malformed.
    """
    if source == SYNTHETIC_SOURCE:
        if synthetic_count < 1:
            raise ValueError(f"synthetic_count must be >= 1, got {synthetic_count}")
        return LoadResult(
            rows=tuple(generate_limo_examples(count=synthetic_count, seed=seed)),
            n_skipped=0,
            skipped_reasons={},
        )
    tally = SkipTally()
    if source.startswith(HUB_PREFIX):
        raw_rows = _hub_rows(source[len(HUB_PREFIX) :], split=hub_split, revision=hub_revision)
    else:
        raw_rows = iter_raw_rows(Path(source), lambda _line, why: tally.skip(why))
    examples = parse_limo_rows(raw_rows, tally)
    result = tally.result(examples)
    if not result.rows:
        raise DataError(
            f"no valid LIMO row in {source} ({result.n_skipped} skipped: "
            f"{_top_reasons(result)}); each row needs question, solution and answer"
            " as non-empty strings"
        )
    warn_skipped(result, source)
    return result


def _hub_rows(repo: str, *, split: str, revision: str | None) -> Iterable[Any]:
    if not repo.strip():
        raise ValueError(f"hub source needs a dataset name, e.g. {HUB_PREFIX}GAIR/LIMO")
    # Lazy: `datasets` is heavy and the hub is reached only when a user configures it.
    import datasets

    return datasets.load_dataset(repo, split=split, revision=revision)


def _top_reasons(result: LoadResult) -> str:
    reasons = sorted(result.skipped_reasons.items(), key=lambda item: -item[1])[:3]
    return "; ".join(f"{why} x{count}" for why, count in reasons) or "the file is empty"

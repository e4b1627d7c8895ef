"""The outcome of loading a dataset: the valid rows plus an account of what was skipped."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Generic, TypeVar

RowT = TypeVar("RowT")

logger = logging.getLogger(__name__)


class RowError(ValueError):
    """Raised by a row parser when a raw row has a missing or mistyped field."""


@dataclass(frozen=True)
class LoadResult(Generic[RowT]):
    """Valid rows of one source and the rows that were skipped, with reasons."""

    rows: tuple[RowT, ...]  # parsed, validated rows in source order
    n_skipped: int  # raw rows (or unparsable lines) left out
    skipped_reasons: dict[str, int]  # reason -> how many rows were skipped for it

    def __len__(self) -> int:
        return len(self.rows)


class SkipTally:
    """Counts skipped rows by reason while a source is read."""

    def __init__(self) -> None:
        self._reasons: Counter[str] = Counter()

    def skip(self, reason: str) -> None:
        """Record one skipped row."""
        self._reasons[reason] += 1

    def result(self, rows: list[RowT]) -> LoadResult[RowT]:
        """Freeze the tally together with the accepted rows."""
        return LoadResult(
            rows=tuple(rows),
            n_skipped=sum(self._reasons.values()),
            skipped_reasons=dict(sorted(self._reasons.items())),
        )


def warn_skipped(result: LoadResult, source: str) -> None:
    """Log a warning naming ``source`` and why rows were skipped (nothing when none were)."""
    if result.n_skipped:
        reasons = ", ".join(f"{why}: {count}" for why, count in result.skipped_reasons.items())
        logger.warning("%s: %d of %d rows skipped (%s)", source, result.n_skipped,
                       result.n_skipped + len(result.rows), reasons)

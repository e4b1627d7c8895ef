"""Percentile bootstrap intervals over per-question rows.

Rows are resampled together (with replacement), so one helper covers a plain mean, a statistic
of several per-question columns (a composite of the correctness and the mean length of the same
answers) and a *paired* difference (both deltas' columns of the same question travel together,
so question difficulty cancels out). Pure numpy; a seeded generator makes intervals repeatable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

Statistic = Callable[[np.ndarray], float]


def _mean(rows: np.ndarray) -> float:
    return float(rows.mean())


def bootstrap_interval(
    values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray,
    statistic: Statistic = _mean,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over the rows of ``values``.

    Args:
        values: ``(n,)`` per-question values or ``(n, k)`` per-question columns; rows are
            resampled as units.
        statistic: maps an array shaped like ``values`` to a float (default: the mean).
        confidence: central coverage of the interval, in (0, 1).
        resamples: bootstrap resamples (>= 100).
        seed: seed of the resampling generator.

    Returns:
        ``(low, high)``; both equal ``statistic(values)`` when every row is identical.

    Raises:
        ValueError: no rows, or ``confidence`` / ``resamples`` out of range.

    >>> low, high = bootstrap_interval([0.0, 1.0] * 50)
    >>> 0.39 < low < 0.5 < high < 0.61
    True
    >>> bootstrap_interval([[1.0, 3.0]] * 4, lambda rows: float((rows[:, 1] - rows[:, 0]).mean()))
    (2.0, 2.0)
    """
    return bootstrap_intervals(values, {"stat": statistic}, confidence=confidence,
                               resamples=resamples, seed=seed)["stat"]


def bootstrap_intervals(
    values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray,
    statistics: Mapping[str, Statistic],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """``bootstrap_interval`` of several statistics over the *same* resamples.

    One set of resampled rows serves every statistic, so the intervals of, e.g., a paired
    composite gain and a paired correctness gain describe the same bootstrap world.

    >>> rows = [[0.0, 1.0]] * 3
    >>> bootstrap_intervals(rows, {"a": lambda r: float(r[:, 0].mean()),
    ...                            "b": lambda r: float(r[:, 1].mean())})
    {'a': (0.0, 0.0), 'b': (1.0, 1.0)}
    """
    rows = np.asarray(values, dtype=float)
    if rows.ndim == 0 or len(rows) == 0:
        raise ValueError("bootstrap_interval needs at least one row")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if resamples < 100:
        raise ValueError(f"resamples must be >= 100, got {resamples}")
    generator = np.random.default_rng(seed)
    picks = generator.integers(0, len(rows), size=(resamples, len(rows)))  # (R, n)
    samples = [rows[pick] for pick in picks]
    tail = (1.0 - confidence) / 2.0
    out = {}
    for name, statistic in statistics.items():
        estimates = np.array([statistic(sample) for sample in samples])  # (R,)
        low, high = np.quantile(estimates, [tail, 1.0 - tail])
        out[name] = (float(low), float(high))
    return out

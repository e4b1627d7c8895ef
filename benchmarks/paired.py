"""Paired, interleaved repetitions → median ratio with a 95% bootstrap interval.

Every ratio benchmark times its two sides in alternating order (A, B, then B, A, ...) so slow
drifts in machine load hit both alike, takes one ratio per repetition, and reports the median
ratio with a percentile-bootstrap 95% interval of that median. The half-width tells whether
the benchmark can resolve the goal's margin (e.g. 0.97 vs 1.0 needs a half-width < 0.03).

    from benchmarks.paired import interleaved, summary
    pairs = interleaved(run_a, run_b, reps=20)       # [(a_seconds, b_seconds), ...]
    summary([a / b for a, b in pairs])                # {"ratio": ..., "ci95": [lo, hi], ...}
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def interleaved(run_a: Callable[[], T], run_b: Callable[[], T], reps: int) -> list[tuple[T, T]]:
    """``reps`` pairs ``(run_a(), run_b())``, the call order alternating every repetition."""
    pairs = []
    for rep in range(reps):
        if rep % 2 == 0:
            a = run_a()
            b = run_b()
        else:
            b = run_b()
            a = run_a()
        pairs.append((a, b))
    return pairs


def bootstrap_median_ci(values: Sequence[float], *, level: float = 0.95, resamples: int = 2000,
                        seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median of ``values``.

    >>> bootstrap_median_ci([1.0, 1.0, 1.0])
    (1.0, 1.0)
    """
    if not values:
        raise ValueError("no values to bootstrap")
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - level) / 2
    low = medians[int(tail * (resamples - 1))]
    high = medians[int(round((1 - tail) * (resamples - 1)))]
    return low, high


def summary(ratios: Sequence[float], *, digits: int = 4) -> dict:
    """``ratio`` (median), ``ci95``, ``ci95_half_width`` and ``reps`` of per-repetition ratios.

    >>> summary([0.9, 1.0, 1.1])["ratio"]
    1.0
    """
    low, high = bootstrap_median_ci(list(ratios))
    return {"ratio": round(statistics.median(ratios), digits),
            "ci95": [round(low, digits), round(high, digits)],
            "ci95_half_width": round((high - low) / 2, digits), "reps": len(ratios)}

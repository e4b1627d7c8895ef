"""Percentile-bootstrap intervals for scores computed from per-example results (pure).

A held-out composite is not a mean of per-example values (shortness is a function of the
*mean* length), so the interval resamples examples and recomputes the whole statistic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from crsp_ops.evaluation.scoring import composite_score, shortness_score


def bootstrap_interval(
    n_examples: int,
    statistic: Callable[[np.ndarray], float],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap ``(low, high)`` of ``statistic`` over resampled example indices.

    Args:
        n_examples: how many examples the statistic is computed on.
        statistic: ``(indices (n_examples,)) -> value`` on the examples at those indices.
        n_resamples: bootstrap resamples.
        level: coverage of the interval, in (0, 1).
        seed: resampling seed (the interval is a pure function of its inputs).

    >>> low, high = bootstrap_interval(4, lambda idx: float(np.mean(np.array([0, 1, 1, 1])[idx])))
    >>> 0.0 <= low <= 0.75 <= high <= 1.0
    True
    """
    if n_examples <= 0:
        raise ValueError("no examples to resample")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_examples, size=(n_resamples, n_examples))  # (R, N)
    values = np.array([statistic(row) for row in draws])
    tail = (1.0 - level) / 2.0
    return float(np.quantile(values, tail)), float(np.quantile(values, 1.0 - tail))


def composite_interval(
    response_tokens: Sequence[int],
    is_correct: Sequence[bool],
    *,
    shortness_scale: float,
    w_short: float,
    w_correct: float,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Bootstrap interval of the composite score of graded answers.

    >>> low, high = composite_interval([10, 30, 20], [True, False, True], shortness_scale=10.0,
    ...                                w_short=0.4, w_correct=0.6)
    >>> round(low, 3) <= 0.533 <= round(high, 3)  # the full-sample composite
    True
    """
    tokens = np.asarray(response_tokens, dtype=np.float64)
    correct = np.asarray(is_correct, dtype=np.float64)
    if tokens.shape != correct.shape:
        raise ValueError("response_tokens and is_correct must have the same length")

    def composite(idx: np.ndarray) -> float:
        short = shortness_score(float(tokens[idx].mean()), scale=shortness_scale)
        return composite_score(short, float(correct[idx].mean()),
                               w_short=w_short, w_correct=w_correct)

    return bootstrap_interval(len(tokens), composite, n_resamples=n_resamples, level=level,
                              seed=seed)


def proportion_interval(
    is_correct: Sequence[bool], *, n_resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Bootstrap interval of a correctness ratio.

    >>> proportion_interval([True] * 5)
    (1.0, 1.0)
    """
    correct = np.asarray(is_correct, dtype=np.float64)
    return bootstrap_interval(len(correct), lambda idx: float(correct[idx].mean()),
                              n_resamples=n_resamples, level=level, seed=seed)

"""Bootstrap intervals of held-out scores computed from graded answers (pure).

A held-out composite is not a mean of per-example values (shortness is a function of the
*mean* length), so each resample recomputes the whole statistic from the rows
``(response_tokens, is_correct)`` of the same answers (``bootstrap.bootstrap_interval``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crsp_ops.evaluation.bootstrap import bootstrap_interval
from crsp_ops.evaluation.scoring import composite_score, shortness_score


def composite_interval(
    response_tokens: Sequence[int],
    is_correct: Sequence[bool],
    *,
    shortness_scale: float,
    w_short: float,
    w_correct: float,
    resamples: int = 1000,
    confidence: float = 0.95,
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

    def composite(rows: np.ndarray) -> float:  # rows: (n, 2) = (tokens, correct)
        short = shortness_score(float(rows[:, 0].mean()), scale=shortness_scale)
        return composite_score(short, float(rows[:, 1].mean()),
                               w_short=w_short, w_correct=w_correct)

    return bootstrap_interval(np.column_stack([tokens, correct]), composite,
                              resamples=resamples, confidence=confidence, seed=seed)


def proportion_interval(
    is_correct: Sequence[bool], *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Bootstrap interval of a correctness ratio.

    >>> proportion_interval([True] * 5)
    (1.0, 1.0)
    """
    return bootstrap_interval(np.asarray(is_correct, dtype=np.float64), resamples=resamples,
                              confidence=confidence, seed=seed)

"""Minibatch scores: shorter answers and more correct answers score higher.

composite = w_short · shortness + w_correct · correctness, with
shortness = 1 / (1 + mean_tokens / scale); the defaults live in Kconfig, every function here
takes them explicitly.

Design: docs/design/grading.md#scoring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean_token_length(token_counts: Sequence[int]) -> float:
    """Mean response length in tokens.

    >>> mean_token_length([100, 300])
    200.0
    """
    if not token_counts:
        raise ValueError("no responses to average")
    if any(count < 0 for count in token_counts):
        raise ValueError("token counts must be >= 0")
    return sum(token_counts) / len(token_counts)


def correctness_ratio(is_correct: Sequence[bool]) -> float:
    """Fraction of correct answers.

    >>> correctness_ratio([True, False, True, True])
    0.75
    """
    if not is_correct:
        raise ValueError("no graded answers")
    return sum(bool(flag) for flag in is_correct) / len(is_correct)


def shortness_score(mean_tokens: float, *, scale: float) -> float:
    """Map a mean length to (0, 1]: 1 for empty answers, 0.5 at ``mean_tokens == scale``.

    >>> shortness_score(0.0, scale=500.0), shortness_score(500.0, scale=500.0)
    (1.0, 0.5)
    """
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be a positive finite number, got {scale}")
    if mean_tokens < 0:
        raise ValueError(f"mean_tokens must be >= 0, got {mean_tokens}")
    return 1.0 / (1.0 + mean_tokens / scale)


def composite_score(
    shortness: float, correctness: float, *, w_short: float, w_correct: float
) -> float:
    """Weighted sum of shortness and correctness.

    >>> round(composite_score(0.5, 0.75, w_short=0.4, w_correct=0.6), 6)
    0.65
    """
    for name, value in (("shortness", shortness), ("correctness", correctness)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    if w_short < 0 or w_correct < 0:
        raise ValueError(f"weights must be >= 0, got {w_short}, {w_correct}")
    return w_short * shortness + w_correct * correctness

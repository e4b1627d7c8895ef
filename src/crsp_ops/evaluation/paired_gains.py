"""Paired held-out gains of one deltas over another, and the goal's tests on them (pure).

Both deltas answer the same questions, so the bootstrap resamples questions and question
difficulty cancels out of every difference.

Design: docs/design/grading.md#paired_gains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from crsp_ops.evaluation.bootstrap import bootstrap_intervals
from crsp_ops.evaluation.minibatch_grading import ScoreWeights
from crsp_ops.evaluation.scoring import composite_score, shortness_score

NONINFERIORITY_MARGIN = 0.02  # correctness may be at most this much lower (paired lower bound)
TOKEN_CUT_GOAL = 0.20  # the goal: mean answer tokens at least 20% below the initial deltas'


@dataclass(frozen=True)
class Estimate:
    """A paired difference and its bootstrap interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class PairedGains:
    """Best - initial on the same held-out questions (docs/design/grading.md#paired_gains)."""

    n: int  # held-out questions
    confidence: float  # central coverage of the intervals
    initial_tokens: float  # mean answer tokens of the initial deltas
    best_tokens: float
    tokens: Estimate  # relative change of the mean tokens (best / initial - 1)
    correctness: Estimate  # correctness ratio difference
    composite: Estimate  # composite difference
    unchanged: bool  # every answer has the same length and verdict under both deltas

    def to_json(self) -> dict[str, Any]:
        """JSON form (``heldout.json``'s ``paired``)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairedGains:
        """Rebuild ``to_json``."""
        fields = {k: Estimate(**data[k]) for k in ("tokens", "correctness", "composite")}
        return cls(**{**data, **fields})


def paired_gains(
    initial_tokens: Sequence[float], initial_correct: Sequence[bool],
    best_tokens: Sequence[float], best_correct: Sequence[bool], *, weights: ScoreWeights,
    confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
) -> PairedGains:
    """Paired bootstrap estimates of the three gains (rows: the same question, in order).

    >>> w = ScoreWeights(shortness_scale=20.0, shortness_weight=0.4, correctness_weight=0.6)
    >>> g = paired_gains([40, 40] * 20, [True, False] * 20, [30, 30] * 20, [True, False] * 20,
    ...                  weights=w)
    >>> g.tokens, g.correctness.value, round(g.composite.value, 4)
    (Estimate(value=-0.25, low=-0.25, high=-0.25), 0.0, 0.0267)
    """
    rows = np.column_stack([initial_tokens, initial_correct, best_tokens, best_correct]).astype(
        float)  # (n, 4)
    if rows.shape[0] == 0:
        raise ValueError("paired_gains needs at least one held-out question")

    def composite(tokens: np.ndarray, correct: np.ndarray) -> float:
        short = shortness_score(float(tokens.mean()), scale=weights.shortness_scale)
        return composite_score(short, float(correct.mean()), w_short=weights.shortness_weight,
                               w_correct=weights.correctness_weight)

    statistics = {
        "tokens": lambda r: float(r[:, 2].mean() / max(r[:, 0].mean(), 1e-12) - 1.0),
        "correctness": lambda r: float(r[:, 3].mean() - r[:, 1].mean()),
        "composite": lambda r: composite(r[:, 2], r[:, 3]) - composite(r[:, 0], r[:, 1]),
    }
    bounds = bootstrap_intervals(rows, statistics, confidence=confidence, resamples=resamples,
                                 seed=seed)
    estimates = {name: Estimate(stat(rows), *bounds[name]) for name, stat in statistics.items()}
    return PairedGains(
        n=len(rows), confidence=confidence, initial_tokens=float(rows[:, 0].mean()),
        best_tokens=float(rows[:, 2].mean()), unchanged=bool((rows[:, :2] == rows[:, 2:]).all()),
        **estimates)


def correctness_non_inferior(correctness_low: float,
                             margin: float = NONINFERIORITY_MARGIN) -> bool:
    """Non-inferiority of correctness: the paired difference's lower bound is >= ``-margin``.

    >>> correctness_non_inferior(-0.02), correctness_non_inferior(-0.021)
    (True, False)
    """
    return correctness_low >= -margin - 1e-12  # -0.02 computed as 0.13 - 0.15 still passes


def goal_met(gains: PairedGains, *, token_cut: float = TOKEN_CUT_GOAL,
             margin: float = NONINFERIORITY_MARGIN) -> bool:
    """The goal's per-seed floor: fewer tokens, non-inferior correctness, composite gain > 0.

    Mean tokens at least ``token_cut`` below the initial's, correctness non-inferior, and the
    composite gain's interval above 0.

    >>> e = lambda v, lo, hi: Estimate(v, lo, hi)
    >>> g = PairedGains(400, 0.95, 50.0, 38.0, e(-0.24, -0.27, -0.21), e(0.0, -0.015, 0.015),
    ...                 e(0.03, 0.01, 0.05), False)
    >>> goal_met(g), goal_met(g, token_cut=0.25)
    (True, False)
    """
    return (gains.tokens.value <= -token_cut
            and correctness_non_inferior(gains.correctness.low, margin)
            and gains.composite.low > 0.0)


def seed_average_composite_gain(
    pairs: Sequence[tuple[Sequence[float], Sequence[bool], Sequence[float], Sequence[bool]]],
    *, weights: ScoreWeights, confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
) -> Estimate:
    """Seed-averaged composite of arm A minus arm B, paired over the same held-out questions.

    Args:
        pairs: one ``(a_tokens, a_correct, b_tokens, b_correct)`` per seed, every sequence over
            the same questions in the same order.
        weights: the composite's constants.
        confidence: central coverage of the interval.
        resamples: bootstrap resamples of the questions.
        seed: seed of the resampling generator.

    >>> w = ScoreWeights(shortness_scale=20.0, shortness_weight=0.4, correctness_weight=0.6)
    >>> one = ([20] * 10, [True] * 10, [20] * 10, [False] * 10)  # A right where B is wrong
    >>> [round(x, 4) for x in seed_average_composite_gain([one, one], weights=w).__dict__.values()]
    [0.6, 0.6, 0.6]
    """
    if not pairs:
        raise ValueError("seed_average_composite_gain needs at least one seed")
    blocks = [np.column_stack(pair).astype(float) for pair in pairs]  # S x (n, 4)
    if len({len(block) for block in blocks}) != 1:
        raise ValueError("every seed must answer the same held-out questions")
    rows = np.hstack(blocks)  # (n, 4 S): a question's answers under every seed and arm

    def composite(tokens: np.ndarray, correct: np.ndarray) -> float:
        short = shortness_score(float(tokens.mean()), scale=weights.shortness_scale)
        return composite_score(short, float(correct.mean()), w_short=weights.shortness_weight,
                               w_correct=weights.correctness_weight)

    def gain(r: np.ndarray) -> float:
        return float(np.mean([composite(r[:, 4 * s], r[:, 4 * s + 1])
                              - composite(r[:, 4 * s + 2], r[:, 4 * s + 3])
                              for s in range(len(blocks))]))

    low, high = bootstrap_intervals(rows, {"gain": gain}, confidence=confidence,
                                    resamples=resamples, seed=seed)["gain"]
    return Estimate(gain(rows), low, high)

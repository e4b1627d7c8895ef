"""Paired held-out gains on hand-made score tables, and the non-inferiority test."""

from __future__ import annotations

import numpy as np
import pytest

from crsp_ops.evaluation.minibatch_grading import ScoreWeights
from crsp_ops.evaluation.paired_gains import (
    Estimate,
    PairedGains,
    correctness_non_inferior,
    goal_met,
    paired_gains,
    seed_average_composite_gain,
)

WEIGHTS = ScoreWeights(shortness_scale=50.0, shortness_weight=0.4, correctness_weight=0.6)


def table(n=400, seed=0):
    """Initial answers of varied length; a quarter correct."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(20, 80, size=n).astype(float)
    correct = rng.random(n) < 0.25
    return tokens, correct


def test_a_uniform_cut_with_the_same_answers_is_a_sure_gain():
    tokens, correct = table()
    gains = paired_gains(tokens, correct, 0.75 * tokens, correct, weights=WEIGHTS)
    assert gains.tokens.value == pytest.approx(-0.25)
    assert gains.tokens.low == pytest.approx(-0.25) and gains.tokens.high == pytest.approx(-0.25)
    assert gains.correctness == Estimate(0.0, 0.0, 0.0)
    assert gains.composite.low > 0 and not gains.unchanged
    assert correctness_non_inferior(gains.correctness.low) and goal_met(gains)


def test_pairing_cancels_question_difficulty():
    """Flipping 8 of 400 answers to correct is resolved paired (every other row is equal)."""
    tokens, correct = table()
    better = correct.copy()
    better[np.flatnonzero(~correct)[:8]] = True
    gains = paired_gains(tokens, correct, tokens, better, weights=WEIGHTS)
    assert gains.correctness.value == pytest.approx(0.02)
    assert gains.correctness.low > 0  # an unpaired interval of two ~0.25 ratios is ~±0.06
    assert gains.tokens == Estimate(0.0, 0.0, 0.0)


def test_losing_answers_fails_non_inferiority_even_when_much_shorter():
    tokens, correct = table()
    worse = correct.copy()
    worse[np.flatnonzero(correct)[:20]] = False  # -0.05 correctness
    gains = paired_gains(tokens, correct, 0.5 * tokens, worse, weights=WEIGHTS)
    assert gains.tokens.value == pytest.approx(-0.5)
    assert gains.correctness.high < 0 and not correctness_non_inferior(gains.correctness.low)
    assert not goal_met(gains)


def test_identical_answers_are_unchanged_and_json_round_trips():
    tokens, correct = table(n=40)
    gains = paired_gains(tokens, correct, tokens, correct, weights=WEIGHTS)
    assert gains.unchanged and gains.composite == Estimate(0.0, 0.0, 0.0)
    assert PairedGains.from_json(gains.to_json()) == gains


def test_margin_boundary_and_goal_parts():
    assert correctness_non_inferior(-0.02) and correctness_non_inferior(0.13 - 0.15)
    assert not correctness_non_inferior(-0.0201)
    assert correctness_non_inferior(-0.04, margin=0.05)
    base = PairedGains(400, 0.95, 50.0, 38.0, Estimate(-0.24, -0.27, -0.21),
                       Estimate(0.0, -0.015, 0.015), Estimate(0.03, 0.01, 0.05), False)
    assert goal_met(base)
    assert not goal_met(PairedGains(**{**base.__dict__, "tokens": Estimate(-0.1, -0.2, 0.0)}))
    assert not goal_met(PairedGains(**{**base.__dict__,
                                       "composite": Estimate(0.02, -0.001, 0.04)}))
    assert not goal_met(PairedGains(**{**base.__dict__,
                                       "correctness": Estimate(0.0, -0.03, 0.03)}))


def test_no_rows_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        paired_gains([], [], [], [], weights=WEIGHTS)


def test_seed_average_gain_pairs_questions_across_seeds():
    """Arm A is 10% shorter than B on every seed; the seeds' question difficulty cancels."""
    pairs = []
    for seed in range(3):
        tokens, correct = table(seed=seed)
        pairs.append((0.9 * tokens, correct, tokens, correct))
    gain = seed_average_composite_gain(pairs, weights=WEIGHTS)
    assert 0 < gain.low <= gain.value <= gain.high < 0.05
    flipped = seed_average_composite_gain([(b, bc, a, ac) for a, ac, b, bc in pairs],
                                          weights=WEIGHTS)
    assert flipped.value == pytest.approx(-gain.value)
    with pytest.raises(ValueError, match="same held-out questions"):
        seed_average_composite_gain([pairs[0], tuple(x[:10] for x in pairs[1])],
                                    weights=WEIGHTS)

"""Minibatch scoring functions."""

from __future__ import annotations

import pytest

from crsp_ops.evaluation.scoring import (
    composite_score,
    correctness_ratio,
    mean_token_length,
    shortness_score,
)


def test_project_default_weights_on_a_minibatch():
    mean_len = mean_token_length([100, 300, 200])
    correct = correctness_ratio([True, False, True, True])
    shortness = shortness_score(mean_len, scale=200.0)
    assert (mean_len, correct, shortness) == (200.0, 0.75, 0.5)
    assert composite_score(shortness, correct, w_short=0.4, w_correct=0.6) == pytest.approx(0.65)


def test_shorter_and_more_correct_score_higher():
    short = shortness_score(50.0, scale=500.0)
    long = shortness_score(800.0, scale=500.0)
    assert 1.0 > short > long > 0.0
    weights = {"w_short": 0.4, "w_correct": 0.6}
    assert composite_score(short, 0.5, **weights) > composite_score(long, 0.5, **weights)
    assert composite_score(long, 0.9, **weights) > composite_score(long, 0.5, **weights)
    assert composite_score(short, 0.5, w_short=0.0, w_correct=1.0) == 0.5


@pytest.mark.parametrize(
    "call",
    [
        lambda: mean_token_length([]),
        lambda: mean_token_length([3, -1]),
        lambda: correctness_ratio([]),
        lambda: shortness_score(10.0, scale=0.0),
        lambda: shortness_score(-1.0, scale=10.0),
        lambda: composite_score(1.5, 0.5, w_short=0.4, w_correct=0.6),
        lambda: composite_score(0.5, 0.5, w_short=-0.4, w_correct=0.6),
    ],
)
def test_invalid_inputs_raise(call):
    with pytest.raises(ValueError):
        call()

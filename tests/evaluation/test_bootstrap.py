"""bootstrap_interval: coverage of a known mean, paired statistics, repeatability, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from crsp_ops.evaluation.bootstrap import bootstrap_interval


def test_interval_brackets_the_mean_and_narrows_with_more_questions():
    rng = np.random.default_rng(1)
    small = rng.binomial(1, 0.3, size=40).astype(float)
    large = rng.binomial(1, 0.3, size=400).astype(float)
    low_s, high_s = bootstrap_interval(small)
    low_l, high_l = bootstrap_interval(large)
    assert low_s <= small.mean() <= high_s and low_l <= large.mean() <= high_l
    assert high_l - low_l < (high_s - low_s) / 2  # ~1/sqrt(n)
    lengths = rng.gamma(2.0, 20.0, size=40)  # token counts: continuous, so seeds differ
    assert bootstrap_interval(lengths) == bootstrap_interval(lengths)  # seeded
    assert bootstrap_interval(lengths, seed=2) != bootstrap_interval(lengths)


def test_paired_rows_cancel_question_difficulty():
    # each question is easy or hard for both deltas; the second is right on 5 more questions
    first = np.array([1.0] * 20 + [0.0] * 20)
    second = first.copy()
    second[20:25] = 1.0
    both = np.stack([first, second], axis=1)  # (n, 2)
    low, high = bootstrap_interval(both, lambda rows: float(rows[:, 1].mean() - rows[:, 0].mean()))
    assert 0.0 < low <= 0.125 <= high  # paired: the gain is clearly positive
    unpaired_low = (bootstrap_interval(second, seed=3)[0] - bootstrap_interval(first, seed=4)[1])
    assert unpaired_low < 0.0  # comparing two separate intervals would not show it


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="at least one row"):
        bootstrap_interval([])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval([1.0, 2.0], confidence=1.5)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_interval([1.0, 2.0], resamples=10)

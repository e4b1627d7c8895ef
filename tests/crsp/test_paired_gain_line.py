"""The train stage's one held-out line: before, after, and the paired gain's verdict (issue 43)."""

from __future__ import annotations

import pytest

from crsp_ops.cli.commands.train import describe_curve
from crsp_ops.crsp.trainer.learning_curve import CurvePoint, paired_gain


def _point(step: int, rate: float) -> CurvePoint:
    return CurvePoint(step=step, samples=0, solve_rate=rate, solve_rate_ci=(rate, rate),
                      well_formed=1.0, well_formed_ci=(1.0, 1.0), solve_rate_well_formed=rate,
                      tasks=100)


def test_the_line_says_whether_the_gain_is_above_zero():
    before = [False] * 70 + [True] * 30
    gained = paired_gain(before, [True] * 60 + [False] * 10 + [True] * 30)
    line = describe_curve(_point(0, 0.3), _point(12, 0.9), gained)
    assert "\n" not in line and "step 0 0.300" in line and "step 12 0.900" in line
    assert "paired gain +0.600 [" in line and "(above 0: learned)" in line
    assert gained.metrics()["eval/solve_rate/gain_ci_low"] > 0
    flat = paired_gain(before, before[1:] + before[:1])
    assert "includes 0" in describe_curve(_point(0, 0.3), _point(12, 0.3), flat)
    assert "paired" not in describe_curve(_point(0, 0.3), _point(12, 0.3))


def test_the_line_shows_a_partial_credit_reward_that_rose_while_the_solve_rate_did_not():
    before = CurvePoint(**{**vars(_point(0, 0.0)), "reward": 0.13, "reward_ci": (0.085, 0.175)})
    after = CurvePoint(**{**vars(_point(3, 0.0)), "reward": 0.355, "reward_ci": (0.31, 0.4)})
    line = describe_curve(before, after)
    assert "mean reward 0.130 [0.085, 0.175] -> 0.355 [0.310, 0.400]" in line
    assert CurvePoint.from_row(after.to_row()) == after
    legacy = {k: v for k, v in _point(1, 0.5).to_row().items() if not k.startswith("reward")}
    assert CurvePoint.from_row(legacy).reward is None


def test_paired_gain_needs_the_same_tasks():
    with pytest.raises(ValueError, match="same tasks"):
        paired_gain([True], [True, False])

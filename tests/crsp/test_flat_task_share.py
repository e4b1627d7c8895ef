"""step_metrics.flat_task_share: tasks whose solve samples give no correctness contrast."""

from __future__ import annotations

import pytest

from crsp_ops.crsp.step_metrics import flat_task_share


def test_all_right_and_all_wrong_tasks_are_flat_mixed_ones_are_not():
    outcomes = [("solve/0/0", True), ("solve/0/1", True), ("solve/0/2", True),
                ("solve/1/0", False), ("solve/1/1", True), ("solve/1/2", False),
                ("solve/2/0", False), ("solve/2/1", False), ("solve/2/2", False),
                ("solve/3/0", True), ("solve/3/1", False), ("solve/3/2", False)]
    assert flat_task_share(outcomes) == pytest.approx(0.5)
    assert flat_task_share(outcomes[3:6]) == 0.0


def test_tasks_with_one_sample_are_left_out():
    assert flat_task_share([("solve/0/0", True), ("solve/1/0", False), ("solve/1/1", True)]) == 0.0
    assert flat_task_share([("solve/0/0", True)]) == 0.0
    assert flat_task_share([]) == 0.0


def test_tasks_are_told_apart_by_their_index_not_their_sample():
    """solve/1/0 and solve/10/0 are different tasks."""
    outcomes = [("solve/1/0", True), ("solve/1/1", True), ("solve/10/0", True),
                ("solve/10/1", False)]
    assert flat_task_share(outcomes) == pytest.approx(0.5)

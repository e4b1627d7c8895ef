"""step_metrics.flat_task_share: tasks whose solve samples give no correctness contrast."""

from __future__ import annotations

import pytest

from crsp_ops.crsp.selfplay.step_metrics import flat_task_share


def test_all_right_and_all_wrong_tasks_are_flat_mixed_ones_are_not():
    outcomes = [(0, True), (0, True), (0, True),
                (1, False), (1, True), (1, False),
                (2, False), (2, False), (2, False),
                (3, True), (3, False), (3, False)]
    assert flat_task_share(outcomes) == pytest.approx(0.5)
    assert flat_task_share(outcomes[3:6]) == 0.0


def test_tasks_with_one_sample_are_left_out():
    assert flat_task_share([(0, True), (1, False), (1, True)]) == 0.0
    assert flat_task_share([(0, True)]) == 0.0
    assert flat_task_share([]) == 0.0


def test_tasks_are_told_apart_by_their_key_not_their_order():
    """Samples of one task need not be adjacent, and tasks 1 and 10 are different tasks."""
    outcomes = [(1, True), (10, True), (1, True), (10, False)]
    assert flat_task_share(outcomes) == pytest.approx(0.5)


def test_rewards_with_partial_credit_are_flat_only_when_every_sample_scored_alike():
    """The reward form (solve/flat_reward_share): a task every sample of which missed the
    success threshold is flat by correctness, but not by reward when partial credit differs."""
    rewards = [(0, 0.5), (0, 0.0), (0, 0.5), (1, 0.5), (1, 0.5), (1, 0.5)]
    correct = [(task, reward >= 1.0) for task, reward in rewards]
    assert flat_task_share(correct) == 1.0
    assert flat_task_share(rewards) == pytest.approx(0.5)

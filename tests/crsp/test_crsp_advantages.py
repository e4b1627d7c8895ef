import pytest
import torch

from crsp_ops.crsp.rl.advantages import (
    baseline_group,
    group_indices,
    place_on_last_token,
    task_relative_advantages,
)

TYPES = ["code_i", "code_i", "code_o", "code_o", "code_i"]
ROLES = ["solve", "solve", "solve", "solve", "propose"]
REWARDS = torch.tensor([1.0, 0.0, 0.5, 1.0, 2.0], dtype=torch.float64)


def test_centred_per_task_type_and_role():
    advantages = task_relative_advantages(REWARDS, TYPES, ROLES, scale="none", eps=1e-6)
    expected = torch.tensor([0.5, -0.5, -0.25, 0.25, 0.0], dtype=torch.float64)
    torch.testing.assert_close(advantages, expected)


def test_whitened_per_task_type_and_role():
    advantages = task_relative_advantages(REWARDS, TYPES, ROLES, scale="group", eps=1e-6)
    expected = torch.tensor([1.0, -1.0, -1.0, 1.0, 0.0], dtype=torch.float64)
    torch.testing.assert_close(advantages, expected)


def test_same_task_type_different_roles_get_separate_baselines():
    rewards = torch.tensor([1.0, 3.0, 10.0, 30.0])
    advantages = task_relative_advantages(rewards, ["math"] * 4,
                                          ["solve", "solve", "critique", "critique"],
                                          scale="none", eps=1e-6)
    torch.testing.assert_close(advantages, torch.tensor([-1.0, 1.0, -10.0, 10.0]))


def test_singleton_groups_get_zero_advantage():
    advantages = task_relative_advantages(torch.tensor([5.0, -3.0]), ["a", "b"],
                                          ["solve", "solve"], scale="group", eps=1e-6)
    torch.testing.assert_close(advantages, torch.zeros(2))


def test_zero_and_tiny_sigma_do_not_blow_up():
    equal = task_relative_advantages(torch.full((4,), 0.7), ["a"] * 4, ["solve"] * 4,
                                     scale="group", eps=1e-6)
    torch.testing.assert_close(equal, torch.zeros(4))
    tiny = task_relative_advantages(torch.tensor([1.0, 1.0 + 1e-9], dtype=torch.float64),
                                    ["a", "a"], ["solve", "solve"], scale="group", eps=1e-6)
    assert torch.isfinite(tiny).all() and tiny.abs().max() < 1e-8


def test_rejects_bad_inputs():
    with pytest.raises(ValueError, match="one of each"):
        task_relative_advantages(torch.zeros(3), ["a"] * 2, ["s"] * 3, scale="none", eps=1e-6)
    with pytest.raises(ValueError, match="NaN"):
        task_relative_advantages(torch.tensor([float("nan"), 1.0]), ["a"] * 2, ["s"] * 2,
                                 scale="none", eps=1e-6)
    with pytest.raises(ValueError, match="eps"):
        task_relative_advantages(torch.zeros(2), ["a"] * 2, ["s"] * 2, scale="none", eps=0)


def test_group_indices_order():
    assert group_indices(TYPES, ROLES) == {("code_i", "solve"): [0, 1],
                                           ("code_o", "solve"): [2, 3],
                                           ("code_i", "propose"): [4]}


def test_place_on_last_token_handles_left_and_right_padding():
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [0, 1, 0, 0, 0]])
    placed = place_on_last_token(torch.tensor([0.5, -1.0, 2.0]), mask)
    expected = torch.zeros(3, 5)
    expected[0, 2], expected[1, 4], expected[2, 1] = 0.5, -1.0, 2.0
    torch.testing.assert_close(placed, expected)
    with pytest.raises(ValueError, match="at least one"):
        place_on_last_token(torch.tensor([1.0]), torch.zeros(1, 3))


def test_task_baseline_compares_answers_within_a_task():
    """An easy and a hard math task: the task-type baseline rewards the easy task's samples for
    the task being easy; the per-task baseline only for the answer being better."""
    rewards = torch.tensor([1.0, 1.0, -0.5, -1.0])  # task 0: both right; task 1: wrong, malformed
    tasks = [0, 0, 1, 1]
    per_type = [baseline_group("math", t, "task_type") for t in tasks]
    per_task = [baseline_group("math", t, "task") for t in tasks]
    roles = ["solve"] * 4
    by_type = task_relative_advantages(rewards, per_type, roles, scale="none", eps=1e-6)
    by_task = task_relative_advantages(rewards, per_task, roles, scale="none", eps=1e-6)
    torch.testing.assert_close(by_type, torch.tensor([0.875, 0.875, -0.625, -1.125]))
    torch.testing.assert_close(by_task, torch.tensor([0.0, 0.0, 0.25, -0.25]))


def test_roles_without_a_task_keep_the_task_type_group():
    assert baseline_group("code_o", None, "task") == baseline_group("code_o", 7, "task_type")
    with pytest.raises(ValueError, match="baseline must be one of"):
        baseline_group("math", 0, "prompt")

"""The solve step's reward sets: CRSP's own rule as three TRL-signature functions, and sums."""

import pytest

from crsp_ops.crsp.rewards.alpha_schedule import Alphas
from crsp_ops.crsp.rewards.functions import RewardError, RewardFunction, RewardState
from crsp_ops.crsp.rewards.solve import (
    RewardSet,
    at_alphas,
    builtin_solve_rewards,
    reward_call,
)
from crsp_ops.crsp.tasks.task_types import MathTask, PromptTask
from crsp_ops.inference.completions import Completion

MATH = MathTask("What is 2 + 2?", "", "4")


def _completion(text, tokens):
    return Completion(text=text, prompt_token_ids=(1, 2, 3), token_ids=tuple(range(tokens)),
                      logprobs=(), finish_reason="stop")


def test_the_builtin_set_gives_the_format_rule_and_the_alpha_weighted_reward(executor):
    rewards = at_alphas(builtin_solve_rewards(executor, length_max_length=4,
                                              length_penalty_threshold=8), Alphas(0.75, 0.5))
    texts = ["2+2</think><answer>4</answer>",  # right, short: 1.0
             "2+2</think><answer>4</answer>",  # right, 6 tokens: length 0.5
             "2+2</think><answer>5</answer>",  # wrong: -0.5
             "no answer at all"]  # malformed: -1
    completions = [_completion(t, n) for t, n in zip(texts, [3, 6, 3, 3], strict=True)]
    scored = rewards.score(reward_call([MATH] * 4, completions, RewardState(1, 2)))
    assert scored.totals == [1.0, 0.75 + 0.25 * 0.5, -0.5, -1.0]
    assert scored.passed == [True, True, False, False]
    assert scored.well_formed == [True, True, True, False]
    assert scored.extra["answer"][:3] == ["4", "4", "5"]


def test_a_user_set_sums_weighted_values_skipping_none_and_thresholds_success():
    def exact(prompts, completions, answer, **_):
        return [1.0 if c == a else 0.0 for c, a in zip(completions, answer, strict=True)]

    def short(prompts, completions, **_):
        return [None if len(c) > 3 else 0.5 for c in completions]

    rewards = RewardSet((RewardFunction("exact", exact, 2.0), RewardFunction("short", short)),
                        success_threshold=2.0)
    tasks = [PromptTask("q", {"answer": "4"}), PromptTask("q", {"answer": "44444"}),
             PromptTask("q", {"answer": "x"})]
    completions = [_completion("4", 1), _completion("44444", 5), _completion("y", 1)]
    scored = rewards.score(reward_call(tasks, completions, RewardState(1, 1)))
    assert scored.totals == [2.5, 2.0, 0.5]
    assert scored.passed == [True, True, False]
    assert scored.values["short"] == [0.5, None, 0.5]


def test_a_set_refuses_no_function_and_duplicate_names():
    with pytest.raises(RewardError, match="no reward function"):
        RewardSet(())
    f = RewardFunction("f", print)
    with pytest.raises(RewardError, match="share a name"):
        RewardSet((f, f))


def test_numpy_and_torch_scalars_count_as_floats_as_trl_takes_them():
    """A TRL reward often returns numpy or tensor scalars; arrays of several values do not."""
    import numpy as np
    import torch

    from crsp_ops.crsp.rewards.functions import checked_values

    function = RewardFunction("scalars", print)
    values = [np.float32(0.25), np.int64(1), np.bool_(True), torch.tensor(0.5), None]
    assert checked_values(function, values, 5) == [0.25, 1.0, 1.0, 0.5, None]
    with pytest.raises(RewardError, match="sample 1"):
        checked_values(function, [0.0, np.array([1.0, 2.0])], 2)

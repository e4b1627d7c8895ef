import pytest

from crsp_ops.crsp.rewards.formulas import (
    CreativityEvaluation,
    critique_reward,
    format_rule_reward,
    last_token_rewards,
    learnability_reward,
    length_reward,
)


@pytest.mark.parametrize(("tokens", "expected"), [
    (0, 1.0), (2048, 1.0), (2560, 0.75), (3072, 0.5), (4095, 1 / 2048), (4096, 0.0), (9999, 0.0),
])
def test_length_reward_hand_values(tokens, expected):
    assert length_reward(tokens, max_length=2048, penalty_threshold=4096) == pytest.approx(expected)


def test_length_reward_is_bounded_and_non_increasing():
    values = [length_reward(n, max_length=10, penalty_threshold=30) for n in range(0, 50)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(a >= b for a, b in zip(values[:-1], values[1:], strict=True))


def test_length_reward_step_when_threshold_equals_max_length():
    assert length_reward(10, max_length=10, penalty_threshold=10) == 1.0
    assert length_reward(11, max_length=10, penalty_threshold=10) == 0.0


@pytest.mark.parametrize(("max_length", "threshold"), [(0, 10), (20, 10), (-1, 5)])
def test_length_reward_rejects_bad_config(max_length, threshold):
    with pytest.raises(ValueError, match="max_length <= penalty_threshold"):
        length_reward(1, max_length=max_length, penalty_threshold=threshold)


def test_length_reward_rejects_negative_length():
    with pytest.raises(ValueError, match="num_tokens"):
        length_reward(-1, max_length=1, penalty_threshold=2)


def test_critique_reward_hand_values():
    assert critique_reward(1.0, 0.5, 0.6) == pytest.approx(0.8)
    assert critique_reward(0.0, 0.9, 0.1) == pytest.approx(0.81)


@pytest.mark.parametrize("bad", [-0.1, 1.1, float("nan")])
def test_role_rewards_reject_out_of_range(bad):
    with pytest.raises(ValueError, match="alpha_c"):
        critique_reward(1.0, 1.0, bad)
    with pytest.raises(ValueError, match="creativity"):
        critique_reward(1.0, bad, 0.5)


@pytest.mark.parametrize(("correct", "samples", "expected"), [
    (0, 4, 0.0), (4, 4, 0.0), (1, 4, 0.75), (3, 4, 0.25), (1, 2, 0.5), (0, 1, 0.0), (1, 1, 0.0),
])
def test_learnability_reward(correct, samples, expected):
    assert learnability_reward(correct, samples) == pytest.approx(expected)


def test_learnability_reward_validates_counts():
    with pytest.raises(ValueError, match="num_samples"):
        learnability_reward(0, 0)
    with pytest.raises(ValueError, match="num_correct"):
        learnability_reward(5, 4)


def test_format_rule():
    assert format_rule_reward(well_formed=False, passed=False, role_reward=0.7) == -1.0
    assert format_rule_reward(well_formed=False, passed=True, role_reward=0.7) == -1.0
    assert format_rule_reward(well_formed=True, passed=False, role_reward=0.7) == -0.5
    assert format_rule_reward(well_formed=True, passed=True, role_reward=0.7) == 0.7


def test_token_vector_puts_the_sequence_reward_on_the_last_token():
    assert last_token_rewards(4, 0.3) == [0.0, 0.0, 0.0, 0.3]
    assert last_token_rewards(1, -1.0) == [-1.0]
    with pytest.raises(ValueError, match="response_length"):
        last_token_rewards(0, 0.3)


def test_creativity_evaluation_format_flag():
    assert CreativityEvaluation(0.5, "", "none").format_ok is False
    assert CreativityEvaluation(0.5, "", "fallback").format_ok is True

import numpy as np
import pytest
import torch

from crsp_ops.inference.rollouts import Rollout, RolloutBatch, RolloutGroup, TrainingBatch


def make_rollout(example="ex1", prompt=(5, 6, 7), response=(8, 9), reward=1.0, **overrides):
    fields = dict(
        env_name="math",
        env_example_id=example,
        prompt_tokens=list(prompt),
        response_tokens=list(response),
        response_logprobs=[-0.5] * len(response),
        token_rewards=[reward] * len(response),
        episode_reward=reward,
        logprob_semantics="raw",
    )
    fields.update(overrides)
    return Rollout(**fields)


def test_rollout_coerces_dtypes_and_is_immutable():
    source = [1, 2, 3]
    rollout = make_rollout(prompt=source)
    source[0] = 99  # the record keeps its own copy
    assert rollout.prompt_tokens.dtype == np.int32
    assert rollout.response_logprobs.dtype == np.float32
    assert rollout.prompt_tokens.tolist() == [1, 2, 3]
    with pytest.raises(ValueError):
        rollout.response_tokens[0] = 1
    assert rollout.length == 5


def test_rollout_equality_compares_array_contents():
    assert make_rollout() == make_rollout()
    assert make_rollout() != make_rollout(response=(8, 10))
    assert make_rollout() != make_rollout(logprob_semantics="processed")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"prompt_tokens": []}, "empty prompt_tokens"),
        ({"response_tokens": [], "response_logprobs": [], "token_rewards": []}, "empty response"),
        ({"response_logprobs": [-0.1]}, "1 response_logprobs for 2 response tokens"),
        ({"token_rewards": [1.0, 1.0, 1.0]}, "3 token_rewards for 2"),
        ({"response_logprobs": [2.5, -0.1]}, "were logits passed"),
        ({"response_logprobs": [float("nan"), -0.1]}, "log-probabilities"),
        ({"response_tokens": [-1, 3]}, "negative token ids"),
        ({"episode_reward": float("inf")}, "finite"),
        ({"logprob_semantics": "steered"}, "logprob_semantics must be one of"),
        ({"logprob_semantics": "none"}, "all-zero logprobs"),
        ({"prompt_tokens": [[1, 2]]}, "must be 1-D"),
    ],
)
def test_rollout_rejects_invalid_records(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_rollout(**overrides)


def test_rollout_without_logprobs_carries_zeros():
    rollout = make_rollout(response_logprobs=[0.0, 0.0], logprob_semantics="none")
    assert rollout.logprob_semantics == "none"


def test_group_holds_one_example():
    group = RolloutGroup([make_rollout(reward=1.0), make_rollout(reward=0.0)])
    assert len(group) == 2
    np.testing.assert_array_equal(group.episode_rewards, [1.0, 0.0])
    with pytest.raises(ValueError, match="one example"):
        RolloutGroup((make_rollout("a"), make_rollout("b")))
    with pytest.raises(ValueError, match="at least one"):
        RolloutGroup(())


def test_batch_rejects_mixed_logprob_semantics():
    raw = RolloutGroup((make_rollout("a"),))
    processed = RolloutGroup((make_rollout("b", logprob_semantics="processed"),))
    with pytest.raises(ValueError, match="mixed logprob semantics"):
        RolloutBatch((raw, processed))
    with pytest.raises(ValueError, match="at least one group"):
        RolloutBatch(())


def test_training_batch_pads_right_and_aligns_positions():
    short = make_rollout("a", prompt=(1, 2), response=(3,), response_logprobs=[-0.3])
    long = make_rollout(
        "b", prompt=(4, 5, 6), response=(7, 8, 9), response_logprobs=[-1.0, -2.0, -3.0],
        token_rewards=[0.0, 0.0, 2.0], reward=2.0,
    )
    second = make_rollout("b", prompt=(4, 5, 6), response=(10,), response_logprobs=[-0.7])
    batch = RolloutBatch((RolloutGroup((short,)), RolloutGroup((long, second))), policy_step=3)

    tb = TrainingBatch.from_rollouts(batch, pad_token_id=0)

    assert tb.input_ids.shape == (3, 6)
    assert tb.input_ids.tolist() == [[1, 2, 3, 0, 0, 0], [4, 5, 6, 7, 8, 9], [4, 5, 6, 10, 0, 0]]
    assert tb.attention_mask.tolist() == [[1, 1, 1, 0, 0, 0], [1] * 6, [1, 1, 1, 1, 0, 0]]
    assert tb.loss_mask.tolist() == [[0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 0, 0]]
    # old_logprobs[b, t] is the logprob of input_ids[b, t]: same positions as the loss mask
    assert tb.old_logprobs[1].tolist() == [0, 0, 0, -1.0, -2.0, -3.0]
    assert tb.old_logprobs[0, 2].item() == pytest.approx(-0.3)
    assert tb.token_rewards[1].tolist() == [0, 0, 0, 0.0, 0.0, 2.0]
    assert tb.episode_rewards.tolist() == [1.0, 2.0, 1.0]
    assert tb.group_index.tolist() == [0, 1, 1]
    assert tb.prompt_lengths.tolist() == [2, 3, 3]
    assert tb.response_lengths.tolist() == [1, 3, 1]
    assert tb.input_ids.dtype == torch.int64 and tb.loss_mask.dtype == torch.float32
    assert tb.logprob_semantics == "raw"


def test_training_batch_fixed_width_and_overflow():
    rollouts = [make_rollout("a"), make_rollout("b", response=(1, 2, 3, 4))]
    tb = TrainingBatch.from_rollouts(rollouts, pad_token_id=-1, max_length=10)
    assert tb.input_ids.shape == (2, 10)
    assert tb.group_index.tolist() == [0, 1]
    assert (tb.input_ids[0, 5:] == -1).all()
    with pytest.raises(ValueError, match="math/b has 7 tokens, more than max_length=6"):
        TrainingBatch.from_rollouts(rollouts, pad_token_id=0, max_length=6)
    with pytest.raises(ValueError, match="zero rollouts"):
        TrainingBatch.from_rollouts([], pad_token_id=0)


def test_training_batch_validates_shapes():
    tb = TrainingBatch.from_rollouts([make_rollout()], pad_token_id=0)
    with pytest.raises(ValueError, match="loss_mask has shape"):
        TrainingBatch(**{**tb.__dict__, "loss_mask": torch.zeros(1, 2)})

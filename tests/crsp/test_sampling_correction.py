"""Importance-sampling correction of an engine's samples (TRL's vllm_importance_sampling_*).

Every expected number is computed by hand in the comments: the ratio ``exp(π_old − μ)``, its
bound in each mode, the weighted loss and its gradient, and the update's per-step metrics.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.sampling_correction import (
    SamplingCorrection,
    correction_metrics,
    sampling_weights,
)
from crsp_ops.crsp.rl.trrpg import surrogate_loss
from crsp_ops.crsp.rl.update import UpdateOptions, policy_update, token_logprobs
from crsp_ops.inference.rollouts import Rollout, TrainingBatch

E2 = math.exp(2.0)  # 7.389: above a cap of 3
# trainer log-probs π_old and sampler log-probs μ of three tokens, the third off the mask
TRAINER = torch.tensor([[0.0, -1.0, -3.0], [-0.5, -0.5, 9.0]])
SAMPLER = torch.tensor([[-2.0, -1.0, -2.0], [-0.5, -1.5, -9.0]])
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]]).bool()
# π_old − μ: row 0 [2, 0, −1]; row 1 [0, 1, (off)]


def weights(mode: str, clip_max: float = 3.0, clip_min: float = 0.0):
    return sampling_weights(TRAINER, SAMPLER, MASK, SamplingCorrection(mode, clip_max, clip_min))


def test_token_truncate_caps_each_token_at_clip_max():
    w, capped = weights("token_truncate")
    # exp([2, 0, −1]) = [7.389, 1, 0.368] -> [3, 1, 0.368]; exp([0, 1]) = [1, 2.718]
    torch.testing.assert_close(w, torch.tensor([[3.0, 1.0, math.exp(-1)], [1.0, math.e, 0.0]]))
    assert capped.tolist() == [[True, False, False], [False, False, False]]


def test_token_truncate_with_a_floor_raises_small_ratios():
    w, capped = weights("token_truncate", clip_max=2.0, clip_min=0.5)
    torch.testing.assert_close(w, torch.tensor([[2.0, 1.0, 0.5], [1.0, 2.0, 0.0]]))
    assert capped.tolist() == [[True, False, True], [False, True, False]]


def test_token_mask_zeroes_the_tokens_outside_the_bounds():
    w, capped = weights("token_mask", clip_max=3.0, clip_min=0.5)
    # 7.389 > 3 and 0.368 < 0.5 are dropped; 2.718 stays
    torch.testing.assert_close(w, torch.tensor([[0.0, 1.0, 0.0], [1.0, math.e, 0.0]]))
    assert capped.tolist() == [[True, False, True], [False, False, False]]


def test_sequence_modes_use_one_ratio_per_response():
    # row 0: exp(2 + 0 − 1) = e (under the cap); row 1: exp(0 + 1) = e (the off-mask 18 ignored)
    w, capped = weights("sequence_truncate")
    torch.testing.assert_close(w, torch.tensor([[math.e] * 3, [math.e, math.e, 0.0]]))
    assert not capped.any()
    w, capped = weights("sequence_truncate", clip_max=2.0)
    torch.testing.assert_close(w, torch.tensor([[2.0] * 3, [2.0, 2.0, 0.0]]))
    assert capped.tolist() == [[True] * 3, [True, True, False]]
    w, _ = weights("sequence_mask", clip_max=2.0)
    assert w.eq(0).all()


def test_an_unscored_token_gets_no_correction_and_a_huge_sum_does_not_overflow():
    sampler = SAMPLER.clone()
    sampler[0, 0] = float("nan")
    w, _ = sampling_weights(TRAINER, sampler, MASK, SamplingCorrection("token_truncate"))
    assert w[0, 0] == 1.0
    far = torch.full((1, 4), 100.0)  # exp(400) overflows float32 to inf
    w, capped = sampling_weights(far, -far, torch.ones(1, 4), SamplingCorrection(
        "sequence_truncate"))
    assert w.eq(3.0).all() and capped.all()


def test_bad_bounds_and_modes_are_refused():
    with pytest.raises(ValueError, match="clip_min < clip_max"):
        SamplingCorrection("token_truncate", clip_max=1.0, clip_min=2.0)
    with pytest.raises(ValueError, match="unknown sampling correction mode"):
        SamplingCorrection("tis")


def test_metrics_are_token_means_over_the_response():
    w, capped = weights("token_truncate")
    metrics = correction_metrics(w, capped, TRAINER, SAMPLER, MASK)
    # ratios [3, 1, e^-1, 1, e] over 5 tokens; 1 of 5 capped; |diff| [2, 0, 1, 0, 1]
    assert metrics["is_ratio_mean"] == pytest.approx((3 + 1 + math.exp(-1) + 1 + math.e) / 5)
    assert metrics["is_capped_fraction"] == pytest.approx(0.2)
    assert metrics["sampling_logp_diff_mean"] == pytest.approx(0.8)
    assert metrics["sampling_logp_diff_max"] == pytest.approx(2.0)


def test_the_weights_multiply_each_tokens_policy_loss_not_the_reference_kl():
    # at new == old the TR-RPG ratio is 1, so with β = 0 and no clip −J = −A per token;
    # weights ρ = [3, 1]: loss = −(3·1 + 1·1) / 2 = −2, dloss/dlogp_new = −ρ·A / 2
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    rho = torch.tensor([[3.0, 1.0]])
    kl = torch.tensor([[0.5, 0.25]])
    loss, _ = surrogate_loss(logp, logp.detach(), torch.tensor([1.0]), torch.ones(1, 2),
                             beta=0.0, log_ratio_clamp=20.0, ratio_clip=None,
                             sampling_weights=rho, ref_kl=kl, ref_coef=2.0)
    # the reference KL is added unweighted: 2 · (0.5 + 0.25) / 2 = 0.75
    assert float(loss.detach()) == pytest.approx(-2.0 + 0.75)
    loss.backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[-1.5, -0.5]]))


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1)
    return LlamaForCausalLM(config)


def _batch(shift: float) -> TrainingBatch:
    """Two rollouts whose sampler log-probs are the model's own minus ``shift`` (ratio e^shift)."""
    rng = np.random.default_rng(0)
    rows = [Rollout(env_name="math", env_example_id=str(i), prompt_tokens=rng.integers(3, 90, 5),
                    response_tokens=rng.integers(3, 90, 6), response_logprobs=np.zeros(6),
                    token_rewards=np.zeros(6), episode_reward=reward,
                    logprob_semantics="processed")
            for i, reward in enumerate((1.0, -1.0))]
    batch = TrainingBatch.from_rollouts(rows, pad_token_id=0)
    with torch.no_grad():
        own = token_logprobs(_model(), batch.input_ids, batch.attention_mask, 1.0, first=5)
    return replace(batch, old_logprobs=torch.where(batch.loss_mask.bool(), own - shift,
                                                   torch.zeros_like(own)))


@pytest.mark.parametrize(("clip_max", "ratio_mean", "capped"), [(3.0, 2.0, 0.0),
                                                                 (1.5, 1.5, 1.0)])
def test_the_update_reports_the_ratio_mean_and_the_capped_share(clip_max, ratio_mean, capped):
    # every sampled token's μ is the trainer's log-prob − ln 2: ρ = 2 on all 12 tokens
    model = _model().train()
    options = UpdateOptions(algorithm=get_algorithm("trr++"), betas={}, log_ratio_clamp=20.0,
                            ratio_clip=0.2, advantage_eps=1e-6, micro_batch_size=1,
                            update_epochs=2, max_grad_norm=1.0,
                            sampling_correction=SamplingCorrection(clip_max=clip_max))
    metrics = policy_update(model, torch.optim.AdamW(model.parameters(), lr=1e-3), Accelerator(
        cpu=True), _batch(math.log(2.0)), ["solve", "solve"], ["math", "math"], options,
        temperature=1.0)
    assert metrics["is_ratio_mean"] == pytest.approx(ratio_mean, rel=1e-4)
    assert metrics["is_capped_fraction"] == capped
    assert metrics["sampling_logp_diff_mean"] == pytest.approx(math.log(2.0), rel=1e-4)
    assert metrics["ratio_mean"] != pytest.approx(2.0)  # the ratio is against π_old, not μ


def test_without_the_correction_the_ratio_is_taken_against_the_sampler():
    model = _model().train()
    options = UpdateOptions(algorithm=get_algorithm("trr++"), betas={}, log_ratio_clamp=20.0,
                            ratio_clip=0.2, advantage_eps=1e-6, micro_batch_size=2,
                            update_epochs=1, max_grad_norm=1.0)
    metrics = policy_update(model, torch.optim.AdamW(model.parameters(), lr=1e-3), Accelerator(
        cpu=True), _batch(math.log(2.0)), ["solve", "solve"], ["math", "math"], options,
        temperature=1.0)
    assert metrics["ratio_mean"] == pytest.approx(2.0, rel=1e-4)  # π/μ on the first epoch
    assert "is_ratio_mean" not in metrics

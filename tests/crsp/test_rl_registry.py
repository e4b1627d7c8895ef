"""The rl registries: algorithms are a registered estimator + loss; a new loss is one function."""

import math

import pytest
import torch

from crsp_ops.crsp.rl.algorithms import (
    ALGORITHMS,
    PolicyGradientAlgorithm,
    compute_advantages,
    policy_loss,
)
from crsp_ops.crsp.rl.registry import (
    ADVANTAGE_ESTIMATORS,
    POLICY_LOSSES,
    Registry,
    get_policy_loss,
    register_adv_est,
    register_policy_loss,
)
from crsp_ops.crsp.rl.trrpg import LossTerms


# one function + one registration: a plain importance-weighted policy gradient, J = w·A
@register_policy_loss("test_plain_pg")
def plain_pg(terms: LossTerms) -> tuple[torch.Tensor, torch.Tensor]:
    return terms.ratio * terms.advantages, torch.zeros_like(terms.ratio, dtype=torch.bool)


# and an estimator: the reward itself, no baseline
@register_adv_est("test_raw_reward")
def raw_reward(rewards, groups, roles, *, eps, scale="auto", flat="zero"):
    return rewards.clone()


def test_the_seed_algorithms_are_compositions_of_registered_parts():
    assert {name: (a.advantage_estimator, a.loss, a.use_kl) for name, a in ALGORITHMS.items()} \
        == {"trrpg": ("task_relative", "trrpg", True),
            "trr++": ("task_relative_whitened", "trrpg", False)}
    assert {"task_relative", "task_relative_whitened"} <= set(ADVANTAGE_ESTIMATORS.names())
    assert "trrpg" in POLICY_LOSSES.names()


def test_a_registered_loss_is_selectable_by_name():
    algorithm = PolicyGradientAlgorithm("mine", "test_raw_reward", "test_plain_pg", use_kl=False)
    rewards = torch.tensor([0.5, -1.0])
    advantages = compute_advantages(algorithm, rewards, ["a", "a"], ["solve"] * 2, eps=1e-6)
    torch.testing.assert_close(advantages, rewards)  # the estimator ran: no baseline subtracted
    # row 0: log-ratios ln 2 and 0, so w = 2 and 1; row 1 is padding after its first token
    logp_old = torch.zeros(2, 2)
    logp_new = torch.tensor([[math.log(2.0), 0.0], [0.0, 0.0]]).requires_grad_()
    mask = torch.tensor([[1, 1], [1, 0]])
    loss, metrics = policy_loss(algorithm, logp_new, logp_old, advantages, mask,
                                ["solve"] * 2, betas={"solve": 9.0}, log_ratio_clamp=20.0,
                                ratio_clip=0.2)  # the plain loss ignores clipping and beta
    # J = w·A: row 0 (2·0.5, 1·0.5) = (1.0, 0.5); row 1 (1·-1.0) = -1.0; sum 0.5 over 3 tokens
    assert float(loss.detach()) == pytest.approx(-0.5 / 3)
    loss.backward()
    # dJ/dlogp_new = w·A per token, the loss is −J / 3: (−1/3, −1/6), (+1/3, 0)
    torch.testing.assert_close(logp_new.grad, torch.tensor([[-1 / 3, -1 / 6], [1 / 3, 0.0]]))
    assert metrics["clip_fraction"] == 0.0
    assert metrics["ratio_max"] == pytest.approx(2.0)


def test_an_unknown_name_is_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"unknown policy loss 'ppo'; choose one of \[.*'trrpg'"):
        get_policy_loss("ppo")
    with pytest.raises(ValueError, match="unknown advantage estimator 'rloo'; choose one of"):
        PolicyGradientAlgorithm("x", "rloo", "trrpg", use_kl=False)
    with pytest.raises(ValueError, match="unknown policy loss 'vanilla'"):
        PolicyGradientAlgorithm("x", "task_relative", "vanilla", use_kl=False)


def test_a_name_is_registered_once():
    registry = Registry("thing")
    registry.register("a")(len)
    registry.register("a")(len)  # the same function again: harmless (a module re-imported)
    with pytest.raises(ValueError, match="thing 'a' is already registered"):
        registry.register("a")(abs)
    assert registry.get("a") is len and registry.names() == ["a"]

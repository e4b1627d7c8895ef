import pytest
import torch

from crsp_ops.crsp.rl.algorithms import compute_advantages, get_algorithm, policy_loss
from crsp_ops.crsp.rl.trrpg import role_betas, trrpg_loss, trrpg_token_objective

CLAMP = 20.0


def _batch(seed=0, batch=4, length=6, spread=2.0):
    generator = torch.Generator().manual_seed(seed)
    logp_old = -torch.rand(batch, length, generator=generator, dtype=torch.float64) * 3 - 0.1
    log_ratio = (torch.rand(batch, length, generator=generator, dtype=torch.float64) * 2 - 1)
    logp_new = (logp_old + spread * log_ratio).requires_grad_(True)  # ratios in [e^-2, e^2]
    advantages = torch.randn(batch, generator=generator, dtype=torch.float64)
    mask = torch.rand(batch, length, generator=generator) > 0.25
    mask[:, 0] = True
    return logp_new, logp_old, advantages, mask


def _closed_form(logp_new, logp_old, advantages, beta, mask):
    log_w = (logp_new - logp_old).detach()
    w = log_w.exp()
    return mask * w * (advantages[:, None] - beta[:, None] * (log_w + 1))


def test_objective_gradient_equals_seed_closed_form_far_from_one():
    logp_new, logp_old, advantages, mask = _batch()
    beta = role_betas(["propose", "solve", "critique", "solve"],
                      {"propose": 0.01, "solve": 0.05, "critique": 0.1}).double()
    ratio = (logp_new - logp_old).detach().exp()[mask]
    assert ratio.max() > 3 and ratio.min() < 0.33  # really far from 1
    objective, _ = trrpg_token_objective(logp_new, logp_old, advantages, beta,
                                         log_ratio_clamp=CLAMP, ratio_clip=None, mask=mask)
    objective.sum().backward()
    torch.testing.assert_close(logp_new.grad,
                               _closed_form(logp_new, logp_old, advantages, beta, mask))


def test_loss_gradient_is_minus_closed_form_over_token_count():
    logp_new, logp_old, advantages, mask = _batch(seed=3)
    beta = torch.full((4,), 0.3, dtype=torch.float64)
    loss, metrics = trrpg_loss(logp_new, logp_old, advantages, mask, beta=beta,
                               log_ratio_clamp=CLAMP, ratio_clip=None)
    loss.backward()
    expected = -_closed_form(logp_new, logp_old, advantages, beta, mask) / mask.sum()
    torch.testing.assert_close(logp_new.grad, expected)
    assert metrics["tokens"] == float(mask.sum())
    assert metrics["loss"] == pytest.approx(float(loss.detach()))


def test_kl_term_vanishes_when_new_equals_old():
    _, logp_old, advantages, mask = _batch(seed=1)
    logp_new = logp_old.clone().requires_grad_(True)
    objective, parts = trrpg_token_objective(logp_new, logp_old, advantages, 0.1,
                                             log_ratio_clamp=CLAMP, ratio_clip=None, mask=mask)
    # J = w·A − β·w·log w with w = 1: the KL part is exactly zero, J is the advantage.
    torch.testing.assert_close(objective, mask * advantages[:, None].expand_as(objective))
    _, metrics = trrpg_loss(logp_new, logp_old, advantages, mask, beta=0.1,
                            log_ratio_clamp=CLAMP, ratio_clip=None)
    assert metrics["kl"] == 0.0
    assert metrics["ratio_mean"] == pytest.approx(1.0)
    assert metrics["ratio_max"] == pytest.approx(1.0)
    assert metrics["clip_fraction"] == 0.0


def test_kl_metric_is_positive_when_policies_differ():
    logp_new, logp_old, advantages, mask = _batch(seed=2)
    _, metrics = trrpg_loss(logp_new, logp_old, advantages, mask, beta=0.1,
                            log_ratio_clamp=CLAMP, ratio_clip=None)
    assert metrics["kl"] > 0.01


@pytest.mark.parametrize("ratio_clip", [None, 0.2])
def test_extreme_log_ratios_stay_finite(ratio_clip):
    logp_old = torch.full((2, 4), -60.0, dtype=torch.float32)
    logp_new = torch.tensor([[-10.0, -110.0, -60.0, float("-inf")],
                             [-110.0, -10.0, -59.0, float("nan")]]).requires_grad_(True)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0]], dtype=torch.bool)  # padding is garbage
    loss, metrics = trrpg_loss(logp_new, logp_old, torch.tensor([1.0, -1.0]), mask,
                               beta=torch.tensor([0.05, 0.1]), log_ratio_clamp=CLAMP,
                               ratio_clip=ratio_clip)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(logp_new.grad).all()
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())
    # ±50 is beyond the clamp: those tokens get no gradient; the in-range ones do.
    assert logp_new.grad[0, 0] == 0 and logp_new.grad[0, 1] == 0
    assert logp_new.grad[0, 2] != 0
    assert metrics["log_ratio_clamped_fraction"] == pytest.approx(4 / 6)


def test_ratio_clipping_zeroes_the_advantage_gradient_where_active():
    logp_old = torch.zeros(1, 4, dtype=torch.float64)
    log_ratio = torch.log(torch.tensor([[1.5, 0.5, 1.1, 0.9]], dtype=torch.float64))
    logp_new = (logp_old + log_ratio).requires_grad_(True)
    advantages = torch.tensor([1.0], dtype=torch.float64)  # A > 0: clip above 1 + ε only
    objective, parts = trrpg_token_objective(logp_new, logp_old, advantages, 0.0,
                                             log_ratio_clamp=CLAMP, ratio_clip=0.2)
    objective.sum().backward()
    assert parts["clipped"].tolist() == [[True, False, False, False]]
    w = log_ratio.exp()[0]
    torch.testing.assert_close(logp_new.grad[0], torch.stack([torch.tensor(0.0).double(),
                                                              w[1], w[2], w[3]]))
    _, metrics = trrpg_loss(logp_new.detach(), logp_old, advantages, torch.ones(1, 4),
                            beta=0.0, log_ratio_clamp=CLAMP, ratio_clip=0.2)
    assert metrics["clip_fraction"] == pytest.approx(0.25)
    assert metrics["ratio_max"] == pytest.approx(1.5)


def test_argument_validation():
    logp = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="no beta for roles"):
        role_betas(["solve", "judge"], {"solve": 0.05})
    with pytest.raises(ValueError, match=">= 0"):
        role_betas(["solve"], {"solve": -0.1})
    with pytest.raises(ValueError, match="ratio_clip"):
        trrpg_loss(logp, logp, torch.zeros(2), torch.ones(2, 3), beta=0.1, log_ratio_clamp=5,
                   ratio_clip=1.5)
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        trrpg_loss(logp, torch.zeros(2, 4), torch.zeros(2), torch.ones(2, 3), beta=0.1,
                   log_ratio_clamp=5, ratio_clip=None)


def test_trr_plus_plus_has_no_kl_and_whitens():
    trrpp, trrpg = get_algorithm("trr++"), get_algorithm("trrpg")
    rewards = torch.tensor([1.0, 0.0, 3.0, 1.0], dtype=torch.float64)
    types, roles = ["code_o"] * 4, ["solve", "solve", "propose", "propose"]
    torch.testing.assert_close(compute_advantages(trrpp, rewards, types, roles, eps=1e-6),
                               torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64))
    torch.testing.assert_close(compute_advantages(trrpg, rewards, types, roles, eps=1e-6),
                               torch.tensor([0.5, -0.5, 1.0, -1.0], dtype=torch.float64))

    logp_new, logp_old, advantages, mask = _batch(seed=5)
    betas = {"solve": 0.05, "propose": 0.01}
    batch_roles = ["solve", "propose", "solve", "propose"]
    loss, _ = policy_loss(trrpp, logp_new, logp_old, advantages, mask, batch_roles, betas=betas,
                          log_ratio_clamp=CLAMP, ratio_clip=None)
    loss.backward()
    zero_beta = torch.zeros(4, dtype=torch.float64)
    expected = -_closed_form(logp_new, logp_old, advantages, zero_beta, mask) / mask.sum()
    torch.testing.assert_close(logp_new.grad, expected)

    logp_new.grad = None
    loss, _ = policy_loss(trrpg, logp_new, logp_old, advantages, mask, batch_roles, betas=betas,
                          log_ratio_clamp=CLAMP, ratio_clip=None)
    loss.backward()
    beta = torch.tensor([0.05, 0.01, 0.05, 0.01], dtype=torch.float64)
    expected = -_closed_form(logp_new, logp_old, advantages, beta, mask) / mask.sum()
    torch.testing.assert_close(logp_new.grad, expected)
    with pytest.raises(ValueError, match="choose one of"):
        get_algorithm("ppo")

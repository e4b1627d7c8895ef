"""GSPO (TRL's importance_sampling_level="sequence"): one ratio and one clip per sequence."""

import math

import pytest
import torch

from crsp_ops.config import load_settings
from crsp_ops.crsp.rl.trrpg import log_importance_ratio, surrogate_loss, token_objective
from crsp_ops.crsp.trainer.options import update_options
from tests.crsp.conftest import REPO

# row 0: token log-ratios 0.4, 0.2, then padding (garbage log-prob); row 1: -0.1, -0.2, -0.3
LOG_RATIO = torch.tensor([[0.4, 0.2, 0.0], [-0.1, -0.2, -0.3]], dtype=torch.float64)
MASK = torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool)
ADVANTAGES = torch.tensor([1.0, -1.0], dtype=torch.float64)


def _logps():
    old = torch.full((2, 3), -2.0, dtype=torch.float64)
    new = (old + LOG_RATIO).detach()
    new[0, 2] = -math.inf  # padding never reaches the ratio
    return new.requires_grad_(), old


def test_the_sequence_ratio_is_the_exp_of_the_mean_valid_log_ratio():
    new, old = _logps()
    # row 0: (0.4 + 0.2) / 2 = 0.3 on its two tokens; row 1: (-0.1 - 0.2 - 0.3) / 3 = -0.2
    expected = torch.tensor([[0.3, 0.3, 0.0], [-0.2, -0.2, -0.2]], dtype=torch.float64)
    torch.testing.assert_close(log_importance_ratio(new, old, MASK, "sequence"), expected)
    # TRL's formula (GRPOTrainer._compute_loss): (log_ratio * mask).sum(-1) / mask.sum(-1)
    trl = (LOG_RATIO * MASK).sum(-1) / MASK.sum(-1).clamp(min=1.0)
    torch.testing.assert_close(expected[:, 0], trl)
    torch.testing.assert_close(log_importance_ratio(new, old, MASK, "token")[MASK],
                               LOG_RATIO[MASK])
    with pytest.raises(ValueError, match="choose one of"):
        log_importance_ratio(new, old, MASK, "segment")


def test_gspo_clips_whole_sequences():
    new, old = _logps()
    objective, parts = token_objective(new, old, ADVANTAGES, 0.0, log_ratio_clamp=20.0,
                                       ratio_clip=0.2, mask=MASK,
                                       importance_sampling_level="sequence")
    # row 0: w = e^0.3 = 1.3499 > 1.2 with A = +1: clipped, J = 1.2 on both tokens.
    # row 1: w = e^-0.2 = 0.8187 inside [0.8, 1.2]: J = w·A = -0.8187 on its three tokens.
    # (Per token, row 1's last token, e^-0.3 = 0.741 < 0.8, would have been clipped.)
    w1 = math.exp(-0.2)
    torch.testing.assert_close(objective, torch.tensor(
        [[1.2, 1.2, 0.0], [-w1, -w1, -w1]], dtype=torch.float64))
    assert parts["clipped"].tolist() == [[True, True, False], [False, False, False]]


def test_gspo_loss_and_gradient_by_hand():
    new, old = _logps()
    loss, metrics = surrogate_loss(new, old, ADVANTAGES, MASK, beta=0.0, log_ratio_clamp=20.0,
                                   ratio_clip=0.2, importance_sampling_level="sequence")
    w0, w1 = math.exp(0.3), math.exp(-0.2)
    # token mean of −J over 5 tokens: −(1.2 + 1.2 − 3·0.81873) / 5 = 0.0112385
    assert float(loss) == pytest.approx(-(2.4 - 3 * w1) / 5)
    assert float(loss) == pytest.approx(0.0112384519)
    loss.backward()
    # row 0 is clipped: no gradient. Row 1: each of its 3 tokens' J = A·exp(mean l) moves with
    # every token's log-prob by A·w/3; summed over the 3 tokens, A·w = -0.8187, and the loss
    # is −Σ J / 5: +0.163746 on each of row 1's tokens.
    torch.testing.assert_close(new.grad, torch.tensor(
        [[0.0, 0.0, 0.0], [w1 / 5] * 3], dtype=torch.float64))
    assert metrics["ratio_mean"] == pytest.approx((2 * w0 + 3 * w1) / 5)  # 1.031182
    assert metrics["clip_fraction"] == pytest.approx(2 / 5)


def test_the_config_key_reaches_the_update_options():
    default = update_options(load_settings(REPO, []).settings)
    assert (default.importance_sampling_level, default.top_entropy_quantile) == ("token", 1.0)
    settings = load_settings(REPO, ["train.importance_sampling_level=sequence",
                                    "train.top_entropy_quantile=0.2"]).settings
    options = update_options(settings)
    assert (options.importance_sampling_level, options.top_entropy_quantile) == ("sequence", 0.2)


def test_on_policy_gspo_and_token_ratios_give_one_gradient():
    # One update per batch (train.update_epochs=1): new = old, every ratio is 1. Under the token
    # mean over the batch's N = 5 tokens, a token of row i gets −A_i/N at token level; at
    # sequence level each of row i's n_i tokens carries exp(mean l_i)·A_i, whose gradient
    # reaches every token of the row by A_i/n_i, and the n_i copies sum to A_i: −A_i/N again.
    # This is why GSPO's dev curve at update_epochs=1 is the default's; at 2 they part.
    grads = {}
    for level in ("token", "sequence"):
        old = torch.tensor([[-1.0, -2.0, 0.0], [-0.5, -1.5, -2.5]], dtype=torch.float64)
        new = old.clone().requires_grad_()
        loss, _ = surrogate_loss(new, old, ADVANTAGES, MASK, beta=0.0, log_ratio_clamp=20.0,
                                 ratio_clip=0.2, importance_sampling_level=level)
        loss.backward()
        grads[level] = new.grad
    expected = torch.tensor([[-0.2, -0.2, 0.0], [0.2, 0.2, 0.2]], dtype=torch.float64)
    torch.testing.assert_close(grads["token"], expected)
    torch.testing.assert_close(grads["sequence"], expected)

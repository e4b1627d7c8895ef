"""Policy-gradient algorithms selectable by name: TR-RPG (CRSP) and TRR++ (Absolute Zero).

Both share one loss (``trrpg.trrpg_loss``) and one advantage function; they differ in:

* ``trrpg``: centred task-relative advantages (reward units), per-role KL beta, ratio clipping
  only if configured;
* ``trr++``: whitened task-relative advantages, no KL (beta forced to 0), PPO ratio clipping
  as configured (Absolute Zero uses 0.2). With beta 0 the TR-RPG objective reduces to
  REINFORCE++'s importance-weighted (clipped) surrogate.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import torch

from crsp_ops.crsp.rl.advantages import task_relative_advantages
from crsp_ops.crsp.rl.trrpg import RatioClip, role_betas, trrpg_loss


@dataclass(frozen=True)
class PolicyGradientAlgorithm:
    """How advantages are normalised and whether the KL term applies."""

    name: str
    whiten_advantages: bool
    use_kl: bool


ALGORITHMS = {
    "trrpg": PolicyGradientAlgorithm("trrpg", whiten_advantages=False, use_kl=True),
    "trr++": PolicyGradientAlgorithm("trr++", whiten_advantages=True, use_kl=False),
}


def get_algorithm(name: str) -> PolicyGradientAlgorithm:
    """Look an algorithm up by name (``trrpg`` or ``trr++``).

    >>> get_algorithm("trr++").use_kl
    False
    """
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {sorted(ALGORITHMS)}")
    return ALGORITHMS[name]


def compute_advantages(algorithm: PolicyGradientAlgorithm, rewards: torch.Tensor,
                       groups: Sequence[Hashable], roles: Sequence[Hashable], *,
                       eps: float, scale: str = "auto", flat: str = "zero") -> torch.Tensor:
    """Advantages ``(B,)``, one baseline per (group, role), scaled as ``scale`` says.

    ``groups``: each sample's baseline group (``advantages.baseline_group``); ``scale``:
    ``group``, ``batch``, ``none`` or ``auto``, the algorithm's own (TRR++ whitens per group);
    ``flat``: a flat group's baseline (``advantages.task_relative_advantages``).
    """
    if scale == "auto":
        scale = "group" if algorithm.whiten_advantages else "none"
    return task_relative_advantages(rewards, groups, roles, scale=scale, eps=eps, flat=flat)


def policy_loss(algorithm: PolicyGradientAlgorithm, logp_new: torch.Tensor,
                logp_old: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                roles: Sequence[str], *, betas: Mapping[str, float], log_ratio_clamp: float,
                ratio_clip: RatioClip, ref_kl: torch.Tensor | None = None,
                ref_coef: float = 0.0, weights: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor, dict[str, float]]:
    """The algorithm's loss and metrics for one batch (see ``trrpg.trrpg_loss``).

    Args:
        algorithm: from ``get_algorithm``.
        logp_new: ``(B, T)`` current log-probs.
        logp_old: ``(B, T)`` sampling log-probs.
        advantages: ``(B,)`` from ``compute_advantages``.
        mask: ``(B, T)`` response-token mask.
        roles: role of each sample, for its beta.
        betas: beta per role (ignored by algorithms without KL).
        log_ratio_clamp: clamp on the log importance ratio.
        ratio_clip: PPO ``ε``, ``(ε_low, ε_high)`` or ``None``.
        ref_kl: ``(B, T)`` reference-KL estimate or ``None`` (``trrpg.trrpg_loss``).
        ref_coef: its coefficient (both algorithms take it).
        weights: ``(B, T)`` per-token loss weights or ``None`` (token mean).

    Returns:
        ``(loss, metrics)``.
    """
    beta: torch.Tensor | float = 0.0
    if algorithm.use_kl:
        beta = role_betas(roles, betas, device=logp_new.device).to(logp_new.dtype)
    return trrpg_loss(logp_new, logp_old, advantages, mask, beta=beta,
                      log_ratio_clamp=log_ratio_clamp, ratio_clip=ratio_clip, ref_kl=ref_kl,
                      ref_coef=ref_coef, weights=weights)

"""Policy-gradient algorithms selectable by name, each a registered estimator and loss.

``trrpg`` (centred advantages, TR-RPG loss, per-role KL) and ``trr++`` (whitened advantages,
the same loss without KL); a new loss is a function registered with
``registry.register_policy_loss`` and an entry here.

Design: docs/design/rl.md#algorithms.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import torch

import crsp_ops.crsp.rl.advantages  # noqa: F401  (its estimators register on import)
from crsp_ops.crsp.rl.registry import get_adv_est, get_policy_loss
from crsp_ops.crsp.rl.trrpg import RatioClip, role_betas, surrogate_loss


@dataclass(frozen=True)
class PolicyGradientAlgorithm:
    """An advantage estimator and a policy loss (registered names) and whether KL applies."""

    name: str
    advantage_estimator: str  # registry.ADVANTAGE_ESTIMATORS
    loss: str  # registry.POLICY_LOSSES
    use_kl: bool  # the per-role beta of TR-RPG's KL term; False: beta 0

    def __post_init__(self) -> None:
        get_adv_est(self.advantage_estimator)  # raises naming the registered choices
        get_policy_loss(self.loss)


ALGORITHMS = {
    "trrpg": PolicyGradientAlgorithm("trrpg", "task_relative", "trrpg", use_kl=True),
    "trr++": PolicyGradientAlgorithm("trr++", "task_relative_whitened", "trrpg", use_kl=False),
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
    ``group``, ``batch``, ``none`` or ``auto``, the estimator's own (TRR++ whitens per group);
    ``flat``: a flat group's baseline (``advantages.task_relative_advantages``).
    """
    estimate = get_adv_est(algorithm.advantage_estimator)
    return estimate(rewards, groups, roles, eps=eps, scale=scale, flat=flat)


def policy_loss(algorithm: PolicyGradientAlgorithm, logp_new: torch.Tensor,
                logp_old: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                roles: Sequence[str], *, betas: Mapping[str, float], log_ratio_clamp: float,
                ratio_clip: RatioClip, ref_kl: torch.Tensor | None = None,
                ref_coef: float = 0.0, weights: torch.Tensor | None = None,
                importance_sampling_level: str = "token",
                token_mask: torch.Tensor | None = None,
                sampling_weights: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor, dict[str, float]]:
    """The algorithm's registered loss and its metrics for one batch (``trrpg.surrogate_loss``).

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
        ref_kl: ``(B, T)`` reference-KL estimate or ``None`` (``trrpg.surrogate_loss``).
        ref_coef: its coefficient (every algorithm takes it).
        weights: ``(B, T)`` per-token loss weights or ``None`` (token mean).
        importance_sampling_level: ``token`` or ``sequence`` (GSPO).
        token_mask: ``(B, T)`` tokens whose policy loss counts, ``None``: all
            (``entropy_mask.high_entropy_mask``).
        sampling_weights: ``(B, T)`` importance weights of the sampler's mismatch or ``None``
            (``sampling_correction``).

    Returns:
        ``(loss, metrics)``.
    """
    beta: torch.Tensor | float = 0.0
    if algorithm.use_kl:
        beta = role_betas(roles, betas, device=logp_new.device).to(logp_new.dtype)
    return surrogate_loss(logp_new, logp_old, advantages, mask, beta=beta,
                          log_ratio_clamp=log_ratio_clamp, ratio_clip=ratio_clip,
                          ref_kl=ref_kl, ref_coef=ref_coef, weights=weights,
                          objective=algorithm.loss,
                          importance_sampling_level=importance_sampling_level,
                          token_mask=token_mask, sampling_weights=sampling_weights)

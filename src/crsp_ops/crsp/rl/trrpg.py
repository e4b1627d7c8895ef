"""TR-RPG: task-relative, KL-regularised policy gradient with importance weights.

The per-token surrogate (clamped log-ratio, clipped importance weight, per-role KL to the
sampler), registered as a policy loss; TRR++ is the same loss with beta 0.

Design: docs/design/rl.md#trrpg.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from crsp_ops.crsp.rl.registry import get_policy_loss, register_policy_loss


def role_betas(roles: Sequence[str], betas: Mapping[str, float], *,
               device: torch.device | str | None = None) -> torch.Tensor:
    """One beta per sample from its role.

    Args:
        roles: role of each sample ("propose", "solve", "critique").
        betas: beta per role (the project's defaults live in Kconfig).
        device: where to put the tensor.

    Returns:
        Betas, shape ``(B,)``.

    >>> role_betas(["solve", "critique"], {"solve": 0.05, "critique": 0.1})
    tensor([0.0500, 0.1000])
    """
    missing = sorted(set(roles) - set(betas))
    if missing:
        raise ValueError(f"no beta for roles {missing}; add them to the per-role betas")
    negative = {role: beta for role, beta in betas.items() if beta < 0}
    if negative:
        raise ValueError(f"betas must be >= 0, got {negative}")
    return torch.tensor([float(betas[role]) for role in roles], device=device)


RatioClip = float | tuple[float, float] | None


def clip_bounds(ratio_clip: RatioClip) -> tuple[float, float] | None:
    """``(lower, upper)`` bounds of the clipped ratio, ``None`` for no clipping.

    >>> clip_bounds(0.2), clip_bounds((0.2, 0.28)), clip_bounds((0.0, 0.0))
    ((0.8, 1.2), (0.8, 1.28), None)
    """
    if ratio_clip is None:
        return None
    low, high = (ratio_clip, ratio_clip) if isinstance(ratio_clip, (int, float)) else ratio_clip
    if not 0 <= low < 1 or high < 0:
        raise ValueError(f"ratio_clip must be in (0, 1) (or a pair: low in [0, 1), high >= 0), "
                         f"got {ratio_clip}")
    if low == 0 and high == 0:
        if isinstance(ratio_clip, (int, float)):
            raise ValueError(f"ratio_clip must be in (0, 1) or None, got {ratio_clip}")
        return None
    return (1 - low if low else 0.0, 1 + high if high else float("inf"))


IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")  # train.importance_sampling_level


@dataclass(frozen=True)
class LossTerms:
    """What a registered policy loss receives; every tensor ``(B, T)`` unless noted.

    A policy loss is ``fn(terms) -> (J, clipped)``: the per-token objective to maximise and
    where clipping zeroed its advantage gradient (bool); the caller masks both, aggregates
    ``−J`` and reports the metrics.
    """

    logp_new: torch.Tensor  # current log-probs (with gradient)
    log_ratio: torch.Tensor  # clamped log importance ratio (token or sequence level), 0 off mask
    ratio: torch.Tensor  # exp(log_ratio)
    advantages: torch.Tensor  # (B, 1) or (B, T)
    beta: torch.Tensor  # KL coefficient: a scalar or (B, 1); 0 without KL
    bounds: tuple[float, float] | None  # clip_bounds of the advantage part, None: no clip


@register_policy_loss("trrpg")
def trrpg_objective(terms: LossTerms) -> tuple[torch.Tensor, torch.Tensor]:
    """TR-RPG: ``min(w·A, clip(w)·A) − β·w·log w`` (derived in docs/design/rl.md#trrpg)."""
    ratio, advantages = terms.ratio, terms.advantages
    policy_term = ratio * advantages  # (B, T)
    clipped = torch.zeros_like(policy_term, dtype=torch.bool)
    if terms.bounds is not None:
        clipped_term = ratio.clamp(*terms.bounds) * advantages
        clipped = clipped_term < policy_term
        policy_term = torch.minimum(policy_term, clipped_term)
    return policy_term - terms.beta * ratio * terms.log_ratio, clipped


def log_importance_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor, mask: torch.Tensor,
                         level: str = "token") -> torch.Tensor:
    """Unclamped ``log π_new/π_old`` ``(B, T)``, 0 off ``mask``, at ``level``.

    ``sequence`` (GSPO, TRL's ``importance_sampling_level="sequence"``): every token carries
    its sequence's mean log-ratio over its valid tokens, so the ratio and its clipping are one
    per sequence.

    >>> new, old = torch.tensor([[-1.0, -2.0, 0.0]]), torch.tensor([[-2.0, -2.5, 9.0]])
    >>> log_importance_ratio(new, old, torch.tensor([[1, 1, 0]]).bool(), "sequence")
    tensor([[0.7500, 0.7500, 0.0000]])
    """
    if level not in IMPORTANCE_SAMPLING_LEVELS:
        raise ValueError(f"unknown importance sampling level {level!r}; choose one of "
                         f"{list(IMPORTANCE_SAMPLING_LEVELS)}")
    raw = torch.where(mask, logp_new - logp_old.detach(), torch.zeros_like(logp_new))
    if level == "token":
        return raw
    mean = raw.sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1)  # (B, 1)
    return torch.where(mask, mean.expand_as(raw), torch.zeros_like(raw))


def token_objective(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
                    beta: torch.Tensor | float, *, log_ratio_clamp: float,
                    ratio_clip: RatioClip, mask: torch.Tensor | None = None,
                    objective: str = "trrpg", importance_sampling_level: str = "token"
                    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token objective ``J`` (to maximise) of the registered loss ``objective``.

    Args:
        logp_new: log-probs of the sampled tokens under the current policy, ``(B, T)``.
        logp_old: log-probs under the sampling policy (no gradient), ``(B, T)``.
        advantages: sequence-level ``(B,)`` or token-level ``(B, T)`` advantages.
        beta: KL coefficient, a float or one per sequence ``(B,)``.
        log_ratio_clamp: ``c`` in ``clamp(log ratio, −c, c)`` (> 0).
        ratio_clip: PPO ``ε`` for the advantage part, a pair ``(ε_low, ε_high)``, or ``None``
            for no clipping.
        mask: 1 on response tokens ``(B, T)``; masked positions get ``J = 0`` and their
            log-probs (possibly ±inf padding) never reach ``exp``.
        objective: a name in ``registry.POLICY_LOSSES``.
        importance_sampling_level: ``token`` or ``sequence`` (``log_importance_ratio``).

    Returns:
        ``(J, parts)``: ``J`` of shape ``(B, T)`` and a dict with ``log_ratio``, ``ratio``,
        ``clipped`` (where clipping zeroed the advantage gradient) and ``clamped`` (where the
        log-ratio hit the clamp), all ``(B, T)``.
    """
    if logp_new.shape != logp_old.shape or logp_new.dim() != 2:
        raise ValueError(f"logp_new and logp_old must both be (B, T), got "
                         f"{tuple(logp_new.shape)} and {tuple(logp_old.shape)}")
    if log_ratio_clamp <= 0:
        raise ValueError(f"log_ratio_clamp must be > 0, got {log_ratio_clamp}")
    bounds = clip_bounds(ratio_clip)
    loss = get_policy_loss(objective)
    mask = torch.ones_like(logp_new, dtype=torch.bool) if mask is None else mask.bool()
    advantages = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages  # (B, 1|T)
    beta = torch.as_tensor(beta, dtype=logp_new.dtype, device=logp_new.device)
    beta = beta.unsqueeze(1) if beta.dim() == 1 else beta  # (B, 1) or scalar

    raw = log_importance_ratio(logp_new, logp_old, mask, importance_sampling_level)  # (B, T)
    log_ratio = raw.clamp(-log_ratio_clamp, log_ratio_clamp)  # (B, T)
    ratio = torch.exp(log_ratio)  # (B, T)
    value, clipped = loss(LossTerms(logp_new, log_ratio, ratio, advantages, beta, bounds))
    value = torch.where(mask, value, torch.zeros_like(value))
    return value, {"log_ratio": log_ratio, "ratio": ratio, "clipped": clipped & mask,
                   "clamped": (raw.abs() > log_ratio_clamp) & mask}


def surrogate_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
                   mask: torch.Tensor, *, beta: torch.Tensor | float, log_ratio_clamp: float,
                   ratio_clip: RatioClip, ref_kl: torch.Tensor | None = None,
                   ref_coef: float = 0.0, weights: torch.Tensor | None = None,
                   objective: str = "trrpg", importance_sampling_level: str = "token",
                   token_mask: torch.Tensor | None = None,
                   sampling_weights: torch.Tensor | None = None,
                   ) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss ``−J`` of a registered objective over the batch's response tokens, and metrics.

    Args:
        logp_new: ``(B, T)`` log-probs under the current policy (requires grad).
        logp_old: ``(B, T)`` log-probs under the sampling policy.
        advantages: ``(B,)`` or ``(B, T)`` advantages (see ``advantages``).
        mask: ``(B, T)`` response-token mask.
        beta: KL coefficient, float or ``(B,)`` (``role_betas``).
        log_ratio_clamp: clamp on the log importance ratio.
        ratio_clip: PPO ``ε``, ``(ε_low, ε_high)`` or ``None``.
        ref_kl: ``(B, T)`` per-token reference-KL estimate (``reference_kl.kl_estimate``),
            added to the loss times ``ref_coef``; ``None`` for none.
        ref_coef: its coefficient.
        weights: ``(B, T)`` per-token loss weights (``loss_aggregation.token_weights``): the
            loss is ``Σ weights · (−J + ref_coef · ref_kl)``; ``None``: the batch's token mean.
        objective: the registered policy loss (``token_objective``).
        importance_sampling_level: ``token`` or ``sequence`` (GSPO).
        token_mask: ``(B, T)`` bool, the tokens whose ``−J`` counts (``entropy_mask``); the
            others still count in the denominator and the reference KL, as in TRL.
        sampling_weights: ``(B, T)`` importance weights of the sampler/trainer mismatch
            (``sampling_correction.sampling_weights``, no gradient) multiplying each token's
            ``−J`` (not the reference KL, as in TRL); ``None``: none.

    Returns:
        ``(loss, metrics)`` with metrics ``loss``, ``kl``, ``ratio_mean``, ``ratio_max``,
        ``clip_fraction``, ``log_ratio_clamped_fraction``, ``tokens`` (and ``ref_kl``, the
        token mean of the estimate, when given).
    """
    mask = mask.bool()
    objective_value, parts = token_objective(
        logp_new, logp_old, advantages, beta, log_ratio_clamp=log_ratio_clamp,
        ratio_clip=ratio_clip, mask=mask, objective=objective,
        importance_sampling_level=importance_sampling_level)
    tokens = mask.sum().clamp(min=1)
    per_token = -objective_value
    if token_mask is not None:
        per_token = per_token * token_mask
    if sampling_weights is not None:
        per_token = per_token * sampling_weights.detach()
    if ref_kl is not None:
        per_token = per_token + ref_coef * torch.where(mask, ref_kl, torch.zeros_like(ref_kl))
    loss = per_token.sum() / tokens if weights is None else (per_token * weights).sum()
    metrics = _metrics(loss, parts, mask, tokens, ref_kl)
    return loss, metrics


@torch.no_grad()
def _metrics(loss: torch.Tensor, parts: dict[str, torch.Tensor], mask: torch.Tensor,
             tokens: torch.Tensor, ref_kl: torch.Tensor | None) -> dict[str, float]:
    """``surrogate_loss``'s metrics: token means over ``mask`` (max for ``ratio_max``)."""
    ratio, log_ratio = parts["ratio"], parts["log_ratio"]
    kl_per_token = ratio * log_ratio - ratio + 1  # >= 0, see docs/design/rl.md#trrpg
    masked_ratio = torch.where(mask, ratio, torch.zeros_like(ratio))
    metrics = {
        "loss": float(loss.detach()),
        "kl": float((kl_per_token * mask).sum() / tokens),
        "ratio_mean": float(masked_ratio.sum() / tokens),
        "ratio_max": float(masked_ratio.max()) if mask.any() else 1.0,
        "clip_fraction": float(parts["clipped"].sum() / tokens),
        "log_ratio_clamped_fraction": float(parts["clamped"].sum() / tokens),
        "tokens": float(mask.sum()),
    }
    if ref_kl is not None:
        metrics["ref_kl"] = float((ref_kl * mask).sum() / tokens)
    return metrics


trrpg_token_objective = token_objective  # the seed's names: TR-RPG is the default objective
trrpg_loss = surrogate_loss

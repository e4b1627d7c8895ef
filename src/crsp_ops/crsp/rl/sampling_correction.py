"""Importance-sampling correction between an engine's sampler and the trainer (TRL's TIS).

Each token's loss is weighted by a bounded ``ρ = π_old / μ`` (truncated or masked, per token
or per sequence), so the update's clipping measures only its own drift.

Design: docs/design/rl.md#sampling_correction.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

CORRECTION_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
METRICS = ("is_ratio_mean", "is_capped_fraction", "sampling_logp_diff_mean",
           "sampling_logp_diff_max")  # correction_metrics: token means, then the max


@dataclass(frozen=True)
class SamplingCorrection:
    """How the sampler/trainer mismatch is corrected (values come from ``train.sampling_*``)."""

    mode: str = "token_truncate"  # CORRECTION_MODES
    clip_max: float = 3.0  # C_max (TRL's vllm_importance_sampling_clip_max; _cap before 1.6)
    clip_min: float = 0.0  # C_min; 0: no lower bound

    def __post_init__(self) -> None:
        if self.mode not in CORRECTION_MODES:
            raise ValueError(f"unknown sampling correction mode {self.mode!r}; choose one of "
                             f"{list(CORRECTION_MODES)}")
        if not self.clip_max > 0 or not 0 <= self.clip_min < self.clip_max:
            raise ValueError(f"sampling correction bounds need 0 <= clip_min < clip_max, got "
                             f"clip_min={self.clip_min}, clip_max={self.clip_max}")


def sampling_weights(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor,
                     mask: torch.Tensor, correction: SamplingCorrection
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token importance weights ``ρ = π_old / μ``, bounded as ``correction`` says.

    Args:
        trainer_logp: ``(B, T)`` the trainer's log-probs of the sampled tokens (``π_old``).
        sampler_logp: ``(B, T)`` the engine's log-probs of the same tokens (``μ``).
        mask: ``(B, T)`` response tokens.
        correction: the mode and its bounds.

    Returns:
        ``(weights, capped)``, both ``(B, T)``: the weights (0 off ``mask``, no gradient) and,
        as bool, the response tokens whose ratio the bound changed.

    >>> new, old = torch.tensor([[0.0, -1.0, -3.0]]), torch.tensor([[-2.0, -1.0, -2.0]])
    >>> w, capped = sampling_weights(new, old, torch.tensor([[1, 1, 1]]),
    ...                              SamplingCorrection("token_truncate", clip_max=2.0))
    >>> [round(x, 4) for x in w[0].tolist()], capped.tolist()
    ([2.0, 1.0, 0.3679], [[True, False, False]])
    """
    mask = mask.bool()
    diff = torch.where(mask, trainer_logp.detach().float() - sampler_logp.float(),
                       torch.zeros_like(trainer_logp, dtype=torch.float32))
    diff = torch.nan_to_num(diff, nan=0.0)  # an unscored token: no correction
    if correction.mode.startswith("sequence"):
        diff = diff.sum(1, keepdim=True).expand_as(diff)  # (B, T): the response's ratio
    ratio = torch.exp(diff)  # (B, T); inf past float range, which the bound catches
    capped = ((ratio > correction.clip_max) | (ratio < correction.clip_min)) & mask
    if correction.mode.endswith("truncate"):
        ratio = ratio.clamp(min=correction.clip_min, max=correction.clip_max)
    else:
        ratio = ratio.masked_fill(capped, 0.0)
    return torch.where(mask, ratio, torch.zeros_like(ratio)), capped


@torch.no_grad()
def correction_metrics(weights: torch.Tensor, capped: torch.Tensor, trainer_logp: torch.Tensor,
                       sampler_logp: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """Token means over ``mask`` of the weights, the capped share and ``|π_old − μ|``.

    >>> m = torch.tensor([[1, 1, 0]]).bool()
    >>> correction_metrics(torch.tensor([[2.0, 1.0, 0.0]]), torch.tensor([[True, False, False]]),
    ...                    torch.tensor([[0.0, -1.0, 0.0]]), torch.tensor([[-2.0, -1.0, 5.0]]), m)
    {'is_ratio_mean': 1.5, 'is_capped_fraction': 0.5, 'sampling_logp_diff_mean': 1.0, \
'sampling_logp_diff_max': 2.0}
    """
    mask = mask.bool()
    tokens = mask.sum().clamp(min=1)
    delta = (trainer_logp.float() - sampler_logp.float()).abs()
    delta = delta[mask & ~torch.isnan(delta)]
    return {
        "is_ratio_mean": float((weights * mask).sum() / tokens),
        "is_capped_fraction": float((capped & mask).sum() / tokens),
        "sampling_logp_diff_mean": float(delta.mean()) if delta.numel() else 0.0,
        "sampling_logp_diff_max": float(delta.max()) if delta.numel() else 0.0,
    }


def corrected(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor,
              correction: SamplingCorrection) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """``(π_old, weights, metrics)`` of one micro-batch: its detached log-probs, weighted."""
    old = trainer_logp.detach()
    weights, capped = sampling_weights(old, sampler_logp, mask, correction)
    return old, weights, correction_metrics(weights, capped, old, sampler_logp, mask)

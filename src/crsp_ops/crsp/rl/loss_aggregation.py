"""How per-token losses become one scalar: token mean, sequence mean or a constant normaliser.

Weights use step-wide denominators (all micro-batches, all ranks), so gradient accumulation
equals one pass over the whole step.

Design: docs/design/rl.md#loss_aggregation.
"""

from __future__ import annotations

import torch

AGGREGATIONS = ("token_mean", "sequence_mean", "constant_normalizer")


def step_denominator(mask: torch.Tensor, aggregation: str) -> float:
    """What this batch contributes to the step-wide denominator: tokens or rows with a token.

    >>> step_denominator(torch.tensor([[1., 1., 0.], [0., 0., 0.]]), "sequence_mean")
    1.0
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown loss aggregation {aggregation!r}; choose one of "
                         f"{list(AGGREGATIONS)}")
    if aggregation == "token_mean":
        return float(mask.sum())
    return float((mask.sum(1) > 0).sum())


def token_weights(mask: torch.Tensor, aggregation: str, *, denominator: float,
                  normalizer: int = 1) -> torch.Tensor:
    """Per-token loss weights ``(B, T)`` (0 off the mask) for ``aggregation``.

    Args:
        mask: ``(B, T)`` response-token mask of (a micro-batch of) the step.
        aggregation: one of ``AGGREGATIONS``.
        denominator: the step-wide ``step_denominator`` (summed over micro-batches and ranks).
        normalizer: ``C`` of ``constant_normalizer``.

    >>> token_weights(torch.tensor([[1., 1., 1., 1.], [1., 0., 0., 0.]]), "sequence_mean",
    ...               denominator=2)
    tensor([[0.1250, 0.1250, 0.1250, 0.1250],
            [0.5000, 0.0000, 0.0000, 0.0000]])
    """
    step_denominator(mask, aggregation)  # validates the name
    mask = mask.float()
    denominator = max(float(denominator), 1.0)
    if aggregation == "token_mean":
        return mask / denominator
    if aggregation == "sequence_mean":
        lengths = mask.sum(1, keepdim=True).clamp(min=1)  # (B, 1)
        return mask / (lengths * denominator)
    if normalizer < 1:
        raise ValueError(f"constant_normalizer needs a normalizer >= 1, got {normalizer}")
    return mask / (denominator * normalizer)

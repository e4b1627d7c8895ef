"""The policy loss on the highest-entropy tokens only (TRL's ``top_entropy_quantile``).

"Beyond the 80/20 rule" trains on the ~20% of tokens where the policy is most uncertain (the
forks of a reasoning path). As in TRL's ``get_high_entropy_mask``, a token is kept when its
entropy is at least the ``1 − quantile`` quantile of the response tokens' entropies; the
others drop out of the policy loss but still count in its denominator. TRL takes the quantile
over one micro-batch of every rank; here over the micro-batch of this rank (ranks run their
micro-batches unpaired, so a collective per micro-batch could wait forever).
"""

from __future__ import annotations

import torch


def high_entropy_mask(entropies: torch.Tensor, mask: torch.Tensor, quantile: float
                      ) -> torch.Tensor:
    """``(B, T)`` bool: the tokens of ``mask`` whose entropy is in the top ``quantile``.

    Args:
        entropies: ``(B, T)`` per-token entropies.
        mask: ``(B, T)`` response-token mask.
        quantile: the fraction kept, in ``(0, 1]``; 1 keeps every token of ``mask``.

    >>> high_entropy_mask(torch.tensor([[0.1, 0.9, 0.5, 7.0]]),
    ...                   torch.tensor([[1, 1, 1, 0]]), 0.5)
    tensor([[False,  True,  True, False]])
    """
    if not 0 < quantile <= 1:
        raise ValueError(f"top_entropy_quantile must be in (0, 1], got {quantile}")
    mask = mask.bool()
    scored = entropies[mask].float()
    if scored.numel() == 0:
        return torch.zeros_like(mask)
    threshold = torch.quantile(scored, 1 - quantile)
    return (entropies >= threshold) & mask

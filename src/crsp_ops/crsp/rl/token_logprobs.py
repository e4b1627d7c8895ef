"""Log-probabilities of chosen tokens without a full-vocabulary float32 copy of the logits.

A gathered logit minus a chunked, recomputed ``logsumexp``: at most one ``(B, chunk, V)``
float32 block is alive at a time instead of the whole ``(B, T, V)``.

Design: docs/design/rl.md#token_logprobs.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

DEFAULT_CHUNK = 64  # positions per logsumexp block


def _chunk_logsumexp(block: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.logsumexp(block.float() / temperature, dim=-1)


def gathered_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, *, temperature: float = 1.0,
    chunk: int = DEFAULT_CHUNK,
) -> torch.Tensor:
    """``log softmax(logits / temperature)[..., targets]`` in float32, ``(B, T)``.

    Args:
        logits: ``(B, T, V)`` in any float dtype (kept as is; never copied whole to float32).
        targets: ``(B, T)`` token ids to score.
        temperature: divides the logits (> 0).
        chunk: positions per logsumexp block (>= 1).

    >>> logits = torch.randn(2, 5, 11)
    >>> ids = torch.randint(0, 11, (2, 5))
    >>> reference = torch.log_softmax(logits, -1).gather(-1, ids[..., None]).squeeze(-1)
    >>> bool(torch.allclose(gathered_logprobs(logits, ids, chunk=2), reference, atol=1e-6))
    True
    """
    if temperature <= 0 or chunk < 1:
        raise ValueError(f"temperature must be > 0 and chunk >= 1, got {temperature}, {chunk}")
    chosen = logits.gather(-1, targets[..., None]).squeeze(-1).float() / temperature  # (B, T)
    pieces = []
    for start in range(0, logits.shape[1], chunk):
        block = logits[:, start:start + chunk]  # (B, c, V): a view, no copy
        if torch.is_grad_enabled() and block.requires_grad:
            pieces.append(checkpoint(_chunk_logsumexp, block, temperature, use_reentrant=False))
        else:
            pieces.append(_chunk_logsumexp(block, temperature))
    return chosen - torch.cat(pieces, dim=1)  # (B, T)


def _chunk_entropy(block: torch.Tensor, temperature: float) -> torch.Tensor:
    log_p = torch.log_softmax(block.float() / temperature, dim=-1)  # (B, c, V)
    p = log_p.exp()
    return -torch.where(p > 0, p * log_p, torch.zeros_like(p)).sum(-1)  # 0·log 0 = 0


@torch.no_grad()
def token_entropies(logits: torch.Tensor, *, temperature: float = 1.0,
                    chunk: int = DEFAULT_CHUNK) -> torch.Tensor:
    """Entropy of ``softmax(logits / temperature)`` at each position, float32 ``(B, T)``.

    >>> token_entropies(torch.zeros(1, 2, 4))  # uniform over 4: log 4
    tensor([[1.3863, 1.3863]])
    """
    if temperature <= 0 or chunk < 1:
        raise ValueError(f"temperature must be > 0 and chunk >= 1, got {temperature}, {chunk}")
    return torch.cat([_chunk_entropy(logits[:, start:start + chunk], temperature)
                      for start in range(0, logits.shape[1], chunk)], dim=1)


def token_scores(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 temperature: float, *, first: int = 1, entropy: bool = False
                 ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``logp[b, t] = log π(input_ids[b, t] | input_ids[b, :t])`` ``(B, T)``, and entropies.

    Only positions ``t >= first`` are scored (earlier ones get 0): the model projects to the
    vocabulary only the hidden states that predict them (``logits_to_keep``). Position 0 has
    no prediction, so ``first >= 1``. The entropies (``(B, T)``, same placement) are computed
    only when ``entropy``; otherwise ``None``.
    """
    width = input_ids.shape[1]
    first = min(max(first, 1), width)
    logits = model(input_ids=input_ids, attention_mask=attention_mask,
                   logits_to_keep=width - first + 1).logits  # (B, T-first+1, V)
    # predictions for positions first..T-1, without a full-vocabulary float32 copy
    chosen = gathered_logprobs(logits[:, :-1], input_ids[:, first:], temperature=temperature)
    entropies = None
    if entropy:
        entropies = F.pad(token_entropies(logits[:, :-1], temperature=temperature), (first, 0))
    return F.pad(chosen, (first, 0)), entropies  # (B, T) each

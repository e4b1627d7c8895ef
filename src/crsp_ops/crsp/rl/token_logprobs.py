"""Log-probabilities of chosen tokens without a full-vocabulary float32 copy of the logits.

``log_softmax(logits).gather(ids)`` materialises (and keeps for backward) a ``(B, T, V)``
float32 tensor; with a 49k vocabulary and a few hundred tokens per rollout that is gigabytes
per micro-batch. Here the chosen logit is gathered directly and the normaliser is a
``logsumexp`` over chunks of positions, each chunk recomputed in backward (activation
checkpointing), so at most one ``(B, chunk, V)`` float32 block is alive at a time.
"""

from __future__ import annotations

import torch
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

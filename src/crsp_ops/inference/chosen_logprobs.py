"""Log-probabilities of the chosen tokens, recorded during ``generate`` with one step of memory.

``generate(output_scores=True, output_logits=True)`` keeps every step's full-vocabulary scores
(two ``(B, V)`` float32 tensors per step: 150 MB for 8 rows × 96 steps of a 49k vocabulary) only
for us to gather one entry per row afterwards. :class:`ChosenTokenLogprobs` is a logits processor
that sees the scores at its place in the processor chain; the token chosen at step t is known
at step t + 1 (the last column of ``input_ids``), so it keeps step t's scores until then and
stores ``scores[chosen] - logsumexp(scores)`` — one ``(B,)`` column per step, no host sync.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import LogitsProcessor


class ChosenTokenLogprobs(LogitsProcessor):
    """Record ``log_softmax(scores)[chosen]`` per step; returns the scores unchanged.

    Args:
        copy: keep a copy of the scores (into one reused buffer) rather than the tensor itself;
            needed when a later processor modifies the scores in place (in-place steering).
    """

    def __init__(self, *, copy: bool) -> None:
        self._copy = copy
        self._pending: torch.Tensor | None = None  # (B, V) scores of the newest step
        self._columns: list[torch.Tensor] = []  # (B, 1) per finished step

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Close the previous step with its chosen token, then hold this step's scores."""
        if self._pending is not None:
            self._columns.append(_gathered(self._pending, input_ids[:, -1]))
        if not self._copy:
            self._pending = scores
        elif self._pending is None or self._pending.shape != scores.shape:
            self._pending = scores.detach().clone()
        else:
            self._pending.copy_(scores)
        return scores

    def logprobs(self, new_tokens: torch.Tensor) -> np.ndarray:
        """Return the ``(B, S)`` float32 logprobs of ``new_tokens (B, S)``, the generated ids.

        ``generate`` may run processors for a step it later undoes (deferred stop checks), so
        there can be more recorded steps than S; there is never fewer than S - 1.
        """
        steps = new_tokens.shape[1]
        columns = self._columns[:steps]
        if len(columns) < steps:
            if self._pending is None or len(columns) != steps - 1:
                raise RuntimeError(f"recorded {len(self._columns)} steps for {steps} tokens")
            columns = [*columns, _gathered(self._pending, new_tokens[:, -1])]
        if not columns:
            return np.zeros((new_tokens.shape[0], 0), dtype=np.float32)
        return torch.cat(columns, dim=1).cpu().numpy().astype(np.float32)  # (B, S)


def _gathered(scores: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """``(B, 1)`` log-softmax of ``scores (B, V)`` at ``chosen (B,)``, in float32."""
    scores = scores.float()
    picked = scores.gather(1, chosen[:, None].to(scores.device))  # (B, 1)
    return picked - torch.logsumexp(scores, dim=-1, keepdim=True)

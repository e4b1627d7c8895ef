"""Hugging Face ``transformers`` adapter: cluster steering as a ``LogitsProcessor``.

Usage::

    processor = ClusterBiasLogitsProcessor(token_clusters, deltas)
    model.generate(**inputs, logits_processor=LogitsProcessorList([processor]))

``generate`` runs custom processors after its built-ins (repetition penalty, ...) and before
temperature/top-k/top-p, so sampling draws from ``softmax((z + bias) / T)`` as on the servers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import LogitsProcessor

from crsp_ops.steering.bias import ClusterBias, add_bias_


class ClusterBiasLogitsProcessor(LogitsProcessor):
    """Add ``deltas[token_clusters]`` to the next-token scores.

    Args:
        token_clusters: ``(V,)`` cluster id of each tokenizer vocab id. Scores wider than V
            (a model vocabulary padded beyond the tokenizer's) get no bias on the extra columns.
        deltas: ``(K,)`` per-cluster deltas shared by every row, or ``(B, K)`` one row per
            batch row (B must then equal the number of score rows, e.g. batch × beams).
        n_clusters: number of cluster ids K; defaults to the length of a deltas row.
        in_place: add into float32 scores in place (no per-step allocation). Only when
            nothing else keeps the scores tensor: ``generate(output_logits=True)`` stores the
            same tensor as the raw logits, which must stay unsteered.
    """

    def __init__(
        self,
        token_clusters: np.ndarray | torch.Tensor | Sequence[int],
        deltas: Sequence[float] | Sequence[Sequence[float]] | torch.Tensor | np.ndarray,
        n_clusters: int | None = None,
        *,
        in_place: bool = False,
    ):
        rows = np.asarray(deltas, dtype=np.float64)
        if rows.ndim not in (1, 2):
            raise ValueError(f"deltas must be (K,) or (B, K), got shape {rows.shape}")
        self._per_row = rows.ndim == 2
        self._rows = [tuple(row) for row in np.atleast_2d(rows).tolist()]
        self._core = ClusterBias(token_clusters, n_clusters or rows.shape[-1])
        self._in_place = in_place

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Return ``scores (B, W)`` plus the bias, as float32 on the scores' device.

        The add happens in float32 whatever the scores' dtype: in bf16/fp16 the rounding of
        ``z + d`` creates ties that can move the argmax even when every delta is the same
        (a uniform shift must never change a greedy choice). Later processors and the sampler
        take float32 scores.
        """
        if self._per_row and len(self._rows) != scores.shape[0]:
            raise ValueError(f"{len(self._rows)} deltas rows for {scores.shape[0]} score rows")
        # One shared row yields a (V,) bias broadcast over every score row.
        bias = self._core.bias_for(self._rows, device=scores.device, dtype=torch.float32)
        if bias is None:
            return scores
        # The bias is a cached float32 row on the scores' device: one add, no host sync.
        if self._in_place and scores.dtype == torch.float32:
            return add_bias_(scores, bias)
        # else a float32 copy: generate() stores the same tensor as the raw logits
        # (output_logits=True) after calling the processors, and those must stay unsteered.
        return add_bias_(scores.to(torch.float32, copy=True), bias)

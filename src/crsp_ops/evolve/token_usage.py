"""Per-cluster token usage of answers, and how it differs between long/short, correct/incorrect.

This is the evidence the offline proposer reads (the same the reflector sees as text). Counts
come from the response token ids when the records carry them (``token_ids``), else from the
re-tokenised answer text (EOS is then absent: generation stopped on it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Tokenize = Callable[[str], Sequence[int]]


class ClusterCounter:
    """Count each answer's tokens per steering cluster.

    Args:
        token_clusters: ``(V,)`` cluster id of every vocab id.
        n_clusters: number of cluster ids.
        tokenize: text → token ids, used when a record carries no ``token_ids``.
    """

    def __init__(self, token_clusters: np.ndarray, n_clusters: int, tokenize: Tokenize) -> None:
        self.table = np.asarray(token_clusters, dtype=np.int64)
        self.n_clusters = n_clusters
        self.tokenize = tokenize

    def counts(self, record: object) -> np.ndarray:
        """``(K,)`` token count per cluster of one answer."""
        ids = getattr(record, "token_ids", None)
        if ids is None:
            ids = self.tokenize(record.answer)  # type: ignore[attr-defined]
        ids = np.asarray(list(ids), dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < self.table.shape[0])]
        return np.bincount(self.table[ids], minlength=self.n_clusters).astype(np.float64)


@dataclass(frozen=True)
class UsageContrast:
    """Per-cluster usage contrasts of one minibatch (each ``(K,)``, token fractions)."""

    long_minus_short: np.ndarray  # share of a cluster in long answers minus in short ones
    # extra tokens of a cluster in long answers (mean count long - short) / the length gap
    long_excess: np.ndarray
    correct_minus_incorrect: np.ndarray  # share in correct answers minus in incorrect ones
    long_correct_rate: float  # correctness of the long half
    short_correct_rate: float  # correctness of the short half


def usage_contrast(
    counts: np.ndarray, lengths: Sequence[int], correct: Sequence[bool]
) -> UsageContrast:
    """Contrast cluster shares between answer groups.

    Args:
        counts: ``(N, K)`` token count per answer and cluster.
        lengths: ``(N,)`` response lengths in tokens (the split at the median defines long).
        correct: ``(N,)`` correctness of each answer.

    >>> c = usage_contrast(np.array([[1., 3.], [3., 1.]]), [4, 40], [True, False])
    >>> c.long_minus_short.tolist(), c.correct_minus_incorrect.tolist()
    ([0.5, -0.5], [-0.5, 0.5])

    Padding (cluster 1) makes answers long; the content (cluster 0) is the same in both. Its
    share falls in long answers, but it carries none of the extra length:

    >>> c = usage_contrast(np.array([[4., 0.], [4., 12.]]), [4, 16], [True, True])
    >>> c.long_minus_short.tolist(), c.long_excess.tolist()
    ([-0.75, 0.75], [0.0, 1.0])
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[0] != len(lengths) or len(lengths) != len(correct):
        raise ValueError("counts (N, K), lengths (N,) and correct (N,) must agree")
    shares = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)  # (N, K)
    lengths_arr = np.asarray(lengths, dtype=np.float64)
    correct_arr = np.asarray(correct, dtype=bool)
    long = lengths_arr > np.median(lengths_arr)
    zeros = np.zeros(counts.shape[1])
    excess = _group_gap(counts, long, zeros)  # (K,) extra tokens per long answer
    gap = excess.sum()
    return UsageContrast(
        long_minus_short=_group_gap(shares, long, zeros),
        long_excess=excess / gap if gap > 0 else zeros,
        correct_minus_incorrect=_group_gap(shares, correct_arr, zeros),
        long_correct_rate=float(correct_arr[long].mean()) if long.any() else 0.0,
        short_correct_rate=float(correct_arr[~long].mean()) if (~long).any() else 0.0,
    )


def _group_gap(shares: np.ndarray, mask: np.ndarray, empty: np.ndarray) -> np.ndarray:
    if not mask.any() or mask.all():
        return empty
    return shares[mask].mean(axis=0) - shares[~mask].mean(axis=0)

"""The one bias core every engine adapter uses: ``bias = deltas[token_clusters]``.

A processor is data (a ``(V,)`` table and per-cluster deltas); the bias is one gather, cached
per (device, dtype, deltas), so steady decoding costs one ``add`` per step.

Design: docs/design/steering.md#bias.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import torch

from crsp_ops.steering.table import env_table_path, load_table_and_count

DeltasRow = Sequence[float]

_MAX_CACHED_ROWS = 16  # distinct uniform-deltas bias rows kept per table, (V,) floats each


def bias_rows(token_clusters: torch.Tensor, deltas: torch.Tensor) -> torch.Tensor:
    """Gather per-token bias from per-cluster deltas.

    Args:
        token_clusters: ``(V,)`` int64 cluster id of each vocab id.
        deltas: ``(K,)`` or ``(B, K)`` per-cluster deltas.

    Returns:
        ``(V,)`` or ``(B, V)`` bias, same dtype and device as ``deltas``.

    >>> bias_rows(torch.tensor([0, 2, 1, 2]), torch.tensor([1.0, -1.0, 0.5])).tolist()
    [1.0, 0.5, -1.0, 0.5]
    """
    return deltas.index_select(-1, token_clusters)


def add_bias_(logits: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Add ``bias (V,) | (B, V)`` to the first V columns of ``logits (B, W)`` in place."""
    _biased_view(logits, bias).add_(bias)
    return logits


def add_bias(logits: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return ``logits (B, W)`` + ``bias (V,) | (B, V)`` on the first V columns, as a new tensor."""
    out = logits.clone()
    _biased_view(out, bias).add_(bias)
    return out


def _biased_view(logits: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    width, vocab = logits.shape[-1], bias.shape[-1]
    if width < vocab:
        raise ValueError(
            f"logits have {width} columns but the token→cluster table has {vocab} entries: "
            "the table was built for another tokenizer"
        )
    return logits[..., :vocab]  # (B, V) view; columns beyond the tokenizer keep zero bias


def check_deltas_row(row: DeltasRow, n_clusters: int) -> None:
    """Raise ``ValueError`` unless ``row`` holds ``n_clusters`` finite real numbers."""
    if isinstance(row, (str, bytes, dict)) or not isinstance(row, Sequence):
        raise ValueError(f"deltas must be a list of {n_clusters} numbers, got {type(row).__name__}")
    if len(row) != n_clusters:
        raise ValueError(f"expected {n_clusters} deltas (one per cluster id), got {len(row)}")
    for value in row:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"deltas must be numbers, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"deltas must be finite, got {value!r}")


class ClusterBias:
    """A token→cluster table with cached bias rows: the state behind every adapter.

    Args:
        token_clusters: ``(V,)`` non-negative cluster ids (numpy, torch or a sequence).
        n_clusters: number of cluster ids K; every deltas row must have exactly K entries.
    """

    def __init__(self, token_clusters: np.ndarray | torch.Tensor | Sequence[int], n_clusters: int):
        if isinstance(token_clusters, torch.Tensor):
            table = token_clusters.detach().to("cpu", torch.int64).flatten().clone()
        else:
            table = torch.from_numpy(np.array(token_clusters, dtype=np.int64)).flatten()  # a copy
        if table.numel() and (int(table.min()) < 0 or int(table.max()) >= n_clusters):
            raise ValueError(f"table ids must lie in [0, {n_clusters}), got max {int(table.max())}")
        self.table = table  # (V,) on CPU
        self.n_clusters = n_clusters
        self._tables: dict[torch.device, torch.Tensor] = {}
        self._rows: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._last_batch: tuple[tuple, torch.Tensor] | None = None

    @property
    def vocab_size(self) -> int:
        """Number of table entries (tokenizer vocabulary size)."""
        return int(self.table.numel())

    def bias_for(
        self, rows: Sequence[DeltasRow | None], *, device: torch.device, dtype: torch.dtype
    ) -> torch.Tensor | None:
        """Return the bias for a batch whose row i is steered by ``rows[i]`` (``None``: no bias).

        Returns:
            ``None`` when no row is steered; a ``(V,)`` row to broadcast when all rows share
            the same deltas; else ``(B, V)``. Results are cached, and deltas are validated on
            a cache miss only.
        """
        keys = [None if row is None else tuple(row) for row in rows]
        if all(key is None for key in keys):
            return None
        device = torch.device(device)
        first = keys[0]
        if first is not None and all(key == first for key in keys):
            return self._uniform_row(first, device, dtype)
        batch_key = (device, dtype, tuple(keys))
        if self._last_batch is None or self._last_batch[0] != batch_key:
            zeros = (0.0,) * self.n_clusters
            for key in keys:
                if key is not None:
                    check_deltas_row(key, self.n_clusters)
            deltas = torch.tensor(
                [zeros if key is None else key for key in keys], dtype=torch.float32, device=device
            )  # (B, K)
            bias = bias_rows(self._table_on(device), deltas).to(dtype)  # (B, V)
            self._last_batch = (batch_key, bias)
        return self._last_batch[1]

    def apply_(self, logits: torch.Tensor, rows: Sequence[DeltasRow | None]) -> torch.Tensor:
        """Add the bias of ``rows`` to ``logits (B, W)`` in place and return ``logits``."""
        if len(rows) != logits.shape[0]:
            raise ValueError(f"{len(rows)} deltas rows for {logits.shape[0]} logits rows")
        bias = self.bias_for(rows, device=logits.device, dtype=logits.dtype)
        return logits if bias is None else add_bias_(logits, bias)

    def _uniform_row(self, key: tuple, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        cache_key = (device, dtype, key)
        row = self._rows.get(cache_key)
        if row is None:
            check_deltas_row(key, self.n_clusters)
            deltas = torch.tensor(key, dtype=torch.float32, device=device)  # (K,)
            row = bias_rows(self._table_on(device), deltas).to(dtype)  # (V,)
            self._rows[cache_key] = row
            if len(self._rows) > _MAX_CACHED_ROWS:
                self._rows.popitem(last=False)
        else:
            self._rows.move_to_end(cache_key)
        return row

    def _table_on(self, device: torch.device) -> torch.Tensor:
        if device not in self._tables:
            self._tables[device] = self.table.to(device)
        return self._tables[device]


STEER_DELTAS_KEY = "steer_deltas"
"""Request field carrying a flat list of per-cluster deltas (SGLang ``custom_params``, vLLM
``vllm_xargs``)."""

_SERVER_CORES: dict[str, ClusterBias] = {}


def cluster_bias_from_env() -> ClusterBias:
    """Return the process-wide ``ClusterBias`` of the table named by ``TOKEN_CLUSTERS_ENV``.

    Servers create processor instances freely (SGLang one per batch), so the table and the bias
    cache live here, once per process and table path.
    """
    path = env_table_path()
    if path not in _SERVER_CORES:
        _SERVER_CORES[path] = ClusterBias(*load_table_and_count(path))
    return _SERVER_CORES[path]

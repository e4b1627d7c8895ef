"""Step metrics across ``accelerate`` processes: every rank's values reduced before logging.

Each rank samples its own episodes, so rank 0's metrics alone describe half a step. Every rank
gathers every rank's metric dict; counts and throughput add up, everything else is the mean
over the ranks that report the key (the global mean when ranks sample equal batches). The
parameter sums of the ranks are gathered too: DDP keeps replicas identical, and
``ddp/param_sum_spread`` (max − min over ranks) is exactly 0 while it does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from accelerate.utils import gather_object

logger = logging.getLogger(__name__)
RANK_SUMMARY = ("rollouts/count", "response_tokens", "loss")  # each rank's own, in the log
SUMMARY_KEYS = ("loss", "kl", "reward/solve/mean", "reward/propose/mean",
                "reward/critique/mean", "perf/step_time_s")

# Per-rank totals whose global value is the sum over ranks, not the mean.
SUMMED = frozenset({"response_tokens", "trained_tokens", "rollouts/count", "rollouts/skipped",
                    "rollouts/truncated", "perf/tokens_per_s", "executor/failures",
                    "dynamic_sampling/flat_groups", "dynamic_sampling/extra_tasks",
                    "dynamic_sampling/extra_samples", "dynamic_sampling/dropped_samples",
                    "dynamic_sampling/unfilled"})


def reduce_rank_metrics(per_rank: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """One dict from every rank's: sums for ``SUMMED`` keys, means for the rest.

    Args:
        per_rank: the metric dict of each rank (keys may differ between ranks).

    Returns:
        The global metrics, keys in first-seen order.

    >>> reduce_rank_metrics([{"loss": 1.0, "trained_tokens": 10.0}, {"loss": 3.0}])
    {'loss': 2.0, 'trained_tokens': 10.0}
    """
    values: dict[str, list[float]] = {}
    for metrics in per_rank:
        for key, value in metrics.items():
            values.setdefault(key, []).append(float(value))
    return {key: sum(items) if key in SUMMED else sum(items) / len(items)
            for key, items in values.items()}


def parameter_sum(model: torch.nn.Module) -> float:
    """Sum of every parameter in float64: equal on ranks whose replicas are identical."""
    with torch.no_grad():
        return float(sum(p.detach().double().sum() for p in model.parameters()).item())


def global_metrics(accelerator: Any, metrics: Mapping[str, float],
                   model: torch.nn.Module | None = None) -> dict[str, float]:
    """Every rank's ``metrics`` reduced (a collective: every rank must call it).

    With one process the metrics are returned as they are. With ``model`` the replicas'
    parameter sums are compared: ``ddp/param_sum`` and ``ddp/param_sum_spread``.
    """
    if accelerator.num_processes == 1:
        return dict(metrics)
    local = dict(metrics)
    if model is not None:
        local["ddp/param_sum"] = parameter_sum(model)
    gathered = gather_object([local])
    reduced = reduce_rank_metrics(gathered)
    if model is not None:
        sums = [m["ddp/param_sum"] for m in gathered]
        reduced["ddp/param_sum_spread"] = max(sums) - min(sums)
    reduced["ddp/num_processes"] = float(accelerator.num_processes)
    return reduced


def log_over_ranks(accelerator: Any, tracker: Any, step: int, metrics: Mapping[str, float],
                   model: Any = None) -> None:
    """Reduce ``metrics`` over the ranks (every rank calls it); the main process logs them.

    With several processes each rank's own ``RANK_SUMMARY`` goes to its log first.
    """
    own = " ".join(f"{k}={metrics[k]:.6g}" for k in RANK_SUMMARY if k in metrics)
    if own and accelerator.num_processes > 1:
        logger.info("rank %d step %d local: %s", accelerator.process_index, step, own)
    metrics = global_metrics(accelerator, metrics, model)
    if metrics and accelerator.is_main_process:
        tracker.log_metrics(metrics, step=step)
        logger.info("step %d: %s", step, summary_line(metrics))


def summary_line(metrics: Mapping[str, float]) -> str:
    """The ``SUMMARY_KEYS`` present (all metrics when none is), for the log.

    A role that answered nothing this step (``response_length/<role>`` 0: a dataset run has
    no proposals or critiques) is left out rather than shown as a 0 reward.

    >>> summary_line({"loss": 0.5, "other": 1.0})
    'loss=0.5'
    >>> summary_line({"loss": 0.5, "reward/solve/mean": 0.25, "response_length/solve": 9.0,
    ...               "reward/critique/mean": 0.0, "response_length/critique": 0.0})
    'loss=0.5 reward/solve/mean=0.25'
    """
    def idle(key: str) -> bool:
        role = key.split("/")[1] if key.startswith("reward/") else None
        return role is not None and metrics.get(f"response_length/{role}") == 0

    return " ".join(f"{k}={metrics[k]:.4g}" for k in SUMMARY_KEYS
                    if k in metrics and not idle(k)) or \
        " ".join(f"{k}={v:.4g}" for k, v in metrics.items())

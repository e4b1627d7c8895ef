"""What an iteration leaves behind (files, metrics, artifacts, the plot), written off the loop.

None of it feeds the next iteration, so a background worker writes it in order, ``state.json``
last (the commit point), while the loop goes on generating.

Design: docs/design/evolve.md#iteration_outputs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.background import BackgroundWorker
from crsp_ops.evolve.iteration import Exchange, IterationRecord, best_composite_so_far
from crsp_ops.evolve.plot import EvolutionPlot
from crsp_ops.evolve.store import (
    DELTAS_BEST,
    DELTAS_CURRENT,
    FRONTIER,
    PLOT,
    PROCESSOR_BEST,
    EvolutionStore,
)
from crsp_ops.steering.deltas import Deltas
from crsp_ops.tracking import Tracker

PLOT_CPU_SHARE = 0.02  # most of the wall time spent drawing the plot
MAX_PLOT_STALENESS_S = 60.0  # without a new best, redraw once the plot is this old


def iteration_metrics(
    record: IterationRecord, reflector_tokens: float, best_composite: float
) -> dict[str, float]:
    """The metrics of one history row.

    Args:
        record: the row.
        reflector_tokens: cumulative reflector tokens after it.
        best_composite: ``best_composite_so_far`` of the history ending at it (monotone); the
            incumbent's re-score on this minibatch is ``incumbent_rescored_composite``.
    """
    metrics = {
        **record.scores,
        "best_composite": best_composite,
        "proposal_failed": float(record.proposal_failed),
        "generation_s": record.generation_s,
        "iteration_s": record.iteration_s,
        **record.proposer_metrics,
        **record.loop_metrics,
    }
    if record.incumbent_scores is not None:
        metrics["incumbent_rescored_composite"] = record.incumbent_scores["composite_score"]
    if "reflector_total_tokens" in record.proposer_metrics:
        metrics["reflector_tokens_cumulative"] = reflector_tokens
    return metrics


@dataclass(frozen=True)
class IterationCommit:
    """Everything one finished iteration writes (snapshots: the loop keeps going)."""

    history: tuple[IterationRecord, ...]  # every finished row, the new one last
    current: Deltas  # deltas the next iteration evaluates
    best: Deltas | None  # new best deltas, None when this iteration did not improve
    summary: str | None  # the proposer's evolving summary (None: it keeps none)
    state: dict[str, Any]  # resume state (a JSON round-trip copy)
    reflector_tokens: float  # cumulative, after this iteration
    frontier: dict[str, Any] | None = None  # Frontier.table() (evolve.frontier), else None


class IterationOutputs:
    """Write, log and plot each iteration on a background worker.

    Design: docs/design/evolve.md#iteration_outputs.

    Args:
        store: the output directory.
        tracker: where metrics and artifacts go.
    """

    def __init__(self, store: EvolutionStore, tracker: Tracker) -> None:
        self.store = store
        self.tracker = tracker
        self._worker = BackgroundWorker("evolve-outputs")
        self._plot: EvolutionPlot | None = None  # built on the worker (matplotlib stays there)
        self._plot_requests = 0
        self._undrawn: tuple[IterationRecord, ...] | None = None
        self._undrawn_best = False  # an undrawn row found new best deltas
        self._next_draw_at = 0.0  # pacing: no redraw for a new best before this
        self._stale_at = 0.0  # redraw without a new best after this

    def exchanges(self, iteration: int, exchanges: Sequence[Exchange]) -> None:
        """Write and log the LLM exchanges behind the proposal of ``iteration``."""
        folder = f"reflector/iter_{iteration:03d}"

        def job() -> None:
            for path in self.store.write_exchanges(iteration, exchanges):
                self.tracker.log_artifact(path, folder)

        self._worker.submit(job)

    def commit(
        self, *, history: Sequence[IterationRecord], current: Deltas, best: Deltas | None,
        summary: str | None, state: dict[str, Any], reflector_tokens: float,
        frontier: dict[str, Any] | None = None,
    ) -> None:
        """Queue the files, metrics and artifacts of the last row of ``history``."""
        commit = IterationCommit(
            history=tuple(history), current=dict(current),
            best=None if best is None else dict(best), summary=summary,
            state=json.loads(json.dumps(state)), reflector_tokens=reflector_tokens,
            frontier=None if frontier is None else json.loads(json.dumps(frontier)),
        )
        self._plot_requests += 1
        request = self._plot_requests
        self._worker.submit(lambda: self._commit(commit, request))

    def close(self, *, raise_errors: bool = True) -> None:
        """Finish every queued job and draw the final plot; see ``BackgroundWorker.close``."""
        self._worker.close(last=self._draw_undrawn, raise_errors=raise_errors)

    @property
    def job_seconds(self) -> list[tuple[float, float]]:
        """``(wall, cpu)`` seconds of each job so far: writing, logging and plotting."""
        return list(self._worker.job_seconds)

    def _commit(self, commit: IterationCommit, request: int) -> None:
        store, tracker, record = self.store, self.tracker, commit.history[-1]
        store.write_current(commit.current)
        if commit.summary is not None:
            store.write_summary(commit.summary)
        if commit.best is not None:
            store.write_best(commit.best)
        if commit.frontier is not None:
            store.write_json(FRONTIER, commit.frontier)
        store.write_history(commit.history)
        store.write_state(commit.state)  # the commit point: after the files it commits
        tracker.log_metrics(
            iteration_metrics(record, commit.reflector_tokens,
                              best_composite_so_far(commit.history)),
            step=record.iteration)
        tracker.log_dict(record.deltas, f"deltas/iter_{record.iteration:03d}.json")
        tracker.log_artifact(store.path(DELTAS_CURRENT))
        if commit.frontier is not None:  # the table of this iteration, and the latest one
            tracker.log_dict(commit.frontier, f"frontier/iter_{record.iteration:03d}.json")
            tracker.log_artifact(store.path(FRONTIER))
        if commit.best is not None:
            tracker.log_artifact(store.path(DELTAS_BEST))
            tracker.log_artifact(store.path(PROCESSOR_BEST))
        self._undrawn_best |= commit.best is not None
        if request == self._plot_requests:  # else a newer row is queued: draw that one
            self._undrawn = commit.history
            now = time.monotonic()
            if (self._undrawn_best and now >= self._next_draw_at) or now >= self._stale_at:
                self._draw_undrawn()

    def _draw_undrawn(self) -> None:
        if self._undrawn is None:
            return
        started = time.monotonic()
        if self._plot is None:
            self._plot = EvolutionPlot()
            started = time.monotonic()  # pace on drawing, not on the one-off import
        self._plot.update(self._undrawn)
        self.tracker.log_artifact(self._plot.save(self.store.path(PLOT)))
        self._undrawn, self._undrawn_best = None, False
        spent = time.monotonic() - started
        self._next_draw_at = time.monotonic() + spent * (1 / PLOT_CPU_SHARE - 1)
        self._stale_at = time.monotonic() + MAX_PLOT_STALENESS_S

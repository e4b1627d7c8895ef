"""The evolution loop: sample, generate + grade with the current deltas, score, propose, persist.

Deltas travel with each generation request (``evaluate``), so an iteration never restarts a
server nor re-clusters the vocabulary. Every iteration ends by writing ``state.json`` (the
commit point), so an interrupted run resumes at the first unfinished iteration with the same
minibatches, history, evolving summary, best deltas and proposer state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.plot import save_evolution_plot
from crsp_ops.evolve.pool import sample_minibatch
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.records import Evidence, IterationRecord, Proposal, score_dict
from crsp_ops.evolve.store import (
    DELTAS_BEST,
    DELTAS_CURRENT,
    PLOT,
    PROCESSOR_BEST,
    EvolutionStore,
)
from crsp_ops.steering.deltas import Deltas
from crsp_ops.tracking import NullTracker, Tracker

logger = logging.getLogger(__name__)

Evaluate = Callable[[Sequence[Any], Deltas], Any]
"""``(examples, deltas) -> MinibatchResult`` (``.records`` and ``.scores``)."""


class ProposalFailedError(RuntimeError):
    """A proposal stayed invalid and ``stop_on_failure`` is set (the iteration was recorded)."""


@dataclass(frozen=True)
class LoopConfig:
    """How long and how the loop runs."""

    iterations: int  # total iterations, resumed ones included
    minibatch_size: int
    seed: int  # minibatch sampling seed
    stop_on_failure: bool  # a failed proposal ends the run instead of retrying the last deltas


@dataclass(frozen=True)
class EvolutionOutcome:
    """What a finished loop hands the driver."""

    history: list[IterationRecord]
    initial_deltas: Deltas
    best_deltas: Deltas
    best_composite: float
    best_iteration: int
    resumed_from: int  # first iteration run by this invocation (0 for a fresh run)


@dataclass
class _LoopState:
    next_iteration: int
    current: Deltas
    initial: Deltas
    best: Deltas
    best_composite: float
    best_iteration: int
    history: list[IterationRecord]
    reflector_tokens: float

    def to_json(self, proposer: Proposer) -> dict[str, Any]:
        return {
            "next_iteration": self.next_iteration,
            "current_deltas": self.current,
            "initial_deltas": self.initial,
            "best": {"deltas": self.best,
                     "composite": self.best_composite if self.best_iteration >= 0 else None,
                     "iteration": self.best_iteration},
            "reflector_tokens": self.reflector_tokens,
            "proposer": {"name": proposer.name, "state": proposer.state_dict()},
        }


def _initial_state(store: EvolutionStore, initial: Deltas, proposer: Proposer) -> _LoopState:
    saved = store.read_state()
    if saved is None:
        fresh = dict(initial)
        return _LoopState(0, fresh, dict(fresh), dict(fresh), float("-inf"), -1, [], 0.0)
    if saved["proposer"]["name"] != proposer.name:
        raise ValueError(
            f"{store.out} was produced by the {saved['proposer']['name']} proposer; "
            f"resume it with the same proposer (not {proposer.name})"
        )
    if saved["initial_deltas"] != dict(initial):
        raise ValueError(f"{store.out}: the initial deltas differ from the run being resumed")
    proposer.load_state_dict(saved["proposer"]["state"])
    best = saved["best"]
    history = [row for row in store.read_history() if row.iteration < saved["next_iteration"]]
    return _LoopState(
        saved["next_iteration"], saved["current_deltas"], saved["initial_deltas"],
        best["deltas"], float(best["composite"]) if best["iteration"] >= 0 else float("-inf"),
        best["iteration"], history, float(saved.get("reflector_tokens", 0.0)),
    )


def run_evolution(
    *,
    pool: Sequence[Any],
    evaluate: Evaluate,
    proposer: Proposer,
    store: EvolutionStore,
    initial_deltas: Deltas,
    cluster_descriptions: Mapping[str, Any],
    config: LoopConfig,
    tracker: Tracker | None = None,
) -> EvolutionOutcome:
    """Run (or resume) the loop until ``config.iterations`` iterations are recorded.

    Args:
        pool: questions minibatches are drawn from (``example.financebench_id`` identifies one).
        evaluate: generates with the given deltas and grades; returns the minibatch result.
        proposer: proposes the next deltas (state restored from ``store`` when resuming).
        store: the output directory; a ``state.json`` there means resume.
        initial_deltas: deltas of iteration 0 (must match a resumed run's).
        cluster_descriptions: what the clusters mean (proposer evidence).
        config: iterations, minibatch size, seed and failure policy.
        tracker: where metrics and artifacts go (default: nowhere).

    Raises:
        ProposalFailedError: a proposal failed and ``config.stop_on_failure`` is set.
        KeyboardInterrupt: after ``deltas_best.json``/``processor_best.py`` were flushed.
    """
    tracker = tracker or NullTracker()
    state = _initial_state(store, initial_deltas, proposer)
    resumed_from = state.next_iteration
    if resumed_from:
        logger.info("resuming %s at iteration %d/%d", store.out, resumed_from, config.iterations)
    else:
        store.write_current(state.current)
    try:
        while state.next_iteration < config.iterations:
            _run_iteration(state, pool, evaluate, proposer, store, cluster_descriptions, config,
                           tracker)
    except BaseException:
        _flush_best(state, store)  # Ctrl+C, SIGTERM or an error: the best is on disk
        raise
    return EvolutionOutcome(
        history=state.history, initial_deltas=state.initial, best_deltas=state.best,
        best_composite=state.best_composite, best_iteration=state.best_iteration,
        resumed_from=resumed_from,
    )


def _flush_best(state: _LoopState, store: EvolutionStore) -> None:
    """Make sure both best files exist (the initial deltas if nothing was scored yet)."""
    if state.best_iteration < 0 or not (
        store.path(DELTAS_BEST).exists() and store.path(PROCESSOR_BEST).exists()
    ):
        store.write_best(state.best)


def _run_iteration(
    state: _LoopState,
    pool: Sequence[Any],
    evaluate: Evaluate,
    proposer: Proposer,
    store: EvolutionStore,
    cluster_descriptions: Mapping[str, Any],
    config: LoopConfig,
    tracker: Tracker,
) -> None:
    iteration = state.next_iteration
    started = time.perf_counter()
    batch = sample_minibatch(
        pool, size=config.minibatch_size, seed=config.seed, iteration=iteration
    )
    result = evaluate(batch, state.current)
    generation_s = time.perf_counter() - started
    scores = score_dict(result.scores)
    improved = scores["composite_score"] > state.best_composite
    if improved:
        state.best, state.best_composite, state.best_iteration = (
            dict(state.current), scores["composite_score"], iteration)
        store.write_best(state.best)
    evidence = Evidence(
        iteration=iteration, deltas=state.current, records=list(result.records), scores=scores,
        best_composite=state.best_composite, cluster_descriptions=dict(cluster_descriptions),
    )
    proposal = proposer.propose(evidence)
    _persist_exchanges(store, tracker, iteration, proposal)
    next_deltas = proposal.deltas if proposal.deltas is not None else dict(state.current)
    if proposal.failed:
        logger.warning("iteration %d: proposal failed (%s); keeping the last good deltas",
                       iteration, proposal.error)
    state.reflector_tokens += proposal.metrics.get("reflector_total_tokens", 0.0)
    record = IterationRecord(
        iteration=iteration, deltas=dict(state.current), scores=scores,
        best_composite_score=state.best_composite, improved=improved,
        example_ids=[str(getattr(ex, "financebench_id", i)) for i, ex in enumerate(batch)],
        proposal_failed=proposal.failed, proposal_error=proposal.error, summary=proposal.summary,
        generation_s=generation_s, iteration_s=0.0, proposer_metrics=dict(proposal.metrics),
    )
    state.history.append(record)
    state.current = dict(next_deltas)
    state.next_iteration = iteration + 1
    _persist_iteration(state, store, proposer, tracker, improved, started)
    logger.info(
        "iteration %d: composite %.4f (best %.4f) correctness %.3f mean tokens %.1f%s",
        iteration, scores["composite_score"], state.best_composite, scores["correctness_ratio"],
        scores["mean_token_length"], " [proposal failed]" if proposal.failed else "",
    )
    if proposal.failed and config.stop_on_failure:
        raise ProposalFailedError(f"iteration {iteration}: {proposal.error}")


def _persist_exchanges(
    store: EvolutionStore, tracker: Tracker, iteration: int, proposal: Proposal
) -> None:
    if not proposal.exchanges:
        return
    for path in store.write_exchanges(iteration, proposal.exchanges):
        tracker.log_artifact(path, f"reflector/iter_{iteration:03d}")


def _persist_iteration(
    state: _LoopState, store: EvolutionStore, proposer: Proposer, tracker: Tracker,
    improved: bool, started: float,
) -> None:
    record = state.history[-1]
    iteration = record.iteration
    store.write_current(state.current)
    summary = getattr(proposer, "summary_text", None)
    if summary is not None:
        store.write_summary(summary)
    save_evolution_plot(state.history, store.path(PLOT))
    # iteration_s covers everything but the state commit and the tracker calls below.
    record = _with_iteration_time(record, time.perf_counter() - started)
    state.history[-1] = record
    store.write_history(state.history)
    store.write_state(state.to_json(proposer))
    tracker.log_metrics(iteration_metrics(record, state.reflector_tokens), step=iteration)
    tracker.log_dict(record.deltas, f"deltas/iter_{iteration:03d}.json")
    tracker.log_artifact(store.path(PLOT))
    tracker.log_artifact(store.path(DELTAS_CURRENT))
    if improved:
        tracker.log_artifact(store.path(DELTAS_BEST))
        tracker.log_artifact(store.path(PROCESSOR_BEST))


def _with_iteration_time(record: IterationRecord, seconds: float) -> IterationRecord:
    row = record.to_json()
    row["iteration_s"] = seconds
    return IterationRecord.from_json(row)


def iteration_metrics(record: IterationRecord, reflector_tokens: float) -> dict[str, float]:
    """The metrics of one history row (``reflector_tokens``: cumulative reflector tokens)."""
    metrics = {
        **record.scores,
        "best_composite_score": record.best_composite_score,
        "proposal_failed": float(record.proposal_failed),
        "generation_s": record.generation_s,
        "iteration_s": record.iteration_s,
        **record.proposer_metrics,
    }
    if "reflector_total_tokens" in record.proposer_metrics:
        metrics["reflector_tokens_cumulative"] = reflector_tokens
    return metrics

"""The evolution loop: sample, generate + grade with the current deltas, score, propose, persist.

Deltas travel with each generation request (``evaluate``), so an iteration never restarts a
server nor re-clusters the vocabulary. Every iteration ends by writing ``state.json`` (the
commit point), so an interrupted run resumes at the first unfinished iteration with the same
minibatches, history, evolving summary, best deltas and proposer state.

Paired judging (``paired_best``): minibatches differ in difficulty, so a composite measured on
one minibatch says little against the best's composite on another (one easy early minibatch
would block every later improvement). The loop therefore re-scores the best deltas on the
candidate's minibatch and adopts the candidate only when it wins there; decoding is greedy by
default, so the difference is the deltas' alone. The extra generation is skipped while the
evaluated deltas are the best ones. Paired, the loop can also refuse a candidate that turned
more than ``LoopConfig.max_lost_correct`` of the best's correct answers wrong, however much
shorter it is (``acceptance``).

Pareto frontier (``LoopConfig.frontier``, see ``frontier_search``): every candidate's
per-example scores are kept, the proposer works from a frontier parent and complementary
frontier candidates are merged; the scalar best above still picks ``deltas_best.json``.
Generations are counted (``rollouts``; ``EvolutionOutcome.answers_generated``) so searches
compare at an equal budget of generated answers (``LoopConfig.max_rollouts``).

Files, metrics, artifacts and the plot of an iteration go to ``IterationOutputs``, which writes
them on a background worker while the next minibatch generates (``state.json`` still last); it
is drained before ``run_evolution`` returns or re-raises, so everything is on disk and logged
afterwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crsp_ops.evolve.acceptance import ACCEPTANCE_RULES, GUARD_OFF
from crsp_ops.evolve.inputs import sample_minibatch
from crsp_ops.evolve.iteration import (
    Evidence,
    IterationRecord,
    Proposal,
    best_composite_so_far,
    score_dict,
)
from crsp_ops.evolve.iteration_outputs import IterationOutputs
from crsp_ops.evolve.judging import Evaluate, judge_on_minibatch
from crsp_ops.evolve.loop_state import LoopState, start_state
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.steering.deltas import Deltas
from crsp_ops.tracking import NullTracker, Tracker
from crsp_ops.tracking.progress import progress_bar

logger = logging.getLogger(__name__)

class ProposalFailedError(RuntimeError):
    """A proposal stayed invalid and ``stop_on_failure`` is set (the iteration was recorded)."""


@dataclass(frozen=True)
class LoopConfig:
    """How long and how the loop runs."""

    iterations: int  # total iterations, resumed ones included
    minibatch_size: int
    seed: int  # minibatch sampling seed
    stop_on_failure: bool  # a failed proposal ends the run instead of retrying the last deltas
    paired_best: bool  # judge new deltas against the best re-scored on the same minibatch
    frontier: bool = False  # keep a Pareto frontier of candidates (frontier_search)
    max_rollouts: int = 0  # stop once this many answers were generated (0: no limit)
    # paired: refuse a candidate that lost more of the best's correct answers (-1: no guard)
    max_lost_correct: int = GUARD_OFF
    # paired: "composite" (a higher composite) or "shorter" (shorter and as correct)
    acceptance: str = "composite"

    def __post_init__(self) -> None:
        if self.acceptance not in ACCEPTANCE_RULES:
            raise ValueError(f"acceptance must be one of {ACCEPTANCE_RULES}, "
                             f"got {self.acceptance!r}")

    def answer_budget(self) -> int:
        """Answers ``iterations`` generate when every candidate differs from the best.

        Iteration 0 has no best to re-score; paired, every later one also re-scores the best.
        Frontier parents and ``max_rollouts`` are not modelled (``answers_generated`` counts).

        >>> LoopConfig(8, 8, 0, False, paired_best=True).answer_budget()
        120
        """
        per_iteration = self.minibatch_size * (2 if self.paired_best else 1)
        return self.minibatch_size + (self.iterations - 1) * per_iteration


@dataclass(frozen=True)
class EvolutionOutcome:
    """What a finished loop hands the driver."""

    history: list[IterationRecord]
    initial_deltas: Deltas
    best_deltas: Deltas
    best_composite: float
    best_iteration: int
    resumed_from: int  # first iteration run by this invocation (0 for a fresh run)
    # (wall, CPU) seconds of each output job (files, metrics, artifacts, plot): the fixed cost
    output_job_seconds: list[tuple[float, float]] = field(default_factory=list)
    answers_generated: int = 0  # every answer generated by the search, resumed runs included

    def describe_best(self) -> str:
        """Which iteration's deltas won and the minibatch composite they had when adopted.

        When the incumbent is re-scored on each new minibatch (paired runs), also their score
        on the last one.
        """
        if self.best_iteration < 0:
            return "no iteration ran (the shared Optuna budget was spent)"
        line = (f"best deltas: iteration {self.best_iteration}, minibatch composite "
                f"{best_composite_so_far(self.history):.4f} when adopted")
        last = self.history[-1] if self.history else None
        if last is not None and last.incumbent_scores is not None:
            line += (f", {last.incumbent_scores['composite_score']:.4f} re-scored on iteration "
                     f"{last.iteration}'s minibatch")
        return line


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

    The proposer picks what the first iteration evaluates (``Proposer.begin``) and may end the
    run earlier (``Proposal.stop``, or ``begin`` returning ``None``): a shared budget is spent.

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
        KeyboardInterrupt: after ``Proposer.release``, and after ``deltas_best.json``/
            ``processor_best.py`` were rewritten from the last committed state
            (``state.json``; the initial deltas before any commit).
    """
    state = start_state(store, initial_deltas, proposer, seed=config.seed,
                        frontier=config.frontier)
    counted = _counting(state, evaluate)
    resumed_from = state.next_iteration
    if resumed_from:
        logger.info("resuming %s at iteration %d/%d", store.out, resumed_from, config.iterations)
    outputs = IterationOutputs(store, tracker or NullTracker())
    bar = progress_bar(total=config.iterations, desc="evolve", unit="iter",
                       initial=resumed_from)
    try:
        running = state.next_iteration < config.iterations and _begin(state, proposer)
        store.write_current(state.current)
        while running and state.next_iteration < config.iterations and not (
                config.max_rollouts and state.rollouts >= config.max_rollouts):
            running = _run_iteration(state, pool, counted, proposer, cluster_descriptions,
                                     config, outputs)
            bar.update(1)
            bar.set_postfix_str(f"best {best_composite_so_far(state.history):.4f}, "
                                f"{state.rollouts} rollouts")
    except BaseException:
        bar.close()
        _unwind(state, proposer, outputs, store)
        raise
    bar.close()
    outputs.close()
    return _outcome(state, resumed_from, outputs)


def _outcome(state: LoopState, resumed_from: int, outputs: IterationOutputs) -> EvolutionOutcome:
    """What the finished loop hands the driver (``outputs`` already closed)."""
    return EvolutionOutcome(
        history=state.history, initial_deltas=state.initial, best_deltas=state.best,
        best_composite=state.best_composite, best_iteration=state.best_iteration,
        resumed_from=resumed_from, output_job_seconds=outputs.job_seconds,
        answers_generated=state.rollouts,
    )


def _counting(state: LoopState, evaluate: Evaluate) -> Evaluate:
    """``evaluate`` that adds the examples of every call to ``state.rollouts``."""

    def counted(examples: Sequence[Any], deltas: Deltas) -> Any:
        state.rollouts += len(examples)
        return evaluate(examples, deltas)

    return counted


def _unwind(
    state: LoopState, proposer: Proposer, outputs: IterationOutputs, store: EvolutionStore
) -> None:
    """Clean up an interrupted or failed run: release the proposer, flush, rewrite the best."""
    _release(proposer)
    outputs.close(raise_errors=False)  # Ctrl+C, SIGTERM or an error: flush what is queued
    # ... and the best files from committed state only: an improvement found by the
    # interrupted iteration is not in history.json nor state.json, so it is not reported.
    committed = store.committed_best()
    store.write_best(state.initial if committed is None else committed)


def _release(proposer: Proposer) -> None:
    """``proposer.release()`` while unwinding: its own error is logged, never raised."""
    try:
        proposer.release()
    except Exception as error:  # noqa: BLE001 - the error being unwound matters more
        logger.warning("the %s proposer could not release its claim: %s", proposer.name, error)


def _begin(state: LoopState, proposer: Proposer) -> bool:
    """Let the proposer pick what the first iteration of this invocation evaluates."""
    first = proposer.begin(state.current)
    if first is None:
        logger.info("the %s proposer has nothing left to evaluate; no iteration runs",
                    proposer.name)
        return False
    state.current = dict(first)
    return True


def _run_iteration(
    state: LoopState,
    pool: Sequence[Any],
    evaluate: Evaluate,
    proposer: Proposer,
    cluster_descriptions: Mapping[str, Any],
    config: LoopConfig,
    outputs: IterationOutputs,
) -> bool:
    """Run one iteration and commit it; ``False`` when the proposer asked to stop."""
    iteration = state.next_iteration
    started = time.perf_counter()
    batch = sample_minibatch(
        pool, size=config.minibatch_size, seed=config.seed, iteration=iteration
    )
    judged = judge_on_minibatch(state, batch, evaluate, started, paired=config.paired_best,
                                acceptance=config.acceptance,
                                max_lost_correct=config.max_lost_correct)
    scores, improved = judged.scores, judged.improved
    evidence = Evidence(
        iteration=iteration, deltas=state.current, records=list(judged.result.records),
        scores=scores, best_composite=state.best_composite,
        cluster_descriptions=dict(cluster_descriptions), improved=improved,
        final=iteration + 1 >= config.iterations,
    )
    loop_metrics: dict[str, float] = ({} if judged.lost is None
                                      else {"lost_correct": float(judged.lost)})
    if state.search is None:
        proposal = proposer.propose(evidence)
    else:
        proposal = _frontier_proposal(state, evidence, batch, evaluate, judged.result,
                                      judged.incumbent_run, proposer, loop_metrics)
    loop_metrics["rollouts_cumulative"] = float(state.rollouts)
    if proposal.exchanges:
        outputs.exchanges(iteration, proposal.exchanges)
    next_deltas = proposal.deltas if proposal.deltas is not None else dict(state.current)
    if proposal.failed:
        logger.warning("iteration %d: proposal failed (%s); keeping the last good deltas",
                       iteration, proposal.error)
    state.reflector_tokens += proposal.metrics.get("reflector_total_tokens", 0.0)
    # iteration_s: the whole iteration up to handing its outputs to the background worker.
    state.history.append(IterationRecord(
        iteration=iteration, deltas=dict(state.current), scores=scores,
        best_composite_score=state.best_composite, improved=improved,
        example_ids=[str(getattr(ex, "financebench_id", i)) for i, ex in enumerate(batch)],
        proposal_failed=proposal.failed, proposal_error=proposal.error, summary=proposal.summary,
        generation_s=judged.generation_s, iteration_s=time.perf_counter() - started,
        proposer_metrics=dict(proposal.metrics), incumbent_scores=judged.incumbent,
        loop_metrics=loop_metrics,
    ))
    state.current = dict(next_deltas)
    state.next_iteration = iteration + 1
    _commit(state, proposer, outputs, improved=improved)
    return _report(iteration, scores, state, proposal, proposer, config)


def _commit(
    state: LoopState, proposer: Proposer, outputs: IterationOutputs, *, improved: bool
) -> None:
    """Hand the recorded iteration to the outputs worker (``state.json`` is written last)."""
    outputs.commit(
        history=state.history, current=state.current, best=state.best if improved else None,
        summary=getattr(proposer, "summary_text", None), state=state.to_json(proposer),
        reflector_tokens=state.reflector_tokens,
        frontier=None if state.search is None else state.search.frontier.table(),
    )


def _report(
    iteration: int, scores: Mapping[str, float], state: LoopState, proposal: Proposal,
    proposer: Proposer, config: LoopConfig,
) -> bool:
    """Log a committed iteration; raise on a failed proposal if told to, else ``not stop``."""
    # paired: the best deltas were scored on this very minibatch (comparable numbers)
    logger.info(
        "iteration %d: composite %.4f (best %.4f%s) correctness %.3f mean tokens %.1f%s",
        iteration, scores["composite_score"], state.best_composite,
        " on this minibatch" if config.paired_best else "", scores["correctness_ratio"],
        scores["mean_token_length"], " [proposal failed]" if proposal.failed else "",
    )
    if proposal.failed and config.stop_on_failure:
        raise ProposalFailedError(f"iteration {iteration}: {proposal.error}")
    if proposal.stop:
        logger.info("iteration %d: the %s proposer has nothing left to propose; the run ends",
                    iteration, proposer.name)
    return not proposal.stop


def _frontier_proposal(
    state: LoopState, evidence: Evidence, batch: Sequence[Any], evaluate: Evaluate,
    result: Any, incumbent: tuple[Deltas, Any] | None, proposer: Proposer,
    loop_metrics: dict[str, float],
) -> Proposal:
    """Record the iteration in the frontier; a merge, or the proposer's step from a parent."""
    search = state.search
    assert search is not None
    child = search.observe(evidence.iteration, evidence.deltas, result, incumbent)
    step = search.next_step(evidence.iteration, child=child, child_result=result, batch=batch,
                            evaluate=evaluate, incumbent=incumbent)
    search.next_parents = step.parents
    loop_metrics.update(search.metrics())
    loop_metrics["frontier_merge"] = float(step.merged is not None)
    if step.merged is not None:
        return Proposal(deltas=step.merged, summary="")
    from_parent = Evidence(
        iteration=evidence.iteration, deltas=step.parent_deltas,
        records=list(step.parent_result.records), scores=score_dict(step.parent_result.scores),
        best_composite=evidence.best_composite,
        cluster_descriptions=evidence.cluster_descriptions,
        # a parent other than the evaluated deltas is a new base for the proposer
        improved=evidence.improved or step.parents[0] != child,
        frontier_lessons=search.lessons(state.initial),
    )
    proposal = proposer.propose(from_parent)
    search.frontier.set_lesson(step.parents[0], proposal.summary)
    return proposal


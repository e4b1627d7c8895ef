"""Judge an iteration's deltas on its minibatch: evaluate them (paired: the best too), adopt one.

Paired (``LoopConfig.paired_best``), the best deltas are re-scored on the same minibatch unless
they are the evaluated ones, and the winner is decided by ``acceptance.adopt_candidate``; the
loop's module docstring explains why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.acceptance import adopt_candidate, lost_correct, shorter_and_as_correct
from crsp_ops.evolve.iteration import score_dict
from crsp_ops.evolve.loop_state import LoopState
from crsp_ops.steering.deltas import Deltas

Evaluate = Callable[[Sequence[Any], Deltas], Any]
"""``(examples, deltas) -> MinibatchResult`` (``.records`` and ``.scores``)."""


@dataclass(frozen=True)
class Judged:
    """The evaluated deltas' minibatch result, and whether they became the best."""

    result: Any  # the evaluated deltas' minibatch result
    scores: dict[str, float]
    incumbent_run: tuple[Deltas, Any] | None  # the best deltas and their result (paired)
    incumbent: dict[str, float] | None  # the best's scores on this minibatch (paired)
    generation_s: float  # from the iteration's start to the last generation
    lost: int | None  # the best's correct answers the evaluated deltas lost (paired)
    improved: bool


def judge_on_minibatch(
    state: LoopState, batch: Sequence[Any], evaluate: Evaluate, started: float, *,
    paired: bool, acceptance: str, max_lost_correct: int,
) -> Judged:
    """Evaluate ``state.current`` (and, paired, the best) on ``batch``; adopt a winner.

    Args:
        state: the loop state; its best deltas and composite are updated in place.
        batch: the iteration's minibatch.
        evaluate: generates and grades (``(examples, deltas) -> MinibatchResult``).
        started: ``time.perf_counter()`` at the iteration's start (for ``generation_s``).
        paired: re-score the best deltas on ``batch`` and judge against that.
        acceptance: ``"composite"`` or ``"shorter"`` (``LoopConfig.acceptance``).
        max_lost_correct: the lost-answer guard (``LoopConfig.max_lost_correct``).
    """
    result = evaluate(batch, state.current)
    scores = score_dict(result.scores)
    incumbent_run = _incumbent_result(state, batch, evaluate, result, paired=paired)
    incumbent = None if incumbent_run is None else score_dict(incumbent_run[1].scores)
    generation_s = time.perf_counter() - started
    lost = None if incumbent_run is None else lost_correct(result.records,
                                                            incumbent_run[1].records)
    shorter = (shorter_and_as_correct(result.records, incumbent_run[1].records)
               if acceptance == "shorter" and incumbent_run is not None else None)
    improved = adopt_candidate(
        scores["composite_score"],
        state.best_composite if incumbent is None else incumbent["composite_score"],
        lost=lost, max_lost_correct=max_lost_correct, shorter=shorter)
    if improved:
        state.best, state.best_composite, state.best_iteration = (
            dict(state.current), scores["composite_score"], state.next_iteration)
    elif incumbent is not None:
        state.best_composite = incumbent["composite_score"]  # the best, on this minibatch
    return Judged(result, scores, incumbent_run, incumbent, generation_s, lost, improved)


def _incumbent_result(
    state: LoopState, batch: Sequence[Any], evaluate: Evaluate, result: Any, *, paired: bool,
) -> tuple[Deltas, Any] | None:
    """The best deltas and their result on ``batch`` (``None``: unpaired, or no best yet)."""
    if not paired or state.best_iteration < 0:
        return None
    if dict(state.current) == dict(state.best):
        return dict(state.best), result  # the same deltas on the same questions: no re-run
    return dict(state.best), evaluate(batch, state.best)

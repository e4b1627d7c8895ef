"""Whether a candidate replaces the best deltas, judged on the same minibatch (pure).

Besides the composite, a paired guard refuses a candidate that lost more than
``evolve.max_lost_correct`` of the incumbent's correct answers (-1: off).

Design: docs/design/evolve.md#acceptance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

GUARD_OFF = -1  # evolve.max_lost_correct value that disables the guard
ACCEPTANCE_RULES = ("composite", "shorter")  # evolve.acceptance


def lost_correct(candidate: Sequence[Any], incumbent: Sequence[Any]) -> int:
    """Questions the incumbent answered correctly and the candidate did not (by ``example_id``).

    Args:
        candidate: graded records (``example_id``, ``is_correct``) of the candidate.
        incumbent: the incumbent's records on the same questions.

    >>> from types import SimpleNamespace as R
    >>> lost_correct([R(example_id="a", is_correct=False), R(example_id="b", is_correct=True)],
    ...              [R(example_id="b", is_correct=False), R(example_id="a", is_correct=True)])
    1
    """
    before = {str(r.example_id): bool(r.is_correct) for r in incumbent}
    missing = [str(r.example_id) for r in candidate if str(r.example_id) not in before]
    if missing:
        raise ValueError(f"the incumbent did not answer {missing[:3]}: not the same minibatch")
    return sum(before[str(r.example_id)] and not r.is_correct for r in candidate)


def adopt_candidate(
    candidate_composite: float, best_composite: float, *, lost: int | None = None,
    max_lost_correct: int = GUARD_OFF, shorter: bool | None = None,
) -> bool:
    """The candidate becomes the best: it wins, and (guard on) lost few answers.

    Args:
        candidate_composite: the candidate's composite on this minibatch.
        best_composite: the incumbent's composite (on this minibatch when paired).
        lost: ``lost_correct`` of the candidate against the incumbent (``None``: unpaired, or
            nothing to compare with; the guard then does not apply).
        max_lost_correct: the most lost answers a candidate may have (``GUARD_OFF``: any).
        shorter: ``shorter_and_as_correct`` of the pair (``evolve.acceptance=shorter``,
            paired); given, it decides the win instead of the composites.

    >>> adopt_candidate(0.40, 0.35), adopt_candidate(0.40, 0.35, lost=1, max_lost_correct=0)
    (True, False)
    >>> adopt_candidate(0.40, 0.35, lost=1, max_lost_correct=1), adopt_candidate(0.3, 0.35)
    (True, False)
    >>> adopt_candidate(0.3, 0.35, shorter=True), adopt_candidate(0.4, 0.35, shorter=False)
    (True, False)
    """
    wins = candidate_composite > best_composite if shorter is None else shorter
    if not wins:
        return False
    return lost is None or max_lost_correct == GUARD_OFF or lost <= max_lost_correct


def shorter_and_as_correct(candidate: Sequence[Any], incumbent: Sequence[Any]) -> bool:
    """Paired: the candidate's answers are shorter on average and no fewer are correct.

    Args:
        candidate: graded records (``example_id``, ``response_tokens``, ``is_correct``).
        incumbent: the incumbent's records on the same questions.

    >>> from types import SimpleNamespace as R
    >>> old = [R(example_id="a", response_tokens=40, is_correct=True),
    ...        R(example_id="b", response_tokens=60, is_correct=False)]
    >>> shorter = [R(example_id="a", response_tokens=30, is_correct=False),
    ...            R(example_id="b", response_tokens=50, is_correct=True)]
    >>> shorter_and_as_correct(shorter, old), shorter_and_as_correct(old, old)
    (True, False)
    >>> shorter_and_as_correct(shorter[:1] + old[1:], old)  # shorter, one answer fewer correct
    False
    """
    lost_correct(candidate, incumbent)  # raises unless both answered the same questions
    (new_tokens, new_correct), (old_tokens, old_correct) = _totals(candidate), _totals(incumbent)
    return new_tokens < old_tokens and new_correct >= old_correct


def _totals(records: Sequence[Any]) -> tuple[int, int]:
    """Total response tokens and correct answers (same questions: totals compare as means)."""
    return (sum(int(r.response_tokens) for r in records),
            sum(bool(r.is_correct) for r in records))

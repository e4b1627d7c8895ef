"""Records the evolution loop passes around: what a proposer sees and what it returns.

The minibatch result comes from ``crsp_ops.evolve.minibatch.run_minibatch``; the loop only
relies on the attributes named by ``ExampleResult`` and ``ScoresLike`` (structural types), so a
test twin can stand in for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from crsp_ops.steering.deltas import Deltas


class ExampleResult(Protocol):
    """One graded answer of a minibatch (the fields of ``run_minibatch``'s records)."""

    example_id: str
    question: str
    ground_truth: str
    answer: str
    response_tokens: int
    is_correct: bool
    reasoning: str


class ScoresLike(Protocol):
    """The four minibatch scores (``MinibatchScores``)."""

    mean_token_length: float
    correctness_ratio: float
    shortness_score: float
    composite_score: float


SCORE_NAMES = ("mean_token_length", "correctness_ratio", "shortness_score", "composite_score")


def score_dict(scores: ScoresLike) -> dict[str, float]:
    """The four scores as a plain dict (metric names)."""
    return {name: float(getattr(scores, name)) for name in SCORE_NAMES}


@dataclass(frozen=True)
class Evidence:
    """What a proposer learns from one iteration: the deltas used and how they did."""

    iteration: int  # 0-based index of the iteration that produced this evidence
    deltas: Deltas  # the deltas that generated these responses
    records: Sequence[ExampleResult]  # every graded response of the minibatch
    scores: dict[str, float]  # SCORE_NAMES -> value for this minibatch
    best_composite: float  # the best deltas' composite (on this minibatch when judged paired)
    cluster_descriptions: dict[str, Any]  # cluster_descriptions.json content
    improved: bool = False  # the loop adopted these deltas as the new best (with a frontier:
    # also when they are a newly sampled frontier parent, i.e. the base to propose from)
    final: bool = False  # no iteration follows: a proposal will not be evaluated
    frontier_lessons: str = ""  # Frontier.lessons() when evolve.frontier is on, else ""


@dataclass(frozen=True)
class Exchange:
    """One request to an LLM proposer and what came back (logged verbatim)."""

    attempt: int  # 1-based attempt within the iteration
    messages: list[dict[str, str]]  # system + user messages sent
    request: dict[str, Any]  # the other request fields (model, response_format, ...)
    raw_reply: str | None  # the reply's content, None on a transport error
    error: str | None  # why this attempt was rejected, None when accepted
    latency_s: float
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Proposal:
    """A proposer's answer: the next deltas, or why there are none."""

    deltas: Deltas | None  # validated next deltas; None when the proposer failed
    summary: str = ""  # the reflector's update to the evolving summary ("" for others)
    error: str | None = None  # why the proposal failed (None when deltas are given)
    exchanges: tuple[Exchange, ...] = ()  # LLM requests behind this proposal, in order
    metrics: dict[str, float] = field(default_factory=dict)  # proposer-specific numbers
    stop: bool = False  # nothing left to propose (a shared budget is spent): the loop ends

    def __post_init__(self) -> None:
        if (self.deltas is None) == (self.error is None):
            raise ValueError("a Proposal has either deltas or an error, not both or neither")

    @property
    def failed(self) -> bool:
        """True when no valid deltas were proposed."""
        return self.deltas is None


@dataclass(frozen=True)
class IterationRecord:
    """One row of ``history.json``."""

    iteration: int
    deltas: Deltas  # deltas evaluated in this iteration
    scores: dict[str, float]  # SCORE_NAMES -> value
    best_composite_score: float  # the best deltas' composite (this minibatch when paired)
    improved: bool  # this iteration set a new best
    example_ids: list[str]  # the minibatch
    proposal_failed: bool  # the proposer gave no valid deltas after this iteration
    proposal_error: str | None
    summary: str  # the reflector's summary update ("" otherwise)
    generation_s: float  # wall time inside generation + grading
    iteration_s: float  # wall time of the whole iteration
    proposer_metrics: dict[str, float]
    # SCORE_NAMES -> value of the previous best deltas on this minibatch (paired judging;
    # None when not re-scored: unpaired runs, the first iteration)
    incumbent_scores: dict[str, float] | None = None
    # the loop's own numbers: rollouts_cumulative, frontier_size, frontier_merge, ...
    loop_metrics: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready row."""
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> IterationRecord:
        """Rebuild a row read from ``history.json``."""
        return cls(**row)


def best_composite_so_far(history: Sequence[IterationRecord]) -> float:
    """The best minibatch composite so far: the highest composite a row had when it was adopted.

    Never re-scored, so it never decreases along ``history`` (the incumbent's re-score on a
    later, harder minibatch is ``incumbent_scores``, logged separately). NaN before any row.

    >>> rows = [IterationRecord(i, {}, {"composite_score": c}, c, imp, [], False, None, "",
    ...                         0, 0, {})
    ...         for i, (c, imp) in enumerate([(0.5, True), (0.7, False), (0.6, True)])]
    >>> best_composite_so_far(rows), best_composite_so_far(rows[:1])
    (0.6, 0.5)
    """
    curve = best_composite_curve(history)
    return curve[-1] if curve else float("nan")


def best_composite_curve(history: Sequence[IterationRecord]) -> list[float]:
    """``best_composite_so_far`` after each row (NaN until the first adopted row)."""
    best, curve = float("nan"), []
    for row in history:
        if row.improved and not row.scores["composite_score"] <= best:  # NaN best: adopt
            best = row.scores["composite_score"]
        curve.append(best)
    return curve


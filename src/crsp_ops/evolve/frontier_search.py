"""How the loop uses a ``Frontier`` (``evolve.frontier``): record candidates, pick what comes next.

``observe`` records each iteration's results; ``next_step`` merges two complementary frontier
candidates every ``MERGE_EVERY``-th iteration, else draws a parent from the frontier.

Design: docs/design/evolve.md#frontier_search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.frontier import Frontier
from crsp_ops.steering.deltas import Deltas

MERGE_EVERY = 3  # try a merge on iterations 2, 5, 8, ...


@dataclass(frozen=True)
class NextStep:
    """What the next iteration evaluates: a merge, or a proposal from ``parent``."""

    parents: tuple[int, ...]  # candidate ids the next deltas descend from
    merged: Deltas | None = None  # the merge (no proposal needed), else None
    parent_deltas: Deltas | None = None  # the proposer's base
    parent_result: Any = None  # the parent's minibatch result on this minibatch


class FrontierSearch:
    """The loop's frontier bookkeeping (JSON state in ``to_json``; docs/design/evolve.md).

    Args:
        seed: parent-sampling seed (draws depend on ``(seed, iteration)`` only).
        frontier: the table (a resumed one from ``from_json``).
        next_parents: parents of the deltas the next iteration evaluates.
    """

    def __init__(self, seed: int, frontier: Frontier | None = None,
                 next_parents: tuple[int, ...] = ()) -> None:
        self.seed = seed
        self.frontier = frontier or Frontier()
        self.next_parents = next_parents

    def observe(self, iteration: int, deltas: Deltas, result: Any,
                incumbent: tuple[Deltas, Any] | None) -> int:
        """Record the candidate (and the re-scored incumbent); the candidate's id."""
        child = self.frontier.add(deltas, parents=self.next_parents, iteration=iteration)
        self.frontier.record_result(child, result.records)
        if incumbent is not None:
            best = self.frontier.add(incumbent[0], iteration=iteration)
            self.frontier.record_result(best, incumbent[1].records)
        return child

    def next_step(
        self, iteration: int, *, child: int, child_result: Any, batch: Sequence[Any],
        evaluate: Callable[[Sequence[Any], Deltas], Any], incumbent: tuple[Deltas, Any] | None,
    ) -> NextStep:
        """A merge of complementary frontier candidates, or a parent to propose from."""
        if iteration % MERGE_EVERY == MERGE_EVERY - 1:
            pair = self.frontier.complementary_pair()
            if pair is not None:
                return NextStep(parents=pair, merged=self.frontier.merge(*pair))
        parent = self.frontier.sample_parent(self.seed, iteration)
        deltas = self.frontier.candidates[parent].deltas
        if parent == child:
            result = child_result
        elif incumbent is not None and dict(incumbent[0]) == deltas:
            result = incumbent[1]
        else:
            result = evaluate(batch, deltas)
            self.frontier.record_result(parent, result.records)
        return NextStep(parents=(parent,), parent_deltas=dict(deltas), parent_result=result)

    def lessons(self, initial: Deltas) -> str:
        """The frontier's lessons for the reflector."""
        return self.frontier.lessons(initial)

    def metrics(self) -> dict[str, float]:
        """Size of the table and of the frontier."""
        return {"frontier_candidates": float(len(self.frontier.candidates)),
                "frontier_size": float(len(self.frontier.front()))}

    def to_json(self) -> dict[str, Any]:
        """Resume state: the table and the next deltas' parents."""
        return {"table": self.frontier.to_json(), "next_parents": list(self.next_parents)}

    @classmethod
    def from_json(cls, seed: int, data: dict[str, Any] | None) -> FrontierSearch:
        """Restore ``to_json`` (a fresh search from ``None``)."""
        data = data or {}
        return cls(seed, Frontier.from_json(data.get("table")),
                   tuple(data.get("next_parents", ())))

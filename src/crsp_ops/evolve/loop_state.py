"""The evolution loop's resumable state: what ``state.json`` holds and how a run starts from it.

A fresh run starts from the initial deltas; a resumed one (``state.json`` in the output
directory) restores the next iteration, current and best deltas, history, reflector tokens,
rollout count, frontier and proposer state, after checking it resumes the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.frontier_search import FrontierSearch
from crsp_ops.evolve.iteration import IterationRecord
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.steering.deltas import Deltas


@dataclass
class LoopState:
    """Where the loop stands between iterations (mutated as iterations run)."""

    next_iteration: int
    current: Deltas
    initial: Deltas
    best: Deltas
    best_composite: float
    best_iteration: int
    history: list[IterationRecord]
    reflector_tokens: float
    rollouts: int = 0  # answers generated so far (every evaluate call, all examples)
    search: FrontierSearch | None = None

    def to_json(self, proposer: Proposer) -> dict[str, Any]:
        """The ``state.json`` payload, the proposer's own state included."""
        return {
            "rollouts": self.rollouts,
            "frontier": None if self.search is None else self.search.to_json(),
            "next_iteration": self.next_iteration,
            "current_deltas": self.current,
            "initial_deltas": self.initial,
            "best": {"deltas": self.best,
                     "composite": self.best_composite if self.best_iteration >= 0 else None,
                     "iteration": self.best_iteration},
            "reflector_tokens": self.reflector_tokens,
            "proposer": {"name": proposer.name, "state": proposer.state_dict()},
        }


def start_state(
    store: EvolutionStore, initial: Deltas, proposer: Proposer, *, seed: int, frontier: bool
) -> LoopState:
    """A fresh state, or the one ``store`` recorded (restoring ``proposer``'s state too).

    Raises:
        ValueError: the recorded run used another proposer or other initial deltas.
    """
    saved = store.read_state()
    if saved is None:
        fresh = dict(initial)
        search = FrontierSearch(seed) if frontier else None
        return LoopState(0, fresh, dict(fresh), dict(fresh), float("-inf"), -1, [], 0.0,
                         search=search)
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
    return LoopState(
        saved["next_iteration"], saved["current_deltas"], saved["initial_deltas"],
        best["deltas"], float(best["composite"]) if best["iteration"] >= 0 else float("-inf"),
        best["iteration"], history, float(saved.get("reflector_tokens", 0.0)),
        int(saved.get("rollouts", 0)),
        FrontierSearch.from_json(seed, saved.get("frontier")) if frontier else None,
    )

"""Score the initial and the best deltas on the same fixed held-out questions.

Minibatch scores are noisy (each iteration draws other questions), so runs are compared on
this: both deltas, the same examples, the same decoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.iteration import SCORE_NAMES, score_dict
from crsp_ops.steering.deltas import Deltas


@dataclass(frozen=True)
class HeldoutComparison:
    """Held-out scores of the initial and the best deltas."""

    n_examples: int
    initial: dict[str, float]  # SCORE_NAMES -> value
    best: dict[str, float]

    def metrics(self) -> dict[str, float]:
        """``heldout_initial_<score>``, ``heldout_best_<score>`` and the composite gain."""
        out = {f"heldout_initial_{name}": self.initial[name] for name in SCORE_NAMES}
        out.update({f"heldout_best_{name}": self.best[name] for name in SCORE_NAMES})
        gain = self.best["composite_score"] - self.initial["composite_score"]
        out["heldout_composite_gain"] = gain
        out["heldout_examples"] = float(self.n_examples)
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``heldout.json``."""
        return {"n_examples": self.n_examples, "initial": self.initial, "best": self.best}


def heldout_examples(heldout: Sequence[Any], size: int) -> list[Any]:
    """The first ``size`` held-out questions (all when ``size`` is 0).

    >>> heldout_examples([1, 2, 3], 2), heldout_examples([1, 2, 3], 0)
    ([1, 2], [1, 2, 3])
    """
    if not heldout:
        raise ValueError("the held-out split is empty: set financebench.heldout_size > 0")
    return list(heldout[:size] if size > 0 else heldout)


def evaluate_heldout(
    evaluate: Callable[[Sequence[Any], Deltas], Any],
    examples: Sequence[Any],
    *,
    initial: Deltas,
    best: Deltas,
) -> HeldoutComparison:
    """Score both deltas on ``examples`` (the best reuses the initial result when equal)."""
    initial_scores = score_dict(evaluate(examples, initial).scores)
    best_scores = (
        dict(initial_scores) if dict(best) == dict(initial)
        else score_dict(evaluate(examples, best).scores)
    )
    return HeldoutComparison(len(examples), initial_scores, best_scores)

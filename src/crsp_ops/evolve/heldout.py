"""Score the initial and the best deltas on the same fixed held-out questions.

Minibatch scores are noisy (each iteration draws other questions), so runs are compared on
this: both deltas, the same examples, the same decoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from crsp_ops.evaluation.intervals import composite_interval, proportion_interval
from crsp_ops.evolve.iteration import SCORE_NAMES, score_dict
from crsp_ops.steering.deltas import Deltas
from crsp_ops.tracking.progress import progress_bar

INTERVAL_LEVEL = 0.95  # coverage of the held-out bootstrap intervals


@dataclass(frozen=True)
class HeldoutComparison:
    """Held-out scores of the initial and the best deltas."""

    n_examples: int
    initial: dict[str, float]  # SCORE_NAMES -> value
    best: dict[str, float]
    # "<initial|best>_<composite|correctness>_ci_<low|high>" -> bound (empty: no weights given)
    intervals: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """``heldout_initial_<score>``, ``heldout_best_<score>``, the gain and interval bounds.

        The best deltas' composite interval is also logged under the short names
        ``heldout_composite_ci_low``/``_high`` (what the runs table shows).
        """
        out = {f"heldout_initial_{name}": self.initial[name] for name in SCORE_NAMES}
        out.update({f"heldout_best_{name}": self.best[name] for name in SCORE_NAMES})
        gain = self.best["composite_score"] - self.initial["composite_score"]
        out["heldout_composite_gain"] = gain
        out["heldout_examples"] = float(self.n_examples)
        out.update({f"heldout_{key}": value for key, value in self.intervals.items()})
        if "best_composite_ci_low" in self.intervals:
            out["heldout_composite_ci_low"] = self.intervals["best_composite_ci_low"]
            out["heldout_composite_ci_high"] = self.intervals["best_composite_ci_high"]
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``heldout.json``."""
        return {"n_examples": self.n_examples, "initial": self.initial, "best": self.best,
                "intervals": self.intervals, "interval_level": INTERVAL_LEVEL}


def describe_heldout(saved: dict[str, Any]) -> str:
    """Two lines naming held-out composite and correctness of the initial and best deltas.

    ``saved`` is ``HeldoutComparison.to_json()`` (``heldout.json``); bounds print when present.

    >>> print(describe_heldout({"n_examples": 40, "interval_level": 0.95,
    ...     "initial": {"composite_score": 0.3, "correctness_ratio": 0.1},
    ...     "best": {"composite_score": 0.35, "correctness_ratio": 0.125},
    ...     "intervals": {"best_composite_ci_low": 0.3, "best_composite_ci_high": 0.4}}))
    held-out initial (40 questions, 95% CI): composite 0.3000, correctness 0.1000
    held-out best (40 questions, 95% CI): composite 0.3500 [0.3000, 0.4000], correctness 0.1250
    """
    level = round(100 * saved.get("interval_level", INTERVAL_LEVEL))
    size = f"({saved['n_examples']} questions, {level}% CI)"
    lines = []
    for label in ("initial", "best"):
        scores, bounds = saved[label], saved.get("intervals", {})
        parts = []
        for short, name in (("composite", "composite_score"), ("correctness", "correctness_ratio")):
            low = bounds.get(f"{label}_{short}_ci_low")
            high = bounds.get(f"{label}_{short}_ci_high")
            span = f" [{low:.4f}, {high:.4f}]" if low is not None and high is not None else ""
            parts.append(f"{short} {scores[name]:.4f}{span}")
        lines.append(f"held-out {label} {size}: " + ", ".join(parts))
    return "\n".join(lines)


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
    weights: Any = None,
) -> HeldoutComparison:
    """Score both deltas on ``examples`` (the best reuses the initial result when equal).

    ``weights`` (a ``ScoreWeights``) adds bootstrap intervals of the composite and the
    correctness of both deltas over the held-out examples.
    """
    same = dict(best) == dict(initial)
    with progress_bar(total=1 if same else 2, desc="held-out scoring", unit="deltas") as bar:
        initial_result = evaluate(examples, initial)
        bar.update(1)
        best_result = initial_result if same else evaluate(examples, best)
        bar.update(0 if same else 1)
    intervals: dict[str, float] = {}
    if weights is not None:
        for label, result in (("initial", initial_result), ("best", best_result)):
            intervals.update(_intervals(label, result.records, weights))
    return HeldoutComparison(len(examples), score_dict(initial_result.scores),
                             score_dict(best_result.scores), intervals)


def _intervals(label: str, records: Sequence[Any], weights: Any) -> dict[str, float]:
    tokens = [r.response_tokens for r in records]
    correct = [bool(r.is_correct) for r in records]
    composite = composite_interval(
        tokens, correct, shortness_scale=weights.shortness_scale,
        w_short=weights.shortness_weight, w_correct=weights.correctness_weight,
        confidence=INTERVAL_LEVEL)
    correctness = proportion_interval(correct, confidence=INTERVAL_LEVEL)
    return {f"{label}_composite_ci_low": composite[0], f"{label}_composite_ci_high": composite[1],
            f"{label}_correctness_ci_low": correctness[0],
            f"{label}_correctness_ci_high": correctness[1]}

"""Score the initial and the best deltas on the same fixed held-out questions.

Minibatch scores are noisy (each iteration draws other questions), so runs are compared on
this: both deltas, the same examples, the same decoding. With score weights the comparison also
carries the *paired* gains best - initial (tokens, correctness, composite, with intervals;
``evaluation.paired_gains``), and ``verdict_line`` turns them into the line a user reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from crsp_ops.evaluation.intervals import composite_interval, proportion_interval
from crsp_ops.evaluation.paired_gains import (
    NONINFERIORITY_MARGIN,
    PairedGains,
    correctness_non_inferior,
    paired_gains,
)
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
    paired: PairedGains | None = None  # best - initial on the same questions (with weights)

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
        if self.paired is not None:
            out.update(paired_metrics(self.paired))
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``heldout.json``."""
        return {"n_examples": self.n_examples, "initial": self.initial, "best": self.best,
                "intervals": self.intervals, "interval_level": INTERVAL_LEVEL,
                "paired": None if self.paired is None else self.paired.to_json()}


def paired_metrics(gains: PairedGains) -> dict[str, float]:
    """Paired gains as metrics: ``heldout_<tokens|correctness|composite>_gain[_ci_low|_ci_high]``.

    Also ``heldout_correctness_non_inferior`` (1.0 or 0.0). ``heldout_tokens_gain`` is the
    relative change of the mean tokens (-0.23: 23% shorter).
    """
    out = {}
    for name in ("tokens", "correctness", "composite"):
        estimate = getattr(gains, name)
        out[f"heldout_{name}_gain"] = estimate.value
        out[f"heldout_{name}_gain_ci_low"] = estimate.low
        out[f"heldout_{name}_gain_ci_high"] = estimate.high
    out["heldout_correctness_non_inferior"] = float(
        correctness_non_inferior(gains.correctness.low))
    return out


def verdict_line(gains: PairedGains, *, margin: float = NONINFERIORITY_MARGIN) -> str:
    """The one line a user reads: tokens, correctness with the non-inferiority verdict, composite.

    >>> from crsp_ops.evaluation.paired_gains import Estimate
    >>> g = PairedGains(400, 0.95, 46.8, 36.0, Estimate(-0.231, -0.27, -0.19),
    ...                 Estimate(-0.01, -0.02, 0.01), Estimate(0.031, 0.012, 0.05), False)
    >>> print(verdict_line(g))  # doctest: +NORMALIZE_WHITESPACE
    held-out (400 questions, paired 95% CI): -23% tokens [-27%, -19%],
    correctness -0.01 [-0.02, +0.01]: non-inferior; composite +0.031 [+0.012, +0.050]
    >>> print(verdict_line(PairedGains(40, 0.95, 30.0, 30.0, Estimate(0, 0, 0), Estimate(0, 0, 0),
    ...                                Estimate(0, 0, 0), True)))  # doctest: +NORMALIZE_WHITESPACE
    held-out (40 questions): the best deltas answer exactly as the initial ones (no change):
    +0% tokens, correctness +0.00: non-inferior
    """
    level = round(100 * gains.confidence)
    if gains.unchanged:
        return (f"held-out ({gains.n} questions): the best deltas answer exactly as the "
                "initial ones (no change): +0% tokens, correctness +0.00: non-inferior")
    tokens, correct, composite = gains.tokens, gains.correctness, gains.composite
    verdict = ("non-inferior" if correctness_non_inferior(correct.low, margin)
               else f"inferiority not excluded (lower bound below -{margin:g})")
    return (f"held-out ({gains.n} questions, paired {level}% CI): "
            f"{100 * tokens.value:+.0f}% tokens [{100 * tokens.low:+.0f}%, "
            f"{100 * tokens.high:+.0f}%], correctness {correct.value:+.2f} "
            f"[{correct.low:+.2f}, {correct.high:+.2f}]: {verdict}; composite "
            f"{composite.value:+.3f} [{composite.low:+.3f}, {composite.high:+.3f}]")


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
    if saved.get("paired"):
        lines.append(verdict_line(PairedGains.from_json(saved["paired"])))
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
    correctness of both deltas over the held-out examples, and the paired gains.
    """
    same = dict(best) == dict(initial)
    with progress_bar(total=1 if same else 2, desc="held-out scoring", unit="deltas") as bar:
        initial_result = evaluate(examples, initial)
        bar.update(1)
        best_result = initial_result if same else evaluate(examples, best)
        bar.update(0 if same else 1)
    intervals: dict[str, float] = {}
    paired = None
    if weights is not None:
        for label, result in (("initial", initial_result), ("best", best_result)):
            intervals.update(_intervals(label, result.records, weights))
        paired = paired_gains(
            [r.response_tokens for r in initial_result.records],
            [bool(r.is_correct) for r in initial_result.records],
            [r.response_tokens for r in best_result.records],
            [bool(r.is_correct) for r in best_result.records],
            weights=weights, confidence=INTERVAL_LEVEL)
    return HeldoutComparison(len(examples), score_dict(initial_result.scores),
                             score_dict(best_result.scores), intervals, paired)


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

"""The held-out tables and JSON summary of ``benchmarks/evolve_heldout.py``: formatting only.

Per arm one table over the seeds: mean tokens, correctness and composite with the *paired*
gains over the initial deltas and their 95% bootstrap intervals (questions resampled jointly,
``evaluation.paired_gains``), the correctness non-inferiority verdict (lower bound >= -0.02),
whether issue 26's goal was met (tokens -20%, non-inferior, composite interval above 0), the
answers each search generated, and the wall time; then the seed-averaged composite of the
first arm minus each other arm, paired over questions.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from crsp_ops.evaluation.paired_gains import (
    correctness_non_inferior,
    goal_met,
    paired_gains,
    seed_average_composite_gain,
)
from crsp_ops.evaluation.scoring import composite_score, shortness_score
from crsp_ops.evolve.heldout import INTERVAL_LEVEL
from crsp_ops.evolve.loop import LoopConfig
from crsp_ops.evolve.reflector import reply_validity

Columns = tuple[list[float], list[bool]]  # (response tokens, correct) per held-out question


def columns(result: Any) -> Columns:
    """Response tokens and correctness of a held-out result, in question order."""
    return ([float(r.response_tokens) for r in result.records],
            [bool(r.is_correct) for r in result.records])


def arm_row(seed: int, arm: str, initial: Columns, best: Columns, weights: Any,
            **extra: Any) -> dict[str, Any]:
    """One table row: the best deltas' held-out scores and their paired gains over initial."""
    gains = paired_gains(*initial, *best, weights=weights, confidence=INTERVAL_LEVEL)
    tokens, correct = best
    return {
        "seed": seed, "arm": arm, **extra,
        "mean_tokens": round(sum(tokens) / len(tokens), 2),
        "correctness": round(sum(correct) / len(correct), 4),
        "composite": round(_composite(best, weights), 4),
        "tokens_change": _rounded(gains.tokens), "correctness_gain": _rounded(gains.correctness),
        "composite_gain": _rounded(gains.composite),
        "non_inferior": correctness_non_inferior(gains.correctness.low),
        "goal_met": goal_met(gains),
    }


def arm_table(arm: str, rows: list[dict[str, Any]]) -> str:
    """A markdown table of one arm over the seeds, and a seed-average row.

    >>> row = {"seed": 0, "mean_tokens": 36.0, "tokens_change": [-0.231, -0.27, -0.19],
    ...        "correctness": 0.14, "correctness_gain": [-0.01, -0.02, 0.01],
    ...        "composite": 0.346, "composite_gain": [0.031, 0.012, 0.05], "non_inferior": True,
    ...        "goal_met": True, "answers_generated": 120, "best_iteration": 5, "search_s": 610}
    >>> print(arm_table("offline", [row]))
    ### offline
    | seed | mean tokens (change [95% CI]) | correctness (gain [95% CI]) | composite (gain [95% CI]) | non-inferior | goal | answers | best it. | search s |
    |---|---|---|---|---|---|---|---|---|
    | 0 | 36.0 (-23% [-27%, -19%]) | 0.140 (-0.01 [-0.02, +0.01]) | 0.3460 (+0.031 [+0.012, +0.050]) | yes | yes | 120 | 5 | 610 |
    | mean | 36.0 (-23%) | 0.140 (-0.01) | 0.3460 (+0.031) | 1/1 | 1/1 | 120 | | 610 |
    """  # noqa: E501
    head = ("| seed | mean tokens (change [95% CI]) | correctness (gain [95% CI]) | composite "
            "(gain [95% CI]) | non-inferior | goal | answers | best it. | search s |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = [f"### {arm}", head]
    for r in rows:
        t, c, g = r["tokens_change"], r["correctness_gain"], r["composite_gain"]
        lines.append(
            f"| {r['seed']} | {r['mean_tokens']:.1f} ({100 * t[0]:+.0f}% [{100 * t[1]:+.0f}%, "
            f"{100 * t[2]:+.0f}%]) | {r['correctness']:.3f} ({c[0]:+.2f} [{c[1]:+.2f}, "
            f"{c[2]:+.2f}]) | {r['composite']:.4f} ({g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]) | "
            f"{_yes(r['non_inferior'])} | {_yes(r['goal_met'])} | {r['answers_generated']} | "
            f"{r['best_iteration']} | {r['search_s']:.0f} |")

    def mean(key: str, index: int | None = None) -> float:
        values = [r[key] if index is None else r[key][index] for r in rows]
        return sum(values) / len(values)

    n = len(rows)
    lines.append(
        f"| mean | {mean('mean_tokens'):.1f} ({100 * mean('tokens_change', 0):+.0f}%) | "
        f"{mean('correctness'):.3f} ({mean('correctness_gain', 0):+.2f}) | "
        f"{mean('composite'):.4f} ({mean('composite_gain', 0):+.3f}) | "
        f"{sum(r['non_inferior'] for r in rows)}/{n} | {sum(r['goal_met'] for r in rows)}/{n} | "
        f"{mean('answers_generated'):.0f} | | {mean('search_s'):.0f} |")
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _rounded(estimate: Any) -> list[float]:
    return [round(estimate.value, 4), round(estimate.low, 4), round(estimate.high, 4)]


def _composite(cols: Columns, weights: Any) -> float:
    """The composite of held-out answers, exactly as ``score_records`` computes it."""
    tokens, correct = cols
    short = shortness_score(sum(tokens) / len(tokens), scale=weights.shortness_scale)
    return composite_score(short, sum(correct) / len(correct), w_short=weights.shortness_weight,
                           w_correct=weights.correctness_weight)


def reflector_stats(history: list[Any]) -> dict[str, Any]:
    """Validity rate (schema-valid replies / requests) and reflector seconds per iteration.

    Empty for arms that made no reflector request.

    >>> from types import SimpleNamespace as R
    >>> reflector_stats([R(proposer_metrics={"reflector_attempts": 2.0, "reflector_latency_s": 6.0,
    ...     "reflector_invalid_replies": 1.0}, proposal_failed=False)] * 2)["validity_rate"]
    0.5
    """
    metrics = [row.proposer_metrics for row in history]
    valid, requests = reply_validity(history)
    if not requests:
        return {}
    return {"reflector_requests": requests, "reflector_valid_replies": valid,
            "validity_rate": round(valid / requests, 4),
            "reflector_s_per_iteration": round(
                sum(m.get("reflector_latency_s", 0.0) for m in metrics) / len(metrics), 2),
            "failed_proposals": sum(bool(row.proposal_failed) for row in history),
            "prompt_cuts": int(sum(m.get("reflector_prompt_cut", 0.0) for m in metrics))}


def report(*, arms: list[str], seeds: list[int], heldout_sha256: str, initial_cols: Columns,
           rows: list[dict[str, Any]], answers: dict[tuple[str, int], Columns], weights: Any,
           config: LoopConfig, extra: dict[str, Any], started: float) -> dict[str, Any]:
    """Print the per-arm tables and comparisons on stderr; the JSON summary.

    ``config.max_rollouts`` is the answer budget every search had; ``extra`` joins the JSON.
    """
    base = arm_row(-1, "initial", initial_cols, initial_cols, weights)
    comparisons = {
        f"{arms[0]} - {other}": _rounded(seed_average_composite_gain(
            [(*answers[arms[0], s], *answers[other, s]) for s in seeds], weights=weights))
        for other in arms[1:]}
    elapsed = time.perf_counter() - started
    n = len(initial_cols[0])
    print(f"\nheld-out: {n} questions, sha256 {heldout_sha256}; initial deltas: "
          f"{base['mean_tokens']:.1f} tokens, correctness {base['correctness']:.3f}, composite "
          f"{base['composite']:.4f}; {config.iterations} iterations x minibatch "
          f"{config.minibatch_size}, budget {config.max_rollouts} answers per search; seeds "
          f"{seeds}", file=sys.stderr)
    initial_row = {**base, "seed": "all", "answers_generated": 0, "best_iteration": "-",
                   "search_s": 0.0}
    print("\n" + arm_table("initial", [initial_row]), file=sys.stderr)
    for arm in arms:
        print("\n" + arm_table(arm, [r for r in rows if r["arm"] == arm]), file=sys.stderr)
        for r in rows:
            if r["arm"] == arm and "validity_rate" in r:
                print(f"seed {r['seed']}: reflector validity {r['reflector_valid_replies']}/"
                      f"{r['reflector_requests']} ({r['validity_rate']:.0%}), "
                      f"{r['reflector_s_per_iteration']:.1f} s/iteration, "
                      f"{r['failed_proposals']} failed proposals, {r['prompt_cuts']} prompt cuts",
                      file=sys.stderr)
    for name, (value, low, high) in comparisons.items():
        print(f"\n{name}: seed-average held-out composite {value:+.4f} [{low:+.4f}, {high:+.4f}] "
              "(paired over questions)", file=sys.stderr)
    print(f"\nwall time: {elapsed:.0f} s", file=sys.stderr)
    return {
        "benchmark": "evolve_heldout", **extra, "seeds": seeds, "arms": arms,
        "iterations": config.iterations, "minibatch_size": config.minibatch_size,
        "paired_best": config.paired_best, "max_lost_correct": config.max_lost_correct,
        "answer_budget": config.max_rollouts, "heldout_questions": n,
        "heldout_sha256": heldout_sha256,
        "initial": {k: base[k] for k in ("mean_tokens", "correctness", "composite")},
        "runs": rows, "composite_first_minus_other_seed_average": comparisons,
        "goal_met": {arm: sum(r["goal_met"] for r in rows if r["arm"] == arm) for arm in arms},
        "elapsed_s": round(elapsed, 1)}

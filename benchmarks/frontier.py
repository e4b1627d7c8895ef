"""Pareto frontier of deltas vs the single best, at an equal rollout budget, over seeds.

Both searches run the offline proposer with paired judging on the embedded default (the tiny
model, its clusters, zero initial deltas, the synthetic FinanceBench pool) and stop once they
generated ``--budget`` answers (candidate, incumbent re-scores, frontier parents: every
generation counts). Each run's best deltas are then scored on the same held-out questions, with
95% bootstrap intervals over the questions; the summary adds a bootstrap interval of the mean
over seeds. Prints one JSON line.

    python -m benchmarks.frontier [--seeds 0 1 2] [--budget 96] [--project DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from benchmarks.proposers import Harness, add_harness_args, embedded_default
from crsp_ops.evaluation.bootstrap import bootstrap_interval
from crsp_ops.evaluation.intervals import composite_interval, proportion_interval
from crsp_ops.evolve.iteration import score_dict
from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.proposer_factory import build_proposer
from crsp_ops.evolve.store import EvolutionStore

MAX_ITERATIONS = 1000  # the budget ends a run, not the iteration count


def search_once(harness: Harness, *, frontier: bool, seed: int, budget: int, out: Path):
    """One offline-proposer search stopped at ``budget`` rollouts; its outcome and rollouts."""
    settings = replace(harness.settings, evolve=replace(harness.settings.evolve, seed=seed))
    proposer = build_proposer(
        "offline", settings, token_clusters=harness.clusters.token_clusters,
        n_clusters=harness.clusters.n_clusters, initial_deltas=harness.initial, out_dir=out,
        tokenize=lambda text: harness.backend.tokenizer(text, add_special_tokens=False)[
            "input_ids"],
    )
    outcome = run_evolution(
        pool=harness.pool, evaluate=harness.evaluate, proposer=proposer,
        store=EvolutionStore(out, harness.clusters.token_clusters, harness.clusters.n_clusters),
        initial_deltas=harness.initial, cluster_descriptions=harness.clusters.descriptions,
        config=LoopConfig(iterations=MAX_ITERATIONS,
                          minibatch_size=settings.evolve.minibatch_size, seed=seed,
                          stop_on_failure=False, paired_best=True, frontier=frontier,
                          max_rollouts=budget),
    )
    return outcome, int(outcome.history[-1].loop_metrics["rollouts_cumulative"])


def heldout_scores(harness: Harness, deltas) -> dict[str, float]:
    """Held-out composite and correctness of ``deltas`` with 95% bootstrap bounds."""
    result = harness.evaluate(harness.heldout, deltas)
    scores = score_dict(result.scores)
    weights = harness.settings.scoring
    tokens = [r.response_tokens for r in result.records]
    correct = [bool(r.is_correct) for r in result.records]
    low, high = composite_interval(tokens, correct, shortness_scale=weights.shortness_scale,
                                   w_short=weights.shortness_weight,
                                   w_correct=weights.correctness_weight)
    c_low, c_high = proportion_interval(correct)
    return {"composite": scores["composite_score"], "composite_ci": [low, high],
            "correctness": scores["correctness_ratio"], "correctness_ci": [c_low, c_high],
            "mean_tokens": scores["mean_token_length"]}


def mean_interval(values: list[float]) -> list[float]:
    """95% bootstrap interval of the mean over seeds."""
    return list(bootstrap_interval(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=96, help="answers generated per search")
    add_harness_args(parser)
    args = parser.parse_args()

    harness = Harness(embedded_default(args.project, args.stage_overrides), args.overrides)
    modes = {"single_best": False, "frontier": True}
    rows = []
    try:
        initial = heldout_scores(harness, harness.initial)
        with tempfile.TemporaryDirectory() as tmp:
            for seed in args.seeds:
                row = {"seed": seed}
                for name, frontier in modes.items():
                    outcome, rollouts = search_once(harness, frontier=frontier, seed=seed,
                                                    budget=args.budget,
                                                    out=Path(tmp) / f"{name}-{seed}")
                    row[name] = {**heldout_scores(harness, outcome.best_deltas),
                                 "rollouts": rollouts, "iterations": len(outcome.history)}
                rows.append(row)
                print(f"# seed {seed}: {json.dumps(row)}", file=sys.stderr)
    finally:
        harness.close()
    summary = {
        "benchmark": "frontier", "proposer": "offline", "seeds": args.seeds,
        "budget_rollouts": args.budget, "minibatch_size": harness.settings.evolve.minibatch_size,
        "heldout_questions": len(harness.heldout), "initial": initial,
    }
    for name in modes:
        composites = [r[name]["composite"] for r in rows]
        correctness = [r[name]["correctness"] for r in rows]
        summary[name] = {
            "composite_mean": statistics.mean(composites),
            "composite_mean_ci": mean_interval(composites),
            "correctness_mean": statistics.mean(correctness),
            "correctness_mean_ci": mean_interval(correctness),
        }
    summary["frontier_minus_single"] = [r["frontier"]["composite"] - r["single_best"]["composite"]
                                        for r in rows]
    summary["rows"] = rows
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

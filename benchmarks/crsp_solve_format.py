"""Step-0 solve rollouts of the CRSP trainer: well-formed share and reward per rollout.

Runs the trainer's own solve path (``crsp_ops.crsp.selfplay.episode.solve``: ``solve_messages`` with
the ``<think>`` prefill, the in-process backend the trainer builds, ``check_solutions`` in the
sandbox, the format rule and the alpha schedule at step 1) on the built-in seed tasks of the
configured problem types, once per solve budget, and prints one JSON line: per budget the
well-formed count and share (95% Wilson interval), correct count, finish reasons, mean response
tokens, the reward of every rollout grouped as correct / well-formed-wrong / malformed, the
generation time and the first few malformed responses (after the prefill).

    python -m benchmarks.crsp_solve_format --model /tmp/smollm2_hf --budgets 48 64 96 \
        [--samples 2] [--set train.temperature=1.0]

``--model`` is an HF model directory (or a ``model_ref.json`` directory); settings come from
``params.yaml`` plus ``--set`` overrides. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.cpu_trainer import measure_with_trainer  # noqa: E402
from crsp_ops.crsp.rewards.functions import RewardState  # noqa: E402
from crsp_ops.crsp.selfplay.episode import builtin_rewards, solve  # noqa: E402
from crsp_ops.crsp.tasks import TaskType, starter_tasks  # noqa: E402


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def reward_summary(samples) -> dict:
    """Rewards grouped by outcome: count, mean and the distinct values (rounded) with counts."""
    groups = {"correct": [], "wrong": [], "malformed": []}
    for sample in samples:
        key = "malformed" if not sample.well_formed else "correct" if sample.passed else "wrong"
        groups[key].append(sample.reward)
    return {key: {"n": len(values),
                  "mean": round(statistics.fmean(values), 3) if values else None,
                  "values": dict(Counter(round(v, 3) for v in values))}
            for key, values in groups.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model dir (or a model_ref.json dir)")
    parser.add_argument("--budgets", type=int, nargs="+", default=None,
                        help="solve token budgets to try (default: train.max_new_tokens_solve)")
    parser.add_argument("--samples", type=int, default=2, help="solver samples per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=4, help="malformed responses to include")
    parser.add_argument("--dump", type=Path, default=None,
                        help="write every response (JSON lines) here")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="section.key=value overrides of params.yaml")
    args = parser.parse_args()

    print(json.dumps(measure_with_trainer(
        args.model, args.overrides, lambda settings, trainer: measure(args, settings, trainer))))


def measure(args, settings, trainer) -> dict:
    """Every budget's solve rollouts from the trainer's own backend, sandbox and options."""
    backend, executor = trainer.generation.backend, trainer.executor
    alphas = trainer.schedule(0, max(settings.train.steps - 1, 1))  # the trainer's step 1
    tasks = [task for name in settings.crsp.problem_types
             for task in starter_tasks(TaskType(name))]
    base = trainer.episode_options
    result = {"benchmark": "crsp_solve_format", "model": str(args.model), "tasks": len(tasks),
              "task_types": dict(Counter(t.task_type.value for t in tasks)),
              "samples_per_task": args.samples, "temperature": base.temperature,
              "alpha_s": alphas.alpha_s, "budgets": {}}
    for budget in args.budgets or [settings.train.max_new_tokens_solve]:
        options = replace(base, solver_samples=args.samples,
                          max_new_tokens={**base.max_new_tokens, "solve": budget})
        started = time.perf_counter()
        samples, _ = solve(backend, tasks, options, builtin_rewards(executor, options, alphas),
                           RewardState(1, 1), args.seed)
        elapsed = time.perf_counter() - started
        if args.dump:
            with args.dump.open("a") as dump:
                for sample in samples:
                    dump.write(json.dumps({"budget": budget, "task_type": sample.task_type,
                                           "text": sample.completion.text,
                                           "finish": sample.completion.finish_reason,
                                           "well_formed": sample.well_formed,
                                           "correct": sample.passed,
                                           "reward": sample.reward}) + "\n")
        ok = sum(s.well_formed for s in samples)
        low, high = wilson(ok, len(samples))
        result["budgets"][str(budget)] = {
            "well_formed": ok, "n": len(samples), "share": round(ok / len(samples), 3),
            "ci95": [round(low, 3), round(high, 3)],
            "correct": sum(s.passed for s in samples),
            "finish": dict(Counter(s.completion.finish_reason for s in samples)),
            "mean_tokens": round(statistics.fmean(s.completion.response_tokens
                                                  for s in samples), 1),
            "rewards": reward_summary(samples),
            "generate_s": round(elapsed, 1),
            "malformed_examples": [s.completion.text[:160] for s in samples
                                   if not s.well_formed][: args.show],
        }
    return result


if __name__ == "__main__":
    main()

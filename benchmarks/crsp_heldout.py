"""Held-out solve rate before and after a short CRSP run, with step time and peak memory.

Builds the trainer exactly as ``crsp-ops train`` does (settings from ``params.yaml`` plus ``--set``;
LIMO math rows from the synthetic generator, the last ``crsp.heldout_math`` held out), scores the
held-out tasks greedily (``crsp_ops.crsp.trainer.evaluation.score_heldout``: the built-in held-out
code tasks and ``train.eval_math_tasks`` LIMO rows), runs ``--steps`` self-play steps, and scores
them again. Per step: time, the step's rollouts (well-formed share, correct, rewards by outcome) and
the process's peak resident memory during the step (sampled every 50 ms). Solve rates carry a 95%
bootstrap interval over tasks, and the paired after − before difference one too.

    python -m benchmarks.crsp_heldout --model /tmp/smollm2_hf --steps 2 \
        [--set train.max_new_tokens_solve=96]

Prints one JSON line. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections import Counter

import numpy as np
import psutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crsp_ops.config import load_settings  # noqa: E402
from crsp_ops.crsp.rewards.functions import RewardState  # noqa: E402
from crsp_ops.crsp.tasks import TaskType  # noqa: E402
from crsp_ops.crsp.tasks.limo import load_limo_result, math_tasks, split_heldout  # noqa: E402
from crsp_ops.crsp.trainer.build import build_trainer  # noqa: E402
from crsp_ops.crsp.trainer.evaluation import heldout_code_tasks, score_heldout  # noqa: E402
from crsp_ops.evaluation.bootstrap import bootstrap_interval  # noqa: E402
from crsp_ops.models.loading import load_causal_lm  # noqa: E402
from crsp_ops.paths import project_root  # noqa: E402


class PeakRss:
    """Peak resident memory of this process while the context is open (sampled)."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s, self.peak, self._stop = interval_s, 0, threading.Event()
        self._process = psutil.Process()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PeakRss:
        self.peak = self._process.memory_info().rss
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def rate(correct: list[bool]) -> dict:
    """Share correct with its 95% bootstrap interval."""
    values = np.array(correct, dtype=float)
    return {"rate": round(float(values.mean()), 3),
            "ci95": [round(x, 3) for x in bootstrap_interval(values)]}


def step_summary(metrics: dict, episode, elapsed: float, peak: int) -> dict:
    """What one step did: time, peak memory, its solve rollouts and their rewards."""
    solve = [s for s in episode.samples if s.role == "solve"]
    groups: dict[str, list[float]] = {"correct": [], "wrong": [], "malformed": []}
    for sample in solve:
        key = "malformed" if not sample.well_formed else "correct" if sample.passed else "wrong"
        groups[key].append(sample.reward)
    return {"step_s": round(elapsed, 1), "peak_rss_gb": round(peak / 2**30, 2),
            "solve_rollouts": len(solve),
            "solve_well_formed": sum(s.well_formed for s in solve),
            "solve_correct": sum(s.passed for s in solve),
            "solve_rewards": {k: {"n": len(v), "mean": round(statistics.fmean(v), 3)
                                  if v else None} for k, v in groups.items()},
            "roles": dict(Counter(s.role for s in episode.samples)),
            "loss": metrics.get("loss"), "update_s": round(metrics.get("perf/update_s", 0.0), 1)}


def limo_split(settings) -> tuple[list, list]:
    """The synthetic LIMO rows the trainer trains on, and the last ``crsp.heldout_math`` it scores.

    Raises ``ValueError`` (``split_heldout``) when ``crsp.heldout_math`` leaves no row to train
    on: keep it below ``limo.n_synthetic`` (``benchmarks/presets.py`` sets both).
    """
    rows = load_limo_result("synthetic", None, synthetic_count=settings.limo.n_synthetic,
                            seed=settings.limo.seed, hub_split=settings.limo.hub_split).rows
    return split_heldout(list(rows), settings.crsp.heldout_math)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model dir (or a model_ref.json dir)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()

    settings = load_settings(project_root(), ["tracking.enabled=n", *args.overrides]).settings
    train_rows, heldout_rows = limo_split(settings)
    model, tokenizer = load_causal_lm(args.model)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        trainer = build_trainer(settings, model, tokenizer, out_dir=out,
                                  tasks=math_tasks(train_rows),
                                  heldout_tasks=math_tasks(heldout_rows))
        types = [TaskType(name) for name in settings.crsp.problem_types]
        tasks = [*heldout_code_tasks(trainer.executor, types), *trainer.heldout_tasks]
        budget = settings.train.max_new_tokens_solve

        def score() -> list:
            trainer.unwrapped_model.eval()
            return score_heldout(trainer.generation.backend, tasks, trainer.solve_rewards,
                                 RewardState(trainer.step, args.steps),
                                 max_new_tokens=budget).checks

        before = score()
        steps = []
        for _ in range(args.steps):
            with PeakRss() as memory:
                step_started = time.perf_counter()
                metrics, episode = trainer.train_step()
                trainer.step += 1
            steps.append(step_summary(metrics, episode, time.perf_counter() - step_started,
                                      memory.peak))
            print(f"# step {trainer.step}: {json.dumps(steps[-1])}", flush=True)
        after = score()
        trainer.close()
    correct_before = [c.correct for c in before]
    correct_after = [c.correct for c in after]
    paired = np.array([correct_before, correct_after], dtype=float).T  # (n, 2)
    print(json.dumps({
        "benchmark": "crsp_heldout", "model": str(args.model), "steps": args.steps,
        "heldout_tasks": dict(Counter(t.task_type.value for t in tasks)),
        "max_new_tokens_solve": budget,
        "before": {**rate(correct_before),
                   "well_formed": sum(c.well_formed for c in before)},
        "after": {**rate(correct_after), "well_formed": sum(c.well_formed for c in after)},
        "after_minus_before": round(float(paired[:, 1].mean() - paired[:, 0].mean()), 3),
        "after_minus_before_ci95": [round(x, 3) for x in bootstrap_interval(
            paired, lambda rows: float(rows[:, 1].mean() - rows[:, 0].mean()))],
        "steps_detail": steps, "elapsed_s": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()

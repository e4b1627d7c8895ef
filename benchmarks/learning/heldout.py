"""The fixed held-out tasks every arm is scored on, and an arm's summary of its evaluations."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from crsp_ops.crsp.policy.generation import InProcessGeneration
from crsp_ops.crsp.rewards.functions import RewardState
from crsp_ops.crsp.rewards.solve import RewardSet
from crsp_ops.crsp.trainer.evaluation import score_heldout
from crsp_ops.crsp.trainer.learning_curve import curve_point, paired_gain


class HeldOut:
    """The fixed held-out tasks, scored greedily; keeps each evaluation's per-task verdicts.

    With ``journal`` set, every evaluation is appended to that JSONL file as it ends, so a run
    cut short keeps the evaluations it finished.
    """

    def __init__(self, tasks: list, rewards: RewardSet, budget: int, batch_size: int,
                 journal: Path | None = None) -> None:
        self.tasks, self.rewards = tasks, rewards
        self.budget, self.batch_size = budget, batch_size
        self.journal, self.arm = journal, "base"

    def score(self, model, tokenizer, step: int, samples: int) -> dict:
        was_training = model.training
        model.eval()
        generation = InProcessGeneration(model, tokenizer, device="cpu",
                                         batch_size=self.batch_size)
        started = time.perf_counter()
        scores = score_heldout(generation.backend, self.tasks, self.rewards,
                               RewardState(step, step), max_new_tokens=self.budget)
        checks = scores.checks
        model.train(was_training)
        point = curve_point(step, samples, scores.metrics)
        low, high = point.solve_rate_ci
        print(f"#   step {step}: solve {point.solve_rate:.3f} [{low:.3f}, {high:.3f}] "
              f"well-formed {point.well_formed:.2f} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
        correct = [c.correct for c in checks]
        if self.journal is not None:
            with self.journal.open("a", encoding="utf-8") as journal:
                journal.write(json.dumps({
                    "arm": self.arm, **point.to_row(), "correct_each": correct,
                    "well_formed_each": [c.well_formed for c in checks],
                    "reward_each": scores.rewards}) + "\n")
        return {"point": point, "correct": correct, "reward": scores.rewards}


def paired(before: list[bool], after: list[bool]) -> dict:
    """Mean after − before over the same tasks, with a 95% paired bootstrap interval."""
    gain = paired_gain(before, after)
    return {"diff": round(gain.diff, 4), "ci95": [round(gain.low, 4), round(gain.high, 4)]}


def arm_summary(result: dict) -> dict:
    """Curve rows, the paired gain, the mean step time and (CRSP arms) flat tasks per step.

    A flat task's samples were all correct or all incorrect; ``flat_reward_share``: all
    scored alike, so the task gave a per-task baseline no signal (``step_metrics``).
    """
    first, last = result["evaluations"][0], result["evaluations"][-1]
    steps = result["step_s"]
    summary = {"curve": [e["point"].to_row() for e in result["evaluations"]],
               "after_minus_before": paired(first["correct"], last["correct"]),
               "reward_after_minus_before": paired(first["reward"], last["reward"]),
               "step_s_mean": round(float(np.mean(steps)), 1) if steps else None}
    for key in ("flat_task_share", "flat_reward_share", "generated_samples", "policy_lag",
                "server"):
        if key in result:
            summary[key] = result[key]
    return summary

"""Held-out evaluation: greedy solve rate on held-out tasks, scored by the step's reward set.

Each evaluation (``evaluate_into``) is a point of the run's learning curve.

Design: docs/design/trainer.md#evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crsp_ops.crsp.executor import ExecutionJob, SandboxExecutor
from crsp_ops.crsp.rewards.functions import RewardState
from crsp_ops.crsp.rewards.solve import RewardSet, reward_call
from crsp_ops.crsp.tasks import SolutionCheck, solve_messages
from crsp_ops.crsp.tasks.task_types import (
    CodeTask,
    Task,
    TaskType,
    task_family,
)
from crsp_ops.crsp.trainer.hf_flow import RunState
from crsp_ops.crsp.trainer.learning_curve import curve_point
from crsp_ops.evaluation.bootstrap import bootstrap_interval
from crsp_ops.inference.backend import GenerationBackend
from crsp_ops.inference.completions import SamplingParams

_SQUARES = "def f(n):\n    return [i * i for i in range(n)]\n"
_VOWELS = "def f(s):\n    return sum(1 for c in s if c in 'aeiou')\n"
_MAX_GAP = ("def f(xs):\n    xs = sorted(xs)\n"
            "    return max(b - a for a, b in zip(xs, xs[1:]))\n")
_DIGITS = "def f(n):\n    return sum(int(d) for d in str(n))\n"
_PAIRS = "def f(xs):\n    return [xs[i] + xs[-1 - i] for i in range(len(xs) // 2)]\n"

HELDOUT_PROGRAMS: tuple[tuple[TaskType, str, tuple[str, ...], str], ...] = (
    (TaskType.CODE_O, _SQUARES, ("5",), ""),
    (TaskType.CODE_O, _VOWELS, ("'education'",), ""),
    (TaskType.CODE_I, _DIGITS, ("1234",), ""),
    (TaskType.CODE_I, _MAX_GAP, ("[1, 9, 4]",), ""),
    (TaskType.CODE_F, _DIGITS, ("12", "999", "405", "7"), "Adds up the decimal digits of n."),
    (TaskType.CODE_F, _PAIRS, ("[1, 2, 3, 4]", "[5, 5]", "[1, 2, 3]", "[0, 1, 2, 3, 4, 5]"),
     "Adds mirrored elements from both ends."),
)


def heldout_code_tasks(executor: SandboxExecutor,
                       task_types: Sequence[TaskType] = tuple(TaskType)) -> list[CodeTask]:
    """Built-in held-out code tasks of ``task_types``, with outputs computed by the sandbox.

    Raises:
        RuntimeError: a built-in program failed in the sandbox (limits far too tight).
    """
    chosen = [spec for spec in HELDOUT_PROGRAMS if spec[0] in task_types]
    results = executor.run_many([ExecutionJob(program, inputs) for _, program, inputs, _ in chosen])
    tasks = []
    for (task_type, program, inputs, message), result in zip(chosen, results, strict=True):
        if not result.ok:
            raise RuntimeError(f"held-out program failed in the sandbox ({result.status.value}: "
                               f"{result.detail}); loosen the crsp.sandbox_* limits")
        tasks.append(CodeTask(task_type, program, inputs, result.outputs, message))
    return tasks


def solve_rates(tasks: Sequence[Task], correct: Sequence[bool]) -> dict[str, float]:
    """Fraction correct per task type and per generator family, for those present.

    Keys: the type (``math``), and ``family/<name>`` where a task has a generator family
    (``task_family``: the edge-math ``add``, ``subtract``, ...).

    >>> from crsp_ops.crsp.tasks.task_types import MathTask
    >>> solve_rates([MathTask("1+1?", "", "2", family="add"), MathTask("3-1?", "", "2",
    ...              family="subtract")] * 2, [True, False, True, True])
    {'math': 0.75, 'family/add': 1.0, 'family/subtract': 0.5}
    """
    totals: dict[str, list[int]] = {}
    for task, ok in zip(tasks, correct, strict=True):
        family = task_family(task)
        names = [task.task_type.value]
        if family != task.task_type.value:
            names.append(f"family/{family}")
        for name in names:
            counts = totals.setdefault(name, [0, 0])
            counts[0] += int(ok)
            counts[1] += 1
    return {name: hits / count for name, (hits, count) in totals.items()}


@dataclass(frozen=True)
class HeldOutScores:
    """One greedy evaluation: the metrics and each task's verdict (for paired comparisons)."""

    metrics: dict[str, float]
    checks: list[SolutionCheck]  # well_formed and correct (= passed) per task
    rewards: list[float]  # each task's total reward


def score_heldout(backend: GenerationBackend, tasks: Sequence[Task], rewards: RewardSet,
                  state: RewardState, *, max_new_tokens: int) -> HeldOutScores:
    """Greedy solutions of ``tasks`` (the trainer's solve conversation), scored by ``rewards``.

    The same road as a training step's solve: ``solve_messages`` then the reward set.
    """
    if not tasks:
        return HeldOutScores({}, [], [])
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0, top_p=1.0)
    completions = backend.generate([solve_messages(task) for task in tasks], params)
    scored = rewards.score(reward_call(tasks, completions, state))
    checks = [SolutionCheck(formed, passed, "") for formed, passed in
              zip(scored.well_formed, scored.passed, strict=True)]
    metrics = heldout_metrics(tasks, checks)
    for name, values in {**scored.values, "total": scored.totals}.items():
        applied = [value for value in values if value is not None]
        if applied:
            metrics.update(_with_interval(f"reward/{name}", applied))
    return HeldOutScores(metrics, checks, list(scored.totals))


def _with_interval(name: str, values: Sequence[float]) -> dict[str, float]:
    low, high = bootstrap_interval(values)
    return {name: float(np.mean(values)), f"{name}_ci_low": low, f"{name}_ci_high": high}


def heldout_metrics(tasks: Sequence[Task], checks: Sequence[SolutionCheck]) -> dict[str, float]:
    """Solve rate per type, and overall / well-formed / among-well-formed with 95% intervals.

    ``solve_rate_well_formed`` (correct among well-formed answers) tells answer learning from
    format learning: a gain in ``all`` that leaves it flat is a format gain.

    >>> tasks = [CodeTask(TaskType.CODE_O, "def f(): pass", ("",), ("None",))] * 4
    >>> checks = [SolutionCheck(form, ok, "") for ok, form in
    ...           [(True, True), (False, True), (False, False), (False, False)]]
    >>> m = heldout_metrics(tasks, checks)
    >>> m["all"], m["well_formed"], m["solve_rate_well_formed"], m["heldout_tasks"]
    (0.25, 0.5, 0.5, 4.0)
    """
    if not tasks:
        return {}
    correct = [float(check.correct) for check in checks]
    formed = [float(check.well_formed) for check in checks]
    rates: dict[str, float] = solve_rates(tasks, [check.correct for check in checks])
    rates.update(_with_interval("all", correct))
    rates.update(_with_interval("well_formed", formed))
    among = [c for c, f in zip(correct, formed, strict=True) if f]
    rates.update(_with_interval("solve_rate_well_formed", among) if among else
                 {"solve_rate_well_formed": 0.0})
    rates["heldout_tasks"] = float(len(tasks))
    return rates


def crsp_eval_names(metrics: dict[str, float]) -> dict[str, float]:
    """``score_heldout``'s metrics as the run logs them (``eval/solve_rate/<type>``, ...).

    >>> crsp_eval_names({"all": 0.5, "reward/total": 1.0})
    {'eval/solve_rate/all': 0.5, 'eval/reward/total': 1.0}
    """
    return {f"eval/{name}" if name.startswith("reward/") else f"eval/solve_rate/{name}": value
            for name, value in metrics.items()}


def evaluate_into(run: RunState, backend: GenerationBackend, tasks: Sequence[Task],
                  rewards: RewardSet, state: RewardState, *, max_new_tokens: int
                  ) -> dict[str, float]:
    """Greedy held-out scores of ``tasks``, each with its 95% interval (``crsp_eval_names``).

    Each evaluation is also a point of ``run``'s learning curve, and its per-task verdicts
    are kept in ``run.heldout_verdicts``.
    """
    scores = score_heldout(backend, tasks, rewards, state, max_new_tokens=max_new_tokens)
    if "all" in scores.metrics:
        run.curve.append(curve_point(run.step, run.solve_samples, scores.metrics))
        run.heldout_verdicts.append([check.correct for check in scores.checks])
    return crsp_eval_names(scores.metrics)

"""Pure summaries of one self-play step: the metrics logged every step and the sample table."""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from typing import Any

from crsp_ops.config.selfplay_config import ROLES
from crsp_ops.crsp.rewards.solve import reward_means
from crsp_ops.crsp.selfplay.episode import Episode, RoleSample


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    return statistics.fmean(values), statistics.pstdev(values)


def episode_metrics(episode: Episode, problem_types: Sequence[str]) -> dict[str, float]:
    """Per-role reward mean/std and response length, solve rate per type, proposal validity.

    Roles or types without samples this step report 0 so every key exists at every step.
    Each solve reward function adds ``reward/<name>/mean|std`` over the samples it applied to.

    Args:
        episode: the scored step.
        problem_types: configured task types (each gets a ``solve_rate/<type>``).

    Returns:
        ``{"reward/solve/mean": ..., "solve_rate/code_o": ..., ...}`` plus the episode counters.
    """
    metrics: dict[str, float] = dict(episode.counters)
    for role in ROLES:
        samples = [s for s in episode.samples if s.role == role]
        mean, std = _mean_std([s.reward for s in samples])
        metrics[f"reward/{role}/mean"], metrics[f"reward/{role}/std"] = mean, std
        metrics[f"reward/{role}/role_mean"] = _mean_std([s.role_reward for s in samples])[0]
        metrics[f"response_length/{role}"] = _mean_std(
            [s.completion.response_tokens for s in samples])[0]
        metrics[f"format_ok/{role}"] = _mean_std([float(s.well_formed) for s in samples])[0]
    for task_type in problem_types:
        solved = [float(s.passed) for s in episode.samples
                  if s.role == "solve" and s.task_type == task_type]
        metrics[f"solve_rate/{task_type}"] = _mean_std(solved)[0]
    for family, (hits, total) in family_solve_counts(episode).items():
        metrics[f"solve_rate/family/{family}"] = hits / total
    solve_rewards = [s.info["rewards"] for s in episode.samples
                     if s.role == "solve" and "rewards" in s.info]
    for name, (mean, std) in reward_means(solve_rewards).items():  # each reward function's
        metrics[f"reward/{name}/mean"], metrics[f"reward/{name}/std"] = mean, std
    solves = [s for s in episode.samples if s.role == "solve"]
    metrics["solve/flat_task_share"] = flat_task_share(
        [(s.info["task_index"], s.passed) for s in solves])
    metrics["solve/flat_reward_share"] = flat_task_share(
        [(s.info["task_index"], s.reward) for s in solves])
    count = episode.counters.get("proposals/count", 0.0)
    metrics["proposals/valid_rate"] = episode.counters.get("proposals/valid", 0.0) / count \
        if count else 0.0
    critiques = [s for s in episode.samples if s.role == "critique"]
    metrics["critique/agreement"] = _mean_std([s.info["agreement"] for s in critiques])[0]
    metrics["critique/creativity"] = _mean_std([s.info["creativity"] for s in critiques])[0]
    metrics["response_tokens"] = float(sum(s.completion.response_tokens for s in episode.samples))
    return metrics


def _solves_by_family(episode: Episode) -> dict[str, list[RoleSample]]:
    """The step's solve rollouts grouped by family (``task_family``, kept in ``info``)."""
    families: dict[str, list[RoleSample]] = {}
    for sample in (s for s in episode.samples if s.role == "solve"):
        families.setdefault(sample.info.get("family", sample.task_type), []).append(sample)
    return dict(sorted(families.items()))


def family_solve_counts(episode: Episode) -> dict[str, tuple[int, int]]:
    """``{family: (correct, rollouts)}`` over the step's solve rollouts (see ``task_family``)."""
    return {name: (sum(s.passed for s in samples), len(samples))
            for name, samples in _solves_by_family(episode).items()}


def flat_task_share(outcomes: Sequence[tuple[Hashable, Hashable]]) -> float:
    """The share of solved tasks whose samples all had the same outcome.

    ``outcomes`` are ``(task, outcome)`` of solve samples, the task as the trainer keys it
    (``info["task_index"]``, the key of ``advantages.baseline_group``'s per-task groups). With
    ``correct`` as the outcome, such a task gives no correctness contrast within itself
    (``solve/flat_task_share``); with the reward, no contrast at all, so a per-task baseline
    (GRPO's, ``train.advantage_baseline=task``) draws no signal from it
    (``solve/flat_reward_share``, lower where a reward pays partial credit). Tasks
    with one sample are left out; 0 when none has two.

    >>> flat_task_share([(0, True), (0, True), (1, False), (1, True), (2, False), (2, False)])
    0.6666666666666666
    >>> flat_task_share([(0, 0.5), (0, 0.0), (1, 0.0), (1, 0.0)])
    0.5
    """
    tasks: dict[Hashable, list[Hashable]] = {}
    for task, outcome in outcomes:
        tasks.setdefault(task, []).append(outcome)
    groups = [results for results in tasks.values() if len(results) > 1]
    if not groups:
        return 0.0
    return sum(len(set(g)) == 1 for g in groups) / len(groups)


def family_reward_spread(episode: Episode) -> dict[str, float]:
    """``{family: highest - lowest solve reward}`` over the step's solve rollouts."""
    return {name: max(s.reward for s in samples) - min(s.reward for s in samples)
            for name, samples in _solves_by_family(episode).items()}


def flat_families(counts: dict[str, tuple[int, int]],
                  spreads: dict[str, float] | None = None) -> list[str]:
    """Warnings for families whose rollouts were all wrong or all right.

    An all-wrong family has no correct answer to reinforce, an all-right one nothing left to
    learn. A dataset's family (``dataset``) whose rewards still differ (``spreads``: a reward
    with partial credit around ``train.success_threshold``) learns from them, and the line says
    so; otherwise it is told to change its prompts, a generator's family its difficulty.

    >>> spreads = {"sub": 0.5, "dataset": 0.5}  # a generator's family: the format rule's spread
    >>> for line in flat_families({"add": (3, 8), "sub": (0, 8), "code_o": (8, 8)}, spreads):
    ...     print(line.split(" (")[0], "|", line.split("; ")[-1])
    family sub: 0 of 8 solve rollouts correct | use easier tasks (e.g. crsp.edge_difficulty)
    family code_o: 8 of 8 solve rollouts correct | use harder tasks
    >>> line = flat_families({"dataset": (0, 8)}, spreads)[0]
    >>> print(line.split(", but")[0].split(": ")[1], "|", line.split(": ")[2].split(";")[0])
    0 of 8 solve rollouts reached train.success_threshold | the update learns from that
    """
    warnings = []
    for family, (hits, total) in counts.items():
        if not total or hits not in (0, total):
            continue
        spread, dataset = (spreads or {}).get(family, 0.0), family == "dataset"
        if dataset and spread > 0:  # a user's reward: success is train.success_threshold
            warnings.append(
                f"family {family}: {hits} of {total} solve rollouts reached "
                f"train.success_threshold, but their rewards differ by up to {spread:.3g}: the "
                "update learns from that; the solve rate counts only rewards at or above the "
                "threshold")
            continue
        kind, fix = (("all wrong: no correct answer to reinforce",
                      "use easier prompts, or a reward with partial credit" if dataset
                      else "use easier tasks (e.g. crsp.edge_difficulty)") if hits == 0
                     else ("all right: nothing left to learn",
                           "use harder prompts" if dataset else "use harder tasks"))
        warnings.append(f"family {family}: {hits} of {total} solve rollouts correct "
                        f"({kind}); {fix}")
    return warnings


def flat_family_warnings(episode: Episode) -> list[str]:
    """``flat_families`` of a scored step: its families' solve counts and reward spreads."""
    return flat_families(family_solve_counts(episode), family_reward_spread(episode))


def _last_user(sample: RoleSample) -> str:
    return next((m["content"] for m in reversed(sample.messages) if m["role"] == "user"), "")


def sample_table(episode: Episode, step: int) -> dict[str, Any]:
    """Solutions with their task, critique and rewards, and the proposals (JSON-ready).

    The ``columns``/``data`` layout is the one MLflow's table artifacts use.
    """
    critiques = {s.info["solution_id"]: s for s in episode.samples if s.role == "critique"}
    columns = ["step", "task_type", "task", "solution", "correct", "solve_reward", "critique",
               "verdict", "critique_reward", "agreement", "creativity"]
    data = []
    for sample in (s for s in episode.samples if s.role == "solve"):
        review = critiques.get(sample.example_id)
        data.append([
            step, sample.task_type, _last_user(sample), sample.completion.text, sample.passed,
            sample.reward, review.completion.text if review else None,
            review.info["verdict"] if review else None, review.reward if review else None,
            review.info["agreement"] if review else None,
            review.info["creativity"] if review else None])
    proposals = [{"task_type": s.task_type, "proposal": s.completion.text, "valid": s.passed,
                  "reward": s.reward, "detail": s.info.get("detail", "")}
                 for s in episode.samples if s.role == "propose"]
    return {"step": step, "columns": columns, "data": data, "proposals": proposals}

"""Dynamic sampling (DAPO): drop solve groups without reward variance, refill from more tasks.

A flat group only dilutes the step under a per-task baseline; refills are capped at
``max_rounds`` and every generated sample is counted, kept or not.

Design: docs/design/trainer.md#dynamic_sampling.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

from crsp_ops.crsp.rewards.functions import RewardState
from crsp_ops.crsp.rewards.solve import RewardSet
from crsp_ops.crsp.selfplay.episode import Episode, EpisodeOptions, RoleSample, solve
from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
from crsp_ops.crsp.tasks.task_types import TaskType
from crsp_ops.inference.backend import GenerationBackend

SolveMore = Callable[[list[str], int], list[RoleSample]]  # (task types, round) -> solve samples


def solve_groups(samples: Sequence[RoleSample]) -> dict[int, list[RoleSample]]:
    """Solve samples by ``info["task_index"]``, in first-seen order."""
    groups: dict[int, list[RoleSample]] = defaultdict(list)
    for sample in samples:
        if sample.role == "solve":
            groups[int(sample.info["task_index"])].append(sample)
    return dict(groups)


def is_flat(group: Sequence[RoleSample]) -> bool:
    """All rewards of the group equal (a single sample is flat too)."""
    return len({sample.reward for sample in group}) <= 1


def relabel(samples: Sequence[RoleSample], offset: int) -> list[RoleSample]:
    """Solve samples with ``task_index`` shifted by ``offset`` (ids unique within the step)."""
    out = []
    for sample in samples:
        index = int(sample.info["task_index"]) + offset
        number = sample.example_id.rsplit("/", 1)[-1]
        out.append(replace(sample, example_id=f"solve/{index}/{number}",
                           info={**sample.info, "task_index": index}))
    return out


def refill(samples: Sequence[RoleSample], solve_more: SolveMore, *,
           max_rounds: int) -> tuple[list[RoleSample], dict[str, float]]:
    """Drop flat solve groups and refill from ``solve_more``.

    Design: docs/design/trainer.md#dynamic_sampling.

    Args:
        samples: one episode's samples (every role; only solve groups are filtered).
        solve_more: generates solve samples for tasks of the given types (one group each,
            ``task_index`` from 0); called at most ``max_rounds`` times.
        max_rounds: cap on refill rounds.

    Returns:
        ``(samples, counters)``: the other roles' samples, the informative solve groups (refills
        relabelled after the highest task index), and ``dynamic_sampling/*`` counters:
        ``flat_groups`` (dropped, refills included), ``extra_tasks``, ``extra_samples``,
        ``dropped_samples``, ``rounds``, ``unfilled`` (groups still missing).
    """
    groups = solve_groups(samples)
    flat = {index for index, group in groups.items() if is_flat(group)}
    kept = [s for s in samples if s.role != "solve" or int(s.info["task_index"]) not in flat]
    missing = [groups[index][0].task_type for index in groups if index in flat]
    counters = {"flat_groups": float(len(flat)), "extra_tasks": 0.0, "extra_samples": 0.0,
                "dropped_samples": float(sum(len(groups[i]) for i in flat)), "rounds": 0.0}
    offset = max(groups, default=-1) + 1
    for round_index in range(max_rounds):
        if not missing:
            break
        fresh = relabel(solve_more(list(missing), round_index), offset)
        new_groups = solve_groups(fresh)
        offset = max(new_groups, default=offset - 1) + 1
        counters["rounds"] += 1
        counters["extra_tasks"] += len(new_groups)
        counters["extra_samples"] += len(fresh)
        missing = []
        for group in new_groups.values():
            if is_flat(group):
                counters["flat_groups"] += 1
                counters["dropped_samples"] += len(group)
                missing.append(group[0].task_type)
            else:
                kept.extend(group)
    counters["unfilled"] = float(len(missing))
    return kept, {f"dynamic_sampling/{key}": value for key, value in counters.items()}


def refill_episode(episode: Episode, backend: GenerationBackend, buffers: TaskBuffers,
                   options: EpisodeOptions, rewards: RewardSet, state: RewardState, *,
                   seed: int, rng: random.Random, max_rounds: int) -> Episode:
    """``episode`` with its flat solve groups replaced by groups of more buffer tasks.

    Round ``r`` samples with ``seed + 1000 * (r + 1)``; the counters join the episode's.
    """
    def solve_more(task_types: list[str], round_index: int) -> list[RoleSample]:
        tasks = [buffers.sample(TaskType(name), 1, rng)[0] for name in task_types]
        samples, _ = solve(backend, tasks, options, rewards, state,
                           seed + 1_000 * (round_index + 1))
        return samples

    samples, counters = refill(episode.samples, solve_more, max_rounds=max_rounds)
    return replace(episode, samples=tuple(samples), counters={**episode.counters, **counters})

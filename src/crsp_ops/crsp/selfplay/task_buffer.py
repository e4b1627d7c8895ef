"""Task buffers: one bounded pool of tasks per type, seeded with built-in tasks, JSON-serialisable.

Seed tasks are never evicted (they keep every type solvable); proposals that pass validation
are appended and the oldest proposal is dropped once a buffer is full, as Absolute Zero's
buffers do. ``state()``/``from_state`` round-trip through plain JSON for checkpoints.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from crsp_ops.crsp.tasks.task_types import CodeTask, MathTask, Task, TaskType


def task_to_dict(task: Task) -> dict[str, Any]:
    """A JSON-ready dict of ``task`` (``type`` plus its fields).

    >>> task_to_dict(MathTask("1+1?", "2", "2"))["type"]
    'math'
    """
    if isinstance(task, MathTask):
        return {"type": "math", **asdict(task)}
    row = asdict(task)
    row["task_type"] = task.task_type.value
    return {"type": task.task_type.value, **{k: list(v) if isinstance(v, tuple) else v
                                             for k, v in row.items()}}


def task_from_dict(row: Mapping[str, Any]) -> Task:
    """Inverse of ``task_to_dict``.

    >>> task_from_dict(task_to_dict(MathTask("1+1?", "2", "2")))
    MathTask(question='1+1?', solution='2', answer='2')
    """
    if row["type"] == "math":
        return MathTask(row["question"], row["solution"], row["answer"])
    return CodeTask(TaskType(row["task_type"]), row["program"], tuple(row["inputs"]),
                    tuple(row["outputs"]), row.get("message", ""))


class TaskBuffers:
    """Per-type task pools: fixed starter tasks plus a bounded FIFO of accepted proposals.

    Args:
        seeds: the initial tasks of each type (kept forever).
        capacity: most tasks per type, seeds included (>= number of seeds of any type).
    """

    def __init__(self, seeds: Mapping[TaskType, Sequence[Task]], *, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._seeds = {t: list(tasks)[:capacity] for t, tasks in seeds.items()}
        self._added: dict[TaskType, list[Task]] = {t: [] for t in seeds}

    @property
    def task_types(self) -> tuple[TaskType, ...]:
        """The types this buffer holds, in configuration order."""
        return tuple(self._seeds)

    def tasks(self, task_type: TaskType) -> list[Task]:
        """Every task of ``task_type``: seeds first, then proposals oldest first."""
        return self._seeds[task_type] + self._added[task_type]

    def sizes(self) -> dict[str, int]:
        """Number of tasks per type, keyed by type name."""
        return {t.value: len(self.tasks(t)) for t in self._seeds}

    def add(self, tasks: Iterable[Task]) -> int:
        """Append tasks of known types (duplicates skipped); return how many were added."""
        added = 0
        for task in tasks:
            pool = self._added.get(task.task_type)
            if pool is None or task in self.tasks(task.task_type):
                continue
            pool.append(task)
            room = self.capacity - len(self._seeds[task.task_type])
            del pool[: max(0, len(pool) - room)]
            added += 1
        return added

    def sample(self, task_type: TaskType, count: int, rng: random.Random) -> list[Task]:
        """``count`` tasks of ``task_type`` drawn with replacement (empty if the type is empty)."""
        pool = self.tasks(task_type)
        return [rng.choice(pool) for _ in range(count)] if pool else []

    def draw(self, task_type: TaskType, count: int, rng: random.Random) -> list[Task]:
        """A step's tasks to solve: here ``sample``'s; a dataset's come in epochs (``epochs``)."""
        return self.sample(task_type, count, rng)

    @property
    def epoch(self) -> float:
        """Passes over a dataset completed so far: 0 for self-play pools, which have none."""
        return 0.0

    def state(self) -> dict[str, list[dict[str, Any]]]:
        """JSON-ready state of the proposals (seeds are rebuilt from code and data)."""
        return {t.value: [task_to_dict(task) for task in tasks] for t, tasks in self._added.items()}

    def load_state(self, state: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Restore proposals saved by ``state()``."""
        for name, rows in state.items():
            task_type = TaskType(name)
            if task_type in self._added:
                self._added[task_type] = [task_from_dict(row) for row in rows]

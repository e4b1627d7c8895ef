"""A dataset's rows in epochs: each row once per epoch, in a fresh seeded order every epoch.

``EpochBuffer`` is the task buffer of a user's dataset. A step's ``draw`` takes the next rows of
the current epoch's order (continuing into the next epoch's when it runs out); under several
processes each takes its own share of the step's rows. Extra rows (dynamic sampling's refills)
come from ``sample``, with replacement, and leave the epochs alone. The position is part of
``state()``, so a resumed run continues the same order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
from crsp_ops.crsp.tasks.task_types import PromptTask, Task, TaskType

POSITION = "epoch_position"  # the key of the rows drawn so far in ``state()``


def epoch_order(rows: int, seed: int, epoch: int) -> list[int]:
    """Row indices in epoch ``epoch``'s order (the same for every process).

    >>> sorted(epoch_order(5, 0, 3)) == list(range(5))
    True
    >>> epoch_order(5, 0, 0) == epoch_order(5, 0, 0)
    True
    """
    order = list(range(rows))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return order


def steps_per_epoch(rows: int, tasks_per_step: int) -> int:
    """Steps that visit every row once (the last may also start the next epoch).

    >>> steps_per_epoch(10, 4)
    3
    """
    return math.ceil(rows / tasks_per_step)


class EpochBuffer(TaskBuffers):
    """One dataset's rows, drawn without replacement epoch by epoch (module docstring).

    Args:
        rows: the dataset's training rows.
        seed: ``crsp.seed``: fixes every epoch's order.
        rank: this process's index; ``processes``: how many draw each step.
    """

    def __init__(self, rows: Sequence[PromptTask], *, seed: int, rank: int = 0,
                 processes: int = 1) -> None:
        super().__init__({TaskType.DATASET: rows}, capacity=len(rows))
        self.rows, self.seed, self.rank, self.processes = list(rows), seed, rank, processes
        self.drawn = 0  # rows drawn by every process together, over all epochs
        self._order: tuple[int, list[int]] = (0, epoch_order(len(self.rows), seed, 0))

    @property
    def epoch(self) -> float:
        """Epochs completed, a float as in TRL's ``trainer_state.epoch``."""
        return self.drawn / len(self.rows)

    def draw(self, task_type: TaskType, count: int, rng: random.Random) -> list[Task]:
        """The step's next ``count`` rows of this process (``rng`` is not used)."""
        if task_type is not TaskType.DATASET:
            return []
        start = self.drawn + self.rank * count
        self.drawn += count * self.processes
        return [self.rows[self._row(position)] for position in range(start, start + count)]

    def _row(self, position: int) -> int:
        epoch, index = divmod(position, len(self.rows))
        if self._order[0] != epoch:
            self._order = (epoch, epoch_order(len(self.rows), self.seed, epoch))
        return self._order[1][index]

    def state(self) -> dict[str, Any]:
        """The buffer's state with the epoch position."""
        return {**super().state(), POSITION: self.drawn}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore ``state()``; a state without a position starts at the first row."""
        state = dict(state)
        self.drawn = int(state.pop(POSITION, 0))
        super().load_state(state)

"""Task records: code tasks (abduction, deduction, induction), math tasks, and dataset rows."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class TaskType(str, enum.Enum):
    """What a task asks for, following Absolute Zero's naming for code tasks."""

    CODE_I = "code_i"  # abduction: given program + output, find an input
    CODE_O = "code_o"  # deduction: given program + input, predict the output
    CODE_F = "code_f"  # induction: given input/output pairs + message, write the program
    MATH = "math"  # a question with a known final answer (LIMO schema)
    DATASET = "dataset"  # a row of the user's dataset: a prompt, scored by reward functions


CODE_TASK_TYPES = (TaskType.CODE_I, TaskType.CODE_O, TaskType.CODE_F)


@dataclass(frozen=True)
class CodeTask:
    """A program defining ``f`` with literal inputs and the executor's ``repr`` outputs."""

    task_type: TaskType
    program: str  # Python source defining f
    inputs: tuple[str, ...]  # literal argument lists, e.g. "[1, 2], 3"
    outputs: tuple[str, ...]  # repr(f(*args)) per input, as the sandbox produced it
    message: str = ""  # code_f only: a hint about what f does

    def __post_init__(self) -> None:
        if self.task_type not in CODE_TASK_TYPES:
            raise ValueError(f"CodeTask needs a code task type, got {self.task_type}")
        if not self.inputs or len(self.inputs) != len(self.outputs):
            raise ValueError(f"need as many outputs as inputs (>= 1), got {len(self.inputs)} "
                             f"inputs and {len(self.outputs)} outputs")
        if self.task_type is TaskType.CODE_F and len(self.inputs) < 2:
            raise ValueError("a code_f task needs >= 2 input/output pairs (shown + held out)")

    @property
    def num_shown(self) -> int:
        """code_f: how many pairs the solver sees (the first ceil(n / 2)); all are checked."""
        return (len(self.inputs) + 1) // 2


@dataclass(frozen=True)
class MathTask:
    """A LIMO-format math problem."""

    question: str
    solution: str  # reference reasoning (used for trajectory seeding)
    answer: str  # final answer, compared after normalisation
    family: str = field(default="", repr=False)  # generator family ("add", ...); "" for LIMO

    @property
    def task_type(self) -> TaskType:
        """Always ``TaskType.MATH``."""
        return TaskType.MATH


@dataclass(frozen=True, eq=False)
class PromptTask:
    """A dataset row: its ``prompt`` (text, or chat messages) and every other column.

    The reward functions get the columns by name; nothing else reads them.
    """

    prompt: str | Sequence[Mapping[str, str]]
    columns: Mapping[str, Any] = field(default_factory=dict)
    family: str = "dataset"  # the name per-family solve rates are reported under

    @property
    def task_type(self) -> TaskType:
        """Always ``TaskType.DATASET``."""
        return TaskType.DATASET


Task = CodeTask | MathTask | PromptTask


def task_family(task: Task) -> str:
    """The family a task's solve rate is reported under: its generator family, else its type.

    >>> task_family(MathTask("1+1?", "", "2", family="add")), task_family(MathTask("q", "", "1"))
    ('add', 'math')
    """
    return getattr(task, "family", "") or task.task_type.value

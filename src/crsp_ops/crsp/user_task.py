"""A user's task for the trainer: dataset rows as ``PromptTask``s and their reward functions.

``load_dataset_tasks`` reads ``train.dataset`` (and ``train.eval_dataset``, or a seeded held-out
split of the dataset), imports the ``train.rewards`` SPECs and checks that every column a
reward function needs is in the data, all before a run starts, so bad input fails in one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsp_ops.config.selfplay_config import TrainSettings
from crsp_ops.crsp.rewards.functions import RewardError, RewardFunction, check_columns
from crsp_ops.crsp.rewards.functions import load_reward_function as load_reward
from crsp_ops.crsp.rewards.solve import RewardSet
from crsp_ops.crsp.tasks.task_types import PromptTask
from crsp_ops.data.prompt_dataset import PromptRows, load_prompt_rows, split_rows
from crsp_ops.tracking import Tracker


@dataclass(frozen=True)
class DatasetInput:
    """A dataset a run reads, as MLflow records it."""

    name: str  # "train" | "eval"
    source: str
    digest: str
    rows: int


@dataclass(frozen=True)
class DatasetTasks:
    """Everything the trainer needs for a user's task."""

    train: list[PromptTask]
    heldout: list[PromptTask]
    rewards: RewardSet
    inputs: list[DatasetInput]


def prompt_tasks(rows: Iterable[Mapping[str, Any]]) -> list[PromptTask]:
    """One task per row: its ``prompt``, every other column kept for the reward functions.

    >>> prompt_tasks([{"prompt": "2+2?", "answer": "4"}])[0].columns
    {'answer': '4'}
    """
    return [PromptTask(row["prompt"], {k: v for k, v in row.items() if k != "prompt"})
            for row in rows]


def reward_name(function: Callable[..., Any]) -> str:
    """A callable's name as its metrics carry it (``reward/<name>/mean``).

    MLflow allows only letters, digits, ``_ - . /`` and spaces in a metric name, so other runs
    of characters become ``_`` (a lambda is ``lambda``).

    >>> reward_name(lambda prompts, completions, **_: []), reward_name(len)
    ('lambda', 'len')
    """
    name = getattr(function, "__name__", type(function).__name__)
    return re.sub(r"[^\w.\- ]+", "_", name).strip("_ ") or "reward"


def user_reward_set(functions: Sequence[RewardFunction | Callable[..., Any]],
                    train: TrainSettings, columns: Sequence[str]) -> RewardSet:
    """The summed reward set of ``functions`` (callables are named after themselves).

    Raises:
        RewardError: no function, two with one name, or a column a function needs is missing.
    """
    named = tuple(f if isinstance(f, RewardFunction) else RewardFunction(reward_name(f), f)
                  for f in functions)
    check_columns(named, columns)
    return RewardSet(named, rule="sum", success_threshold=train.success_threshold,
                     timeout_s=train.reward_timeout_s)


def tasks_from_rows(train_rows: PromptRows, eval_rows: PromptRows | None,
                    functions: Sequence[RewardFunction | Callable[..., Any]],
                    train: TrainSettings, seed: int) -> DatasetTasks:
    """Split (when no eval rows are given), build the tasks and the checked reward set."""
    rewards = user_reward_set(functions, train, train_rows.columns)
    inputs = [DatasetInput("train", train_rows.source, train_rows.digest, len(train_rows.rows))]
    if eval_rows is not None:
        check_columns(rewards.functions, eval_rows.columns)
        rows, heldout = train_rows.rows, eval_rows.rows
        inputs.append(DatasetInput("eval", eval_rows.source, eval_rows.digest,
                                   len(eval_rows.rows)))
    elif train.eval_split_size:
        rows, heldout = split_rows(train_rows.rows, train.eval_split_size, seed)
    else:
        rows, heldout = train_rows.rows, []
    return DatasetTasks(prompt_tasks(rows), prompt_tasks(heldout), rewards, inputs)


def load_dataset_tasks(train: TrainSettings, root: Path, seed: int) -> DatasetTasks:
    """``train.dataset``, its held-out rows and ``train.rewards``, checked (module docstring).

    Raises:
        DataError: the data cannot be read or lacks what the trainer needs.
        RewardError: no ``train.rewards``, a SPEC that does not import, or a missing column.
    """
    if not train.rewards:
        raise RewardError(f"train.dataset={train.dataset} needs reward functions: pass --reward "
                          "path/to/file.py:function (or crsp_ops.crsp.rewards.solve:answer_match "
                          "to grade an 'answer' column)")
    train_rows = load_prompt_rows(_path(root, train.dataset))
    eval_rows = load_prompt_rows(_path(root, train.eval_dataset)) if train.eval_dataset else None
    functions = [load_reward(spec, root) for spec in train.rewards]
    return tasks_from_rows(train_rows, eval_rows, functions, train, seed)


def log_inputs(tracker: Tracker, inputs: Sequence[DatasetInput]) -> None:
    """Record each dataset as an MLflow dataset input of the run (``training``/``evaluation``)."""
    for data in inputs:
        tracker.log_input(data.name, data.source, data.digest,
                          "training" if data.name == "train" else "evaluation")


def _path(root: Path, path: str) -> Path:
    return Path(path) if Path(path).is_absolute() else root / path

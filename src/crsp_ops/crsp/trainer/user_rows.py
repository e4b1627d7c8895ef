"""A user's rows for ``CRSPTrainer``, checked before anything is written.

In-memory rows (a ``datasets.Dataset`` or a list of dicts) are checked and hashed as the JSONL
they become; the file is written only when training starts (``write_rows``), so a refused run
leaves no folder. Each error names the argument it is about (``train_dataset``,
``eval_dataset['name']``). ``lora_overrides`` reads a ``peft.LoraConfig``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peft import LoraConfig

from crsp_ops.atomic_io import atomic_write_text
from crsp_ops.config.trl_fields import TrlFieldError
from crsp_ops.crsp.rewards.functions import RewardError, check_columns
from crsp_ops.data.prompt_dataset import PromptRows, check_prompt, load_prompt_rows
from crsp_ops.errors import DataError


@dataclass(frozen=True)
class MemoryRows:
    """Checked rows and, for in-memory rows, the JSONL text still to write."""

    rows: PromptRows
    text: str | None = None  # None: read from the user's own path


def read_rows(dataset: Any, output_dir: Path, name: str, argument: str) -> MemoryRows:
    """Check ``dataset`` (a path, a ``datasets.Dataset`` or rows); nothing is written.

    Raises:
        DataError: no ``prompt`` column, no rows, or a bad prompt (naming ``argument``).
    """
    if isinstance(dataset, (str, Path)):
        try:
            return MemoryRows(load_prompt_rows(dataset))
        except DataError as error:
            raise DataError(f"{argument}: {error}") from None
    rows = dataset.to_list() if hasattr(dataset, "to_list") else [dict(r) for r in dataset]
    if not rows:
        raise DataError(f"{argument}: the dataset has no rows")
    columns = list(dict.fromkeys(key for row in rows for key in row))
    if "prompt" not in columns:
        raise DataError(f"{argument}: no 'prompt' column (columns found: "
                        f"{', '.join(columns) or 'none'}); name the input column 'prompt'")
    for index, row in enumerate(rows):
        check_prompt(row.get("prompt"), index, argument)
    text = "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
    path = output_dir / "data" / f"{name}.jsonl"
    digest = hashlib.sha256(text.encode()).hexdigest()
    return MemoryRows(PromptRows(rows, columns, [path], digest), text)


def write_rows(*sets: MemoryRows) -> None:
    """Write each in-memory set to its file (atomically), where the run records it."""
    for rows in sets:
        if rows.text is not None:
            atomic_write_text(rows.rows.files[0], rows.text)


@dataclass
class EvalSets:
    """``eval_dataset``: ``None``, one set, or a dict of named sets."""

    named: dict[str, MemoryRows] = field(default_factory=dict)  # {"": one unnamed set}

    @classmethod
    def read(cls, dataset: Any, output_dir: Path) -> EvalSets:
        """Check every set (see ``read_rows``); a dict's sets are named ``eval_<name>``."""
        if dataset is None:
            return cls()
        if isinstance(dataset, Mapping):
            return cls({str(name): read_rows(rows, output_dir, f"eval_{name}",
                                             f"eval_dataset[{name!r}]")
                        for name, rows in dataset.items()})
        return cls({"": read_rows(dataset, output_dir, "eval", "eval_dataset")})

    @property
    def first(self) -> PromptRows | None:
        """The set the training run scores (a dict's first)."""
        return next(iter(self.named.values())).rows if self.named else None

    @property
    def memory(self) -> list[MemoryRows]:
        """Every set, to write when training starts."""
        return list(self.named.values())

    def check(self, rewards: Any) -> None:
        """Raise ``DataError`` naming the set that lacks a column a reward function needs."""
        for name, rows in self.named.items():
            try:
                check_columns(rewards.functions, rows.rows.columns)
            except RewardError as error:
                where = f"eval_dataset[{name!r}]" if name else "eval_dataset"
                raise DataError(f"{where}: {error}") from None


def lora_overrides(peft_config: Any) -> dict[str, Any]:
    """crsp_ops keys of a ``peft.LoraConfig``; a field crsp_ops cannot honour is refused.

    Raises:
        TrlFieldError: not a ``LoraConfig``, or one of its other fields set.
    """
    if peft_config is None:
        return {}
    if not isinstance(peft_config, LoraConfig):
        raise TrlFieldError(f"peft_config: {type(peft_config).__name__}; crsp_ops trains "
                            f"LoRA adapters (peft.LoraConfig)")
    default = LoraConfig()
    mapped = {"r", "lora_alpha", "lora_dropout", "target_modules", "task_type",
              "peft_type", "inference_mode", "base_model_name_or_path", "revision"}
    for name, value in vars(peft_config).items():
        if name not in mapped and not name.startswith("_") \
                and value != getattr(default, name, value):
            raise TrlFieldError(f"peft_config.{name}={value!r} has no crsp_ops equivalent "
                                f"(r, lora_alpha, lora_dropout and target_modules map)")
    targets = peft_config.target_modules
    targets = ["all-linear"] if targets in (None, "all-linear") else \
        [targets] if isinstance(targets, str) else sorted(targets)
    return {"train.lora_rank": peft_config.r, "train.lora_alpha": peft_config.lora_alpha,
            "train.lora_dropout": peft_config.lora_dropout,
            "train.lora_target_modules": targets}

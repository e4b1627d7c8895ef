"""Reward functions with TRL's signature: load them from a SPEC, call them, check what they return.

``fn(prompts, completions, **columns) -> list[float | None]``, so one written for TRL runs
unchanged; ``None`` means "not applicable". A SPEC is ``file.py:function`` or
``package.module:function``, optionally ``=WEIGHT``.

Design: docs/design/trainer.md#functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import numbers
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsp_ops.errors import DataError

# What the trainer passes besides the dataset's columns (TRL passes the same names).
PASSED_ARGUMENTS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra",
                    "log_metric")


class RewardError(DataError):
    """A reward function could not be loaded, needs what the data lacks, or misbehaved.

    The message is one line naming the function (and the sample, where one is at fault).
    """


@dataclass(frozen=True)
class RewardFunction:
    """A reward callable with the name its metrics are logged under and its weight."""

    name: str
    fn: Callable[..., Sequence[Any]]
    weight: float = 1.0


@dataclass(frozen=True)
class RewardState:
    """What ``trainer_state`` offers a reward function (the attributes TRL's state has)."""

    global_step: int  # the step being scored (1-based)
    max_steps: int  # the run's budget (train.steps, or counted from train.num_epochs)
    epoch: float = 0.0  # passes over the dataset when the step began; 0 for self-play


def parse_reward_spec(spec: str) -> tuple[str, str, float]:
    """``(module or file, function name, weight)`` of ``SPEC[=WEIGHT]``.

    >>> parse_reward_spec("rewards.py:exact=0.5")
    ('rewards.py', 'exact', 0.5)
    >>> parse_reward_spec("my_pkg.rewards:exact")
    ('my_pkg.rewards', 'exact', 1.0)
    """
    target, _, weight_text = spec.partition("=")
    source, colon, name = target.rpartition(":")
    if not colon or not source or not name.isidentifier():
        raise RewardError(f"reward {spec!r}: expected path/to/file.py:function or "
                          "package.module:function, optionally =WEIGHT")
    try:
        weight = float(weight_text) if weight_text else 1.0
    except ValueError:
        raise RewardError(f"reward {spec!r}: weight {weight_text!r} is not a number") from None
    if not math.isfinite(weight):
        raise RewardError(f"reward {spec!r}: weight must be finite, got {weight_text}")
    return source, name, weight


def _import_source(source: str, root: Path, spec: str) -> Any:
    if source.endswith(".py"):
        path = Path(source) if Path(source).is_absolute() else root / source
        if not path.is_file():
            raise RewardError(f"reward {spec!r}: file {path} does not exist")
        module_name = f"crsp_reward_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
        try:
            module_spec.loader.exec_module(module)
        except Exception as error:
            del sys.modules[module_name]
            raise RewardError(f"reward {spec!r}: importing {path} failed: "
                              f"{type(error).__name__}: {error}") from error
        return module
    if str(root) not in sys.path:  # a user's package beside the project
        sys.path.append(str(root))
    try:
        return importlib.import_module(source)
    except Exception as error:
        raise RewardError(f"reward {spec!r}: cannot import module {source!r}: "
                          f"{type(error).__name__}: {error}") from error


def load_reward_function(spec: str, root: str | Path = ".") -> RewardFunction:
    """Import the function a SPEC names (a relative file path is taken from ``root``).

    Raises:
        RewardError: a malformed SPEC, a missing file, a failed import, a missing or
            non-callable attribute; the message says which part failed.
    """
    source, name, weight = parse_reward_spec(spec)
    module = _import_source(source, Path(root), spec)
    fn = getattr(module, name, None)
    if fn is None:
        raise RewardError(f"reward {spec!r}: {source} has no attribute {name!r}")
    if not callable(fn):
        raise RewardError(f"reward {spec!r}: {source}.{name} is not callable")
    return RewardFunction(name, fn, weight)


def required_columns(fn: Callable[..., Any]) -> list[str]:
    """Dataset columns ``fn`` cannot run without: its parameters with no default.

    >>> def reward(prompts, completions, answer, tests=None, **kwargs): ...
    >>> required_columns(reward)
    ['answer']
    """
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: nothing to check
        return []
    return [p.name for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.default is p.empty and p.name not in PASSED_ARGUMENTS]


def check_columns(functions: Sequence[RewardFunction], columns: Sequence[str]) -> None:
    """Raise ``RewardError`` when a function needs a column the dataset lacks.

    >>> def needs(prompts, completions, answer, **kw): ...
    >>> try:
    ...     check_columns([RewardFunction("needs", needs)], ["prompt", "question"])
    ... except RewardError as error:
    ...     print(error)
    reward needs: needs column 'answer', which the dataset lacks (columns: prompt, question)
    """
    for function in functions:
        missing = [name for name in required_columns(function.fn) if name not in columns]
        if missing:
            raise RewardError(
                f"reward {function.name}: needs column {', '.join(map(repr, missing))}, which "
                f"the dataset lacks (columns: {', '.join(columns)})")


@dataclass
class RewardCall:
    """One batch's inputs to every reward function (TRL's keyword arguments)."""

    prompts: list[Any]
    completions: list[Any]
    completion_ids: list[list[int]]
    columns: Mapping[str, list[Any]]
    state: RewardState
    extra: dict[str, list[Any]] = field(default_factory=dict)  # log_extra columns
    logged: dict[str, float] = field(default_factory=dict)  # log_metric values

    def __len__(self) -> int:
        return len(self.prompts)

    def kwargs(self, index: int | None = None) -> dict[str, Any]:
        """The keyword arguments of a call on the batch (or on sample ``index`` alone)."""
        pick = (lambda values: values) if index is None else (lambda values: [values[index]])
        return {"prompts": pick(self.prompts), "completions": pick(self.completions),
                "completion_ids": pick(self.completion_ids),
                **{name: pick(values) for name, values in self.columns.items()},
                "trainer_state": self.state, "log_extra": self.log_extra,
                "log_metric": self.log_metric}

    def log_extra(self, column: str, values: Sequence[Any]) -> None:
        """TRL's hook for extra columns of the completions table (kept per sample)."""
        self.extra[column] = list(values)

    def log_metric(self, name: str, value: float) -> None:
        """TRL's hook for a scalar a reward function wants logged with the step."""
        self.logged[name] = float(value)


def _run_with_limit(function: RewardFunction, kwargs: dict[str, Any], timeout_s: float,
                    size: int) -> Any:
    if timeout_s <= 0:
        return function.fn(**kwargs)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function.fn(**kwargs)
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=target, name=f"reward-{function.name}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise RewardError(f"reward {function.name}: took longer than train.reward_timeout_s="
                          f"{timeout_s:g} s on a batch of {size} samples; speed it up or raise "
                          "the limit")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _failing_index(function: RewardFunction, call: RewardCall) -> int | None:
    """The first sample on which ``function`` raises when called on it alone."""
    for index in range(len(call)):
        try:
            function.fn(**call.kwargs(index))
        except Exception:
            return index
    return None


def checked_values(function: RewardFunction, values: Any, size: int) -> list[float | None]:
    """``values`` as floats (``None`` kept), or ``RewardError`` naming the bad sample.

    >>> import numpy as np
    >>> checked_values(RewardFunction("f", print), [1, None, np.float32(0.5), np.int64(0)], 4)
    [1.0, None, 0.5, 0.0]
    >>> try:
    ...     checked_values(RewardFunction("f", print), [1, float("nan")], 2)
    ... except RewardError as error:
    ...     print(str(error)[:35])
    reward f: returned nan for sample 1
    """
    if hasattr(values, "tolist"):  # numpy arrays and tensors
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise RewardError(f"reward {function.name}: returned {type(values).__name__}, expected "
                          f"a list of {size} floats (one per completion)")
    if len(values) != size:
        raise RewardError(f"reward {function.name}: returned {len(values)} values for "
                          f"{size} completions; return one per completion")
    out: list[float | None] = []
    for index, value in enumerate(values):
        if value is None:
            out.append(None)
            continue
        if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:  # numpy / torch scalars
            value = value.item()
        if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
            raise RewardError(f"reward {function.name}: returned {value!r} "
                              f"({type(value).__name__}) for sample {index}; return a float, or "
                              "None when it does not apply")
        if not math.isfinite(value):
            raise RewardError(f"reward {function.name}: returned {value} for sample {index}; "
                              "return a finite float, or None when it does not apply")
        out.append(float(value))
    return out


def call_reward(function: RewardFunction, call: RewardCall, *, timeout_s: float = 0.0
                ) -> tuple[list[float | None], float]:
    """Run ``function`` on the batch; return its checked values and the seconds it took.

    Raises:
        RewardError: it raised (naming the first sample that fails alone, the original
            exception chained for the traceback), took longer than ``timeout_s`` (> 0), or
            returned the wrong length, a string, NaN or infinity.
    """
    started = time.perf_counter()
    try:
        values = _run_with_limit(function, call.kwargs(), timeout_s, len(call))
    except RewardError:
        raise
    except Exception as error:
        index = _failing_index(function, call)
        where = f"on sample {index}" if index is not None else f"on a batch of {len(call)}"
        raise RewardError(f"reward {function.name}: raised {type(error).__name__}: {error} "
                          f"{where}") from error
    return checked_values(function, values, len(call)), time.perf_counter() - started


def weighted_total(values: Mapping[str, Sequence[float | None]],
                   weights: Mapping[str, float]) -> list[float]:
    """Per sample, the weighted sum of the values that apply (``None`` skipped; none: 0).

    >>> weighted_total({"a": [1.0, None], "b": [0.5, None]}, {"a": 1.0, "b": 2.0})
    [2.0, 0.0]
    """
    names = list(values)
    size = len(values[names[0]]) if names else 0
    return [float(sum(weights[name] * values[name][i] for name in names
                      if values[name][i] is not None)) for i in range(size)]

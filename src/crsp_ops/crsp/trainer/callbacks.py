"""Callbacks: a user's code called at points of the run, with the step and that step's metrics.

Named as Hugging Face's ``TrainerCallback`` hooks, each called as ``hook(step, metrics)``:

* ``on_step_end``: after each training step is logged (the step's metrics);
* ``on_evaluate``: after each held-out evaluation (its ``eval/...`` metrics);
* ``on_save``: after each checkpoint is written (the last step's metrics);
* ``on_train_end``: once, after the final evaluation (the last step's and the final
  evaluation's metrics together).

A callback is a ``TrainerCallback`` (no-op defaults) or any object with some of these methods.
One that raises fails the run: ``CallbackError`` names the callback and the hook in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsp_ops.errors import DataError

HOOKS = ("on_step_end", "on_evaluate", "on_save", "on_train_end")


class CallbackError(DataError):
    """A callback raised; the message names it, the hook and the step in one line."""


class TrainerCallback:
    """Base class with a no-op for every hook; override the ones you need."""

    def on_step_end(self, step: int, metrics: Mapping[str, float]) -> None:
        """After training step ``step`` (1-based) was logged."""

    def on_evaluate(self, step: int, metrics: Mapping[str, float]) -> None:
        """After a held-out evaluation at ``step`` (0: before the first step)."""

    def on_save(self, step: int, metrics: Mapping[str, float]) -> None:
        """After the checkpoint of ``step`` was written."""

    def on_train_end(self, step: int, metrics: Mapping[str, float]) -> None:
        """Once, after the final evaluation."""


def callback_name(callback: Any) -> str:
    """What a message calls ``callback``: its own name, or its class's.

    >>> callback_name(TrainerCallback())
    'TrainerCallback'
    """
    return getattr(callback, "__name__", None) or type(callback).__name__


class Callbacks:
    """The run's callbacks, called in order; the loop's one way to reach them.

    Args:
        callbacks: ``TrainerCallback``s or objects with some of its methods.

    Raises:
        TypeError: an object with none of the hooks (``HOOKS``).
    """

    def __init__(self, callbacks: Sequence[Any] = ()) -> None:
        for callback in callbacks:
            if not any(callable(getattr(callback, hook, None)) for hook in HOOKS):
                raise TypeError(f"callback {callback_name(callback)} has none of the hooks "
                                f"{', '.join(HOOKS)}")
        self.callbacks = list(callbacks)
        self.last_metrics: dict[str, float] = {}  # the last step's, for on_save

    def step_end(self, step: int, metrics: Mapping[str, float]) -> None:
        """``on_step_end``; the metrics are kept for ``on_save`` and ``on_train_end``."""
        self.last_metrics = dict(metrics)
        self.call("on_step_end", step, metrics)

    def save(self, step: int) -> None:
        """``on_save`` with the last step's metrics."""
        self.call("on_save", step, self.last_metrics)

    def train_end(self, step: int, evaluation: Mapping[str, float]) -> None:
        """``on_train_end`` with the last step's and the final evaluation's metrics."""
        self.call("on_train_end", step, {**self.last_metrics, **evaluation})

    def call(self, hook: str, step: int, metrics: Mapping[str, float]) -> None:
        """Call ``hook`` of every callback that has it, each with its own copy of the metrics.

        Raises:
            CallbackError: a callback raised (the original error is its cause).
        """
        for callback in self.callbacks:
            method = getattr(callback, hook, None)
            if method is None:
                continue
            try:
                method(step, dict(metrics))
            except Exception as error:
                reason = str(error).splitlines()[0] if str(error) else ""
                raise CallbackError(f"callback {callback_name(callback)}.{hook} raised at step "
                                    f"{step}: {type(error).__name__}: {reason}") from error

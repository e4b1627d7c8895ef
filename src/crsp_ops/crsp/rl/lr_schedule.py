"""Learning-rate schedule of the trainer: linear warmup, then constant, linear or cosine decay.

The factor is a pure function of the completed training steps, so a resumed run continues the
same curve without any scheduler state in the checkpoint.
"""

from __future__ import annotations

import math
from typing import Any

LR_SCHEDULES = ("constant", "linear", "cosine")


def lr_factor(step: int, *, total: int, warmup: int, schedule: str) -> float:
    """Multiplier of the base learning rate for the update of step ``step`` (1-based).

    Warmup: ``step / (warmup + 1)`` for the first ``warmup`` steps (never 0, so no update is
    wasted). After it, ``constant`` stays at 1; ``linear`` and ``cosine`` fall from 1 (the first
    step after the warmup) to 0 after step ``total``.

    >>> [round(lr_factor(s, total=5, warmup=2, schedule="linear"), 3) for s in range(1, 6)]
    [0.333, 0.667, 1.0, 0.667, 0.333]
    """
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"unknown lr schedule {schedule!r}; choose one of {list(LR_SCHEDULES)}")
    if step <= warmup:
        return step / (warmup + 1)
    if schedule == "constant":
        return 1.0
    span = max(total - warmup, 1)
    progress = min((step - warmup - 1) / span, 1.0)  # 0 on the first decaying step
    if schedule == "linear":
        return 1.0 - progress
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def set_learning_rate(optimizer: Any, base_lr: float, factor: float) -> float:
    """Set every parameter group's learning rate to ``base_lr * factor``; return it."""
    lr = base_lr * factor
    for group in optimizer.param_groups:
        group["lr"] = lr
    return lr

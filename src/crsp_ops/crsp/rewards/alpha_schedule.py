"""Alpha schedules: how the weights of correctness (alpha_s) and agreement (alpha_c) move.

``rlsp_coupled`` (the seed's three phases: both weights start low and rise), ``constant`` and
``linear``, selected by name through ``make_alpha_schedule``.

Design: docs/design/trainer.md#alpha_schedule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

PHASE_BREAKS = (0.2, 0.6)


@dataclass(frozen=True)
class Alphas:
    """Weights of correctness in ``r_solve`` and of agreement in ``r_critique``."""

    alpha_s: float
    alpha_c: float

    def __post_init__(self) -> None:
        for name in ("alpha_s", "alpha_c"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name} must be in [0, 1], got {value}")


AlphaSchedule = Callable[[int, int], Alphas]
"""``schedule(step, total_steps) -> Alphas``."""


def _progress(step: int, total_steps: int) -> float:
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    if not 0 <= step <= total_steps:
        raise ValueError(f"step must be in [0, total_steps={total_steps}], got {step}; "
                         "clamp the step or raise total_steps")
    return step / total_steps


def _lerp(start: float, end: float, t: float) -> float:
    # This form hits both endpoints exactly (start + (end - start)·t can overshoot 1.0).
    return (1.0 - t) * start + t * end


RLSP_START, RLSP_MID, RLSP_END = Alphas(0.3, 0.1), Alphas(0.8, 0.6), Alphas(0.95, 0.8)


def rlsp_coupled_alphas(
    step: int, total_steps: int, *, start: Alphas = RLSP_START, end: Alphas = RLSP_END
) -> Alphas:
    """The seed's three-phase coupled schedule (design: docs/design/trainer.md#alpha_schedule).

    ``start`` and ``end`` (``reward.alpha_*_start`` / ``_end``) move the whole curve; the
    second breakpoint sits where the seed puts it, the same fraction of the way from ``start``
    to ``end`` (0.8 of 0.3→0.95 for alpha_s, 0.6 of 0.1→0.8 for alpha_c). The defaults are the
    seed's numbers.

    Args:
        step: current training step, in [0, total_steps].
        total_steps: planned number of steps (>= 1).
        start: the alphas held through the first phase.
        end: the alphas at the last step (component-wise >= ``start``).

    Returns:
        The alphas at ``step``.

    >>> rlsp_coupled_alphas(0, 100)
    Alphas(alpha_s=0.3, alpha_c=0.1)
    >>> rlsp_coupled_alphas(100, 100)
    Alphas(alpha_s=0.95, alpha_c=0.8)
    >>> rlsp_coupled_alphas(100, 100, start=Alphas(0.5, 0.5), end=Alphas(1.0, 0.9))
    Alphas(alpha_s=1.0, alpha_c=0.9)
    """
    fraction = _progress(step, total_steps)
    first, second = PHASE_BREAKS
    mid = _rlsp_midpoint(start, end)
    if fraction < first:
        return start
    if fraction < second:
        t = (fraction - first) / (second - first)
        return Alphas(_lerp(start.alpha_s, mid.alpha_s, t), _lerp(start.alpha_c, mid.alpha_c, t))
    t = (fraction - second) / (1.0 - second)
    return Alphas(_lerp(mid.alpha_s, end.alpha_s, t), _lerp(mid.alpha_c, end.alpha_c, t))


def _rlsp_midpoint(start: Alphas, end: Alphas) -> Alphas:
    if (start, end) == (RLSP_START, RLSP_END):
        return RLSP_MID  # exactly the seed's numbers, no rounding on the way
    w_s = (RLSP_MID.alpha_s - RLSP_START.alpha_s) / (RLSP_END.alpha_s - RLSP_START.alpha_s)
    w_c = (RLSP_MID.alpha_c - RLSP_START.alpha_c) / (RLSP_END.alpha_c - RLSP_START.alpha_c)
    return Alphas(_lerp(start.alpha_s, end.alpha_s, w_s), _lerp(start.alpha_c, end.alpha_c, w_c))


def constant_alphas(step: int, total_steps: int, *, alpha_s: float, alpha_c: float) -> Alphas:
    """The same alphas at every step (still bounds-checks ``step``).

    >>> constant_alphas(5, 10, alpha_s=0.5, alpha_c=0.5)
    Alphas(alpha_s=0.5, alpha_c=0.5)
    """
    _progress(step, total_steps)
    return Alphas(alpha_s, alpha_c)


def linear_alphas(step: int, total_steps: int, *, start: Alphas, end: Alphas) -> Alphas:
    """Interpolate linearly from ``start`` at step 0 to ``end`` at ``total_steps``.

    >>> linear_alphas(5, 10, start=Alphas(0.2, 0.0), end=Alphas(0.8, 1.0))
    Alphas(alpha_s=0.5, alpha_c=0.5)
    """
    t = _progress(step, total_steps)
    return Alphas(_lerp(start.alpha_s, end.alpha_s, t), _lerp(start.alpha_c, end.alpha_c, t))


ALPHA_SCHEDULES: dict[str, Callable[..., Alphas]] = {
    "rlsp_coupled": rlsp_coupled_alphas,
    "constant": constant_alphas,
    "linear": linear_alphas,
}


def make_alpha_schedule(name: str, **params: object) -> AlphaSchedule:
    """Build a schedule by name.

    Args:
        name: one of ``ALPHA_SCHEDULES``.
        **params: ``constant``: ``alpha_s``, ``alpha_c``; ``linear`` and ``rlsp_coupled``:
            ``start``, ``end`` (``Alphas`` with ``start <= end`` component-wise: the weights may
            only rise; ``rlsp_coupled`` defaults to the seed's 0.3/0.1 → 0.95/0.8).

    Returns:
        ``schedule(step, total_steps) -> Alphas``.

    >>> make_alpha_schedule("rlsp_coupled")(20, 100)
    Alphas(alpha_s=0.3, alpha_c=0.1)
    """
    if name not in ALPHA_SCHEDULES:
        raise ValueError(f"unknown alpha schedule {name!r}; choose one of "
                         f"{sorted(ALPHA_SCHEDULES)}")
    if name == "constant":
        Alphas(params["alpha_s"], params["alpha_c"])  # validate now, not at step 0
        return partial(constant_alphas, alpha_s=params["alpha_s"], alpha_c=params["alpha_c"])
    unknown = sorted(set(params) - {"start", "end"})
    if unknown:
        raise ValueError(f"{name} takes only start and end, got {unknown}")
    start, end = params.get("start", RLSP_START), params.get("end", RLSP_END)
    if start.alpha_s > end.alpha_s or start.alpha_c > end.alpha_c:
        raise ValueError(f"{name} alpha schedule must be non-decreasing, got start={start} "
                         f"end={end}; swap them or use 'constant'")
    return partial(ALPHA_SCHEDULES[name], start=start, end=end)

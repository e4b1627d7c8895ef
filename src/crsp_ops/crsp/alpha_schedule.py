"""Alpha schedules: how the weights of correctness (alpha_s) and agreement (alpha_c) move.

``rlsp_coupled`` is the seed's three-phase schedule: both weights start low (exploration:
length and creativity count for more) and rise together, so the *exploration* weights
``1 − alpha`` decay:

=================  =============================  =============================
phase (step / T)   alpha_s                        alpha_c
=================  =============================  =============================
[0, 0.2)           0.3                            0.1
[0.2, 0.6)         0.3 → 0.8 linearly             0.1 → 0.6 linearly
[0.6, 1.0]         0.8 → 0.95 linearly            0.6 → 0.8 linearly
=================  =============================  =============================

It is continuous at both breakpoints and non-decreasing. ``constant`` and ``linear`` are the
alternatives, selected by name through ``make_alpha_schedule``.
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


def rlsp_coupled_alphas(step: int, total_steps: int) -> Alphas:
    """The seed's three-phase coupled schedule (see the module docstring).

    Args:
        step: current training step, in [0, total_steps].
        total_steps: planned number of steps (>= 1).

    Returns:
        The alphas at ``step``.

    >>> rlsp_coupled_alphas(0, 100)
    Alphas(alpha_s=0.3, alpha_c=0.1)
    >>> rlsp_coupled_alphas(100, 100)
    Alphas(alpha_s=0.95, alpha_c=0.8)
    """
    fraction = _progress(step, total_steps)
    first, second = PHASE_BREAKS
    if fraction < first:
        return Alphas(0.3, 0.1)
    if fraction < second:
        t = (fraction - first) / (second - first)
        return Alphas(_lerp(0.3, 0.8, t), _lerp(0.1, 0.6, t))
    t = (fraction - second) / (1.0 - second)
    return Alphas(_lerp(0.8, 0.95, t), _lerp(0.6, 0.8, t))


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
        **params: ``constant``: ``alpha_s``, ``alpha_c``; ``linear``: ``start``, ``end``
            (``Alphas`` with ``start <= end`` component-wise: the weights may only rise);
            ``rlsp_coupled``: none.

    Returns:
        ``schedule(step, total_steps) -> Alphas``.

    >>> make_alpha_schedule("rlsp_coupled")(20, 100)
    Alphas(alpha_s=0.3, alpha_c=0.1)
    """
    if name not in ALPHA_SCHEDULES:
        raise ValueError(f"unknown alpha schedule {name!r}; choose one of "
                         f"{sorted(ALPHA_SCHEDULES)}")
    if name == "rlsp_coupled":
        if params:
            raise ValueError(f"rlsp_coupled takes no parameters, got {sorted(params)}")
        return rlsp_coupled_alphas
    if name == "constant":
        Alphas(params["alpha_s"], params["alpha_c"])  # validate now, not at step 0
        return partial(constant_alphas, alpha_s=params["alpha_s"], alpha_c=params["alpha_c"])
    start, end = params["start"], params["end"]
    if start.alpha_s > end.alpha_s or start.alpha_c > end.alpha_c:
        raise ValueError(f"linear alpha schedule must be non-decreasing, got start={start} "
                         f"end={end}; swap them or use 'constant'")
    return partial(linear_alphas, start=start, end=end)

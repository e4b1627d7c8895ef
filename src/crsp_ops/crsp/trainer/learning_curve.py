"""Learning curves: held-out solve rate (with 95% bands) against generated solve samples.

A curve is a list of ``CurvePoint`` records, one per held-out evaluation; the trainer writes
its own (``learning_curve.json`` + ``.png`` in the output directory) and
``benchmarks/learning/curve.py`` draws several trainers' curves on one figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from crsp_ops.atomic_io import atomic_path
from crsp_ops.evaluation.bootstrap import bootstrap_interval


@dataclass(frozen=True)
class CurvePoint:
    """One held-out evaluation of a training run."""

    step: int  # optimizer steps done
    samples: int  # solve responses generated for training so far
    solve_rate: float
    solve_rate_ci: tuple[float, float]
    well_formed: float
    well_formed_ci: tuple[float, float]
    solve_rate_well_formed: float  # correct among well-formed answers
    tasks: int
    reward: float | None = None  # mean total reward, where reward functions scored the tasks
    reward_ci: tuple[float, float] | None = None

    def to_row(self) -> dict:
        """JSON-ready (intervals as lists)."""
        row = asdict(self)
        for name in ("solve_rate_ci", "well_formed_ci", "reward_ci"):
            row[name] = None if row[name] is None else list(row[name])
        return row

    @classmethod
    def from_row(cls, row: Mapping) -> CurvePoint:
        """The point ``to_row`` wrote (rows written before ``reward`` existed too)."""
        reward_ci = row.get("reward_ci")
        return cls(**{**row, "solve_rate_ci": tuple(row["solve_rate_ci"]),
                      "well_formed_ci": tuple(row["well_formed_ci"]),
                      "reward_ci": None if reward_ci is None else tuple(reward_ci)})


def curve_point(step: int, samples: int, metrics: Mapping[str, float]) -> CurvePoint:
    """A point from the held-out scores (``trainer.evaluation.score_heldout``'s metrics).

    The mean total reward (``reward/total``) is kept where reward functions scored the tasks.

    >>> p = curve_point(2, 64, {"all": 0.5, "all_ci_low": 0.4, "all_ci_high": 0.6,
    ...     "well_formed": 0.9, "well_formed_ci_low": 0.85, "well_formed_ci_high": 0.95,
    ...     "solve_rate_well_formed": 0.55, "heldout_tasks": 200.0, "reward/total": 0.3,
    ...     "reward/total_ci_low": 0.25, "reward/total_ci_high": 0.35})
    >>> p.solve_rate_ci, p.tasks, p.reward_ci
    ((0.4, 0.6), 200, (0.25, 0.35))
    """
    reward = metrics.get("reward/total")
    return CurvePoint(
        step=step, samples=samples, solve_rate=metrics["all"],
        solve_rate_ci=(metrics["all_ci_low"], metrics["all_ci_high"]),
        well_formed=metrics["well_formed"],
        well_formed_ci=(metrics["well_formed_ci_low"], metrics["well_formed_ci_high"]),
        solve_rate_well_formed=metrics.get("solve_rate_well_formed", 0.0),
        tasks=int(metrics["heldout_tasks"]), reward=reward,
        reward_ci=None if reward is None else (metrics["reward/total_ci_low"],
                                               metrics["reward/total_ci_high"]))


@dataclass(frozen=True)
class PairedGain:
    """Held-out solve rate after minus before, over the same tasks, with its 95% interval."""

    diff: float
    low: float
    high: float
    tasks: int

    def metrics(self, prefix: str = "eval/solve_rate/gain") -> dict[str, float]:
        """``{prefix, prefix_ci_low, prefix_ci_high}`` for the run's metrics."""
        return {prefix: self.diff, f"{prefix}_ci_low": self.low, f"{prefix}_ci_high": self.high}


def paired_gain(before: Sequence[bool], after: Sequence[bool]) -> PairedGain:
    """Mean ``after - before`` per task and its paired bootstrap interval (tasks resampled).

    >>> g = paired_gain([False] * 60 + [True] * 40, [True] * 60 + [True] * 40)
    >>> g.diff, g.low > 0, g.tasks
    (0.6, True, 100)
    """
    if len(before) != len(after) or not before:
        raise ValueError(f"paired_gain needs verdicts of the same tasks, got {len(before)} "
                         f"and {len(after)}")
    rows = np.array([before, after], dtype=float).T  # (n, 2)
    low, high = bootstrap_interval(rows, lambda r: float(r[:, 1].mean() - r[:, 0].mean()))
    return PairedGain(float(rows[:, 1].mean() - rows[:, 0].mean()), low, high, len(rows))


class Panel(NamedTuple):
    """What the figure's second panel draws."""

    field: str  # a CurvePoint field, with its band in ``<field>_ci``
    label: str
    title: str
    ylim: tuple[float, float] | None


def second_panel(curves: Mapping[str, Sequence[CurvePoint]]) -> Panel:
    """The second panel: mean reward where every point has one, else the well-formed share.

    >>> with_reward = CurvePoint(0, 0, 0.0, (0.0, 0.0), 1.0, (1.0, 1.0), 0.0, 10, 0.4, (0.3, 0.5))
    >>> without = CurvePoint(0, 0, 0.0, (0.0, 0.0), 1.0, (1.0, 1.0), 0.0, 10)
    >>> second_panel({"crsp": [with_reward]}).field, second_panel({"crsp": [without]}).field
    ('reward', 'well_formed')
    """
    if curves and all(p.reward is not None for points in curves.values() for p in points):
        return Panel("reward", "mean reward", "mean reward (your reward functions)", None)
    return Panel("well_formed", "well-formed share", "well-formed answers", (0, 1.02))


def save_curve_figure(curves: Mapping[str, Sequence[CurvePoint]], path: str | Path, *,
                      title: str = "") -> Path:
    """Held-out solve rate and a second panel vs generated samples, one line per curve.

    The second panel is the mean reward where every curve carries one (a user's reward
    functions, partial credit included), else the well-formed share. Each line carries its 95%
    band; written atomically as PNG.
    """
    second = second_panel(curves)
    figure = Figure(figsize=(11, 4.2), layout="constrained")
    solve_axis, second_axis = figure.subplots(1, 2)
    for index, (name, points) in enumerate(curves.items()):
        colour = f"C{index % 10}"
        samples = [p.samples for p in points]
        for axis, value, band in ((solve_axis, "solve_rate", "solve_rate_ci"),
                                  (second_axis, second.field, f"{second.field}_ci")):
            axis.plot(samples, [getattr(p, value) for p in points], marker="o", color=colour,
                      label=name)
            axis.fill_between(samples, [getattr(p, band)[0] for p in points],
                              [getattr(p, band)[1] for p in points], color=colour, alpha=0.18)
    tasks = max((p.tasks for points in curves.values() for p in points), default=0)
    solve_axis.set(xlabel="generated solve samples", ylabel="held-out solve rate (greedy)",
                   title=f"solve rate, {tasks} held-out tasks, 95% bands")
    second_axis.set(xlabel="generated solve samples", ylabel=second.label, title=second.title)
    if second.ylim is not None:
        second_axis.set_ylim(*second.ylim)
    for axis in (solve_axis, second_axis):
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small")
    if title:
        figure.suptitle(title, fontsize="medium")
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=110, format="png")
    return Path(path)

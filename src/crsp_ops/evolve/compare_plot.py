"""The comparison figure a paper would use, one row of panels per (base model, held-out set).

Panels: held-out composite (initial vs best, with intervals), the minibatch composite per
iteration, and shortness × correctness with each run's frontier.

Design: docs/design/evolve.md#compare_plot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from crsp_ops.atomic_io import atomic_path
from crsp_ops.evolve.compare import RunRow, group_labels, group_rows, non_inferior_mark
from crsp_ops.evolve.frontier import pareto_indices

DPI = 110


def _label(row: RunRow) -> str:
    # names say what ran; the id prefix tells apart reruns of the same recipe
    return f"{row.run_name or row.proposer} ({row.run_id[:6]})"


def _errors(value: float, bounds: tuple[float, float]) -> tuple[float, float]:
    if math.isnan(value) or any(math.isnan(b) for b in bounds):
        return (0.0, 0.0)
    return (max(value - bounds[0], 0.0), max(bounds[1] - value, 0.0))


def paired_label(row: RunRow) -> str:
    """The best bar's label: paired token change and correctness gain ("" when not logged).

    >>> row = RunRow("r", "n", "FINISHED", "offline", 8, 0.3, 0.30, 0.34, 0.0, 1.0, "m", "h",
    ...              tokens_change=(-0.26, -0.30, -0.23), correctness_gain=(0.02, -0.01, 0.05))
    >>> print(paired_label(row))
    -26% tokens
    correct +0.02 NI
    """
    change, gain = row.tokens_change[0], row.correctness_gain
    if math.isnan(change) or any(math.isnan(v) for v in gain):
        return ""
    return f"{change:+.0%} tokens\ncorrect {gain[0]:+.2f}{non_inferior_mark(gain[1])}"


def _heldout_panel(axes, members: Sequence[RunRow]) -> None:
    positions = list(range(len(members)))
    for offset, label, value, ci, colour in (
        (-0.2, "initial deltas", "heldout_initial_composite", "heldout_initial_ci", "tab:gray"),
        (0.2, "best deltas", "heldout_best_composite", "heldout_best_ci", "tab:blue"),
    ):
        values = [getattr(r, value) for r in members]
        errors = list(zip(*[_errors(getattr(r, value), getattr(r, ci)) for r in members],
                          strict=True))
        axes.bar([p + offset for p in positions], values, 0.4, yerr=errors, capsize=3,
                 color=colour, label=label)
    axes.set_xticks(positions)
    axes.set_xticklabels([_label(r) for r in members], rotation=30, ha="right",
                         fontsize="x-small")
    axes.set_ylabel("held-out composite")
    axes.set_title("(a) held-out: initial vs best (95% CI)", fontsize="small")
    tops = [v + e for r in members for v, e in (
        (r.heldout_best_composite, _errors(r.heldout_best_composite, r.heldout_best_ci)[1]),
        (r.heldout_initial_composite,
         _errors(r.heldout_initial_composite, r.heldout_initial_ci)[1])) if not math.isnan(v)]
    axes.set_ylim(0.0, 1.3 * max(tops, default=1.0))  # headroom: the legend covers no bar
    for position, row in zip(positions, members, strict=True):
        label = paired_label(row)
        if label and not math.isnan(row.heldout_best_composite):
            top = row.heldout_best_composite + _errors(row.heldout_best_composite,
                                                       row.heldout_best_ci)[1]
            axes.annotate(label, (position + 0.2, top), xytext=(0, 2),
                          textcoords="offset points", ha="center", va="bottom",
                          fontsize="xx-small")
    axes.legend(loc="upper center", ncol=2, fontsize="x-small")


def running_max(values: Sequence[float]) -> list[float]:
    """The best value so far at each step (NaN steps keep the previous best).

    >>> running_max([0.2, 0.1, 0.5, float("nan"), 0.4])
    [0.2, 0.2, 0.5, 0.5, 0.5]
    """
    out, best = [], float("nan")
    for value in values:
        if not math.isnan(value) and (math.isnan(best) or value > best):
            best = value
        out.append(best)
    return out


def _curve_panel(axes, members: Sequence[RunRow], colours: dict[str, str]) -> None:
    for row in members:
        composite = row.curves.get("composite_score", [])
        colour = colours[row.run_id]
        axes.plot(range(len(composite)), composite, "o", ms=3, alpha=0.5, color=colour)
        axes.plot(range(len(composite)), running_max(composite), "-", lw=2.0, color=colour,
                  label=_label(row))
    axes.set_xlabel("iteration")
    axes.set_ylabel("minibatch composite")
    axes.set_title("(b) composite per iteration (dots) and best so far (line)", fontsize="small")


def _scatter_panel(axes, members: Sequence[RunRow], colours: dict[str, str]) -> None:
    correctness = [v for r in members for v in r.curves.get("correctness_ratio", [])]
    if not any(v > 0 for v in correctness):
        axes.set_axis_off()
        axes.text(0.5, 0.5, "(c) no candidate answered any question correctly\n"
                  "(correctness 0 everywhere): no shortness × correctness\n"
                  "trade-off to draw" if correctness else "(c) no candidate scores logged",
                  ha="center", va="center", fontsize="small", transform=axes.transAxes)
        return
    for row in members:
        points = list(zip(row.curves.get("shortness_score", []),
                          row.curves.get("correctness_ratio", []), strict=False))
        if not points:
            continue
        colour = colours[row.run_id]
        axes.scatter(*zip(*points, strict=True), s=14, alpha=0.5, color=colour)
        front = [points[i] for i in pareto_indices(points)]
        axes.step(*zip(*front, strict=True), where="post", color=colour, lw=1.5)
    axes.set_xlabel("shortness")
    axes.set_ylabel("correctness")
    axes.set_title("(c) candidates and each run's frontier", fontsize="small")


def save_comparison_figure(rows: Sequence[RunRow], path: str | Path) -> Path:
    """Write the three-panel figure (a row per group) as PNG, atomically."""
    groups = group_rows(rows)
    figure = Figure(figsize=(15, 4.6 * len(groups)), layout="constrained")
    panels = figure.subplots(len(groups), 3, squeeze=False)
    palette = [f"C{i}" for i in range(10)]
    labels = group_labels(groups)
    for (held, curves, scatter), (key, members) in zip(panels, groups.items(), strict=True):
        colours = {r.run_id: palette[i % len(palette)] for i, r in enumerate(members)}
        _heldout_panel(held, members)
        _curve_panel(curves, members, colours)
        _scatter_panel(scatter, members, colours)
        curves.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2,
                      fontsize="x-small", title=labels[key],
                      title_fontsize="x-small")
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=DPI, format="png")
    return Path(path)

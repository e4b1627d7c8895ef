"""``evolution_lengths.png``: composite, correctness and mean length vs iteration."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crsp_ops.atomic_io import atomic_path
from crsp_ops.evolve.records import IterationRecord


def evolution_figure(history: Sequence[IterationRecord]):
    """A matplotlib figure of the history (two panels: scores, mean length)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    steps = [row.iteration for row in history]
    figure = Figure(figsize=(7, 5))
    scores, lengths = figure.subplots(2, 1, sharex=True)
    scores.plot(steps, [r.scores["composite_score"] for r in history], "o-", label="composite")
    scores.plot(steps, [r.best_composite_score for r in history], "--", label="best composite")
    scores.plot(steps, [r.scores["correctness_ratio"] for r in history], "s-",
                label="correctness ratio")
    failed = [r.iteration for r in history if r.proposal_failed]
    for step in failed:
        scores.axvline(step, color="red", alpha=0.3)
    scores.set_ylabel("score")
    scores.set_ylim(-0.02, 1.02)
    scores.legend(loc="best", fontsize="small")
    scores.set_title("Evolution of steering deltas" + (" (red: failed proposal)" if failed else ""))
    lengths.plot(steps, [r.scores["mean_token_length"] for r in history], "o-", color="tab:green")
    lengths.set_ylabel("mean response tokens")
    lengths.set_xlabel("iteration")
    figure.tight_layout()
    return figure


def save_evolution_plot(history: Sequence[IterationRecord], path: str | Path):
    """Write the plot atomically and return the figure (for ``tracker.log_figure``)."""
    figure = evolution_figure(history)
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=90, format="png")
    return figure

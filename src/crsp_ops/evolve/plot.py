"""``evolution_lengths.png``: composite, correctness and mean length vs iteration.

The loop redraws the plot as the history grows, so ``EvolutionPlot`` builds the figure once
(Agg canvas, fixed margins) and only swaps the line data afterwards: a fresh figure with
``tight_layout`` each time would spend most of its cost on text layout that never changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crsp_ops.atomic_io import atomic_path
from crsp_ops.evolve.iteration import IterationRecord, best_composite_curve

TITLE = "Evolution of steering deltas"
DPI = 90


class EvolutionPlot:
    """One reusable two-panel figure (scores; mean length) of an evolution history.

    Not thread-safe: create and use it on one thread (the loop's background worker).
    """

    def __init__(self) -> None:
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure

        self.figure = Figure(figsize=(7, 5))
        self.figure.subplots_adjust(left=0.11, right=0.97, top=0.93, bottom=0.1, hspace=0.12)
        self.scores, self.lengths = self.figure.subplots(2, 1, sharex=True)
        self._composite, = self.scores.plot([], [], "o-", label="composite")
        self._best, = self.scores.plot([], [], "--", label="best composite (monotone)")
        self._incumbent, = self.scores.plot([], [], "x", color="gray",
                                            label="incumbent re-scored")
        self._correct, = self.scores.plot([], [], "s-", label="correctness ratio")
        self._length, = self.lengths.plot([], [], "o-", color="tab:green")
        self._failed_marks: list = []
        self.scores.set_ylabel("score")
        self.scores.set_ylim(-0.02, 1.02)
        self.scores.legend(loc="best", fontsize="small")
        self.lengths.set_ylabel("mean response tokens")
        self.lengths.set_xlabel("iteration")

    def update(self, history: Sequence[IterationRecord]) -> None:
        """Show ``history`` (replaces what was shown)."""
        steps = [row.iteration for row in history]
        self._composite.set_data(steps, [r.scores["composite_score"] for r in history])
        self._best.set_data(steps, best_composite_curve(history))
        rescored = [r for r in history if r.incumbent_scores is not None]
        self._incumbent.set_data([r.iteration for r in rescored],
                                 [r.incumbent_scores["composite_score"] for r in rescored])
        self._correct.set_data(steps, [r.scores["correctness_ratio"] for r in history])
        self._length.set_data(steps, [r.scores["mean_token_length"] for r in history])
        for mark in self._failed_marks:
            mark.remove()
        failed = [r.iteration for r in history if r.proposal_failed]
        self._failed_marks = [self.scores.axvline(s, color="red", alpha=0.3) for s in failed]
        self.scores.set_title(TITLE + (" (red: failed proposal)" if failed else ""))
        for axes in (self.scores, self.lengths):
            axes.relim()
            axes.autoscale_view(scalex=True, scaley=axes is self.lengths)

    def save(self, path: str | Path) -> Path:
        """Write the current figure as PNG, atomically."""
        with atomic_path(path, suffix=".png") as tmp:
            self.figure.savefig(tmp, dpi=DPI, format="png", pil_kwargs={"compress_level": 1})
        return Path(path)

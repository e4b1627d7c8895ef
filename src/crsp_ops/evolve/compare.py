"""Compare evolution runs from MLflow: one row per run, a table and a plot.

Reads only what the runs logged (tags, latest metric values, start/end times), so it works on
any tracking URI and on runs of every proposer in the same experiment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsp_ops.atomic_io import atomic_path


@dataclass(frozen=True)
class RunRow:
    """One compared run."""

    run_id: str
    run_name: str
    status: str
    proposer: str
    iterations: int
    best_minibatch_composite: float
    heldout_initial_composite: float
    heldout_best_composite: float
    reflector_tokens: float
    wall_time_s: float


COLUMNS = (
    ("run", 10), ("name", 22), ("status", 8), ("proposer", 9), ("iters", 5),
    ("best_mb", 8), ("ho_init", 8), ("ho_best", 8), ("tokens", 8), ("wall_s", 8),
)


def row_from_run(run: Any) -> RunRow:
    """Build a row from an ``mlflow.entities.Run`` (missing values become NaN)."""
    metrics, tags, info = run.data.metrics, run.data.tags, run.info
    nan = float("nan")
    wall = (info.end_time - info.start_time) / 1000.0 if info.end_time and info.start_time else nan
    return RunRow(
        run_id=info.run_id,
        run_name=info.run_name or "",
        status=info.status,
        proposer=tags.get("proposer", "?"),
        iterations=int(metrics.get("iterations_completed", 0)),
        best_minibatch_composite=metrics.get("best_composite_score", nan),
        heldout_initial_composite=metrics.get("heldout_initial_composite_score", nan),
        heldout_best_composite=metrics.get("heldout_best_composite_score", nan),
        reflector_tokens=metrics.get("reflector_tokens_cumulative", 0.0),
        wall_time_s=wall,
    )


def fetch_rows(client: Any, experiment_names: Sequence[str], *, max_runs: int) -> list[RunRow]:
    """Rows of the newest evolution runs (runs without the ``proposer`` tag are skipped)."""
    ids = [e.experiment_id for name in experiment_names
           if (e := client.get_experiment_by_name(name)) is not None]
    if not ids:
        return []
    runs = client.search_runs(ids, filter_string="tags.proposer != ''", max_results=max_runs,
                              order_by=["attributes.start_time DESC"])
    return [row_from_run(run) for run in runs]


def _cell(value: Any, width: int) -> str:
    if isinstance(value, float):
        text = "-" if math.isnan(value) else f"{value:.4f}" if abs(value) < 100 else f"{value:.0f}"
    else:
        text = str(value)
    return text[:width].ljust(width)


def format_table(rows: Sequence[RunRow]) -> str:
    """A fixed-width text table (best held-out composite first)."""
    header = " ".join(name.ljust(width) for name, width in COLUMNS)
    lines = [header, "-" * len(header)]
    for row in rows:
        values = (row.run_id, row.run_name, row.status, row.proposer, row.iterations,
                  row.best_minibatch_composite, row.heldout_initial_composite,
                  row.heldout_best_composite, row.reflector_tokens, row.wall_time_s)
        lines.append(" ".join(_cell(v, w) for v, (_, w) in zip(values, COLUMNS, strict=True)))
    return "\n".join(lines)


def save_comparison_plot(rows: Sequence[RunRow], path: str | Path) -> Path:
    """Held-out composite of initial vs best deltas per run, as grouped bars."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure


    figure = Figure(figsize=(max(6, 0.9 * len(rows) + 2), 4))
    axes = figure.subplots()
    positions = range(len(rows))
    axes.bar([p - 0.2 for p in positions], [r.heldout_initial_composite for r in rows], 0.4,
             label="initial deltas")
    axes.bar([p + 0.2 for p in positions], [r.heldout_best_composite for r in rows], 0.4,
             label="best deltas")
    axes.set_xticks(list(positions))
    axes.set_xticklabels([f"{r.proposer}\n{r.run_id[:8]}" for r in rows], fontsize="small")
    axes.set_ylabel("held-out composite")
    axes.set_title("Evolution runs: held-out composite")
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=90, format="png")
    return Path(path)

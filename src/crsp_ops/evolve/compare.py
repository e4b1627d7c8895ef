"""Compare evolution runs from MLflow: one row per run, grouped by base model, as a table.

Reads only what runs logged, so it works on any tracking URI and every proposer; runs are
ranked only within a (base model, held-out set) group.

Design: docs/design/evolve.md#compare.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tabulate import tabulate

from crsp_ops.evaluation.paired_gains import correctness_non_inferior

NAN = float("nan")
JOB_FILTER = "tags.`crsp.job` = 'evolve' and tags.proposer != ''"
CURVE_METRICS = ("composite_score", "best_composite", "shortness_score", "correctness_ratio")


@dataclass(frozen=True)
class RunRow:
    """One compared run (curves: metric -> values by iteration, for the figure)."""

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
    base_model: str  # base_model.id tag ("?" for runs logged before it existed)
    heldout_set: str  # first 12 hex of the heldout.sha256 tag ("?" when absent)
    model_name: str = "?"  # model.source tag (e.g. tiny, smollm2), else base_model.id
    heldout_size: str = "?"  # heldout.size tag: questions in the held-out set
    heldout_initial_ci: tuple[float, float] = (NAN, NAN)
    heldout_best_ci: tuple[float, float] = (NAN, NAN)
    tokens_change: tuple[float, float, float] = (NAN, NAN, NAN)  # paired; -0.2: 20% shorter
    correctness_gain: tuple[float, float, float] = (NAN, NAN, NAN)  # paired (value, low, high)
    curves: dict[str, list[float]] = field(default_factory=dict)


HEADERS = ("name", "proposer", "status", "iters", "best_mb", "heldout_init", "heldout_best",
           "heldout_best_95ci", "tokens_chg", "correct_gain", "reflector_tokens", "wall_s", "run")


def wall_time_s(info: Any) -> float:
    """End minus start of a run, in seconds (NaN while it has no end time)."""
    if not info.end_time or not info.start_time:
        return NAN
    return (info.end_time - info.start_time) / 1000.0


def per_step(history: Sequence[Any]) -> list[float]:
    """One value per step (the last logged wins), in step order."""
    latest: dict[int, tuple[int, float]] = {}
    for point in history:
        previous = latest.get(point.step)
        if previous is None or point.timestamp >= previous[0]:
            latest[point.step] = (point.timestamp, point.value)
    return [latest[step][1] for step in sorted(latest)]


def _paired(metrics: dict[str, float], name: str) -> tuple[float, float, float]:
    key = f"heldout_{name}_gain"
    return (metrics.get(key, NAN), metrics.get(f"{key}_ci_low", NAN),
            metrics.get(f"{key}_ci_high", NAN))


def row_from_run(run: Any, histories: dict[str, Sequence[Any]] | None = None) -> RunRow:
    """Build a row from an ``mlflow.entities.Run`` and its metric histories (missing: NaN)."""
    metrics, tags, info = run.data.metrics, run.data.tags, run.info
    histories = histories or {}
    token_steps = per_step(histories.get("reflector_total_tokens", ()))
    tokens = sum(token_steps) if token_steps else metrics.get("reflector_tokens_cumulative", 0.0)
    best = metrics.get("best_composite", metrics.get("best_composite_score", NAN))
    return RunRow(
        run_id=info.run_id,
        run_name=info.run_name or "",
        status=info.status,
        proposer=tags.get("proposer", "?"),
        iterations=int(metrics.get("iterations_completed", 0)),
        best_minibatch_composite=best,
        heldout_initial_composite=metrics.get("heldout_initial_composite_score", NAN),
        heldout_best_composite=metrics.get("heldout_best_composite_score", NAN),
        reflector_tokens=float(tokens),
        wall_time_s=wall_time_s(info),
        base_model=tags.get("base_model.id", "?"),
        heldout_set=tags.get("heldout.sha256", "?")[:12],
        model_name=tags.get("model.source") or tags.get("base_model.id", "?"),
        heldout_size=tags.get("heldout.size", "?"),
        heldout_initial_ci=(metrics.get("heldout_initial_composite_ci_low", NAN),
                            metrics.get("heldout_initial_composite_ci_high", NAN)),
        heldout_best_ci=(metrics.get("heldout_best_composite_ci_low", NAN),
                         metrics.get("heldout_best_composite_ci_high", NAN)),
        tokens_change=_paired(metrics, "tokens"),
        correctness_gain=_paired(metrics, "correctness"),
        curves={key: per_step(histories.get(key, ())) for key in CURVE_METRICS},
    )


def fetch_rows(
    client: Any, experiment_names: Sequence[str] | None = None, *, max_runs: int
) -> list[RunRow]:
    """Rows of the newest evolution runs, by job tag, in the named experiments or in all."""
    if experiment_names:
        ids = [e.experiment_id for name in experiment_names
               if (e := client.get_experiment_by_name(name)) is not None]
    else:
        ids = [e.experiment_id for e in client.search_experiments()]
    if not ids:
        return []
    runs = client.search_runs(ids, filter_string=JOB_FILTER, max_results=max_runs,
                              order_by=["attributes.start_time DESC"])
    keys = ("reflector_total_tokens", *CURVE_METRICS)
    return [row_from_run(run, {key: client.get_metric_history(run.info.run_id, key)
                               for key in keys})
            for run in runs]


def split_failed(rows: Sequence[RunRow]) -> tuple[list[RunRow], list[RunRow]]:
    """``(compared, failed)``: a FAILED run has no result worth a row (KILLED ones keep theirs)."""
    return ([r for r in rows if r.status != "FAILED"], [r for r in rows if r.status == "FAILED"])


def group_labels(groups: dict[tuple[str, str], list[RunRow]]) -> dict[tuple[str, str], str]:
    """Each group's label, e.g. ``base model tiny, 8 held-out questions``.

    The model id and held-out hash are added only to tell apart two groups that read the same.
    """
    plain = {key: f"base model {m[0].model_name}, {m[0].heldout_size} held-out questions"
             for key, m in groups.items()}
    clashes = {label for label in plain.values() if list(plain.values()).count(label) > 1}
    return {key: label if label not in clashes
            else f"{label} (model {key[0]}, held-out set {key[1]})"
            for key, label in plain.items()}


def group_rows(rows: Sequence[RunRow]) -> dict[tuple[str, str], list[RunRow]]:
    """Rows by (base model, held-out set), each group best held-out composite first.

    Groups keep the order in which their first row appears; a NaN score sorts last.
    """
    groups: dict[tuple[str, str], list[RunRow]] = {}
    for row in rows:
        groups.setdefault((row.base_model, row.heldout_set), []).append(row)
    for members in groups.values():
        members.sort(key=_rank_key)
    return groups


def _rank_key(row: RunRow) -> tuple[bool, float]:
    score = row.heldout_best_composite
    return (math.isnan(score), 0.0 if math.isnan(score) else -score)


def _score(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.4f}"


def _interval(bounds: tuple[float, float]) -> str:
    return "" if any(math.isnan(b) for b in bounds) else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def tokens_change_cell(change: tuple[float, float, float]) -> str:
    """``-26% [-30%, -23%]``; empty for runs without paired held-out gains.

    >>> tokens_change_cell((-0.2638, -0.2977, -0.2291))
    '-26% [-30%, -23%]'
    """
    if any(math.isnan(v) for v in change):
        return ""
    value, low, high = change
    return f"{value:+.0%} [{low:+.0%}, {high:+.0%}]"


def correctness_gain_cell(gain: tuple[float, float, float]) -> str:
    """``+0.02 [-0.01, +0.05] NI`` (NI: non-inferior); empty without paired gains.

    >>> correctness_gain_cell((-0.02, -0.05, 0.01))
    '-0.02 [-0.05, +0.01]'
    """
    if any(math.isnan(v) for v in gain):
        return ""
    value, low, high = gain
    return f"{value:+.2f} [{low:+.2f}, {high:+.2f}]{non_inferior_mark(low)}"


def non_inferior_mark(correctness_low: float) -> str:
    """`` NI`` when the correctness gain's lower bound passes non-inferiority, else ``""``."""
    return " NI" if correctness_non_inferior(correctness_low) else ""


def table_rows(members: Sequence[RunRow]) -> list[list[str]]:
    """The cells of one group (strings: counts as integers, scores to 4 decimals)."""
    return [[r.run_name, r.proposer, r.status, str(r.iterations),
             _score(r.best_minibatch_composite), _score(r.heldout_initial_composite),
             _score(r.heldout_best_composite), _interval(r.heldout_best_ci),
             tokens_change_cell(r.tokens_change), correctness_gain_cell(r.correctness_gain),
             f"{r.reflector_tokens:,.0f}", "" if math.isnan(r.wall_time_s)
             else f"{r.wall_time_s:.1f}", r.run_id[:8]]
            for r in members]


def format_table(rows: Sequence[RunRow]) -> str:
    """One aligned table per (base model, held-out set), each ranked on its own."""
    groups = group_rows(rows)
    labels = group_labels(groups)
    parts = []
    for key, members in groups.items():
        parts.append(f"{labels[key]}: {len(members)} run(s)\n"
                     + tabulate(table_rows(members), headers=HEADERS, tablefmt="simple",
                                disable_numparse=True,
                                colalign=("left", "left", "left") + ("right",) * 7 + ("left",)))
    text = "\n\n".join(parts)
    if len(groups) > 1:
        text += (f"\n\n{len(groups)} groups of different base models or held-out sets: "
                 "ranked within each group only, never across groups")
    return text

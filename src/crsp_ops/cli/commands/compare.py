"""Compare evolution runs (reflector, Optuna, offline) from MLflow: a table and a figure.

crsp-ops compare
crsp-ops compare --max-runs 20 --out outputs/compare
mlflow run . -e compare --env-manager local

Finds the evolution runs by their job tag in every experiment (``mlflow run . -e evolve``
without ``--experiment-name`` files them under ``Default``), leaves FAILED runs out (and says
how many), prints one aligned table per base model (never ranked across models), writes
``comparison.png`` (held-out initial vs best with intervals, composite curves, shortness ×
correctness with each run's frontier), ``comparison.txt`` and ``comparison.json`` to ``--out``,
and logs the three to a ``compare-<N>runs`` run of the ``<prefix>-compare`` experiment.
"""

from __future__ import annotations

import argparse
import json
import sys

from crsp_ops.cli.entry import stage_main
from crsp_ops.paths import COMPARE_DIR

HELP = "compare evolution runs from MLflow (table + plot)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the compare arguments."""
    parser.add_argument("--out", default=str(COMPARE_DIR), help="where the plot and JSON go")
    parser.add_argument("--max-runs", type=int, default=50, help="newest runs compared")
    parser.add_argument("--experiment", action="append", default=None,
                        help="only runs of this experiment (repeatable; default: every "
                             "experiment, runs found by their crsp.job=evolve tag)")


def run(args: argparse.Namespace) -> int:
    """Print the table; write and log comparison.png, comparison.txt and comparison.json."""
    from dataclasses import asdict

    from mlflow.tracking import MlflowClient

    from crsp_ops.atomic_io import atomic_write_text
    from crsp_ops.config import load_settings
    from crsp_ops.evolve.compare import fetch_rows, format_table, split_failed
    from crsp_ops.evolve.compare_plot import save_comparison_figure  # matplotlib: only here
    from crsp_ops.paths import project_root
    from crsp_ops.tracking import disable_telemetry, start_run, tracking_uri
    from crsp_ops.tracking.run_tags import run_name

    disable_telemetry()
    resolved = load_settings(project_root(), args.overrides)
    uri = tracking_uri(resolved)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    names = args.experiment or []
    rows, failed = split_failed(fetch_rows(client, names, max_runs=args.max_runs))
    where = f"experiments {names}" if names else "any experiment"
    if failed:
        print(f"left out {len(failed)} FAILED run(s): "
              + ", ".join(f"{r.run_name} ({r.run_id[:8]})" for r in failed))
    if not rows:
        print(f"no finished evolution runs in {where} at {uri}")
        return 1
    table = format_table(rows)
    print(table)
    out = resolved.root / args.out
    plot = save_comparison_figure(rows, out / "comparison.png")
    atomic_write_text(out / "comparison.txt", table + "\n")
    atomic_write_text(out / "comparison.json",
                      json.dumps([asdict(r) for r in rows], indent=2, default=str) + "\n")
    with start_run("compare", resolved, run_name=run_name("compare", f"{len(rows)}runs"),
                   tags={"compare.experiments": ",".join(names) or "*",
                         "compare.runs": ",".join(r.run_id for r in rows)[:5000]}) as tracker:
        for name in ("comparison.png", "comparison.txt", "comparison.json"):
            tracker.log_artifact(out / name, "compare")
    print(f"wrote {plot}, {out / 'comparison.txt'} and {out / 'comparison.json'}")
    return 0


main = stage_main(sys.modules[__name__])

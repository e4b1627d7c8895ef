"""Compare evolution runs (reflector, Optuna, offline) from MLflow: a table and a plot.

crsp-ops compare
crsp-ops compare --max-runs 20 --out outputs/compare
mlflow run . -e compare --env-manager local
"""

from __future__ import annotations

import argparse
import json
import sys

from crsp_ops.paths import COMPARE_DIR
from pipelines.entry import stage_main

HELP = "compare evolution runs from MLflow (table + plot)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the compare arguments."""
    parser.add_argument("--out", default=str(COMPARE_DIR), help="where the plot and JSON go")
    parser.add_argument("--max-runs", type=int, default=50, help="newest runs compared")
    parser.add_argument("--experiment", action="append", default=None,
                        help="experiment name (repeatable; default <prefix>-evolve)")


def run(args: argparse.Namespace) -> int:
    """Print the table; write comparison.png and comparison.json."""
    from dataclasses import asdict

    from mlflow.tracking import MlflowClient

    from crsp_ops.atomic_io import atomic_write_text
    from crsp_ops.config import load_settings
    from crsp_ops.evolve.compare import fetch_rows, format_table, save_comparison_plot
    from crsp_ops.paths import project_root
    from crsp_ops.tracking import disable_telemetry, experiment_name, tracking_uri

    disable_telemetry()
    resolved = load_settings(project_root(), args.overrides)
    uri = tracking_uri(resolved)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    names = args.experiment or [experiment_name(resolved, "evolve")]
    rows = fetch_rows(client, names, max_runs=args.max_runs)
    if not rows:
        print(f"no evolution runs in {names} at {uri}")
        return 1
    print(format_table(rows))
    out = resolved.root / args.out
    plot = save_comparison_plot(rows, out / "comparison.png")

    atomic_write_text(out / "comparison.json",
                      json.dumps([asdict(r) for r in rows], indent=2, default=str) + "\n")
    print(f"wrote {plot} and {out / 'comparison.json'}")
    return 0


main = stage_main(sys.modules[__name__])

if __name__ == "__main__":
    sys.exit(main())

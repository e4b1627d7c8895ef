"""Build the LIMO stage: ``data/limo/limo.jsonl`` (question, solution, answer) + ``stats.json``.

crsp-ops limo                                   # the configured source (default: synthetic)
crsp-ops limo --set limo.source=hub:GAIR/LIMO   # the real dataset (needs the network once)
crsp-ops limo --set limo.source=/data/limo.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsp_ops.cli.entry import stage_main
from crsp_ops.cli.stage_io import settings_from
from crsp_ops.paths import LIMO_DIR

HELP = "LIMO trajectories (synthetic | hub:GAIR/LIMO | local file) -> data/limo/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``limo`` arguments."""
    parser.add_argument("--out", type=Path, default=LIMO_DIR, help="output directory")


def run(args: argparse.Namespace) -> int:
    """Load, validate and write the LIMO rows; log counts to MLflow (experiment crsp-data)."""
    from crsp_ops.atomic_io import atomic_write_json, atomic_write_jsonl
    from crsp_ops.data.limo import load_limo
    from crsp_ops.tracking import start_run

    resolved = settings_from(args)
    limo = resolved.settings.limo
    result = load_limo(
        limo.source,
        synthetic_count=limo.n_synthetic,
        seed=limo.seed,
        hub_split=limo.hub_split,
        hub_revision=limo.hub_revision or None,
    )
    stats = {
        "source": limo.source,
        "rows": len(result.rows),
        "skipped": result.n_skipped,
        "skipped_reasons": result.skipped_reasons,
    }
    atomic_write_jsonl(args.out / "limo.jsonl", (row.to_row() for row in result.rows))
    atomic_write_json(args.out / "stats.json", stats)
    with start_run("data", resolved, run_name="limo", tags={"dataset": "limo"}) as tracker:
        tracker.log_metrics({"limo_rows": stats["rows"], "limo_skipped": stats["skipped"]}, 0)
        tracker.log_dict(stats, "limo/stats.json")
    print(
        f"limo: {stats['rows']} rows from {limo.source} ({stats['skipped']} skipped) -> {args.out}"
    )
    for reason, count in sorted(result.skipped_reasons.items()):
        print(f"  skipped {count}: {reason}")
    return 0


main = stage_main(sys.modules[__name__])

"""Build the FinanceBench stage: ``data/financebench/{pool,heldout}.jsonl`` + ``stats.json``.

    crsp-ops financebench                              # synthetic filings (default)
    crsp-ops financebench --set financebench.source=/data/financebench_open_source.jsonl

The held-out split is fixed by ``financebench.heldout_size`` and ``financebench.seed``: it is
never sampled into a minibatch, so runs are compared on the same examples.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsp_ops.cli.entry import stage_main
from crsp_ops.cli.stage_io import settings_from
from crsp_ops.paths import FINANCEBENCH_DIR

HELP = "FinanceBench pool + held-out split (synthetic | local JSONL) -> data/financebench/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``financebench`` arguments."""
    parser.add_argument("--out", type=Path, default=FINANCEBENCH_DIR, help="output directory")


def run(args: argparse.Namespace) -> int:
    """Load, validate, split and write the FinanceBench rows; log counts to MLflow."""
    from crsp_ops.atomic_io import atomic_write_json, atomic_write_jsonl
    from crsp_ops.data.financebench import load_financebench, split_pool_heldout
    from crsp_ops.tracking import start_run

    resolved = settings_from(args)
    bench = resolved.settings.financebench
    result = load_financebench(bench.source, synthetic_count=bench.n_synthetic, seed=bench.seed,
                               max_revenue=bench.synthetic_max_revenue)
    pool, heldout = split_pool_heldout(
        result.rows, heldout_size=bench.heldout_size, seed=bench.seed
    )
    stats = {
        "source": bench.source,
        "rows": len(result.rows),
        "pool": len(pool),
        "heldout": len(heldout),
        "skipped": result.n_skipped,
        "skipped_reasons": result.skipped_reasons,
    }
    atomic_write_jsonl(args.out / "pool.jsonl", (row.to_row() for row in pool))
    atomic_write_jsonl(args.out / "heldout.jsonl", (row.to_row() for row in heldout))
    atomic_write_json(args.out / "stats.json", stats)
    counts = {f"financebench_{k}": stats[k] for k in ("rows", "pool", "heldout", "skipped")}
    tags = {"dataset": "financebench"}
    with start_run("data", resolved, run_name="financebench", tags=tags) as t:
        t.log_metrics(counts, step=0)
        t.log_dict(stats, "financebench/stats.json")
    print(
        f"financebench: {stats['pool']} pool + {stats['heldout']} held-out rows from "
        f"{bench.source} ({stats['skipped']} skipped) -> {args.out}"
    )
    for reason, count in sorted(result.skipped_reasons.items()):
        print(f"  skipped {count}: {reason}")
    return 0


main = stage_main(sys.modules[__name__])

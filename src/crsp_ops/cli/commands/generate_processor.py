r"""Write a self-contained ``processor.py`` (SGLang custom logit processor) from data.

The file embeds the token→cluster table and one set of deltas, needs only ``torch`` (and SGLang
for its processor class), and is a *view* of ``token_clusters.npy`` + a deltas file: servers
running crsp_ops take the deltas per request instead and never need it.

Examples:
    crsp-ops generate-processor --clusters outputs/clusters \
        --deltas outputs/deltas/deltas_initial.json --out outputs/deltas/processor.py
    crsp-ops generate-processor --clusters outputs/clusters \
        --deltas outputs/evolution/deltas_best.json --out outputs/evolution/processor_best.py
"""

from __future__ import annotations

import argparse
import sys

from crsp_ops.cli.entry import stage_main
from crsp_ops.paths import CLUSTERS_DIR

HELP = "write a self-contained processor.py (SGLang) from the cluster table and a deltas file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``generate-processor`` arguments."""
    parser.add_argument("--clusters", default=str(CLUSTERS_DIR), help="clusters stage output")
    parser.add_argument("--deltas", required=True, help="deltas JSON (exactly the cluster ids)")
    parser.add_argument("--out", required=True, help="processor.py to write")


def run(args: argparse.Namespace) -> int:
    """Validate the deltas against the table and write the processor."""
    import sys

    from crsp_ops.steering.codegen import write_processor
    from crsp_ops.steering.deltas import load_deltas
    from crsp_ops.steering.table import load_table_and_count

    table, n_clusters = load_table_and_count(args.clusters)
    try:
        deltas = load_deltas(args.deltas, n_clusters=n_clusters, clamp=None)
    except (OSError, ValueError) as error:
        print(f"crsp-ops generate-processor: {error}", file=sys.stderr)
        return 2
    path = write_processor(args.out, table, deltas, n_clusters=n_clusters)
    print(f"generate-processor: {len(table)} tokens, {n_clusters} clusters -> {path}")
    return 0


main = stage_main(sys.modules[__name__])

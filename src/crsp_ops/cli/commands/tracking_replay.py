"""Send metric points an unreachable MLflow server never got (saved at the end of a run).

crsp-ops tracking-replay mlflow_unsent/mlflow_unsent_<run id>.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlflow.tracking import MlflowClient

from crsp_ops.cli.entry import stage_main
from crsp_ops.config import load_settings
from crsp_ops.paths import project_root
from crsp_ops.tracking import tracking_uri
from crsp_ops.tracking.outage import replay_unsent

HELP = "send metrics saved while the MLflow server was unreachable"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the file argument."""
    parser.add_argument("file", type=Path, help="an mlflow_unsent_<run id>.jsonl file")


def run(args: argparse.Namespace) -> int:
    """Send the file's points and final statuses to the tracking server, then delete it."""
    if not args.file.is_file():
        print(f"crsp-ops tracking-replay: no such file {args.file}", file=sys.stderr)
        return 2
    uri = tracking_uri(load_settings(project_root(), args.overrides))
    sent = replay_unsent(MlflowClient(tracking_uri=uri), args.file)
    for run_id, count in sent.items():
        print(f"run {run_id}: {count} metric points sent to {uri}")
    return 0


main = stage_main(sys.modules[__name__])

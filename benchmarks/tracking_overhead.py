"""Time 10,000 metric points through crsp_ops.tracking versus one mlflow.log_metric per point.

Both run in one process, against the default sqlite store, in one MLflow run (different keys).
Prints one JSON line. Goal: the tracking module at least 20x faster.

    python benchmarks/tracking_overhead.py [--points 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=10_000)
    args = parser.parse_args()
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

    import mlflow

    from crsp_ops.config import load_settings, sync_params
    from crsp_ops.paths import copy_config_tree
    from crsp_ops.tracking import start_run, tracking_uri

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        copy_config_tree(REPO, root)
        sync_params(root)
        resolved = load_settings(root, env={})
        with start_run("benchmark", resolved) as tracker:
            start = time.perf_counter()
            for step in range(args.points):
                tracker.log_metrics({"module_metric": step * 0.5}, step=step)
            tracker.flush()
            module_seconds = time.perf_counter() - start

            mlflow.set_tracking_uri(tracking_uri(resolved))
            with mlflow.start_run(run_id=tracker.run_id):
                start = time.perf_counter()
                for step in range(args.points):
                    mlflow.log_metric("fluent_metric", step * 0.5, step=step)
                fluent_seconds = time.perf_counter() - start

        client = mlflow.tracking.MlflowClient(tracking_uri(resolved))
        stored = len(client.get_metric_history(tracker.run_id, "module_metric"))
        assert stored == args.points, f"only {stored} of {args.points} points stored"

    print(
        json.dumps(
            {
                "benchmark": "tracking_overhead",
                "points": args.points,
                "store": "sqlite",
                "module_seconds": round(module_seconds, 3),
                "log_metric_seconds": round(fluent_seconds, 3),
                "module_points_per_s": round(args.points / module_seconds),
                "log_metric_points_per_s": round(args.points / fluent_seconds),
                "speedup": round(fluent_seconds / module_seconds, 1),
                "goal_speedup": 20,
            }
        )
    )


if __name__ == "__main__":
    main()

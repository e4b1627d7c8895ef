"""Time 10,000 metric points through crsp_ops.tracking versus one mlflow.log_metric per point.

Both run in one process, against the default sqlite store, in one MLflow run (different keys),
in ``--reps`` interleaved repetitions (``paired``: median speedup with a 95% bootstrap interval).
Prints one JSON line. Goal: the tracking module at least 20x faster.

    python -m benchmarks.tracking_overhead [--points 10000] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.paired import interleaved, summary

REPO = Path(__file__).resolve().parents[1]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=10_000, help="points per side and rep")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    return parser.parse_args()


def measure(args: argparse.Namespace) -> tuple[float, float, dict]:
    """Both sides on a scratch project's sqlite store: median seconds of each, paired speedup.

    Raises:
        AssertionError: the tracking module stored fewer points than it was given.
    """
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
            mlflow.set_tracking_uri(tracking_uri(resolved))
            pairs = interleaved_sides(tracker, args.points, args.reps)
        module_seconds = sorted(m for m, _ in pairs)[len(pairs) // 2]
        fluent_seconds = sorted(f for _, f in pairs)[len(pairs) // 2]
        speedup = summary([f / m for m, f in pairs], digits=2)

        client = mlflow.tracking.MlflowClient(tracking_uri(resolved))
        stored = len(client.get_metric_history(tracker.run_id, "module_metric"))
        expected = args.points * args.reps
        assert stored == expected, f"only {stored} of {expected} points stored"
    return module_seconds, fluent_seconds, speedup


def interleaved_sides(tracker, points: int, reps: int) -> list[tuple[float, float]]:
    """(module seconds, log_metric seconds) per repetition, ``points`` points each, one run."""
    import mlflow

    offset = {"module": 0, "fluent": 0}

    def module() -> float:
        start = time.perf_counter()
        for step in range(offset["module"], offset["module"] + points):
            tracker.log_metrics({"module_metric": step * 0.5}, step=step)
        tracker.flush()
        offset["module"] += points
        return time.perf_counter() - start

    def fluent() -> float:
        with mlflow.start_run(run_id=tracker.run_id):
            start = time.perf_counter()
            for step in range(offset["fluent"], offset["fluent"] + points):
                mlflow.log_metric("fluent_metric", step * 0.5, step=step)
            seconds = time.perf_counter() - start
        offset["fluent"] += points
        return seconds

    return interleaved(module, fluent, reps)


def main() -> None:
    args = parse_args()
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
    module_seconds, fluent_seconds, speedup = measure(args)
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
                "reps": args.reps,
                "speedup": speedup["ratio"],
                "speedup_ci95": speedup["ci95"],
                "goal_speedup": 20,
            }
        )
    )


if __name__ == "__main__":
    main()

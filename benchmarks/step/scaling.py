"""Tokens/s of a CRSP step with 1 vs N processes on the same global batch; one JSON line.

    python -m benchmarks.step scaling                      # tiny model, 1 vs 2 CPU processes
    python -m benchmarks.step scaling --model models/base --processes 8 --device cuda \
        --mixed-precision bf16                              # 1 vs 8 GPUs (untested here)

Both runs are real ``crsp-ops train`` invocations in a scratch project: one process with the
whole batch, then ``accelerate launch --multi_gpu --num_processes N`` with each rank sampling
1/N of it (``train.solver_samples`` and ``train.proposals_per_step`` divided by N; the logged
``rollouts/count`` is the global count, so the JSON shows both batches are equal). Tokens/s is
the logged ``perf/tokens_per_s`` (generated + trained tokens; summed over ranks), median over
the steps after the first (warm-up). ``ratio`` = N-process / 1-process tokens/s: on a 2-core
CPU it shows the overhead of a second process (both share the cores), on N GPUs the speed-up.
Without ``--model`` the tests' tiny model is built first (~20 s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from mlflow.tracking import MlflowClient

from benchmarks.paired import interleaved, summary
from crsp_ops.config import sync_params
from crsp_ops.paths import copy_config_tree

REPO = Path(__file__).resolve().parents[2]

FIXED = ["crsp.problem_types=code_o,math", "crsp.executor_determinism_runs=1",
         "train.critiques_per_task=1", "train.max_new_tokens_propose=16",
         "train.max_new_tokens_solve=16", "train.max_new_tokens_critique=16",
         "train.sample_table_interval=1000", "train.eval_math_tasks=2", "crsp.heldout_math=2",
         "train.checkpoint_interval=1000", "tracking.flush_seconds=0.0"]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="HF model dir (default: build the tiny one)")
    parser.add_argument("--processes", type=int, default=2, help="N of the N-process run")
    parser.add_argument("--steps", type=int, default=4, help="steps per run (first is warm-up)")
    parser.add_argument("--solver-samples", type=int, default=4, help="global, divided by N")
    parser.add_argument("--proposals", type=int, default=2, help="global, divided by N")
    parser.add_argument("--reps", type=int, default=1,
                        help="interleaved (1, N) repetitions; the ratio is their median")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--mixed-precision", default="no", choices=["no", "fp16", "bf16"])
    return parser.parse_args(argv)


def tiny_model(folder: Path) -> Path:
    from tests.conftest import _build_tiny_model

    return _build_tiny_model(folder)


def run_training(root: Path, model: Path, args, processes: int) -> dict:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    copy_config_tree(REPO, root)
    sync_params(root)
    overrides = [*FIXED, f"train.steps={args.steps}", f"model.device={args.device}",
                 f"train.mixed_precision={args.mixed_precision}",
                 f"train.solver_samples={args.solver_samples // processes}",
                 f"train.proposals_per_step={max(args.proposals // processes, 1)}"]
    train = ["-m", "crsp_ops.cli", "train", "--model", str(model), "--out", "models/crsp"]
    for item in overrides:
        train += ["--set", item]
    if processes == 1:
        command = [sys.executable, *train]
    else:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
                   "--num_processes", str(processes), "--num_machines", "1",
                   "--mixed_precision", args.mixed_precision, "--dynamo_backend", "no",
                   "--main_process_port", str(port), *train]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(CRSP_OPS_ROOT=str(root), OMP_NUM_THREADS="1", MLFLOW_DISABLE_TELEMETRY="true",
               HF_HUB_OFFLINE="1")
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{processes}-process training failed:\n{done.stderr[-4000:]}")
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("crsp-train").experiment_id])

    def measured(key):
        return [m.value for m in sorted(client.get_metric_history(run.info.run_id, key),
                                        key=lambda m: m.step)][1:]

    return {"tokens_per_s": statistics.median(measured("perf/tokens_per_s")),
            "step_time_s": statistics.median(measured("perf/step_time_s")),
            "rollouts_per_step": statistics.median(measured("rollouts/count"))}


def main(argv=None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(args.model) if args.model else tiny_model(Path(tmp) / "model")
        pairs = interleaved(lambda: run_training(Path(tmp) / "one", model, args, 1),
                            lambda: run_training(Path(tmp) / "many", model, args,
                                                 args.processes), args.reps)
    one, many = pairs[-1]
    paired = summary([m["tokens_per_s"] / o["tokens_per_s"] for o, m in pairs], digits=3)
    print(json.dumps({
        "benchmark": "train_scaling", "device": args.device, "processes": args.processes,
        "steps_measured": args.steps - 1, "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "one_process": one, f"{args.processes}_processes": many,
        "reps": args.reps, "ratio": paired["ratio"], "ci95": paired["ci95"],
    }))

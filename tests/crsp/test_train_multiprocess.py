"""`crsp-ops train` under `accelerate launch --multi_gpu --num_processes 2` on CPU (gloo), resumed.

(`--cpu` would not do: accelerate 1.15's `--cpu` takes its simple launcher, which starts ONE
process unless MPI is configured; `--multi_gpu` starts torchrun, whose processes find no CUDA
and join a gloo group: DistributedType.MULTI_CPU.)

Two real processes each sample their own episodes; DDP averages the gradients. Read back from
MLflow and the checkpoints: the replicas' parameter sums agree exactly after every step, one
run holds the global metrics (summed counts equal the ranks' own counts in the log), the
checkpoints were written once, and a single process resumes from them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.cli.main import main
from crsp_ops.config import sync_params
from crsp_ops.paths import copy_config_tree
from tests.team.team_testkit import free_port

REPO = Path(__file__).resolve().parents[2]
FAST = [
    "crsp.problem_types=code_o,math", "crsp.executor_max_workers=1",
    "crsp.executor_determinism_runs=1", "train.solver_samples=2", "train.proposals_per_step=1",
    "train.critiques_per_task=1", "train.max_new_tokens_propose=6",
    "train.max_new_tokens_solve=6", "train.max_new_tokens_critique=6",
    "train.sample_table_interval=1", "train.eval_math_tasks=2", "crsp.heldout_math=2",
    "tracking.flush_seconds=0.0", "train.checkpoint_interval=1", "train.keep_checkpoints=5",
]
LOCAL = re.compile(r"rank (\d) step (\d+) local: rollouts/count=(\S+) response_tokens=\S+ "
                   r"loss=(\S+)")


def _args(steps: int) -> list[str]:
    # the resume below extends the run to 3 steps (a constant alpha schedule: unchanged by it)
    args = ["--out", "models/crsp", "--set", f"train.steps={steps}",
            "--set", "reward.alpha_schedule=constant"]
    for item in FAST:
        args += ["--set", item]
    return args


def test_two_processes_stay_in_sync_log_one_run_and_resume_in_one(tmp_path, tiny_model_dir,
                                                                   monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    copy_config_tree(REPO, root)
    sync_params(root)
    env = {**os.environ, "CRSP_OPS_ROOT": str(root), "OMP_NUM_THREADS": "1",
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID"):
        env.pop(key, None)
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
              "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
              "--main_process_port", str(free_port()),
              "-m", "crsp_ops.cli", "train", "--model", str(tiny_model_dir), *_args(2)]
    done = subprocess.run(launch, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    (tmp_path / "launch.log").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr[done.stderr.find("Traceback"):][:6000]

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("crsp-train")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    run_id = runs[0].info.run_id

    def history(key):
        return {m.step: m.value for m in client.get_metric_history(run_id, key)}

    # step 0: the base model's held-out evaluation, reduced over both ranks like every log
    assert history("ddp/num_processes") == {0: 2.0, 1: 2.0, 2: 2.0}
    assert history("ddp/param_sum_spread") == {1: 0.0, 2: 0.0}  # identical replicas
    sums = history("ddp/param_sum")
    skipped = history("update_skipped")
    assert set(skipped) == {1, 2}
    # The replicas move exactly when an optimizer step is taken. The tiny model's rollouts are
    # all malformed (every reward equal, no advantage), so its steps are skipped on both ranks;
    # test_policy_update_ranks.py covers a DDP update with real advantages.
    assert (sums[1] != sums[2]) == (skipped[2] == 0.0)
    local: dict[int, dict[int, tuple[float, float]]] = {}
    for rank, step, count, loss in LOCAL.findall(done.stderr):
        local.setdefault(int(step), {})[int(rank)] = (float(count), float(loss))
    assert {step: sorted(ranks) for step, ranks in local.items()} == {1: [0, 1], 2: [0, 1]}
    counts, losses = history("rollouts/count"), history("loss")
    for step in (1, 2):  # logged: both ranks' rollouts and their mean loss, not rank 0's
        assert counts[step] == sum(c for c, _ in local[step].values())
        assert losses[step] == pytest.approx(sum(x for _, x in local[step].values()) / 2,
                                             rel=1e-4, abs=1e-12)
    checkpoints = sorted(p.name for p in (root / "models" / "crsp" / "checkpoints").iterdir())
    assert checkpoints == ["step-000001", "step-000002"]

    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    assert main(["train", "--resume", *_args(3)]) == 0  # one process, from the 2-process state
    resumed = [r for r in client.search_runs([experiment.experiment_id])
               if r.info.run_id != run_id]
    assert len(resumed) == 1 and resumed[0].info.status == "FINISHED"
    assert resumed[0].data.tags["crsp.resumed_from"].endswith("step-000002")
    assert [m.step for m in client.get_metric_history(resumed[0].info.run_id, "loss")] == [3]
    summary = json.loads((root / "models" / "crsp" / "train_summary.json").read_text())
    assert summary["steps"] == 3


pytestmark = pytest.mark.timeout(900)

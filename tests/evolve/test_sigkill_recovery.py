"""After a SIGKILL, the next `crsp-ops evolve --resume` closes the dead run and its temp files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from evolve_testkit import make_project
from mlflow.tracking import MlflowClient

CLI = [sys.executable, "-m", "crsp_ops.cli", "evolve"]


def test_sigkilled_run_is_marked_killed_and_its_temp_files_removed_on_resume(
        tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    args = [a for item in ("evolve.iterations=3", "evolve.minibatch_size=2",
                           "evolve.heldout_size=1", "evolve.registry_enabled=n",
                           "generation.max_new_tokens=16") for a in ("--set", item)]
    env = {**os.environ, "CRSP_OPS_ROOT": str(root)}
    for variable in ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI"):
        env.pop(variable, None)
    out = root / "outputs" / "evolution"
    proc = subprocess.Popen([*CLI, *args], cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (out / "state.json").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()[-3000:]
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    killed_run = json.loads((out / "mlflow_run.json").read_text())["run_id"]
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    assert client.get_run(killed_run).info.status == "RUNNING"  # nobody could end it
    leftovers = [out / ".deltas_best.json.x1y2z3w4.tmp",
                 out / "reflector" / ".history.json.a1b2c3d4.tmp"]
    for path in leftovers:  # what a write cut by SIGKILL leaves
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half")

    resumed = subprocess.run([*CLI, *args, "--resume", "outputs/evolution"], cwd=root, env=env,
                             capture_output=True, text=True, timeout=500)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert client.get_run(killed_run).info.status == "KILLED"
    assert "left RUNNING by a dead process" in resumed.stderr
    assert not any(path.exists() for path in leftovers)
    new_run = json.loads((out / "mlflow_run.json").read_text())["run_id"]
    assert client.get_run(new_run).info.status == "FINISHED"

"""SIGINT to a real `crsp-ops evolve` mid-iteration, then `--resume` finishes the run.

Generation goes through the OpenAI-compatible local server that the run starts itself, so the
test also proves the interrupted run leaves no server process behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from evolve_testkit import make_project

from crsp_ops.inference.server_manager import free_port

CLI = [sys.executable, "-m", "crsp_ops.cli"]
SERVE = "{python} -m crsp_ops.cli serve --model {model_dir} --port {port} --clusters {token_clusters}"


def server_processes(port: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "crsp_ops.cli serve" in cmdline and f"--port {port}" in cmdline and \
                proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def history_rows(out: Path) -> list[dict]:
    try:
        return json.loads((out / "history.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return []


@pytest.mark.server
def test_sigint_mid_iteration_then_resume(tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    port = free_port()
    settings = [
        "evolve.iterations=4", "evolve.minibatch_size=3", "evolve.heldout_size=2",
        "evolve.registry_enabled=n", "generation.max_new_tokens=40",
        "generation.backend=openai_server", "generation.engine=vllm",
        f"generation.base_url=http://127.0.0.1:{port}/v1", f"generation.server_command={SERVE}",
        "generation.startup_timeout_s=120", f"generation.server_log={tmp_path / 'server.log'}",
    ]
    args = [arg for item in settings for arg in ("--set", item)]
    env = {**os.environ, "CRSP_OPS_ROOT": str(root), "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_RUN_ID", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    out = root / "outputs" / "evolution"
    log = (tmp_path / "evolve.log").open("w")
    proc = subprocess.Popen([*CLI, "evolve", *args], cwd=root, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: len(history_rows(out)) >= 1 or proc.poll() is not None, 240,
                 "the first finished iteration")
        assert proc.poll() is None, (tmp_path / "evolve.log").read_text()[-3000:]
        assert server_processes(port), "the run should have started its server"
        proc.send_signal(signal.SIGINT)  # iteration 1 is generating now
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    finished = len(history_rows(out))
    assert 1 <= finished < 4
    best = json.loads((out / "deltas_best.json").read_text())
    assert set(best) == {str(i) for i in range(evolve_inputs.n_clusters)}
    spec = importlib.util.spec_from_file_location("processor_best", out / "processor_best.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.DELTAS == [best[str(i)] for i in range(len(best))]
    wait_for(lambda: not server_processes(port), 10, "the server to be gone")

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    first_run = json.loads((out / "mlflow_run.json").read_text())["run_id"]
    killed = client.get_run(first_run)
    assert killed.info.status == "KILLED"
    assert "deltas_best.json" in {a.path for a in client.list_artifacts(first_run)}

    resumed = subprocess.run([*CLI, "evolve", *args, "--resume", "outputs/evolution"], cwd=root,
                             env=env, capture_output=True, text=True, timeout=400)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]
    rows = history_rows(out)
    assert [row["iteration"] for row in rows] == [0, 1, 2, 3]
    runs = json.loads((out / "mlflow_run.json").read_text())
    assert runs["runs"][1] == first_run and runs["run_id"] != first_run
    second = client.get_run(runs["run_id"])
    assert second.info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(runs["run_id"], "composite_score")]
    assert sorted(steps) == [0, 1, 2, 3]  # replayed + new: one run shows every iteration
    assert not server_processes(port)

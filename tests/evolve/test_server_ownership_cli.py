"""A real `crsp-ops evolve` that manages its own CPU server: SIGKILL, a stranger, a dead server.

- SIGKILL the driver: its server is gone from the port within seconds (parent-death signal);
  temp files of every kind left in the output directory are removed by ``--resume``, which
  starts its own server and finishes.
- Something else listens on the port: one line naming the port and its holder, exit 2.
- The server dies and the restart budget is 0: one line, exit 1, no traceback.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from evolve_testkit import make_project

from crsp_ops.inference.port_owner import listener_pids, port_is_listening
from crsp_ops.inference.server_manager import free_port

pytestmark = [pytest.mark.server, pytest.mark.slow]

CLI = [sys.executable, "-m", "crsp_ops.cli", "evolve"]
SERVE = "{python} -m crsp_ops.cli serve --model {model_dir} --port {port} --clusters {token_clusters}"


def evolve_args(port: int, log: Path, *extra: str) -> list[str]:
    settings = [
        "evolve.iterations=3", "evolve.minibatch_size=2", "evolve.heldout_size=1",
        "evolve.registry_enabled=n", "generation.max_new_tokens=16",
        "generation.backend=openai_server", "generation.engine=vllm",
        f"generation.base_url=http://127.0.0.1:{port}/v1", f"generation.server_command={SERVE}",
        "generation.startup_timeout_s=120", f"generation.server_log={log}", *extra,
    ]
    return [arg for item in settings for arg in ("--set", item)]


def project_env(root: Path) -> dict[str, str]:
    env = {**os.environ, "CRSP_OPS_ROOT": str(root), "PYTHONUNBUFFERED": "1"}
    for variable in ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI"):
        env.pop(variable, None)
    return env


def wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def error_lines(stderr: str) -> list[str]:
    """The lines the CLI itself wrote (log lines carry a timestamp and a logger name)."""
    return [line for line in stderr.splitlines() if line.startswith("crsp-ops")]


def test_sigkilled_evolve_leaves_no_server_and_resume_cleans_up_and_finishes(
        tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    port = free_port()
    args = evolve_args(port, tmp_path / "server.log")
    out = root / "outputs" / "evolution"
    log = (tmp_path / "evolve.log").open("w")
    proc = subprocess.Popen(CLI + args, cwd=root, env=project_env(root), stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: (out / "history.json").exists() or proc.poll() is not None, 300)
        assert proc.poll() is None, (tmp_path / "evolve.log").read_text()[-3000:]
        assert port_is_listening("127.0.0.1", port)
        server_pids = listener_pids(port)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
        log.close()
    assert wait_for(lambda: not port_is_listening("127.0.0.1", port), 5.0), \
        f"orphaned server still on port {port}: {server_pids}"
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
                   for pid in server_pids if pid is not None)
    leftovers = [  # one temporary of every kind of file the project writes
        out / ".history.json.k2j4h6g8.tmp",
        out / ".minibatches.jsonl.q1w2e3r4.tmp",
        out / ".evolution_lengths.png.a1s2d3f4.png.tmp",
        out / ".evolution_lengths.png.z9x8c7v6.png",  # what older versions left
        out / "reflector" / ".kmeans.joblib.m5n6b7v8.tmp",  # a model file (clusters stage)
        out / ".server.json.p0o9i8u7.tmp",
    ]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")

    resumed = subprocess.run(CLI + args + ["--resume", "outputs/evolution"], cwd=root,
                             env=project_env(root), capture_output=True, text=True, timeout=500)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert [row["iteration"] for row in json.loads((out / "history.json").read_text())] == [0, 1, 2]
    assert not [path for path in leftovers if path.exists()]
    assert "started server pid" in resumed.stderr  # its own server, not the old one
    assert not port_is_listening("127.0.0.1", port)
    assert not (out / "server.json").exists()


def test_a_foreign_listener_on_the_port_is_refused_in_one_line(tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        result = subprocess.run(CLI + evolve_args(port, tmp_path / "server.log"), cwd=root,
                                env=project_env(root), capture_output=True, text=True,
                                timeout=300)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    [line] = error_lines(result.stderr)
    assert f"port {port} is held by pid {os.getpid()}" in line


def test_a_spent_restart_budget_is_one_line_and_exit_1(tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    port = free_port()
    args = evolve_args(port, tmp_path / "server.log", "generation.server_max_restarts=0",
                       "evolve.iterations=30")
    proc = subprocess.Popen(CLI + args, cwd=root, env=project_env(root),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    out = root / "outputs" / "evolution"
    try:
        assert wait_for(lambda: (out / "history.json").exists() or proc.poll() is not None, 300)
        for pid in listener_pids(port):
            os.kill(pid, signal.SIGKILL)  # the server dies; no restart is allowed
        stderr = proc.communicate(timeout=300)[1]
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr
    [line] = error_lines(stderr)
    assert "restart budget (0) is spent" in line

"""``crsp-ops serve`` with ``generation.server_command``: the engine's server, managed like evolve's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from crsp_ops.inference.server_manager import free_port, probe_health
from crsp_ops.paths import copy_config_tree
from tests.inference.fake_engine import recorded

pytestmark = pytest.mark.server

FAKE_ENGINE = Path(__file__).resolve().parent / "fake_engine.py"
REPO = Path(__file__).resolve().parents[2]


def test_serve_starts_health_checks_and_stops_the_engine_command(tmp_path):
    port, calls = free_port(), tmp_path / "calls.jsonl"
    root = tmp_path / "project"  # the declared defaults: no params.yaml of the working tree
    root.mkdir()
    copy_config_tree(REPO, root)
    command = f"{sys.executable} {FAKE_ENGINE} --port {{port}} --model {{model_dir}} --calls {calls}"
    process = subprocess.Popen(
        [sys.executable, "-m", "crsp_ops.cli", "serve", "--model", str(root), "--port",
         str(port), "--set", "generation.engine=vllm", "--set", "generation.vllm_runner=v1",
         "--set", f"generation.server_command={command}", "--set", "tracking.enabled=n"],
        cwd=REPO, env={**os.environ, "CRSP_OPS_ROOT": str(root)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert f"vllm serving at http://127.0.0.1:{port}/v1" in line, process.stderr.read()
        assert probe_health(f"http://127.0.0.1:{port}/health", 5.0)
        [start] = [call for call in recorded(calls) if call[0] == "START"]
        assert f"--model {root.resolve()}" in start[1]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert not probe_health(f"http://127.0.0.1:{port}/health", 2.0)  # stopped with it
    finally:
        process.kill()

"""SIGINT while `crsp-ops` is still loading its modules: one line and exit 130, no traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CRSP_OPS = Path(sys.executable).with_name("crsp-ops")


@pytest.mark.parametrize("command", [[sys.executable, "-m", "pipelines.cli"], [str(CRSP_OPS)]],
                         ids=["python -m", "console script"])
def test_sigint_during_startup_is_one_line_and_130(command):
    proc = subprocess.Popen([*command, "evolve", "--help"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # the interpreter is up; the drivers' modules are still loading
    proc.send_signal(signal.SIGINT)
    stderr = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr

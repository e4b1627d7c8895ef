"""SIGINT while `crsp-ops` is still loading its modules: one line and exit 130, no traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CRSP_OPS = Path(sys.executable).with_name("crsp-ops")


@pytest.mark.parametrize("command", [[sys.executable, "-m", "crsp_ops.cli"], [str(CRSP_OPS)],
                                     [sys.executable, "-m", "pipelines.evolve"]],
                         ids=["python -m", "console script", "stage script"])
def test_sigint_during_startup_is_one_line_and_130(command):
    args = ["--help"] if command[-1].startswith("pipelines.") else ["evolve", "--help"]
    proc = subprocess.Popen([*command, *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # the interpreter is up; the drivers' modules are still loading
    proc.send_signal(signal.SIGINT)
    stderr = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


def test_importing_the_package_installs_no_handler():
    """A library import changes no signal handler; only a command line guards its start-up."""
    code = ("import signal; before = signal.getsignal(signal.SIGINT); "
            "import crsp_ops.cli.main, crsp_ops.cli.commands.train, pipelines.train; "
            "print(signal.getsignal(signal.SIGINT) is before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert out.stdout.strip() == "True", out.stderr

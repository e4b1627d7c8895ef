"""One writer per output directory: a second `crsp-ops` on it is refused; a dead holder's lock is not."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crsp_ops.dir_lock import hold_output_dir
from crsp_ops.errors import InUseError

REPO = Path(__file__).resolve().parents[1]


def holder(out: Path) -> subprocess.Popen:
    """Another process holding ``out`` (it prints 'held' once it has it)."""
    code = textwrap.dedent(f"""
        import time
        from crsp_ops.dir_lock import hold_output_dir
        with hold_output_dir({str(out)!r}):
            print("held", flush=True)
            time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(REPO / "Kconfig", root / "Kconfig")
    return root


@pytest.mark.parametrize("where", [["--out", "outputs/evolution"],
                                   ["--resume", "outputs/evolution"]])
def test_a_second_writer_on_an_output_directory_is_refused(project, where):
    first = holder(project / "outputs" / "evolution")
    try:
        env = {**os.environ, "CRSP_OPS_ROOT": str(project)}
        second = subprocess.run([sys.executable, "-m", "crsp_ops.cli", "evolve", *where],
                                cwd=project, env=env, capture_output=True, text=True,
                                timeout=120)
    finally:
        first.kill()
        first.wait()
    assert second.returncode == 2
    [line] = second.stderr.strip().splitlines()
    assert line.startswith("crsp-ops evolve: ")
    assert f"in use by pid {first.pid} on host {socket.gethostname()}" in line


def test_a_lock_left_by_a_killed_holder_is_recovered(tmp_path):
    out = tmp_path / "out"
    first = holder(out)
    first.send_signal(signal.SIGKILL)
    first.wait()
    with hold_output_dir(out):  # the kernel dropped the dead holder's fcntl lock
        with pytest.raises(InUseError, match=f"pid {os.getpid()}"):
            with hold_output_dir(out):
                pass


def test_a_lock_on_a_fresh_tree_leaves_nothing_behind(tmp_path):
    out = tmp_path / "models" / "converted"
    with hold_output_dir(out):
        assert (tmp_path / "models" / ".converted.lock").exists()
    assert not (tmp_path / "models").exists()  # a command that wrote nothing leaves nothing
    with hold_output_dir(out):
        out.mkdir()
    assert out.is_dir()  # what the command wrote stays


def test_secondary_ranks_of_one_launch_share_rank_zeros_lock(tmp_path, monkeypatch):
    out = tmp_path / "crsp"
    with hold_output_dir(out):
        monkeypatch.setenv("RANK", "1")
        with hold_output_dir(out):  # rank 1 of the same job: no second lock, no refusal
            pass
        monkeypatch.setenv("RANK", "0")
        with pytest.raises(InUseError):
            with hold_output_dir(out):
                pass


def test_a_refused_run_in_an_existing_folder_leaves_no_lock_file(tmp_path):
    (tmp_path / "models").mkdir()
    out = tmp_path / "models" / "crsp"
    with hold_output_dir(out):  # refused by its configuration: nothing written
        pass
    assert list((tmp_path / "models").iterdir()) == []
    with hold_output_dir(out):
        out.mkdir()
    assert (tmp_path / "models" / ".crsp.lock").exists()  # a written folder keeps its lock file

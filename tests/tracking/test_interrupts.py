"""Signals never tear a tracking write, runs never stay RUNNING, teardown signals exit cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.config import load_settings, sync_params
from crsp_ops.interrupts import (
    Terminated,
    critical_section,
    install_handlers,
    pending_signals,
)
from crsp_ops.paths import copy_config_tree
from crsp_ops.tracking import start_run, tracking_uri
from crsp_ops.tracking.stale_runs import HOST_TAG, PID_TAG, STARTED_TAG, process_tags

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch):
    copy_config_tree(REPO, tmp_path)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(tmp_path))
    for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(variable, raising=False)
    sync_params(tmp_path)
    return tmp_path


def test_signal_inside_a_critical_section_is_raised_when_it_ends():
    restore = install_handlers()
    try:
        done = []
        with pytest.raises(KeyboardInterrupt):
            with critical_section():
                with critical_section():
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.05)  # the handler has run: the signal is only noted
                    done.append("inner")
                assert pending_signals() == [signal.SIGINT]
                done.append("outer")
        assert done == ["inner", "outer"] and pending_signals() == []
        with pytest.raises(Terminated):
            with critical_section():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
        with pytest.raises(KeyboardInterrupt):  # outside a section: raised at once
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    finally:
        restore()


HELD_WRITE = textwrap.dedent("""
    import sys, time, pathlib
    from crsp_ops.config import load_settings
    from crsp_ops.interrupts import install_handlers
    from crsp_ops.tracking import start_run

    install_handlers()
    root, flag = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    try:
        with start_run("unit", load_settings(root)) as tracker:
            original = tracker.client.log_batch

            def held(*args, **kwargs):  # the write is in progress while the flag exists
                flag.write_text(tracker.run_id)
                time.sleep(3.0)
                return original(*args, **kwargs)

            tracker.client.log_batch = held
            tracker.log_metrics({"written": 1.0}, step=0)
            tracker.flush()
            tracker.client.log_batch = original
            print("NOT INTERRUPTED", flush=True)
            time.sleep(60)
    except KeyboardInterrupt:
        sys.exit(130)
""")


def test_sigint_while_a_tracking_write_is_held_ends_the_run_killed_with_the_write_done(
        project, tmp_path):
    flag = tmp_path / "writing"
    proc = subprocess.Popen([sys.executable, "-c", HELD_WRITE, str(project), str(flag)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CRSP_OPS_ROOT": str(project)})
    try:
        deadline = time.monotonic() + 120
        while not flag.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)  # the write is inside its 3 s hold
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert time.monotonic() - sent > 2.0  # it waited for the write instead of tearing it
    assert "NOT INTERRUPTED" not in out  # ... and then stopped right after it
    client = MlflowClient(tracking_uri(load_settings(project)))
    run = client.get_run(flag.read_text())
    assert run.info.status == "KILLED"
    assert [m.value for m in client.get_metric_history(run.info.run_id, "written")] == [1.0]


TEARDOWN = textwrap.dedent("""
    import atexit, sys, time, pathlib
    from crsp_ops.interrupts import ignore_late_signals

    flag = pathlib.Path(sys.argv[1])
    def slow_teardown():
        flag.touch()
        time.sleep(3)
    atexit.register(slow_teardown)
    ignore_late_signals()   # the job finished: a late signal must not change the exit code
    sys.exit(0)
""")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_teardown_after_a_finished_run_exits_cleanly(tmp_path, signum):
    flag = tmp_path / "teardown"
    proc = subprocess.Popen([sys.executable, "-c", TEARDOWN, str(flag)],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err


def test_stale_running_run_of_a_dead_process_is_marked_killed(project):
    resolved = load_settings(project)
    client = MlflowClient(tracking_uri(resolved))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    mine = process_tags()
    experiment = client.create_experiment("crsp-evolve")
    owner = {"crsp.out_dir": "/runs/a"}
    stale = client.create_run(experiment, tags={**owner, HOST_TAG: mine[HOST_TAG],
                                                PID_TAG: dead.stdout.strip(),
                                                STARTED_TAG: "1.00"}).info.run_id
    alive = client.create_run(experiment, tags={**owner, **mine}).info.run_id
    other_dir = client.create_run(experiment, tags={"crsp.out_dir": "/runs/b", HOST_TAG:
                                                    mine[HOST_TAG], PID_TAG: "1",
                                                    STARTED_TAG: "1.00"}).info.run_id
    with start_run("evolve", resolved, tags=owner, owner_tag="crsp.out_dir") as tracker:
        new = tracker.run_id
    status = {run: client.get_run(run).info.status for run in (stale, alive, other_dir, new)}
    assert status == {stale: "KILLED", alive: "RUNNING", other_dir: "RUNNING",
                      new: "FINISHED"}

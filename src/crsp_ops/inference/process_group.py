"""A server's process group: launch a command that dies with us, and stop the whole group.

One ``killpg`` reaches every worker the server forks; a parent-death signal ends it even when
this process is SIGKILLed.

Design: docs/design/inference.md#process_group.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def launch_group(
    command: Sequence[str], log_path: Path, *, env: Mapping[str, str] | None, cwd: str | None,
) -> subprocess.Popen:
    """Start ``command`` as the leader of a new process group, its output appended to the log.

    Args:
        command: the argv.
        log_path: the log file (stdout and stderr); a header line naming the command comes first.
        env: extra environment variables (on top of this process's).
        cwd: the working directory (``None``: this process's).
    """
    env = {**os.environ, **(env or {})}
    with open(log_path, "ab") as log:
        log.write(f"\n=== crsp_ops: starting {' '.join(command)}\n".encode())
        log.flush()
        return subprocess.Popen(  # noqa: S603 (argv from the user's config)
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent(),
        )


def group_alive(pgid: int) -> bool:
    """True while any process (zombies included) is still in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists but owned by someone else: still alive
        return True
    return True


def terminate_group(process: subprocess.Popen, grace_s: float) -> int | None:
    """SIGTERM the process group of ``process``, then SIGKILL whatever is left after ``grace_s``.

    Returns:
        The leader's exit code (None if it could not be reaped).
    """
    pgid = process.pid  # start_new_session makes the leader's pid the group id
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    # Workers may outlive the leader; give them the rest of the grace period.
    while group_alive(pgid) and time.monotonic() < deadline and process.poll() is not None:
        time.sleep(0.05)
    if group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)
        kill_deadline = time.monotonic() + 2.0
        while group_alive(pgid) and time.monotonic() < kill_deadline:
            process.poll()  # reap the leader if it is the one left
            time.sleep(0.02)
    try:
        return process.wait(timeout=10.0)
    except subprocess.TimeoutExpired:
        logger.error("server leader %d did not exit after SIGKILL", process.pid)
        return None


def stop_group(pgid: int, grace_s: float) -> None:
    """SIGTERM process group ``pgid`` (not our child), SIGKILL it after ``grace_s``."""
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)


def _die_with_parent():
    """A ``preexec_fn`` giving the child a parent-death SIGTERM (Linux, main thread only)."""
    if _LIBC is None or threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()

    def preexec() -> None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass

"""Run one job in a fresh, resource-limited interpreter and classify how it ended.

Isolation in layers (AST check, ``python -I -S`` child in its own session, rlimits, an audit
hook, a temporary working folder, a nonce-tagged result); the calling process never executes
proposed code.

Design: docs/design/trainer.md#sandbox.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crsp_ops.crsp.executor.ast_guard import find_violations
from crsp_ops.crsp.executor.jobs import (
    ExecutionJob,
    ExecutionResult,
    ExecutionStatus,
    SandboxLimits,
)

HARNESS = Path(__file__).with_name("_harness.py")
_TAIL_CHARS = 500


def run_once(job: ExecutionJob, limits: SandboxLimits, *, scratch_root: Path) -> ExecutionResult:
    """Run ``job`` once in a sandboxed child process.

    Args:
        job: program and literal inputs.
        limits: resource limits for the child.
        scratch_root: existing folder under which the run's temporary folders are made.

    Returns:
        The classified result; never raises for anything the program does.
    """
    try:
        violations = find_violations(job.program)
    except SyntaxError as error:
        return ExecutionResult(ExecutionStatus.ERROR, (), f"SyntaxError: {error}")
    except (ValueError, RecursionError, MemoryError) as error:
        return ExecutionResult(ExecutionStatus.ERROR, (), f"unparsable program: {error}")
    if violations:
        return ExecutionResult(ExecutionStatus.BANNED, (), "; ".join(violations))

    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=scratch_root))
    try:
        return _run_in(run_dir, job, limits)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _run_in(run_dir: Path, job: ExecutionJob, limits: SandboxLimits) -> ExecutionResult:
    workdir = run_dir / "work"  # the only place the child may write
    workdir.mkdir()
    nonce = secrets.token_hex(16)
    payload = json.dumps({
        "program": job.program,
        "inputs": list(job.inputs),
        "nonce": nonce,
        "max_output_chars": limits.max_output_chars,
        "limits": {
            "memory_bytes": limits.memory_mb * 2**20,
            "cpu_seconds": limits.cpu_seconds,
            "fsize_bytes": int(limits.max_file_size_mb * 2**20),
            "nproc": limits.max_processes,
        },
    }).encode()
    stdout_path, stderr_path = run_dir / "stdout", run_dir / "stderr"
    started = time.monotonic()
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(HARNESS)],
            stdin=subprocess.PIPE, stdout=stdout, stderr=stderr, cwd=workdir,
            env={"LC_ALL": "C.UTF-8"}, start_new_session=True, close_fds=True,
        )
        timed_out = False
        try:
            process.communicate(payload, timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process)  # also reaps anything the program left behind
    duration = time.monotonic() - started
    if timed_out:
        return ExecutionResult(ExecutionStatus.TIMEOUT, (),
                               f"killed after {limits.timeout_s:g} s wall clock", duration)
    # Enough for every repr at the cap plus JSON escaping; a larger file is not ours to trust.
    cap = 8 * limits.max_output_chars * (len(job.inputs) + 1) + 65536
    report = _read_report(stdout_path, cap, nonce)
    if report is None:
        return ExecutionResult(ExecutionStatus.CRASHED if process.returncode != -signal.SIGXCPU
                               else ExecutionStatus.TIMEOUT, (),
                               _crash_detail(process.returncode, stderr_path), duration)
    return ExecutionResult(ExecutionStatus(report["status"]), tuple(report["outputs"]),
                           report["detail"], duration)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone
    process.wait()


def _read_report(path: Path, cap: int, nonce: str) -> dict | None:
    with open(path, "rb") as handle:
        raw = handle.read(cap + 1)
    if len(raw) > cap:
        return None
    for line in reversed(raw.decode("utf-8", errors="replace").splitlines()):
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(report, dict) and report.get("nonce") == nonce:
            valid_status = report.get("status") in {s.value for s in ExecutionStatus}
            if valid_status and isinstance(report.get("outputs"), list):
                return report
    return None


def _crash_detail(returncode: int | None, stderr_path: Path) -> str:
    with open(stderr_path, "rb") as handle:
        tail = handle.read(64 * 1024).decode("utf-8", errors="replace")[-_TAIL_CHARS:]
    if returncode is not None and returncode < 0:
        reason = f"killed by {signal.Signals(-returncode).name}"
    else:
        reason = f"exited with code {returncode} without a report"
    return f"{reason}; stderr tail: {tail!r}" if tail else reason

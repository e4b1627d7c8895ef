"""Hostile programs through the real sandbox: each is contained with a clear status."""

import os
import time

import pytest

from crsp_ops.crsp.executor import (
    ExecutionJob,
    ExecutionStatus,
    SandboxExecutor,
    SandboxLimits,
    find_violations,
    run_once,
)

Status = ExecutionStatus
# `random` imports os as `random._os`: a way to reach os that the static check cannot see,
# so these programs exercise the runtime layer (audit hook, rlimits) of the real child process.
RUNTIME_OS = "import random\n_os = random._os\n"


def test_clean_program_runs_on_every_input(executor):
    result = executor.run("def f(xs, k):\n    return sorted(xs)[:k]\n", ["[3, 1, 2], 2", "[9], 1"])
    assert result.status is Status.OK
    assert result.outputs == ("[1, 2]", "[9]")


def test_program_runs_in_another_process(tmp_path, sandbox_limits):
    job = ExecutionJob(RUNTIME_OS + "def f(x):\n    return _os.getpid()\n", ("0",))
    result = run_once(job, sandbox_limits, scratch_root=tmp_path)  # once: a pid is not repeatable
    assert result.ok and int(result.outputs[0]) != os.getpid()


def test_infinite_loop_is_killed_at_the_wall_clock_limit(executor, sandbox_limits):
    started = time.monotonic()
    result = executor.run("def f(x):\n    while True:\n        x += 1\n", ["0"])
    assert result.status is Status.TIMEOUT
    assert "wall clock" in result.detail
    assert time.monotonic() - started < sandbox_limits.timeout_s + 3


def test_static_fork_attempt_is_banned(executor):
    result = executor.run("import os\ndef f(x):\n    return os.fork()\n", ["0"])
    assert result.status is Status.BANNED and "'os'" in result.detail


@pytest.mark.parametrize("call", ["_os.fork()", "_os.system('true')",
                                  "_os.posix_spawn('/bin/true', ['true'], {})",
                                  "_os.execv('/bin/true', ['true'])"])
def test_runtime_process_creation_is_blocked(executor, call):
    program = RUNTIME_OS + f"def f(x):\n    return {call}\n"
    assert find_violations(program) == []  # only the runtime layer can stop it
    result = executor.run(program, ["0"])
    assert result.status is Status.BANNED
    assert "forbidden operation" in result.detail


def test_caught_violation_is_still_reported(executor, tmp_path):
    marker = tmp_path / "forked"
    program = RUNTIME_OS + (
        "def f(x):\n    try:\n        _os.system('touch " + str(marker) + "')\n"
        "    except Exception:\n        pass\n    return 'innocent'\n")
    result = executor.run(program, ["0"])
    assert result.status is Status.BANNED
    assert not marker.exists()


def test_memory_blow_up_is_contained(executor):
    result = executor.run("def f(x):\n    chunks = []\n    while True:\n"
                          "        chunks.append(bytearray(10**7))\n", ["0"])
    assert result.status is Status.MEMORY


def test_huge_return_value_is_truncated_and_flagged(executor, sandbox_limits):
    result = executor.run("def f(n):\n    return 'a' * n\n", ["1000000"])
    assert result.status is Status.OUTPUT_TOO_LARGE
    assert len(result.outputs[0]) == sandbox_limits.max_output_chars


def test_print_flood_is_flagged(executor):
    result = executor.run("def f(x):\n    for _ in range(10**5):\n        print('y' * 100)\n"
                          "    return 1\n", ["0"])
    assert result.status is Status.OUTPUT_TOO_LARGE
    assert "printed" in result.detail


def test_static_write_outside_is_banned(executor, tmp_path):
    target = tmp_path / "escape.txt"
    result = executor.run(f"def f(x):\n    open({str(target)!r}, 'w').write('x')\n"
                          "    return 1\n", ["0"])
    assert result.status is Status.BANNED
    assert not target.exists()


def test_runtime_write_outside_is_blocked(executor, tmp_path):
    target = tmp_path / "escape.txt"
    program = RUNTIME_OS + (f"def f(x):\n    fd = _os.open({str(target)!r}, "
                            "_os.O_WRONLY | _os.O_CREAT)\n    return fd\n")
    result = executor.run(program, ["0"])
    assert result.status is Status.BANNED
    assert "outside the working directory" in result.detail
    assert not target.exists()


def test_runtime_read_outside_and_delete_are_blocked(executor, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("token")
    read = executor.run(f"def f(x):\n    return open({str(secret)!r}).read()\n", ["0"])
    delete = executor.run(RUNTIME_OS + f"def f(x):\n    _os.remove({str(secret)!r})\n", ["0"])
    assert read.status is Status.BANNED and delete.status is Status.BANNED
    assert secret.read_text() == "token"


def test_writes_inside_the_working_dir_are_allowed_and_removed(executor):
    program = ("def f(x):\n    with open('notes.txt', mode='r') as h:\n        return h.read()\n")
    assert executor.run(program, ["0"]).status is Status.ERROR  # FileNotFoundError: fresh dir
    writer = RUNTIME_OS + ("def f(x):\n    fd = _os.open('out.txt', _os.O_WRONLY | _os.O_CREAT)\n"
                           "    _os.write(fd, b'hi')\n    return sorted(_os.listdir('.'))\n")
    result = executor.run(writer, ["0"])
    assert result.status is Status.OK and result.outputs == ("['out.txt']",)
    assert list(executor.scratch_root.iterdir()) == []  # every run folder was removed


def test_file_size_rlimit(executor):
    # A write is cut short at the limit; the next one fails with EFBIG (SIGXFSZ is ignored).
    program = RUNTIME_OS + ("def f(x):\n    fd = _os.open('big', _os.O_WRONLY | _os.O_CREAT)\n"
                            "    for _ in range(3):\n        _os.write(fd, b'x' * 2**20)\n"
                            "    return 1\n")
    result = executor.run(program, ["0"])
    assert result.status is Status.ERROR and "File too large" in result.detail


@pytest.mark.parametrize("source", [
    "import socket\ndef f(x):\n    return x\n",
    "import subprocess\ndef f(x):\n    return x\n",
    "from ctypes import CDLL\ndef f(x):\n    return x\n",
    "import shutil\ndef f(x):\n    return x\n",
    "import sys\ndef f(x):\n    return x\n",
    "import os.path\ndef f(x):\n    return x\n",
    "def f(x):\n    return __import__('os').getpid()\n",
    "def f(x):\n    return eval('1+1')\n",
    "def f(x):\n    exec('y=1')\n    return x\n",
    "def f(x):\n    return getattr(x, '__class__')\n",
    "def f(x):\n    return ().__class__.__base__.__subclasses__()\n",
    "def f(x):\n    return f.__globals__\n",
    "def f(x):\n    g = open\n    return g\n",
    "def f(x, m):\n    return open('a', m)\n",
    "def f(x):\n    return open('a', 'a+')\n",
])
def test_banned_constructs(executor, source):
    result = executor.run(source, ["0"])
    assert result.status is Status.BANNED
    assert result.detail


def test_read_only_open_passes_the_static_check():
    assert find_violations("def f(p):\n    return open(p).read()\n") == []
    assert find_violations("def f(p):\n    return open(p, 'rb').read()\n") == []


@pytest.mark.parametrize("body", ["hash('crsp') % 10007",
                                  "''.join({'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'})",
                                  "random.random()"])
def test_nondeterminism_is_detected(executor, body):
    result = executor.run(f"import random\ndef f(x):\n    return {body}\n", ["0"])
    assert result.status is Status.NONDETERMINISTIC


@pytest.mark.parametrize(("source", "inputs", "needle"), [
    ("def f(x):\n    return 1 / x\n", ["0"], "ZeroDivisionError"),
    ("def f(x)\n    return x\n", ["0"], "SyntaxError"),
    ("g = 1\n", ["0"], "no callable f"),
    ("def f(x):\n    return x\n", ["print(1)"], "not a Python literal"),
    ("def f(x):\n    return f(x)\n", ["0"], "RecursionError"),
])
def test_errors_are_reported(executor, source, inputs, needle):
    result = executor.run(source, inputs)
    assert result.status is Status.ERROR and needle in result.detail


def test_caller_keeps_going_after_hostile_jobs(executor):
    jobs = [ExecutionJob("def f(x):\n    while True:\n        pass\n", ("0",)),
            ExecutionJob("def f(x):\n    return x * 2\n", ("21",)),
            ExecutionJob("import socket\ndef f(x):\n    return x\n", ("0",)),
            ExecutionJob("def f(x):\n    return [0] * 10**10\n", ("0",)),
            ExecutionJob("def f(x):\n    return x + 1\n", ("1",))]
    statuses = [r.status for r in executor.run_many(jobs)]
    assert statuses == [Status.TIMEOUT, Status.OK, Status.BANNED, Status.MEMORY, Status.OK]
    assert executor.run("def f(x):\n    return -x\n", ["5"]).outputs == ("-5",)


def test_run_once_without_pool_and_cleanup(tmp_path, sandbox_limits):
    result = run_once(ExecutionJob("def f():\n    return 'ok'\n", ("",)), sandbox_limits,
                      scratch_root=tmp_path)
    assert result.status is Status.OK and result.outputs == ("'ok'",)
    assert list(tmp_path.iterdir()) == []


def test_pool_arguments_and_close(tmp_path, sandbox_limits):
    with pytest.raises(ValueError, match="max_workers"):
        SandboxExecutor(sandbox_limits, max_workers=0, cleanup_every=1, determinism_runs=2)
    with pytest.raises(ValueError, match="determinism_runs"):
        SandboxExecutor(sandbox_limits, max_workers=1, cleanup_every=1, determinism_runs=0)
    pool = SandboxExecutor(sandbox_limits, max_workers=1, cleanup_every=2, determinism_runs=1,
                           scratch_parent=tmp_path)
    (pool.scratch_root / "run-leftover").mkdir()
    pool.run_many([])
    assert (pool.scratch_root / "run-leftover").exists()  # first batch: no sweep yet
    pool.run_many([])
    assert not (pool.scratch_root / "run-leftover").exists()  # every 2nd batch sweeps
    pool.close()
    pool.close()
    assert not pool.scratch_root.exists()
    with pytest.raises(RuntimeError, match="closed"):
        pool.run_many([])


@pytest.mark.parametrize(("field", "value"), [("timeout_s", 0), ("memory_mb", 8),
                                              ("max_processes", 0), ("max_output_chars", 1)])
def test_limits_validation(field, value):
    kwargs = dict(timeout_s=1.0, memory_mb=256, max_file_size_mb=1.0, max_processes=1,
                  max_output_chars=100)
    kwargs[field] = value
    with pytest.raises(ValueError, match=field):
        SandboxLimits(**kwargs)

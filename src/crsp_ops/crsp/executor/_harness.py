"""Child-side runner of one sandboxed job; started as ``python -I -S _harness.py``.

Self-contained (standard library only, imports nothing from ``crsp_ops``): ``-I -S`` keeps the
package, site-packages and environment variables out of the child. It reads one JSON payload
from stdin, lowers its own rlimits, installs a PEP 578 audit hook that blocks process creation,
sockets, ctypes, deletions and writes outside its working directory, executes the program,
calls ``f`` on each literal input, and writes one JSON line (tagged with the parent's nonce) to
the original stdout. The program's own prints go to a bounded in-memory sink, never to the
result channel.
"""

import ast

# The F401 imports load common modules before the hook is armed, so programs can use them.
import bisect  # noqa: F401
import builtins
import collections  # noqa: F401
import copy  # noqa: F401
import fractions  # noqa: F401
import functools  # noqa: F401
import heapq  # noqa: F401
import itertools  # noqa: F401
import json
import math  # noqa: F401
import os
import random  # noqa: F401
import re  # noqa: F401
import resource
import signal
import string  # noqa: F401
import sys

_BLOCKED_EVENTS = frozenset({
    "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.putenv", "os.unsetenv",
    "os.chdir", "os.chmod", "os.chown", "os.chflags", "os.lchown", "os.link", "os.symlink",
    "os.remove", "os.rename", "os.rmdir", "os.truncate", "os.utime", "os.setxattr",
    "os.removexattr", "subprocess.Popen", "sys._current_frames", "gc.get_objects",
    "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile", "pty.spawn",
    "cpython._PySys_ClearAuditHooks", "webbrowser.open", "resource.setrlimit",
})
_BLOCKED_PREFIXES = ("socket.", "ctypes.", "shutil.", "os.exec", "os.spawn", "os.posix_spawn",
                     "_winapi.", "winreg.", "msvcrt.", "urllib.", "http.", "ftplib.", "smtplib.")
_PATH_EVENTS = frozenset({"os.mkdir", "os.listdir", "os.scandir"})
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class _BoundedSink:
    """A write-only text sink that keeps at most ``limit`` characters and notes overflow."""

    def __init__(self, limit):
        self.limit = limit
        self.size = 0
        self.overflowed = False

    def write(self, text):
        self.size += len(text)
        if self.size > self.limit:
            self.overflowed = True
        return len(text)

    def flush(self):
        pass


def _set_limits(limits):
    memory = limits["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize_bytes"], limits["fsize_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Writing past RLIMIT_FSIZE then raises OSError(EFBIG) instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _make_audit_hook(workdir, read_roots, violations):
    def inside(path, roots):
        if isinstance(path, int):
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return any(real == root or real.startswith(root + os.sep) for root in roots)

    def block(event, reason):
        violations.append(f"{event}: {reason}")
        raise PermissionError(f"sandbox: {event} is not allowed")

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            writing = (mode is not None and any(c in mode for c in "wax+")) or (
                mode is None and bool((flags or 0) & _WRITE_FLAGS))
            if writing and not inside(path, (workdir,)):
                block(event, f"write to {path!r} outside the working directory")
            if not writing and not inside(path, (workdir, *read_roots)):
                block(event, f"read of {path!r} outside the working directory")
        elif event in _BLOCKED_EVENTS or event.startswith(_BLOCKED_PREFIXES):
            block(event, "forbidden operation")
        elif event in _PATH_EVENTS:
            path = args[0] if args else "."
            if not inside(path if path is not None else ".", (workdir,)):
                block(event, f"path {path!r} outside the working directory")
        elif event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRIBUTES:
            block(event, f"frame access via {args[1]!r}")

    return hook


def _run(payload, sink):
    """Execute the job; return ``(status, outputs, detail)``."""
    try:
        code = compile(payload["program"], "<sandbox>", "exec")
    except SyntaxError as error:
        return "error", [], f"SyntaxError: {error}"
    try:
        # "" calls f(); "x, y" calls f(x, y). literal_eval builds values, it runs no code.
        arg_lists = [ast.literal_eval(f"({text},)") if text.strip() else ()
                     for text in payload["inputs"]]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as error:
        return "error", [], f"input is not a Python literal: {type(error).__name__}: {error}"

    violations = []
    read_roots = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix})
    sys.addaudithook(_make_audit_hook(os.path.realpath(os.getcwd()), read_roots, violations))
    limit = payload["max_output_chars"]
    outputs = []
    try:
        namespace = {"__name__": "__sandbox__", "__builtins__": builtins}
        exec(code, namespace)  # noqa: S102 - this *is* the sandbox child process
        function = namespace.get("f")
        if not callable(function):
            return "error", [], "the program defines no callable f"
        for args in arg_lists:
            text = repr(function(*args))
            if len(text) > limit:
                outputs.append(text[:limit])
                return "output_too_large", outputs, f"result repr has {len(text)} chars"
            outputs.append(text)
    except MemoryError:
        status, detail = "memory", "MemoryError under the address-space limit"
    except BaseException as error:  # noqa: BLE001 - any escape from the program is an error
        status, detail = "error", f"{type(error).__name__}: {error}"[:2000]
    else:
        status, detail = "ok", ""
    # A violation wins even if the program caught the PermissionError we raised.
    if violations:
        return "banned", outputs, "; ".join(violations)[:2000]
    if sink.overflowed:
        return "output_too_large", outputs, f"printed {sink.size} chars"
    return status, outputs, detail


def main():
    """Read the payload, run it, and report one JSON line on the original stdout."""
    payload = json.loads(sys.stdin.read())
    sys.stdin.close()
    result_channel = sys.stdout
    sink = _BoundedSink(payload["max_output_chars"])
    sys.stdout = sys.stderr = sink
    _set_limits(payload["limits"])
    status, outputs, detail = _run(payload, sink)
    line = json.dumps({"nonce": payload["nonce"], "status": status, "outputs": outputs,
                       "detail": detail})
    result_channel.write(line + "\n")
    result_channel.flush()


if __name__ == "__main__":
    main()

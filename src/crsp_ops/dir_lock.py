"""One writer per output directory: an exclusive ``filelock`` held for the whole job.

The lock file sits beside the directory (``.<name>.lock``), not inside it, so it never enters
a DVC hash. On Linux ``FileLock`` is an ``fcntl`` lock, which the kernel drops when its holder
dies (SIGKILL included): a stale lock from a dead process is recovered by simply taking it.
The holder writes its pid and host into ``.<name>.lock.owner`` so that the refused second
writer can say who holds the directory.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from crsp_ops.errors import InUseError


def lock_paths(out: str | os.PathLike) -> tuple[Path, Path]:
    """``(lock file, owner sidecar)`` guarding output directory ``out``."""
    out = Path(out).absolute()
    return out.with_name(f".{out.name}.lock"), out.with_name(f".{out.name}.lock.owner")


@contextmanager
def hold_output_dir(out: str | os.PathLike) -> Iterator[Path]:
    """Hold ``out`` exclusively for the block; yield ``out``.

    Raises:
        InUseError: a live process holds it (one line naming its pid and host).
    """
    lock_file, owner_file = lock_paths(out)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_file, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise InUseError(
            f"{out} is in use by {_owner(owner_file)}; wait for it to end or stop it, "
            "or choose another output directory"
        ) from None
    try:
        owner_file.write_text(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname()}), encoding="utf-8"
        )
        yield Path(out)
    finally:
        owner_file.unlink(missing_ok=True)
        lock.release()


def _owner(owner_file: Path) -> str:
    try:
        owner = json.loads(owner_file.read_text(encoding="utf-8"))
        return f"pid {owner['pid']} on host {owner['host']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (its pid and host are not recorded yet)"

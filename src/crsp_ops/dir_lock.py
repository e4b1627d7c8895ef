"""One writer per output directory: an exclusive ``filelock`` held for the whole job.

The lock sits beside the directory (never in a DVC hash), dies with its holder, and names the
holder to a refused second writer; under a multi-process launch only rank 0 takes it.

Design: docs/design/platform.md#dir_lock.
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


def is_secondary_rank(environ: dict[str, str] | None = None) -> bool:
    """True in a non-zero rank of a distributed launch (``RANK`` set and not 0).

    >>> is_secondary_rank({"RANK": "1"}), is_secondary_rank({"RANK": "0"}), is_secondary_rank({})
    (True, False, False)
    """
    environ = os.environ if environ is None else environ
    return environ.get("RANK", "0") not in ("", "0")


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
    if is_secondary_rank():
        yield Path(out)
        return
    lock_file, owner_file = lock_paths(out)
    created = _missing_ancestors(lock_file.parent)
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
        if created:
            _remove_if_only_lock(created, lock_file)
        elif not Path(out).exists():  # refused before writing anything: leave nothing behind
            lock_file.unlink(missing_ok=True)


def _missing_ancestors(directory: Path) -> list[Path]:
    """``directory`` and its parents that do not exist yet, innermost first."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    return missing


def _remove_if_only_lock(created: list[Path], lock_file: Path) -> None:
    """Undo the directories the lock created when they hold nothing but the lock file."""
    if any(entry != lock_file for entry in created[0].iterdir()):
        return
    lock_file.unlink(missing_ok=True)
    for directory in created:
        try:
            directory.rmdir()
        except OSError:  # something else was written there meanwhile
            return


def _owner(owner_file: Path) -> str:
    try:
        owner = json.loads(owner_file.read_text(encoding="utf-8"))
        return f"pid {owner['pid']} on host {owner['host']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (its pid and host are not recorded yet)"

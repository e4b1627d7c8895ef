"""Atomic file writes and tolerant JSONL reading: results are never left half-written.

Every writer (JSON, JSONL, model files, plots) goes through ``atomic_path``: the bytes land in
``.<name>.<random><suffix>.tmp`` beside the target and are renamed over it, with SIGINT and
SIGTERM deferred meanwhile (``interrupts.critical_section``). One temp-name pattern means one
cleanup glob (``TEMP_GLOB``) finds what a SIGKILL left behind. Deferring matters for plots:
a ``KeyboardInterrupt`` raised inside matplotlib's C++ Agg writer (a Python callback under
pybind11) aborts the interpreter with ``terminate called without an active exception``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from crsp_ops.interrupts import critical_section


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` only on success.

    The temporary file lives in the same directory, so the final ``os.replace`` is atomic on
    POSIX. On any exception the temporary file is removed and ``path`` is left untouched.
    SIGINT/SIGTERM are deferred until the block and the rename are done (then raised), so a
    signal never tears a write. The temporary name always ends in ``.tmp`` (``suffix`` goes
    before it): writers that infer a format from the name must pass it explicitly.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with critical_section():
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=f"{suffix}.tmp", dir=target.parent
        )
        os.close(fd)
        tmp = Path(tmp_name)
        # mkstemp creates 0600; give the file the mode it had (or the usual umask-based one).
        os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else _default_mode())
        try:
            yield tmp
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()


TEMP_GLOB = ".*.tmp"  # every temporary name ``atomic_path`` makes matches this
# ...and what older versions left: plots were written to ``.<name>.png.<random>.png``.
TEMP_GLOBS = (TEMP_GLOB, ".*.png.*.png")


def remove_stale_temp_files(directory: str | os.PathLike) -> list[Path]:
    """Delete the temporary files a killed writer left under ``directory``; return them.

    Call it only while no other process writes there (e.g. when a job takes over its output
    directory): a live writer's temporary file would be removed too.
    """
    removed = []
    found = {path for pattern in TEMP_GLOBS for path in Path(directory).rglob(pattern)}
    for path in sorted(found):
        if path.is_file():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8) and return the path."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    return Path(path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return the path."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    return Path(path)


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> Path:
    """Serialise ``obj`` as JSON and write it atomically; NaN/inf are rejected."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, allow_nan=False) + "\n")


def atomic_write_jsonl(path: str | os.PathLike, rows: Iterable[dict]) -> Path:
    """Write one JSON object per line, atomically."""
    text = "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
    return atomic_write_text(path, text)


def read_jsonl(
    path: str | os.PathLike, on_bad_line: Callable[[int, str], None] | None = None
) -> Iterator[dict]:
    """Yield JSON objects from a JSONL file; bad lines go to ``on_bad_line``.

    A line is bad when it is not valid UTF-8, not JSON, or not a JSON object; each line is
    decoded on its own, so one badly encoded line costs that line only.

    Args:
        path: the file to read.
        on_bad_line: called with ``(line_number, reason)`` for each bad line; when ``None``
            such a line raises ``ValueError`` naming the file and line.
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            row, reason = _jsonl_object(raw)
            if row is not None:
                yield row
                continue
            if reason is None:  # a blank line
                continue
            if on_bad_line is None:
                raise ValueError(f"{path}:{number}: {reason}")
            on_bad_line(number, reason)


def _jsonl_object(raw: bytes) -> tuple[dict | None, str | None]:
    """``(row, None)``, ``(None, reason)`` for a bad line, or ``(None, None)`` for a blank one."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"invalid UTF-8 (byte {error.start})"
    if not line.strip():
        return None, None
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        return None, f"not JSON ({error.msg})"
    except RecursionError:
        return None, "not JSON (nested too deeply)"
    if isinstance(row, dict):
        return row, None
    return None, f"not a JSON object ({type(row).__name__})"

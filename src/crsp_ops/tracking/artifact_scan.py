"""Scan artifact files for secrets before they are logged; log a redacted copy when needed.

A file (or every file of a directory) that holds a secret is copied into a temporary
directory with the secret replaced, and the copy is what gets logged (same names); clean
files are logged as they are. Files larger than ``MAX_SCAN_BYTES`` (model weights) are not
read and go as they are.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from crsp_ops.tracking.redaction import Redactor

MAX_SCAN_BYTES = 64 * 1024 * 1024


def redact_bytes(data: bytes, redactor: Redactor) -> bytes:
    """``data`` with secrets replaced: as UTF-8 text when it decodes, else by value only."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return redactor.data(data)
    redacted = redactor.text(text)
    return data if redacted == text else redacted.encode("utf-8")


def _redacted_or_none(path: Path, redactor: Redactor) -> bytes | None:
    """The redacted content of ``path``, or ``None`` when it holds no secret (or is too big)."""
    if path.stat().st_size > MAX_SCAN_BYTES:
        return None
    data = path.read_bytes()
    redacted = redact_bytes(data, redactor)
    return None if redacted == data else redacted


@contextmanager
def redacted_artifact(path: Path, redactor: Redactor) -> Iterator[Path]:
    """Yield ``path`` itself when it holds no secret, else a redacted copy with the same name."""
    if path.is_dir():
        files = [f for f in sorted(path.rglob("*")) if f.is_file()]
        changed = {f: content for f in files
                   if (content := _redacted_or_none(f, redactor)) is not None}
    elif path.is_file():
        content = _redacted_or_none(path, redactor)
        changed = {} if content is None else {path: content}
    else:
        changed = {}
    if not changed:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="crsp-redacted-") as tmp:
        copy = Path(tmp) / path.name
        if path.is_dir():
            shutil.copytree(path, copy)
            for original, content in changed.items():
                (copy / original.relative_to(path)).write_bytes(content)
        else:
            copy.write_bytes(changed[path])
        yield copy

"""Ctrl+C and SIGTERM as exceptions, deferred while a critical section (a tracking write) runs.

An interrupt inside a store write could leave the store locked; ``critical_section()`` defers
it to the section's end (after ``install_handlers()``).

Design: docs/design/platform.md#interrupts.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM; runs end KILLED and partial results are saved."""


def raise_terminated(signum, frame) -> None:
    """A ``signal.signal`` handler turning SIGTERM into ``Terminated``."""
    raise Terminated(f"received signal {signum}")


_depth = 0  # nesting of critical sections on the main thread
_pending: list[int] = []  # signals that arrived inside one, in order


def interruption(signum: int) -> BaseException:
    """The exception a signal becomes: ``KeyboardInterrupt`` (SIGINT) or ``Terminated``."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(f"received signal {signum}")


def _handle(signum, frame) -> None:
    if _depth > 0:
        _pending.append(signum)
        return
    raise interruption(signum)


def install_handlers() -> Callable[[], None]:
    """Route SIGINT and SIGTERM through the deferring handler; return a function restoring them."""
    previous = {signum: signal.signal(signum, _handle) for signum in HANDLED}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return restore


def pending_signals() -> list[int]:
    """Signals noted inside the current critical section (not yet raised)."""
    return list(_pending)


@contextmanager
def critical_section() -> Iterator[None]:
    """Run the block with SIGINT/SIGTERM deferred; raise the first one noted when it ends.

    Nested sections defer to the outermost. On a thread other than the main one this is a
    no-op (signals are handled in the main thread only).
    """
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending:
            signum = _pending[0]
            _pending.clear()
            raise interruption(signum)


def ignore_late_signals() -> None:
    """Ignore SIGINT/SIGTERM from now on: for the interpreter's teardown after a job ended.

    The run is already ended and the files written, so a late signal must not turn a decided
    exit code into a traceback and -2/-15. The disposition is SIG_IGN rather than a Python
    handler because CPython resets Python-level handlers to the default action late in its
    finalization, and a signal then would still kill the process; SIG_IGN stays. SIGKILL still
    stops a teardown that hangs.
    """
    for signum in HANDLED:
        signal.signal(signum, signal.SIG_IGN)

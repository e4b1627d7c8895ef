"""Ctrl+C and SIGTERM as exceptions, deferred while a critical section (a tracking write) runs.

A ``KeyboardInterrupt`` raised inside a store write (MLflow's sqlite session, say) can leave
that store locked, so the run could not even be marked KILLED afterwards. Writes that must not
be torn run inside ``critical_section()``: a SIGINT or SIGTERM that arrives meanwhile is only
noted, and raised (``KeyboardInterrupt`` / ``Terminated``) when the outermost section ends.
This needs ``install_handlers()`` (the CLI calls it); Python runs signal handlers in the main
thread only, so sections on other threads never need to defer anything.

After a job's run has ended (FINISHED or KILLED) ``exit_on_signal(rc)`` makes a late signal
during interpreter teardown exit with ``rc`` instead of a traceback and -2/-15.
"""

from __future__ import annotations

import os
import signal
import sys
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


def exit_on_signal(code: int) -> None:
    """From now on, SIGINT/SIGTERM end the process at once with ``code`` (teardown is skipped).

    For the interpreter's teardown after a job's run has been ended and its files written.
    """
    def handler(signum, frame) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)

    for signum in HANDLED:
        signal.signal(signum, handler)

"""SIGTERM as an exception, so a terminated job cleans up exactly like one stopped by Ctrl+C."""

from __future__ import annotations


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM; runs end KILLED and partial results are saved."""


def raise_terminated(signum, frame) -> None:
    """A ``signal.signal`` handler turning SIGTERM into ``Terminated``."""
    raise Terminated(f"received signal {signum}")

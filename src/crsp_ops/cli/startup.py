"""The start-up guard: Ctrl+C or SIGTERM while the command's modules load exits 130 in one line.

A command line (``crsp-ops``, ``python -m crsp_ops.cli``, the repository's ``python -m
pipelines.<stage>``) calls ``guard_startup()`` before it imports its driver; a SIGINT or SIGTERM
in that second or more, before ``entry.execute`` installs the real handlers, prints one line and
exits 130 instead of a ``KeyboardInterrupt`` traceback. Nothing has been opened or written yet.
"""

from __future__ import annotations

import os
import signal
import threading

STARTUP_INTERRUPT_LINE = b"crsp-ops: interrupted while starting; nothing was written\n"


def _exit_interrupted(signum, frame) -> None:
    os.write(2, STARTUP_INTERRUPT_LINE)
    os._exit(130)


def guard_startup() -> None:
    """Until ``entry.execute`` replaces them: SIGINT/SIGTERM print one line and exit 130."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _exit_interrupted)

"""Thin drivers, one per DVC stage / MLproject entry point: I/O around one library call.

Each driver module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) ->
int``; heavy imports stay inside ``run`` so ``crsp-ops --help`` is instant.

Importing this package from a command line (``crsp-ops ...`` or ``python -m pipelines...``)
guards start-up: a SIGINT or SIGTERM while the modules load (the first second or more, before
``entry.execute`` installs the real handlers) prints one line and exits 130 instead of a
``KeyboardInterrupt`` traceback. Nothing has been opened or written yet, so nothing is lost.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

STARTUP_INTERRUPT_LINE = b"crsp-ops: interrupted while starting; nothing was written\n"


def _exit_interrupted(signum, frame) -> None:
    os.write(2, STARTUP_INTERRUPT_LINE)
    os._exit(130)


def _is_command_line() -> bool:
    """True when this import starts a ``crsp-ops`` or ``python -m pipelines`` process."""
    return sys.argv[:1] == ["-m"] or os.path.basename(sys.argv[0] if sys.argv else "") == "crsp-ops"


if _is_command_line() and threading.current_thread() is threading.main_thread():
    for _signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signum, _exit_interrupted)

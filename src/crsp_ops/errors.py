"""Errors every layer may raise, mapped by the CLI to one clear line and an exit code."""

from __future__ import annotations


class DataError(ValueError):
    """An input file is missing, unreadable or holds no usable row.

    The message names the file and the fix, in one line (the CLI prints it with exit code 2).
    """


class MissingInputError(DataError, FileNotFoundError):
    """An input file or stage output does not exist (the message says what produces it)."""


class InUseError(RuntimeError):
    """Another live process holds what this run needs: its output directory or server port.

    The message names the holder (pid, host or program) in one line; the CLI exits 2.
    """


class RunFailure(RuntimeError):
    """A run could not go on (e.g. its server died and the restart budget is spent).

    The CLI prints the message's first line and exits 1; put details after a newline.
    """


class TargetExistsError(FileExistsError):
    """A command would write over files it was not asked to replace.

    The message names the target and the flag that allows it, in one line (exit code 2).
    """

"""Errors every layer may raise, mapped by the CLI to one clear line and an exit code."""

from __future__ import annotations


class DataError(ValueError):
    """An input file is missing, unreadable or holds no usable row.

    The message names the file and the fix, in one line (the CLI prints it with exit code 2).
    """


class MissingInputError(DataError, FileNotFoundError):
    """An input file or stage output does not exist (the message says what produces it)."""

"""Typed field access for raw dataset rows: a wrong or missing field raises ``RowError``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from crsp_ops.data.load_result import RowError


def required_str(row: Mapping[str, Any], key: str) -> str:
    """Return ``row[key]`` when it is a non-empty string, else raise ``RowError``."""
    if key not in row or row[key] is None:
        raise RowError(f"missing field '{key}'")
    value = row[key]
    if not isinstance(value, str):
        raise RowError(f"field '{key}' is {type(value).__name__}, expected str")
    if not value.strip():
        raise RowError(f"field '{key}' is empty")
    return value


def required_text_or_number(row: Mapping[str, Any], key: str) -> str:
    """Return ``row[key]`` as text: a non-empty string, or a finite number written as text.

    Results files and CSV exports store a numeric gold as a bare number (``0.308``, ``1577.0``);
    it is kept as the shortest text that reads back as the same number ("0.308", "1577").
    """
    value = row.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise RowError(f"field '{key}' is {value}, expected a finite number")
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if value is not None and not isinstance(value, str):
        raise RowError(f"field '{key}' is {type(value).__name__}, expected str or a number")
    return required_str(row, key)


def optional_str(row: Mapping[str, Any], key: str) -> str:
    """Return ``row[key]`` as a string; absent or null gives ``""``, another type raises."""
    value = row.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RowError(f"field '{key}' is {type(value).__name__}, expected str or null")
    return value


def optional_int(row: Mapping[str, Any], key: str) -> int | None:
    """Return ``row[key]`` as an int; absent or null gives ``None``, another type raises."""
    value = row.get(key)
    if value is None:
        return None
    # bool is an int subclass; a page number of True is a data error, not page 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise RowError(f"field '{key}' is {type(value).__name__}, expected int or null")
    return value

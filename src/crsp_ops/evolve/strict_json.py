"""JSON from an untrusted peer: bounded size and depth, no duplicate keys, no huge or odd numbers.

``json.loads`` alone accepts what later code cannot handle: integers of thousands of digits
(``math.isfinite`` overflows), nesting deep enough to exhaust the recursion limit, duplicate
keys (the last silently wins), ``NaN``/``1e999`` and strings holding lone surrogates (which
cannot be written as UTF-8). ``loads`` rejects all of them with ``InvalidJSON`` (a
``ValueError``), and raises nothing else.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32  # objects/arrays nested deeper than this are rejected before parsing
MAX_INT_DIGITS = 30  # integers longer than this are rejected (a delta is a small number)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class InvalidJSON(ValueError):
    """The text is not acceptable JSON; the message says why."""


def _reject_constant(name: str) -> float:
    raise InvalidJSON(f"non-finite number {name}")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise InvalidJSON(f"integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidJSON(f"number {text[:40]} is out of range")
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidJSON(f"duplicate key {key[:40]!r}")
        out[key] = value
    return out


def nesting_depth(text: str) -> int:
    """Deepest object/array nesting of JSON text (strings skipped), without parsing it.

    >>> nesting_depth('{"a": [1, {"b": "[[["}]}')
    3
    """
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def check_text(value: Any, where: str = "value") -> None:
    """Raise ``InvalidJSON`` when a string (or a key) in ``value`` cannot be encoded as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InvalidJSON(f"{where} holds an invalid character (lone surrogate at "
                              f"{error.start})") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, f"{where} key")
            check_text(item, f"{where}[{key[:20]!r}]" if isinstance(key, str) else where)
    elif isinstance(value, list):
        for item in value:
            check_text(item, where)


def loads(data: str | bytes, *, max_chars: int, max_depth: int = MAX_DEPTH) -> Any:
    """Parse untrusted JSON text or UTF-8 bytes strictly.

    Args:
        data: the text, or bytes that must be valid UTF-8.
        max_chars: longest accepted input (bytes or characters).
        max_depth: deepest accepted nesting of objects and arrays.

    Raises:
        InvalidJSON: too long, not UTF-8, too deep, not JSON, a duplicate key, an integer of
            more than ``MAX_INT_DIGITS`` digits, a non-finite number, or a lone surrogate.

    >>> loads('{"a": 1, "a": 2}', max_chars=100)
    Traceback (most recent call last):
    ...
    crsp_ops.evolve.strict_json.InvalidJSON: duplicate key 'a'
    """
    if len(data) > max_chars:
        raise InvalidJSON(f"{len(data)} {'bytes' if isinstance(data, bytes) else 'characters'}"
                          f" (at most {max_chars})")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidJSON(f"not valid UTF-8 (byte {error.start})") from None
    if nesting_depth(data) > max_depth:
        raise InvalidJSON(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(data, object_pairs_hook=_unique_object, parse_int=_bounded_int,
                           parse_float=_finite_float, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise InvalidJSON(f"not JSON ({error.msg} at char {error.pos})") from None
    except RecursionError:  # the depth check makes this unreachable; kept as a guarantee
        raise InvalidJSON("nested too deeply") from None
    check_text(value)
    return value

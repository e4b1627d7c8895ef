"""``<think>`` blocks in model output: the reasoning a reply holds, and the reply without it."""

from __future__ import annotations

import re

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)


def extract_think(text: str) -> str | None:
    """Return the stripped content of the first ``<think>...</think>`` block, or ``None``.

    >>> extract_think("<think> try 2+2 </think>4")
    'try 2+2'
    >>> extract_think("no tags") is None
    True
    """
    match = _THINK.search(text)
    return match.group(1).strip() if match else None


def strip_think(text: str) -> str:
    """Return ``text`` without its ``<think>`` blocks (an unclosed one runs to the end).

    >>> strip_think("<think>grade: 0.1</think>grade: 0.9")
    'grade: 0.9'
    """
    without_closed = _THINK.sub("", text)
    return re.sub(r"<think>.*", "", without_closed, flags=re.DOTALL | re.IGNORECASE).strip()

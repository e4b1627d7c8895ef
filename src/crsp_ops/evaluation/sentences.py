"""Sentence bounds in answers: decimals ("1.42"), "i.e." and markdown do not end a sentence."""

from __future__ import annotations

import re

# "i.e.", "e.g." and "vs." do not end a sentence.
SENTENCE_END = re.compile(r"(?<!\bi\.e)(?<!\be\.g)(?<!\bvs)[.!?](?=\s|$)|\n", re.IGNORECASE)


def skip_markup(text: str, start: int) -> int:
    """Skip whitespace and markdown ("**Final Answer**" on its own line)."""
    return len(text) - len(text[start:].lstrip(" \t\n*#_:：>-"))


def sentence_end(text: str, start: int) -> int:
    """End of the sentence that starts at (or after markup from) ``start``.

    >>> text = "Margin is 1.42%. Next."
    >>> text[:sentence_end(text, 0)]
    'Margin is 1.42%'
    """
    begin = skip_markup(text, start)
    end = SENTENCE_END.search(text, begin)
    return end.start() if end else len(text)


def sentence_bounds(text: str, position: int) -> tuple[int, int]:
    """``(start, end)`` of the sentence holding ``position``."""
    starts = [m.end() for m in SENTENCE_END.finditer(text, 0, position)]
    return (starts[-1] if starts else 0), sentence_end(text, position)

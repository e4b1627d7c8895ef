"""Which fiscal year a figure belongs to, when an answer states figures for several years.

A figure's year is the one named right after it, else the last one before it in the clause;
tags only choose between figures, never reject one.

Design: docs/design/grading.md#year_tags.
"""

from __future__ import annotations

import re

from crsp_ops.evaluation.numbers import ParsedNumber

_YEAR = re.compile(r"(?:\bFY\s?'?|\bfiscal\s+(?:year\s+)?|\b)((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR_AFTER = re.compile(
    r"\s*(?:\(|in|for|during|as\s+of|at\s+the\s+end\s+of|at)\s*(?:the\s+)?(?:end\s+of\s+)?"
    r"(?:fiscal\s+(?:year\s+)?|FY\s?'?)?((?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(r"[\n;]|\.\s")
_LOOKBACK = 80  # characters searched before a figure for its year


def years_in(text: str) -> tuple[int, ...]:
    """Distinct years named in ``text`` (bare, "FY2018", "fiscal 2018"), in order.

    >>> years_in("What was FY2018 capex vs fiscal year 2017 and FY'19?")
    (2018, 2017)
    """
    found: list[int] = []
    for match in _YEAR.finditer(text):
        year = int(match.group(1))
        if year not in found:
            found.append(year)
    return tuple(found)


def year_tag(number: ParsedNumber, text: str) -> int | None:
    """The year ``number`` is stated for in ``text`` (``None`` when none is named nearby).

    >>> from crsp_ops.evaluation.numbers import find_numbers
    >>> text = "PP&E purchases were $1,373 million in 2017 and $1,577 million in 2018."
    >>> [year_tag(n, text) for n in find_numbers(text) if not n.is_year_like]
    [2017, 2018]
    """
    after = _YEAR_AFTER.match(text, number.end)
    if after:
        return int(after.group(1))
    before = text[max(0, number.start - _LOOKBACK):number.start]
    breaks = list(_CLAUSE_BREAK.finditer(before))
    clause = before[breaks[-1].end():] if breaks else before
    years = [int(m.group(1)) for m in _YEAR.finditer(clause)]
    return years[-1] if years else None

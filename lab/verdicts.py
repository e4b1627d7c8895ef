"""Verdict words from a claim's result line: one rule, stated once.

A difference A − B is read from its 95% interval ``(point, low, high)`` over runs (or over what
the line's interval is over), never from its point alone:

- **ahead of**: the whole interval lies above 0 (``low > 0``);
- **behind**: the whole interval lies below 0 (``high < 0``);
- **level with**: a margin was declared and the interval lies inside ``(−margin, +margin)``;
- **non-inferior to**: a margin was declared and the interval lies above ``−margin``;
- **not separated from**: otherwise (the interval holds 0 and no declared margin settles it).

A count of runs reads **learned on N of M runs** (N runs whose own gain interval lies above 0).
"Caught up", "beat", "lead" and "trail" are not verdicts: a change across budgets is said as
the verdict at each budget. ``verdict_regions.py`` renders these words into the pages'
``<!-- verdict: ... -->`` regions and fails when a region's text is not its line's.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

# Every verdict phrase the rule can produce; a page region holds exactly one of them.
PHRASES = ("ahead of", "behind", "level with", "non-inferior to", "not separated from")


def verdict(low: float, high: float, margin: float | None = None) -> str:
    """The verdict phrase for a difference A − B whose 95% interval is ``[low, high]``.

    Args:
        low: the interval's lower end.
        high: the interval's upper end.
        margin: the declared margin (``None``: none declared).

    Returns:
        One of ``PHRASES``.

    >>> verdict(0.001, 0.052), verdict(-0.0256, -0.0043), verdict(-0.046, 0.060)
    ('ahead of', 'behind', 'not separated from')
    >>> verdict(-0.01, 0.015, margin=0.02), verdict(-0.01, 0.3, margin=0.02)
    ('level with', 'non-inferior to')
    """
    if low > high:
        raise ValueError(f"an interval's low end {low} is above its high end {high}")
    if low > 0:
        return "ahead of"
    if high < 0:
        return "behind"
    if margin is not None and -margin < low and high < margin:
        return "level with"
    if margin is not None and low > -margin:
        return "non-inferior to"
    return "not separated from"


def interval(value) -> tuple[float, float, float]:
    """``(point, low, high)`` of a result-line value: ``[point, low, high]`` or a dict with
    ``mean``/``diff`` and ``ci95``.

    Raises:
        ValueError: not an interval, or its ends out of order.

    >>> interval({"diff": 0.0267, "ci95": [0.0012, 0.0521]}), interval([-0.015, -0.0256, -0.0043])
    ((0.0267, 0.0012, 0.0521), (-0.015, -0.0256, -0.0043))
    """
    if isinstance(value, dict) and "ci95" in value:
        point = value.get("mean", value.get("diff"))
        triple = (point, *value["ci95"])
    elif isinstance(value, list) and len(value) == 3:
        triple = tuple(value)
    else:
        raise ValueError(f"{str(value)[:80]} is not an interval (point, low, high)")
    if not all(isinstance(x, (int, float)) for x in triple) or not (
            triple[1] <= triple[0] <= triple[2]):
        raise ValueError(f"{triple} is not an ordered interval (low <= point <= high)")
    return triple


def resolve(lines: list[dict], path: str):
    """The value at ``path`` of a claim's result lines: ``<line index>.<key>.<key>...``.

    >>> resolve([{"a": {"b": [1, 2]}}], "0.a.b")
    [1, 2]
    """
    index, *keys = path.split(".")
    value = lines[int(index)]
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"no {key!r} on the way to {path!r}")
        value = value[key]
    return value


def fmt(x: float, digits: int, sign: bool = True) -> str:
    """``x`` at ``digits`` places, ``+``/``−`` written (``sign``), as the pages write it.

    >>> fmt(-0.0150, 4), fmt(0.0267, 3), fmt(0.99166, 3, sign=False)
    ('−0.0150', '+0.027', '0.992')
    """
    text = str(Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    text = text.lstrip("-")
    if not sign:
        return ("−" if x < 0 else "") + text
    return ("−" if x < 0 and Decimal(text) != 0 else "+") + text


def phrase(value, a: str, b: str, digits: int = 3, margin: float | None = None,
           over: str = "", unit: str = "runs") -> str:
    """The sentence part a page's verdict region holds for ``value``.

    An interval reads ``A <verdict> B (point [low, high] over)``; a ``[learned, runs]`` count
    reads ``A learned on N of M runs``.

    >>> phrase({"diff": 0.0267, "ci95": [0.0012, 0.0521]}, "CRSP", "GRPO", over=" over runs")
    'CRSP ahead of GRPO (+0.027 [+0.001, +0.052] over runs)'
    >>> phrase([3, 4], "CRSP", ""), phrase("3 of 3", "the demo", "", unit="seeds")
    ('CRSP learned on 3 of 4 runs', 'the demo learned on 3 of 3 seeds')
    """
    if isinstance(value, str) and re.fullmatch(r"\d+ of \d+", value):
        value = [int(x) for x in value.split(" of ")]
    if isinstance(value, list) and len(value) == 2 and all(isinstance(x, int) for x in value):
        learned, runs = value
        if not 0 <= learned <= runs:
            raise ValueError(f"learned {learned} of {runs} runs is not a count")
        return f"{a} learned on {learned} of {runs} {unit}"
    point, low, high = interval(value)
    word = verdict(low, high, margin)
    kept = f" (margin {margin:g})" if margin is not None and word in PHRASES[2:4] else ""
    return (f"{a} {word} {b}{kept} ({fmt(point, digits)} [{fmt(low, digits)}, "
            f"{fmt(high, digits)}]{over})")

"""What a question implies about its answer's units, scale, precision and sign.

FinanceBench questions carry the gold's conventions in words: "(in USD millions)" means a
gold ``1577`` is $1,577 million; "as a percentage" means a bare gold is a percent written
either way (``24.0`` or the fraction ``0.24``, as datasets store it); "round to two
decimal places" sets the precision; "by how much did ... decrease" lets a negative answer
match a positive gold. ``question_intent`` reads them; it never sees the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crsp_ops.evaluation.numbers import SCALE_WORDS, find_numbers
from crsp_ops.evaluation.year_tags import years_in

_SCALE = re.compile(
    r"\b(?:in|usd|us\$|\$|dollars?|eur|gbp|of)\s*(?:usd\s+|us\$\s*|\$\s*|dollars?\s+)?"
    r"(thousands|millions|billions|trillions)\b",
    re.IGNORECASE,
)
_PERCENT = re.compile(
    r"\b(?:percent(?:age)?s?|margin|growth\s+rate|rate\s+of|yield|return\s+on|cagr|"
    r"as\s+a\s+%|in\s+%|effective\s+tax\s+rate|tax\s+rate|payout\s+ratio|\w+\s+rate)\b|%",
    re.IGNORECASE,
)
_BPS = re.compile(r"\b(?:basis\s+points?|bps)\b", re.IGNORECASE)
_DECIMALS = re.compile(
    r"\b(?:to|at)\s+(?:the\s+)?(one|two|three|four|1|2|3|4)\s+decimal(?:\s+places?|\s+points?)?",
    re.IGNORECASE,
)
_NEAREST = re.compile(
    r"\bnearest\s+(whole\s+(?:number|percent(?:age)?(?:\s+point)?|dollar)|integer|percent(?:age)?"
    r"(?:\s+point)?|dollar|cent|tenth|hundredth|thousandth)\b",
    re.IGNORECASE,
)
_DECREASE = re.compile(r"\b(?:decreas|declin|drop|fall|fell|reduc|shrink|shrank|lose|lost)",
                       re.IGNORECASE)
_CHANGE = re.compile(
    r"\b(?:chang|grow|grew|growth|increas|decreas|declin|differ|by\s+how\s+much|expan|contract|"
    r"improv|deteriorat|cagr|ris[ei]|rose|fell|fall|drop|jump|year[- ]over[- ]year|yoy)",
    re.IGNORECASE)
_COUNT = re.compile(r"\bhow\s+many\b|\bnumber\s+of\s+(?!shares\b)", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:which|what|in\s+which|in\s+what)\s+(?:fiscal\s+)?year\b", re.IGNORECASE)
_WORD_DIGITS = {"one": 1, "two": 2, "three": 3, "four": 4}
_NEAREST_DECIMALS = {"tenth": 1, "hundredth": 2, "thousandth": 3, "cent": 2}


@dataclass(frozen=True)
class QuestionIntent:
    """The answer conventions a question states or implies."""

    scale: float | None = None  # "(in USD millions)" → 1e6: the gold's unstated scale
    percent: bool = False  # asks for a percentage, rate, margin or similar
    bps: bool = False  # asks in basis points
    decimals: int | None = None  # requested rounding (decimal places), if stated
    asks_decrease: bool = False  # the question itself speaks of a decrease/decline
    asks_change: bool = False  # asks for a change/growth: "from X to Y" figures are inputs
    asks_count: bool = False  # "how many ...": small integers are the answer, not counts
    asks_year: bool = False  # "in which year ...": years are the answer
    quoted: tuple[float, ...] = ()  # numbers quoted in the question (inputs, not answers)
    years: tuple[int, ...] = ()  # fiscal years the question names ("FY2018" → 2018)


def question_intent(question: str | None) -> QuestionIntent:
    """Read a question's implied units, scale, precision and direction.

    >>> intent = question_intent("FY2019 capex (in USD millions)? Round to two decimal places.")
    >>> intent.scale, intent.decimals, intent.percent
    (1000000.0, 2, False)
    >>> question_intent("By how much did the gross margin decrease, in percent?").asks_decrease
    True
    """
    if not question:
        return QuestionIntent()
    scale = _SCALE.search(question)
    return QuestionIntent(
        scale=SCALE_WORDS[scale.group(1).lower()] if scale else None,
        percent=bool(_PERCENT.search(question)),
        bps=bool(_BPS.search(question)),
        decimals=requested_decimals(question),
        asks_decrease=bool(_DECREASE.search(question)),
        asks_change=bool(_CHANGE.search(question)),
        asks_count=bool(_COUNT.search(question)),
        asks_year=bool(_YEAR.search(question)),
        quoted=tuple(n.value for n in find_numbers(question) if not n.is_year_like),
        years=years_in(question),
    )


def requested_decimals(question: str) -> int | None:
    """Decimal places a question asks for ("two decimal places" → 2, "nearest tenth" → 1).

    >>> requested_decimals("Round to one decimal place."), requested_decimals("nearest integer")
    (1, 0)
    """
    match = _DECIMALS.search(question)
    if match:
        word = match.group(1).lower()
        return _WORD_DIGITS.get(word) or int(word)
    nearest = _NEAREST.search(question)
    if nearest:
        return _NEAREST_DECIMALS.get(nearest.group(1).lower(), 0)
    return None

"""Parse the numbers of financial text: signs, currencies, scales, percents, bps, multiples.

``find_numbers`` reads numbers the way financial answers write them: currency signs and
codes, thousands separators, parentheses as negatives, percentages and percentage points,
basis points, "2.5x" multiples, and scale words ("1.2 billion", "$3.5M", or a unit phrase
such as "in USD millions" that scales the text's unscaled amounts). Each number keeps its
position and written precision (decimals, significant digits) so rounding rules can use them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

SCALE_WORDS = {
    "thousand": 1e3, "thousands": 1e3, "k": 1e3,
    "million": 1e6, "millions": 1e6, "mm": 1e6, "mn": 1e6, "m": 1e6,
    "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9,
    "trillion": 1e12, "trillions": 1e12, "tn": 1e12, "t": 1e12,
}

_NUMBER = re.compile(
    r"(?P<open>\(\s*)?"
    r"(?P<sign>[-−–])?"  # a dash followed by a space is punctuation, not a sign
    r"(?P<currency>US\$|USD|EUR|GBP|[$€£¥₹])?\s?"
    r"(?P<sign2>[-−–])?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:(?P<percent>\s?(?:%|percent\b|per\s+cent\b|percentage\s+points?\b|pp\b|ppts?\b))"
    r"|(?P<bps>\s?(?:bps\b|bp\b|basis\s+points?\b))"
    r"|(?P<times>\s?(?:x\b|×|times\b))"
    r"|(?P<glued>[kKmMbBtT](?:[nNmM])?)\b"
    r"|\s(?P<scale>thousands?|millions?|billions?|trillions?|mm|mn|bn|tn)\b)?"
    r"(?P<close>\s*\))?"
    r"(?P<percent_after>(?<=\))%)?",  # "(3.2)%"
)
_UNIT_PHRASE = re.compile(
    r"\bin\s+(?:(?:usd|us\$|\$|eur|gbp|dollars?|euros?)\s+)?(thousands|millions|billions)\b"
    r"|\b(?:usd|us\$|\$|eur|gbp)\s+(?:in\s+)?(thousands|millions|billions)\b",
    re.IGNORECASE,
)
_FIGURE_BEFORE = re.compile(r"(?:\d\.\d+|\d,\d{3}|%)\s*$")  # not a year: "in 2019 (1,234)"
_NEAR = 30  # characters between a number and a unit phrase that still make it the number's own
_YEAR = re.compile(r"^(?:19|20)\d\d$")


@dataclass(frozen=True)
class ParsedNumber:
    """One number found in text, normalised."""

    value: float  # signed value, scale applied (percent/bps values stay in their units)
    raw: float  # signed value as written, before any scale
    is_percent: bool  # written with %, "percent", "per cent" or "percentage points"
    has_scale: bool  # a scale word or unit phrase applied
    is_year_like: bool  # a bare integer 1900-2099 (likely a fiscal year, not an answer)
    text: str  # the matched span
    kind: str = "plain"  # "plain" | "percent" | "bps" | "multiple"
    scale: float = 1.0  # the factor applied (1.0 when none)
    decimals: int = 0  # digits written after the decimal point
    sig_digits: int = 1  # significant digits as written (integer trailing zeros not counted)
    start: int = 0  # span in the parsed text
    end: int = 0
    currency: bool = False  # written with a currency sign or code
    scale_implied: bool = False  # the scale came from a unit phrase of the text, not the number


def find_numbers(text: str) -> list[ParsedNumber]:
    """Return every number in ``text`` in order of appearance.

    >>> [n.value for n in find_numbers("(1,234) vs $1.5bn, up 12.5%, 40 bps, 2.5x")]
    [-1234.0, 1500000000.0, 12.5, 40.0, 2.5]
    >>> [n.value for n in find_numbers("a ratio of 0.642 (64.2%); in 2019 (1,234)")]
    [0.642, 64.2, 2019.0, -1234.0]
    """
    unit = _UNIT_PHRASE.search(text)
    default_scale = SCALE_WORDS[(unit.group(1) or unit.group(2)).lower()] if unit else None
    numbers = []
    for match in _NUMBER.finditer(text):
        if _glued_to_word(text, match):
            continue
        # A unit phrase right beside the number is its own unit; farther away (a quoted
        # table's "in thousands") it is only implied, and the number may be meant unscaled.
        near = unit is not None and (unit.start() - match.end() <= _NEAR
                                     and match.start() - unit.end() <= _NEAR)
        numbers.append(_parsed(text, match, default_scale, implied_only=not near))
    return numbers


def _parsed(text: str, match: re.Match, default_scale: float | None, *,
            implied_only: bool) -> ParsedNumber:
    digits = match["digits"].replace(",", "")
    raw = float(digits)
    # A dash right after a word or digit is a range or hyphen ("2019-2020"), not a sign.
    sign_at = match.start("sign") if match["sign"] else match.start("sign2")
    after_word = sign_at > 0 and text[sign_at - 1].isalnum()
    signed = bool(match["sign"] or match["sign2"]) and not after_word
    # "(1,234)" is negative; "0.642 (64.2%)" restates the figure before it.
    restated = bool(_FIGURE_BEFORE.search(text[max(0, match.start() - 20):match.start()]))
    negative = signed or bool(match["open"] and match["close"] and not restated)
    raw = -raw if negative else raw
    kind = ("percent" if match["percent"] or match["percent_after"] else "bps" if match["bps"]
            else "multiple" if match["times"] else "plain")
    scale = _scale_of(match)
    implied = False
    if scale is None and kind == "plain" and default_scale is not None:
        scale, implied = default_scale, implied_only
    return ParsedNumber(
        value=raw * (scale or 1.0),
        raw=raw,
        is_percent=kind == "percent",
        has_scale=scale is not None,
        is_year_like=bool(_YEAR.match(match["digits"])) and kind == "plain"
        and not (match["currency"] or scale),
        text=match.group(0).strip(),
        kind=kind,
        scale=scale or 1.0,
        decimals=len(digits.split(".")[1]) if "." in digits else 0,
        sig_digits=significant_digits(digits),
        start=match.start() + len(match.group(0)) - len(match.group(0).lstrip()),
        end=match.end(),
        currency=bool(match["currency"]),
        scale_implied=implied,
    )


def _scale_of(match: re.Match) -> float | None:
    if match["scale"]:
        return SCALE_WORDS[match["scale"].lower()]
    if match["glued"]:
        return SCALE_WORDS.get(match["glued"].lower())
    return None


def _glued_to_word(text: str, match: re.Match) -> bool:
    """True for digits inside identifiers ("FY2023", "Q4", "1st", "A3"): not standalone numbers."""
    start = match.start("digits")
    if match["currency"] is None and start > 0 and text[start - 1].isalpha():
        return True
    end = match.end()
    return end < len(text) and text[end].isalpha() and not match["close"]


def number_text(value: str | int | float) -> str:
    """A gold stored as a bare number, written as text (strings pass through unchanged).

    A float carries no written precision, so the shortest text that reads back as the same
    float is used: ``1577.0`` → "1577", ``0.308`` → "0.308".

    >>> number_text(1577.0), number_text(0.308), number_text(-15), number_text("30.8%")
    ('1577', '0.308', '-15', '30.8%')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"gold must be text or a number, got {type(value).__name__}")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def significant_digits(digits: str) -> int:
    """Significant digits of a written number ("1600" → 2, "1.60" → 3, "0.012" → 2).

    >>> significant_digits("1600"), significant_digits("1.60"), significant_digits("0.012")
    (2, 3, 2)
    """
    plain = digits.replace(",", "").lstrip("-")
    if "." in plain:
        stripped = plain.replace(".", "").lstrip("0")
    else:
        stripped = plain.lstrip("0").rstrip("0")
    return max(len(stripped), 1)


def round_half_up(value: float, decimals: int) -> float:
    """Round like an analyst (half away from zero), exactly on the decimal text.

    >>> round_half_up(0.655, 2), round_half_up(-1.525, 2), round_half_up(25.46, 1)
    (0.66, -1.53, 25.5)
    """
    try:
        quantum = Decimal(1).scaleb(-decimals)
        return float(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))
    except InvalidOperation:  # astronomically large values: nothing to round
        return value


def round_significant(value: float, digits: int) -> float:
    """Round to ``digits`` significant digits, half away from zero.

    >>> round_significant(1.577e9, 2), round_significant(12.45, 3)
    (1600000000.0, 12.5)
    """
    if value == 0:
        return 0.0
    exponent = Decimal(repr(abs(value))).adjusted()
    return round_half_up(value, digits - 1 - exponent)

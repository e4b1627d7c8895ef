r"""Pull the final answer out of a long response and parse financial numbers.

``extract_final_answer`` drops ``<think>`` reasoning and keeps what follows the last
final-answer marker ("Final answer:", "The answer is", ``\boxed{}``...). ``find_numbers``
reads numbers the way financial answers write them: currency signs and codes, thousands
separators, parentheses as negatives, percentages and scale words ("1.2 billion", "$3.5M",
"in USD millions").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SCALE_WORDS = {
    "thousand": 1e3, "thousands": 1e3, "k": 1e3,
    "million": 1e6, "millions": 1e6, "mm": 1e6, "mn": 1e6, "m": 1e6,
    "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9,
    "trillion": 1e12, "trillions": 1e12, "tn": 1e12, "t": 1e12,
}
_SHORT_SCALES = {"k", "m", "b", "t"}  # only count when glued to the number ("3.5M")

_MARKERS = re.compile(
    r"(?:final\s+answer\s*(?:is)?\s*[:：]?|the\s+(?:final\s+)?answer\s+is\s*[:：]?|"
    r"\banswer\s*[:：]|\btherefore,?\s+the\s+\w+(?:\s+\w+)?\s+(?:is|was|were)\b)",
    re.IGNORECASE,
)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")

_NUMBER = re.compile(
    r"(?P<open>\(\s*)?"
    r"(?P<sign>[-−–]\s?)?"
    r"(?P<currency>US\$|USD|EUR|GBP|[$€£¥₹])?\s?"
    r"(?P<sign2>[-−–])?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<percent>\s?(?:%|percent\b|per\s+cent\b))?"
    r"(?:(?P<glued>[kKmMbBtT](?:[nNmM])?)\b|\s(?P<scale>thousands?|millions?|billions?|trillions?"
    r"|mm|mn|bn|tn)\b)?"
    r"(?P<close>\s*\))?",
)
_UNIT_PHRASE = re.compile(
    r"\bin\s+(?:(?:usd|us\$|\$|eur|gbp|dollars?|euros?)\s+)?(thousands|millions|billions)\b"
    r"|\b(?:usd|us\$|\$|eur|gbp)\s+(?:in\s+)?(thousands|millions|billions)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"^(?:19|20)\d\d$")


@dataclass(frozen=True)
class ParsedNumber:
    """One number found in text, normalised."""

    value: float  # signed value, scale applied (percent values stay in percent units)
    raw: float  # signed value before any scale
    is_percent: bool  # written with %, "percent" or "per cent"
    has_scale: bool  # a scale word or unit phrase applied
    is_year_like: bool  # a bare integer 1900-2099 (likely a fiscal year, not an answer)
    text: str  # the matched span


def extract_final_answer(response: str) -> tuple[str, bool]:
    r"""Return ``(final answer text, found_marker)`` from a possibly long response.

    Reasoning inside ``<think>...</think>`` is dropped; then the content of the last
    ``\boxed{}`` wins, else the text after the last final-answer marker (up to a blank line),
    else the whole remaining text with ``found_marker`` False.

    >>> extract_final_answer("<think>maybe 3</think>So... The answer is $4.2 million.")
    ('$4.2 million.', True)
    """
    text = response.rsplit("</think>", 1)[-1].strip()
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip(), True
    markers = list(_MARKERS.finditer(text))
    if not markers:
        return text, False
    tail = text[markers[-1].end() :].strip()
    return tail.split("\n\n", 1)[0].strip(), True


def find_numbers(text: str) -> list[ParsedNumber]:
    """Return every number in ``text`` in order of appearance.

    >>> [n.value for n in find_numbers("(1,234) vs $1.5bn, up 12.5%")]
    [-1234.0, 1500000000.0, 12.5]
    """
    unit = _UNIT_PHRASE.search(text)
    default_scale = SCALE_WORDS[(unit.group(1) or unit.group(2)).lower()] if unit else None
    numbers = []
    for match in _NUMBER.finditer(text):
        if _glued_to_word(text, match):
            continue
        raw = float(match["digits"].replace(",", ""))
        # A dash right after a word or digit is a range or hyphen ("2019-2020"), not a sign.
        after_word = match.start() > 0 and text[match.start() - 1].isalnum()
        signed = bool(match["sign"] or match["sign2"]) and not after_word
        negative = signed or bool(match["open"] and match["close"])
        raw = -raw if negative else raw
        scale_word = (match["scale"] or match["glued"] or "").lower()
        if scale_word in SCALE_WORDS and (match["scale"] or scale_word in _SHORT_SCALES
                                          or scale_word in {"mm", "mn", "bn", "tn"}):
            scale: float | None = SCALE_WORDS[scale_word]
        else:
            scale = None
        is_percent = bool(match["percent"])
        if scale is None and not is_percent:
            scale = default_scale
        numbers.append(
            ParsedNumber(
                value=raw * (scale or 1.0),
                raw=raw,
                is_percent=is_percent,
                has_scale=scale is not None,
                is_year_like=bool(_YEAR.match(match["digits"]))
                and not (match["currency"] or is_percent or scale),
                text=match.group(0).strip(),
            )
        )
    return numbers


def _glued_to_word(text: str, match: re.Match) -> bool:
    """True for digits inside identifiers such as "FY2023" or "Q4" (not standalone numbers)."""
    start = match.start("digits")
    return match["currency"] is None and start > 0 and text[start - 1].isalpha()


def answer_number(response: str) -> tuple[ParsedNumber | None, str]:
    """Pick the number a response answers with, and say how it was chosen.

    After a final-answer marker, the first number that is not a bare year; without one, the
    last number of the response.
    """
    final, found_marker = extract_final_answer(response)
    numbers = find_numbers(final)
    if not numbers:
        return None, "no number in the final answer"
    if found_marker:
        candidates = [n for n in numbers if not n.is_year_like] or numbers
        return candidates[0], f"first number after the final-answer marker: {candidates[0].text!r}"
    return numbers[-1], f"last number of the response: {numbers[-1].text!r}"

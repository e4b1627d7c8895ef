"""Number spraying: several distinct values offered without committing to one.

"It could be 10%, 12% or 15%" answers with none of them; inputs of an expression, restatements
of one value, other years' figures and changes ("from X to Y") are not spraying.

Design: docs/design/grading.md#spraying.
"""

from __future__ import annotations

import re

from crsp_ops.evaluation.numbers import ParsedNumber, round_half_up
from crsp_ops.evaluation.refusals import HEDGE_WORDS, hedged
from crsp_ops.evaluation.sentences import sentence_bounds
from crsp_ops.evaluation.year_tags import year_tag

_LIST_SEPARATOR = re.compile(r"^\s*(?:,|;|and|,\s*and)?\s*$", re.IGNORECASE)
_ROUNDING = re.compile(r"\b(?:rounded|rounding|approximately|approx|about|roughly)\b|[~≈]",
                       re.IGNORECASE)
_RANGE = re.compile(r"^\s*(?:to|-|–|—)\s*$", re.IGNORECASE)
_FROM = re.compile(r"\bfrom\s*$", re.IGNORECASE)
_OPERATORS = "+-*/×÷=≈−"


def _same_value(a: ParsedNumber, b: ParsedNumber) -> bool:
    """Equal, as percent vs fraction, or one the other rounded ("6.904" and "6.90")."""
    for factor in (1.0, 100.0, 0.01):
        target = b.value * factor
        if abs(a.value - target) <= 1e-9 * max(1.0, abs(target)):
            return True
    if a.kind == b.kind and a.scale == b.scale:
        coarse, fine = (a, b) if a.decimals <= b.decimals else (b, a)
        return abs(round_half_up(fine.raw, coarse.decimals) - coarse.raw) <= 1e-9 * max(
            1.0, abs(coarse.raw))
    return False


def _rounded_restatement(a: ParsedNumber, b: ParsedNumber, text: str) -> bool:
    """"17.98, or 18.00 rounded": a value within 1% restated with a rounding word beside it."""
    if a.kind != b.kind or abs(a.value - b.value) > 0.01 * max(abs(a.value), abs(b.value)):
        return False
    first, second = (a, b) if a.start < b.start else (b, a)
    return bool(_ROUNDING.search(text[first.end:second.end + 12]))


def _range(a: ParsedNumber, b: ParsedNumber, text: str) -> bool:
    """"11% to 12%", "11-12%": a range, unless written "from X to Y" (a change)."""
    return bool(_RANGE.match(text[a.end:b.start])) and not _FROM.search(
        text[max(0, a.start - 20):a.start])


def _other_year(rival: ParsedNumber, chosen: ParsedNumber, text: str) -> bool:
    """Figures stated for different years are a comparison, not alternatives."""
    tags = year_tag(rival, text), year_tag(chosen, text)
    return None not in tags and tags[0] != tags[1]


def _operand(number: ParsedNumber, text: str) -> bool:
    """A figure inside an arithmetic expression ("66,608 / 9,648"): an input, not an offer."""
    before = text[max(0, number.start - 3):number.start].rstrip(" (")
    after = text[number.end:number.end + 3].lstrip(" )")
    return (before[-1:] in _OPERATORS and before[-1:] != "") or (
        after[:1] in _OPERATORS and after[:1] != "")


def _kind_group(number: ParsedNumber) -> str:
    return "rate" if number.kind in ("percent", "bps") else "amount"


def _alternative(number: ParsedNumber, chosen: ParsedNumber, text: str) -> bool:
    """True when ``number`` is a real alternative to ``chosen``.

    Same kind, another value, not an input of an expression, not a figure of another year.
    """
    return (number is not chosen and _kind_group(number) == _kind_group(chosen)
            and not _same_value(number, chosen) and not _rounded_restatement(number, chosen, text)
            and not _operand(number, text)
            and not _other_year(number, chosen, text))


def sprayed_rivals(chosen: ParsedNumber, in_span: list[ParsedNumber],
                   text: str) -> list[ParsedNumber]:
    """Distinct same-kind values offered with ``chosen`` in a hedge or a bare list.

    >>> from crsp_ops.evaluation.numbers import find_numbers
    >>> text = "It is 10%, 12% or 15%, or $5 million."
    >>> first, *others = find_numbers(text)
    >>> [n.text for n in sprayed_rivals(first, [first, *others], text)]
    ['12%', '15%']
    """
    rivals = [n for n in in_span if _alternative(n, chosen, text)]
    if not rivals:
        return []
    if any(hedged(text[max(0, min(n.start, chosen.start) - 30):max(n.end, chosen.end)])
           for n in rivals):
        return rivals
    if any(_range(a, b, text) for a, b in zip(in_span, in_span[1:], strict=False)
           if chosen in (a, b) and (a in rivals or b in rivals)):
        return rivals
    group = [n for n in in_span if _kind_group(n) == _kind_group(chosen)]
    listed = all(_LIST_SEPARATOR.match(text[a.end:b.start])
                 for a, b in zip(group, group[1:], strict=False))
    return rivals if listed and len(group) >= 2 else []


def hedged_elsewhere(chosen: ParsedNumber, candidates: list[ParsedNumber], text: str,
                      segment: str) -> list[ParsedNumber]:
    """Without a commitment: values offered in other hedged sentences ("It might be ...")."""
    if not HEDGE_WORDS.search(segment):
        return []
    chosen_sentence = sentence_bounds(text, chosen.start)
    rivals = []
    for number in candidates:
        bounds = sentence_bounds(text, number.start)
        if bounds != chosen_sentence and _alternative(number, chosen, text) and hedged(
                text[bounds[0]:bounds[1]]):
            rivals.append(number)
    return rivals

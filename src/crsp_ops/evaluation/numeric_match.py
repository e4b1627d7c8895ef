"""Does a committed figure equal the gold, once units, scale, sign and rounding are aligned?

Every comparison happens in the gold's written units; the answer is read in each way its
writing allows, and one reading must pass one of the rules.

Design: docs/design/grading.md#numeric_match.
"""

from __future__ import annotations

import math
from dataclasses import replace

from crsp_ops.evaluation.numbers import (
    ParsedNumber,
    round_half_up,
    round_significant,
    significant_digits,
)
from crsp_ops.evaluation.question_units import QuestionIntent

ROUNDING_STEP_SHARE = 0.025  # rule 5 applies when one unit of the gold's last digit is <= 2.5%
ROUNDING_STEP_MIN_REL_TOL = 1e-3  # callers asking for exact answers (CRSP math) do not get rule 5

Reading = tuple[str, float]  # (how the answer was read, factor: answer.raw × factor = gold units)


def gold_unit_scale(gold: ParsedNumber, intent: QuestionIntent) -> float:
    """Scale of the gold's written number: its own scale word, else the question's, else 1.

    >>> from crsp_ops.evaluation.numbers import find_numbers
    >>> gold_unit_scale(find_numbers("1577")[0], QuestionIntent(scale=1e6))
    1000000.0
    """
    if gold.kind != "plain":
        return 1.0
    return gold.scale if gold.has_scale else (intent.scale or 1.0)


def readings(answer: ParsedNumber, gold: ParsedNumber, intent: QuestionIntent, *,
             sign_flip: bool) -> list[Reading]:
    """Every way to read ``answer`` in the gold's units.

    >>> from crsp_ops.evaluation.numbers import find_numbers
    >>> readings(find_numbers("24%")[0], find_numbers("0.24")[0], QuestionIntent(), sign_flip=False)
    [('percent as fraction', 0.01)]
    """
    found = _kind_readings(answer, gold, intent)
    if sign_flip:
        found += [(f"{how}, sign from the stated direction", -factor) for how, factor in found]
    return found


def _kind_readings(answer: ParsedNumber, gold: ParsedNumber,
                   intent: QuestionIntent) -> list[Reading]:
    gold_rate = gold.kind == "percent" or (gold.kind == "plain" and intent.percent)
    gold_bps = gold.kind == "bps" or (gold.kind == "plain" and intent.bps)
    if answer.kind == "percent":
        if gold_bps:
            return [("percent as basis points", 100.0)]
        if gold.kind == "percent":
            return [("percent", 1.0)]
        # A bare gold on a percent question may be stored either way (0.308 or 30.8).
        return [("percent as fraction", 0.01)] + ([("percent", 1.0)] if gold_rate else [])
    if answer.kind == "bps":
        if gold_bps:
            return [("basis points", 1.0)]
        if gold_rate:
            return [("basis points as percent", 0.01)]
        return [("basis points as fraction", 1e-4), ("basis points as percent", 0.01)]
    amounts = _scale_readings(answer, gold, intent)
    if answer.currency or (answer.has_scale and not answer.scale_implied):
        # "$30.8 million" is an amount, never a rate.
        return [] if gold.kind == "percent" or gold_bps else amounts
    if gold.kind == "percent":
        return [("number for a percent", 1.0), ("fraction as percent", 100.0)]
    if gold_bps:
        return [("number for basis points", 1.0), ("fraction as basis points", 1e4)]
    if gold_rate:
        return amounts + [("fraction as percent", 100.0), ("percent as fraction", 0.01)]
    return amounts


def _scale_readings(answer: ParsedNumber, gold: ParsedNumber,
                    intent: QuestionIntent) -> list[Reading]:
    unit = gold_unit_scale(gold, intent)
    if answer.has_scale:
        found = [("scaled", answer.scale / unit)]
        if answer.scale_implied or not (gold.has_scale or intent.scale):
            found.append(("unscaled (the unit left implicit)", 1.0))
        return found
    found = [("as written, in the gold's units", 1.0)]
    if unit != 1.0:
        found.append(("as written, in units", 1.0 / unit))
    return found


def match_rule(answer: ParsedNumber, gold: ParsedNumber, intent: QuestionIntent, *,
               rel_tol: float, sign_flip: bool = False, approximate: bool = False) -> str:
    """How ``answer`` equals ``gold`` ("" when no reading passes any rule).

    Args:
        answer: the committed figure.
        gold: the gold's number.
        intent: what the question implies.
        rel_tol: allowed relative error (rule 1).
        sign_flip: the answer's or question's wording explains an opposite sign.
        approximate: the answer marks its figure as approximate ("about", "~").

    >>> from crsp_ops.evaluation.numbers import find_numbers
    >>> answer, gold = find_numbers("1.42%")[0], find_numbers("0.01")[0]
    >>> match_rule(answer, gold, QuestionIntent(), rel_tol=0.01)
    "percent as fraction: 0.0142 rounds to the gold's 2 decimals"
    """
    for how, factor in readings(answer, gold, intent, sign_flip=sign_flip):
        value = answer.raw * factor
        rule = _passing_rule(value, factor, answer, gold, intent, rel_tol, approximate)
        if rule:
            return f"{how}: {rule}"
    return ""


def _passing_rule(value: float, factor: float, answer: ParsedNumber, gold: ParsedNumber,
                  intent: QuestionIntent, rel_tol: float, approximate: bool) -> str:
    target = gold.raw
    shown = f"{value:.6g}"
    if gold.is_year_like:  # years are exact
        return f"{shown} is the year {target:g}" if _equal(value, target) else ""
    if _close(value, target, rel_tol):
        return f"{shown} within rel_tol={rel_tol:g} of {target:g}"
    if (gold.decimals >= 1 or intent.decimals == 0) and _equal(
            round_half_up(value, gold.decimals), target):
        return f"{shown} rounds to the gold's {gold.decimals} decimals"
    if intent.decimals is not None:
        # A requested precision is in the question's units: percent, when the gold is a fraction.
        places = intent.decimals + (2 if _fraction_of_percent(factor, gold, intent) else 0)
        if _equal(round_half_up(value, places), round_half_up(target, places)):
            return f"{shown} and the gold agree at the requested {intent.decimals} decimals"
    if rel_tol >= ROUNDING_STEP_MIN_REL_TOL and _within_rounding_step(value, factor, answer, gold):
        return f"{shown} is within one unit of the gold's last digit"
    coarser = approximate or (answer.has_scale and abs(factor) > 1.0 and answer.kind == "plain")
    if coarser and answer.sig_digits >= 2 and _equal(
            round_significant(target / factor, answer.sig_digits), answer.raw):
        return (f"the gold rounded to the answer's {answer.sig_digits} significant digits "
                f"is {answer.text!r}")
    return ""


def stated_changes(start: ParsedNumber, end: ParsedNumber) -> list[tuple[str, ParsedNumber]]:
    """The changes "from ``start`` to ``end``" states: the difference, and in percent.

    >>> from crsp_ops.evaluation.numbers import find_numbers
    >>> a, b = find_numbers("45.1% to 41.9%")
    >>> [(how, round(n.value, 4)) for how, n in stated_changes(a, b)]
    [('difference', -3.2), ('relative change in percent', -7.0953)]
    """
    decimals = max(start.decimals, end.decimals)
    difference = round(end.raw - start.raw, decimals + 6)
    found = [("difference", _derived(end, difference, decimals, end.kind))]
    if start.raw:
        relative = (end.value - start.value) / abs(start.value) * 100
        found.append(("relative change in percent", _derived(end, relative, 12, "percent")))
    return found


def _derived(like: ParsedNumber, raw: float, decimals: int, kind: str) -> ParsedNumber:
    scale = like.scale if kind == like.kind else 1.0
    return replace(like, raw=raw, value=raw * scale, kind=kind, is_percent=kind == "percent",
                   decimals=decimals, sig_digits=significant_digits(f"{abs(raw):.{decimals}f}"),
                   text=f"{raw:g}" + ("%" if kind == "percent" else ""))


def _within_rounding_step(value: float, factor: float, answer: ParsedNumber,
                          gold: ParsedNumber) -> bool:
    """Rule 5: rounded to the gold's decimals, at most one unit off (7.8% for a gold 7.9%)."""
    unit = 10.0 ** -gold.decimals
    stated_decimals = answer.decimals - round(math.log10(abs(factor)))  # in the gold's units
    return (gold.decimals >= 1 and stated_decimals >= gold.decimals
            and unit <= ROUNDING_STEP_SHARE * abs(gold.raw)
            and abs(round_half_up(value, gold.decimals) - gold.raw) <= unit * (1 + 1e-9))


def _fraction_of_percent(factor: float, gold: ParsedNumber, intent: QuestionIntent) -> bool:
    """A percent question whose bare gold is compared as a fraction (0.079 for 7.9%)."""
    if not intent.percent or gold.kind != "plain":
        return False
    return factor == 0.01 or (intent.decimals is not None and gold.decimals > intent.decimals)


def _close(value: float, target: float, rel_tol: float) -> bool:
    if target == 0:
        return abs(value) <= 1e-12
    return abs(value - target) <= rel_tol * abs(target) * (1 + 1e-12)


def _equal(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))

r"""Choose the number a response commits to, and say which one was taken and why.

The committed span, strongest first: an ``<answer>`` tag, ``\boxed{}``, a "final answer"
sentence, ... down to the last sentence with a figure; years, references and asides are skipped.

Design: docs/design/grading.md#final_answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crsp_ops.evaluation.number_roles import skip_reason
from crsp_ops.evaluation.numbers import ParsedNumber, find_numbers
from crsp_ops.evaluation.question_units import QuestionIntent
from crsp_ops.evaluation.refusals import refusal
from crsp_ops.evaluation.sentences import sentence_bounds, sentence_end, skip_markup
from crsp_ops.evaluation.spraying import hedged_elsewhere, sprayed_rivals
from crsp_ops.evaluation.year_tags import year_tag

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_STRONG = re.compile(
    r"final\s+answer\s*(?:is)?\s*[:：]?|the\s+(?:final\s+)?answer\s+(?:is|would\s+be)\s*[:：]?"
    r"|\banswer\s*\**\s*[:：]|\bin\s+conclusion,?|\bin\s+summary,?",
    re.IGNORECASE,
)
_WEAK = re.compile(
    r"\b(?:is|was|are|were|be|of|at|to|equals?|stands?\s+at)\s+(?:approximately|approx\.?|about|"
    r"around|roughly|nearly|~|≈)"
    r"|\b(?:therefore|thus|hence|so|overall|consequently)\b,?[^.\n]{0,80}?\b(?:is|was|are|were|"
    r"equals?|comes?\s+to|amounts?\s+to|totals?|totaled|totalled)\b"
    r"|\b(?:comes?|came|amounts?|amounted)\s+to\b"
    r"|\b(?:to\s+get|we\s+get|gives?|giving|yields?|resulting\s+in|results\s+in|"
    r"arriv(?:e|es|ed|ing)\s+at)\b",
    re.IGNORECASE,
)
_FROM = re.compile(r"\bfrom\s*$", re.IGNORECASE)
_TO = re.compile(r"^\s*(?:in\s+\S+\s+)?to\s*$", re.IGNORECASE)
_CONCLUDES = re.compile(
    r"\b(?:so|therefore|thus|hence|consequently|giving|gives|gave|yields?|resulting\s+in|"
    r"results\s+in|we\s+get|to\s+get|is|was|are|were|equals?|totals|totall?ed|"
    r"(?:amounts?|amounted|comes?|came)\s+to|stands?\s+at|stood\s+at|for\s+(?:a\s+)?total|"
    r"totall?ing|in\s+total|combined)\b",
    re.IGNORECASE,
)
# Sentences that set the answer beside something else: another period, peers, a benchmark.
_ASIDE = re.compile(
    r"\b(?:for|by|in)\s+(?:comparison|contrast|reference|context)\b|"
    r"\b(?:prior|previous|preceding)\s+(?:year|period|quarter)|\bpeers?\b|\bindustry\b|"
    r"\bbenchmark", re.IGNORECASE)
# A figure introduced as the thing compared against: "higher than the industry average of 10.1%".
_COMPARED = re.compile(
    r"\b(?:than|compared\s+(?:with|to)|versus|vs\.?|relative\s+to|against|above|below|"
    r"exceed(?:s|ed|ing)?|ahead\s+of|behind|average\s+of|median\s+of)\b[^\d.;\n]{0,40}$",
    re.IGNORECASE)
_RELATIVE = re.compile(r"\b(?:which|that|who)\s+$", re.IGNORECASE)  # "..., which is above ..."
_YEAR_PAIR = re.compile(
    r"^\s*(?:in|for|during)\s+(?:fiscal\s+(?:year\s+)?|FY\s?'?)?(?:19|20)\d\d\s*,?\s*"
    r"(?:and|to|vs\.?|versus|compared\s+(?:with|to))\s+$", re.IGNORECASE)
_EQUALS = re.compile(r"=|≈|\bequals\b", re.IGNORECASE)

@dataclass(frozen=True)
class AnswerChoice:
    """The number a response commits to (or why there is none)."""

    number: ParsedNumber | None  # the committed figure, None when there is none
    reason: str  # which number was taken and why, or why none was
    commitment: str  # how the answer committed ("<answer> tag", "last sentence", ...)
    text: str  # the response without reasoning blocks
    segment: str  # the committed span of ``text``
    refusal: str = ""  # a refusal phrase standing in the answer ("" when none)
    rivals: tuple[ParsedNumber, ...] = ()  # distinct values offered alongside (spraying)
    # "from X to Y" holding the figure, when the question asks for a change (grade Y - X too)
    change: tuple[ParsedNumber, ParsedNumber] | None = None


def strip_reasoning(response: str) -> str:
    """Drop ``<think>`` blocks (and anything before a dangling ``</think>``).

    >>> strip_reasoning("<think>maybe 3</think> It is 4.")
    'It is 4.'
    """
    text = response.rsplit("</think>", 1)[-1] if "</think>" in response else response
    return _THINK.sub(" ", text).strip()


def committed_span(text: str) -> tuple[int, int, str]:
    """``(start, end, how)`` of the span the answer commits to; ``how`` is "" when none.

    >>> text = "Inputs were 5 and 7. Final answer: 12 (5 + 7). Thanks."
    >>> start, end, how = committed_span(text)
    >>> text[start:end], how
    ('12 (5 + 7)', 'final-answer marker')
    """
    tags = list(_TAG.finditer(text))
    if tags:
        return tags[-1].start(1), tags[-1].end(1), "<answer> tag"
    boxed = list(_BOXED.finditer(text))
    if boxed:
        return boxed[-1].start(1), boxed[-1].end(1), r"\boxed{}"
    strong = list(_STRONG.finditer(text))
    if strong:
        begin = skip_markup(text, strong[-1].end())
        return begin, sentence_end(text, begin), "final-answer marker"
    weak = list(_WEAK.finditer(text))
    if weak:
        how = f"committed by {weak[-1].group(0).strip()[:30]!r}"
        return weak[-1].start(), sentence_end(text, weak[-1].end()), how
    return 0, 0, ""

def choose_answer(response: str, intent: QuestionIntent, *, wants_percent: bool = False,
                  gold_is_year: bool = False) -> AnswerChoice:
    """Pick the committed figure of ``response`` and explain the choice.

    Args:
        response: the model's full response.
        intent: what the question implies (``question_intent``).
        wants_percent: the gold is a percentage/rate: prefer percent figures in the span.
        gold_is_year: the gold is a year, so years are candidates.

    >>> choice = choose_answer("In 2019 revenue was 1,577 per the 10-K.", QuestionIntent())
    >>> choice.number.value
    1577.0
    >>> print(choice.reason)  # doctest: +NORMALIZE_WHITESPACE
    took '1,577' (last sentence with a figure); skipped '2019' (a year),
    '10' (a note/page/document reference)
    """
    text = strip_reasoning(response)
    numbers = find_numbers(text)
    reasons = {id(n): skip_reason(n, text, intent, gold_is_year=gold_is_year) for n in numbers}
    candidates = [n for n in numbers if not reasons[id(n)]]
    start, end, how = committed_span(text)
    in_span = [n for n in candidates if start <= n.start < end]
    if not in_span and how and how != "final-answer marker" and not how.startswith("<"):
        how = ""  # a weak marker without a figure: fall back to the last sentence
    later = _later_result(candidates, text, end) if how.startswith("committed by") else None
    if later is not None:  # "so the average is X. ... ROA = a / b = 1.42%": the last result
        start, end = sentence_bounds(text, later.start)
        how = "a later computed result"
        in_span = [n for n in candidates if start <= n.start < end]
    if not how and candidates:
        # "... = 2.84%. In FY2020 it was 2.91%.": a closing aside about another year is not it.
        last = next((n for n in reversed(candidates) if _of_asked_year_or_untagged(n, text, intent)
                     and not _in_aside(n, text)), candidates[-1])
        start, end = sentence_bounds(text, last.start)
        how = "last sentence with a figure"
        in_span = [n for n in candidates if start <= n.start < end]
    segment = text[start:end]
    skipped = ", ".join(f"{n.text!r} ({reasons[id(n)]})" for n in numbers if reasons[id(n)])
    skipped_note = f"; skipped {skipped}" if skipped else ""
    if not in_span:
        where = f"after the {how}" if how else "in the answer"
        return AnswerChoice(None, f"no candidate figure {where}{skipped_note}", how, text, segment,
                            refusal=refusal(segment if how else text))
    chosen = _pick(in_span, text, intent, wants_percent)
    rivals = sprayed_rivals(chosen, in_span, text)
    if not rivals and how == "last sentence with a figure":
        rivals = hedged_elsewhere(chosen, candidates, text, segment)
    scope, offset = (segment, start) if how and not how.startswith("last") else (text, 0)
    # A refusal followed by another year's figure stands: that figure answers something else.
    fits = _of_asked_year_or_untagged(chosen, text, intent)
    refused = refusal(scope, committed_at=chosen.start - offset if fits else None, caveats=True)
    change = next(((a, b) for a, b in _from_to_pairs(in_span, text)
                   if chosen is a or chosen is b), None) if intent.asks_change else None
    return AnswerChoice(chosen, f"took {chosen.text!r} ({how}){skipped_note}", how, text, segment,
                        refusal=refused, rivals=tuple(rivals), change=change)


def _pick(in_span: list[ParsedNumber], text: str, intent: QuestionIntent,
          wants_percent: bool) -> ParsedNumber:
    """The committed figure among the span's candidates (docs/design/grading.md#final_answer)."""
    pool = [n for n in in_span if not _quoted(n, intent)] or in_span
    pool = [n for n in pool if not _compared(n, text)] or pool
    if intent.asks_change:  # "from $2,500 million in FY2021 to $2,960 million": inputs, any year
        ends = {id(n) for pair in _from_to_pairs(pool, text) for n in pair}
        pool = [n for n in pool if id(n) not in ends] or pool
    pool = _of_the_asked_year(pool, text, intent)
    after_equals = _after_last_equals(pool, text)
    if after_equals is not None:
        return after_equals
    pool = _after_last_conclusion(pool, text)
    rates = [n for n in pool if n.kind in ("percent", "bps")]
    pool = (rates if wants_percent else [n for n in pool if n not in rates]) or pool
    pairs = _from_to_pairs(pool, text)
    if intent.asks_change:  # "up 7.3%, from 4,512 to 4,843": the endpoints are inputs
        ends = {id(n) for pair in pairs for n in pair}
        return next((n for n in pool if id(n) not in ends), pool[0])
    return pairs[0][1] if pairs and pairs[0][0] is pool[0] else pool[0]


def _from_to_pairs(pool: list[ParsedNumber], text: str) -> list[tuple[ParsedNumber, ParsedNumber]]:
    """Consecutive candidates written "from X to Y" or "X in 2020 and Y in 2021"."""
    return [(a, b) for a, b in zip(pool, pool[1:], strict=False)
            if (_FROM.search(text[max(0, a.start - 20):a.start])
                and _TO.match(text[a.end:b.start])) or _YEAR_PAIR.match(text[a.end:b.start])]


def _of_the_asked_year(pool: list[ParsedNumber], text: str,
                       intent: QuestionIntent) -> list[ParsedNumber]:
    """When figures are stated for different years, keep those of the question's one year."""
    if len(intent.years) != 1:
        return pool
    tags = [year_tag(n, text) for n in pool]
    asked = [n for n, tag in zip(pool, tags, strict=True) if tag == intent.years[0]]
    other = [n for n, tag in zip(pool, tags, strict=True) if tag not in (None, intent.years[0])]
    return asked if asked and other else pool


def _later_result(candidates: list[ParsedNumber], text: str, after: int) -> ParsedNumber | None:
    """The last figure after ``after`` that an "=" in its own sentence computes."""
    for number in reversed(candidates):
        if number.start < after:
            return None
        start, _ = sentence_bounds(text, number.start)
        if _EQUALS.search(text, max(start, after), number.start) and not _in_aside(number, text):
            return number
    return None


def _in_aside(number: ParsedNumber, text: str) -> bool:
    """The figure is compared against, or its sentence compares (another period, peers)."""
    start, end = sentence_bounds(text, number.start)
    return bool(_ASIDE.search(text, start, end)) or _compared(number, text)


def _compared(number: ParsedNumber, text: str) -> bool:
    return bool(_COMPARED.search(text, max(0, number.start - 50), number.start))


def _after_last_conclusion(pool: list[ParsedNumber], text: str) -> list[ParsedNumber]:
    """In "X was 2.9% and 3.2%, so it rose by 0.3 points", the figures the conclusion states."""
    words = [m for m in _CONCLUDES.finditer(text, pool[0].end, pool[-1].start)
             if text.rfind("(", 0, m.start()) <= text.rfind(")", 0, m.start())  # not an aside
             and not _RELATIVE.search(text, max(0, m.start() - 8), m.start())]
    if not words:
        return pool
    return [n for n in pool if n.start >= words[-1].end()] or pool


def _after_last_equals(pool: list[ParsedNumber], text: str) -> ParsedNumber | None:
    """In "a / b = c", the figure after the last "=" between candidates (not "(= a / b)")."""
    signs = [m.start() for m in _EQUALS.finditer(text, pool[0].end, pool[-1].start)
             if not text[:m.start()].rstrip().endswith("(")]
    if not signs:
        return None
    return next((n for n in pool if n.start > signs[-1]), None)


def _of_asked_year_or_untagged(number: ParsedNumber, text: str, intent: QuestionIntent) -> bool:
    """A figure that is not stated for another year than the one asked."""
    tag = year_tag(number, text)
    return tag is None or len(intent.years) != 1 or tag == intent.years[0]


def _quoted(number: ParsedNumber, intent: QuestionIntent) -> bool:
    return any(abs(number.value - q) <= 1e-9 * max(1.0, abs(q)) for q in intent.quoted)

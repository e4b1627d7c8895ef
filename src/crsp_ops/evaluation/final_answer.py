r"""Choose the number a response commits to, and say which one was taken and why.

The committed span, strongest first: the last ``<answer>`` tag, the last ``\boxed{}``, the
sentence after the last "final answer" / "the answer is" / "answer:", the sentence of the last
"is approximately" / "therefore ... is" / "comes to", else the last sentence with a figure.
Within it, years, document/page/note references, dates and counts are skipped (unless the
question asks for a year or a count), a figure after the last "=" or after "from ... to" wins,
figures quoted from the question yield to new ones, and a rate is preferred when the gold
is a rate (an amount otherwise). Several distinct values of the same
kind in a hedged or bare list ("10% or 12%", "10%, 12%, 15%") are spraying, not an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crsp_ops.evaluation.numbers import ParsedNumber, find_numbers, round_half_up
from crsp_ops.evaluation.question_units import QuestionIntent
from crsp_ops.evaluation.refusals import HEDGE_WORDS, hedged, refusal
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
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")
_MONTH = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s*$", re.IGNORECASE)
_REFERENCE_BEFORE = re.compile(
    r"\b(?:page|pages|p\.|pp\.|note|notes|item|items|section|exhibit|part|table|schedule|"
    r"footnote|line|chapter|figure|fig\.|article|form|asc|asu|ifrs|ias|topic|rule|no\.|#)\s*$",
    re.IGNORECASE,
)
_REFERENCE_AFTER = re.compile(r"^-?\s?[KQ]\b|^-[A-Z]\b")
_COUNT_AFTER = re.compile(
    r"^[\s-]+(?:\w+\s+)?(?:segments?|items?|quarters?|years?|months?|weeks?|days?|employees|"
    r"stores|countries|locations|subsidiaries|products|factors|reasons|steps|categories|"
    r"divisions|regions|business(?:es)?|companies|acquisitions|plants|facilities|markets|risks|"
    r"components|metrics|lines|brands|customers|programs?|transactions|deals|tranches|"
    r"installments|payments|offerings|plans|occasions|classes|series|times\s+(?:in|during|over))"
    r"\b",
    re.IGNORECASE,
)
_LIST_SEPARATOR = re.compile(r"^\s*(?:,|;|and|,\s*and)?\s*$", re.IGNORECASE)
_OPERATORS = "+-*/×÷=≈−"
_FROM = re.compile(r"\bfrom\s*$", re.IGNORECASE)
_TO = re.compile(r"^\s*(?:in\s+\S+\s+)?to\s*$", re.IGNORECASE)
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
        begin = _skip_space(text, strong[-1].end())
        return begin, _sentence_end(text, begin), "final-answer marker"
    weak = list(_WEAK.finditer(text))
    if weak:
        how = f"committed by {weak[-1].group(0).strip()[:30]!r}"
        return weak[-1].start(), _sentence_end(text, weak[-1].end()), how
    return 0, 0, ""


def _skip_space(text: str, start: int) -> int:
    """Skip whitespace and markdown ("**Final Answer**" on its own line)."""
    return len(text) - len(text[start:].lstrip(" \t\n*#_:：>-"))


def _sentence_end(text: str, start: int) -> int:
    begin = _skip_space(text, start)
    end = _SENTENCE_END.search(text, begin)
    return end.start() if end else len(text)


def _sentence_bounds(text: str, position: int) -> tuple[int, int]:
    starts = [m.end() for m in _SENTENCE_END.finditer(text, 0, position)]
    return (starts[-1] if starts else 0), _sentence_end(text, position)


def skip_reason(number: ParsedNumber, text: str, intent: QuestionIntent, *,
                gold_is_year: bool = False) -> str:
    """Why ``number`` is not a candidate answer ("" when it is one).

    >>> text = "Per Note 7 of the 10-K, in 2019 the 3 segments earned $1,577 million."
    >>> [skip_reason(n, text, QuestionIntent()) for n in find_numbers(text)]
    ['a note/page/document reference', 'a note/page/document reference', 'a year', 'a count', '']
    """
    before, after = text[max(0, number.start - 12):number.start], text[number.end:number.end + 40]
    if number.is_year_like and not (intent.asks_year or gold_is_year):
        return "a year"
    plain_integer = number.kind == "plain" and number.decimals == 0 and not number.currency
    if plain_integer and (_REFERENCE_BEFORE.search(before) or _REFERENCE_AFTER.match(after)):
        return "a note/page/document reference"
    if plain_integer and abs(number.raw) <= 31 and _MONTH.search(before):
        return "a date"
    if plain_integer and not intent.asks_count and abs(number.raw) < 1000 and _COUNT_AFTER.match(
            after):
        return "a count"
    return ""


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
    if not how and candidates:
        start, end = _sentence_bounds(text, candidates[-1].start)
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
    rivals = _sprayed(chosen, in_span, text)
    if not rivals and how == "last sentence with a figure":
        rivals = _hedged_elsewhere(chosen, candidates, text, segment)
    scope, offset = (segment, start) if how and not how.startswith("last") else (text, 0)
    refused = refusal(scope, committed_at=chosen.start - offset)
    change = next(((a, b) for a, b in _from_to_pairs(in_span, text)
                   if chosen is a or chosen is b), None) if intent.asks_change else None
    return AnswerChoice(chosen, f"took {chosen.text!r} ({how}){skipped_note}", how, text, segment,
                        refusal=refused, rivals=tuple(rivals), change=change)


def _pick(in_span: list[ParsedNumber], text: str, intent: QuestionIntent,
          wants_percent: bool) -> ParsedNumber:
    """The committed figure among the span's candidates (see the module docstring)."""
    pool = [n for n in in_span if not _quoted(n, intent)] or in_span
    pool = _of_the_asked_year(pool, text, intent)
    after_equals = _after_last_equals(pool, text)
    if after_equals is not None:
        return after_equals
    rates = [n for n in pool if n.kind in ("percent", "bps")]
    pool = (rates if wants_percent else [n for n in pool if n not in rates]) or pool
    pairs = _from_to_pairs(pool, text)
    if intent.asks_change:  # "up 7.3%, from 4,512 to 4,843": the endpoints are inputs
        ends = {id(n) for pair in pairs for n in pair}
        return next((n for n in pool if id(n) not in ends), pool[0])
    return pairs[0][1] if pairs and pairs[0][0] is pool[0] else pool[0]


def _from_to_pairs(pool: list[ParsedNumber], text: str) -> list[tuple[ParsedNumber, ParsedNumber]]:
    """Consecutive candidates written "from X to Y"."""
    return [(a, b) for a, b in zip(pool, pool[1:], strict=False)
            if _FROM.search(text[max(0, a.start - 20):a.start])
            and _TO.match(text[a.end:b.start])]


def _of_the_asked_year(pool: list[ParsedNumber], text: str,
                       intent: QuestionIntent) -> list[ParsedNumber]:
    """When figures are stated for different years, keep those of the question's one year."""
    if len(intent.years) != 1:
        return pool
    tags = [year_tag(n, text) for n in pool]
    asked = [n for n, tag in zip(pool, tags, strict=True) if tag == intent.years[0]]
    other = [n for n, tag in zip(pool, tags, strict=True) if tag not in (None, intent.years[0])]
    return asked if asked and other else pool


def _after_last_equals(pool: list[ParsedNumber], text: str) -> ParsedNumber | None:
    """In "a / b = c", the figure after the last "=" between candidates (not "(= a / b)")."""
    signs = [m.start() for m in _EQUALS.finditer(text, pool[0].end, pool[-1].start)
             if not text[:m.start()].rstrip().endswith("(")]
    if not signs:
        return None
    return next((n for n in pool if n.start > signs[-1]), None)


def _quoted(number: ParsedNumber, intent: QuestionIntent) -> bool:
    return any(abs(number.value - q) <= 1e-9 * max(1.0, abs(q)) for q in intent.quoted)


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
            and not _same_value(number, chosen) and not _operand(number, text)
            and not _other_year(number, chosen, text))


def _sprayed(chosen: ParsedNumber, in_span: list[ParsedNumber], text: str) -> list[ParsedNumber]:
    """Distinct same-kind values offered with ``chosen`` in a hedge or a bare list."""
    rivals = [n for n in in_span if _alternative(n, chosen, text)]
    if not rivals:
        return []
    if any(hedged(text[max(0, min(n.start, chosen.start) - 30):max(n.end, chosen.end)])
           for n in rivals):
        return rivals
    group = [n for n in in_span if _kind_group(n) == _kind_group(chosen)]
    listed = all(_LIST_SEPARATOR.match(text[a.end:b.start])
                 for a, b in zip(group, group[1:], strict=False))
    return rivals if listed and len(group) >= 2 else []


def _hedged_elsewhere(chosen: ParsedNumber, candidates: list[ParsedNumber], text: str,
                      segment: str) -> list[ParsedNumber]:
    """Without a commitment: values offered in other hedged sentences ("It might be ...")."""
    if not HEDGE_WORDS.search(segment):
        return []
    chosen_sentence = _sentence_bounds(text, chosen.start)
    rivals = []
    for number in candidates:
        bounds = _sentence_bounds(text, number.start)
        if bounds != chosen_sentence and _alternative(number, chosen, text) and hedged(
                text[bounds[0]:bounds[1]]):
            rivals.append(number)
    return rivals

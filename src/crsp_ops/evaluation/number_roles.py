"""Numbers in an answer that are not answers: years, references, dates, counts, wrong-kind rates.

"In FY2019, per Note 7 on page 54 of the 10-K, the 3 segments earned $1,577 million" states
one answer; the rest locate or count it. A year or a count stays a candidate when the question
asks for one ("In which year ...", "How many ...") or the gold is a year. On a percent
question, a rate stated as a change ("revenue grew 9.4%") does not answer a level (a margin, a
share), and a rate stated as a share ("18.4% of total revenue") does not answer a change.
"""

from __future__ import annotations

import re

from crsp_ops.evaluation.numbers import ParsedNumber
from crsp_ops.evaluation.question_units import QuestionIntent

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


# A rate stated as a change ("grew 9.4%", "up 22.5%", "a 3% increase") or as a share
# ("18.4% of total revenue"): not the answer to a question about the other kind of rate.
_CHANGE_BEFORE = re.compile(
    r"(?<!made\s)(?<!make\s)(?<!makes\s)\b(?:up|down|grew|grows|rose|rises|fell|falls|increased|"
    r"decreased|declined|jumped|dropped|climbed|gained|improved|expanded|contracted|narrowed|"
    r"widened|(?:an?\s+)?(?:increase|decrease|decline|rise|drop|growth|gain|improvement|"
    r"change)\s+of)\s+(?:by\s+)?(?:about\s+|approximately\s+|roughly\s+|nearly\s+)?$",
    re.IGNORECASE,
)
_CHANGE_AFTER = re.compile(
    r"^\s*(?:increase|decrease|decline|growth|rise|drop|gain|higher|lower|"
    r"year[- ]over[- ]year|yoy)\b", re.IGNORECASE)
_SHARE_AFTER = re.compile(r"^\s+of\s+(?:the\s+|its\s+|total\s+|net\s+)*[a-z]", re.IGNORECASE)


def rate_role_reason(number: ParsedNumber, text: str, intent: QuestionIntent) -> str:
    """Why a rate is the wrong kind for the question ("" when it fits or is not a rate).

    >>> from crsp_ops.evaluation.numbers import find_numbers
    >>> text = "Revenue grew 9.4%; the margin was 8.0%, or 8.0% of sales."
    >>> intent = QuestionIntent(percent=True)
    >>> [rate_role_reason(n, text, intent) for n in find_numbers(text)]
    ['a change, not the asked rate', '', '']
    """
    if number.kind not in ("percent", "bps") or not intent.percent:
        return ""
    before, after = text[max(0, number.start - 40):number.start], text[number.end:number.end + 30]
    stated_change = bool(_CHANGE_BEFORE.search(before) or _CHANGE_AFTER.match(after))
    if not intent.asks_change and stated_change:
        return "a change, not the asked rate"
    if intent.asks_change and not stated_change and _SHARE_AFTER.match(after):
        return "a share, not the asked change"
    return ""


def skip_reason(number: ParsedNumber, text: str, intent: QuestionIntent, *,
                gold_is_year: bool = False) -> str:
    """Why ``number`` is not a candidate answer ("" when it is one).

    >>> from crsp_ops.evaluation.numbers import find_numbers
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
    return rate_role_reason(number, text, intent)

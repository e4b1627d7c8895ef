"""Numbers in an answer that are not answers: years, references, dates and counts.

"In FY2019, per Note 7 on page 54 of the 10-K, the 3 segments earned $1,577 million" states
one answer; the rest locate or count it. A year or a count stays a candidate when the question
asks for one ("In which year ...", "How many ...") or the gold is a year.
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
    return ""

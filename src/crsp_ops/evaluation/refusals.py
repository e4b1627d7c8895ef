"""Refusals and hedges: answers that decline to commit must never be graded correct.

Shared by numeric and text gold. A refusal ("the information is not available in the provided
context") counts even when the answer quotes numbers around it, unless the answer goes on to
commit to a figure after a contrast ("but", "however") or after a partial refusal ("not
separately disclosed; ... total $57 million"). A hedge joins several distinct
candidate values ("10% or 12%", "between 10% and 12%", "it might be ...").
"""

from __future__ import annotations

import re

_REFUSAL = re.compile(
    r"\b(?:"
    r"(?:is|are|was|were)\s+not\s+(?:explicitly\s+|directly\s+|separately\s+)?"
    r"(?:available|provided|disclosed|mentioned|stated|given|specified|reported)"
    r"|(?:does|do|did)\s*(?:not|n't)\s+(?:explicitly\s+|directly\s+)?"
    r"(?:contain|provide|include|disclose|mention|specify|state|give|report)"
    r"|not\s+(?:enough|sufficient)\s+(?:information|data|details|context)"
    r"|insufficient\s+(?:information|data|details|context)"
    r"|(?:cannot|can\s*not|can't|could\s*not|couldn't|unable\s+to|impossible\s+to|"
    r"not\s+possible\s+to)\s+(?:be\s+)?(?:determine|calculate|compute|answer|find|provide|"
    r"derive|verify|identify|confirm|say|tell)"
    r"|no\s+(?:information|data|figures?|details)\s+(?:is\s+|are\s+)?(?:available|provided|given)"
    r"|i\s+(?:do\s+not|don't)\s+(?:know|have)"
    r"|i(?:'m|\s+am)\s+(?:not\s+(?:sure|certain)|unsure|uncertain)"
    r"|(?:would|will)\s+need\s+(?:more|additional|the\s+full|access)"
    r"|not\s+(?:available|provided|disclosed)\s+in\s+the"
    r")",
    re.IGNORECASE,
)
_CONTRAST = re.compile(
    r"\b(?:but|however|though|although|nevertheless|nonetheless|instead|that\s+said|still|"
    r"we\s+can|can\s+be\s+(?:computed|calculated|derived))\b",
    re.IGNORECASE,
)
# Refusals that decline the whole question; the others ("does not specify X") can be caveats.
_FIRM = re.compile(
    r"\b(?:cannot|can\s*not|can't|could\s*not|couldn't|unable\s+to|impossible\s+to|"
    r"not\s+possible\s+to|insufficient|not\s+(?:enough|sufficient)|i\s+(?:do\s+not|don't)|"
    r"i(?:'m|\s+am)\s+not|(?:would|will)\s+need)\b",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[;\n]|[.!?](?=\s)")
_PARTIAL = re.compile(r"\b(?:separately|directly|explicitly)\b", re.IGNORECASE)
HEDGE_WORDS = re.compile(
    r"\b(?:or|either|possibly|perhaps|maybe|might|could|alternatively|somewhere|"
    r"depending|range|ranging|between|unclear|uncertain)\b",
    re.IGNORECASE,
)


def refusal(text: str, *, committed_at: int | None = None, caveats: bool = False) -> str:
    """Return the refusal phrase that stands in ``text`` ("" when there is none).

    A refusal is overruled when a committed figure comes after it (``committed_at``: the
    figure's position in ``text``) and either a contrast word stands between them or the
    refusal is only partial ("not separately", "not directly", "not explicitly"). With
    ``caveats``, a refusal that only says something is not stated ("the document does not
    specify X; net income was $11,588 million") is a caveat when the figure comes in a later
    clause and nothing in ``text`` declines the question outright ("cannot be determined").

    >>> refusal("The 2019 revenue of $1,577 million is given, but 2020 is not disclosed.")
    'is not disclosed'
    >>> refusal("Segments are not disclosed, but totals give $42 million.", committed_at=45)
    ''
    """
    for match in _REFUSAL.finditer(text):
        if committed_at is not None and committed_at > match.end() and (
                _PARTIAL.search(match.group(0))
                or _CONTRAST.search(text, match.end(), committed_at)
                or (caveats and _caveat(text, match, committed_at))):
            continue
        return match.group(0)
    return ""


def _caveat(text: str, match: re.Match, committed_at: int) -> bool:
    return (not _FIRM.search(text) and not _FIRM.search(match.group(0))
            and bool(_CLAUSE_END.search(text, match.end(), committed_at)))


def is_refusal(text: str) -> bool:
    """True when ``text`` declines to answer (see ``refusal``).

    >>> is_refusal("The information is not available in the provided context.")
    True
    >>> is_refusal("Revenue was $4.2 billion.")
    False
    """
    return bool(refusal(text))


def hedged(text: str) -> str:
    """Return the first hedge word in ``text`` ("" when none).

    >>> hedged("It is either 10% or 12%."), hedged("It is 12%.")
    ('either', '')
    """
    match = HEDGE_WORDS.search(text)
    return match.group(0).lower() if match else ""

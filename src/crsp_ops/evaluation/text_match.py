"""Offline grading against text gold ("Yes, ...", a named segment, a short explanation).

Refusals are wrong; yes/no golds need the same polarity; otherwise the gold's key phrase or its
content words (and its key numbers). Free-form gold that needs judgement is the LLM judge's.

Design: docs/design/grading.md#text_match.
"""

from __future__ import annotations

import re
import string

from crsp_ops.evaluation.final_answer import committed_span, strip_reasoning
from crsp_ops.evaluation.numbers import ParsedNumber, find_numbers
from crsp_ops.evaluation.numeric_match import match_rule
from crsp_ops.evaluation.question_units import QuestionIntent
from crsp_ops.evaluation.refusals import refusal

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_POLARITY = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_POLARITY_ANYWHERE = re.compile(r"\b(yes|no)\b(?=[,.;:!]|\s*$)", re.IGNORECASE)
_STOPWORDS = frozenset(
    "a an the of in on for to and or by with as at from is are was were be been its it this that "
    "these those which who whom than then also has have had not no yes company company's fy its "
    "their they than over into per".split()
)
_RUNNER_UP = re.compile(
    r"\b(?:followed\s+by|ahead\s+of|rather\s+than|compared\s+(?:with|to)|versus|vs\.?|"
    r"than|behind|instead\s+of|unlike)\b[^,.;:\n]*", re.IGNORECASE)
_ASIDE = re.compile(r"\([^()]*\)")
LONG_GOLD_COVERAGE = 0.6  # share of a longer gold's content words the answer must contain
_STEM = 5  # letters compared per word


def normalize_text(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace.

    >>> normalize_text("  The Apple, Inc. ")
    'apple inc'
    """
    lowered = text.lower().translate(str.maketrans("", "", string.punctuation))
    return " ".join(_ARTICLES.sub(" ", lowered).split())


def content_words(text: str) -> list[str]:
    """Normalised words that carry meaning (no stopwords, plural "s" dropped).

    >>> content_words("The Cloud Services segments of the company")
    ['cloud', 'service', 'segment']
    """
    words = [w for w in normalize_text(text).split() if w not in _STOPWORDS]
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words if not any(c.isdigit() for c in w)]


def polarity(text: str) -> str:
    """"yes", "no" or "" for the answer's leading (or first stand-alone) yes/no.

    >>> polarity("Yes, it did."), polarity("It did not; no."), polarity("Revenue grew.")
    ('yes', 'no', '')
    """
    match = _POLARITY.search(text) or _POLARITY_ANYWHERE.search(text)
    return match.group(1).lower() if match else ""


def key_numbers(gold: str) -> list[ParsedNumber]:
    """The gold's numbers that an answer must state (years and references aside)."""
    return [n for n in find_numbers(gold) if not n.is_year_like]


def grade_text(answer: str, gold: str, intent: QuestionIntent, *,
               rel_tol: float) -> tuple[bool, str]:
    """Grade ``answer`` against text ``gold``; return ``(is_correct, reasoning)``.

    >>> grade_text("Final answer: Yes, margins improved.", "Yes", QuestionIntent(), rel_tol=0.01)
    (True, "polarity 'yes' matches the gold's")
    """
    want = normalize_text(gold)
    if not want:
        raise ValueError("gold answer is empty after normalisation")
    text = strip_reasoning(answer)
    start, _, how = committed_span(text)
    scope = text[start:] if how else text
    refused = refusal(scope)
    if refused:
        return False, f"the answer refuses ({refused!r})"
    missing = _missing_numbers(scope, gold, intent, rel_tol)
    wanted_polarity = polarity(gold) if _POLARITY.search(gold) else ""
    if wanted_polarity:
        got = polarity(scope) or polarity(text)
        if got and got != wanted_polarity:
            return False, f"polarity {got!r} contradicts the gold's {wanted_polarity!r}"
        if got:
            if missing:
                return False, f"polarity matches but the gold's figures {missing} are missing"
            return True, f"polarity {got!r} matches the gold's"
    return _grade_phrase(scope, gold, missing)


def _grade_phrase(scope: str, gold: str, missing: list[str]) -> tuple[bool, str]:
    if missing:
        return False, f"the gold's figures {missing} are missing from the answer"
    if not _RUNNER_UP.search(gold):  # "Consumer led, followed by Industrial" names Consumer
        scope = _RUNNER_UP.sub(" ", scope)
    if "(" not in gold:  # an aside is not the answer: "EY audited it (KPMG was replaced)"
        scope = _ASIDE.sub(" ", scope)
    got, want = normalize_text(scope), normalize_text(gold)
    if f" {want} " in f" {got} ":
        return True, f"the answer contains the gold phrase {want!r}"
    wanted = {w[:_STEM] for w in content_words(gold)}
    if not wanted:
        return False, f"text answer {got[:80]!r} does not contain the gold {want!r}"
    present = {w[:_STEM] for w in content_words(scope)}
    needed = 1.0 if len(wanted) <= 2 else LONG_GOLD_COVERAGE
    share = len(wanted & present) / len(wanted)
    if share >= needed:
        return True, f"the answer covers {share:.0%} of the gold's key words {sorted(wanted)}"
    return False, (f"the answer covers {share:.0%} of the gold's key words (needs {needed:.0%}): "
                   f"missing {sorted(wanted - present)}")


def _missing_numbers(scope: str, gold: str, intent: QuestionIntent, rel_tol: float) -> list[str]:
    """The gold's key numbers the answer lacks, when too many are lacking (else [])."""
    stated = find_numbers(scope)
    wanted = key_numbers(gold)
    missing = [g.text for g in wanted
               if not any(match_rule(a, g, intent, rel_tol=rel_tol, sign_flip=True)
                          for a in stated)]
    allowed = 0 if len(wanted) <= 2 else len(wanted) // 2
    return missing if len(missing) > allowed else []

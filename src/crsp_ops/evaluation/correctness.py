"""Grade an answer against a gold answer: numeric with a relative tolerance, else text.

``grade`` is the default (no model needed). ``LLMJudge`` asks any OpenAI-compatible endpoint
for a strict JSON verdict ``{is_correct, reasoning}`` instead; the driver picks one by config.

Numeric rules, and why:
- the gold decides the mode: numeric when it is essentially one number (units and scale words
  aside), else normalised text comparison;
- percent vs fraction: "12.5%" matches 0.125 and 12.5 (answers drop the sign or convert);
- scale: when both sides state a scale ("1.2 billion" vs "1,200 million") the scaled values
  must match; when only one does, the unscaled number may match too ("1,577" answering
  "$1,577 million" — financial answers often leave the unit implicit);
- sign: a negative gold matches its magnitude when the answer speaks of a decrease.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from typing import Any

from crsp_ops.evaluation.answer_extraction import (
    ParsedNumber,
    answer_number,
    extract_final_answer,
    find_numbers,
)

_UNIT_WORDS = frozenset(
    "usd us dollars dollar eur euro euros gbp in of approximately about around roughly "
    "thousand thousands million millions billion billions trillion trillions percent per cent "
    "mm mn bn tn k m b".split()
)
_DECREASE = re.compile(r"\b(decreas|declin|drop|fell|fall|lower|loss|reduc|down\b)", re.I)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@dataclass(frozen=True)
class Grade:
    """The verdict on one answer."""

    is_correct: bool
    reasoning: str  # one or two sentences a reviewer (or the reflector) can read


def grade(answer: str, gold: str, *, rel_tol: float) -> Grade:
    """Grade ``answer`` (possibly long, with reasoning) against ``gold``.

    Args:
        answer: the model's full response.
        gold: the reference answer.
        rel_tol: allowed relative error for numeric answers (``|a - g| <= rel_tol * |g|``).

    >>> grade("Revenue fell. Final answer: $1.2 billion", "1,200 million", rel_tol=0.01).is_correct
    True
    >>> grade("The answer is 12%", "12.5%", rel_tol=0.01).is_correct
    False
    """
    if rel_tol < 0:
        raise ValueError(f"rel_tol must be >= 0, got {rel_tol}")
    gold_number = numeric_gold(gold)
    if gold_number is None:
        return _grade_text(answer, gold)
    number, how = answer_number(answer)
    if number is None:
        return Grade(False, f"gold is numeric ({gold_number.text!r}) but the answer has {how}")
    match = _numbers_match(number, gold_number, rel_tol, decrease=bool(_DECREASE.search(answer)))
    verdict = f"matches ({match})" if match else f"differs beyond rel_tol={rel_tol}"
    return Grade(bool(match), f"answer {number.value:g} ({how}) vs gold {gold_number.value:g}: "
                              f"{verdict}")


def numeric_gold(gold: str) -> ParsedNumber | None:
    """Return the gold's number when the gold is essentially one number, else ``None``."""
    numbers = [n for n in find_numbers(gold) if not n.is_year_like] or find_numbers(gold)
    if len(numbers) != 1:
        return None
    rest = gold.replace(numbers[0].text, " ").lower()
    words = [w.strip(string.punctuation + "$€£¥₹") for w in rest.split()]
    leftover = [w for w in words if w and w not in _UNIT_WORDS]
    return numbers[0] if len(leftover) <= 1 else None


def _numbers_match(
    answer: ParsedNumber, gold: ParsedNumber, rel_tol: float, *, decrease: bool
) -> str:
    """Return how the numbers match ("" if they do not)."""
    candidates = [("value", answer.value, gold.value)]
    if answer.has_scale != gold.has_scale:
        candidates.append(("unscaled", answer.raw, gold.raw))
    if gold.is_percent and not answer.is_percent:
        candidates.append(("fraction as percent", answer.value * 100, gold.value))
    if answer.is_percent and not gold.is_percent:
        candidates.append(("percent as fraction", answer.value / 100, gold.value))
    for name, a, g in list(candidates):
        if g < 0 <= a and decrease:
            candidates.append((f"{name}, stated as a decrease", -a, g))
    for name, a, g in candidates:
        if _close(a, g, rel_tol):
            return name
    return ""


def _close(a: float, g: float, rel_tol: float) -> bool:
    return abs(a - g) <= rel_tol * abs(g) if g != 0 else abs(a) <= 1e-12


def normalize_text(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace.

    >>> normalize_text("  The Apple, Inc. ")
    'apple inc'
    """
    lowered = text.lower().translate(str.maketrans("", "", string.punctuation))
    return " ".join(_ARTICLES.sub(" ", lowered).split())


def _grade_text(answer: str, gold: str) -> Grade:
    final, _ = extract_final_answer(answer)
    got, want = normalize_text(final), normalize_text(gold)
    if not want:
        raise ValueError("gold answer is empty after normalisation")
    if got == want:
        return Grade(True, f"text answer {got!r} equals gold {want!r}")
    if got.startswith(want + " "):
        return Grade(True, f"text answer starts with gold {want!r}")
    if len(want.split()) >= 2 and f" {want} " in f" {got} ":
        return Grade(True, f"text answer contains the gold phrase {want!r}")
    return Grade(False, f"text answer {got[:80]!r} does not match gold {want!r}")


JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "is_correct": {"type": "boolean"},
        "reasoning": {"type": "string"},
    },
    "required": ["is_correct", "reasoning"],
    "additionalProperties": False,
}

JUDGE_PROMPT = (
    "You grade answers to financial questions. Decide whether the model's final answer agrees "
    "with the gold answer (same value within {rel_tol:.2%} relative error after units, scale "
    "words and formatting are normalised; same entity or yes/no for non-numeric answers). "
    "Ignore the reasoning's style and length.\n\nQuestion: {question}\n\nGold answer: {gold}\n\n"
    "Model answer:\n{answer}\n\nReply with JSON: {{\"is_correct\": bool, \"reasoning\": str}}."
)


class LLMJudge:
    """Grade answers with an LLM through any OpenAI-compatible chat endpoint.

    Args:
        client: an ``openai.OpenAI`` client (base URL, key, timeout and retries set by caller).
        model: the judge model name.
        rel_tol: numeric tolerance stated to the judge.
    """

    def __init__(self, client: Any, *, model: str, rel_tol: float):
        self.client = client
        self.model = model
        self.rel_tol = rel_tol

    def grade(self, answer: str, gold: str, *, question: str) -> Grade:
        """Ask the judge; raise ``ValueError`` if its reply is not the strict JSON verdict."""
        prompt = JUDGE_PROMPT.format(
            rel_tol=self.rel_tol, question=question, gold=gold, answer=answer
        )
        response = self.client.chat.completions.create(
            model=self.model,
            messages=[{"role": "user", "content": prompt}],
            temperature=0.0,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "grade", "strict": True, "schema": JUDGE_SCHEMA},
            },
        )
        return parse_judge_reply(response.choices[0].message.content)


def parse_judge_reply(content: str | None) -> Grade:
    """Validate a judge reply against ``JUDGE_SCHEMA`` and return the ``Grade``."""
    try:
        data = json.loads(content or "")
    except json.JSONDecodeError as error:
        raise ValueError(f"judge reply is not JSON: {content!r:.200}") from error
    if not isinstance(data, dict) or set(data) != {"is_correct", "reasoning"}:
        raise ValueError(f"judge reply must have exactly is_correct and reasoning: {data!r:.200}")
    if not isinstance(data["is_correct"], bool) or not isinstance(data["reasoning"], str):
        raise ValueError(f"judge reply has wrong types: {data!r:.200}")
    return Grade(data["is_correct"], data["reasoning"])

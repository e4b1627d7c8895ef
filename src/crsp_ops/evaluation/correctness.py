r"""Grade an answer against a gold answer, as a financial analyst would; or ask an LLM judge.

``grade`` is the default (deterministic, no model needed); ``LLMJudge`` asks any
OpenAI-compatible endpoint for a strict JSON verdict under the same rules.

Design: docs/design/grading.md#correctness.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass, replace
from typing import Any

from crsp_ops.evaluation.final_answer import AnswerChoice, choose_answer
from crsp_ops.evaluation.numbers import ParsedNumber, find_numbers, number_text
from crsp_ops.evaluation.numeric_match import match_rule, stated_changes
from crsp_ops.evaluation.question_units import QuestionIntent, question_intent
from crsp_ops.evaluation.sentences import sentence_bounds
from crsp_ops.evaluation.text_match import grade_text, normalize_text

__all__ = ["JUDGE_PROMPT", "JUDGE_SCHEMA", "Grade", "LLMJudge", "grade", "normalize_text",
           "numeric_gold", "parse_judge_reply"]

_UNIT_WORDS = frozenset(
    "usd us dollars dollar eur euro euros gbp in of approximately about around roughly "
    "thousand thousands million millions billion billions trillion trillions percent per cent "
    "mm mn bn tn k m b x times bps basis points point percentage".split()
)
_DECREASE = re.compile(
    r"\b(?:decreas|declin|drop|fell|fall|lower|loss|reduc|shrank|shrink|contract|down\b|negative)",
    re.IGNORECASE,
)
_APPROXIMATE = re.compile(
    r"(?:approximately|approx\.?|about|around|roughly|nearly|almost|close\s+to|~|≈)\s*\S{0,4}$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Grade:
    """The verdict on one answer."""

    is_correct: bool
    reasoning: str  # which figure was taken, why, and the rule that decided


def grade(answer: str, gold: str | float, *, question: str | None = None,
          rel_tol: float) -> Grade:
    """Grade ``answer`` (possibly long, with reasoning) against ``gold`` for ``question``.

    Args:
        answer: the model's full response.
        gold: the reference answer: text ("30.8%", "$1577.00") or a bare number (0.308, 1577),
            as results files and CSV exports store it; both grade alike.
        question: the question asked; its units, scale, precision and direction words set the
            conventions of a bare gold (``None``: none implied).
        rel_tol: allowed relative error for numeric answers (``|a - g| <= rel_tol * |g|``).

    >>> grade("Revenue fell. Final answer: $1.2 billion", "1,200 million", rel_tol=0.01).is_correct
    True
    >>> grade("The answer is 12%", "12.5%", rel_tol=0.01).is_correct
    False
    >>> grade("In FY2019 capex was about $1.6 billion.", "1577",
    ...       question="What was FY2019 capex (in USD millions)?", rel_tol=0.01).is_correct
    True
    >>> grade("It is 10%, 12% or 15%.", "12%", rel_tol=0.01).reasoning
    "several distinct values without a commitment: '10%' with '12%', '15%'"
    """
    if rel_tol < 0:
        raise ValueError(f"rel_tol must be >= 0, got {rel_tol}")
    intent = question_intent(question)
    gold = number_text(gold)
    gold_number = numeric_gold(gold)
    if gold_number is None:
        return Grade(*grade_text(answer, gold, intent, rel_tol=rel_tol))
    if gold_number.is_year_like and (intent.scale or intent.percent) and not intent.asks_year:
        gold_number = replace(gold_number, is_year_like=False)  # 2016 of "(in USD millions)"
    wants_percent = gold_number.kind in ("percent", "bps") or intent.percent or intent.bps
    choice = choose_answer(answer, intent, wants_percent=wants_percent,
                           gold_is_year=gold_number.is_year_like)
    return _grade_choice(choice, gold_number, intent, rel_tol)


def _grade_choice(choice: AnswerChoice, gold: ParsedNumber, intent: QuestionIntent,
                  rel_tol: float) -> Grade:
    if choice.refusal:
        return Grade(False, f"the answer refuses ({choice.refusal!r}); {choice.reason}")
    if choice.number is None:
        return Grade(False, f"gold is numeric ({gold.text!r}) but there is {choice.reason}")
    if choice.rivals:
        others = ", ".join(repr(n.text) for n in choice.rivals)
        return Grade(False, f"several distinct values without a commitment: "
                            f"{choice.number.text!r} with {others}")
    number = choice.number
    sentence = _sentence_around(choice.text, number)
    sign_flip = (gold.raw < 0 < number.raw and bool(_DECREASE.search(sentence))) or (
        number.raw < 0 < gold.raw and intent.asks_decrease)
    approximate = bool(_APPROXIMATE.search(choice.text[max(0, number.start - 25):number.start]))
    rule = match_rule(number, gold, intent, rel_tol=rel_tol, sign_flip=sign_flip,
                      approximate=approximate)
    if not rule and choice.change:  # "went from 45.1% to 41.9%" answers "what was the change"
        for how, change in stated_changes(*choice.change):
            rule = match_rule(change, gold, intent, rel_tol=rel_tol)
            if rule:
                rule = (f"the {how} from {choice.change[0].text!r} to {choice.change[1].text!r}"
                        f" is {change.text}: {rule}")
                break
    verdict = f"matches ({rule})" if rule else f"differs from gold {gold.text!r}"
    return Grade(bool(rule), f"{choice.reason}; {verdict}")


def _sentence_around(text: str, number: ParsedNumber) -> str:
    start, end = sentence_bounds(text, number.start)
    return text[start:end]


def numeric_gold(gold: str | float) -> ParsedNumber | None:
    """Return the gold's number when the gold is essentially one number, else ``None``.

    >>> numeric_gold("$1,577 million").value, numeric_gold("Yes, 12%"), numeric_gold(0.308).raw
    (1577000000.0, None, 0.308)
    """
    gold = number_text(gold)
    numbers = [n for n in find_numbers(gold) if not n.is_year_like] or find_numbers(gold)
    if len(numbers) != 1:
        return None
    rest = gold.replace(numbers[0].text, " ").lower()
    words = [w.strip(string.punctuation + "$€£¥₹") for w in rest.split()]
    leftover = [w for w in words if w and w not in _UNIT_WORDS]
    if any(w in ("yes", "no") for w in leftover):
        return None
    return numbers[0] if len(leftover) <= 1 else None


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
    "You grade answers to financial questions the way a financial analyst would. Decide "
    "whether the model's final answer agrees with the gold answer.\n\n"
    "Rules:\n"
    "1. Judge the answer the model commits to (an <answer> tag, a 'final answer', the figure "
    "it concludes with), not years, page/note/document references, counts or inputs it quotes.\n"
    "2. Units: the question's units apply to a bare gold (\"(in USD millions)\": gold 1577 is "
    "$1,577 million, so \"$1.6 billion\" agrees). Percent, fraction and ratio forms of the "
    "same value agree (24% = 0.24); 100 basis points = 1 percentage point; \"2.5x\" = 2.5.\n"
    "3. Precision: numbers agree within {rel_tol:.2%} relative error, or when they agree at the "
    "coarser of the two precisions (gold 0.01 and answer 1.42% agree at two decimals; gold "
    "25.5 and answer 25.46 agree), or at the precision the question asks for.\n"
    "4. Sign: \"a decrease of 3.2%\" and \"(3.2)\" mean -3.2.\n"
    "5. An answer that refuses or says the information is unavailable is incorrect, even if "
    "it quotes numbers; so is one listing several candidate values without committing to "
    "one.\n"
    "6. Non-numeric gold: the same entity, the same yes/no and the gold's key facts and "
    "figures.\n"
    "Ignore the reasoning's style and length.\n\nQuestion: {question}\n\n"
    "Gold answer: {gold}\n\nModel answer:\n{answer}\n\n"
    "Reply with JSON: {{\"is_correct\": bool, \"reasoning\": str}}."
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

    def grade(self, answer: str, gold: str, *, question: str | None = None) -> Grade:
        """Ask the judge; raise ``ValueError`` if its reply is not the strict JSON verdict."""
        prompt = JUDGE_PROMPT.format(
            rel_tol=self.rel_tol, question=question or "(not given)", gold=gold, answer=answer
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

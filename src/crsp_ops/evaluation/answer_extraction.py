r"""Pull the final answer text out of a long response (the simple, marker-only view).

``extract_final_answer`` drops ``<think>`` reasoning and keeps what follows the last
final-answer marker ("Final answer:", "The answer is", ``\boxed{}``...). Number parsing lives
in ``evaluation.numbers`` (``find_numbers`` is re-exported here); the grader's committed-answer
selection, which also skips years, references and quoted inputs, is ``evaluation.final_answer``.
"""

from __future__ import annotations

import re

from crsp_ops.evaluation.numbers import ParsedNumber, find_numbers

__all__ = ["ParsedNumber", "answer_number", "extract_final_answer", "find_numbers"]

_MARKERS = re.compile(
    r"(?:final\s+answer\s*(?:is)?\s*[:：]?|the\s+(?:final\s+)?answer\s+is\s*[:：]?|"
    r"\banswer\s*[:：]|\btherefore,?\s+the\s+\w+(?:\s+\w+)?\s+(?:is|was|were)\b)",
    re.IGNORECASE,
)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")


def extract_final_answer(response: str) -> tuple[str, bool]:
    r"""Return ``(final answer text, found_marker)`` from a possibly long response.

    Reasoning inside ``<think>...</think>`` is dropped; then the content of the last
    ``\boxed{}`` wins, else the text after the last final-answer marker (up to a blank line),
    else the whole remaining text with ``found_marker`` False.

    >>> extract_final_answer("<think>maybe 3</think>So... The answer is $4.2 million.")
    ('$4.2 million.', True)
    """
    text = response.rsplit("</think>", 1)[-1].strip()
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip(), True
    markers = list(_MARKERS.finditer(text))
    if not markers:
        return text, False
    tail = text[markers[-1].end() :].strip()
    return tail.split("\n\n", 1)[0].strip(), True


def answer_number(response: str) -> tuple[ParsedNumber | None, str]:
    """Pick the number a response answers with, and say how it was chosen.

    After a final-answer marker, the first number that is not a bare year; without one, the
    last number of the response.
    """
    final, found_marker = extract_final_answer(response)
    numbers = find_numbers(final)
    if not numbers:
        return None, "no number in the final answer"
    if found_marker:
        candidates = [n for n in numbers if not n.is_year_like] or numbers
        return candidates[0], f"first number after the final-answer marker: {candidates[0].text!r}"
    return numbers[-1], f"last number of the response: {numbers[-1].text!r}"

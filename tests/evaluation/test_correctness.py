"""``grade``: every answer format, each with a correct and an incorrect case."""

from __future__ import annotations

import pytest

from crsp_ops.evaluation.correctness import Grade, grade, normalize_text, numeric_gold

CASES = [
    # (format, answer, gold, expected)
    ("plain", "The answer is 42", "42", True),
    ("plain", "The answer is 41", "42", False),
    ("currency", "Final answer: $1,234.5", "$1,234.50", True),
    ("currency", "Final answer: $1,334.5", "$1,234.50", False),
    ("currency code", "€5,000", "EUR 5000", True),
    ("currency code", "€5,500", "EUR 5000", False),
    ("thousands separators", "The answer is 1,234,567", "1234567", True),
    ("thousands separators", "The answer is 1,334,567", "1234567", False),
    ("parentheses negative", "The answer is (1,234)", "-1234", True),
    ("parentheses negative", "The answer is (1,234)", "1234", False),
    ("percent", "The answer is 12.5%", "12.5%", True),
    ("percent", "The answer is 12%", "12.5%", False),
    ("fraction for percent", "The answer is 0.125", "12.5%", True),
    ("fraction for percent", "The answer is 0.13", "12.5%", False),
    ("percent for fraction", "The answer is 12.5 percent", "0.125", True),
    ("percent for fraction", "The answer is 15 percent", "0.125", False),
    ("scale words", "Revenue was $1.2 billion.", "$1,200 million", True),
    ("scale words", "Revenue was $1.2 billion.", "$1,200 thousand", False),
    ("short scale", "Revenue was $3.5M in total", "3,500,000", True),
    ("short scale", "Revenue was $3.5K in total", "3,500,000", False),
    ("unit phrase", "Answer: 1,577 (in USD millions)", "$1,577 million", True),
    ("unit phrase", "Answer: 1,577 (in USD thousands)", "$1,577 million", False),
    ("implicit unit", "Answer: 1,577", "$1,577 million", True),
    ("implicit unit", "Answer: 1,620", "$1,577 million", False),
    ("decrease", "Operating margin decreased by 3.1%", "-3.1%", True),
    ("decrease", "Operating margin increased by 3.1%", "-3.1%", False),
    ("long reasoning", "We compute 3 * 4 = 12. Then add 30 to get 42.", "42", True),
    ("long reasoning", "We compute 3 * 4 = 12. Then add 30 to get 43.", "42", False),
    ("think block", "<think>maybe 99 or 2019</think>The answer is $42.", "42", True),
    ("think block", "<think>it is 42</think>The answer is $99.", "42", False),
    ("year in answer", "In FY2023... Final answer: in 2023 it was $4.2 billion", "$4.2 billion", True),
    ("year in answer", "Final answer: in 2023 it was $4.9 billion", "$4.2 billion", False),
    ("boxed", r"So \boxed{17}.", "17", True),
    ("boxed", r"So \boxed{18}.", "17", False),
    ("zero", "The answer is 0", "0", True),
    ("zero", "The answer is 0.0001", "0", False),
    ("no number", "I cannot tell.", "42", False),
    ("text", "The answer is Apple Inc.", "apple inc", True),
    ("text", "The answer is Microsoft", "Apple Inc.", False),
    ("yes/no", "Final answer: Yes, the company is profitable.", "Yes", True),
    ("yes/no", "Final answer: No.", "Yes", False),
    ("text phrase", "Final answer: the largest segment is cloud services revenue", "Cloud services", True),
    ("text phrase", "Final answer: the largest segment is devices", "Cloud services", False),
]


@pytest.mark.parametrize(("fmt", "answer", "gold", "expected"), CASES, ids=[
    f"{c[0]}-{'right' if c[3] else 'wrong'}" for c in CASES
])
def test_grade_formats(fmt, answer, gold, expected):
    result = grade(answer, gold, rel_tol=0.01)
    assert isinstance(result, Grade)
    assert result.is_correct is expected, result.reasoning
    assert result.reasoning


def test_every_format_has_both_outcomes():
    outcomes = {}
    for fmt, *_, expected in CASES:
        outcomes.setdefault(fmt, set()).add(expected)
    assert [fmt for fmt, found in outcomes.items() if found != {True, False}] == ["no number"]


def test_tolerance_is_relative_to_gold():
    assert grade("Final answer: 101", "100", rel_tol=0.01).is_correct
    assert not grade("Final answer: 101.5", "100", rel_tol=0.01).is_correct
    assert grade("Final answer: 101.5", "100", rel_tol=0.02).is_correct
    with pytest.raises(ValueError):
        grade("1", "1", rel_tol=-0.1)


def test_gold_mode_detection():
    assert numeric_gold("$1,577 million").value == 1577e6
    assert numeric_gold("approximately 12.5%").value == 12.5
    assert numeric_gold("Apple Inc.") is None
    assert numeric_gold("Revenue grew in 2021 because of strong iPhone sales") is None
    assert normalize_text("  The  Apple, Inc. ") == "apple inc"

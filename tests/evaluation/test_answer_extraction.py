"""Final-answer extraction and number parsing."""

from __future__ import annotations

import pytest

from crsp_ops.evaluation.answer_extraction import answer_number, extract_final_answer, find_numbers


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("Long reasoning about 12 and 14.\nFinal answer: 42", ("42", True)),
        ("Thinking... The answer is $3.2 million.\n\nLet me know more.", ("$3.2 million.", True)),
        ("Answer: first. Later... Answer: second", ("second", True)),
        ("<think>The answer is 1</think>The final answer is 2", ("2", True)),
        (r"so \boxed{\frac{1}{2}} then The answer is 7", (r"\frac{1}{2}", True)),
        ("Therefore, the net income is $5 million.", ("$5 million.", True)),
        ("No marker at all, just 5 and 6", ("No marker at all, just 5 and 6", False)),
    ],
)
def test_extract_final_answer(response, expected):
    assert extract_final_answer(response) == expected


@pytest.mark.parametrize(
    ("text", "value", "is_percent", "has_scale"),
    [
        ("$1,234,567.89", 1234567.89, False, False),
        ("(1,234)", -1234.0, False, False),
        ("-$5", -5.0, False, False),
        ("$-5", -5.0, False, False),
        ("−7.5", -7.5, False, False),
        ("12.5%", 12.5, True, False),
        ("12.5 percent", 12.5, True, False),
        ("(3.2%)", -3.2, True, False),
        ("1.2 billion", 1.2e9, False, True),
        ("$3.5M", 3.5e6, False, True),
        ("4.1bn", 4.1e9, False, True),
        ("12k", 12e3, False, True),
        ("2 thousand", 2e3, False, True),
        ("US$7 trillion", 7e12, False, True),
        ("€.5", 0.5, False, False),
    ],
)
def test_find_numbers_formats(text, value, is_percent, has_scale):
    (number,) = find_numbers(text)
    assert number.value == pytest.approx(value)
    assert (number.is_percent, number.has_scale) == (is_percent, has_scale)


def test_unit_phrase_scales_unscaled_numbers_only():
    numbers = find_numbers("Revenue (in USD millions): 1,577, margin 12%, capex 2 billion")
    assert [n.value for n in numbers] == [1577e6, 12.0, 2e9]
    assert numbers[0].raw == 1577.0


def test_ranges_identifiers_and_years():
    assert [n.value for n in find_numbers("2019-2020")] == [2019.0, 2020.0]
    assert find_numbers("FY2023 and Q4") == []
    (year,) = find_numbers("in 2021")
    assert year.is_year_like
    (money,) = find_numbers("$2021")
    assert not money.is_year_like


def test_answer_number_prefers_marker_then_last_number():
    number, how = answer_number("We had 10 then 20.\nFinal answer: in 2023 it was $30 million")
    assert number.value == 30e6 and "marker" in how
    number, how = answer_number("We had 10 then 20 and finally 35")
    assert number.value == 35 and "last number" in how
    assert answer_number("Final answer: unknown")[0] is None

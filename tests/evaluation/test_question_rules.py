"""Question intent, refusals and the numeric matching rules, each on its own."""

from __future__ import annotations

import pytest

from crsp_ops.evaluation.numbers import find_numbers, round_half_up, significant_digits
from crsp_ops.evaluation.numeric_match import match_rule
from crsp_ops.evaluation.question_units import question_intent, requested_decimals
from crsp_ops.evaluation.refusals import hedged, is_refusal, refusal


@pytest.mark.parametrize(
    ("question", "field", "value"),
    [
        ("What was capex (in USD millions)?", "scale", 1e6),
        ("What was revenue in USD billions?", "scale", 1e9),
        ("Net income (in thousands)?", "scale", 1e3),
        ("What was revenue?", "scale", None),
        ("What is the gross margin?", "percent", True),
        ("Answer as a percentage.", "percent", True),
        ("What was total debt?", "percent", False),
        ("By how many basis points did it change?", "bps", True),
        ("By how much did costs decrease?", "asks_decrease", True),
        ("How many segments are there?", "asks_count", True),
        ("In which year did the deal close?", "asks_year", True),
        ("Revenue of 500 and cost of 300: margin?", "quoted", (500.0, 300.0)),
    ],
)
def test_question_intent(question, field, value):
    assert getattr(question_intent(question), field) == value


@pytest.mark.parametrize(
    ("text", "decimals"),
    [("Round to two decimal places.", 2), ("rounded to 1 decimal place", 1),
     ("to the nearest whole number", 0), ("nearest tenth", 1), ("nearest cent", 2),
     ("What was revenue?", None)],
)
def test_requested_decimals(text, decimals):
    assert requested_decimals(text) == decimals


@pytest.mark.parametrize(
    ("answer", "gold", "question", "matches"),
    [
        ("1.42%", "0.01", "Round to two decimal places.", True),  # gold coarser
        ("25.46", "25.5", None, True),
        ("26.46", "25.5", None, False),
        ("2.3", "2", "Round to the nearest whole number.", True),
        ("2.3", "2", None, False),  # whole-number gold: only when asked
        ("$1.6 billion", "1577", "(in USD millions)", True),  # answer coarser, larger unit
        ("$2 billion", "1577", "(in USD millions)", False),  # one significant digit
        ("$1,577 thousand", "1577", "(in USD millions)", False),
        ("0.24", "24.0", "What is the margin in percent?", True),
        ("24", "0.24", None, False),  # no percent intent: a bare 24 is not 0.24
        ("50 bps", "0.5%", None, True),
        ("0.5%", "50", "How many basis points?", True),
        ("2.5x", "2.5", None, True),
        ("2019", "2018", None, False),  # years are exact
    ],
)
def test_match_rules(answer, gold, question, matches):
    (a,), (g,) = find_numbers(answer), find_numbers(gold)
    assert bool(match_rule(a, g, question_intent(question), rel_tol=0.01)) is matches


def test_sign_flip_needs_a_stated_direction():
    (a,), (g,) = find_numbers("3.2%"), find_numbers("-3.2%")
    assert not match_rule(a, g, question_intent(None), rel_tol=0.01)
    assert "sign" in match_rule(a, g, question_intent(None), rel_tol=0.01, sign_flip=True)


@pytest.mark.parametrize(
    "text",
    ["The information is not available in the provided context.",
     "I cannot determine capex from the excerpt.", "There is insufficient information.",
     "The filing does not disclose segment revenue.", "I don't know."],
)
def test_refusals(text):
    assert is_refusal(text)


@pytest.mark.parametrize(
    "text", ["Revenue was $5 million.", "The company does not have any debt, so the ratio is 0.",
             "Segment data is not available for 2019 restated."[:0] or "Margins improved."],
)
def test_not_refusals(text):
    assert not is_refusal(text)


def test_partial_refusal_followed_by_a_figure_is_overruled():
    text = "Advertising is not separately provided; selling costs total $57 million."
    assert refusal(text) and not refusal(text, committed_at=text.index("$57"))
    assert hedged("perhaps 57") == "perhaps" and hedged("57") == ""


def test_number_precision_helpers():
    assert significant_digits("1,600") == 2 and significant_digits("0.0120") == 3
    assert round_half_up(2.675, 2) == 2.68 and round_half_up(-0.0153, 2) == -0.02
    (dash,) = find_numbers("Yes - $500 million")
    assert dash.value == 500e6  # a dash and a space is punctuation, not a sign


def test_a_percent_question_reads_a_bare_gold_as_fraction_or_percent():
    """Issue 27: a bare gold of a percent question may be stored as 0.308 or as 30.8."""
    intent = question_intent("Revenue change (in units of percents, round to one decimal place)?")
    for answer in ("30.8%", "0.308", "30.8"):
        for gold in ("0.308", "30.8"):
            (a,), (g,) = find_numbers(answer), find_numbers(gold)
            assert match_rule(a, g, intent, rel_tol=0.01), (answer, gold)
    (a,), (g,) = find_numbers("3.1%"), find_numbers("0.308")
    assert not match_rule(a, g, intent, rel_tol=0.01)
    # The requested decimals count in percent, not on the fraction: 8.0% is not 0.094.
    (a,), (g,) = find_numbers("8.0%"), find_numbers("0.094")
    assert not match_rule(a, g, intent, rel_tol=0.01)
    # An amount is never a rate: "$30.8 million" does not answer 0.308.
    (a,), (g,) = find_numbers("$30.8 million"), find_numbers("0.308")
    assert not match_rule(a, g, intent, rel_tol=0.01)


def test_uncertainty_is_a_refusal_unless_a_contrast_commits():
    assert is_refusal("I'm not sure. Possibly $1,577 million.")
    text = "I am not certain, but the answer is $1,577 million."
    assert not refusal(text, committed_at=text.index("$"))

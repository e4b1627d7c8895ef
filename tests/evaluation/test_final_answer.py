"""Committed-figure selection: which number an answer commits to, and which it skips."""

from __future__ import annotations

import pytest

from crsp_ops.evaluation.final_answer import choose_answer, committed_span, strip_reasoning
from crsp_ops.evaluation.question_units import question_intent

PLAIN = question_intent(None)


@pytest.mark.parametrize(
    ("response", "question", "taken", "how"),
    [
        ("Work: 10 + 20.<answer>$31 million</answer>", None, 31e6, "<answer> tag"),
        (r"So \boxed{17} it is; 18 was wrong.", None, 17, r"\boxed{}"),
        ("Inputs 5 and 7. Final answer: 12 (5 + 7).", None, 12, "final-answer marker"),
        ("Revenue was 100 and cost 60; margin is approximately 40.", None, 40, "committed by"),
        ("We had 10 then 20 and finally 35.", None, 10, "last sentence"),
        ("Revenue grew from $4,512 million to $4,843 million.", "FY2022 revenue?", 4843e6,
         "last sentence"),
        ("Revenue rose 7.3%, from 4,512 to 4,843.", "What was revenue growth?", 7.3,
         "last sentence"),
        ("Gross margin = 2,000 / 5,000 = 40%.", None, 40, "last sentence"),
        ("Final answer: 40% (= 2,000 / 5,000).", None, 40, "final-answer marker"),
        ("Per Note 12 on page 54 of the 10-K, in 2021 the 3 segments earned $88.", None, 88,
         "last sentence"),
        ("The ratio of 8 to 2 is 4.", "What is the ratio of 8 to 2?", 4, "last sentence"),
        ("As of December 31, 2022, cash was $3,210 million.", None, 3210e6, "last sentence"),
        ("The company reported 4 segments.", "How many segments are there?", 4, "last sentence"),
        ("It closed in fiscal 2019 for $1.2 billion.", "In which year did it close?", 2019,
         "last sentence"),
    ],
)
def test_the_committed_figure_is_taken(response, question, taken, how):
    wants_percent = taken in (7.3, 40)  # those cases' golds are rates
    choice = choose_answer(response, question_intent(question), wants_percent=wants_percent)
    assert choice.number is not None, choice.reason
    assert choice.number.value == pytest.approx(taken)
    assert choice.commitment.startswith(how)
    assert repr(choice.number.text) in choice.reason and not choice.rivals


@pytest.mark.parametrize(
    "response",
    ["It could be 10%, 12% or 15%.", "10%, 11%, 12%, 13%", "Between 10% and 15%.",
     "Final answer: either 12 or 13.", "It might be 4,980. It might also be 5,120."],
)
def test_several_values_without_commitment_are_rivals(response):
    assert choose_answer(response, PLAIN).rivals


@pytest.mark.parametrize(
    "response",
    ["Revenue was $1,577 million (or $1.577 billion).", "Margin was 40% versus 35% a year ago.",
     "$1,577 million, or 12% of total revenue."],
)
def test_restatements_and_comparisons_are_not_spraying(response):
    assert not choose_answer(response, PLAIN).rivals


def test_years_and_references_alone_give_no_figure():
    choice = choose_answer("See fiscal 2021 and 2022 in the 10-K, Item 7.", PLAIN)
    assert choice.number is None
    assert "'2021' (a year)" in choice.reason and "reference" in choice.reason


def test_reasoning_blocks_are_ignored():
    assert strip_reasoning("<think>it is 4</think>It is 5.") == "It is 5."
    assert strip_reasoning("half a thought</think>It is 5.") == "It is 5."
    choice = choose_answer("<think>maybe 4,980 or 5,210</think>It was $5,120 million.", PLAIN)
    assert choice.number.value == 5120e6 and not choice.rivals


def test_refusal_after_the_figure_stands_and_before_a_contrast_does_not():
    refused = choose_answer("I cannot answer this. The excerpt mentions $5,120 million.", PLAIN)
    assert refused.refusal
    overruled = choose_answer("Capex is not disclosed directly, but purchases of PP&E were "
                              "$640 million.", PLAIN)
    assert not overruled.refusal and overruled.number.value == 640e6


def test_committed_span_without_marker_is_empty():
    assert committed_span("Revenue was 5.") == (0, 0, "")


def test_the_asked_year_picks_among_figures_of_several_years():
    text = "PP&E purchases were $1,373 million in 2017 and $1,577 million in 2018."
    for year, value in (("2018", 1577e6), ("2017", 1373e6)):
        choice = choose_answer(text, question_intent(f"What was FY{year} capex?"))
        assert choice.number.value == value and not choice.rivals


def test_markdown_after_the_marker_is_skipped():
    choice = choose_answer("Work...\n\n**Final Answer**\n\n$1,577 million", PLAIN)
    assert choice.number.value == 1577e6 and choice.commitment == "final-answer marker"


def test_a_change_question_keeps_the_from_to_pair():
    choice = choose_answer("Gross margin went from 45.1% to 41.9%.",
                           question_intent("What was the change in gross margin?"),
                           wants_percent=True)
    assert choice.change is not None
    assert [n.value for n in choice.change] == [45.1, 41.9]


def test_expression_inputs_and_rounded_restatements_are_not_rivals():
    choice = choose_answer("Turnover = 66,608 / 9,648 ≈ 6.904, or about 6.90 when rounded.",
                           PLAIN)
    assert choice.number.value == 6.904 and not choice.rivals

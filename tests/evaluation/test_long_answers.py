"""Issue 27's classes, one rule each: long answers graded as reviewers grade them."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

from crsp_ops.evaluation.correctness import grade
from crsp_ops.evaluation.numbers import number_text
from crsp_ops.evaluation.refusals import refusal

PCT = "What was the FY2020 change in sales (in units of percents, round to one decimal place)?"
MLN = "What was FY2020 capex (in USD millions)?"
CASES = [
    # (rule, question, gold, answer, correct)
    ("fraction gold, percent answer", PCT, 0.152, "Sales rose 15.2%.", True),
    ("fraction gold, wrong percent", PCT, 0.152, "Sales rose 12.5%.", False),
    ("precision counts in percent", PCT, 0.152, "Sales rose 15.6%.", False),
    ("an amount is not a rate", PCT, 0.152, "Sales rose by $15.2 million.", False),
    ("restated in a larger unit", MLN, "$2,904.00",
     "Capex was $2,904 million, or $2.904 billion.", True),
    ("restated rounded", "What is the FY2020 asset turnover?", "3.27",
     "Asset turnover = 3.27, or 3.30 rounded.", True),
    ("two values are still spraying", MLN, "$2,904.00",
     "Capex was $2,904 million or $3,150 million.", False),
    ("the year in the conclusion is skipped", MLN, 2904,
     "Capex in 2019 was $2,610 million. Therefore, capex for fiscal year 2020 was $2,904 million.",
     True),
    ("the last computed result", "What is the FY2020 ROE (in percents)?", "9.6%",
     "So the average equity is $5,000 million. ROE = 480 / 5,000 = 0.096, or 9.6%.", True),
    ("raw dollars on a millions question", MLN, 2904, "Capex was $2,904,180,000.", True),
    ("a caveat, then the figure", MLN, 2904,
     "The filing does not specify capex by segment; total capex was $2,904 million.", True),
    ("a caveat, then another year's figure", MLN, 2904,
     "The filing does not provide FY2020 capex; for FY2019 it was $2,904 million.", False),
    ("a refusal that declines outright", MLN, 2904,
     "Capex is not disclosed, so it cannot be determined; total assets were $2,904 million.",
     False),
    ("one rounding step", "What is the FY2020 operating margin (in percents)?", "6.4%",
     "Operating margin = 315 / 5,000 = 6.3%.", True),
    ("two rounding steps", "What is the FY2020 operating margin (in percents)?", "6.4%",
     "Operating margin = 310 / 5,000 = 6.2%.", False),
    ("no step on a whole-number gold", "How many days is the DSO?", "42", "DSO is 41 days.", False),
    ("a zero is not a small gold", PCT, 0.003, "Sales were flat, a change of 0.", False),
    ("a year-like amount", MLN, 2016, "Capex for fiscal year 2020 was $2,016 million.", True),
    ("the compared figure is not the answer", "What is the FY2020 gross margin (in percents)?",
     0.412, "So the gross margin is 41.2%, which is above the sector average of 38.0%.", True),
    ("a closing comparison is an aside", "What is the FY2020 gross margin (in percents)?",
     0.412, "Gross margin = 1,236 / 3,000 = 41.2%. For comparison, peers = 380 / 1,000 = 38.0%.",
     True),
    ("a change does not answer a level", "What is the FY2020 gross margin (in percents)?",
     0.094, "Gross profit was $512 million, and revenue grew 9.4% over the prior year.", False),
    ("a share does not answer a change", PCT, 0.184,
     "Sales were $2,960 million, representing 18.4% of group revenue.", False),
    ("an amount change does not answer a percent change", PCT, 0.184,
     "Sales rose from $2,500 million in FY2019 to $2,960 million in FY2020, up $460 million.",
     False),
    ("a refusal, then another year's figure", MLN, 2904,
     "FY2020 capex is not separately disclosed; the FY2019 figure was $2,904 million.", False),
    ("a parenthesis after a figure restates it", "What is the FY2020 payout (in percents)?",
     0.642, "Dividends over earnings give a payout ratio of 0.642 (64.2%).", True),
    ("a range is not a commitment", "What is the FY2020 ROIC (in percents)?", "11.3%",
     "ROIC is around 11% to 12%.", False),
    ("a closing 'higher than' sentence is an aside", "What is the FY2020 margin (in percents)?",
     "14.3%", "Margin = 1,430 / 10,000 = 14.3%. This is higher than the 12.9% of FY2019.", True),
    ("each year's rate gives the change", "What was the FY2019 to FY2020 change in gross margin "
     "(in percentage points)?", -0.012, "Gross margin was 34.5% in FY2019 and 33.3% in FY2020.",
     True),
    ("'made up' is not 'up'", PCT, 0.065, "Loans made up 6.5% of total assets.", False),
    ("a stated total concludes", MLN, 642,
     "Current capex was $512 million and other capex was $130 million, for a total of $642 million.",
     True),
    ("'i.e.' does not end the sentence of the direction", "What was the FY2020 change in "
     "operating margin (in basis points)?", -120,
     "Operating margin fell from 15.4% to 14.2%, i.e. by 1.2 percentage points.", True),
    ("a change in basis points is not the level", "What is the FY2020 gross margin (in percents)?",
     0.415, "Gross margin improved by 41.5 basis points compared with last year.", False),
]


@pytest.mark.parametrize("rule, question, gold, answer, correct", CASES,
                         ids=[case[0] for case in CASES])
def test_issue_27_rules(rule, question, gold, answer, correct):
    verdict = grade(answer, gold, question=question, rel_tol=0.01)
    assert verdict.is_correct is correct, verdict.reasoning
    # The same gold as text grades the same.
    assert grade(answer, number_text(gold), question=question,
                 rel_tol=0.01).is_correct is correct


def test_number_text_rejects_what_is_not_a_gold():
    with pytest.raises(TypeError):
        number_text(True)
    with pytest.raises(TypeError):
        number_text(None)


def test_a_caveat_needs_a_later_clause():
    text = "The filing does not specify the split; net income was $42 million."
    assert refusal(text, committed_at=text.index("$"), caveats=True) == ""
    assert refusal(text, committed_at=text.index("$")) == "does not specify"


def test_the_grading_page_examples_run():
    page = Path(__file__).resolve().parents[2] / "docs" / "grading.md"
    assert doctest.testfile(str(page), module_relative=False).failed == 0


def test_exact_callers_get_no_rounding_step():
    """The CRSP math reward grades with rel_tol=1e-6: math truths are exact."""
    assert grade("Operating margin = 6.3%.", "6.4%", rel_tol=0.01).is_correct
    assert not grade("x = 6.3", "6.4", rel_tol=1e-6).is_correct

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import pytest

from crsp_ops.data.answer_format import format_percent, format_ratio, format_usd_millions
from crsp_ops.data.financebench import (
    load_financebench,
    parse_financebench_row,
    render_question_prompt,
    split_pool_heldout,
)
from crsp_ops.data.financebench_synthetic import generate_financebench_examples

FACT = re.compile(
    r"([A-Z][a-z ]+?) (?:was|were) \$([\d,]+) million in fiscal (\d{4}), "
    r"compared with \$([\d,]+) million in fiscal (\d{4})\."
)


def _round_half_up(value: Fraction, places: int) -> Fraction:
    scaled = abs(value) * 10**places
    rounded = math.floor(scaled + Fraction(1, 2))
    return Fraction(rounded if value >= 0 else -rounded, 10**places)


def _money(value: Fraction) -> str:
    rounded = _round_half_up(value, 2)
    sign = "-" if rounded < 0 else ""
    whole, cents = divmod(abs(rounded) * 100, 100)
    return f"{sign}${int(whole):,}.{int(cents):02d} million"


def _fixed(value: Fraction, places: int) -> str:
    rounded = _round_half_up(value, places)
    sign = "-" if rounded < 0 else ""
    whole, frac = divmod(abs(rounded) * 10**places, 10**places)
    return f"{sign}{int(whole)}.{int(frac):0{places}d}"


def expected_answer(example) -> str:
    """Recompute the answer from the evidence passage and the question text alone."""
    facts = {
        label.lower(): (Fraction(cur.replace(",", "")), Fraction(prev.replace(",", "")))
        for label, cur, _, prev, _ in FACT.findall(example.evidence_passage)
    }
    question = example.question
    label = next(
        (name for name in sorted(facts, key=len, reverse=True) if f"'s {name} " in question),
        None,
    )
    margin = re.search(r"\((.+) divided by revenue\)", question)
    if margin:
        return _fixed(facts[margin.group(1)][0] / facts["revenue"][0] * 100, 1) + "%"
    if "asset turnover" in question:
        return _fixed(facts["revenue"][0] / facts["total assets"][0], 2)
    current, previous = facts[label]
    if question.startswith("By how much"):
        return _money(current - previous)
    if "percentage change" in question:
        return _fixed((current - previous) / previous * 100, 1) + "%"
    return _money(current)


def _kind(question: str) -> str:
    if "divided by revenue" in question:
        return "margin"
    if "asset turnover" in question:
        return "turnover"
    if question.startswith("By how much"):
        return "difference"
    return "percent change" if "percentage change" in question else "extraction"


def test_synthetic_answers_are_right_from_the_evidence():
    examples = generate_financebench_examples(count=400, seed=3)
    kinds = set()
    for example in examples:
        assert example.answer == expected_answer(example), example
        kinds.add(_kind(example.question))
        assert example.company and example.doc_name.endswith("_10K")
        assert example.evidence[0].evidence_text == example.evidence_passage
    assert kinds == {"extraction", "difference", "percent change", "margin", "turnover"}
    assert len({e.financebench_id for e in examples}) == 400
    assert {e.question_reasoning for e in examples} == {
        "Information extraction",
        "Numerical reasoning",
    }
    # Negative changes are formatted with a leading minus, as the grader expects.
    assert any(e.answer.startswith("-$") for e in examples)
    assert any(e.answer.endswith("%") for e in examples)


def test_synthetic_is_seeded():
    first = generate_financebench_examples(count=10, seed=5)
    assert first == generate_financebench_examples(count=10, seed=5)
    assert first != generate_financebench_examples(count=10, seed=6)


def test_rows_round_trip_through_the_real_schema():
    for example in generate_financebench_examples(count=5, seed=0):
        row = json.loads(json.dumps(example.to_row()))
        assert set(row) >= {
            "financebench_id",
            "company",
            "doc_name",
            "question_type",
            "question_reasoning",
            "question",
            "answer",
            "justification",
            "evidence",
        }
        assert set(row["evidence"][0]) >= {"evidence_text", "doc_name", "evidence_page_num"}
        assert parse_financebench_row(row) == example


def _real_row(**overrides):
    row = {
        "financebench_id": "financebench_id_03029",
        "company": "3M",
        "doc_name": "3M_2018_10K",
        "question_type": "metrics-generated",
        "question_reasoning": "Information extraction",
        "domain_question_num": None,
        "question": "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
        "answer": "$1577.00",
        "justification": "The metric capital expenditures was directly extracted.",
        "dataset_subset_label": "OPEN_SOURCE",
        "evidence": [
            {
                "evidence_text": "Purchases of property, plant and equipment (PP&E) (1,577)",
                "doc_name": "3M_2018_10K",
                "evidence_page_num": 59,
                "evidence_text_full_page": "full page text",
            }
        ],
    }
    row.update(overrides)
    return row


def test_local_file_in_real_schema_skips_and_counts_bad_rows(tmp_path):
    rows = [
        _real_row(),
        _real_row(financebench_id="b", question_reasoning=None, justification=None),
        _real_row(financebench_id="c", evidence=[]),
        _real_row(financebench_id="d", evidence=[{"doc_name": "x"}]),
        _real_row(financebench_id="e", answer=1577.0),
        _real_row(financebench_id="h", answer=0.308),
        _real_row(financebench_id="i", answer=True),
        _real_row(financebench_id="f", evidence=[{"evidence_text": "t", "evidence_page_num": "9"}]),
        {k: v for k, v in _real_row(financebench_id="g").items() if k != "question"},
    ]
    path = tmp_path / "financebench_open_source.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    result = load_financebench(str(path), synthetic_count=1, seed=0)
    assert [r.financebench_id for r in result.rows] == ["financebench_id_03029", "b", "e", "h"]
    assert [r.answer for r in result.rows[2:]] == ["1577", "0.308"]  # bare numeric gold, as text
    assert result.rows[1].question_reasoning == ""
    assert result.rows[0].evidence[0].evidence_page_num == 59
    assert result.n_skipped == 6
    assert result.skipped_reasons["field 'evidence' must be a non-empty list"] == 1
    assert result.skipped_reasons["missing field 'evidence_text'"] == 1
    assert result.skipped_reasons["field 'answer' is bool, expected str or a number"] == 1
    assert result.skipped_reasons["missing field 'question'"] == 1


def test_no_valid_row_missing_file_and_duplicates(tmp_path):
    bad = tmp_path / "fb.jsonl"
    bad.write_text(json.dumps(_real_row(answer=None)) + "\n")
    with pytest.raises(ValueError, match="fb.jsonl"):
        load_financebench(str(bad), synthetic_count=1, seed=0)
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        load_financebench(str(tmp_path / "missing.jsonl"), synthetic_count=1, seed=0)
    dup = tmp_path / "dup.jsonl"
    dup.write_text((json.dumps(_real_row()) + "\n") * 2)
    with pytest.raises(ValueError, match="duplicate financebench_id"):
        load_financebench(str(dup), synthetic_count=1, seed=0)


def test_pool_heldout_split_is_deterministic_and_disjoint():
    rows = list(range(50))
    pool, heldout = split_pool_heldout(rows, heldout_size=10, seed=1)
    assert (pool, heldout) == split_pool_heldout(rows, heldout_size=10, seed=1)
    assert len(heldout) == 10 and sorted(pool + heldout) == rows
    assert pool == sorted(pool) and heldout == sorted(heldout)  # source order kept
    assert heldout != split_pool_heldout(rows, heldout_size=10, seed=2)[1]
    assert split_pool_heldout(rows, heldout_size=0, seed=1) == (rows, [])
    for size in (-1, 50):
        with pytest.raises(ValueError, match="heldout_size"):
            split_pool_heldout(rows, heldout_size=size, seed=1)


def test_prompt_carries_the_evidence():
    example = generate_financebench_examples(count=1, seed=0)[0]
    template = "Context:\n{evidence}\n\nQuestion: {question}"
    prompt = render_question_prompt(example, template=template)
    assert example.evidence_passage in prompt and example.question in prompt


@pytest.mark.parametrize(
    ("formatter", "value", "expected"),
    [
        (format_usd_millions, "1577", "$1,577.00 million"),
        (format_usd_millions, "-26.005", "-$26.01 million"),
        (format_usd_millions, "-0.001", "$0.00 million"),
        (format_percent, "24.45", "24.5%"),
        (format_percent, "-0.04", "0.0%"),
        (format_ratio, "0.125", "0.13"),
    ],
)
def test_answer_formats(formatter, value, expected):
    from decimal import Decimal

    assert formatter(Decimal(value)) == expected


def test_max_revenue_sets_the_scale_of_every_stated_figure():
    def figures(rows):
        return [int(value.replace(",", "")) for row in rows
                for fact in FACT.findall(row.evidence_passage) for value in (fact[1], fact[3])]

    small = generate_financebench_examples(count=200, seed=5, max_revenue=300)
    assert max(figures(small)) <= 3 * 300 * 1.3 and min(figures(small)) >= 1
    default = figures(generate_financebench_examples(count=200, seed=5))
    assert max(default) > 10_000  # the default keeps figures of up to five digits
    assert load_financebench("synthetic", synthetic_count=200, seed=5,
                             max_revenue=300).rows == tuple(small)
    with pytest.raises(ValueError, match="max_revenue must be >= 180"):
        generate_financebench_examples(count=1, seed=0, max_revenue=100)

"""The grader against the project's analyst-labelled answers (``grader_cases.jsonl``), and
against the batches labelled blind (``batches/*.jsonl``: labelled and committed before the
grader ever saw them; ``batches/first_run.json`` keeps each batch's first-run agreement)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsp_ops.evaluation.agreement import (
    agreement_report,
    cohens_kappa,
    load_cases,
    naive_any_number,
)
from crsp_ops.evaluation.correctness import grade, numeric_gold
from crsp_ops.evaluation.numbers import find_numbers

CASES_FILE = Path(__file__).with_name("grader_cases.jsonl")
BATCHES = Path(__file__).with_name("batches")
FAMILIES = {
    "gold_rounded_coarser", "wrong_number_picked", "question_units", "percent_fraction_ratio",
    "sign_convention", "refusal_hedge", "text_gold", "adversarial", "plain",
}


@pytest.fixture(scope="module")
def cases():
    return load_cases(CASES_FILE)


@pytest.fixture(scope="module")
def batches():
    return {path.stem: load_cases(path) for path in sorted(BATCHES.glob("*.jsonl"))}


def _grade(case):
    return grade(case.answer, case.gold, question=case.question, rel_tol=0.01)


def _failures(cases):
    return [f"[{c.family}] gold={c.gold!r} answer={c.answer!r} analyst={c.analyst_correct} "
            f"grader: {_grade(c).reasoning}" for c in cases
            if _grade(c).is_correct != c.analyst_correct]


def test_the_labelled_set_covers_every_family_both_ways(cases):
    assert len(cases) >= 150
    verdicts: dict[str, set[bool]] = {}
    for case in cases:
        assert case.question and case.gold and case.answer
        verdicts.setdefault(case.family, set()).add(case.analyst_correct)
    assert set(verdicts) == FAMILIES
    assert all(found == {True, False} for found in verdicts.values()), verdicts


def test_the_adversarial_shapes_are_present(cases):
    """Number spraying, years only, and a refusal quoting the gold's figure."""
    wrong = [c for c in cases if not c.analyst_correct]
    spraying = [c for c in wrong if len({n.value for n in find_numbers(c.answer)}) >= 3
                and naive_any_number(c.answer, c.gold)]
    years_only = [c for c in wrong if find_numbers(c.answer)
                  and all(n.is_year_like for n in find_numbers(c.answer))]
    refusal_with_number = [c for c in wrong if c.family in ("refusal_hedge", "adversarial")
                           and numeric_gold(c.gold) and naive_any_number(c.answer, c.gold)]
    assert len(spraying) >= 3 and len(years_only) >= 2 and len(refusal_with_number) >= 3


def test_grader_agrees_with_the_analysts(cases):
    failures = _failures(cases)
    agreement = 1 - len(failures) / len(cases)
    assert agreement >= 0.98, "\n".join(failures)


def test_every_blind_batch_has_its_first_run_recorded(batches):
    record = json.loads((BATCHES / "first_run.json").read_text(encoding="utf-8"))
    assert set(record) == set(batches)
    for name, batch in batches.items():
        assert record[name]["n"] == len(batch)
        assert record[name]["first_run_agreed"] / len(batch) == pytest.approx(
            record[name]["first_run_agreement"], abs=1e-4)


def test_grader_agrees_on_the_blind_batches(batches):
    every = [case for batch in batches.values() for case in batch]
    failures = _failures(every)
    assert len(every) >= 200 and 1 - len(failures) / len(every) >= 0.98, "\n".join(failures)


def test_a_bare_number_gold_grades_like_the_dataset_string(batches):
    """Each blind case is stored twice: gold as the dataset's string, then as a bare number."""
    for batch in batches.values():
        for text, bare in zip(batch[::2], batch[1::2], strict=True):
            assert isinstance(text.gold, str) and isinstance(bare.gold, (int, float))
            assert (text.question, text.answer) == (bare.question, bare.answer)
            assert _grade(text).is_correct == _grade(bare).is_correct, (text.gold, bare.gold)


def test_the_naive_anchor_is_clearly_below(cases):
    report = agreement_report(cases, {
        "grader": lambda c: _grade(c).is_correct,
        "naive": lambda c: naive_any_number(c.answer, c.gold),
    })
    assert report["naive"]["agreement"] <= report["grader"]["agreement"] - 0.1
    assert report["grader"]["kappa"] >= 0.95
    assert sum(f["cases"] for f in report["families"].values()) == len(cases)


def test_reasoning_names_the_number_taken(cases):
    for case in cases:
        if numeric_gold(case.gold) is None:
            continue
        reasoning = _grade(case).reasoning
        named = ("took '", "no candidate", "refuses", "several distinct values")
        assert any(phrase in reasoning for phrase in named), reasoning


def test_cohens_kappa_and_bad_case_files(tmp_path):
    assert cohens_kappa([True, False], [True, False]) == 1.0
    assert cohens_kappa([True, False, True, False], [False, True, False, True]) == -1.0
    with pytest.raises(ValueError):
        cohens_kappa([], [])
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"family": "plain", "question": "q", "gold": "1", "answer": "1"}\n')
    with pytest.raises(ValueError, match="cases.jsonl:1"):
        load_cases(bad)
    bad.write_text('{"family": "plain", "question": "q", "gold": "1", "answer": "1", '
                   '"analyst_correct": "yes"}\n')
    with pytest.raises(ValueError, match="true or false"):
        load_cases(bad)
    bad.write_text('{"family": "plain", "question": "q", "gold": true, "answer": "1", '
                   '"analyst_correct": true}\n')
    with pytest.raises(ValueError, match="string or a number"):
        load_cases(bad)

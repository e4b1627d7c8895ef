"""How well a grader agrees with human labels: agreement, Cohen's kappa, and a naive anchor.

The anchor is the matcher a grader must beat: "any number in the answer within 1% of the
gold's number" (numeric gold), or "the normalised gold appears in the answer" (text gold). It
rewards number spraying and refusals that quote the right figure, which is why it is the floor.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from crsp_ops.evaluation.numbers import find_numbers, number_text
from crsp_ops.evaluation.text_match import normalize_text

NAIVE_REL_TOL = 0.01


@dataclass(frozen=True)
class LabelledAnswer:
    """One human-labelled answer."""

    family: str  # the failure family the case exercises
    question: str
    gold: str | float  # the dataset's answer string, or a bare number as results files store it
    answer: str
    analyst_correct: bool  # the verdict a financial analyst gives, from the question's meaning


def load_cases(path: Path) -> list[LabelledAnswer]:
    """Read a JSONL file of labelled answers (one object per line, every field required).

    Raises:
        ValueError: a line that is not such an object (its number is named).
    """
    cases = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            case = LabelledAnswer(**row)
        except (json.JSONDecodeError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a labelled answer ({error})") from error
        if isinstance(case.gold, bool) or not isinstance(case.gold, (str, int, float)):
            raise ValueError(f"{path}:{number}: gold must be a string or a number")
        if not isinstance(case.analyst_correct, bool):
            raise ValueError(f"{path}:{number}: analyst_correct must be true or false")
        cases.append(case)
    return cases


def naive_any_number(answer: str, gold: str | float) -> bool:
    """The anchor: any number of the answer within 1% of the gold's (text gold: containment).

    >>> naive_any_number("It could be 10, 12 or 15", "12"), naive_any_number("No.", "Yes")
    (True, False)
    """
    gold = number_text(gold)
    gold_numbers = find_numbers(gold)
    if len(gold_numbers) == 1:
        target = gold_numbers[0].value
        return any(abs(n.value - target) <= NAIVE_REL_TOL * abs(target) if target else n.value == 0
                   for n in find_numbers(answer))
    return f" {normalize_text(gold)} " in f" {normalize_text(answer)} "


def cohens_kappa(labels: Sequence[bool], predictions: Sequence[bool]) -> float:
    """Cohen's kappa of two binary raters (1.0 when both are constant and equal).

    >>> cohens_kappa([True, True, False, False], [True, False, False, False])
    0.5
    """
    if len(labels) != len(predictions) or not labels:
        raise ValueError("need two equally long, non-empty label sequences")
    n = len(labels)
    observed = sum(a == b for a, b in zip(labels, predictions, strict=True)) / n
    p_label, p_pred = sum(labels) / n, sum(predictions) / n
    expected = p_label * p_pred + (1 - p_label) * (1 - p_pred)
    return 1.0 if expected == 1.0 else (observed - expected) / (1 - expected)


def agreement_report(cases: Sequence[LabelledAnswer],
                     graders: dict[str, Callable[[LabelledAnswer], bool]]) -> dict:
    """Agreement and kappa of each grader with the labels, overall and per family.

    Returns:
        ``{"cases": n, "<name>": {"agreement", "kappa"}, ..., "families": {family: {"cases",
        "<name>_agree"...}}}``.
    """
    labels = [case.analyst_correct for case in cases]
    report: dict = {"cases": len(cases)}
    families: dict[str, dict[str, int]] = {}
    for case in cases:
        families.setdefault(case.family, {"cases": 0})["cases"] += 1
    for name, grader in graders.items():
        verdicts = [bool(grader(case)) for case in cases]
        agree = [v == label for v, label in zip(verdicts, labels, strict=True)]
        report[name] = {"agreement": round(sum(agree) / len(cases), 4),
                        "kappa": round(cohens_kappa(labels, verdicts), 4)}
        for case, ok in zip(cases, agree, strict=True):
            counts = families[case.family]
            counts[f"{name}_agree"] = counts.get(f"{name}_agree", 0) + int(ok)
    report["families"] = families
    return report

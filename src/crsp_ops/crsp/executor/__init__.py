"""Sandboxed execution of proposed programs: never in the trainer's own process."""

from crsp_ops.crsp.executor.ast_guard import find_violations
from crsp_ops.crsp.executor.jobs import (
    ExecutionJob,
    ExecutionResult,
    ExecutionStatus,
    SandboxLimits,
)
from crsp_ops.crsp.executor.pool import SandboxExecutor
from crsp_ops.crsp.executor.sandbox import run_once

__all__ = [
    "ExecutionJob", "ExecutionResult", "ExecutionStatus", "SandboxExecutor", "SandboxLimits",
    "find_violations", "run_once",
]

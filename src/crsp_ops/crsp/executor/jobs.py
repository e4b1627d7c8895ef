"""Records the sandboxed executor takes and returns."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass


class ExecutionStatus(str, enum.Enum):
    """How one sandboxed run ended; only ``OK`` carries trustworthy outputs."""

    OK = "ok"
    TIMEOUT = "timeout"  # killed at the wall-clock limit (or the CPU-time rlimit fired)
    MEMORY = "memory"  # MemoryError under the address-space rlimit
    ERROR = "error"  # the program raised, has a syntax error, or defines no ``f``
    BANNED = "banned"  # rejected by the AST check or stopped by the runtime audit hook
    NONDETERMINISTIC = "nondeterministic"  # two fresh runs gave different outputs
    OUTPUT_TOO_LARGE = "output_too_large"  # a result repr or printed text exceeded the cap
    CRASHED = "crashed"  # the interpreter died without reporting (signal, rlimit kill)


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run (no defaults: values come from the config)."""

    timeout_s: float  # wall-clock limit; the process group is SIGKILLed past it
    memory_mb: int  # RLIMIT_AS of the child interpreter
    max_file_size_mb: float  # RLIMIT_FSIZE: largest file the child may write
    max_processes: int  # RLIMIT_NPROC (not enforced for root: the audit hook blocks forks)
    max_output_chars: int  # longest result repr (and printed text) kept before rejecting

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be a positive number, got {self.timeout_s}")
        if self.memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64 (the interpreter needs it), got "
                             f"{self.memory_mb}")
        if self.max_file_size_mb <= 0:
            raise ValueError(f"max_file_size_mb must be > 0, got {self.max_file_size_mb}")
        if self.max_processes < 1:
            raise ValueError(f"max_processes must be >= 1, got {self.max_processes}")
        if self.max_output_chars < 16:
            raise ValueError(f"max_output_chars must be >= 16, got {self.max_output_chars}")
        if self.max_file_size_mb * 2**20 < 8 * self.max_output_chars:
            # The child's report is a file too: it must fit an escaped repr at the cap.
            raise ValueError(f"max_file_size_mb={self.max_file_size_mb} cannot hold a report of "
                             f"{self.max_output_chars} chars; raise it or lower max_output_chars")

    @property
    def cpu_seconds(self) -> int:
        """CPU-time rlimit: a backstop one second beyond the wall-clock limit."""
        return int(math.ceil(self.timeout_s)) + 1


@dataclass(frozen=True)
class ExecutionJob:
    """A program defining ``f`` and the literal argument strings to call it with."""

    program: str  # Python source defining a function ``f``
    inputs: tuple[str, ...]  # each a literal argument list, e.g. "[1, 2], 3" -> f([1, 2], 3)


@dataclass(frozen=True)
class ExecutionResult:
    """Outcome of one job: a status, the ``repr`` of each result, and why it failed."""

    status: ExecutionStatus
    outputs: tuple[str, ...]  # repr(f(*args)) per input, up to the first failure (truncated)
    detail: str = ""  # error type and message, banned construct, or kill reason
    duration_s: float = 0.0  # wall-clock time of the slowest run

    @property
    def ok(self) -> bool:
        """True when the program ran cleanly and deterministically on every input."""
        return self.status is ExecutionStatus.OK

"""How to run and probe one OpenAI-compatible inference server (``ServerManager``'s config)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerConfig:
    """How to run and probe one server."""

    base_url: str  # root URL, e.g. "http://127.0.0.1:8000" (no "/v1")
    command: tuple[str, ...] | None = None  # argv to launch; None = already running elsewhere
    health_path: str = "/health"  # GET path that answers 200 once the server can serve
    startup_timeout_s: float = 600.0  # how long one start may take to become healthy
    health_interval_s: float = 0.5  # pause between health probes
    health_request_timeout_s: float = 5.0  # timeout of one health probe
    max_restarts: int = 2  # restarts allowed over the manager's lifetime
    stop_grace_s: float = 15.0  # SIGTERM → SIGKILL delay
    log_path: str | None = None  # server stdout+stderr; None = a fresh temporary file
    env: Mapping[str, str] | None = None  # extra environment variables for the command
    cwd: str | None = None  # working directory of the command
    state_path: str | None = None  # JSON recording the running child (in the output directory)

    def __post_init__(self) -> None:
        if self.command is not None:
            object.__setattr__(self, "command", tuple(str(arg) for arg in self.command))
            if not self.command:
                raise ValueError("command is empty: give the server argv, or None if it runs")
        if not self.health_path.startswith("/"):
            raise ValueError(f"health_path must start with '/', got {self.health_path!r}")
        if self.startup_timeout_s <= 0 or self.health_interval_s <= 0:
            raise ValueError("startup_timeout_s and health_interval_s must be > 0")
        if self.max_restarts < 0 or self.stop_grace_s < 0:
            raise ValueError("max_restarts and stop_grace_s must be >= 0")

    @property
    def health_url(self) -> str:
        """The full URL of the health endpoint."""
        return self.base_url.rstrip("/") + self.health_path


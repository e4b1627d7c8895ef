"""Start, health-check, restart and stop an OpenAI-compatible inference server.

The server leads its own process group, stopped on exit, error or SIGTERM; a start never trusts
a port it did not open. ``command=None`` only checks an already running server.

Design: docs/design/inference.md#server_manager.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from crsp_ops.atomic_io import atomic_write_json
from crsp_ops.errors import InUseError, RunFailure
from crsp_ops.inference.port_owner import (
    ServerRecord,
    describe_holder,
    listener_pids,
    owned_by_tree,
    port_is_listening,
)
from crsp_ops.inference.process_group import launch_group, stop_group, terminate_group
from crsp_ops.inference.server_config import ServerConfig

logger = logging.getLogger(__name__)


class ServerStartupError(RunFailure):
    """The server exited or never became healthy while starting."""


class ServerDiedError(RunFailure):
    """The server died and could not be restarted (restart budget spent or not owned)."""


class PortInUseError(InUseError):
    """Another process listens on the port the server is to use (the CLI exits 2)."""


def probe_health(url: str, timeout_s: float) -> bool:
    """Return True when ``GET url`` answers 200 (connection errors and other codes are False)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (loopback)
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def read_log_tail(path: str | os.PathLike | None, max_lines: int = 40) -> str:
    """Return the last ``max_lines`` lines of a log file ('' if it is missing)."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-max_lines:])


class ServerManager:
    """Own one server process: start it, wait for health, restart it if it dies, stop it.

    Thread-safe: backend worker threads may call :meth:`ensure_running` concurrently after a
    failed request; one of them restarts the server, the others find it healthy again.

    Example:
        >>> config = ServerConfig("http://127.0.0.1:8000", command=("vllm", "serve", "m"))
        >>> with ServerManager(config) as server:  # doctest: +SKIP
        ...     backend = OpenAIServerBackend(settings, server=server)
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.restarts = 0
        self._process: subprocess.Popen | None = None
        self._lock = threading.RLock()
        self._log_path = Path(config.log_path) if config.log_path else None

    # ---------------------------------------------------------------- queries
    @property
    def owns_process(self) -> bool:
        """True when the manager launches the server (False in "already running" mode)."""
        return self.config.command is not None

    @property
    def pid(self) -> int | None:
        """Pid (= process group id) of the running server, or None."""
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path | None:
        """File holding the server's stdout and stderr (None until first start)."""
        return self._log_path

    def is_alive(self) -> bool:
        """True while the owned process runs (always True in "already running" mode)."""
        if not self.owns_process:
            return True
        return self._process is not None and self._process.poll() is None

    def is_healthy(self) -> bool:
        """One health probe."""
        return probe_health(self.config.health_url, self.config.health_request_timeout_s)

    def log_tail(self, max_lines: int = 40) -> str:
        """Last lines of the server log, for error messages."""
        return read_log_tail(self._log_path, max_lines)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> ServerManager:
        """Launch the server (if owned) and block until it is healthy.

        Raises:
            ServerStartupError: the process exited during startup, or health did not answer 200
                within ``startup_timeout_s`` (the process is then stopped). The message carries
                the log tail.
        """
        with self._lock:
            if self.owns_process:
                if self.is_alive():
                    return self
                self._launch()
            self._wait_healthy()
        return self

    def ensure_running(self) -> bool:
        """Make sure the server is up; restart it if the owned process died or hangs.

        Returns:
            True when a restart happened.

        Raises:
            ServerDiedError: it died and the restart budget is spent, or it is not ours to
                restart and does not become healthy within ``startup_timeout_s``.
            ServerStartupError: the restart itself failed.
        """
        with self._lock:
            deadline = time.monotonic() + self.config.startup_timeout_s
            if not self.owns_process:
                if self._poll_health_until(deadline):
                    return False
                raise ServerDiedError(
                    f"server at {self.config.health_url} is not healthy and is not owned "
                    "by this manager, so it cannot be restarted"
                )
            if self.is_alive() and self._poll_health_until(deadline):
                return False
            # Dead, or alive but unhealthy for a whole startup timeout (hung): restart.
            code = self._process.poll() if self._process is not None else None
            tail = self.log_tail()
            if self.restarts >= self.config.max_restarts:
                self._reap()
                raise ServerDiedError(
                    f"server down (exit code {code}) and the restart budget "
                    f"({self.config.max_restarts}) is spent; log {self._log_path}:\n{tail}"
                )
            self.restarts += 1
            logger.warning(
                "server down (exit code %s); restart %d/%d. Log tail:\n%s",
                code, self.restarts, self.config.max_restarts, tail,
            )
            self._reap()
            self._launch()
            self._wait_healthy()
            return True

    def stop(self) -> None:
        """Stop the owned server and every process in its group. Safe to call twice."""
        with self._lock:
            self._reap()

    def __enter__(self) -> ServerManager:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- internals
    def _launch(self) -> None:
        self._clear_port()
        if self._log_path is None:
            handle, name = tempfile.mkstemp(prefix="crsp-server-", suffix=".log")
            os.close(handle)
            self._log_path = Path(name)
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        self._process = launch_group(self.config.command, self._log_path, env=self.config.env,
                                     cwd=self.config.cwd)
        _register(self)
        self._record(ServerRecord.of(self._process.pid, self.config.command, self._port()[1]))
        logger.info(
            "started server pid %d: %s (log %s)",
            self._process.pid, " ".join(self.config.command), self._log_path,
        )

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        if self._poll_health_until(deadline):
            if self.owns_process:
                self._confirm_listener()
            return
        if self.owns_process and not self.is_alive():
            code = self._process.returncode
            tail = self.log_tail()
            self._reap()
            raise ServerStartupError(
                f"server exited with code {code} during startup: "
                f"{' '.join(self.config.command)}\nlog {self._log_path}:\n{tail}"
            )
        tail = self.log_tail()
        self._reap()
        raise ServerStartupError(
            f"server not healthy at {self.config.health_url} after "
            f"{self.config.startup_timeout_s:.1f}s (health_path={self.config.health_path!r}, "
            f"startup_timeout_s={self.config.startup_timeout_s}); log {self._log_path}:\n{tail}"
        )

    def _poll_health_until(self, deadline: float) -> bool:
        while True:
            if self.is_healthy():
                return True
            if self.owns_process and not self.is_alive():
                return False
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(self.config.health_interval_s, max(0.0, deadline - time.monotonic())))

    def _reap(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        code = terminate_group(process, self.config.stop_grace_s)
        _unregister(self)
        self._record(None)
        logger.info("stopped server pid %d (exit code %s)", process.pid, code)

    def _port(self) -> tuple[str, int]:
        parts = urlsplit(self.config.base_url)
        return parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)

    def _record(self, record: ServerRecord | None) -> None:
        """Write (or, with ``None``, remove) the record of the running child."""
        if self.config.state_path is None:
            return
        if record is None:
            Path(self.config.state_path).unlink(missing_ok=True)
        else:
            atomic_write_json(self.config.state_path, record.to_dict())

    def _clear_port(self) -> None:
        """Stop a recorded server a dead run left; refuse a port someone else listens on.

        Raises:
            PortInUseError: a process this manager did not record listens on the port.
        """
        self._stop_recorded_server()
        host, port = self._port()
        if port_is_listening(host, port):
            raise PortInUseError(
                f"{describe_holder(port)}: stop it, or set generation.base_url to a free port"
            )

    def _stop_recorded_server(self) -> None:
        if self.config.state_path is None or not Path(self.config.state_path).is_file():
            return
        try:
            data = json.loads(Path(self.config.state_path).read_text(encoding="utf-8"))
            record = ServerRecord.from_dict(data)
        except (OSError, ValueError, KeyError, TypeError):
            record = None
        if record is not None and record.is_alive():
            # Its run is dead: whoever holds the output directory's lock is its only writer.
            logger.warning("stopping server pid %d left running by an earlier run: %s",
                           record.pid, " ".join(record.command))
            stop_group(record.pid, self.config.stop_grace_s)
            host, _ = self._port()
            deadline = time.monotonic() + 5.0
            while port_is_listening(host, record.port) and time.monotonic() < deadline:
                time.sleep(0.05)
        self._record(None)

    def _confirm_listener(self) -> None:
        """Raise unless the process answering on the port is our child or one of its workers."""
        _, port = self._port()
        known = {pid for pid in listener_pids(port) if pid is not None}
        if known and not owned_by_tree(known, self._process.pid):
            self._reap()
            raise PortInUseError(f"{describe_holder(port)}, not by the server started here")


# ------------------------------------------------------------- last-resort cleanup
# Managers with a live process; stopped at interpreter exit and on SIGTERM so that a killed
# driver never leaves a GPU server behind.
_LIVE: weakref.WeakSet[ServerManager] = weakref.WeakSet()
_HOOKS_INSTALLED = False
_HOOKS_LOCK = threading.Lock()


def _register(manager: ServerManager) -> None:
    _LIVE.add(manager)
    _install_hooks()


def _unregister(manager: ServerManager) -> None:
    _LIVE.discard(manager)


def _kill_all_live(grace_s: float | None = None) -> None:
    for manager in list(_LIVE):
        process = manager._process
        if process is not None:
            terminate_group(process, manager.config.stop_grace_s if grace_s is None else grace_s)
    _LIVE.clear()


def _install_hooks() -> None:
    global _HOOKS_INSTALLED
    with _HOOKS_LOCK:
        if _HOOKS_INSTALLED:
            return
        _HOOKS_INSTALLED = True
        atexit.register(_kill_all_live)
        # Signal handlers can only be set from the main thread; only replace the default
        # SIGTERM action (a user's own handler stays in charge).
        if threading.current_thread() is threading.main_thread() and (
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, frame: object) -> None:
    # No locks here: the interrupted main thread may hold a manager's lock.
    _kill_all_live(grace_s=5.0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free a moment ago (for launching a local server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


__all__: Sequence[str] = (
    "PortInUseError",
    "ServerDiedError",
    "ServerManager",
    "ServerStartupError",
    "free_port",
    "probe_health",
    "read_log_tail",
)

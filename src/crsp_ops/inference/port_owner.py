"""Who listens on a TCP port, and whether it is a process this run started.

A server start trusts no port it did not open: ``listener_pids`` finds the processes listening
on a port (``psutil``; a process of another user shows as an unknown pid), and
``owned_by_tree`` tells whether one of them is the child we launched or one of its workers
(vLLM and SGLang serve from forked workers). ``ServerRecord`` is what a manager writes into the
output directory while its server runs, so the next start can recognise and stop a server that
a SIGKILLed run left behind (pid plus start time: a reused pid does not match).
"""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass

import psutil


def port_is_listening(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True when a TCP connect to ``host:port`` succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def listener_pids(port: int) -> set[int | None]:
    """Pids listening on TCP ``port`` (``None`` for one whose owner we may not see)."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return {None}
    return {c.pid for c in connections
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}


def owned_by_tree(pids: set[int | None], root_pid: int) -> bool:
    """True when every listener in ``pids`` is ``root_pid`` or one of its descendants."""
    try:
        root = psutil.Process(root_pid)
        tree = {root_pid, *(child.pid for child in root.children(recursive=True))}
    except psutil.Error:
        return False
    return bool(pids) and pids <= tree


def describe_holder(port: int) -> str:
    """``port 8000 is held by pid 123 (python -m http.server 8000)``: one line for a refusal."""
    pids = sorted(p for p in listener_pids(port) if p is not None)
    if not pids:
        return f"port {port} is held by a process this user cannot see"
    holders = []
    for pid in pids:
        try:
            command = " ".join(psutil.Process(pid).cmdline())[:120]
        except psutil.Error:
            command = "?"
        holders.append(f"pid {pid} ({command})")
    return f"port {port} is held by {', '.join(holders)}"


@dataclass(frozen=True)
class ServerRecord:
    """The server a manager started, as recorded in its output directory."""

    pid: int  # the child (= its process group id)
    create_time: float  # psutil's start time of that pid: tells a reused pid apart
    command: tuple[str, ...]  # argv it was launched with
    port: int

    @classmethod
    def of(cls, pid: int, command: tuple[str, ...], port: int) -> ServerRecord:
        """The record of a running child ``pid``."""
        return cls(pid, psutil.Process(pid).create_time(), tuple(command), port)

    @classmethod
    def from_dict(cls, data: dict) -> ServerRecord:
        """Parse what ``to_dict`` wrote."""
        return cls(int(data["pid"]), float(data["create_time"]), tuple(data["command"]),
                   int(data["port"]))

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {**asdict(self), "command": list(self.command)}

    def is_alive(self) -> bool:
        """True while the recorded process itself still runs (same pid and start time)."""
        try:
            process = psutil.Process(self.pid)
            return process.create_time() == self.create_time and process.is_running()
        except psutil.Error:
            return False

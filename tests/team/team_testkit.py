"""Real team services for tests: a fresh PostgreSQL database and an ``mlflow server`` process.

PostgreSQL runs on 127.0.0.1:5432 (trust auth, user ``postgres``); each test creates and drops
its own database. The MLflow server is the deployment teams run: PostgreSQL backend store,
artifacts proxied to a local directory (``--serve-artifacts``), bound to 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

PG_HOST, PG_PORT, PG_USER = "127.0.0.1", 5432, "postgres"


def postgres_unavailable_reason() -> str | None:
    """Why PostgreSQL tests cannot run here (``None``: they can)."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[team]')"
    try:
        psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres",
                        connect_timeout=3).close()
    except psycopg.OperationalError as error:
        return f"no PostgreSQL on {PG_HOST}:{PG_PORT} as {PG_USER}: {error}".strip()
    return None


def _admin(sql: str) -> None:
    import psycopg

    # autocommit: CREATE/DROP DATABASE cannot run inside a transaction
    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres",
                         autocommit=True) as connection:
        connection.execute(sql)


def create_database(prefix: str = "crsp_test") -> str:
    """Create a fresh database; returns its SQLAlchemy URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    _admin(f'CREATE DATABASE "{name}"')
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


def drop_database(url: str) -> None:
    """Drop the database of ``url`` (connections still open are terminated)."""
    _admin(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def server_project(root: Path, monkeypatch, tracking_uri: str) -> Path:
    """A scratch project at ``root`` whose runs go to ``tracking_uri`` (a real server)."""
    from crsp_ops.config import sync_params
    from crsp_ops.paths import copy_config_tree

    root.mkdir(parents=True)
    copy_config_tree(Path(__file__).resolve().parents[2], root)
    sync_params(root)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    return root


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MlflowServer:
    """One ``mlflow server`` process (in its own process group), stoppable and restartable."""

    def __init__(self, backend_uri: str, artifacts: Path, log: Path, port: int | None = None):
        self.backend_uri = backend_uri
        self.artifacts = artifacts
        self.log = log
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> MlflowServer:
        """Start the server and wait until ``/health`` answers."""
        command = [
            sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", self.backend_uri,
            "--artifacts-destination", str(self.artifacts), "--serve-artifacts",
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
        ]
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
               # no job executor (GenAI jobs): its consumer processes add ~25 s to the start
               "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                             env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"mlflow server exited {self._process.returncode}: "
                                   f"{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"mlflow server not healthy after {timeout}s: "
                           f"{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Kill the whole process group (the server's workers and job consumers too)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@pytest.fixture()
def postgres_url():
    """A fresh PostgreSQL database (dropped afterwards); skips when PostgreSQL is absent."""
    reason = postgres_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    url = create_database()
    yield url
    drop_database(url)


@pytest.fixture()
def mlflow_server(postgres_url, tmp_path):
    """A real ``mlflow server``: PostgreSQL backend store, artifacts proxied to ``tmp_path``."""
    server = MlflowServer(postgres_url, tmp_path / "server_artifacts",
                          tmp_path / "mlflow_server.log").start()
    yield server
    server.stop()

"""A managed server dies with its driver (SIGKILL included) and never shares its port.

Real processes on 127.0.0.1: ``python -m http.server`` plays the engine, a plain listening
socket plays the stranger on the port.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from crsp_ops.inference.port_owner import ServerRecord, port_is_listening
from crsp_ops.inference.server_config import ServerConfig
from crsp_ops.inference.server_manager import PortInUseError, ServerManager, free_port

pytestmark = pytest.mark.server


def http_server(root, port):
    return (sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
            "--directory", str(root))


@pytest.fixture
def static_root(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    (root / "health").write_text("ok")
    return root


def config(root, port, tmp_path, **extra):
    return ServerConfig(base_url=f"http://127.0.0.1:{port}", command=http_server(root, port),
                        startup_timeout_s=20.0, health_interval_s=0.1, stop_grace_s=3.0,
                        log_path=str(tmp_path / "server.log"), **extra)


def wait_until(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_server_dies_with_its_sigkilled_driver(static_root, tmp_path):
    port = free_port()
    driver = textwrap.dedent(f"""
        import time
        from crsp_ops.inference.server_config import ServerConfig
        from crsp_ops.inference.server_manager import ServerManager
        config = ServerConfig("http://127.0.0.1:{port}", command={http_server(static_root, port)!r},
                              startup_timeout_s=20.0, health_interval_s=0.1)
        ServerManager(config).start()
        print("up", flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert port_is_listening("127.0.0.1", port)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_until(lambda: not port_is_listening("127.0.0.1", port), 5.0)
    finally:
        proc.kill()


def test_a_foreign_listener_is_refused_in_one_line_naming_port_and_holder(static_root, tmp_path):
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        manager = ServerManager(config(static_root, port, tmp_path))
        with pytest.raises(PortInUseError) as caught:
            manager.start()
    message = str(caught.value)
    assert "\n" not in message
    assert f"port {port} is held by pid {os.getpid()}" in message
    assert manager.pid is None  # nothing was launched


def test_a_recorded_server_left_by_a_dead_run_is_stopped_and_replaced(static_root, tmp_path):
    port = free_port()
    orphan = subprocess.Popen(http_server(static_root, port), start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: port_is_listening("127.0.0.1", port), 10.0)
        state = tmp_path / "server.json"
        record = ServerRecord.of(orphan.pid, http_server(static_root, port), port)
        state.write_text(json.dumps(record.to_dict()))
        with ServerManager(config(static_root, port, tmp_path, state_path=str(state))) as server:
            assert orphan.wait(timeout=10) is not None  # stopped, not merely outlived
            assert server.pid != orphan.pid and server.is_healthy()
            assert json.loads(state.read_text())["pid"] == server.pid
        assert not state.exists()  # a clean stop leaves no record
    finally:
        orphan.kill()

"""ServerManager against real processes on 127.0.0.1 (stdlib http.server as the 'engine')."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from crsp_ops.inference.process_group import group_alive
from crsp_ops.inference.server_config import ServerConfig
from crsp_ops.inference.server_manager import (
    ServerDiedError,
    ServerManager,
    ServerStartupError,
    free_port,
    probe_health,
)

pytestmark = pytest.mark.server


@pytest.fixture
def static_root(tmp_path):
    """A directory whose ``/health`` file makes ``python -m http.server`` answer 200."""
    root = tmp_path / "www"
    root.mkdir()
    (root / "health").write_text("ok")
    return root


def http_server_command(root, port, prefix=()):
    return (*prefix, sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
            "--directory", str(root))


def config_for(command, port, tmp_path, **overrides):
    values = dict(
        base_url=f"http://127.0.0.1:{port}",
        command=command,
        startup_timeout_s=20.0,
        health_interval_s=0.1,
        stop_grace_s=3.0,
        log_path=str(tmp_path / "server.log"),
    )
    values.update(overrides)
    return ServerConfig(**values)


def wait_group_gone(pgid, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not group_alive(pgid)


def test_start_serves_health_and_stop_leaves_no_process(static_root, tmp_path):
    port = free_port()
    with ServerManager(config_for(http_server_command(static_root, port), port, tmp_path)) as srv:
        pgid = srv.pid
        assert srv.is_healthy()
        assert os.getpgid(pgid) == pgid  # its own process group
        assert os.getpgid(pgid) != os.getpgrp()
    assert not probe_health(f"http://127.0.0.1:{port}/health", 1.0)
    assert wait_group_gone(pgid)
    assert "starting" in (tmp_path / "server.log").read_text()


def test_workers_forked_by_the_server_are_stopped_too(static_root, tmp_path):
    port = free_port()
    # A forked worker that ignores SIGTERM: only the group SIGKILL after the grace period ends it.
    worker = "trap '' TERM; sleep 300"
    serve = " ".join(http_server_command(static_root, port))
    command = ("bash", "-c", f"bash -c \"{worker}\" & exec {serve}")
    manager = ServerManager(config_for(command, port, tmp_path, stop_grace_s=0.5))
    manager.start()
    pgid = manager.pid
    manager.stop()
    manager.stop()  # idempotent
    assert wait_group_gone(pgid)


def test_health_timeout_is_a_clear_error_and_kills_the_process(tmp_path):
    port = free_port()
    script = "print('still loading', flush=True); import time; time.sleep(60)"
    command = (sys.executable, "-c", script)
    manager = ServerManager(config_for(command, port, tmp_path, startup_timeout_s=1.5))
    started = time.monotonic()
    with pytest.raises(ServerStartupError, match="not healthy") as caught:
        manager.start()
    assert time.monotonic() - started < 10
    assert "still loading" in str(caught.value)  # the log tail
    assert manager.pid is None
    assert "startup_timeout_s" in str(caught.value)


def test_exit_during_startup_reports_code_and_log(tmp_path):
    port = free_port()
    command = (sys.executable, "-c", "import sys; print('bad flag --x'); sys.exit(3)")
    with pytest.raises(ServerStartupError, match="exited with code 3") as caught:
        with ServerManager(config_for(command, port, tmp_path)):
            pass
    assert "bad flag --x" in str(caught.value)


def test_dead_server_is_restarted_within_budget(static_root, tmp_path):
    port = free_port()
    config = config_for(http_server_command(static_root, port), port, tmp_path, max_restarts=1)
    with ServerManager(config) as manager:
        assert manager.ensure_running() is False
        first = manager.pid
        os.killpg(first, signal.SIGKILL)
        assert wait_group_gone(first) or manager.is_alive() is False
        assert manager.ensure_running() is True
        assert manager.restarts == 1 and manager.pid != first and manager.is_healthy()
        second = manager.pid
        os.killpg(second, signal.SIGKILL)
        with pytest.raises(ServerDiedError, match="restart budget"):
            manager.ensure_running()
    assert wait_group_gone(first) and wait_group_gone(second)


def test_already_running_mode_only_checks_health(static_root, tmp_path):
    port = free_port()
    with ServerManager(config_for(http_server_command(static_root, port), port, tmp_path)) as owner:
        external = ServerManager(ServerConfig(f"http://127.0.0.1:{port}", command=None))
        with external:
            assert external.pid is None and external.is_healthy()
            assert external.ensure_running() is False
        assert owner.is_healthy()  # stopping the non-owner touched nothing
    idle_port = free_port()
    missing = ServerConfig(f"http://127.0.0.1:{idle_port}", startup_timeout_s=0.5,
                           health_interval_s=0.1)
    with pytest.raises(ServerStartupError, match="not healthy"):
        ServerManager(missing).start()
    with pytest.raises(ServerDiedError, match="not owned"):
        ServerManager(missing).ensure_running()


def test_exception_inside_the_block_still_stops_the_server(static_root, tmp_path):
    port = free_port()
    with pytest.raises(RuntimeError, match="boom"):
        with ServerManager(config_for(http_server_command(static_root, port), port, tmp_path)) as m:
            pgid = m.pid
            raise RuntimeError("boom")
    assert wait_group_gone(pgid)


def test_sigterm_to_the_driver_stops_its_server(static_root, tmp_path):
    port = free_port()
    pid_file = tmp_path / "server.pid"
    command = http_server_command(static_root, port)
    driver = textwrap.dedent(f"""
        import time
        from crsp_ops.inference.server_config import ServerConfig
        from crsp_ops.inference.server_manager import ServerManager
        config = ServerConfig("http://127.0.0.1:{port}", command={command!r},
                              startup_timeout_s=20, health_interval_s=0.1, stop_grace_s=2)
        manager = ServerManager(config).start()
        open({str(pid_file)!r}, "w").write(str(manager.pid))
        time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", driver])
    try:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        server_pgid = int(pid_file.read_text())
        assert group_alive(server_pgid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == -signal.SIGTERM
        assert wait_group_gone(server_pgid)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_config_validation_names_the_problem():
    with pytest.raises(ValueError, match="health_path"):
        ServerConfig("http://127.0.0.1:1", health_path="health")
    with pytest.raises(ValueError, match="command is empty"):
        ServerConfig("http://127.0.0.1:1", command=())

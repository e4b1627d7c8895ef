"""Runs left RUNNING by a process that died (SIGKILL, power loss) are marked KILLED.

Every run opened by ``start_run`` is tagged with the host, pid and start time of its
process. On start, a job that owns a resource (e.g. an output directory, through the tag
``crsp.out_dir``) closes the RUNNING runs of the same experiment that name the same resource
and whose process is gone. A run from another host is left alone (its process cannot be seen).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

import psutil

logger = logging.getLogger(__name__)

HOST_TAG = "crsp.host"
PID_TAG = "crsp.pid"
STARTED_TAG = "crsp.pid_started"


def process_tags() -> dict[str, str]:
    """Host, pid and start time of this process (identify it even after its pid is reused)."""
    return {
        HOST_TAG: socket.gethostname(),
        PID_TAG: str(os.getpid()),
        STARTED_TAG: f"{psutil.Process().create_time():.2f}",
    }


def process_is_gone(tags: Mapping[str, str], host: str | None = None) -> bool:
    """Whether the process named by a run's tags is dead (``False`` when it cannot tell)."""
    if tags.get(HOST_TAG) != (host or socket.gethostname()):
        return False
    try:
        pid = int(tags.get(PID_TAG, ""))
    except ValueError:
        return False
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False
    return f"{started:.2f}" != tags.get(STARTED_TAG)  # the pid now belongs to another process


def close_stale_runs(client, experiment_id: str, tag: str, value: str) -> list[str]:
    """Mark KILLED the RUNNING runs tagged ``tag=value`` whose process is gone; return their ids."""
    quoted = value.replace("'", "\\'")
    query = f"tags.`{tag}` = '{quoted}' and attributes.status = 'RUNNING'"
    runs = client.search_runs([experiment_id], filter_string=query, max_results=1000)
    closed = []
    for run in runs:
        if process_is_gone(run.data.tags):
            client.set_terminated(run.info.run_id, "KILLED")
            closed.append(run.info.run_id)
            logger.warning("run %s (%s=%s) was left RUNNING by a dead process: marked KILLED",
                           run.info.run_id, tag, value)
    return closed

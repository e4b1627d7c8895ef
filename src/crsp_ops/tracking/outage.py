"""A tracking server that goes away mid-run: keep the metrics, retry, name the error, lose nothing.

Unsent points wait in the buffer, then in a JSONL file that ``crsp-ops tracking-replay FILE``
sends once the server is back; an error the server answers with is raised at once.

Design: docs/design/platform.md#outage.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow.entities import Metric
from mlflow.exceptions import MlflowException, RestException

from crsp_ops.tracking.artifact_spool import UnsentArtifact, send_artifact
from crsp_ops.tracking.metric_buffer import MAX_METRICS_PER_BATCH

logger = logging.getLogger(__name__)


class TrackingUnavailable(RuntimeError):
    """The tracking server could not be reached; the message names it and the saved file."""


@dataclass(frozen=True)
class OutagePolicy:
    """How the end of a run treats an unreachable server."""

    retry_seconds: float = 0.0  # keep retrying the final flush and status this long
    spool_dir: Path | None = None  # where unsent points go (None: the system temp dir)


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` means the server is unreachable (retry later), not a rejected request.

    >>> is_outage(ConnectionError("refused")), is_outage(ValueError("bad"))
    (True, False)
    >>> is_outage(MlflowException("API request to http://h/x failed with exception boom"))
    True
    >>> is_outage(MlflowException("Changing param values is not allowed"))
    False
    """
    if isinstance(error, RestException):
        return error.get_http_status_code() >= 500
    if isinstance(error, MlflowException):  # the REST client's "could not reach it" error
        return "API request to" in error.message and "failed with exception" in error.message
    return isinstance(error, OSError | TimeoutError)


def retry_until(action, deadline: float, what: str, uri: str) -> BaseException | None:
    """Call ``action`` until it succeeds or ``deadline`` (monotonic) passes.

    Returns ``None`` on success, else the last outage error; other errors are raised.
    """
    delay = 0.5
    while True:
        try:
            action()
            return None
        except Exception as error:
            if not is_outage(error):
                raise
            if time.monotonic() + delay > deadline:
                return error
            logger.warning("tracking server %s unreachable while %s (%s); retrying in %.1fs",
                           uri, what, _short(error), delay)
            time.sleep(delay)
            delay = min(delay * 2, 10.0)


def close_run(tracker: Any, status: str, end: bool) -> None:
    """Flush ``tracker``'s buffered metrics and set the run's ``status``, riding out an outage.

    Raises:
        TrackingUnavailable: the server stayed unreachable for ``tracker.outage.retry_seconds``;
            the unsent points (and the status) are saved to the file the message names.
    """
    policy: OutagePolicy = tracker.outage
    uri = str(tracker.client.tracking_uri)
    deadline = time.monotonic() + policy.retry_seconds
    error = retry_until(tracker.flush, deadline, "writing buffered metrics", uri)
    if error is None:
        error = retry_until(tracker.send_unsent_artifacts, deadline, "sending kept artifacts",
                            uri)
    if error is None and end:
        error = retry_until(lambda: tracker.client.set_terminated(tracker.run_id, status),
                            deadline, f"ending the run {status}", uri)
    if error is None:
        return
    artifacts = tracker.unsent_artifacts()
    path = spool_unsent(tracker.run_id, tracker.pending_metrics(), status if end else None,
                        policy.spool_dir, artifacts=artifacts)
    raise TrackingUnavailable(
        f"MLflow tracking server {uri} unreachable for {policy.retry_seconds:.0f}s at the end of "
        f"run {tracker.run_id} ({_short(error)}); {len(tracker.pending_metrics())} metric points, "
        f"{len(artifacts)} artifacts{' and the status ' + status if end else ''} saved to "
        f"{path}: send them with `crsp-ops tracking-replay {path}` once the server is back"
    ) from error


def spool_unsent(run_id: str, metrics: list, status: str | None, spool_dir: Path | None,
                 artifacts: Sequence[UnsentArtifact] = ()) -> Path:
    """Append the unsent ``metrics``, kept ``artifacts`` and final ``status`` to a JSONL file."""
    folder = Path(spool_dir) if spool_dir is not None else Path(tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"mlflow_unsent_{run_id}.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        for metric in metrics:
            handle.write(json.dumps({"run_id": run_id, "key": metric.key, "value": metric.value,
                                     "timestamp": metric.timestamp, "step": metric.step}) + "\n")
        for artifact in artifacts:
            handle.write(json.dumps(artifact.to_row(run_id)) + "\n")
        if status is not None:
            handle.write(json.dumps({"run_id": run_id, "status": status}) + "\n")
    return path


def replay_unsent(client: Any, path: Path) -> dict[str, int]:
    """Send a file written by ``spool_unsent`` and delete it; returns points sent per run.

    Metrics go first, then the kept artifacts (each copy deleted once uploaded), then the
    final statuses.
    """
    metrics: dict[str, list[Metric]] = {}
    artifacts: list[tuple[str, UnsentArtifact]] = []
    statuses: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "status" in row:
            statuses[row["run_id"]] = row["status"]
        elif "artifact" in row:
            artifacts.append((row["run_id"],
                              UnsentArtifact(Path(row["artifact"]), row["artifact_path"])))
        else:
            metrics.setdefault(row["run_id"], []).append(
                Metric(row["key"], float(row["value"]), int(row["timestamp"]), int(row["step"])))
    for run_id, points in metrics.items():
        for start in range(0, len(points), MAX_METRICS_PER_BATCH):
            client.log_batch(run_id, metrics=points[start : start + MAX_METRICS_PER_BATCH])
    for run_id, artifact in artifacts:
        if artifact.local.exists():  # absent: uploaded by an earlier, interrupted replay
            send_artifact(client, run_id, artifact)
    for run_id, status in statuses.items():
        client.set_terminated(run_id, status)
    Path(path).unlink()
    return {run_id: len(points) for run_id, points in metrics.items()}


def _short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 300 else text[:297] + "..."

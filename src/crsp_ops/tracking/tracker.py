"""The tracker jobs log through: an MLflow implementation and a no-op twin."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typing_extensions import override

from crsp_ops.interrupts import Terminated, critical_section
from crsp_ops.tracking.artifact_scan import redacted_artifact
from crsp_ops.tracking.artifact_spool import (
    UnsentArtifact,
    keep_artifact,
    send_artifact,
    spool_folder,
)
from crsp_ops.tracking.metric_buffer import MetricBuffer
from crsp_ops.tracking.outage import OutagePolicy, close_run, is_outage
from crsp_ops.tracking.redaction import Redactor

MAX_PARAMS_PER_BATCH = 100  # MLflow's log_batch limit for params and tags

logger = logging.getLogger(__name__)


def _parent(artifact_file: str) -> str | None:
    """The run directory of ``artifact_file`` (``None``: the root).

    >>> _parent("a/b.json"), _parent("b.json")
    ('a', None)
    """
    parent = str(Path(artifact_file).parent)
    return None if parent == "." else parent


class Tracker:
    """No-op tracker: the interface, and what runs when tracking is off (or on rank != 0)."""

    run_id: str | None = None

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Record immutable run parameters (secrets redacted)."""

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Record one value per key at ``step`` (buffered; written in batches)."""

    def set_tags(self, tags: Mapping[str, str]) -> None:
        """Set run tags (mutable, unlike params)."""

    def log_text(self, text: str, artifact_file: str) -> None:
        """Store ``text`` as the artifact ``artifact_file`` (secrets redacted)."""

    def log_dict(self, obj: Any, artifact_file: str) -> None:
        """Store ``obj`` as a JSON artifact."""

    def log_artifact(self, local_path: str | os.PathLike, artifact_path: str | None = None) -> None:
        """Copy a local file or directory into the run's artifacts under ``artifact_path``."""

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        """Store a matplotlib figure as an image artifact."""

    def log_input(self, name: str, source: str, digest: str, context: str) -> None:
        """Record a dataset the run read (an MLflow dataset input, its full hash as a tag)."""

    def flush(self) -> None:
        """Write buffered metrics now."""

    @contextmanager
    def child(self, run_name: str, tags: Mapping[str, str] | None = None) -> Iterator[Tracker]:
        """A nested run (e.g. one proposer of a comparison); ended with its block."""
        yield Tracker()


NullTracker = Tracker


class MlflowTracker(Tracker):
    """Logs to one MLflow run through ``MlflowClient``; metrics are batched.

    Every store write runs in a ``critical_section`` (Ctrl+C/SIGTERM wait until it is done),
    and everything that leaves the process is redacted first: params, tags, texts and the
    content of artifact files (see ``tracking.redaction``).
    """

    def __init__(
        self,
        client,
        run_id: str,
        experiment_id: str,
        flush_points: int,
        flush_seconds: float,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.experiment_id = experiment_id
        self._env = os.environ if env is None else env
        self.redactor = Redactor.from_env(self._env)
        self._flush_points = flush_points
        self._flush_seconds = flush_seconds
        self._metrics = MetricBuffer(
            lambda batch: client.log_batch(run_id, metrics=batch, synchronous=True),
            flush_points=flush_points,
            flush_seconds=flush_seconds,
            transient=is_outage,
        )
        self.outage = OutagePolicy()  # what the end of the run does if the server is away
        self._unsent_artifacts: list[UnsentArtifact] = []  # kept during an outage

    def _write(self, call, *args, **kwargs):
        """One store write, never torn by Ctrl+C/SIGTERM."""
        with critical_section():
            return call(*args, **kwargs)

    @override
    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(k, v[:6000]) for k, v in self.redactor.params(params).items()]
        for start in range(0, len(items), MAX_PARAMS_PER_BATCH):
            self._write(self.client.log_batch, self.run_id,
                        params=items[start : start + MAX_PARAMS_PER_BATCH])

    @override
    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        # The section spans the buffer's bookkeeping too: a signal raised between a batch
        # write and its removal from the buffer would write that batch twice.
        with critical_section():
            self._metrics.add(metrics, step)

    @override
    def set_tags(self, tags: Mapping[str, str]) -> None:
        from mlflow.entities import RunTag

        items = [RunTag(k, self.redactor.text(str(v))) for k, v in tags.items()]
        for start in range(0, len(items), MAX_PARAMS_PER_BATCH):
            self._write(self.client.log_batch, self.run_id,
                        tags=items[start : start + MAX_PARAMS_PER_BATCH])

    @override
    def log_text(self, text: str, artifact_file: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / Path(artifact_file).name
            local.write_text(self.redactor.text(text), encoding="utf-8")
            self._send_artifact(local, _parent(artifact_file))

    @override
    def log_dict(self, obj: Any, artifact_file: str) -> None:
        self.log_text(json.dumps(obj, indent=2, default=str), artifact_file)

    @override
    def log_artifact(self, local_path: str | os.PathLike, artifact_path: str | None = None) -> None:
        with redacted_artifact(Path(local_path), self.redactor) as path:
            self._send_artifact(path, artifact_path)

    @override
    def log_figure(self, figure: Any, artifact_file: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / Path(artifact_file).name
            figure.savefig(local, dpi=100, bbox_inches="tight")
            self._send_artifact(local, _parent(artifact_file))

    @override
    def log_input(self, name: str, source: str, digest: str, context: str) -> None:
        from mlflow.data.dataset_source_registry import resolve_dataset_source
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.entities import DatasetInput, InputTag

        with warnings.catch_warnings():  # a local path matches the local source type twice
            warnings.simplefilter("ignore", UserWarning)
            # MLflow keeps at most 36 characters of a digest; the whole hash goes in a tag
            dataset = MetaDataset(resolve_dataset_source(source), name=name, digest=digest[:32])
        self.set_tags({f"dataset.{name}.sha256": digest})
        entity = DatasetInput(dataset._to_mlflow_entity(),
                              tags=[InputTag("mlflow.data.context", context)])
        self._write(self.client.log_inputs, self.run_id, datasets=[entity])

    def _send_artifact(self, path: Path, artifact_path: str | None) -> None:
        """Upload a (redacted) file or directory; kept for later if the server is away."""
        item = UnsentArtifact(path, artifact_path)
        try:
            self._write(self._upload, item)
        except Exception as error:
            if not is_outage(error):
                raise
            kept = keep_artifact(path, artifact_path,
                                 spool_folder(self.outage.spool_dir, self.run_id))
            self._unsent_artifacts.append(kept)
            logger.warning("tracking server unreachable (%s); artifact %s kept in %s, sent when "
                           "the run ends", type(error).__name__, path.name, kept.local)

    def _upload(self, item: UnsentArtifact) -> None:
        if item.local.is_dir():
            self.client.log_artifacts(self.run_id, str(item.local), item.artifact_path)
        else:
            self.client.log_artifact(self.run_id, str(item.local), item.artifact_path)

    def send_unsent_artifacts(self) -> None:
        """Upload the artifacts kept during an outage, oldest first (raises on the first error)."""
        with critical_section():
            while self._unsent_artifacts:
                send_artifact(self.client, self.run_id, self._unsent_artifacts[0])
                self._unsent_artifacts.pop(0)

    def unsent_artifacts(self) -> list[UnsentArtifact]:
        """Artifacts not yet uploaded (kept on disk while the server is unreachable)."""
        return list(self._unsent_artifacts)

    @override
    def flush(self) -> None:
        with critical_section():
            self._metrics.flush()

    def pending_metrics(self) -> list:
        """Metric points not yet written (e.g. while the server is unreachable)."""
        return self._metrics.pending()

    @override
    @contextmanager
    def child(self, run_name: str, tags: Mapping[str, str] | None = None) -> Iterator[Tracker]:
        run = self._write(
            self.client.create_run, self.experiment_id,
            run_name=run_name,
            tags={"mlflow.parentRunId": self.run_id, **(tags or {})},
        )
        child = MlflowTracker(
            self.client,
            run.info.run_id,
            self.experiment_id,
            self._flush_points,
            self._flush_seconds,
            self._env,
        )
        child.outage = self.outage
        with finish_run(child):
            yield child


@contextmanager
def finish_run(tracker: MlflowTracker, end: bool = True) -> Iterator[None]:
    """Flush on the way out and set the run status: FINISHED, FAILED or KILLED (Ctrl+C).

    Already-logged data is never lost: buffered metrics are flushed before the status is set,
    whatever ended the block, in one critical section, so a signal arriving then is raised only
    after the status is written (the run is never left RUNNING); an unreachable server is
    retried there (``outage.close_run``, at most ``tracking.retry_seconds``).
    """
    status = "FINISHED"
    try:
        yield
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    except BaseException as error:
        status = "KILLED" if isinstance(error, Terminated) else "FAILED"
        raise
    finally:
        with critical_section():
            close_run(tracker, status, end)

"""Open the MLflow run of a job: experiment per job, effective params, git and DVC tags."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from crsp_ops.config import ResolvedConfig
from crsp_ops.dir_lock import is_secondary_rank
from crsp_ops.interrupts import critical_section
from crsp_ops.tracking.outage import OutagePolicy
from crsp_ops.tracking.run_tags import (
    DVC_RECORD_ARTIFACT,
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    dvc_record,
    dvc_tags,
    ensure_experiment_kind,
    git_tags,
)
from crsp_ops.tracking.stale_runs import close_stale_runs, process_tags
from crsp_ops.tracking.store_init import open_client
from crsp_ops.tracking.store_location import ensure_store_in_project
from crsp_ops.tracking.tracker import MlflowTracker, NullTracker, Tracker, finish_run

OFFLINE_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "DVC_NO_ANALYTICS": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "GIT_PYTHON_REFRESH": "quiet",
}
UNSENT_DIR = "mlflow_unsent"  # metric points an unreachable server never got (outage.py)


def disable_telemetry() -> None:
    """Turn off MLflow, DVC and HF telemetry for this process and its children."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def tracking_uri(resolved: ResolvedConfig) -> str:
    """The configured URI, or ``sqlite:///<root>/mlflow.db`` (MLflow's default, made absolute)."""
    return resolved.settings.tracking.uri or project_store_uri(resolved.root)


def project_store_uri(root: Path) -> str:
    """The project's own store: ``sqlite:///<root>/mlflow.db``."""
    return f"sqlite:///{root / 'mlflow.db'}"


def experiment_name(resolved: ResolvedConfig, job: str) -> str:
    """``<prefix>-<job>``, e.g. ``crsp-evolve``."""
    return f"{resolved.settings.tracking.experiment_prefix}-{job}"


@contextmanager
def start_run(
    job: str,
    resolved: ResolvedConfig,
    run_name: str | None = None,
    tags: Mapping[str, str] | None = None,
    owner_tag: str | None = None,
) -> Iterator[Tracker]:
    """Open (or, under ``mlflow run``, resume) the run of ``job`` and log the effective config.

    Yields a ``NullTracker`` when tracking is disabled and in every process but rank 0 of a
    distributed job (``accelerate launch``, ``torchrun``: one run per job). On exit, buffered
    metrics are flushed and the run ends FINISHED, FAILED (an exception) or KILLED (Ctrl+C /
    SIGTERM).

    Args:
        job: the job's name (the experiment is ``<prefix>-<job>``).
        resolved: the effective configuration (logged as params, secrets redacted).
        run_name: the run's display name (see ``run_tags.run_name``); under ``mlflow run``
            it replaces the random name the CLI gave the run.
        tags: extra run tags.
        owner_tag: a key of ``tags`` naming what this run owns (e.g. ``crsp.out_dir``): RUNNING
            runs of the same experiment with the same value whose process died are marked
            KILLED first.
    """
    settings = resolved.settings.tracking
    if not settings.enabled or is_secondary_rank(os.environ):
        yield NullTracker()
        return
    disable_telemetry()
    uri = tracking_uri(resolved)
    if uri == project_store_uri(resolved.root):  # a copied project must not write elsewhere
        ensure_store_in_project(resolved.root / "mlflow.db", resolved.root)
    client = open_client(uri)  # parallel workers may open a fresh mlflow.db together
    project_run_id = os.environ.get("MLFLOW_RUN_ID")
    with ExitStack() as stack:
        # The run is created and its end guaranteed (finish_run) inside one critical section:
        # a signal arriving meanwhile is raised only once finish_run can mark the run KILLED.
        with critical_section():
            run_id, experiment_id = _open_run(
                client, project_run_id, experiment_name(resolved, job), resolved.root, uri,
                run_name,
            )
            tracker = MlflowTracker(
                client, run_id, experiment_id, settings.flush_points, settings.flush_seconds
            )
            tracker.outage = OutagePolicy(settings.retry_seconds, resolved.root / UNSENT_DIR)
            stack.enter_context(finish_run(tracker, end=not project_run_id))
        if owner_tag and tags and owner_tag in tags:
            with critical_section():
                close_stale_runs(client, experiment_id, owner_tag, tags[owner_tag])
        _log_run_context(tracker, job, resolved, tags)
        system_metrics = None
        if settings.system_metrics:
            system_metrics = _start_system_metrics(run_id, uri)
        try:
            yield tracker
        finally:
            if system_metrics is not None:
                system_metrics.finish()


def _open_run(
    client, project_run_id: str | None, name: str, root: Path, uri: str, run_name: str | None
) -> tuple[str, str]:
    """Resume the ``mlflow run`` run or create one in ``name``; returns (run id, experiment id)."""
    from mlflow.entities import RunTag

    if project_run_id:  # launched by `mlflow run`: the CLI created the run and ends it
        experiment_id = client.get_run(project_run_id).info.experiment_id
        run_id = project_run_id
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in process_tags().items()])
        ensure_experiment_kind(client, experiment_id)
        if run_name:
            client.update_run(run_id, name=run_name)  # sets mlflow.runName too
    else:
        experiment_id = _experiment_id(client, name, root, uri)
        run_id = client.create_run(experiment_id, run_name=run_name,
                                   tags=process_tags()).info.run_id
    return run_id, experiment_id


def _log_run_context(
    tracker: Tracker, job: str, resolved: ResolvedConfig, tags: Mapping[str, str] | None
) -> None:
    """Tag the run (job, git, DVC, config sources, ``tags``), log params and the DVC record."""
    record = dvc_record(resolved.root)
    tracker.set_tags(
        {
            "crsp.job": job,
            **git_tags(resolved.root),
            **dvc_tags(record),
            **{f"config.source.{k}": v for k, v in resolved.sources.items() if v != "Kconfig"},
            **(tags or {}),
        }
    )
    tracker.log_params(resolved.settings.flat())
    if record.get("deps") or record.get("outs"):
        tracker.log_dict(record, DVC_RECORD_ARTIFACT)


def _experiment_id(client, name: str, root: Path, uri: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        ensure_experiment_kind(client, experiment.experiment_id)
        return experiment.experiment_id
    artifact_location = None
    if uri.startswith("sqlite:"):
        # Pin artifacts under the project root whatever the working directory.
        artifact_location = (root / "mlruns" / name).as_uri()
    try:
        return client.create_experiment(name, artifact_location=artifact_location,
                                        tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
    except Exception:  # another process created it first
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            raise
        ensure_experiment_kind(client, experiment.experiment_id)
        return experiment.experiment_id


def _start_system_metrics(run_id: str, uri: str):
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    monitor = SystemMetricsMonitor(run_id, tracking_uri=uri)  # no global MLflow state
    monitor.start()
    return monitor

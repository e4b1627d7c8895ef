"""Helpers every stage driver shares: settings, stats files and the MLflow run record."""

from __future__ import annotations

import argparse
from pathlib import Path

from crsp_ops.atomic_io import atomic_write_json
from crsp_ops.config import ResolvedConfig, load_settings
from crsp_ops.paths import project_root

RUN_RECORD_SUFFIX = ".mlflow_run.json"


def settings_from(args: argparse.Namespace) -> ResolvedConfig:
    """Resolve the settings of this invocation (project root + ``--set`` overrides)."""
    return load_settings(project_root(), args.overrides)


def run_record_path(out: Path) -> Path:
    """Where the run of the stage writing ``out`` is recorded: ``<out>.mlflow_run.json``.

    It sits beside the output, not inside it: a run id inside a directory that other stages
    depend on would change its hash on every run and invalidate everything downstream.
    """
    out = Path(out)
    return out.with_name(out.name + RUN_RECORD_SUFFIX)


def record_run(out: Path, tracker) -> None:
    """Record the MLflow run id of the stage that wrote ``out`` (DVC restores it with ``out``)."""
    if tracker.run_id is not None:
        atomic_write_json(run_record_path(out), {"run_id": tracker.run_id, "output": str(out)})

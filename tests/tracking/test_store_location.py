"""A copied project writes only into itself: its store's artifact locations follow the copy."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.config import load_settings, sync_params
from crsp_ops.paths import copy_config_tree
from crsp_ops.tracking import start_run, tracking_uri
from crsp_ops.tracking.store_location import (
    ArtifactLocationError,
    ensure_store_in_project,
    foreign_artifact_roots,
)

REPO = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}


def run_once(root: Path, text: str) -> str:
    resolved = load_settings(root)
    with start_run("unit", resolved, run_name=text) as tracker:
        tracker.log_metrics({"x": 1.0}, step=0)
        tracker.log_text(text, "notes/text.txt")
        return tracker.run_id


@pytest.fixture
def original(tmp_path, monkeypatch):
    root = tmp_path / "original"
    root.mkdir()
    copy_config_tree(REPO, root)
    for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "DVC_STAGE", "CRSP_OPS_ROOT"):
        monkeypatch.delenv(variable, raising=False)
    sync_params(root)
    return root


def test_a_copied_project_never_writes_into_the_original(original, tmp_path, monkeypatch):
    monkeypatch.chdir(original)
    first = run_once(original, "in the original")
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    before = snapshot(tmp_path)

    monkeypatch.chdir(copy)
    second = run_once(copy, "in the copy")

    after = snapshot(tmp_path)
    changed = {path for path in after if before.get(path) != after[path]}
    assert changed and all(path.startswith("copy/") for path in changed)  # nothing outside
    assert (copy / "mlruns" / "crsp-unit" / second / "artifacts" / "notes" / "text.txt").is_file()
    client = MlflowClient(tracking_uri(load_settings(copy)))
    experiment = client.get_experiment_by_name("crsp-unit")
    assert experiment.artifact_location == (copy / "mlruns" / "crsp-unit").as_uri()
    # the copied run's artifacts are read from the copy's mlruns/
    assert client.get_run(first).info.artifact_uri.startswith((copy / "mlruns").as_uri())
    assert [a.path for a in client.list_artifacts(first, "notes")] == ["notes/text.txt"]
    # the original store still points at the original
    original_client = MlflowClient(tracking_uri(load_settings(original)))
    assert original_client.get_experiment_by_name("crsp-unit").artifact_location == \
        (original / "mlruns" / "crsp-unit").as_uri()
    assert ensure_store_in_project(copy / "mlflow.db", copy) == []  # idempotent


def test_an_unmappable_location_stops_with_the_fix(original, tmp_path):
    run_once(original, "x")
    with sqlite3.connect(original / "mlflow.db") as connection:
        connection.execute("UPDATE experiments SET artifact_location = ? WHERE name = 'crsp-unit'",
                           ((tmp_path / "elsewhere" / "artifacts").as_uri(),))
    with pytest.raises(ArtifactLocationError, match="tracking.uri"):
        run_once(original, "y")
    assert not (tmp_path / "elsewhere").exists()


def test_foreign_roots_skip_remote_and_in_project_locations(tmp_path):
    project = tmp_path / "p"
    locations = [(project / "mlruns" / "e").as_uri(), "s3://bucket/mlruns/e",
                 str(tmp_path / "old" / "mlruns" / "0"), (tmp_path / "old" / "mlruns" / "e").as_uri()]
    assert foreign_artifact_roots(locations, project) == {tmp_path / "old" / "mlruns"}

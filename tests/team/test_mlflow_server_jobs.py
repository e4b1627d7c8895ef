"""`crsp-ops train` against a real MLflow tracking server (PostgreSQL store, proxied artifacts).

The run, its per-step metrics and its artifacts are read back over HTTP, and the artifact
files are checked where the server stores them.
"""

from __future__ import annotations

import json
from pathlib import Path

from mlflow.tracking import MlflowClient

from crsp_ops.cli.main import main
from crsp_ops.cli.stage_io import run_record_path
from tests.crsp.test_train_cli import FAST as TRAIN_FAST
from tests.team.team_testkit import server_project

REPO = Path(__file__).resolve().parents[2]
FAST = [*TRAIN_FAST, "train.steps=1", "train.checkpoint_interval=1"]


def test_train_step_logs_to_an_mlflow_server(tmp_path, monkeypatch, mlflow_server,
                                              tiny_model_dir):
    root = server_project(tmp_path / "proj", monkeypatch, mlflow_server.url)
    args = ["train", "--model", str(tiny_model_dir), "--out", "models/crsp"]
    for item in FAST:
        args += ["--set", item]
    assert main(args) == 0

    run_id = json.loads(run_record_path(root / "models" / "crsp").read_text())["run_id"]
    client = MlflowClient(mlflow_server.url)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:")  # proxied by the server
    assert client.get_experiment(run.info.experiment_id).name == "crsp-train"
    for key in ("loss", "kl", "reward/solve/mean", "perf/tokens_per_s"):
        assert [m.step for m in client.get_metric_history(run_id, key)] == [1], key
    assert {a.path for a in client.list_artifacts(run_id, "samples")} == {
        "samples/step_000001.json"}
    local = client.download_artifacts(run_id, "samples/step_000001.json", str(tmp_path))
    assert json.loads(Path(local).read_text())
    stored = list((tmp_path / "server_artifacts").rglob("step_000001.json"))
    assert len(stored) == 1 and run_id in str(stored[0])
    assert not list((root).glob("mlruns")) and not (root / "mlflow.db").exists()

"""A tracking server that goes away mid-run: metrics and artifacts are kept, retried, none lost.

A real ``mlflow server`` (PostgreSQL backend) is killed in the middle of a run and restarted;
the run's metrics and end state are read back over HTTP.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.cli.main import main
from crsp_ops.config import load_settings
from crsp_ops.tracking import start_run
from crsp_ops.tracking.outage import TrackingUnavailable
from tests.team.team_testkit import server_project

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def project(tmp_path, monkeypatch, mlflow_server):
    root = server_project(tmp_path / "proj", monkeypatch, mlflow_server.url)
    # MLflow's own HTTP retries (minutes by default) are not what is tested here
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    return root


def _log_through_outage(tracker, server, caplog, tmp_path) -> None:
    for step in range(5):
        tracker.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
    server.stop()
    with caplog.at_level(logging.WARNING, logger="crsp_ops.tracking"):
        for step in range(5, 10):  # each step tries to write; none raises
            tracker.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
        # artifacts too: a text, a dict and a file whose original is gone before the end
        tracker.log_text("written while the server was away", "notes/outage.txt")
        tracker.log_dict({"step": 9}, "state.json")
        scratch = tmp_path / "scratch" / "report.md"
        scratch.parent.mkdir()
        scratch.write_text("# report\n")
        tracker.log_artifact(scratch, "reports")
        scratch.unlink()
    assert [m.step for m in tracker.pending_metrics()] == [5, 6, 7, 8, 9]
    assert "Connection refused" in caplog.text and "points kept for the next flush" in caplog.text
    assert [(a.local.name, a.artifact_path) for a in tracker.unsent_artifacts()] == [
        ("outage.txt", "notes"), ("state.json", None), ("report.md", "reports")]


def _artifacts(client, run_id) -> dict[str, str]:
    files = {"notes/outage.txt", "state.json", "reports/report.md"}
    return {name: Path(client.download_artifacts(run_id, name)).read_text() for name in files}


EXPECTED = {"notes/outage.txt": "written while the server was away",
            "state.json": json.dumps({"step": 9}, indent=2), "reports/report.md": "# report\n"}


def test_server_killed_and_restarted_mid_run_loses_nothing(project, mlflow_server, caplog,
                                                          tmp_path):
    resolved = load_settings(project, ["tracking.flush_seconds=0.0",
                                       "tracking.retry_seconds=120"])
    with start_run("outage", resolved) as tracker:
        run_id = tracker.run_id
        _log_through_outage(tracker, mlflow_server, caplog, tmp_path)
        # back while the end of the run is retrying its final flush
        threading.Timer(1.0, mlflow_server.start).start()
    client = MlflowClient(mlflow_server.url)
    history = client.get_metric_history(run_id, "loss")
    assert sorted(m.step for m in history) == list(range(10))
    assert {m.step: m.value for m in history}[9] == pytest.approx(0.1)
    assert client.get_run(run_id).info.status == "FINISHED"
    assert _artifacts(client, run_id) == EXPECTED  # sent when the run ended
    assert not (project / "mlflow_unsent" / f"mlflow_unsent_{run_id}").exists()
    assert not (project / "mlflow_unsent" / f"mlflow_unsent_{run_id}.jsonl").exists()


def test_server_that_stays_away_gets_a_named_error_and_a_replay_file(project, mlflow_server,
                                                                     caplog, tmp_path):
    resolved = load_settings(project, ["tracking.flush_seconds=0.0",
                                       "tracking.retry_seconds=2"])
    with pytest.raises(TrackingUnavailable) as raised:
        with start_run("outage", resolved) as tracker:
            run_id = tracker.run_id
            _log_through_outage(tracker, mlflow_server, caplog, tmp_path)
    message = str(raised.value)
    unsent = project / "mlflow_unsent" / f"mlflow_unsent_{run_id}.jsonl"
    assert mlflow_server.url in message and run_id in message and str(unsent) in message
    assert "5 metric points, 3 artifacts and the status FINISHED" in message
    rows = [json.loads(line) for line in unsent.read_text().splitlines()]
    assert [r["step"] for r in rows if "step" in r] == [5, 6, 7, 8, 9]
    assert [r["artifact_path"] for r in rows if "artifact" in r] == ["notes", None, "reports"]
    assert rows[-1] == {"run_id": run_id, "status": "FINISHED"}

    mlflow_server.start()
    client = MlflowClient(mlflow_server.url)
    assert client.get_run(run_id).info.status == "RUNNING"  # the server never heard the end
    assert main(["tracking-replay", str(unsent)]) == 0
    assert sorted(m.step for m in client.get_metric_history(run_id, "loss")) == list(range(10))
    assert client.get_run(run_id).info.status == "FINISHED"
    assert _artifacts(client, run_id) == EXPECTED
    assert not unsent.exists()
    assert not (project / "mlflow_unsent" / f"mlflow_unsent_{run_id}").exists()

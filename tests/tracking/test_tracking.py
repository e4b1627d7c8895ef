import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.config import load_settings, sync_params
from crsp_ops.paths import copy_config_tree
from crsp_ops.tracking import NullTracker, start_run, tracking_uri
from crsp_ops.tracking.metric_buffer import MetricBuffer
from crsp_ops.tracking.redaction import redact_params

REPO = Path(__file__).resolve().parents[2]
FAKE_KEY = "sk-test-fake-key-0123456789abcdef"


@pytest.fixture
def project(tmp_path, monkeypatch):
    copy_config_tree(REPO, tmp_path)
    monkeypatch.chdir(tmp_path)
    for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "DVC_STAGE", "CRSP_OPS_ROOT"):
        monkeypatch.delenv(variable, raising=False)
    sync_params(tmp_path)
    return tmp_path


def client_for(project) -> MlflowClient:
    return MlflowClient(tracking_uri(load_settings(project)))


def test_run_logs_params_batched_metrics_tags_and_artifacts(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    resolved = load_settings(project, [f"limo.source=/data/{FAKE_KEY}/limo.jsonl"])
    with start_run("unit", resolved, run_name="r1") as tracker:
        for step in range(30):
            tracker.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
        tracker.log_text(f"prompt with {FAKE_KEY}", "reflector/iter_000.txt")
        tracker.log_dict({"a": 1}, "meta/a.json")
    client = client_for(project)
    run = client.get_run(tracker.run_id)
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == "crsp-unit"
    history = client.get_metric_history(tracker.run_id, "loss")
    assert [m.step for m in sorted(history, key=lambda m: m.step)] == list(range(30))
    assert run.data.params["limo.n_synthetic"] == str(resolved.settings.limo.n_synthetic)
    assert run.data.params["limo.source"] == "***"
    assert run.data.tags["crsp.job"] == "unit"
    assert run.data.tags["config.source.limo.source"] == "--set"
    # no secret in any param or artifact
    assert all(FAKE_KEY not in v for v in run.data.params.values())
    text = Path(client.download_artifacts(tracker.run_id, "reflector/iter_000.txt")).read_text()
    assert FAKE_KEY not in text and "***" in text
    # artifacts live under the project root whatever the working directory
    assert run.info.artifact_uri.startswith((project / "mlruns").as_uri())


def test_failed_run_is_failed_and_keeps_logged_metrics(project):
    resolved = load_settings(project)
    with pytest.raises(RuntimeError):
        with start_run("unit", resolved) as tracker:
            tracker.log_metrics({"x": 1.0}, step=0)  # still buffered when the error hits
            raise RuntimeError("boom")
    client = client_for(project)
    assert client.get_run(tracker.run_id).info.status == "FAILED"
    assert [m.value for m in client.get_metric_history(tracker.run_id, "x")] == [1.0]


def test_keyboard_interrupt_ends_run_killed(project):
    resolved = load_settings(project)
    with pytest.raises(KeyboardInterrupt):
        with start_run("unit", resolved) as tracker:
            tracker.log_metrics({"x": 2.0}, step=3)
            raise KeyboardInterrupt
    client = client_for(project)
    assert client.get_run(tracker.run_id).info.status == "KILLED"
    assert client.get_metric_history(tracker.run_id, "x")[0].step == 3


def test_sigterm_to_a_real_process_ends_run_killed(project):
    script = textwrap.dedent(
        """
        import sys, time
        from crsp_ops.interrupts import Terminated, raise_terminated
        import signal
        signal.signal(signal.SIGTERM, raise_terminated)
        from crsp_ops.config import load_settings
        from crsp_ops.tracking import start_run
        try:
            with start_run("unit", load_settings()) as t:
                t.log_metrics({"alive": 1.0}, step=0)
                print(t.run_id, flush=True)
                time.sleep(60)
        except Terminated:
            sys.exit(143)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    run_id = proc.stdout.readline().strip()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    client = client_for(project)
    assert client.get_run(run_id).info.status == "KILLED"
    assert client.get_metric_history(run_id, "alive")[0].value == 1.0


def test_nested_child_runs(project):
    resolved = load_settings(project)
    with start_run("unit", resolved) as parent:
        with parent.child("reflector", tags={"proposer": "reflector"}) as child:
            child.log_metrics({"composite_score": 0.5}, step=0)
    client = client_for(project)
    run = client.get_run(child.run_id)
    assert run.data.tags["mlflow.parentRunId"] == parent.run_id
    assert run.data.tags["proposer"] == "reflector"
    assert run.info.status == "FINISHED"


def test_tracking_disabled_yields_null_tracker(project):
    resolved = load_settings(project, ["tracking.enabled=n"])
    with start_run("unit", resolved) as tracker:
        tracker.log_metrics({"x": 1.0}, step=0)
    assert type(tracker) is NullTracker and tracker.run_id is None
    assert not (project / "mlflow.db").exists()


def test_metric_buffer_flushes_by_count_and_age():
    written = []
    now = [0.0]
    buffer = MetricBuffer(written.append, flush_points=5, flush_seconds=10.0, clock=lambda: now[0])
    buffer.add({"a": 1, "b": 2}, step=0)
    buffer.add({"a": 1, "b": 2}, step=1)
    assert written == [] and len(buffer) == 4
    buffer.add({"a": 1, "b": 2}, step=2)  # 6 >= 5 points
    assert [len(batch) for batch in written] == [6] and len(buffer) == 0
    buffer.add({"a": 1}, step=3)
    now[0] = 11.0
    buffer.add({"a": 1}, step=4)  # older than 10 s
    assert [len(batch) for batch in written] == [6, 2]


def test_metric_buffer_chunks_at_mlflow_batch_limit():
    written = []
    buffer = MetricBuffer(written.append, flush_points=1000, flush_seconds=1e9)
    buffer.add({f"k{i}": i for i in range(2500)}, step=0)
    buffer.flush()
    assert [len(batch) for batch in written] == [1000, 1000, 500]


def test_redaction_by_key_and_by_env_value():
    env = {"HF_TOKEN": "hf_abcdefghijklmnop", "SHORT_KEY": "1"}
    out = redact_params(
        {
            "reflector.api_key_env": "OPENAI_API_KEY",
            "model.hf_token": "x",
            "server.url": "http://u:hf_abcdefghijklmnop@h",
            "evolve.max_new_tokens": 64,
            "limo.seed": 1,
        },
        env,
    )
    assert out["model.hf_token"] == "***"
    assert out["server.url"] == "***"
    assert out["reflector.api_key_env"] == "OPENAI_API_KEY"  # a variable's name, not a secret
    assert out["evolve.max_new_tokens"] == "64" and out["limo.seed"] == "1"


@pytest.mark.parametrize("rank", ["1", "3"])
def test_a_secondary_rank_opens_no_run(project, monkeypatch, rank):
    """Under `accelerate launch` every rank runs the job; rank 0 alone tracks it."""
    monkeypatch.setenv("RANK", rank)
    with start_run("unit", load_settings(project)) as tracker:
        tracker.log_metrics({"loss": 1.0}, step=1)
    assert type(tracker) is NullTracker
    assert not (project / "mlflow.db").exists()
    monkeypatch.setenv("RANK", "0")
    with start_run("unit", load_settings(project)) as tracker:
        pass
    assert type(tracker) is not NullTracker and (project / "mlflow.db").exists()

"""`crsp-ops evolve` end to end on the tiny model: outputs, MLflow run, held-out, registry."""

from __future__ import annotations

import json

import pytest
from evolve_testkit import make_project


@pytest.fixture()
def project(tmp_path, evolve_inputs, monkeypatch):
    root = make_project(tmp_path / "proj", evolve_inputs)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return root


SMALL = ["--set", "evolve.iterations=3", "--set", "evolve.minibatch_size=4",
         "--set", "evolve.heldout_size=4", "--set", "generation.max_new_tokens=40"]


@pytest.mark.slow  # ~90 s: the whole job with MLflow, held-out and a registered pyfunc model
def test_evolve_offline_writes_outputs_and_tracks_run(project):
    from mlflow.tracking import MlflowClient

    from crsp_ops.cli.main import main

    assert main(["evolve", *SMALL]) == 0
    out = project / "outputs" / "evolution"
    history = json.loads((out / "history.json").read_text())
    assert [row["iteration"] for row in history] == [0, 1, 2]
    assert (out / "processor_best.py").read_text().startswith('"""Cluster steering')
    best = json.loads((out / "deltas_best.json").read_text())
    adopted = [row for row in history if row["improved"]]  # paired judging (the default)
    assert best == adopted[-1]["deltas"]
    for row in adopted[1:]:  # each adoption beat the best of its time on the same minibatch
        assert row["scores"]["composite_score"] > row["incumbent_scores"]["composite_score"]
    run_info = json.loads((out / "mlflow_run.json").read_text())
    client = MlflowClient(f"sqlite:///{project / 'mlflow.db'}")
    run = client.get_run(run_info["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.tags["proposer"] == "offline"
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "composite_score")]
    assert steps == [0, 1, 2]
    assert "heldout_best_composite_score" in run.data.metrics
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"evolution_lengths.png", "deltas_best.json", "processor_best.py",
            "history.json"} <= artifacts
    # tagged with what it is comparable on; registered under its base model's own name
    model_id = run.data.tags["base_model.id"]
    assert model_id.startswith("llama-") and len(run.data.tags["heldout.sha256"]) == 64
    assert len(run.data.tags["clusters.table_sha256"]) == 64
    assert len(run.data.tags["base_model.tokenizer_sha256"]) == 64
    version = client.get_model_version_by_alias(f"crsp-steering-processor-{model_id}", "champion")
    assert version.run_id == run.info.run_id
    assert version.tags["base_model.id"] == model_id

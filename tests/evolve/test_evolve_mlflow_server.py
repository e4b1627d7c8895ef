"""`crsp-ops evolve` against a real MLflow tracking server: metrics, artifacts, registry, alias.

The server is the deployment teams run (PostgreSQL backend store, artifacts proxied to a
directory, 127.0.0.1); everything is read back over HTTP with ``MlflowClient``.
"""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from evolve_testkit import make_project
from mlflow.tracking import MlflowClient

from crsp_ops.cli.main import main
from crsp_ops.evolve.registry import registered_model_name

SMALL = ["--set", "evolve.iterations=2", "--set", "evolve.minibatch_size=2",
         "--set", "evolve.heldout_size=2", "--set", "generation.max_new_tokens=24"]
BASE_NAME = "crsp-steering-processor"


def test_evolve_registers_the_processor_on_an_mlflow_server(tmp_path, evolve_inputs,
                                                            monkeypatch, mlflow_server):
    root = make_project(tmp_path / "proj", evolve_inputs)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    assert main(["evolve", *SMALL]) == 0

    out = root / "outputs" / "evolution"
    run_id = json.loads((out / "mlflow_run.json").read_text())["run_id"]
    client = MlflowClient(mlflow_server.url, registry_uri=mlflow_server.url)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["proposer"] == "offline"
    assert [m.step for m in client.get_metric_history(run_id, "composite_score")] == [0, 1]
    assert "heldout_best_composite_score" in run.data.metrics
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    assert {"deltas_best.json", "processor_best.py", "history.json"} <= artifacts
    best = json.loads((out / "deltas_best.json").read_text())
    served = client.download_artifacts(run_id, "deltas_best.json", str(tmp_path))
    assert json.loads(open(served).read()) == best

    # one registered model per base model (issue 12): the name carries the run's model id
    model = registered_model_name(BASE_NAME, run.data.tags["base_model.id"])
    version = client.get_model_version_by_alias(model, "champion")
    assert version.run_id == run_id
    assert version.source.startswith("models:/m-")  # registered from the logged model
    mlflow.set_tracking_uri(mlflow_server.url)
    try:
        pyfunc = mlflow.pyfunc.load_model(f"models:/{model}@champion")  # through the proxy
    finally:
        mlflow.set_tracking_uri(None)
    table = np.load(evolve_inputs.clusters_dir / "token_clusters.npy")
    ids = list(range(0, len(table), 7))
    assert pyfunc.predict(ids) == pytest.approx([best[str(table[i])] for i in ids])

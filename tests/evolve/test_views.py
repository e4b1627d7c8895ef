"""How runs read in MLflow: experiment kind, run names, tags, a monotone best composite.

Runs are created the way users create them: ``crsp-ops evolve`` opens its own run; ``mlflow run``
creates the run first (random name, ``MLFLOW_RUN_ID`` in the environment) and the driver
resumes it. Everything is read back from the real sqlite store.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from evolve_testkit import FakeResult, FakeScores, fake_evaluate, make_project
from mlflow.tracking import MlflowClient

from crsp_ops.cli.main import main
from crsp_ops.config import load_settings
from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.offline_proposer import OfflineProposer
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.evolve.token_usage import ClusterCounter
from crsp_ops.tracking import start_run, tracking_uri
from crsp_ops.tracking.run_tags import EXPERIMENT_KIND, EXPERIMENT_KIND_TAG

TINY = ["evolve.iterations=2", "evolve.minibatch_size=2", "evolve.heldout_size=2",
        "evolve.registry_enabled=n", "generation.max_new_tokens=8"]
SETS = [arg for item in TINY for arg in ("--set", item)]


@pytest.fixture()
def project(tmp_path, evolve_inputs, monkeypatch):
    root = make_project(tmp_path / "proj", evolve_inputs)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    for name in ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(name, raising=False)
    return root


def _client(root) -> MlflowClient:
    return MlflowClient(tracking_uri(load_settings(root)))


def _run_id(root, out) -> str:
    return json.loads((root / out / "mlflow_run.json").read_text())["run_id"]


def test_evolve_and_mlflow_run_runs_read_at_a_glance(project, monkeypatch):
    assert main(["evolve", *SETS, "--out", "outputs/evo"]) == 0
    client = _client(project)
    run = client.get_run(_run_id(project, "outputs/evo"))
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
    assert run.info.run_name == "evolve-offline-tiny-2it"
    tags = run.data.tags
    assert tags["proposer"] == "offline" and tags["base_model.id"].startswith("llama-")
    assert tags["budget.iterations"] == "2" and tags["budget.max_rollouts"] == "8"
    assert tags["seed"] == "0"
    metrics = run.data.metrics
    assert metrics["heldout_composite_ci_low"] <= metrics["heldout_best_composite_score"] \
        <= metrics["heldout_composite_ci_high"]
    assert "best_composite" in metrics and "best_composite_score" not in metrics

    # `mlflow run . -e optuna --experiment-name crsp-mlflow-run`: the CLI makes the experiment
    # (no kind tag) and a randomly named run, then the driver resumes that run.
    experiment_id = client.create_experiment("crsp-mlflow-run")
    created = client.create_run(experiment_id, tags={"mlflow.source.type": "PROJECT"})
    assert created.info.run_name and not created.info.run_name.startswith("evolve")
    monkeypatch.setenv("MLFLOW_RUN_ID", created.info.run_id)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment_id)
    assert main(["optuna", *SETS, "--out", "outputs/opt"]) == 0
    run = client.get_run(created.info.run_id)
    assert run.info.run_name == "evolve-optuna-tpe-tiny-2it-w0"
    assert run.data.tags["mlflow.runName"] == "evolve-optuna-tpe-tiny-2it-w0"
    assert run.data.tags["proposer"] == "optuna"
    assert client.get_experiment(experiment_id).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND


def _harder_later(examples, deltas):
    """``fake_evaluate`` whose composite drops with the minibatch's mean example id."""
    result = fake_evaluate(examples, deltas)
    s = result.scores
    difficulty = 0.02 * float(np.mean([int(e) for e in examples]))
    return FakeResult(result.records, FakeScores(s.mean_token_length, s.correctness_ratio,
                                                 s.shortness_score, s.composite_score - difficulty))


def test_best_composite_never_decreases_when_the_incumbent_rescores_lower(project, tmp_path):
    k = 4
    store = EvolutionStore(tmp_path / "evo", np.arange(k), k)
    proposer = OfflineProposer(ClusterCounter(np.arange(k), k, tokenize=lambda t: []),
                               clamp=5.0, step=0.5)
    with start_run("evolve", load_settings(project), run_name="evolve-offline-fake-10it") as t:
        outcome = run_evolution(
            pool=list(range(20)), evaluate=_harder_later, proposer=proposer, store=store,
            initial_deltas={str(i): 0.0 for i in range(k)},
            cluster_descriptions={str(i): {"description": f"c{i}"} for i in range(k)},
            config=LoopConfig(iterations=10, minibatch_size=4, seed=1, stop_on_failure=False,
                              paired_best=True),
            tracker=t,
        )
    client = _client(project)

    def series(key):
        return [m.value for m in sorted(client.get_metric_history(t.run_id, key),
                                        key=lambda m: m.step)]

    best, rescored = series("best_composite"), series("incumbent_rescored_composite")
    assert len(best) == 10 and not any(math.isnan(v) for v in best)
    assert all(b >= a for a, b in zip(best, best[1:], strict=False))
    # the premise: the incumbent re-scored lower than the best seen before it
    assert any(row.incumbent_scores is not None and
               row.incumbent_scores["composite_score"] < best[row.iteration - 1]
               for row in outcome.history)
    assert min(rescored) < max(best)

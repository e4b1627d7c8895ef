"""Registry: each best processor is a pyfunc version; the alias moves only to a better score."""

from __future__ import annotations

import os

import numpy as np

from crsp_ops.evolve.registry import register_processor, should_move_alias
from crsp_ops.steering.codegen import write_processor
from crsp_ops.steering.deltas import save_deltas


def test_alias_rule():
    assert should_move_alias(0.1, None)
    assert not should_move_alias(0.5, 0.5)
    assert not should_move_alias(0.4, 0.5)
    assert should_move_alias(0.51, 0.5)


def test_champion_moves_only_on_better_heldout_composite(tmp_path, monkeypatch):
    import mlflow
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # The caller's own MLflow session points elsewhere; registering must leave it there.
    callers = f"sqlite:///{tmp_path / 'callers.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", callers)
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    before = (mlflow.get_tracking_uri(), mlflow.get_registry_uri())
    client = MlflowClient(uri, registry_uri=uri)
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "art").as_uri())
    table = np.array([0, 1, 2, 2, 1], dtype=np.int64)
    np.save(tmp_path / "token_clusters.npy", table)
    versions = []
    for score, deltas in ((0.5, [0.0, 1.0, -1.0]), (0.4, [0.0, 2.0, -2.0]),
                          (0.6, [0.5, 0.0, -3.0])):
        run_id = client.create_run(experiment).info.run_id
        folder = tmp_path / run_id
        deltas_path = save_deltas(folder / "deltas_best.json",
                                  {str(i): v for i, v in enumerate(deltas)})
        processor = write_processor(folder / "processor_best.py", table, deltas, n_clusters=3)
        registration = register_processor(
            client, tracking_uri=uri, run_id=run_id, name="proc", alias="champion",
            deltas_path=deltas_path, table_path=tmp_path / "token_clusters.npy",
            processor_path=processor, heldout_composite=score, tags={"proposer": "offline"},
            comparison={"base_model.id": "tiny-abc", "heldout.sha256": "h"},
        )
        assert client.get_run(run_id).info.status == "RUNNING"  # the tracker ends it, not us
        versions.append(registration)
        champion = client.get_model_version_by_alias("proc", "champion")
        if score == 0.4:
            assert not registration.alias_moved and str(champion.version) == versions[0].version
        else:
            assert registration.alias_moved and str(champion.version) == registration.version
    assert [v.version for v in versions] == ["1", "2", "3"]
    assert (mlflow.get_tracking_uri(), mlflow.get_registry_uri()) == before == (callers, callers)
    assert "MLFLOW_REGISTRY_URI" not in os.environ
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    model = mlflow.pyfunc.load_model("models:/proc@champion")
    assert model.predict([0, 1, 2, 3, 4]) == [0.5, 0.0, -3.0, -3.0, 0.0]
    assert mlflow.active_run() is None


def test_champion_never_moves_across_models_or_heldout_sets(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri, registry_uri=uri)
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "art").as_uri())
    table = np.array([0, 1, 2], dtype=np.int64)
    np.save(tmp_path / "token_clusters.npy", table)

    def register(score, model, heldout):
        run_id = client.create_run(experiment).info.run_id
        deltas_path = save_deltas(tmp_path / run_id / "d.json", {"0": 0.0, "1": 0.0, "2": 0.0})
        processor = write_processor(tmp_path / run_id / "p.py", table, [0.0] * 3, n_clusters=3)
        return register_processor(
            client, tracking_uri=uri, run_id=run_id, name="proc", alias="champion",
            deltas_path=deltas_path, table_path=tmp_path / "token_clusters.npy",
            processor_path=processor, heldout_composite=score, tags={},
            comparison={"base_model.id": model, "heldout.sha256": heldout},
        )

    first = register(0.30, "tiny-aaa", "h1")
    other_model = register(0.90, "smollm2-bbb", "h1")  # far better, but another model
    other_heldout = register(0.90, "tiny-aaa", "h2")  # same model, another held-out set
    better = register(0.31, "tiny-aaa", "h1")
    assert first.alias_moved and better.alias_moved
    assert not other_model.alias_moved and "base_model.id" in other_model.reason
    assert not other_heldout.alias_moved and "heldout.sha256" in other_heldout.reason
    assert str(client.get_model_version_by_alias("proc", "champion").version) == better.version


def test_versions_of_killed_or_failed_runs_are_pruned_and_the_alias_returns(
        tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from crsp_ops.evolve.registry import prune_unfinished_versions

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri, registry_uri=uri)
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "art").as_uri())
    table = np.array([0, 1, 2], dtype=np.int64)
    np.save(tmp_path / "token_clusters.npy", table)

    def register(score, final_status):
        run_id = client.create_run(experiment).info.run_id
        deltas = [0.0, score, -score]
        registration = register_processor(
            client, tracking_uri=uri, run_id=run_id, name="proc", alias="champion",
            deltas_path=save_deltas(tmp_path / run_id / "d.json",
                                    {str(i): v for i, v in enumerate(deltas)}),
            table_path=tmp_path / "token_clusters.npy",
            processor_path=write_processor(tmp_path / run_id / "p.py", table, deltas,
                                           n_clusters=3),
            heldout_composite=score, tags={},
            comparison={"base_model.id": "m", "heldout.sha256": "h"},
        )
        client.set_terminated(run_id, final_status)
        return registration.version

    finished = register(0.5, "FINISHED")
    killed = register(0.7, "KILLED")  # moved the alias, then its run was killed
    assert str(client.get_model_version_by_alias("proc", "champion").version) == killed
    failed = register(0.4, "FAILED")  # the registration pruned the KILLED one first
    assert str(client.get_model_version_by_alias("proc", "champion").version) == finished
    assert prune_unfinished_versions(client, "proc", "champion") == [failed]
    assert [str(v.version) for v in client.search_model_versions("name = 'proc'")] == [finished]

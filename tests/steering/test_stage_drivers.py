"""The ``clusters``, ``deltas`` and ``generate-processor`` stages through the real CLI."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from crsp_ops.cli.commands.deltas import initial_deltas
from crsp_ops.cli.commands.serve import local_server_argv
from crsp_ops.cli.main import main
from crsp_ops.cli.stage_io import run_record_path
from crsp_ops.config import load_settings
from crsp_ops.paths import copy_config_tree
from crsp_ops.steering.bias import add_bias, bias_rows
from crsp_ops.steering.cluster_io import load_token_clusters, save_token_clusters

REPO = Path(__file__).resolve().parents[2]
K = 4  # k-means clusters: ids 0 .. 5
STAGE_FILES = ("token_clusters.npy", "clusters_meta.json", "token_texts.json",
               "cluster_descriptions.json")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    copy_config_tree(REPO, root)
    return root


@pytest.fixture(autouse=True)
def in_project(project, monkeypatch):
    monkeypatch.setenv("CRSP_OPS_ROOT", str(project))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)


@pytest.fixture(scope="module")
def stage_out(project, tiny_model_dir, tmp_path_factory):
    """Run ``crsp-ops clusters`` once (real packaged MiniLM, MLflow into the scratch project)."""
    out = tmp_path_factory.mktemp("stage") / "clusters"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CRSP_OPS_ROOT", str(project))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        patch.delenv("MLFLOW_RUN_ID", raising=False)
        code = main(["clusters", "--model", str(tiny_model_dir), "--out", str(out),
                     "--no-progress", "--set", f"clusters.n_kmeans_clusters={K}",
                     "--set", "clusters.pca_dim=8", "--set", "clusters.device=cpu"])
    assert code == 0
    return out


def test_clusters_stage_rules_and_saved_state(stage_out, tiny_model_dir):
    from transformers import AutoTokenizer, GenerationConfig

    from crsp_ops.steering.embedder import load_sentence_embedder
    from crsp_ops.steering.token_rules import eos_token_ids, numeric_symbol_ids, subword_prefix

    clusters = load_token_clusters(stage_out)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    eos = eos_token_ids(tokenizer, GenerationConfig.from_pretrained(tiny_model_dir).eos_token_id)
    numeric = numeric_symbol_ids(list(clusters.texts), subword_prefix(tokenizer), excluded=eos)
    table = clusters.token_clusters
    assert clusters.n_clusters == K + 2 and len(table) == len(tokenizer)
    assert set(np.flatnonzero(table == 0)) == set(eos) == set(clusters.eos_ids)
    assert set(np.flatnonzero(table == 1)) == set(numeric) and len(numeric) > 10
    rest = np.flatnonzero(table >= 2)
    assert set(table[rest]) == set(range(2, K + 2))
    # The saved PCA + k-means reproduce the table from fresh embeddings of the same texts.
    embed = load_sentence_embedder("all-MiniLM-L6-v2", device="cpu", batch_size=512)
    labels = clusters.kmeans.predict(
        clusters.pca.transform(embed([clusters.texts[i] for i in rest])).astype(np.float32)
    )
    np.testing.assert_array_equal(labels + 2, table[rest])
    sizes = [clusters.descriptions[str(c)]["size"] for c in range(K + 2)]
    assert sizes == np.bincount(table, minlength=K + 2).tolist()


def test_clusters_stage_outputs_reload_identically(stage_out, tmp_path):
    save_token_clusters(tmp_path, load_token_clusters(stage_out))
    for name in STAGE_FILES:
        assert (tmp_path / name).read_bytes() == (stage_out / name).read_bytes(), name


def test_clusters_stage_logs_a_short_mlflow_run(stage_out, project):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{project / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("crsp-clusters")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["n_clusters"] == K + 2
    assert run.data.params["clusters.n_kmeans_clusters"] == str(K)
    artifacts = [item.path for item in client.list_artifacts(run.info.run_id, "clusters")]
    assert "clusters/cluster_descriptions.json" in artifacts
    assert json.loads(run_record_path(stage_out).read_text())["run_id"] == run.info.run_id
    assert not (stage_out / "mlflow_run.json").exists()  # never inside a dependency directory


def test_deltas_stage_composes_default_file_and_overrides(stage_out, tmp_path, capsys):
    out = tmp_path / "deltas" / "deltas_initial.json"
    assert main(["deltas", "--clusters", str(stage_out), "--out", str(out),
                 "--set", "deltas.default=0.25", "--set", "deltas.overrides=0=-3,5=1.5",
                 "--set", "deltas.clamp=2"]) == 0
    assert json.loads(out.read_text()) == {
        "0": -2.0, "1": 0.25, "2": 0.25, "3": 0.25, "4": 0.25, "5": 1.5
    }
    user = tmp_path / "user.json"
    user.write_text(json.dumps({str(i): float(i) for i in range(K + 2)}))
    assert main(["deltas", "--clusters", str(stage_out), "--out", str(out),
                 "--set", f"deltas.file={user}"]) == 0
    assert json.loads(out.read_text()) == {str(i): float(i) for i in range(K + 2)}


def test_deltas_stage_rejects_a_file_with_the_wrong_cluster_ids(stage_out, tmp_path, capsys):
    user = tmp_path / "user.json"
    user.write_text(json.dumps({str(i): 0.0 for i in range(K + 3)}))  # one id too many
    out = tmp_path / "d.json"
    code = main(["deltas", "--clusters", str(stage_out), "--out", str(out),
                 "--set", f"deltas.file={user}"])
    assert code == 2 and not out.exists()
    assert "unexpected ['6']" in capsys.readouterr().err
    assert main(["deltas", "--clusters", str(stage_out), "--out", str(out),
                 "--set", "deltas.overrides=9=1"]) == 2


def test_initial_deltas_is_pure_and_validates():
    assert initial_deltas(2, default=1.0, file_deltas=None, overrides={}, clamp=None) == {
        "0": 1.0, "1": 1.0
    }
    with pytest.raises(ValueError, match="finite"):
        initial_deltas(2, default=0.0, file_deltas={"0": 0.0, "1": float("nan")}, overrides={},
                       clamp=None)


def test_generate_processor_matches_the_bias_core(stage_out, tmp_path):
    deltas = {str(i): round(0.5 * i - 1.0, 2) for i in range(K + 2)}
    deltas_file = tmp_path / "deltas.json"
    deltas_file.write_text(json.dumps(deltas))
    out = tmp_path / "processor.py"
    assert main(["generate-processor", "--clusters", str(stage_out), "--deltas", str(deltas_file),
                 "--out", str(out)]) == 0
    spec = importlib.util.spec_from_file_location("generated_processor", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = torch.from_numpy(np.load(stage_out / "token_clusters.npy"))
    logits = torch.randn(3, len(table) + 5, generator=torch.Generator().manual_seed(0))
    expected = add_bias(logits, bias_rows(table, torch.tensor(list(deltas.values()))))
    torch.testing.assert_close(module.apply_steering(logits.clone()), expected)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"0": 1.0}))
    assert main(["generate-processor", "--clusters", str(stage_out), "--deltas", str(bad),
                 "--out", str(tmp_path / "p2.py")]) == 2


def test_serve_builds_the_local_server_command(project):
    settings = load_settings(project, ["generation.base_url=http://127.0.0.1:8123/v1",
                                       "model.device=cpu"], env={}).settings
    args = argparse.Namespace(model="models/base", clusters="outputs/clusters", port=None,
                              host=None)
    argv = local_server_argv(args, settings)
    assert argv[argv.index("--port") + 1] == "8123"
    assert argv[argv.index("--token-clusters") + 1] == "outputs/clusters"
    assert argv[argv.index("--served-model-name") + 1] == "models/base"
    assert argv[argv.index("--default-max-tokens") + 1] == str(settings.generation.max_new_tokens)

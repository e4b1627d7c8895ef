"""The documented recipes, run as a user would: `mlflow run` offline and `dvc repro` twice."""

import json
import subprocess
from pathlib import Path

from mlflow.tracking import MlflowClient

from tests.recipes.conftest import SMALL, configure, recipe_env


def run(root, *command):
    return subprocess.run(
        command, cwd=root, env=recipe_env(root), capture_output=True, text=True, timeout=600
    )


def test_mlflow_run_entry_point_offline_with_declared_and_dotted_params(project_copy):
    configure(project_copy, SMALL)
    done = run(
        project_copy, "mlflow", "run", ".", "-e", "limo", "--env-manager", "local",
        "--experiment-name", "crsp-data", "-P", "n_synthetic=7", "-P", "limo.seed=5",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "limo: 7 rows from synthetic" in done.stdout
    rows = (project_copy / "data/limo/limo.jsonl").read_text().splitlines()
    assert len(rows) == 7
    client = MlflowClient(f"sqlite:///{project_copy / 'mlflow.db'}")
    (run_info,) = client.search_runs(
        [client.get_experiment_by_name("crsp-data").experiment_id]
    )
    assert run_info.info.status == "FINISHED"
    assert run_info.data.tags["mlflow.project.entryPoint"] == "limo"
    params = run_info.data.params
    assert params["limo.n_synthetic"] == "7" and params["limo.seed"] == "5"
    assert params["n_synthetic"] == "7"  # the MLflow CLI's own record of the -P value
    assert run_info.data.metrics["limo_rows"] == 7


def test_dvc_repro_twice_second_run_is_up_to_date(project_copy):
    configure(project_copy, SMALL)
    first = run(project_copy, "dvc", "repro", "base_model")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for stage in ("limo", "financebench", "convert_model", "base_model"):
        assert f"Running stage '{stage}'" in first.stdout
    assert (project_copy / "models/base/config.json").is_file()
    # the default profile converts nothing and needs no wheel
    assert (project_copy / "models/converted/skipped.json").is_file()
    record = json.loads((project_copy / "models/base.mlflow_run.json").read_text())
    client = MlflowClient(f"sqlite:///{project_copy / 'mlflow.db'}")
    base_run = client.get_run(record["run_id"])
    assert [m.step for m in client.get_metric_history(base_run.info.run_id, "loss")] == [
        1, 2, 3, 4, 5, 6
    ]
    # the run is tied to the current DVC hashes of its inputs
    lock = (project_copy / "dvc.lock").read_text()
    assert base_run.data.tags["dvc.stage"] == "base_model"
    hashes = client.download_artifacts(base_run.info.run_id, "dvc/hashes.json",
                                       str(project_copy.parent))
    assert json.loads(Path(hashes).read_text())["deps"]["data/limo"] in lock
    assert not [k for k in base_run.data.tags if k.startswith("dvc.dep.")]  # one artifact

    second = run(project_copy, "dvc", "repro", "base_model")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Running stage" not in second.stdout
    assert "up to date" in second.stdout

    # a changed param re-runs exactly the stages that read it
    configure(project_copy, SMALL.replace("TRAIN_STEPS=6", "TRAIN_STEPS=7"))
    third = run(project_copy, "dvc", "repro", "base_model")
    assert "Running stage 'base_model'" in third.stdout
    assert "Running stage 'limo'" not in third.stdout

"""A DVC remote as a team uses one: push after `dvc repro`, pull into a fresh clone.

The remote is a local directory (what `dvc remote add -d storage s3://...` changes is the URL
only); the MLflow store is one both checkouts share, as a team's tracking server is.
"""

import json
import subprocess
from pathlib import Path

from mlflow.tracking import MlflowClient

from tests.recipes.conftest import SMALL, configure, recipe_env

OUTPUTS = ("data/limo", "data/financebench", "models/base")


def _run(root, env, *command):
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


def test_push_then_fresh_clone_pull_restores_outputs_and_repro_is_a_no_op(project_copy,
                                                                          tmp_path):
    store = f"sqlite:///{tmp_path / 'team' / 'mlflow.db'}"
    (tmp_path / "team").mkdir()
    configure(project_copy, SMALL)
    env = {**recipe_env(project_copy), "MLFLOW_TRACKING_URI": store}
    (project_copy / ".gitignore").write_text("mlruns/\nmlflow.db*\n")
    _run(project_copy, env, "dvc", "repro", "base_model")
    remote = tmp_path / "dvc-remote"
    _run(project_copy, env, "dvc", "remote", "add", "-d", "storage", str(remote))
    pushed = _run(project_copy, env, "dvc", "push", "--with-deps", "base_model")
    assert "pushed" in pushed.stdout and any(remote.rglob("*"))
    _run(project_copy, env, "git", "add", "-A")
    _run(project_copy, env, "git", "commit", "-qm", "pipeline")

    clone = tmp_path / "clone"
    _run(tmp_path, env, "git", "clone", "-q", str(project_copy), str(clone))
    clone_env = {**recipe_env(clone), "MLFLOW_TRACKING_URI": store}
    assert not (clone / "models" / "base").exists()
    _run(clone, clone_env, "dvc", "pull", "--with-deps", "base_model")
    for out in OUTPUTS:
        original = sorted(p.relative_to(project_copy / out).as_posix()
                          for p in (project_copy / out).rglob("*") if p.is_file())
        restored = sorted(p.relative_to(clone / out).as_posix()
                          for p in (clone / out).rglob("*") if p.is_file())
        assert restored == original and restored, out
    assert (clone / "models/base/config.json").read_bytes() == \
        (project_copy / "models/base/config.json").read_bytes()

    again = _run(clone, clone_env, "dvc", "repro", "base_model")
    assert "Running stage" not in again.stdout and "up to date" in again.stdout
    status = _run(clone, clone_env, "dvc", "status", "--with-deps", "base_model")
    assert "up to date" in status.stdout

    # the run id recorded beside the output (restored by the pull) still resolves
    record = json.loads((clone / "models/base.mlflow_run.json").read_text())
    base = MlflowClient(store).get_run(record["run_id"])
    assert base.info.status == "FINISHED" and base.data.tags["dvc.stage"] == "base_model"
    hashes = MlflowClient(store).download_artifacts(record["run_id"], "dvc/hashes.json",
                                                    str(clone.parent))
    assert json.loads(Path(hashes).read_text())["deps"]["data/limo"] in \
        (clone / "dvc.lock").read_text()

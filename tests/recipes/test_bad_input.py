"""A user's input mistake, through the real CLI: one line naming the fix, exit 2, no FAILED or
RUNNING run."""

import json
import sqlite3
import subprocess

import numpy as np
import pytest

from tests.recipes.conftest import copy_project, recipe_env

CASES = {
    "evolve model missing": ["evolve", "--model", "/nonexistent"],
    "evolve clusters missing": ["evolve", "--clusters", "/nonexistent"],
    "evolve deltas missing": ["evolve", "--deltas", "/nonexistent.json"],
    "evolve deltas lacks a cluster id": ["evolve", "--deltas", "lacks_id.json"],
    "evolve deltas holds a string": ["evolve", "--deltas", "string_value.json"],
    "evolve deltas not json": ["evolve", "--deltas", "not_json.json"],
    "evolve pool missing": ["evolve", "--pool", "/nonexistent.jsonl"],
    "evolve resume without a run": ["evolve", "--resume", "outputs/nothing_here"],
    "evolve bad option value": ["evolve", "--set", "evolve.iterations=abc"],
    "train model missing": ["train", "--model", "/nonexistent"],
    "train resume from what is not a checkpoint": ["train", "--resume", "models/base"],
    "train chat_template_kwargs not json": [
        "train", "--set", "generation.chat_template_kwargs=notjson"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project with a stand-in model, three clusters and their deltas (no pool)."""
    root = copy_project(tmp_path_factory.mktemp("bad_input") / "p", ("Kconfig",))
    (root / "models/base").mkdir(parents=True)
    (root / "models/base/config.json").write_text("{}")
    clusters = root / "outputs/clusters"
    clusters.mkdir(parents=True)
    np.save(clusters / "token_clusters.npy", np.array([0, 1, 2, 0]))
    (clusters / "clusters_meta.json").write_text(json.dumps({"n_clusters": 3}))
    (clusters / "cluster_descriptions.json").write_text(json.dumps({"0": "a", "1": "b", "2": "c"}))
    (root / "outputs/deltas").mkdir()
    (root / "outputs/deltas/deltas_initial.json").write_text(json.dumps({"0": 0, "1": 0, "2": 0}))
    (root / "lacks_id.json").write_text(json.dumps({"0": 0.0, "1": 0.0}))
    (root / "string_value.json").write_text(json.dumps({"0": "high", "1": 0.0, "2": 0.0}))
    (root / "not_json.json").write_text("{0: 1")
    return root


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_and_exit_2(project, argv):
    done = subprocess.run(["crsp-ops", *argv], cwd=project, env=recipe_env(project),
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len(lines) == 1 and lines[0].startswith(f"crsp-ops {argv[0]}: "), done.stderr
    store = project / "mlflow.db"
    if store.exists():
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM runs WHERE status IN ('FAILED', 'RUNNING')"
                              ).fetchone() == (0,)

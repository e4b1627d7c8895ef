"""`crsp-ops compare` on two real (tiny) evolution runs: the table and the plot."""

from __future__ import annotations

import json

import pytest
from evolve_testkit import make_project

from crsp_ops.evolve.compare import COLUMNS

TINY = ["evolve.iterations=2", "evolve.minibatch_size=2", "evolve.heldout_size=2",
        "evolve.registry_enabled=n", "generation.max_new_tokens=8"]


@pytest.fixture()
def project(tmp_path, evolve_inputs, monkeypatch):
    root = make_project(tmp_path / "proj", evolve_inputs)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return root


def test_compare_lists_both_runs_with_their_columns(project, capsys):
    from pipelines.cli import main

    sets = [arg for item in TINY for arg in ("--set", item)]
    assert main(["evolve", *sets, "--out", "outputs/evo-offline"]) == 0
    assert main(["optuna", *sets, "--out", "outputs/evo-optuna"]) == 0
    run_ids = {
        kind: json.loads((project / f"outputs/evo-{kind}/mlflow_run.json").read_text())["run_id"]
        for kind in ("offline", "optuna")
    }
    capsys.readouterr()

    assert main(["compare", "--out", "outputs/compare"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == [name for name, _ in COLUMNS]
    rows = {line.split()[3]: line.split() for line in table[2:4]}  # proposer column
    assert set(rows) == {"offline", "optuna"}
    for kind, cells in rows.items():
        assert run_ids[kind].startswith(cells[0])
        assert cells[2] == "FINISHED" and cells[4] == "2"  # status, iterations
        assert all(float(c) > 0 for c in cells[5:8])  # best minibatch, held-out init/best
    saved = json.loads((project / "outputs/compare/comparison.json").read_text())
    assert {row["run_id"] for row in saved} == set(run_ids.values())
    assert (project / "outputs/compare/comparison.png").stat().st_size > 1000

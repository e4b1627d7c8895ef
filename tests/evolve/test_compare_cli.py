"""`crsp-ops compare` on two real (tiny) evolution runs: the table and the plot."""

from __future__ import annotations

import json

import pytest
from evolve_testkit import make_project

from crsp_ops.evolve.compare import COLUMNS, RunRow, format_table, group_rows, save_comparison_plot

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
    assert table[0].startswith("base model llama-") and table[0].endswith(": 2 run(s)")
    assert table[1].split() == [name for name, _ in COLUMNS]
    rows = {line.split()[3]: line.split() for line in table[3:5]}  # proposer column
    assert set(rows) == {"offline", "optuna"}
    for kind, cells in rows.items():
        assert run_ids[kind].startswith(cells[0])
        assert cells[2] == "FINISHED" and cells[4] == "2"  # status, iterations
        assert all(float(c) > 0 for c in cells[5:8])  # best minibatch, held-out init/best
    saved = json.loads((project / "outputs/compare/comparison.json").read_text())
    assert {row["run_id"] for row in saved} == set(run_ids.values())
    assert (project / "outputs/compare/comparison.png").stat().st_size > 1000


def _row(run_id, model, score, heldout="h1"):
    return RunRow(run_id=run_id, run_name="r", status="FINISHED", proposer="offline",
                  iterations=1, best_minibatch_composite=score, heldout_initial_composite=0.1,
                  heldout_best_composite=score, reflector_tokens=0.0, wall_time_s=1.0,
                  base_model=model, heldout_set=heldout)


def test_compare_ranks_within_a_model_and_never_across(tmp_path):
    rows = [_row("a", "tiny-1", 0.2), _row("b", "smollm2-2", 0.9), _row("c", "tiny-1", 0.4),
            _row("d", "tiny-1", 0.8, heldout="h2")]
    groups = group_rows(rows)
    assert [[r.run_id for r in g] for g in groups.values()] == [["c", "a"], ["b"], ["d"]]
    text = format_table(rows)
    sections = [line for line in text.splitlines() if line.startswith("base model")]
    assert sections == ["base model tiny-1, held-out set h1: 2 run(s)",
                        "base model smollm2-2, held-out set h1: 1 run(s)",
                        "base model tiny-1, held-out set h2: 1 run(s)"]
    assert text.splitlines()[-1].startswith("3 groups of different base models")
    plot = save_comparison_plot(rows, tmp_path / "c.png")  # one panel per group
    assert plot.stat().st_size > 1000

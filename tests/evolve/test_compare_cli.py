"""`crsp-ops compare` on real (tiny) evolution runs: aligned table, exact figures, the figure."""

from __future__ import annotations

import json
import math

import pytest
from evolve_testkit import make_project
from mlflow.tracking import MlflowClient

from crsp_ops.cli.main import main
from crsp_ops.config import load_settings
from crsp_ops.evolve.compare import HEADERS, NAN, RunRow, format_table, group_rows
from crsp_ops.evolve.compare_plot import save_comparison_figure
from crsp_ops.tracking import tracking_uri
from tests.fakes import ScriptedJSONServer, chat_completion

TINY = ["evolve.iterations=2", "evolve.minibatch_size=2", "evolve.heldout_size=2",
        "evolve.registry_enabled=n", "generation.max_new_tokens=8"]
SETS = [arg for item in TINY for arg in ("--set", item)]
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


@pytest.fixture()
def project(tmp_path, evolve_inputs, monkeypatch):
    root = make_project(tmp_path / "proj", evolve_inputs)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    for name in ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID",
                 "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return root


def reflector_server(n_clusters: int) -> ScriptedJSONServer:
    """An OpenAI-protocol reflector that proposes a small valid change and reports usage."""
    deltas = {str(i): (-0.5 if i == 2 else 0.0) for i in range(n_clusters)}
    content = json.dumps({"deltas": deltas, "summary": "cluster 2 down"})
    return ScriptedJSONServer(lambda body, count: (
        200, chat_completion(content, body["model"], usage=USAGE, id=f"c{count}"), 0.0))


def column_spans(rule: str) -> list[tuple[int, int]]:
    """(start, end) of each dash run of the table's rule line."""
    spans, start = [], None
    for i, char in enumerate(rule + " "):
        if char == "-" and start is None:
            start = i
        elif char != "-" and start is not None:
            spans.append((start, i))
            start = None
    return spans


@pytest.mark.server
def test_compare_table_lines_up_with_exact_tokens_and_wall_time(project, evolve_inputs, capsys):
    assert main(["evolve", *SETS, "--out", "outputs/evo-offline"]) == 0
    assert main(["optuna", *SETS, "--out", "outputs/evo-optuna"]) == 0
    with reflector_server(evolve_inputs.n_clusters) as server:
        assert main(["evolve", *SETS, "--set", "evolve.proposer=reflector",
                     "--set", f"reflector.base_url={server.base_url}",
                     "--set", "reflector.max_attempts=1",
                     "--out", "outputs/evo-reflector"]) == 0
    run_ids = {kind: json.loads((project / f"outputs/evo-{kind}/mlflow_run.json").read_text())
               ["run_id"] for kind in ("offline", "optuna", "reflector")}
    capsys.readouterr()

    assert main(["compare", "--out", "outputs/compare"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "base model tiny, 2 held-out questions: 3 run(s)"
    header, rule, body = lines[1], lines[2], lines[3:6]
    spans = column_spans(rule)
    assert len(spans) == len(HEADERS)
    for line in [header, *body]:  # every cell sits inside its column, gaps stay blank
        cells = [line[a:b].strip() for a, b in spans]
        assert all(cell for cell in cells[:4]), line
        assert all(line[b:c].strip() == "" for (_, b), (c, _) in zip(spans, spans[1:], strict=False))
    assert [header[a:b].strip() for a, b in spans] == list(HEADERS)
    rows = {line[spans[1][0]:spans[1][1]].strip(): line for line in body}
    assert set(rows) == {"offline", "optuna", "reflector"}

    def cell(kind, name):
        a, b = spans[HEADERS.index(name)]
        return rows[kind][a:b].strip()

    client = MlflowClient(tracking_uri(load_settings(project)))
    for kind, run_id in run_ids.items():
        info = client.get_run(run_id).info
        assert cell(kind, "run") == run_id[:8] and cell(kind, "status") == "FINISHED"
        assert cell(kind, "name") == info.run_name
        assert float(cell(kind, "wall_s")) == pytest.approx(
            (info.end_time - info.start_time) / 1000.0, abs=0.051)
        assert float(cell(kind, "heldout_best")) > 0
    # two iterations, one reflector call each, 120 tokens a call
    assert cell("reflector", "reflector_tokens") == "240" and cell("offline", "reflector_tokens") == "0"
    saved = json.loads((project / "outputs/compare/comparison.json").read_text())
    assert {row["run_id"] for row in saved} == set(run_ids.values())
    assert (project / "outputs/compare/comparison.png").stat().st_size > 10_000
    compare_runs = client.search_runs(
        [client.get_experiment_by_name("crsp-compare").experiment_id])
    assert compare_runs[0].info.run_name == "compare-3runs"
    logged = {f.path for f in client.list_artifacts(compare_runs[0].info.run_id, "compare")}
    assert logged == {"compare/comparison.png", "compare/comparison.txt",
                      "compare/comparison.json"}


def _row(run_id, model, score, heldout="h1"):
    return RunRow(run_id=run_id, run_name=f"evolve-offline-{run_id}", status="FINISHED",
                  proposer="offline", iterations=3, best_minibatch_composite=score,
                  heldout_initial_composite=0.1, heldout_best_composite=score,
                  reflector_tokens=0.0, wall_time_s=1.0, base_model=model, heldout_set=heldout,
                  model_name=model, heldout_size={"h1": "4", "h2": "6"}[heldout],
                  heldout_best_ci=(score - 0.05, score + 0.05),
                  tokens_change=(-0.2638, -0.2977, -0.2291) if run_id == "b" else (NAN,) * 3,
                  correctness_gain=(0.0175, -0.015, 0.05) if run_id == "b" else (NAN,) * 3,
                  curves={"composite_score": [0.1, 0.3, score], "best_composite": [0.1, 0.3,
                                                                                    score],
                          "shortness_score": [0.2, 0.5, 0.4], "correctness_ratio": [0.9, 0.6,
                                                                                    0.8]})


def test_compare_ranks_within_a_model_and_never_across(tmp_path):
    rows = [_row("a", "tiny-1", 0.2), _row("b", "smollm2-2", 0.9), _row("c", "tiny-1", 0.4),
            _row("d", "tiny-1", 0.8, heldout="h2")]
    groups = group_rows(rows)
    assert [[r.run_id for r in g] for g in groups.values()] == [["c", "a"], ["b"], ["d"]]
    text = format_table(rows)
    sections = [line for line in text.splitlines() if line.startswith("base model")]
    assert sections == ["base model tiny-1, 4 held-out questions: 2 run(s)",
                        "base model smollm2-2, 4 held-out questions: 1 run(s)",
                        "base model tiny-1, 6 held-out questions: 1 run(s)"]
    assert text.splitlines()[-1].startswith("3 groups of different base models")
    assert "[0.350, 0.450]" in text and not math.isnan(rows[0].heldout_best_ci[0])
    smollm2 = next(line for line in text.splitlines() if "evolve-offline-b" in line)
    assert "-26% [-30%, -23%]" in smollm2 and "+0.02 [-0.01, +0.05] NI" in smollm2
    tiny = next(line for line in text.splitlines() if "evolve-offline-a" in line)
    assert "%" not in tiny and " NI" not in tiny  # runs without paired gains leave them blank
    plot = save_comparison_figure(rows, tmp_path / "c.png")  # a row of panels per group
    assert plot.stat().st_size > 10_000

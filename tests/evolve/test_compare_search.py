"""`compare` finds evolution runs by job tag in any experiment, and leaves FAILED ones out."""

from mlflow.tracking import MlflowClient

from crsp_ops.evolve.compare import RunRow, fetch_rows, group_labels, group_rows, split_failed
from crsp_ops.evolve.compare_plot import running_max, save_comparison_figure

TAGS = {"crsp.job": "evolve", "proposer": "offline", "model.source": "tiny",
        "base_model.id": "llama-fd8625220873", "heldout.sha256": "b33d3839fa11" * 4,
        "heldout.size": "8"}


def _run(client, experiment_id, status, name):
    run = client.create_run(experiment_id, run_name=name, tags=TAGS)
    client.log_metric(run.info.run_id, "composite_score", 0.5, step=0)
    client.set_terminated(run.info.run_id, status)
    return run.info.run_id


def test_runs_are_found_in_default_and_in_crsp_evolve_and_failed_ones_left_out(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    evolve = client.create_experiment("crsp-evolve",
                                      artifact_location=(tmp_path / "a").as_uri())
    in_default = _run(client, "0", "FINISHED", "from-mlflow-run")  # `mlflow run . -e evolve`
    in_evolve = _run(client, evolve, "FINISHED", "from-crsp-ops")
    failed = _run(client, evolve, "FAILED", "broken")
    other = client.create_run(evolve, tags={"crsp.job": "train"}).info.run_id  # not evolve

    rows, left_out = split_failed(fetch_rows(client, max_runs=50))
    assert {r.run_id for r in rows} == {in_default, in_evolve}
    assert [r.run_id for r in left_out] == [failed]
    assert other not in {r.run_id for r in rows}
    only = fetch_rows(client, ["crsp-evolve"], max_runs=50)
    assert {r.run_id for r in only} == {in_evolve, failed}
    (label,) = group_labels(group_rows(rows)).values()
    assert label == "base model tiny, 8 held-out questions"


def _row(run_id, model_id, correctness):
    return RunRow(run_id=run_id, run_name=run_id, status="FINISHED", proposer="offline",
                  iterations=3, best_minibatch_composite=0.4, heldout_initial_composite=0.1,
                  heldout_best_composite=0.3, reflector_tokens=0.0, wall_time_s=1.0,
                  base_model=model_id, heldout_set="h", model_name="tiny", heldout_size="8",
                  curves={"composite_score": [0.1, 0.4, 0.2], "shortness_score": [0.2, 0.5, 0.4],
                          "correctness_ratio": correctness})


def test_labels_name_model_and_size_and_tell_apart_only_a_clash(tmp_path):
    groups = group_rows([_row("a", "llama-1", [0.0] * 3), _row("b", "llama-2", [0.0] * 3)])
    labels = sorted(group_labels(groups).values())
    assert labels == ["base model tiny, 8 held-out questions (model llama-1, held-out set h)",
                      "base model tiny, 8 held-out questions (model llama-2, held-out set h)"]
    # all-zero correctness: panel (c) says so instead of drawing an empty axis
    assert save_comparison_figure([_row("a", "m", [0.0] * 3)], tmp_path / "z.png").is_file()


def test_best_so_far_never_sits_below_a_point():
    points = [0.1, 0.4, 0.2, 0.6]
    best = running_max(points)
    assert best == [0.1, 0.4, 0.4, 0.6] and all(b >= p for b, p in zip(best, points, strict=True))

"""`crsp-ops train` and `crsp-ops seed` end to end, tracking ON, in a scratch project root."""

import json
from pathlib import Path

import pytest

from crsp_ops.cli.main import main
from crsp_ops.cli.stage_io import run_record_path

REPO = Path(__file__).resolve().parents[2]
STEPS = 2
FAST = [
    "crsp.problem_types=code_o,math", "crsp.math_source=limo", "crsp.executor_max_workers=2",
    "crsp.executor_determinism_runs=1", "train.solver_samples=2", "train.proposals_per_step=1",
    "train.critiques_per_task=1", "train.max_new_tokens_propose=6",
    "train.max_new_tokens_solve=6", "train.max_new_tokens_critique=6",
    "train.sample_table_interval=1", "train.eval_math_tasks=2", "crsp.heldout_math=2",
    "tracking.flush_seconds=0.0",
]


@pytest.fixture()
def project(scratch_project):
    tmp_path = scratch_project
    limo = tmp_path / "data" / "limo"
    limo.mkdir(parents=True)
    rows = [{"question": f"What is {a} + 1?", "solution": f"{a} + 1 = {a + 1}",
             "answer": str(a + 1)} for a in range(6)]
    corrupt = '{"question": 7, "solution": "?"}\n'  # skipped and counted by every consumer
    (limo / "limo.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + corrupt)
    return tmp_path


def _client(root):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")


def test_train_cli_logs_every_step_to_mlflow(project, tiny_model_dir):
    args = ["train", "--model", str(tiny_model_dir), "--out", "models/crsp",
            "--set", f"train.steps={STEPS}"]
    for item in FAST:
        args += ["--set", item]
    assert main(args) == 0

    out = project / "models" / "crsp"
    assert (out / "config.json").is_file() and (out / "checkpoints" / "step-000002").is_dir()
    run_id = json.loads(run_record_path(out).read_text())["run_id"]
    client = _client(project)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["train.steps"] == str(STEPS)
    from crsp_ops.models.fingerprint import model_fingerprint

    assert run.data.tags["base_model.id"] == model_fingerprint(tiny_model_dir).model_id
    assert len(run.data.tags["heldout.sha256"]) == 64
    for key in ("loss", "kl", "alpha_s", "alpha_c", "reward/solve/mean", "reward/solve/std",
                "reward/propose/mean", "reward/critique/mean", "ratio_mean", "ratio_max",
                "clip_fraction", "response_length/solve", "solve_rate/code_o",
                "solve_rate/math", "proposals/valid_rate", "executor/failures",
                "perf/tokens_per_s", "perf/step_time_s"):
        steps = sorted(m.step for m in client.get_metric_history(run_id, key))
        assert steps == list(range(1, STEPS + 1)), key
    assert client.get_metric_history(run_id, "eval/solve_rate/math")
    [skipped] = client.get_metric_history(run_id, "data_limo_skipped_rows")
    assert (skipped.step, skipped.value) == (0, 1.0)
    artifacts = {a.path for a in client.list_artifacts(run_id, "samples")}
    assert artifacts == {"samples/step_000001.json", "samples/step_000002.json"}
    metrics = json.loads(out.with_name(out.name + ".metrics.json").read_text())
    assert metrics["steps"] == STEPS


@pytest.mark.parametrize(("math_source", "examples"), [("limo", 4), ("edge", 6)])
def test_seed_cli_writes_a_seeded_model(project, tiny_model_dir, math_source, examples):
    """The last crsp.heldout_math LIMO rows are held out only where evaluation solves them."""
    assert main(["seed", "--model", str(tiny_model_dir), "--set", "seeding.enabled=y",
                 "--set", "seeding.steps=3", "--set", "seeding.batch_size=2",
                 "--set", "crsp.heldout_math=2", "--set", f"crsp.math_source={math_source}"]) == 0
    out = project / "models" / "seeded"
    summary = json.loads((out / "seeding_summary.json").read_text())
    assert summary["steps"] == 3 and summary["examples"] == examples
    run_id = json.loads(run_record_path(out).read_text())["run_id"]
    history = _client(project).get_metric_history(run_id, "seed/loss")
    assert sorted(m.step for m in history) == [1, 2, 3]
    [skipped] = _client(project).get_metric_history(run_id, "data_limo_skipped_rows")
    assert skipped.value == 1.0
    assert (out / "config.json").is_file()


def test_train_cli_rejects_a_missing_model(project, capsys):
    assert main(["train", "--model", "nowhere", "--set", "tracking.enabled=n"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "nowhere does not exist" in line and "crsp-ops base-model" in line


def test_train_cli_logs_a_learning_curve_on_edge_tasks(project, tiny_model_dir, capsys):
    args = ["train", "--model", str(tiny_model_dir), "--out", "models/crsp",
            "--set", f"train.steps={STEPS}"]
    for item in [*FAST, "crsp.problem_types=math", "crsp.math_source=edge",
                 "crsp.heldout_math=6", "train.eval_math_tasks=6", "train.eval_interval=1",
                 "train.tasks_per_type=2", "train.proposals_per_step=0"]:
        args += ["--set", item]
    assert main(args) == 0

    out = project / "models" / "crsp"
    run_id = json.loads(run_record_path(out).read_text())["run_id"]
    client = _client(project)
    for key in ("eval/solve_rate/all", "eval/solve_rate/all_ci_low",
                "eval/solve_rate/all_ci_high", "eval/solve_rate/well_formed",
                "eval/solve_rate/well_formed_ci_low", "eval/solve_rate/heldout_tasks"):
        history = client.get_metric_history(run_id, key)
        assert sorted(m.step for m in history) == [0, 1, 2], key  # before, then every step
    for low, value, high in zip(*(client.get_metric_history(run_id, f"eval/solve_rate/all{s}")
                                  for s in ("_ci_low", "", "_ci_high")), strict=True):
        assert low.value <= value.value <= high.value
    assert {m.value for m in client.get_metric_history(
        run_id, "eval/solve_rate/heldout_tasks")} == {6.0}
    families = {k for k in client.get_run(run_id).data.metrics if k.startswith("solve_rate/family/")}
    known = {"add", "subtract", "multiply", "add_subtract", "math"}  # math: the starter tasks
    assert families and families <= {f"solve_rate/family/{f}" for f in known}
    flat = client.get_metric_history(run_id, "solve/flat_task_share")
    solved = {m.step: m.value for m in client.get_metric_history(run_id, "solve_rate/math")}
    assert len(flat) == STEPS and all(0.0 <= m.value <= 1.0 for m in flat)
    assert all(m.value == 1.0 for m in flat if solved[m.step] == 0.0)  # nothing right: all flat

    curve = json.loads((out / "learning_curve.json").read_text())["points"]
    assert [p["step"] for p in curve] == [0, 1, 2]
    assert [p["samples"] for p in curve] == [0, 4, 8]  # 2 tasks x 2 samples per step
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {a.path for a in client.list_artifacts(run_id)} >= {"learning_curve.json",
                                                              "learning_curve.png"}
    assert "held-out solve rate (6 tasks, greedy, 95% CI): step 0 " in capsys.readouterr().out

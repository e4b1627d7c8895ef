"""The Python API of docs/training.md: its snippet runs as written, on the tiny model."""

import re
import shutil
from pathlib import Path

from crsp_ops.crsp.api import CRSPTrainer

REPO = Path(__file__).resolve().parents[2]


def _snippet() -> str:
    text = (REPO / "docs" / "training.md").read_text()
    section = text.split("## Train on your own task", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return code


def _project(tmp_path, monkeypatch, tiny_model_dir):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "base").symlink_to(tiny_model_dir)
    shutil.copytree(REPO / "examples" / "json_extraction", tmp_path / "examples" /
                    "json_extraction")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_documented_snippet_trains_and_tracks_the_datasets(scratch_project, monkeypatch,
                                                               tiny_model_dir, capsys):
    root = _project(scratch_project, monkeypatch, tiny_model_dir)
    exec(compile(_snippet(), "docs/training.md", "exec"), {})
    steps, rate = capsys.readouterr().out.split()[-2:]
    assert steps == "2" and 0.0 <= float(rate) <= 1.0
    assert (root / "models" / "json-extraction" / "config.json").is_file()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("train")]
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert sorted(i.dataset.name for i in run.inputs.dataset_inputs) == ["eval", "train"]
    assert [m.step for m in client.get_metric_history(run.info.run_id,
                                                      "reward/json_fields/mean")] == [1, 2]


def test_in_memory_rows_and_a_callable_are_written_where_the_run_can_find_them(
        scratch_project, monkeypatch, tiny_model_dir):
    tmp_path = _project(scratch_project, monkeypatch, tiny_model_dir)

    def length(prompts, completions, **_):
        return [float(len(c) < 20) for c in completions]

    trainer = CRSPTrainer(
        tiny_model_dir, [length],
        {"train.steps": 1, "train.tasks_per_type": 2, "train.solver_samples": 2,
         "train.max_new_tokens_solve": 4, "train.eval_split_size": 2,
         "tracking.enabled": False, "output_dir": "models/memory"},
        [{"prompt": f"Count to {n}.", "n": n} for n in range(6)])
    assert [len(trainer.task.train), len(trainer.task.heldout)] == [4, 2]
    assert trainer.task.rewards.names == ["length"]
    assert not (tmp_path / "models" / "memory").exists()  # nothing written before train()
    assert trainer.train().global_step == 1
    assert (tmp_path / "models" / "memory" / "data" / "train.jsonl").is_file()


def test_a_lambda_reward_is_tracked_under_a_name_mlflow_accepts(scratch_project, monkeypatch,
                                                                 tiny_model_dir):
    root = _project(scratch_project, monkeypatch, tiny_model_dir)
    trainer = CRSPTrainer(
        tiny_model_dir, [lambda prompts, completions, **_: [float(len(c) % 2) for c in
                                                             completions]],
        {"train.steps": 1, "train.tasks_per_type": 2, "train.solver_samples": 2,
         "train.max_new_tokens_solve": 4, "output_dir": "models/lambda"},
        [{"prompt": f"Count to {n}."} for n in range(4)])
    assert trainer.task.rewards.names == ["lambda"]
    trainer.train()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("train")]
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and "reward/lambda/mean" in run.data.metrics

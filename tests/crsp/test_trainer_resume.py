"""Resume and extend through CRSPTrainer (tiny model, real sampling, MLflow on): a resumed run
equals an uninterrupted one bit for bit; a finished run extends with its schedules recomputed,
or refuses under train.resume_exact_schedules; a path that is not a checkpoint is one line."""

import logging

import pytest
import torch
from mlflow.tracking import MlflowClient
from safetensors.torch import load_file
from transformers import TrainerCallback

from crsp_ops.config import ConfigError
from crsp_ops.crsp.api import CRSPTrainer
from crsp_ops.errors import DataError

ROWS = [{"prompt": f"Count to {n}.", "n": n} for n in range(6)]
ARGS = {"train.tasks_per_type": 2, "train.solver_samples": 2, "train.max_new_tokens_solve": 6,
        "train.learning_rate": 1e-3, "tracking.flush_seconds": 0.0}
TIMING = ("perf/", "reward_seconds/", "generation/update_s")


def characters(prompts, completions, **_):
    return [len(c) / 10 for c in completions]


class StopAt(TrainerCallback):
    """Ctrl+C after step ``step``, as a user would press it."""

    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


def _trainer(tiny_model_dir, out, callbacks=(), **args):
    return CRSPTrainer(tiny_model_dir, [characters], {**ARGS, **args, "output_dir": out}, ROWS,
                       callbacks=callbacks)


def _runs(root):
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("train")]
    runs = client.search_runs([experiment.experiment_id], order_by=["attribute.start_time ASC"])
    return client, runs


def _step_metrics(client, run) -> dict[tuple[str, int], float]:
    return {(key, m.step): m.value for key in run.data.metrics if not key.startswith(TIMING)
            for m in client.get_metric_history(run.info.run_id, key) if m.step > 0}


def test_a_resumed_run_equals_an_uninterrupted_one(scratch_project, tiny_model_dir):
    with pytest.raises(KeyboardInterrupt):
        _trainer(tiny_model_dir, "models/cut", [StopAt(2)], **{"train.steps": 4}).train()
    resumed = _trainer(tiny_model_dir, "models/cut", **{"train.steps": 4})
    assert resumed.train(resume_from_checkpoint=True).global_step == 4
    assert _trainer(tiny_model_dir, "models/straight", **{"train.steps": 4}).train(
        ).global_step == 4

    weights = [load_file(scratch_project / "models" / name / "model.safetensors")
               for name in ("cut", "straight")]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])
    client, (cut, rest, straight) = _runs(scratch_project)
    assert [r.info.status for r in (cut, rest, straight)] == ["KILLED", "FINISHED", "FINISHED"]
    assert rest.data.tags["crsp.resumed_from"].endswith("step-000002")
    joined = {**_step_metrics(client, cut), **_step_metrics(client, rest)}
    expected = _step_metrics(client, straight)
    assert {step for _, step in expected} == {1, 2, 3, 4} and ("loss", 4) in expected
    assert joined == expected


def test_a_finished_run_extends_with_its_schedules_recomputed(scratch_project, tiny_model_dir,
                                                              caplog):
    linear = {"train.lr_schedule": "linear"}
    _trainer(tiny_model_dir, "models/ext", **linear, **{"train.steps": 2}).train()
    with caplog.at_level(logging.WARNING):
        result = _trainer(tiny_model_dir, "models/ext", **linear, **{"train.steps": 4}).train(
            resume_from_checkpoint=True)
    assert result.global_step == 4
    assert "resumed with other schedule settings (steps 2 -> 4)" in caplog.text
    client, (first, extended) = _runs(scratch_project)
    assert extended.data.tags["crsp.resume.schedule_change"] == "steps 2 -> 4"
    lrs = {m.step: m.value for m in client.get_metric_history(extended.info.run_id, "lr")}
    assert lrs == {3: pytest.approx(0.5e-3), 4: pytest.approx(0.25e-3)}  # linear over 4 steps

    exact = {**linear, "train.resume_exact_schedules": True, "train.steps": 6}
    with pytest.raises(ConfigError) as refused:
        _trainer(tiny_model_dir, "models/ext", **exact).train(resume_from_checkpoint=True)
    assert "'steps': (4, 6)" in str(refused.value) and "\n" not in str(refused.value)
    # alpha moves with train.steps, but no reward of this run reads it: never a reason to refuse
    constant_lr = {"train.resume_exact_schedules": True}
    _trainer(tiny_model_dir, "models/alpha", **constant_lr, **{"train.steps": 1}).train()
    assert _trainer(tiny_model_dir, "models/alpha", **constant_lr, **{"train.steps": 2}).train(
        resume_from_checkpoint=True).global_step == 2


def test_a_path_that_is_not_a_checkpoint_stops_before_any_run(scratch_project, tiny_model_dir):
    trainer = _trainer(tiny_model_dir, "models/none", **{"train.steps": 1})
    with pytest.raises(DataError, match="is not a checkpoint") as error:
        trainer.train(resume_from_checkpoint=tiny_model_dir)
    assert "\n" not in str(error.value)
    with pytest.raises(DataError, match="no checkpoint under"):
        trainer.train(resume_from_checkpoint=True)
    assert not (scratch_project / "mlflow.db").exists() or _no_runs(scratch_project)


def _no_runs(root):
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    return not any(client.search_runs([e.experiment_id]) for e in client.search_experiments())

"""transformers' callbacks drive the loop: event order, control flags, early stopping, errors."""

import logging

import pytest
from mlflow.tracking import MlflowClient
from transformers import EarlyStoppingCallback, TrainerCallback

from crsp_ops.crsp.api import CRSPTrainer
from crsp_ops.crsp.trainer.checkpoint import checkpoint_path, list_checkpoints
from crsp_ops.crsp.trainer.hf_flow import CallbackError
from tests.crsp.test_selfplay_trainer import _trainer


class Recorder(TrainerCallback):
    def __init__(self):
        self.events = []

    def _record(name):  # noqa: N805 - builds the methods below
        def hook(self, args, state, control, **kwargs):
            self.events.append((name, state.global_step))
        return hook

    on_init_end = _record("init_end")
    on_train_begin = _record("train_begin")
    on_step_begin = _record("step_begin")
    on_step_end = _record("step_end")
    on_save = _record("save")
    on_train_end = _record("train_end")

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.events.append(("log", state.global_step))

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.events.append(("evaluate", state.global_step))
        self.metrics = metrics


def test_events_come_in_transformers_order(tiny_model_dir, small_settings, tmp_path):
    settings = small_settings("train.steps=2", "train.checkpoint_interval=1",
                              "train.eval_interval=1")
    recorder = Recorder()
    trainer = _trainer(tiny_model_dir, settings, tmp_path, callbacks=[recorder])
    output = trainer.train()
    assert output.global_step == 2 and output.metrics["train_runtime"] > 0
    assert recorder.events == [
        ("init_end", 0), ("train_begin", 0), ("log", 0), ("evaluate", 0),
        ("step_begin", 0), ("step_end", 1), ("log", 1), ("log", 1), ("evaluate", 1),
        ("save", 1), ("step_begin", 1), ("step_end", 2), ("log", 2),
        ("log", 2), ("evaluate", 2), ("save", 2), ("train_end", 2)]
    assert "eval_solve_rate" in recorder.metrics
    steps = [row for row in trainer.state.log_history if "loss" in row]
    assert [row["step"] for row in steps] == [1, 2]
    assert all({"loss", "learning_rate", "reward", "epoch"} <= row.keys() for row in steps)


class StopAfterOne(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        control.should_training_stop = True


class SaveAtOne(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        control.should_save = state.global_step == 1


def test_control_flags_are_honoured(tiny_model_dir, small_settings, tmp_path):
    settings = small_settings("train.steps=3", "train.checkpoint_interval=100")
    stopped = _trainer(tiny_model_dir, settings, tmp_path / "stop", callbacks=[StopAfterOne])
    assert stopped.train().global_step == 1
    saved = _trainer(tiny_model_dir, settings, tmp_path / "save", callbacks=[SaveAtOne()])
    saved.train()
    assert [p.name for p in list_checkpoints(tmp_path / "save")] == [
        checkpoint_path(tmp_path, 1).name, checkpoint_path(tmp_path, 3).name]


def test_early_stopping_works_unchanged(tiny_model_dir, small_settings, tmp_path):
    settings = small_settings("train.steps=6", "train.eval_interval=1")
    trainer = _trainer(tiny_model_dir, settings, tmp_path,
                       callbacks=[EarlyStoppingCallback(early_stopping_patience=1,
                                                        early_stopping_threshold=2.0)])
    trainer.args.metric_for_best_model = "solve_rate"
    trainer.args.greater_is_better = True
    assert trainer.train().global_step == 1  # no evaluation improves by 2.0: stops at once
    assert trainer.state.best_metric is not None


def test_a_plain_object_is_refused(tiny_model_dir, small_settings, tmp_path):
    class OnlySteps:
        def on_step_end(self, *args, **kwargs):
            pass

    with pytest.raises(TypeError, match="OnlySteps is not a transformers.TrainerCallback"):
        _trainer(tiny_model_dir, small_settings(), tmp_path, callbacks=[OnlySteps()])


class Exploding(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        raise RuntimeError("disk full\nsecond line")


def zero(prompts, completions, **_):
    return [0.0] * len(completions)


def test_a_raising_callback_fails_the_run_naming_it(scratch_project, tiny_model_dir):
    trainer = CRSPTrainer(
        tiny_model_dir, zero,
        {"train.steps": 2, "train.tasks_per_type": 2, "train.solver_samples": 2,
         "train.max_new_tokens_solve": 4, "output_dir": "models/boom"},
        [{"prompt": f"Count to {n}."} for n in range(4)], callbacks=[Exploding()])
    with pytest.raises(CallbackError) as error:
        trainer.train()
    assert str(error.value) == ("callback Exploding.on_step_end raised at step 1: "
                                "RuntimeError: disk full")
    client = MlflowClient(tracking_uri=f"sqlite:///{scratch_project / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("train")]
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED"


class FailsAtTheEnd(Recorder):
    def on_train_end(self, args, state, control, **kwargs):
        raise RuntimeError("upload failed")


def test_an_error_after_the_last_step_keeps_its_checkpoint_written_once(
        tiny_model_dir, small_settings, tmp_path, caplog):
    settings = small_settings("train.steps=2", "train.checkpoint_interval=1")
    recorder = FailsAtTheEnd()
    trainer = _trainer(tiny_model_dir, settings, tmp_path, callbacks=[recorder])
    with caplog.at_level(logging.WARNING), pytest.raises(
            CallbackError, match="FailsAtTheEnd.on_train_end raised at step 2"):
        trainer.train()
    assert [step for name, step in recorder.events if name == "save"] == [1, 2]
    assert [path.name for path in list_checkpoints(tmp_path)][-1] == checkpoint_path(
        tmp_path, 2).name
    assert "its checkpoint was already written" in caplog.text

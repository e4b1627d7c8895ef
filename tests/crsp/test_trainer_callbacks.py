"""Callbacks: each hook gets the step and that step's metrics; one that raises fails the run."""

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.crsp.api import CRSPTrainer
from crsp_ops.crsp.trainer.callbacks import CallbackError, Callbacks, TrainerCallback
from crsp_ops.crsp.trainer.checkpoint import checkpoint_path, list_checkpoints
from tests.crsp.test_selfplay_trainer import _trainer


class Recorder(TrainerCallback):
    def __init__(self):
        self.calls = []

    def on_step_end(self, step, metrics):
        self.calls.append(("step_end", step, metrics))

    def on_evaluate(self, step, metrics):
        self.calls.append(("evaluate", step, metrics))

    def on_save(self, step, metrics):
        self.calls.append(("save", step, metrics))

    def on_train_end(self, step, metrics):
        self.calls.append(("train_end", step, metrics))


class OnlySteps:  # a plain object with one hook
    def __init__(self):
        self.steps = []

    def on_step_end(self, step, metrics):
        self.steps.append(step)
        metrics.clear()  # its own copy: the others' are untouched


def test_every_hook_gets_the_step_and_its_metrics(tiny_model_dir, small_settings, tmp_path):
    settings = small_settings("train.steps=2", "train.checkpoint_interval=1",
                              "train.eval_interval=1")
    recorder, plain = Recorder(), OnlySteps()
    trainer = _trainer(tiny_model_dir, settings, tmp_path)
    trainer.callbacks = Callbacks([plain, recorder])
    trainer.train()
    calls = {hook: [(step, metrics) for h, step, metrics in recorder.calls if h == hook]
             for hook in ("step_end", "evaluate", "save", "train_end")}
    assert plain.steps == [1, 2] and [step for step, _ in calls["step_end"]] == [1, 2]
    step_metrics = dict(calls["step_end"])
    assert all("loss" in metrics and "alpha_s" in metrics for metrics in step_metrics.values())
    assert [step for step, _ in calls["evaluate"]] == [0, 1, 2]
    assert all(any(key.startswith("eval/") for key in metrics)
               for _, metrics in calls["evaluate"])
    assert [step for step, _ in calls["save"]] == [1, 2]  # the last step's once
    assert all(metrics == step_metrics[step] for step, metrics in calls["save"])
    [(end_step, end_metrics)] = calls["train_end"]
    assert end_step == 2 and end_metrics["loss"] == step_metrics[2]["loss"]
    assert end_metrics.keys() >= calls["evaluate"][-1][1].keys()


def test_an_object_without_hooks_is_refused():
    with pytest.raises(TypeError, match="callback object has none of the hooks"):
        Callbacks([object()])


class Exploding(TrainerCallback):
    def on_step_end(self, step, metrics):
        raise RuntimeError("disk full\nsecond line")


def zero(prompts, completions, **_):
    return [0.0] * len(completions)


def test_a_raising_callback_fails_the_run_naming_it(scratch_project, tiny_model_dir):
    trainer = CRSPTrainer(
        tiny_model_dir, [zero],
        [{"prompt": f"Count to {n}."} for n in range(4)],
        args={"train.steps": 2, "train.tasks_per_type": 2, "train.solver_samples": 2,
              "train.max_new_tokens_solve": 4},
        output_dir="models/boom", callbacks=[Exploding()])
    with pytest.raises(CallbackError) as error:
        trainer.train()
    assert str(error.value) == ("callback Exploding.on_step_end raised at step 1: "
                                "RuntimeError: disk full")
    client = MlflowClient(tracking_uri=f"sqlite:///{scratch_project / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("train")]
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED"


class FailsAtTheEnd(Recorder):
    def on_train_end(self, step, metrics):
        raise RuntimeError("upload failed")


def test_an_error_after_the_last_step_keeps_its_checkpoint_written_once(
        tiny_model_dir, small_settings, tmp_path):
    settings = small_settings("train.steps=2", "train.checkpoint_interval=1")
    recorder = FailsAtTheEnd()
    trainer = _trainer(tiny_model_dir, settings, tmp_path)
    trainer.callbacks = Callbacks([recorder])
    with pytest.raises(CallbackError, match="FailsAtTheEnd.on_train_end raised at step 2"):
        trainer.train()
    assert [step for hook, step, _ in recorder.calls if hook == "save"] == [1, 2]
    assert [path.name for path in list_checkpoints(tmp_path)][-1] == checkpoint_path(
        tmp_path, 2).name

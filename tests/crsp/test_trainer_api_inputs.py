"""CRSPTrainer's bad input: one line, nothing written, no run; what a run keeps and says."""

import logging

import pytest
from mlflow.tracking import MlflowClient
from transformers import TrainerCallback
from trl import GRPOConfig

from crsp_ops.cli.main import main
from crsp_ops.config.trl_fields import TrlFieldError
from crsp_ops.crsp.api import CRSPTrainer
from crsp_ops.errors import DataError
from tests.crsp.test_selfplay_trainer import _trainer

ROWS = [{"prompt": f"What is {n} + 1?", "answer": str(n + 1)} for n in range(6)]
SMALL = {"train.tasks_per_type": 2, "train.solver_samples": 2, "train.max_new_tokens_solve": 4}


def exact(prompts, completions, answer, **_):
    return [float(str(a) in str(c)) for a, c in zip(answer, completions, strict=True)]


def _nothing_written(root):
    assert not (root / "models").exists() and not (root / "mlflow.db").exists()


def test_a_trl_field_with_no_equivalent_stops_before_anything_is_written(scratch_project,
                                                                        tiny_model_dir):
    with pytest.raises(TrlFieldError, match="delta=2.0 has no crsp_ops equivalent") as error:
        CRSPTrainer(tiny_model_dir, exact, GRPOConfig(output_dir="models/x", bf16=False,
                                                       delta=2.0), ROWS)
    assert "\n" not in str(error.value)
    _nothing_written(scratch_project)


def test_an_eval_set_missing_a_column_is_named(scratch_project, tiny_model_dir):
    without = [{"prompt": row["prompt"]} for row in ROWS]
    with pytest.raises(DataError, match=r"eval_dataset\['bad'\]: reward exact: needs column "
                                        r"'answer'"):
        CRSPTrainer(tiny_model_dir, exact, {"output_dir": "models/x", **SMALL}, ROWS,
                    eval_dataset={"good": ROWS[:2], "bad": without})
    with pytest.raises(DataError, match="train_dataset: no 'prompt' column"):
        CRSPTrainer(tiny_model_dir, exact, {"output_dir": "models/x"}, [{"text": "hi"}])
    _nothing_written(scratch_project)


def test_reward_weights_must_match_the_reward_functions(scratch_project, tiny_model_dir):
    with pytest.raises(TrlFieldError, match="reward_weights has 2 weights for 1 reward"):
        CRSPTrainer(tiny_model_dir, exact, {"reward_weights": [1.0, 2.0],
                                            "output_dir": "models/x"}, ROWS)
    _nothing_written(scratch_project)


def test_push_to_hub_offline_is_one_line(scratch_project, tiny_model_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    trainer = CRSPTrainer(tiny_model_dir, exact, {"output_dir": "models/x",
                                                  "hub_model_id": "me/model"}, ROWS)
    with pytest.raises(DataError, match="push_to_hub: HF_HUB_OFFLINE is set") as error:
        trainer.push_to_hub()
    assert "\n" not in str(error.value)


def test_the_cli_refused_by_its_configuration_leaves_no_folder_and_no_lock(scratch_project,
                                                                          monkeypatch, capsys):
    monkeypatch.chdir(scratch_project)
    (scratch_project / "models").mkdir()
    assert main(["train", "--out", "models/refused", "--set", "train.beta=0.1"]) == 2
    assert "TRL's beta: use train.ref_kl_coef" in capsys.readouterr().err
    assert list((scratch_project / "models").iterdir()) == []


class InterruptFirstStep(TrainerCallback):
    def on_step_begin(self, args, state, control, **kwargs):
        raise KeyboardInterrupt


def test_ctrl_c_before_the_first_step_says_nothing_was_kept(tiny_model_dir, small_settings,
                                                            tmp_path, caplog):
    trainer = _trainer(tiny_model_dir, small_settings("train.steps=2"), tmp_path,
                       callbacks=[InterruptFirstStep])
    with caplog.at_level(logging.WARNING), pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert "stopped before step 1 finished: nothing trained, no checkpoint written" in caplog.text
    assert not (tmp_path / "checkpoints").exists()


def test_the_defaults_that_differ_from_trls_are_printed_and_logged(scratch_project,
                                                                  tiny_model_dir, caplog):
    trainer = CRSPTrainer(tiny_model_dir, exact,
                          {"max_steps": 1, "output_dir": "models/d", **SMALL}, ROWS)
    with caplog.at_level(logging.WARNING):
        trainer.train()
    block = next(r.getMessage() for r in caplog.records if "TRL's GRPOTrainer" in r.getMessage())
    assert "train.learning_rate = 3e-05  (TRL: 1e-06)" in block
    assert "train.temperature = 0.7  (TRL: 1.0)" in block
    assert "train.solver_samples" not in block  # set by the user: their choice
    client = MlflowClient(tracking_uri=f"sqlite:///{scratch_project / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("train")]
    [run] = client.search_runs([experiment.experiment_id])
    assert run.data.params["trl_default/train.learning_rate"] == "crsp_ops=3e-05 trl=1e-06"

"""Smoke, resume and interrupt tests of the self-play trainer on the tiny model (CPU, no MLflow)."""

import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.tasks.task_types import TaskType
from crsp_ops.crsp.trainer.build import build_trainer
from crsp_ops.crsp.trainer.checkpoint import latest_checkpoint, load_trainer_state
from tests.crsp.conftest import ScriptedGeneration


def _trainer(model_dir, settings, out_dir, scripted=True, callbacks=()):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    generation = ScriptedGeneration(model, tokenizer) if scripted else None
    return build_trainer(settings, model, tokenizer, out_dir=out_dir,
                         accelerator=make_accelerator("no", "cpu"), generation=generation,
                         callbacks=callbacks)


@pytest.mark.parametrize("algorithm", ["trrpg", "trrpp"])
def test_train_step_produces_a_loss_and_changes_every_parameter(tiny_model_dir, small_settings,
                                                                 tmp_path, algorithm):
    trainer = _trainer(tiny_model_dir, small_settings(f"train.algorithm={algorithm}"), tmp_path)
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()

    metrics = trainer.run.last_metrics
    assert math.isfinite(metrics["loss"]) and metrics["advantage_abs_mean"] > 0
    assert metrics["rollouts/count"] > 0 and metrics["rollouts/skipped"] == 0
    # the scripted proposer alternates a valid and a malformed proposal
    assert metrics["proposals/valid_rate"] == 0.5
    assert metrics["reward/propose/std"] > 0 and metrics["reward/solve/std"] > 0
    assert metrics["ratio_mean"] == pytest.approx(1.0, abs=1e-3)  # on-policy
    unchanged = [name for name, p in trainer.unwrapped_model.named_parameters()
                 if torch.equal(before[name], p.detach())]
    assert unchanged == []
    assert trainer.buffers.sizes()["code_o"] == 5  # 4 seeds + the valid proposal
    assert (trainer.out_dir / "config.json").is_file()
    assert "eval/solve_rate/code_o" in trainer.final_evaluation


def test_trrpp_has_no_kl_term_and_whitens(tiny_model_dir, small_settings, tmp_path):
    """With identical rollouts TR-RPG's KL term moves the loss gradient, TRR++'s does not."""
    trrpg = _trainer(tiny_model_dir, small_settings("train.algorithm=trrpg"), tmp_path / "a")
    trrpp = _trainer(tiny_model_dir, small_settings("train.algorithm=trrpp"), tmp_path / "b")
    assert trrpg.update_options.algorithm.use_kl and not trrpp.update_options.algorithm.use_kl
    assert trrpp.update_options.algorithm.advantage_estimator == "task_relative_whitened"
    for trainer in (trrpg, trrpp):
        trainer.close()


def test_resume_restores_step_buffers_optimizer_and_rng(tiny_model_dir, small_settings,
                                                        tmp_path):
    settings = small_settings("train.steps=2", "train.checkpoint_interval=1")
    first = _trainer(tiny_model_dir, settings, tmp_path)
    first.train_step()  # step 1 of 2, then its checkpoint (train.steps must not change)
    first.step += 1
    first.save_checkpoint()
    first.close()
    checkpoint = latest_checkpoint(tmp_path)
    assert checkpoint is not None and checkpoint.name == "step-000001"
    state = load_trainer_state(checkpoint)

    resumed = _trainer(checkpoint, settings, tmp_path)
    assert resumed.resume() == 1
    assert resumed.buffers.sizes() == first.buffers.sizes()
    assert resumed.run.rng.getstate() == first.run.rng.getstate()
    saved = state["optimizer"]["state"][0]["exp_avg"]
    assert torch.equal(resumed.optimizer.state_dict()["state"][0]["exp_avg"], saved)
    result = resumed.train()
    assert result.global_step == 2
    assert latest_checkpoint(tmp_path).name == "step-000002"


def test_interrupt_saves_a_checkpoint(tiny_model_dir, small_settings, tmp_path):
    trainer = _trainer(tiny_model_dir, small_settings("train.steps=3"), tmp_path)
    real_step = trainer.train_step
    calls = []

    def step_then_interrupt():
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_step()

    trainer.train_step = step_then_interrupt
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert latest_checkpoint(tmp_path).name == "step-000001"


def test_math_buffer_holds_seed_problems_and_limo_rows(tiny_model_dir, small_settings, tmp_path):
    from crsp_ops.crsp.tasks.task_types import MathTask

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    settings = small_settings()
    trainer = build_trainer(settings, model, tokenizer,
        out_dir=tmp_path, tasks=[MathTask("2+3?", "2+3=5", "5")],
        accelerator=make_accelerator("no", "cpu"), generation=ScriptedGeneration(model, tokenizer))
    assert MathTask("2+3?", "2+3=5", "5") in trainer.buffers.tasks(TaskType.MATH)
    assert set(trainer.buffers.sizes()) == {"code_o", "math"}
    trainer.close()

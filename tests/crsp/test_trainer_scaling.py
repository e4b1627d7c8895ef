"""The trainer with LoRA, the reference KL, the LR schedule, dynamic sampling and the resume
checks (tiny model, CPU, scripted generation)."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from crsp_ops.config.errors import ConfigError
from crsp_ops.crsp.policy.peft_setup import ADAPTER_DIR, MERGED_DIR
from crsp_ops.crsp.trainer.checkpoint import latest_checkpoint
from tests.crsp.test_selfplay_trainer import _trainer

LORA = ("train.lora_rank=4", "train.lora_alpha=8", "train.learning_rate=1e-2")


def _logits(model, ids):
    model.eval()
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_lora_trains_only_the_adapter_and_saves_adapter_base_and_merged(
        tiny_model_dir, small_settings, tmp_path):
    settings = small_settings(*LORA, "train.lora_save_merged=y", "train.steps=2",
                              "train.checkpoint_interval=1")
    trainer = _trainer(tiny_model_dir, settings, tmp_path)
    model = trainer.unwrapped_model
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer.train()
    assert 0 < trainer.run.last_metrics["model/trainable_params"] < trainer.total_params / 10
    changed = {n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())}
    assert changed and all("lora_" in n for n in changed)
    assert any("lora_B" in n for n in changed)
    checkpoint = latest_checkpoint(tmp_path)
    assert (checkpoint / ADAPTER_DIR / "adapter_config.json").is_file()
    ids = torch.randint(3, 100, (1, 12))
    live = _logits(model, ids)
    merged = AutoModelForCausalLM.from_pretrained(trainer.out_dir)  # final dir: merged
    torch.testing.assert_close(_logits(merged, ids), live, rtol=1e-4, atol=1e-4)
    in_checkpoint = AutoModelForCausalLM.from_pretrained(checkpoint / MERGED_DIR)
    torch.testing.assert_close(_logits(in_checkpoint, ids), live, rtol=1e-4, atol=1e-4)
    base = AutoModelForCausalLM.from_pretrained(checkpoint)  # the frozen base, unmerged
    original = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.testing.assert_close(_logits(base, ids), _logits(original, ids))


def test_lora_resume_restores_adapter_optimizer_and_policy_lag(tiny_model_dir, small_settings,
                                                               tmp_path):
    settings = small_settings(*LORA, "train.steps=2", "train.checkpoint_interval=1")
    first = _trainer(tiny_model_dir, settings, tmp_path)
    first.train_step()
    first.step += 1
    checkpoint = first.save_checkpoint()
    first.close()
    resumed = _trainer(checkpoint, settings, tmp_path)  # the driver loads the checkpoint dir
    assert resumed.resume(checkpoint) == 1
    ids = torch.randint(3, 100, (1, 12))
    torch.testing.assert_close(_logits(resumed.unwrapped_model, ids),
                               _logits(first.unwrapped_model, ids))
    saved = first.optimizer.state_dict()["state"][0]["exp_avg"]
    assert torch.equal(resumed.optimizer.state_dict()["state"][0]["exp_avg"], saved)
    assert resumed.generation.policy_step == 1  # policy_lag continues from the resumed step
    metrics, _ = resumed.train_step()
    assert metrics["generation/policy_lag"] == 0
    resumed.close()

    full = _trainer(checkpoint, small_settings("train.steps=2"), tmp_path / "full")
    with pytest.raises(ConfigError, match="train.lora_rank"):
        full.resume(checkpoint)
    full.close()


def test_resume_with_another_train_steps_is_refused_under_exact_schedules(
        tiny_model_dir, small_settings, tmp_path):
    exact = "train.resume_exact_schedules=y"
    first = _trainer(tiny_model_dir, small_settings("train.steps=2", exact), tmp_path)
    first.train_step()
    first.step += 1
    checkpoint = first.save_checkpoint()
    first.close()
    again = _trainer(checkpoint, small_settings("train.steps=3", exact), tmp_path)
    with pytest.raises(ConfigError, match=r"resume_exact_schedules.*'steps': \(2, 3\)"):
        again.resume(checkpoint)
    again.close()
    extended = _trainer(checkpoint, small_settings("train.steps=3"), tmp_path)
    assert extended.resume(checkpoint) == 1  # by default the schedules are recomputed
    extended.close()
    # a constant alpha schedule and learning rate do not depend on train.steps
    constant = ("reward.alpha_decay_enabled=n", exact)
    first = _trainer(tiny_model_dir, small_settings("train.steps=2", *constant),
                     tmp_path / "constant")
    first.train_step()
    first.step += 1
    checkpoint = first.save_checkpoint()
    first.close()
    longer = _trainer(checkpoint, small_settings("train.steps=3", *constant),
                      tmp_path / "constant")
    assert longer.resume(checkpoint) == 1
    longer.close()


@pytest.mark.parametrize("lora", [(), LORA])
def test_reference_kl_is_zero_on_the_first_step_and_positive_on_the_second(
        tiny_model_dir, small_settings, tmp_path, lora):
    settings = small_settings(*lora, "train.ref_kl_coef=0.1", "train.steps=2",
                              "train.learning_rate=1e-2")
    trainer = _trainer(tiny_model_dir, settings, tmp_path)
    assert trainer.parts.reference.parameters_in_memory() == (0 if lora else trainer.total_params)
    first, _ = trainer.train_step()
    trainer.step += 1
    second, _ = trainer.train_step()
    trainer.close()
    assert first["ref_kl"] == 0.0
    assert second["ref_kl"] > 0.0


def test_warmup_halves_the_first_learning_rate_and_dynamic_sampling_counts(
        tiny_model_dir, small_settings, tmp_path):
    settings = small_settings("train.lr_warmup_steps=1", "train.dynamic_sampling=y",
                              "train.dynamic_sampling_max_rounds=1", "train.steps=2")
    trainer = _trainer(tiny_model_dir, settings, tmp_path)
    metrics, episode = trainer.train_step()
    trainer.close()
    assert metrics["lr"] == pytest.approx(settings.train.learning_rate / 2)
    kept = sum(s.role == "solve" for s in episode.samples)
    assert trainer.solve_samples == kept + metrics["dynamic_sampling/dropped_samples"]
    assert metrics["dynamic_sampling/rounds"] <= 1


def test_each_rank_writes_its_own_served_directory(small_settings, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from crsp_ops.crsp.trainer import setup

    settings = small_settings("generation.backend=openai_server")
    made = []
    monkeypatch.setattr(setup, "ServerGeneration",
                        lambda model, tokenizer, **kwargs: made.append(kwargs))
    for rank, processes in ((0, 1), (1, 2)):
        accelerator = SimpleNamespace(num_processes=processes, process_index=rank)
        setup.make_generation(settings.generation, settings.train, accelerator, policy=None,
                              exported=None, tokenizer=None, out_dir=tmp_path, step=0)
    assert [kwargs["weights_root"] for kwargs in made] == [tmp_path / "served",
                                                           tmp_path / "served" / "rank-1"]


def test_dynamic_sampling_with_one_sample_per_task_is_refused(small_settings):
    with pytest.raises(ConfigError, match="solver_samples >= 2"):
        small_settings("train.dynamic_sampling=y", "train.solver_samples=1")

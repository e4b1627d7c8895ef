"""The benchmarks' GRPO sides share one ``GRPOConfig`` builder (needs ``trl``: ``.[bench]``)."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from benchmarks.trl_grpo import grpo_config  # noqa: E402


def test_the_batch_shape_sampling_and_quiet_settings(tmp_path):
    config = grpo_config(tmp_path, samples=8, sequences=32, micro=8, max_new_tokens=48,
                         temperature=0.7, seed=3)
    assert (config.per_device_train_batch_size, config.gradient_accumulation_steps) == (8, 4)
    assert (config.num_generations, config.max_completion_length) == (8, 48)
    assert (config.temperature, config.top_k, config.top_p, config.beta) == (0.7, 0, 1.0, 0.0)
    assert (config.num_iterations, config.shuffle_dataset, config.seed) == (1, False, 3)
    assert config.to_dict()["lr_scheduler_type"] == "constant" and config.warmup_steps == 0
    assert not (config.bf16 or config.fp16 or config.gradient_checkpointing)
    assert config.use_cpu and config.save_strategy == "no" and not config.log_completions


def test_a_field_given_wins_over_the_shared_one(tmp_path):
    config = grpo_config(tmp_path, samples=4, sequences=16, max_new_tokens=8, temperature=1.0,
                         seed=0, logging_steps=1, learning_rate=2e-6)
    assert (config.logging_steps, config.learning_rate) == (1, 2e-6)
    assert config.gradient_accumulation_steps == 1  # no micro: one forward pass a step


def test_a_micro_batch_that_does_not_divide_the_step_is_refused(tmp_path):
    with pytest.raises(ValueError, match="does not divide"):
        grpo_config(tmp_path, samples=8, sequences=32, micro=5, max_new_tokens=8,
                    temperature=1.0, seed=0)

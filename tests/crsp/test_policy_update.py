"""Policy update internals: length-packed micro-batches, response-only logits, on-policy ratio,
no KL-noise step without an advantage signal (a zero-gradient AdamW step when asked)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.micro_batching import (
    ACTIVATION_BUDGET,
    CPU_TOKEN_BUDGET,
    MEMORY_FRACTION,
    activation_bytes_per_token,
    free_device_bytes,
    micro_batches,
    token_budget,
)
from crsp_ops.crsp.rl.update import UpdateOptions, policy_update, token_logprobs
from crsp_ops.inference.rollouts import Rollout, TrainingBatch


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1)
    return LlamaForCausalLM(config).eval()


def test_micro_batches_respect_row_and_token_budgets_and_cover_every_row():
    lengths = [30, 5, 17, 5, 40, 12, 8]
    groups = micro_batches(lengths, max_rows=3, max_tokens=40)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        assert len(group) <= 3
        assert len(group) == 1 or len(group) * max(lengths[i] for i in group) <= 40


def test_response_only_logits_equal_the_full_log_softmax():
    model = _model()
    ids = torch.randint(0, 97, (3, 12))
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # right padding
    with torch.no_grad():
        full = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits / 0.7, -1)
        expected = full[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, T-1)
        ours = token_logprobs(model, ids, mask, 0.7, first=5)
    assert ours.shape == ids.shape
    assert ours[:, :5].eq(0).all()
    torch.testing.assert_close(ours[:, 5:], expected[:, 4:], rtol=1e-5, atol=1e-5)


def test_token_budget_scales_with_depth_and_width():
    model = _model()  # 2 layers x 32 hidden
    assert token_budget(model, activation_budget=6400) == 100
    # without a free-memory reading an accelerator keeps the activation budget
    assert token_budget(model, device_type="cuda") == ACTIVATION_BUDGET // (2 * 32)


def test_a_cpu_budget_is_the_measured_token_count_whatever_the_model():
    # speed, not memory, sizes a CPU micro-batch: SmolLM2-135M is not cut to one row each
    assert token_budget(_model(), device_type="cpu") == CPU_TOKEN_BUDGET
    smollm2 = SimpleNamespace(config=SimpleNamespace(num_hidden_layers=30, hidden_size=576))
    assert token_budget(smollm2, device_type="cpu") == CPU_TOKEN_BUDGET  # was 30 tokens


def test_a_cuda_budget_is_a_fraction_of_free_memory_over_bytes_per_token():
    model = _model()  # float32: 2 layers x (16 x 32 + 4 x 64) + 2 x 97 vocab, 4 bytes each
    per_token = 4 * (2 * (16 * 32 + 4 * 64) + 2 * 97)
    assert activation_bytes_per_token(model) == per_token
    free = 10**9
    assert token_budget(model, device_type="cuda", free_bytes=free) == \
        int(MEMORY_FRACTION * free) // per_token
    assert token_budget(model, device_type="cuda", free_bytes=0) == 1  # always one row
    # on a CPU (no CUDA device) there is no free-memory reading
    assert free_device_bytes(torch.device("cpu")) is None


def test_the_update_runs_one_forward_per_micro_batch_on_policy():
    # on-policy: the first pass's detached log-probs are the old ones, no second forward
    model = _model().train()
    calls = []
    model.register_forward_pre_hook(lambda module, args: calls.append(1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    options = UpdateOptions(algorithm=get_algorithm("trrpg"), betas={"solve": 0.05},
                            log_ratio_clamp=20.0, ratio_clip=None, advantage_eps=1e-6,
                            micro_batch_size=2, update_epochs=1, max_grad_norm=1.0,
                            on_policy=True)
    policy_update(model, optimizer, Accelerator(cpu=True), _solve_batch((1.0, -0.5, 0.0)),
                  ["solve"] * 3, ["math"] * 3, options, temperature=1.0)
    assert len(calls) == 2  # 3 rows in micro-batches of at most 2


def _solve_batch(rewards) -> TrainingBatch:
    rng = np.random.default_rng(0)
    rows = [Rollout(env_name="math", env_example_id=str(i), prompt_tokens=rng.integers(3, 90, 5),
                    response_tokens=rng.integers(3, 90, 6), response_logprobs=np.full(6, -3.0),
                    token_rewards=np.zeros(6), episode_reward=reward, logprob_semantics="raw")
            for i, reward in enumerate(rewards)]
    return TrainingBatch.from_rollouts(rows, pad_token_id=0)


@pytest.mark.parametrize(("rewards", "moves"), [((1.0, 1.0, 1.0), False),
                                                ((1.0, -0.5, 1.0), True)])
def test_a_step_without_advantage_signal_takes_no_optimizer_step(rewards, moves):
    # On-policy TR-RPG with beta > 0: equal rewards leave only the KL part's -beta per token,
    # which Adam would scale to a full learning-rate step on every weight.
    model = _model().train()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    options = UpdateOptions(algorithm=get_algorithm("trrpg"), betas={"solve": 0.05},
                            log_ratio_clamp=20.0, ratio_clip=None, advantage_eps=1e-6,
                            micro_batch_size=4, update_epochs=1, max_grad_norm=1.0,
                            on_policy=True)
    metrics = policy_update(model, optimizer, Accelerator(cpu=True), _solve_batch(rewards),
                            ["solve"] * 3, ["math"] * 3, options, temperature=1.0)
    changed = any(not torch.equal(p.detach(), b)
                  for p, b in zip(model.parameters(), before, strict=True))
    assert changed is moves
    assert metrics["update_skipped"] == (0.0 if moves else 1.0)
    assert metrics["ratio_mean"] == 1.0 and "loss" in metrics  # metrics either way


@pytest.mark.parametrize("step_when_flat", [False, True])
def test_a_flat_step_after_a_real_one_moves_by_adams_momentum_only_when_asked(step_when_flat):
    # TRL's Trainer steps AdamW on a flat step too (its gradient is 0 with beta=0): the
    # decayed momentum of the earlier step moves the weights. The KL part's noise never does.
    model = _model().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    options = UpdateOptions(algorithm=get_algorithm("trrpg"), betas={"solve": 0.05},
                            log_ratio_clamp=20.0, ratio_clip=None, advantage_eps=1e-6,
                            micro_batch_size=4, update_epochs=1, max_grad_norm=1.0,
                            on_policy=True, step_when_flat=step_when_flat)
    for rewards in ((1.0, -0.5, 1.0), (1.0, 1.0, 1.0)):
        before = [p.detach().clone() for p in model.parameters()]
        expected = {}
        if rewards == (1.0, 1.0, 1.0):  # AdamW's update from its state with a zero gradient
            for param in model.parameters():
                state = optimizer.state[param]
                beta1, beta2 = optimizer.defaults["betas"]
                t = float(state["step"]) + 1
                m, v = beta1 * state["exp_avg"], beta2 * state["exp_avg_sq"]
                step = 1e-3 * (m / (1 - beta1 ** t)) / ((v / (1 - beta2 ** t)).sqrt() + 1e-8)
                expected[param] = param.detach() - step
        metrics = policy_update(model, optimizer, Accelerator(cpu=True), _solve_batch(rewards),
                                ["solve"] * 3, ["math"] * 3, options, temperature=1.0)
    assert metrics["update_skipped"] == 1.0
    changed = any(not torch.equal(p.detach(), b)
                  for p, b in zip(model.parameters(), before, strict=True))
    assert changed is step_when_flat
    if step_when_flat:
        for param in model.parameters():
            torch.testing.assert_close(param.detach(), expected[param], rtol=1e-5, atol=1e-7)


def test_the_policy_optimizer_is_fused_adamw(tmp_path):
    # one kernel over every tensor, as HF Trainer's default (adamw_torch_fused) behind TRL
    from pathlib import Path

    from crsp_ops.config import load_settings
    from crsp_ops.crsp.trainer.setup import prepare_policy_parts
    from crsp_ops.paths import copy_config_tree

    copy_config_tree(Path(__file__).resolve().parents[2], tmp_path)
    train = load_settings(tmp_path, [], env={}).settings.train
    parts = prepare_policy_parts(_model().train(), train, Accelerator(cpu=True))
    assert parts.optimizer.param_groups[0]["fused"] is True

"""Rows that share a prompt share its encoding in the update: same log-probs, same gradient."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.crsp.rl import update as update_module
from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.micro_batching import prompt_micro_batches
from crsp_ops.crsp.rl.shared_prefix import prefix_plan, prompt_keys, shared_prefix_logprobs
from crsp_ops.crsp.rl.update import UpdateOptions, policy_update, token_logprobs
from crsp_ops.inference.rollouts import Rollout, TrainingBatch


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1)
    return LlamaForCausalLM(config).train()


def _batch(prompt_sizes=(7, 7, 7, 4, 4), answer_sizes=(5, 2, 6, 3, 6),
           rewards=(1.0, 0.0, 0.5, 1.0, 0.0)) -> TrainingBatch:
    """Rows of two prompts (7 and 4 tokens), right-padded, answers of different lengths."""
    rng = np.random.default_rng(0)
    prompts = {size: rng.integers(3, 90, size) for size in set(prompt_sizes)}
    rows = [Rollout(env_name="math", env_example_id=str(i), prompt_tokens=prompts[p],
                    response_tokens=rng.integers(3, 90, a), response_logprobs=np.full(a, -3.0),
                    token_rewards=np.zeros(a), episode_reward=r, logprob_semantics="raw")
            for i, (p, a, r) in enumerate(zip(prompt_sizes, answer_sizes, rewards, strict=True))]
    return TrainingBatch.from_rollouts(rows, pad_token_id=0)


def _keys(batch):
    return prompt_keys(_model(), batch, lockstep=False)


def test_shared_prompt_log_probs_and_gradient_equal_the_plain_forward():
    batch = _batch()
    plan = prefix_plan(_keys(batch), batch.input_ids, batch.prompt_lengths.tolist(),
                       batch.attention_mask.sum(1).tolist())
    assert plan is not None and plan.rows == [0, 0, 0, 1, 1]
    results = []
    for shared in (False, True):
        model = _model()
        logp = (shared_prefix_logprobs(model, plan, batch.input_ids, 0.7) if shared else
                token_logprobs(model, batch.input_ids, batch.attention_mask, 0.7))
        weights = batch.loss_mask * torch.arange(1.0, batch.loss_mask.shape[1] + 1)
        (logp * weights).sum().backward()
        results.append((logp.detach() * batch.loss_mask,
                        [p.grad.clone() for p in model.parameters()]))
    (plain, plain_grads), (ours, our_grads) = results
    assert plain.abs().sum() > 0
    torch.testing.assert_close(ours, plain, rtol=1e-5, atol=1e-5)
    for mine, theirs in zip(our_grads, plain_grads, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-6)


def test_rows_with_distinct_prompts_have_no_plan():
    batch = _batch(prompt_sizes=(7, 4, 5), answer_sizes=(2, 3, 4), rewards=(1.0, 0.0, 1.0))
    assert prefix_plan(_keys(batch), batch.input_ids, batch.prompt_lengths.tolist(),
                       batch.attention_mask.sum(1).tolist()) is None


def test_sharing_is_off_when_sharded_or_with_activation_checkpointing():
    batch = _batch()
    assert prompt_keys(_model(), batch, lockstep=False) is not None
    assert prompt_keys(_model(), batch, lockstep=True) is None
    model = _model()
    model.gradient_checkpointing_enable()
    assert prompt_keys(model, batch, lockstep=False) is None


@pytest.mark.parametrize("ref_kl_coef", [0.0, 0.1])
def test_an_update_through_shared_prompts_equals_the_plain_update(monkeypatch, ref_kl_coef):
    options = UpdateOptions(algorithm=get_algorithm("trrpg"), betas={"solve": 0.05},
                            log_ratio_clamp=20.0, ratio_clip=0.2, advantage_eps=1e-6,
                            micro_batch_size=8, update_epochs=2, max_grad_norm=1.0,
                            on_policy=True, ref_kl_coef=ref_kl_coef)
    after, tokens = {}, {}
    for shared in (True, False):
        if not shared:
            monkeypatch.setattr(update_module, "prompt_keys", lambda *a, **k: None)
        model = _model()
        reference = None
        if ref_kl_coef:
            from crsp_ops.crsp.rl.reference_kl import ReferencePolicy
            reference = ReferencePolicy(_model())
        seen = []
        model.register_forward_pre_hook(
            lambda module, args, kwargs, seen=seen: seen.append(kwargs["input_ids"].numel()),
            with_kwargs=True)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
        metrics = policy_update(model, optimizer, Accelerator(cpu=True), _batch(), ["solve"] * 5,
                                ["math"] * 5, options, temperature=0.7, reference=reference)
        after[shared] = [p.detach().clone() for p in model.parameters()]
        tokens[shared] = sum(seen)
        assert metrics["update_skipped"] == 0.0
    assert tokens[True] < tokens[False]  # each prompt encoded once, not once per row
    moved = any(not torch.equal(a, b) for a, b in zip(after[True], _model().parameters(),
                                                      strict=True))
    assert moved
    for mine, theirs in zip(after[True], after[False], strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)


def _cost(rows, prompt_lengths, lengths, keys):
    prompts = {keys[row] for row in rows}
    return (len(prompts) * max(prompt_lengths[row] - 1 for row in rows)
            + len(rows) * max(lengths[row] - prompt_lengths[row] + 1 for row in rows))


@pytest.mark.parametrize("seed", range(20))
def test_prompt_micro_batches_cover_every_row_within_budgets_prompts_together(seed):
    rng = random.Random(seed)
    prompt_of = {key: rng.randint(2, 30) for key in "abcde"}
    keys = [rng.choice("abcde") for _ in range(rng.randint(1, 24))]
    prompt_lengths = [prompt_of[key] for key in keys]
    lengths = [p + rng.randint(1, 20) for p in prompt_lengths]
    max_rows, max_tokens = rng.randint(1, 10), rng.randint(20, 200)
    batches = prompt_micro_batches(keys, prompt_lengths, lengths, max_rows, max_tokens)
    assert sorted(row for batch in batches for row in batch) == list(range(len(keys)))
    for batch in batches:
        assert len(batch) <= max_rows
        assert len(batch) == 1 or _cost(batch, prompt_lengths, lengths, keys) <= max_tokens
    for key in set(keys):  # a prompt whose rows fit one micro-batch gets exactly one
        rows = [row for row, k in enumerate(keys) if k == key]
        if len(rows) <= max_rows and _cost(rows, prompt_lengths, lengths, keys) <= max_tokens:
            assert sum(any(row in batch for row in rows) for batch in batches) == 1


def test_a_bf16_autocast_update_through_shared_prompts_matches_the_plain_one(
        monkeypatch, fresh_accelerator_state):
    # the GPU road on CPU: the cached keys and values are bf16 under autocast
    options = UpdateOptions(algorithm=get_algorithm("trrpg"), betas={"solve": 0.0},
                            log_ratio_clamp=20.0, ratio_clip=0.2, advantage_eps=1e-6,
                            micro_batch_size=8, update_epochs=1, max_grad_norm=1.0,
                            on_policy=True)
    norms = {}
    for shared in (True, False):
        if not shared:
            monkeypatch.setattr(update_module, "prompt_keys", lambda *a, **k: None)
        model = _model()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
        metrics = policy_update(model, optimizer, Accelerator(cpu=True, mixed_precision="bf16"),
                                _batch(), ["solve"] * 5, ["math"] * 5, options, temperature=0.7)
        norms[shared] = metrics["grad_norm"]
    assert norms[True] > 0
    assert norms[True] == pytest.approx(norms[False], rel=1e-2)

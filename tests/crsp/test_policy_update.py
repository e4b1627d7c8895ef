"""Policy update internals: length-packed micro-batches, response-only logits, on-policy ratio."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.crsp.policy_update import micro_batches, token_budget, token_logprobs


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
    # by default smaller on a CPU (cache-sized micro-batches) than on an accelerator
    assert token_budget(model, device_type="cpu") * 16 == token_budget(model, device_type="cuda")

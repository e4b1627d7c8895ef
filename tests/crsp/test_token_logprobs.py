"""Chosen-token log-probs by gather − chunked logsumexp: same values and gradients, less memory."""

from __future__ import annotations

import pytest
import torch

from crsp_ops.crsp.rl.token_logprobs import gathered_logprobs


def _reference(logits, ids, temperature):
    return torch.log_softmax(logits.float() / temperature, -1).gather(-1, ids[..., None]).squeeze(-1)


@pytest.mark.parametrize("temperature,chunk", [(1.0, 3), (0.7, 1), (1.3, 64)])
def test_values_and_gradients_match_log_softmax(temperature, chunk):
    torch.manual_seed(0)
    logits = torch.randn(3, 10, 50, requires_grad=True)
    ids = torch.randint(0, 50, (3, 10))
    weights = torch.randn(3, 10)
    ours = gathered_logprobs(logits, ids, temperature=temperature, chunk=chunk)
    (grad_ours,) = torch.autograd.grad((ours * weights).sum(), logits)
    ref = _reference(logits, ids, temperature)
    (grad_ref,) = torch.autograd.grad((ref * weights).sum(), logits)
    torch.testing.assert_close(ours, ref)
    torch.testing.assert_close(grad_ours, grad_ref)


def test_bfloat16_logits_are_scored_in_float32():
    logits = torch.randn(2, 4, 30).to(torch.bfloat16)
    ids = torch.randint(0, 30, (2, 4))
    ours = gathered_logprobs(logits, ids)
    assert ours.dtype == torch.float32
    torch.testing.assert_close(ours, _reference(logits, ids, 1.0))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="temperature"):
        gathered_logprobs(torch.zeros(1, 1, 2), torch.zeros(1, 1, dtype=torch.long), temperature=0)


def test_backward_keeps_no_full_vocabulary_float32_copy():
    """Saved-for-backward bytes: the reference keeps (B, T, V) float32; ours only (B, T) pieces."""
    logits = torch.randn(2, 256, 4096, dtype=torch.bfloat16, requires_grad=True)
    ids = torch.randint(0, 4096, (2, 256))

    def saved_bytes(fn):
        total = 0

        def pack(tensor):
            nonlocal total
            # views of the input (its storage) are not copies
            if tensor.untyped_storage().data_ptr() != logits.untyped_storage().data_ptr():
                total += tensor.numel() * tensor.element_size()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            fn().sum()
        return total

    full_fp32 = logits.numel() * 4
    assert saved_bytes(lambda: _reference(logits, ids, 0.7)) >= full_fp32
    assert saved_bytes(lambda: gathered_logprobs(logits, ids, temperature=0.7)) < full_fp32 / 8

"""A prompt asked for several times is prefilled once: the same tokens and log-probs."""

from __future__ import annotations

import os

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.inference import shared_prefill as shared_prefill_module
from crsp_ops.inference import transformers_backend
from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.shared_prefill import shared_prefill
from crsp_ops.inference.transformers_backend import TransformersBackend

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    return TransformersBackend.from_pretrained(tiny_model_dir, device="cpu", batch_size=8)


def _generate(backend, conversations, params):
    completions = backend.generate(conversations, params)
    return [(c.token_ids, c.logprobs, c.extra["raw_logprobs"]) for c in completions]


@pytest.mark.parametrize("params", [
    SamplingParams(max_new_tokens=24, temperature=0.0, top_p=1.0),
    SamplingParams(max_new_tokens=24, temperature=1.0, top_p=0.9, repetition_penalty=1.2,
                   seed=3),
])
def test_repeated_prompts_generate_as_without_sharing(backend, monkeypatch, params):
    short = [{"role": "user", "content": "What is 2 + 3?"}]
    long = [{"role": "user", "content": "Revenue rose from $4.1 million to $5.3 million. "
                                        "By how much did it rise, in millions?"}]
    conversations = [long, short, long, long, short]  # left padding differs per prompt
    calls = []

    def spy(*args):
        kwargs = shared_prefill(*args)
        calls.append(bool(kwargs))
        return kwargs

    monkeypatch.setattr(transformers_backend, "shared_prefill", spy)
    ours = _generate(backend, conversations, params)
    monkeypatch.setattr(transformers_backend, "shared_prefill", lambda *args: {})
    plain = _generate(backend, conversations, params)
    assert calls == [True]  # the shared prefill ran
    for (ids, logprobs, raw), (plain_ids, plain_logprobs, plain_raw) in zip(ours, plain,
                                                                            strict=True):
        assert ids == plain_ids and len(ids) > 0
        assert logprobs == pytest.approx(plain_logprobs, abs=1e-4)
        assert raw == pytest.approx(plain_raw, abs=1e-4)


def test_nothing_is_shared_without_a_repeat_or_a_cache():
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2)).eval()
    ids = torch.tensor([[0, 5, 6], [7, 8, 9]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    assert shared_prefill(model, ids, mask, [[5, 6], [7, 8, 9]]) == {}
    both = torch.tensor([[7, 8, 9], [7, 8, 9]])
    assert shared_prefill(model, both, torch.ones_like(both), [[7, 8, 9]] * 2)
    model_without_cache = type("NoCache", (), {"forward": lambda self, input_ids: None,
                                               "config": model.config})()
    assert shared_prefill_module.cache_argument(model_without_cache) is None

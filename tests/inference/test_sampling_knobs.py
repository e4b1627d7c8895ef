"""top_k, min_p, repetition_penalty and chat-template kwargs in the in-process backend.

Each knob is checked by what it does to the sampled distribution of the tiny model: a knob the
backend dropped would leave these results unchanged.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.context import InferenceContext, PromptAlignmentError
from crsp_ops.inference.hf_chat import check_template_kwargs, encode_chat
from crsp_ops.inference.local_server import LocalChatService
from crsp_ops.inference.transformers_backend import TransformersBackend

CONVERSATION = [{"role": "user", "content": "Context:\nRevenue was $12 million.\n\n"
                                            "Question: What was revenue?"}]
PREFILLED = [*CONVERSATION, {"role": "assistant", "content": "<think>"}]
SEEDS = range(6)
OFF = {"enable_thinking": False}


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    return TransformersBackend.from_pretrained(tiny_model_dir, device="cpu")


def sample(backend, seed, **knobs):
    params = SamplingParams(max_new_tokens=12, temperature=1.0, top_p=1.0, seed=seed, **knobs)
    return backend.generate([CONVERSATION], params)[0]


def forced_logits(backend, completion):
    """(R, V) float logits of every response position, teacher-forced."""
    prompt, response = list(completion.prompt_token_ids), list(completion.token_ids)
    ids = torch.tensor([prompt + response])
    with torch.inference_mode():
        return backend.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float(), ids


def test_sampling_params_validate_the_knobs_and_list_those_on():
    assert SamplingParams(8, 1.0, 1.0).engine_extras == {}  # every knob off by default
    on = SamplingParams(8, 1.0, 1.0, top_k=3, min_p=0.1, repetition_penalty=1.2)
    assert on.engine_extras == {"top_k": 3, "min_p": 0.1, "repetition_penalty": 1.2}
    for bad in ({"top_k": -1}, {"top_k": 1.5}, {"min_p": 1.5}, {"repetition_penalty": 0.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SamplingParams(8, 1.0, 1.0, **bad)


def test_top_k_1_samples_the_argmax_and_top_k_0_does_not(backend):
    greedy = backend.generate([CONVERSATION], SamplingParams(12, 0.0, 1.0))[0].token_ids
    assert all(sample(backend, seed, top_k=1).token_ids == greedy for seed in SEEDS)
    assert any(sample(backend, seed).token_ids != greedy for seed in SEEDS)


def test_top_k_processed_logprobs_are_the_truncated_distribution(backend):
    k = 3
    completion = sample(backend, 1, top_k=k)
    logits, ids = forced_logits(backend, completion)
    chosen = ids[0, len(completion.prompt_token_ids):]
    kept = logits.masked_fill(logits < logits.topk(k, dim=-1).values[:, -1:], float("-inf"))
    expected = torch.log_softmax(kept, -1).gather(1, chosen[:, None])[:, 0].numpy()
    np.testing.assert_allclose(completion.logprobs, expected, atol=1e-4)
    raw = torch.log_softmax(logits, -1).gather(1, chosen[:, None])[:, 0].numpy()
    np.testing.assert_allclose(completion.extra["raw_logprobs"], raw, atol=1e-4)
    assert np.all(expected >= raw - 1e-5) and np.any(expected > raw + 1e-3)  # mass moved in


def test_min_p_1_keeps_only_the_top_token(backend):
    greedy = backend.generate([CONVERSATION], SamplingParams(12, 0.0, 1.0))[0].token_ids
    for seed in SEEDS[:3]:
        completion = sample(backend, seed, min_p=1.0)
        assert completion.token_ids == greedy
        np.testing.assert_allclose(completion.logprobs, 0.0, atol=1e-5)  # all its mass
    assert any(sample(backend, seed, min_p=0.05).logprobs != sample(backend, seed).logprobs
               for seed in SEEDS)


def test_repetition_penalty_is_applied_to_prompt_and_response_tokens(backend):
    penalty = 4.0
    params = SamplingParams(12, 0.0, 1.0, repetition_penalty=penalty)
    plain = backend.generate([CONVERSATION], SamplingParams(12, 0.0, 1.0))[0]
    completion = backend.generate([CONVERSATION], params)[0]
    assert completion.token_ids != plain.token_ids  # greedy decoding included
    logits, ids = forced_logits(backend, completion)
    prompt_len = len(completion.prompt_token_ids)
    expected = []
    for position in range(len(completion.token_ids)):
        row = logits[position].clone()
        seen = ids[0, : prompt_len + position].unique()
        row[seen] = torch.where(row[seen] < 0, row[seen] * penalty, row[seen] / penalty)
        expected.append(torch.log_softmax(row, -1)[ids[0, prompt_len + position]].item())
    np.testing.assert_allclose(completion.logprobs, expected, atol=1e-4)


def test_penalty_ignores_left_padding(backend):
    # pad with the answer's own first token: penalising the padding would change the answer
    params = SamplingParams(10, 0.0, 1.0, repetition_penalty=3.0)
    alone = backend.generate([CONVERSATION], params)[0]
    first = alone.token_ids[0]
    assert first not in alone.prompt_token_ids
    padding_is_first = copy.copy(backend)
    padding_is_first.pad_id = first
    longer = [{"role": "user", "content": CONVERSATION[0]["content"] * 3}]
    padded = padding_is_first.generate([longer, CONVERSATION], params)[1]
    assert padded.token_ids == alone.token_ids


def test_local_server_top_logprobs_follow_the_same_knobs(backend):
    # the server recomputes alternatives by a teacher-forced pass: same chain as generate()
    service = LocalChatService(backend, "tiny")
    body = {"model": "tiny", "messages": CONVERSATION, "max_tokens": 8, "temperature": 0.9,
            "seed": 3, "top_k": 4, "min_p": 0.02, "repetition_penalty": 1.5, "logprobs": True,
            "top_logprobs": 4, "return_token_ids": True}
    answer = service.chat(body)["choices"][0]
    for item in answer["logprobs"]["content"]:
        alternatives = {alt["token"]: alt["logprob"] for alt in item["top_logprobs"]}
        assert alternatives[item["token"]] == pytest.approx(item["logprob"], abs=1e-4)
    params = SamplingParams(8, 0.9, 1.0, seed=3, top_k=4, min_p=0.02, repetition_penalty=1.5)
    assert answer["token_ids"] == list(backend.generate([CONVERSATION], params)[0].token_ids)


def test_chat_template_kwargs_reach_the_template_and_the_context(thinking_model_dir):
    thinking = TransformersBackend.from_pretrained(thinking_model_dir, device="cpu",
                                                   chat_template_kwargs=OFF)
    tokenizer = thinking.tokenizer
    params = SamplingParams(4, 0.0, 1.0)
    for conversation in (CONVERSATION, PREFILLED):
        [completion] = thinking.generate([conversation], params)
        rendered = tokenizer.decode(list(completion.prompt_token_ids))
        assert "no thinking" in rendered
        ids = InferenceContext(tokenizer, chat_template_kwargs=OFF).tokenize_prompt(conversation)
        assert list(ids) == list(completion.prompt_token_ids)
        assert encode_chat(tokenizer, conversation)[0] != list(completion.prompt_token_ids)
    matched = InferenceContext(tokenizer, logprob_semantics="processed", chat_template_kwargs=OFF)
    matched.create_rollout_from_completion(PREFILLED, completion, "solve", "0", 1.0)
    with pytest.raises(PromptAlignmentError):  # a context without them would misalign
        InferenceContext(tokenizer, logprob_semantics="processed").create_rollout_from_completion(
            PREFILLED, completion, "solve", "0", 1.0)


def test_local_server_renders_with_the_request_chat_template_kwargs(thinking_model_dir):
    service = LocalChatService(TransformersBackend.from_pretrained(thinking_model_dir,
                                                                   device="cpu"), "tiny")
    body = {"messages": CONVERSATION, "max_tokens": 2, "temperature": 0.0,
            "return_token_ids": True}
    plain = service.chat(body)["prompt_token_ids"]
    switched = service.chat({**body, "chat_template_kwargs": OFF})["prompt_token_ids"]
    tokenizer = service.backend.tokenizer
    assert switched == encode_chat(tokenizer, CONVERSATION, OFF)[0] != plain
    assert service.backend.chat_template_kwargs == {}  # a per-request view, not a change


def test_template_kwargs_the_template_does_not_read_are_refused(backend, thinking_model_dir):
    with pytest.raises(ValueError, match=r"does not read \['enable_thinking'\]"):
        check_template_kwargs(backend.tokenizer, OFF)
    with pytest.raises(ValueError, match="does not read"):
        TransformersBackend(backend.model, backend.tokenizer, device="cpu",
                            chat_template_kwargs=OFF)
    thinking = TransformersBackend.from_pretrained(thinking_model_dir, device="cpu")
    check_template_kwargs(thinking.tokenizer, OFF)
    with pytest.raises(ValueError, match=r"\['typo'\]"):
        check_template_kwargs(thinking.tokenizer, {**OFF, "typo": 1})

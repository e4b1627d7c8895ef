"""Token ids are read under whichever name the engine sends (vLLM ``token_ids``, SGLang 0.5.23
``response_token_ids``), through the backend and through InferenceContext alike."""

from __future__ import annotations

import numpy as np
import pytest
from openai.types.chat import ChatCompletion

from crsp_ops.inference.context import InferenceContext, PromptAlignmentError
from crsp_ops.inference.openai_backend import completion_from_response
from crsp_ops.inference.response_fields import engine_prompt_ids, engine_response_ids

PROMPT = [{"role": "user", "content": "What is 2 + 2?"}]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def response(tokenizer, engine, response_ids, prompt_ids):
    """A chat response as the engine's own server serialises it (field names per engine)."""
    choice = {
        "index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": tokenizer.decode(response_ids)},
        "logprobs": {"content": [
            {"token": tokenizer.convert_ids_to_tokens(i), "logprob": -0.5, "bytes": None,
             "top_logprobs": []} for i in response_ids]},
    }
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [choice],
            "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(response_ids),
                      "total_tokens": len(prompt_ids) + len(response_ids)}}
    if engine == "vllm":
        choice["token_ids"] = list(response_ids)
        body["prompt_token_ids"] = list(prompt_ids)
    else:  # sglang 0.5.23
        choice["response_token_ids"] = list(response_ids)
        choice["prompt_token_ids"] = list(prompt_ids)
    return ChatCompletion.model_validate(body)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_engine_ids_reach_completions_and_rollouts(tokenizer, engine):
    ctx = InferenceContext(tokenizer)
    prompt_ids = ctx.tokenize_prompt(PROMPT).tolist()
    # Ids whose text re-tokenises differently would expose a fall back to re-tokenising.
    response_ids = tokenizer.encode("4 4", add_special_tokens=False)[:3] + [tokenizer.eos_token_id]
    sdk = response(tokenizer, engine, response_ids, prompt_ids)
    completion = completion_from_response(sdk, "processed", tokenizer=None)
    assert list(completion.token_ids) == response_ids
    assert list(completion.prompt_token_ids) == prompt_ids
    rollout = ctx.create_rollout_from_choice(
        PROMPT, sdk.choices[0], "math", "ex1", 1.0,
        server_prompt_token_ids=engine_prompt_ids(sdk.choices[0], sdk))
    assert rollout.response_tokens.tolist() == response_ids
    assert ctx.stats()["engine_token_ids"] == 1 and ctx.stats()["token_string_round_trips"] == 0
    assert ctx.stats()["prompt_alignment_checks"] == 1


def test_sglang_prompt_ids_on_the_choice_are_checked(tokenizer):
    ctx = InferenceContext(tokenizer)
    prompt_ids = ctx.tokenize_prompt(PROMPT).tolist()
    sdk = response(tokenizer, "sglang", [5, 6], prompt_ids[:-1] + [prompt_ids[-1] + 1])
    with pytest.raises(PromptAlignmentError, match=f"position {len(prompt_ids) - 1}"):
        ctx.create_rollout_from_choice(PROMPT, sdk.choices[0], "math", "ex1", 1.0)


def test_disagreeing_spellings_are_an_error():
    with pytest.raises(ValueError, match="token_ids and response_token_ids disagree"):
        engine_response_ids({"token_ids": [1, 2], "response_token_ids": [1, 3]})
    assert engine_response_ids({"token_ids": [1, 2], "response_token_ids": [1, 2]}) == [1, 2]
    assert engine_prompt_ids({}, {"prompt_token_ids": np.array([7, 8])}) == [7, 8]
    assert engine_prompt_ids({"prompt_token_ids": [1]}, {"prompt_token_ids": [2]}) == [1]

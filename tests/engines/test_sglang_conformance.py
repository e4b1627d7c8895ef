"""The project's SGLang processor and response handling against the installed SGLang (0.5.23).

The processor string the client sends is deserialised by SGLang's own ``from_str`` and run
through SGLang's own ``apply_custom_logit_processor`` over a ``SamplingBatchInfo`` with mixed
rows; requests are parsed by SGLang's request model, and responses are built with SGLang's
pydantic response classes and serialised as its server does.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.engines.engine_testkit import reference, require_engine

sglang = require_engine("sglang")

from openai.types.chat import ChatCompletion  # noqa: E402
from sglang.srt.entrypoints.openai.protocol import (  # noqa: E402
    ChatCompletionRequest,
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatCompletionTokenLogprob,
    ChatMessage,
    ChoiceLogprobs,
    TopLogprob,
    UsageInfo,
)
from sglang.srt.layers.sampler import apply_custom_logit_processor  # noqa: E402
from sglang.srt.sampling.custom_logit_processor import CustomLogitProcessor  # noqa: E402
from sglang.srt.sampling.sampling_batch_info import (  # noqa: E402
    ProcessorEntry,
    SamplingBatchInfo,
)

from crsp_ops.inference.context import InferenceContext  # noqa: E402
from crsp_ops.inference.openai_backend import completion_from_response  # noqa: E402
from crsp_ops.inference.request_options import rollout_request_options  # noqa: E402
from crsp_ops.steering.request_fields import steering_request_fields  # noqa: E402
from crsp_ops.steering.sglang import (  # noqa: E402
    ClusterBiasSGLangProcessor,
    sglang_processor_string,
)

pytestmark = pytest.mark.engines

PAD = 3


def test_installed_version_is_the_pinned_one():
    from importlib.metadata import version

    assert version("sglang") == "0.5.23"


def test_the_string_we_send_loads_our_class_through_sglang():
    processor = CustomLogitProcessor.from_str(sglang_processor_string())
    assert type(processor) is ClusterBiasSGLangProcessor
    # SGLang's own serialisation of the class loads the same class.
    assert type(CustomLogitProcessor.from_str(ClusterBiasSGLangProcessor.to_str())) is \
        ClusterBiasSGLangProcessor


def batch_info(n_rows, vocab, custom_params, processor_rows):
    """A real ``SamplingBatchInfo`` whose rows ``processor_rows`` use our processor string."""
    zeros = torch.zeros(n_rows)
    return SamplingBatchInfo(
        temperatures=torch.ones(n_rows, 1), top_ps=zeros + 1, top_ks=torch.ones(n_rows).int(),
        min_ps=zeros, is_all_greedy=True, is_any_greedy=True, need_top_p_sampling=False,
        need_top_k_sampling=False, need_min_p_sampling=False, vocab_size=vocab,
        device="cpu", has_custom_logit_processor=True, custom_params=custom_params,
        custom_logit_processor={hash(sglang_processor_string()): ProcessorEntry(
            processor=CustomLogitProcessor.from_str(sglang_processor_string()),
            rows=processor_rows, indices=torch.tensor(processor_rows))},
    )


@pytest.mark.parametrize("tokens_per_row", [1, 2])  # 2: speculative decoding's layout
def test_sglang_call_path_steers_mixed_rows(steering_table, tokens_per_row):
    table, _ = steering_table
    a, b = [1.0, -2.0, 0.0, 0.5, 0.0], [0.0, 0.0, 3.0, 0.0, -1.0]
    req = object()  # SGLang adds the Req as "__req__" to every dict of custom_params
    params = [{"steer_deltas": a, "__req__": req}, None, None,
              {"steer_deltas": b, "__req__": req}, {"__req__": req}]
    info = batch_info(5, len(table) + PAD, params, processor_rows=[0, 3, 4])
    logits = torch.randn(5 * tokens_per_row, len(table) + PAD)
    out = logits.clone()
    apply_custom_logit_processor(out, info, num_tokens_in_batch=tokens_per_row)
    rows = [a, None, None, b, None]
    expected = reference(logits, table, [r for r in rows for _ in range(tokens_per_row)])
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-6)


def test_our_request_fields_reach_sampling_params():
    options = rollout_request_options("sglang")
    kwargs = options.create_kwargs(extra_body=steering_request_fields("sglang", [0.5, -1.0]),
                                   model="m", messages=[{"role": "user", "content": "hi"}])
    request = ChatCompletionRequest(**{k: v for k, v in kwargs.items() if k != "extra_body"},
                                    **kwargs["extra_body"])
    assert request.return_token_ids and request.return_prompt_token_ids and request.logprobs
    assert request.custom_logit_processor == sglang_processor_string()
    sampling = request.to_sampling_params(stop=[], model_generation_config={})
    assert sampling["custom_params"] == {"steer_deltas": [0.5, -1.0]}


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def sglang_response_json(tokenizer, prompt_ids, response_ids):
    """A chat response built with SGLang's classes, serialised as its server does."""
    content = []
    for i in response_ids:
        piece = tokenizer.convert_ids_to_tokens(i)
        raw = list(tokenizer.decode([i]).encode("utf-8"))
        content.append(ChatCompletionTokenLogprob(
            token=piece, bytes=raw, logprob=-0.5,
            top_logprobs=[TopLogprob(token=piece, bytes=raw, logprob=-0.5)]))
    response = ChatCompletionResponse(
        id="x", model="m",
        choices=[ChatCompletionResponseChoice(
            index=0, message=ChatMessage(role="assistant", content=tokenizer.decode(response_ids)),
            logprobs=ChoiceLogprobs(content=content), finish_reason="stop",
            prompt_token_ids=list(prompt_ids), response_token_ids=list(response_ids))],
        usage=UsageInfo(prompt_tokens=len(prompt_ids), completion_tokens=len(response_ids),
                        total_tokens=len(prompt_ids) + len(response_ids)),
    )
    return response.model_dump_json()


def test_rollout_reads_response_token_ids(tokenizer):
    """Ignoring ``response_token_ids`` fails here: the logprob tokens are vocabulary pieces,
    so the backend without a tokenizer cannot map them, and the context would round-trip."""
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    ctx = InferenceContext(tokenizer)
    prompt_ids = ctx.tokenize_prompt(messages).tolist()
    response_ids = tokenizer.encode("The answer is 4.", add_special_tokens=False)
    body = sglang_response_json(tokenizer, prompt_ids, response_ids)
    assert "token_ids" not in json.loads(body)["choices"][0]  # SGLang 0.5.23's spelling only
    sdk = ChatCompletion.model_validate_json(body)
    completion = completion_from_response(sdk, "processed", tokenizer=None)
    assert list(completion.token_ids) == response_ids
    assert list(completion.prompt_token_ids) == prompt_ids
    rollout = ctx.create_rollout_from_choice(messages, sdk.choices[0], "math", "ex1", 1.0)
    assert rollout.response_tokens.tolist() == response_ids
    stats = ctx.stats()
    assert stats["engine_token_ids"] == 1 and stats["token_string_round_trips"] == 0
    assert stats["prompt_alignment_checks"] == 1  # prompt ids read from the choice

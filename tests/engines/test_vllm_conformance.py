"""The project's vLLM processors and response handling against the installed vLLM (0.32.0).

Loaded through vLLM's own loaders (V1: ``vllm.v1.sample.logits_processor``; Model Runner V2:
``vllm.v1.worker.gpu.sample.logits_processor``), driven by vLLM's own ``InputBatch`` (V1) and
``LogitsContext`` (V2), validated with vLLM's ``SamplingParams`` and request model, and fed
responses built with vLLM's pydantic response classes and serialised as its server does.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tests.engines.engine_testkit import reference, require_engine

vllm = require_engine("vllm")

import vllm.v1.worker.gpu_input_batch as gpu_input_batch  # noqa: E402
from openai.types.chat import ChatCompletion  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: E402
    ChatCompletionLogProb,
    ChatCompletionLogProbs,
    ChatCompletionLogProbsContent,
    ChatCompletionRequest,
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatMessage,
)
from vllm.entrypoints.serve.engine.protocol import UsageInfo  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.v1.sample.logits_processor import (  # noqa: E402
    LogitsProcessors,
    validate_logits_processors_parameters,
)
from vllm.v1.worker.gpu.sample.logits_processor import (  # noqa: E402
    LogitsContext,
    build_custom_logits_processors,
    build_custom_logits_processors_params_validator,
)
from vllm.v1.worker.gpu_input_batch import CachedRequestState, InputBatch  # noqa: E402

from crsp_ops.inference.context import InferenceContext  # noqa: E402
from crsp_ops.inference.openai_backend import completion_from_response  # noqa: E402
from crsp_ops.inference.request_options import rollout_request_options  # noqa: E402
from crsp_ops.inference.server_launch import server_launch  # noqa: E402
from crsp_ops.steering.request_fields import steering_request_fields  # noqa: E402
from crsp_ops.steering.vllm_runner import (  # noqa: E402
    PROCESSOR_CLASSES,
    VLLM_RUNNER_ENV,
    installed_vllm_version,
)

pytestmark = pytest.mark.engines

V1, V2 = PROCESSOR_CLASSES["v1"], PROCESSOR_CLASSES["v2"]
PAD = 3
CONFIG = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: 40 + PAD))


def params(row, **extra):
    return SamplingParams(temperature=0.0, **extra,
                          extra_args=None if row is None else {"steer_deltas": list(row)})


def test_installed_version_is_the_pinned_one():
    assert vllm.__version__ == "0.32.0"


# ---- Model Runner V2 ----------------------------------------------------------------------


def test_v2_loader_loads_and_validates_the_v2_class(steering_table):
    validate = build_custom_logits_processors_params_validator([V2])
    validate(params([0.5] * 5))
    validate(params(None))
    with pytest.raises(VLLMValidationError, match="expected 5 deltas"):
        validate(params([0.5] * 3))


def test_v2_loader_rejects_the_v1_class(steering_table):
    with pytest.raises(ValueError, match="ClusterBiasVLLMProcessor is not a subclass of "
                                         "vllm.v1.worker.gpu.sample.logits_processor"):
        build_custom_logits_processors_params_validator([V1])


def test_v2_processor_built_by_vllm_follows_expanded_rows(steering_table):
    table, _ = steering_table
    # RequestState needs UVA (a GPU); the loader reads these fields from it.
    req_states = SimpleNamespace(device=torch.device("cpu"), max_num_reqs=4, vocab_size=43,
                                 all_token_ids=None, prompt_len=None, prefill_len=None,
                                 total_len=None)
    [processor] = build_custom_logits_processors(CONFIG, req_states, False, [V2])
    assert type(processor).__module__ == "crsp_ops.steering.vllm_v2"
    a, b = [0.5, -1.0, 0.0, 2.0, 0.25], [-3.0, 0.0, 1.0, 0.0, 0.5]
    assert processor.add_request(2, params(a)) is True
    assert processor.add_request(0, params(None)) is False
    assert processor.add_request(1, params(b)) is True
    processor.apply_staged_writes()
    # Reordered rows; slot 2 owns three rows (speculative decoding expands them).
    ctx = LogitsContext(
        expanded_idx_mapping=torch.tensor([2, 0, 2, 1, 2], dtype=torch.int32),
        idx_mapping=torch.tensor([2, 0, 1], dtype=torch.int32),
        idx_mapping_np=np.array([2, 0, 1], dtype=np.int32),
        expanded_local_pos=torch.tensor([0, 0, 1, 0, 2], dtype=torch.int32),
        input_ids=torch.zeros(5, dtype=torch.int32), pos=torch.zeros(5, dtype=torch.int64),
        seq_lens_upper_bound_np=np.ones(3, dtype=np.int32),
    )
    logits = torch.randn(5, 43, dtype=torch.float32)
    out = processor.apply(logits.clone(), ctx)
    np.testing.assert_allclose(out.numpy(), reference(logits, table, [a, None, a, b, a]),
                               atol=1e-6)


@pytest.mark.parametrize("configured", ["auto", "v1", "v2"])
def test_the_launched_class_loads_under_the_runner_it_is_launched_with(steering_table,
                                                                        configured):
    generation = SimpleNamespace(
        engine="vllm", vllm_runner=configured, base_url="http://127.0.0.1:8000/v1",
        server_command="vllm serve {model_dir} --logits-processors {vllm_processor}")
    argv, env = server_launch(generation, model_dir="/m", token_clusters=None,
                              vllm_version=installed_vllm_version())
    cls = argv[-1]
    if env[VLLM_RUNNER_ENV] == "1":  # Model Runner V2 (auto picks it on 0.32.0)
        assert configured != "v1"
        build_custom_logits_processors_params_validator([cls])(params([0.0] * 5))
    else:
        assert configured == "v1"
        validate_logits_processors_parameters([cls], params([0.0] * 5))


# ---- V1 (legacy) model runner -------------------------------------------------------------


def test_v1_loader_validates_and_rejects_the_v2_class(steering_table):
    validate_logits_processors_parameters([V1], params([0.1] * 5))
    with pytest.raises(VLLMValidationError, match="expected 5 deltas"):
        validate_logits_processors_parameters([V1], params([0.1] * 2))
    with pytest.raises(ValueError, match="must be a subclass of LogitsProcessor"):
        validate_logits_processors_parameters([V2], params(None))


def test_v1_processor_follows_vllm_input_batch_updates(steering_table, monkeypatch):
    from crsp_ops.steering.vllm import ClusterBiasVLLMProcessor

    table, _ = steering_table
    monkeypatch.setattr(gpu_input_batch, "PIN_MEMORY", False)  # CPU: no pinned allocator
    processor = ClusterBiasVLLMProcessor(CONFIG, torch.device("cpu"), False)
    batch = InputBatch(max_num_reqs=4, max_model_len=64, max_num_batched_tokens=64,
                       device=torch.device("cpu"), vocab_size=43, block_sizes=[16],
                       max_num_blocks_per_req=[4], logitsprocs=LogitsProcessors([processor]))
    assert processor in batch.logitsprocs.non_argmax_invariant
    a, c = [1.0, 0.0, 0.0, 0.0, -1.0], [0.0, 0.0, 2.0, 0.0, 0.0]
    for req_id, row in (("a", a), ("b", None), ("c", c)):
        batch.add_request(CachedRequestState(
            req_id=req_id, prompt_token_ids=[1, 2, 3], mm_features=[],
            sampling_params=params(row), generator=None, block_ids=([0],),
            num_computed_tokens=0, output_token_ids=[]))
    batch.refresh_metadata()
    logits = torch.randn(3, 43)
    np.testing.assert_allclose(processor.apply(logits.clone()).numpy(),
                               reference(logits, table, [a, None, c]), atol=1e-6)
    batch.remove_request("a")
    batch.condense()  # "c" moves into the freed row 0
    batch.refresh_metadata()
    assert batch.req_ids == ["c", "b"]
    np.testing.assert_allclose(processor.apply(logits[:2].clone()).numpy(),
                               reference(logits[:2], table, [c, None]), atol=1e-6)


# ---- requests and responses --------------------------------------------------------------


def test_our_request_fields_become_extra_args():
    options = rollout_request_options("vllm")
    kwargs = options.create_kwargs(extra_body=steering_request_fields("vllm", [0.5, -1.0]),
                                   model="m", messages=[{"role": "user", "content": "hi"}])
    request = ChatCompletionRequest(**{k: v for k, v in kwargs.items() if k != "extra_body"},
                                    **kwargs["extra_body"])
    assert request.return_token_ids is True and request.logprobs is True
    sampling = request.to_sampling_params(max_tokens=8, default_sampling_params={})
    assert sampling.extra_args == {"steer_deltas": [0.5, -1.0]}


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def vllm_response_json(tokenizer, prompt_ids, response_ids):
    """A chat response built with vLLM's classes, serialised as its server does."""
    content = [ChatCompletionLogProbsContent(
        token=f"token_id:{i}", logprob=-0.5,
        top_logprobs=[ChatCompletionLogProb(token=f"token_id:{i}", logprob=-0.5)])
        for i in response_ids]
    response = ChatCompletionResponse(
        model="m",
        choices=[ChatCompletionResponseChoice(
            index=0, message=ChatMessage(role="assistant", content=tokenizer.decode(response_ids)),
            logprobs=ChatCompletionLogProbs(content=content), finish_reason="stop",
            token_ids=list(response_ids))],
        usage=UsageInfo(prompt_tokens=len(prompt_ids), completion_tokens=len(response_ids),
                        total_tokens=len(prompt_ids) + len(response_ids)),
        prompt_token_ids=list(prompt_ids),
    )
    return json.dumps(response.model_dump())  # JSONResponse(content=response.model_dump())


def test_rollout_from_a_vllm_response(tokenizer):
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    ctx = InferenceContext(tokenizer)
    prompt_ids = ctx.tokenize_prompt(messages).tolist()
    response_ids = tokenizer.encode("The answer is 4.", add_special_tokens=False)
    sdk = ChatCompletion.model_validate_json(vllm_response_json(tokenizer, prompt_ids,
                                                                response_ids))
    completion = completion_from_response(sdk, "raw", tokenizer=None)
    assert list(completion.token_ids) == response_ids
    assert list(completion.prompt_token_ids) == prompt_ids
    rollout = ctx.create_rollout_from_choice(
        messages, sdk.choices[0], "math", "ex1", 1.0,
        server_prompt_token_ids=sdk.model_extra["prompt_token_ids"])
    assert rollout.response_tokens.tolist() == response_ids
    assert ctx.stats()["engine_token_ids"] == 1 and ctx.stats()["prompt_alignment_checks"] == 1

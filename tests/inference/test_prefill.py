"""Assistant prefill: a final assistant message is continued, the same way by every backend."""

from __future__ import annotations

import pytest

from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.context import InferenceContext
from crsp_ops.inference.hf_chat import encode_chat, fallback_prompt_text
from crsp_ops.inference.openai_backend import OpenAIServerBackend, OpenAIServerSettings
from crsp_ops.inference.transformers_backend import TransformersBackend
from tests.fakes import ScriptedJSONServer
from tests.inference.test_openai_backend_retry import chat_body

QUESTION = [{"role": "system", "content": "Reply as <think>..</think><answer>..</answer>"},
            {"role": "user", "content": "What is 2+2?"}]
PREFILLED = [*QUESTION, {"role": "assistant", "content": "<think>"}]


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    return TransformersBackend.from_pretrained(tiny_model_dir, device="cpu")


def test_prefill_ids_are_the_generation_prompt_then_the_prefill(backend):
    tokenizer = backend.tokenizer
    plain, _ = encode_chat(tokenizer, QUESTION)
    prefilled, used_fallback = encode_chat(tokenizer, PREFILLED)
    assert not used_fallback
    # the open assistant turn is the generation prompt; the prefill follows, unterminated
    assert prefilled[: len(plain)] == plain
    assert tokenizer.decode(prefilled[len(plain):]) == "<think>"


def test_backend_continues_the_prefill_and_rollouts_align(backend):
    [completion] = backend.generate([PREFILLED], SamplingParams(6, 0.0, 1.0))
    assert list(completion.prompt_token_ids) == encode_chat(backend.tokenizer, PREFILLED)[0]
    assert not completion.text.startswith("<think>")  # the text is only what was generated
    rollout = InferenceContext(backend.tokenizer, logprob_semantics="processed") \
        .create_rollout_from_completion(PREFILLED, completion, env_name="solve/math",
                                        env_example_id="0", reward=0.0)
    assert rollout.prompt_tokens.tolist() == list(completion.prompt_token_ids)


def test_fallback_format_opens_the_assistant_line_with_the_prefill():
    assert fallback_prompt_text(PREFILLED).endswith("user: What is 2+2?\nassistant: <think>")
    assert fallback_prompt_text(QUESTION).endswith("user: What is 2+2?\nassistant:")


@pytest.mark.server
def test_server_backend_asks_the_server_to_continue_the_final_message():
    def script(body, count):
        return 200, chat_body("2+2=4</think>", [5, 6]), 0.0

    with ScriptedJSONServer(script) as server, OpenAIServerBackend(OpenAIServerSettings(
            base_url=server.base_url, model="m", engine="vllm", request_timeout_s=10.0)) as client:
        client.generate([PREFILLED, QUESTION], SamplingParams(4, 0.0, 1.0))
    by_last_role = {body["messages"][-1]["role"]: body for body in server.bodies}
    assert by_last_role["assistant"]["continue_final_message"] is True
    assert by_last_role["assistant"]["add_generation_prompt"] is False
    assert "continue_final_message" not in by_last_role["user"]

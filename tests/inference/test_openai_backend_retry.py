"""OpenAIServerBackend's request fields, retry policy and ordering, over real loopback HTTP.

The server here is a scripted stdlib HTTP server (its answers are chosen per test: 503, 429,
400, delays), so each retry rule is checked exactly; the end-to-end tests against the real
model server live in test_openai_backend_server.py.
"""

from __future__ import annotations

import logging

import pytest

from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.openai_backend import (
    OpenAIServerBackend,
    OpenAIServerSettings,
    RequestFailedError,
    RetryPolicy,
    is_transient,
    parse_token_id,
    validate_deltas,
)
from crsp_ops.inference.server_manager import free_port
from tests.fakes import ScriptedJSONServer as ScriptedServer

pytestmark = pytest.mark.server  # a real (scripted) HTTP server on 127.0.0.1

GREEDY = SamplingParams(max_new_tokens=3, temperature=0.0, top_p=1.0)
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_initial_s=0.01, backoff_max_s=0.05)


def chat_body(text, token_ids, with_ids=True):
    content = [{"token": f"token_id:{t}", "logprob": -0.5 * (i + 1), "bytes": None,
                "top_logprobs": []} for i, t in enumerate(token_ids)]
    choice = {"index": 0, "message": {"role": "assistant", "content": text},
              "logprobs": {"content": content}, "finish_reason": "length"}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [choice],
            "usage": {"prompt_tokens": 2, "completion_tokens": len(token_ids),
                      "total_tokens": 2 + len(token_ids)}}
    if with_ids:
        choice["token_ids"] = list(token_ids)
        body["prompt_token_ids"] = [7, 8]
    return body


def backend_for(base_url, **overrides):
    values = dict(base_url=base_url, model="m", engine="vllm", retry=FAST_RETRY,
                  request_timeout_s=10.0, max_concurrency=4)
    values.update(overrides)
    return OpenAIServerBackend(OpenAIServerSettings(**values))


def conversation(text):
    return [{"role": "user", "content": text}]


def test_transient_failures_are_retried_and_logged(caplog):
    answers = {1: (503, {"error": {"message": "warming up"}}),
               2: (429, {"error": {"message": "slow down"}})}

    def script(body, count):
        status, payload = answers.get(count, (200, chat_body("ok", [5, 6, 2])))
        return status, payload, 0.0

    caplog.set_level(logging.WARNING, logger="crsp_ops.inference.openai_backend")
    with ScriptedServer(script) as server, backend_for(server.base_url) as backend:
        [completion] = backend.generate([conversation("hi")], GREEDY)
    assert completion.token_ids == (5, 6, 2) and completion.prompt_token_ids == (7, 8)
    assert completion.logprobs == (-0.5, -1.0, -1.5) and completion.text == "ok"
    assert completion.extra["attempts"] == 3 and backend.retry_count == 2
    assert len(server.bodies) == 3
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and "503" in retries[0] and "429" in retries[1]


def test_bad_request_is_not_retried():
    def script(body, count):
        return 400, {"error": {"message": "max_tokens is too large"}}, 0.0

    with ScriptedServer(script) as server, backend_for(server.base_url) as backend:
        with pytest.raises(RequestFailedError, match="not retried.*max_tokens is too large"):
            backend.generate([conversation("hi")], GREEDY)
    assert len(server.bodies) == 1


def test_persistent_5xx_gives_up_after_the_attempt_budget():
    def script(body, count):
        return 500, {"error": {"message": "engine dead"}}, 0.0

    with ScriptedServer(script) as server, backend_for(server.base_url) as backend:
        with pytest.raises(RequestFailedError, match="after 3 attempts"):
            backend.generate([conversation("hi")], GREEDY)
    assert len(server.bodies) == 3


def test_server_not_started_is_a_clear_error():
    backend = backend_for(f"http://127.0.0.1:{free_port()}/v1")
    with backend, pytest.raises(RequestFailedError, match="after 3 attempts: APIConnectionError"):
        backend.generate([conversation("hi")], GREEDY)


def test_request_fields_and_input_order_under_concurrency():
    def script(body, count):
        index = int(body["messages"][0]["content"])
        # Later inputs answer sooner, so completion order is the reverse of input order.
        return 200, chat_body(str(index), [index]), 0.05 * (5 - index)

    params = SamplingParams(max_new_tokens=3, temperature=0.7, top_p=0.9, seed=11)
    with ScriptedServer(script) as server, backend_for(server.base_url, top_logprobs=2) as backend:
        completions = backend.generate([conversation(str(i)) for i in range(5)], params)
    assert [c.text for c in completions] == ["0", "1", "2", "3", "4"]
    assert [c.token_ids for c in completions] == [(i,) for i in range(5)]
    body = next(b for b in server.bodies if b["messages"][0]["content"] == "3")
    assert body["max_tokens"] == 3 and body["temperature"] == 0.7 and body["top_p"] == 0.9
    assert body["seed"] == 14 and body["n"] == 1  # seed + index: distinct, reproducible
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert body["return_token_ids"] is True and body["model"] == "m"
    assert body["return_tokens_as_token_ids"] is True  # from request_options (vLLM)


def test_ids_recovered_from_token_id_logprobs_when_server_omits_token_ids():
    def script(body, count):
        return 200, chat_body("ab", [3, 9], with_ids=False), 0.0

    with ScriptedServer(script) as server, backend_for(server.base_url) as backend:
        [completion] = backend.generate([conversation("x")], GREEDY)
    assert completion.token_ids == (3, 9) and completion.prompt_token_ids == ()


def test_deltas_for_an_engine_that_cannot_steer_raise_before_any_request():
    with pytest.raises(ValueError, match="cannot steer"):
        validate_deltas([0.0, 1.0], "openai", None)
    with pytest.raises(ValueError, match="3 clusters"):
        validate_deltas([0.0, 1.0], "vllm", 3)
    with pytest.raises(ValueError, match="finite"):
        validate_deltas([0.0, float("nan")], "sglang", 2)
    assert validate_deltas(None, "openai", None) is None
    backend = backend_for(f"http://127.0.0.1:{free_port()}/v1", engine="openai")
    with backend, pytest.raises(ValueError, match="cannot steer"):
        backend.generate([conversation("x")], GREEDY, deltas=[0.0])


def test_pure_helpers():
    assert parse_token_id("token_id:42") == 42
    with pytest.raises(ValueError, match="return_token_ids"):
        parse_token_id("hello")
    assert FAST_RETRY.delay_s(1) == 0.01 and FAST_RETRY.delay_s(10) == 0.05
    assert not is_transient(ValueError("x"))
    with pytest.raises(ValueError, match="engine must be one of"):
        OpenAIServerSettings(base_url="http://x/v1", model="m", engine="tgi")

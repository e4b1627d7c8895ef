"""OpenAIServerBackend + ServerManager against the real local server process on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.openai_backend import (
    OpenAIServerBackend,
    OpenAIServerSettings,
    RequestFailedError,
    RetryPolicy,
)
from crsp_ops.inference.process_group import group_alive
from crsp_ops.inference.server_config import ServerConfig
from crsp_ops.inference.server_manager import ServerDiedError, ServerManager, free_port
from crsp_ops.inference.transformers_backend import completion_to_choice
from tests.inference.conftest import local_server_config, openai_base_url

pytestmark = pytest.mark.server

GREEDY = SamplingParams(max_new_tokens=16, temperature=0.0, top_p=1.0)
CONVERSATIONS = [
    [{"role": "user", "content": "Context:\nRevenue was $12 million.\n\nQuestion: Revenue?"}],
    [{"role": "system", "content": "Be brief."},
     {"role": "user", "content": "Context:\nCosts fell 3%.\n\nQuestion: Cost change?"}],
]


def settings_for(manager, engine, **overrides):
    values = dict(base_url=openai_base_url(manager), model="tiny", engine=engine,
                  logprob_semantics="processed", max_concurrency=2, request_timeout_s=60.0,
                  retry=RetryPolicy(max_attempts=4, backoff_initial_s=0.2, backoff_max_s=1.0))
    if engine == "sglang":
        values.pop("logprob_semantics")  # SGLang's logprobs are always processed
    values.update(overrides)
    return OpenAIServerSettings(**values)


def assert_same(http, local):
    assert http.token_ids == local.token_ids
    assert http.text == local.text
    assert http.prompt_token_ids == local.prompt_token_ids
    assert http.finish_reason == local.finish_reason
    assert http.logprob_semantics == local.logprob_semantics == "processed"
    assert http.logprobs == pytest.approx(local.logprobs, abs=1e-4)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_http_completions_equal_inprocess_ones(steering_server, inprocess_backend, engine,
                                               n_clusters, token_clusters):
    settings = settings_for(steering_server, engine, n_clusters=n_clusters)
    with OpenAIServerBackend(settings, server=steering_server) as backend:
        plain = backend.generate(CONVERSATIONS, GREEDY)
        deltas = [0.5] * n_clusters
        deltas[int(token_clusters[plain[0].token_ids[0]])] = -50.0  # change the first token
        steered = backend.generate(CONVERSATIONS, GREEDY, deltas=deltas)
    for conversation, http_plain, http_steered in zip(CONVERSATIONS, plain, steered, strict=True):
        [local_plain] = inprocess_backend.generate([conversation], GREEDY)
        [local_steered] = inprocess_backend.generate([conversation], GREEDY, deltas=deltas)
        assert_same(http_plain, local_plain)
        assert_same(http_steered, local_steered)
    assert any(p.token_ids != s.token_ids for p, s in zip(plain, steered, strict=True))
    assert backend.retry_count == 0


def test_rollouts_over_http_equal_inprocess_rollouts(steering_server, inprocess_backend,
                                                     tiny_model_dir):
    import openai
    from transformers import AutoTokenizer

    from crsp_ops.inference.context import InferenceContext
    from crsp_ops.inference.request_options import rollout_request_options

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    context = InferenceContext(tokenizer, logprob_semantics="processed")
    options = rollout_request_options("vllm", "processed")
    client = openai.OpenAI(base_url=openai_base_url(steering_server), api_key="x", max_retries=0,
                           timeout=60.0)
    [conversation] = CONVERSATIONS[:1]
    response = client.chat.completions.create(**options.create_kwargs(
        model="tiny", messages=conversation, max_tokens=16, temperature=0.0))
    client.close()
    http_rollout = context.create_rollout_from_choice(
        conversation, response.choices[0], "financebench", "ex-1", 1.0,
        server_prompt_token_ids=response.model_extra["prompt_token_ids"])
    [local] = inprocess_backend.generate([conversation], GREEDY)
    local_rollout = context.create_rollout_from_choice(
        conversation, completion_to_choice(local, tokenizer), "financebench", "ex-1", 1.0)
    assert list(http_rollout.prompt_tokens) == list(local_rollout.prompt_tokens)
    assert list(http_rollout.response_tokens) == list(local_rollout.response_tokens)
    assert list(http_rollout.response_logprobs) == pytest.approx(
        list(local_rollout.response_logprobs), abs=1e-4)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_sampling_knobs_over_http_equal_inprocess_ones(steering_server, inprocess_backend,
                                                      engine):
    # seeded sampling: the server must apply top_k, min_p and the penalty exactly as in process
    knobs = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.95, seed=5, top_k=3,
                           min_p=0.05, repetition_penalty=1.3)
    plain = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.95, seed=5)
    with OpenAIServerBackend(settings_for(steering_server, engine),
                             server=steering_server) as backend:
        [http] = backend.generate(CONVERSATIONS[:1], knobs)
    [local] = inprocess_backend.generate(CONVERSATIONS[:1], knobs)
    [local_plain] = inprocess_backend.generate(CONVERSATIONS[:1], plain)
    assert_same(http, local)
    assert local.logprobs != local_plain.logprobs  # the knobs change what is sampled from


def test_chat_template_kwargs_over_http_render_the_prompt_the_context_expects(
        thinking_model_dir, tmp_path):
    from transformers import AutoTokenizer

    from crsp_ops.inference.context import InferenceContext

    kwargs = {"enable_thinking": False}
    tokenizer = AutoTokenizer.from_pretrained(thinking_model_dir)
    conversation = [*CONVERSATIONS[0], {"role": "assistant", "content": "<think>"}]
    config = local_server_config(thinking_model_dir, tmp_path / "server.log")
    with ServerManager(config) as manager, OpenAIServerBackend(
            settings_for(manager, "vllm", chat_template_kwargs=kwargs),
            server=manager) as backend:
        [completion] = backend.generate([conversation], GREEDY)
    context = InferenceContext(tokenizer, logprob_semantics="processed",
                               chat_template_kwargs=kwargs)
    assert completion.prompt_token_ids == tuple(context.tokenize_prompt(conversation))
    assert "no thinking" in tokenizer.decode(list(completion.prompt_token_ids))
    context.create_rollout_from_completion(conversation, completion, "solve", "0", 1.0)


def test_server_not_started_is_a_clear_error():
    port = free_port()
    manager = ServerManager(ServerConfig(f"http://127.0.0.1:{port}", command=None,
                                         startup_timeout_s=0.5, health_interval_s=0.1))
    settings = OpenAIServerSettings(base_url=f"http://127.0.0.1:{port}/v1", model="tiny",
                                    retry=RetryPolicy(max_attempts=2, backoff_initial_s=0.01))
    with OpenAIServerBackend(settings, server=manager) as backend:
        with pytest.raises(ServerDiedError, match="not healthy"):
            backend.generate(CONVERSATIONS[:1], GREEDY)
    with OpenAIServerBackend(settings) as backend:
        with pytest.raises(RequestFailedError, match="APIConnectionError"):
            backend.generate(CONVERSATIONS[:1], GREEDY)


def kill_after_first_answer(manager, log_path, killed):
    """SIGKILL the server group as soon as its access log shows one answered request."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if '"POST /v1/chat/completions HTTP/1.1" 200' in log_path.read_text(errors="replace"):
            killed.append(manager.pid)
            os.killpg(manager.pid, signal.SIGKILL)
            return
        time.sleep(0.01)


@pytest.mark.slow
def test_server_killed_mid_minibatch_is_restarted_and_no_example_is_lost(
    tiny_model_dir, tmp_path, inprocess_backend
):
    log = tmp_path / "server.log"
    conversations = [
        [{"role": "user", "content": f"Context:\nCost was ${i}{i} million.\n\nQuestion: Cost?"}]
        for i in range(6)
    ]
    params = SamplingParams(max_new_tokens=24, temperature=0.0, top_p=1.0)
    killed: list[int] = []
    with ServerManager(local_server_config(tiny_model_dir, log, max_restarts=2)) as manager:
        with OpenAIServerBackend(settings_for(manager, "vllm"), server=manager) as backend:
            killer = threading.Thread(target=kill_after_first_answer, args=(manager, log, killed))
            killer.start()
            completions = backend.generate(conversations, params)
            killer.join()
            retries = backend.retry_count
        second = manager.pid
    assert killed and manager.restarts == 1 and retries >= 1
    assert len(completions) == len(conversations)
    for conversation, completion in zip(conversations, completions, strict=True):
        [local] = inprocess_backend.generate([conversation], params)
        assert_same(completion, local)
    assert not group_alive(killed[0]) and not group_alive(second)
    assert log.read_text().count("=== crsp_ops: starting") == 2

"""The local OpenAI-compatible server over real HTTP: endpoints, fields, errors, steering."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.inference.conftest import openai_base_url

pytestmark = pytest.mark.server

USER = [{"role": "user", "content": "Context:\nRevenue was $12 million.\n\nQuestion: Revenue?"}]


def post(manager, body, raw=None):
    """POST to /v1/chat/completions; return (status, parsed JSON body)."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(openai_base_url(manager) + "/chat/completions", data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def get(manager, path):
    with urllib.request.urlopen(manager.config.base_url + path, timeout=10) as response:
        return response.status, json.loads(response.read())


def greedy_body(**extra):
    return {"model": "tiny", "messages": USER, "max_tokens": 12, "temperature": 0, **extra}


def test_health_and_models(steering_server):
    assert get(steering_server, "/health") == (200, {})
    status, models = get(steering_server, "/v1/models")
    assert status == 200 and [m["id"] for m in models["data"]] == ["tiny"]


def test_chat_returns_ids_logprobs_and_usage(steering_server, inprocess_backend):
    from crsp_ops.inference.completions import SamplingParams

    status, body = post(steering_server, greedy_body(logprobs=True, top_logprobs=3,
                                                     return_token_ids=True,
                                                     return_prompt_token_ids=True,
                                                     some_future_field={"x": 1}))
    assert status == 200, body
    [choice] = body["choices"]
    [reference] = inprocess_backend.generate([USER], SamplingParams(12, 0.0, 1.0))
    # return_prompt_token_ids is SGLang's: ids come back spelled as SGLang 0.5.23 does.
    assert choice["response_token_ids"] == list(reference.token_ids)
    prompt_ids = list(reference.prompt_token_ids)
    assert choice["prompt_token_ids"] == prompt_ids
    assert "token_ids" not in choice and "prompt_token_ids" not in body
    status, body = post(steering_server, greedy_body(return_token_ids=True))  # vLLM's spelling
    assert body["choices"][0]["token_ids"] == list(reference.token_ids)
    assert body["prompt_token_ids"] == prompt_ids
    assert "prompt_token_ids" not in body["choices"][0]
    [choice] = post(steering_server, greedy_body(logprobs=True, top_logprobs=3))[1]["choices"]
    assert choice["message"]["content"] == reference.text
    assert body["usage"] == {"prompt_tokens": reference.prompt_tokens,
                             "completion_tokens": reference.response_tokens,
                             "total_tokens": reference.prompt_tokens + reference.response_tokens}
    content = choice["logprobs"]["content"]
    for item, logprob in zip(content, reference.logprobs, strict=True):
        assert item["logprob"] == pytest.approx(logprob, abs=1e-4)
        # Greedy: the best alternative is the chosen token, with the same logprob.
        best = item["top_logprobs"][0]
        assert best["token"] == item["token"]
        assert best["logprob"] == pytest.approx(logprob, abs=1e-4)
        assert len(item["top_logprobs"]) == 3
        assert item["top_logprobs"][0]["logprob"] >= item["top_logprobs"][1]["logprob"]


def test_tokens_as_token_ids_and_defaults(steering_server):
    status, body = post(steering_server, greedy_body(logprobs=True, top_logprobs=2,
                                                     return_tokens_as_token_ids=True))
    assert status == 200
    [choice] = body["choices"]
    assert "token_ids" not in choice and "prompt_token_ids" not in body  # not asked for
    tokens = [item["token"] for item in choice["logprobs"]["content"]]
    assert all(token.startswith("token_id:") for token in tokens)
    assert choice["logprobs"]["content"][0]["top_logprobs"][0]["token"] == tokens[0]
    status, body = post(steering_server, {"messages": USER, "max_completion_tokens": 2})
    assert status == 200 and body["choices"][0]["logprobs"] is None
    assert body["usage"]["completion_tokens"] <= 2


@pytest.mark.parametrize(
    ("body", "raw", "status", "needle"),
    [
        (None, b"{not json", 400, "not valid JSON"),
        ({"model": "tiny"}, None, 400, "messages"),
        (greedy_body(top_logprobs=2), None, 400, "requires logprobs"),
        (greedy_body(temperature=-1), None, 400, "temperature"),
        (greedy_body(max_tokens=0), None, 400, "max_tokens"),
        (greedy_body(n=2), None, 400, "n=1"),
        (greedy_body(model="other"), None, 404, "does not exist"),
        (greedy_body(vllm_xargs={"steer_deltas": [1.0]}), None, 400, "6 clusters"),
        (greedy_body(vllm_xargs={"steer_deltas": ["a"]}), None, 400, "finite numbers"),
    ],
)
def test_bad_requests_get_json_errors(steering_server, body, raw, status, needle):
    got_status, error = post(steering_server, body, raw=raw)
    assert got_status == status
    assert needle in error["error"]["message"] and error["error"]["code"] == status


def test_both_steering_field_styles_steer_the_same_way(steering_server, n_clusters,
                                                        token_clusters):
    from crsp_ops.steering.request_fields import steering_request_fields

    plain = post(steering_server, greedy_body(return_token_ids=True))[1]
    banned = int(token_clusters[plain["choices"][0]["token_ids"][0]])
    deltas = [0.0] * n_clusters
    deltas[banned] = -1.0e4  # the cluster the unsteered answer starts with
    outputs = []
    for engine in ("vllm", "sglang"):
        status, body = post(steering_server, greedy_body(return_token_ids=True,
                                                         **steering_request_fields(engine, deltas)))
        assert status == 200, body
        [choice] = body["choices"]
        outputs.append(choice["response_token_ids" if engine == "sglang" else "token_ids"])
    assert outputs[0] == outputs[1] != plain["choices"][0]["token_ids"]
    assert int(token_clusters[outputs[0][0]]) != banned
    # SGLang ignores custom_params without the processor string; so does this server.
    status, body = post(steering_server, greedy_body(return_token_ids=True,
                                                     custom_params={"steer_deltas": deltas}))
    assert body["choices"][0]["response_token_ids"] == plain["choices"][0]["token_ids"]

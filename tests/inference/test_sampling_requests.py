"""The sampling knobs and chat-template kwargs in request bodies, and which engine takes which.

Bodies are read off a scripted HTTP server on 127.0.0.1 (what the client actually sent); that
the project's server applies them is checked in test_openai_backend_server.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crsp_ops.config import ConfigError, load_settings
from crsp_ops.inference import request_options
from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.open_backend import client_settings, generation_sampling
from crsp_ops.inference.request_options import SAMPLING_EXTRAS, unsupported_extras
from crsp_ops.inference.server_protocol import BadRequestError, parse_chat_request
from tests.fakes import ScriptedJSONServer
from tests.inference.test_openai_backend_retry import backend_for, chat_body, conversation

REPO = Path(__file__).resolve().parents[2]
KNOBS = {"top_k": 5, "min_p": 0.1, "repetition_penalty": 1.2}
TEMPLATE = {"enable_thinking": False}


def bodies(params, **settings):
    with ScriptedJSONServer(lambda body, count: (200, chat_body("a", [1]), 0.0)) as server, \
            backend_for(server.base_url, **settings) as backend:
        backend.generate([conversation("q")], params)
    return server.bodies


@pytest.mark.server
def test_knobs_are_sent_only_when_on():
    [plain] = bodies(SamplingParams(4, 0.7, 0.9, seed=1))
    assert not set(plain) & set(SAMPLING_EXTRAS)  # a server that does not know them: untouched
    [sent] = bodies(SamplingParams(4, 0.7, 0.9, seed=1, **KNOBS), chat_template_kwargs=TEMPLATE)
    assert {name: sent[name] for name in KNOBS} == KNOBS
    assert sent["chat_template_kwargs"] == TEMPLATE and sent["top_p"] == 0.9


@pytest.mark.server
def test_a_server_of_unknown_kind_gets_the_knobs_as_configured():
    [sent] = bodies(SamplingParams(4, 0.7, 1.0, top_k=2), engine="openai",
                    chat_template_kwargs=TEMPLATE)
    assert sent["top_k"] == 2 and sent["chat_template_kwargs"] == TEMPLATE


def test_the_engines_known_to_take_the_knobs_take_all_of_them():
    for engine in ("vllm", "sglang"):
        assert unsupported_extras(engine, SAMPLING_EXTRAS) == []
    assert unsupported_extras("openai", SAMPLING_EXTRAS) == []  # unknown: sent, not refused


def test_a_knob_the_engine_cannot_honour_is_a_one_line_config_error(monkeypatch):
    without_min_p = frozenset(SAMPLING_EXTRAS) - {"min_p"}
    monkeypatch.setattr(request_options, "ENGINE_SAMPLING_EXTRAS",
                        {**request_options.ENGINE_SAMPLING_EXTRAS, "sglang": without_min_p})
    server = ["generation.backend=openai_server", "generation.engine=sglang"]
    settings = load_settings(REPO, server).settings.generation
    client_settings(settings, base_url="http://127.0.0.1:1/v1", model="m")  # min_p is off
    on = load_settings(REPO, [*server, "generation.min_p=0.1"]).settings.generation
    with pytest.raises(ConfigError) as error:
        client_settings(on, base_url="http://127.0.0.1:1/v1", model="m")
    assert "\n" not in str(error.value)
    assert "generation.min_p" in str(error.value) and "generation.engine=sglang" in str(error.value)
    with pytest.raises(ValueError, match="'sglang' cannot honour min_p"):
        bodies(SamplingParams(4, 0.7, 1.0, min_p=0.1), engine="sglang")


def test_generation_settings_carry_every_knob_and_default_to_off():
    generation = load_settings(REPO).settings.generation
    assert generation_sampling(generation).engine_extras == {}
    assert generation.template_kwargs == {}
    set_ = load_settings(REPO, [
        "generation.top_k=4", "generation.min_p=0.2", "generation.repetition_penalty=1.1",
        'generation.chat_template_kwargs={"enable_thinking": false}']).settings.generation
    assert generation_sampling(set_).engine_extras == {"top_k": 4, "min_p": 0.2,
                                                       "repetition_penalty": 1.1}
    assert set_.template_kwargs == TEMPLATE


@pytest.mark.parametrize("text, message", [
    ("notjson", "is not JSON"), ("[1, 2]", "must be a JSON object"),
    ('{"add_generation_prompt": false}', "set themselves"),
])
def test_bad_chat_template_kwargs_are_a_one_line_config_error(text, message):
    with pytest.raises(ConfigError, match=message) as error:
        load_settings(REPO, [f"generation.chat_template_kwargs={text}"])
    assert "\n" not in str(error.value) and "generation.chat_template_kwargs" in str(error.value)


def test_the_local_server_parses_the_knobs_as_vllm_does():
    body = {"messages": conversation("q"), "top_k": -1, "min_p": 0.3,
            "repetition_penalty": 1.4, "chat_template_kwargs": TEMPLATE}
    request = parse_chat_request(body, "m", 8)
    assert (request.params.top_k, request.params.min_p, request.params.repetition_penalty) == (
        0, 0.3, 1.4)  # vLLM's top_k=-1 means off
    assert request.chat_template_kwargs == TEMPLATE
    for bad in ({"repetition_penalty": 0}, {"min_p": 2}, {"top_k": 1.5},
                {"chat_template_kwargs": "x"}):
        with pytest.raises(BadRequestError):
            parse_chat_request({**body, **bad}, "m", 8)

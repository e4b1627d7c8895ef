"""OpenAI clients honour OPENAI_BASE_URL / OPENAI_API_KEY after the configuration, keys unlogged."""

from __future__ import annotations

import logging

import pytest

from crsp_ops.openai_client import (
    DUMMY_API_KEY,
    OPENAI_API_URL,
    make_openai_client,
    resolve_endpoint,
)
from tests.fakes import ScriptedJSONServer, chat_completion

SECRET = "sk-test-very-secret-0123456789"


def resolve(base_url="", api_key_env="MY_KEY", environ=None):
    return resolve_endpoint(base_url=base_url, api_key_env=api_key_env, role="reflector",
                            url_option="reflector.base_url",
                            key_option="reflector.api_key_env", environ=environ or {})


@pytest.mark.parametrize(("base_url", "environ", "expected_url", "url_source"), [
    ("http://cfg:1/v1", {"OPENAI_BASE_URL": "http://env:2/v1"}, "http://cfg:1/v1", "config"),
    ("", {"OPENAI_BASE_URL": "http://env:2/v1"}, "http://env:2/v1", "$OPENAI_BASE_URL"),
    ("  ", {"OPENAI_BASE_URL": "http://env:2/v1", "MY_KEY": "k"}, "http://env:2/v1",
     "$OPENAI_BASE_URL"),
    ("", {"MY_KEY": "k"}, OPENAI_API_URL, "default"),
])
def test_base_url_config_wins_then_environment_then_openai(base_url, environ, expected_url,
                                                           url_source):
    endpoint = resolve(base_url, environ=environ)
    assert (endpoint.base_url, endpoint.base_url_source) == (expected_url, url_source)


@pytest.mark.parametrize(("environ", "key", "source"), [
    ({"MY_KEY": "named", "OPENAI_API_KEY": "standard"}, "named", "$MY_KEY"),
    ({"OPENAI_API_KEY": "standard"}, "standard", "$OPENAI_API_KEY"),
    ({"MY_KEY": "", "OPENAI_API_KEY": "standard"}, "standard", "$OPENAI_API_KEY"),
    ({}, DUMMY_API_KEY, "none (dummy key)"),
])
def test_key_named_variable_wins_then_openai_api_key_then_dummy_for_local(environ, key, source):
    endpoint = resolve("http://127.0.0.1:9/v1", environ=environ)
    assert (endpoint.api_key, endpoint.api_key_source) == (key, source)


def test_openai_api_without_any_key_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\$MY_KEY and \$OPENAI_API_KEY are not set") as error:
        resolve("", environ={})
    assert "reflector.api_key_env" in str(error.value)
    with pytest.raises(ValueError, match=r"\$OPENAI_API_KEY is not set"):
        resolve("https://api.openai.com/v1", api_key_env="OPENAI_API_KEY", environ={})


def test_key_is_never_in_repr_or_log(caplog):
    with caplog.at_level(logging.DEBUG):
        endpoint = resolve("", environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                        "OPENAI_API_KEY": SECRET})
    assert endpoint.api_key == SECRET
    assert SECRET not in repr(endpoint)
    assert SECRET not in caplog.text
    assert "$OPENAI_API_KEY" in caplog.text and "http://127.0.0.1:9/v1" in caplog.text


@pytest.mark.server
def test_client_from_the_environment_alone_reaches_a_loopback_server(monkeypatch):
    seen = []

    def reply(body, count):
        seen.append(body)
        return 200, chat_completion("hi", body["model"]), 0.0

    with ScriptedJSONServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        endpoint = resolve_endpoint(base_url="", api_key_env="", role="test",
                                    url_option="x.base_url", key_option="x.api_key_env")
        client = make_openai_client(endpoint, timeout_s=10.0, max_retries=0)
        response = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}])
    assert response.choices[0].message.content == "hi"
    assert seen[0]["messages"][0]["content"] == "hello"
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"

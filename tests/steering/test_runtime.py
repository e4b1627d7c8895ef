"""``open_backend``: the in-process backend, and a real local server started, checked and stopped."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest

from crsp_ops.config import ConfigError, load_settings
from crsp_ops.data.financebench import load_financebench
from crsp_ops.evaluation.minibatch_grading import grading_from_settings
from crsp_ops.evolve.minibatch import run_minibatch
from crsp_ops.inference.canary import SteeringCanaryError
from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.open_backend import open_backend, prompt_template, sampling_params
from crsp_ops.inference.openai_backend import OpenAIServerBackend
from crsp_ops.inference.server_launch import api_key, server_argv, server_root
from crsp_ops.inference.server_manager import ServerStartupError, free_port
from crsp_ops.inference.transformers_backend import TransformersBackend
from crsp_ops.paths import copy_config_tree
from tests.evaluation.test_minibatch import build_rule_table
from tests.fakes import live_descendants as live_children

REPO = Path(__file__).resolve().parents[2]
DELTAS = [1.5, -0.5, 0.3, -0.2, 0.0, 0.4]  # 6 cluster ids in the rule table
SERVE = "{python} -m crsp_ops.cli serve --model {model_dir} --port {port}"
GREEDY = SamplingParams(max_new_tokens=12, temperature=0.0, top_p=1.0)


@pytest.fixture(scope="module")
def project_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    copy_config_tree(REPO, root)
    return root


@pytest.fixture
def settings_for(project_root, monkeypatch):
    """Settings of a scratch project that the server subprocess (``crsp-ops serve``) also reads."""
    monkeypatch.setenv("CRSP_OPS_ROOT", str(project_root))

    def make(*overrides):
        base = ["model.device=cpu", "generation.max_new_tokens=24", "generation.batch_size=1"]
        return load_settings(project_root, [*base, *overrides], env={}).settings

    return make


@pytest.fixture(scope="module")
def clusters_dir(tiny_model_dir, tmp_path_factory):
    return build_rule_table(tiny_model_dir, tmp_path_factory.mktemp("clusters"))


@pytest.fixture(scope="module")
def examples():
    return load_financebench("synthetic", synthetic_count=3, seed=11).rows


def assert_no_new_children(before: set[int]) -> None:
    deadline = time.monotonic() + 5.0
    while (left := live_children() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes left running: {sorted(left)}"


def server_overrides(command: str, tmp_path: Path) -> list[str]:
    port = free_port()
    return ["generation.backend=openai_server", "generation.engine=vllm",
            f"generation.base_url=http://127.0.0.1:{port}/v1", f"generation.server_command={command}",
            "generation.startup_timeout_s=120", f"generation.server_log={tmp_path / 'server.log'}"]


def minibatch(settings, backend, examples):
    return run_minibatch(examples, backend, DELTAS, template=prompt_template(settings),
                         sampling=sampling_params(settings),
                         grade=grading_from_settings(settings.scoring))


def test_transformers_backend_is_steered_and_closed(settings_for, tiny_model_dir, clusters_dir):
    settings = settings_for()
    conversation = [[{"role": "user", "content": "Context:\nSales were $5.\n\nQuestion: Sales?"}]]
    with open_backend(settings, tiny_model_dir, clusters_dir) as backend:
        assert isinstance(backend, TransformersBackend) and backend.n_clusters == 6
        [plain] = backend.generate(conversation, GREEDY)
        [eos_first] = backend.generate(conversation, GREEDY, deltas=[1e4, 0, 0, 0, 0, 0])
    assert len(plain.token_ids) > 1
    assert len(eos_first.token_ids) == 1 and eos_first.finish_reason == "stop"
    assert backend.model is None  # closed on exit


def test_unsteered_backend_rejects_deltas(settings_for, tiny_model_dir):
    conversation = [[{"role": "user", "content": "Hello"}]]
    with open_backend(settings_for(), tiny_model_dir, None) as backend:
        with pytest.raises(ValueError, match="without token_clusters"):
            backend.generate(conversation, GREEDY, deltas=[0.0] * 6)


@pytest.mark.server
def test_started_server_matches_inprocess_and_is_stopped(
    settings_for, tiny_model_dir, clusters_dir, examples, tmp_path, caplog
):
    local = settings_for()
    with open_backend(local, tiny_model_dir, clusters_dir) as backend:
        expected = minibatch(local, backend, examples)

    before = live_children()
    remote = settings_for(*server_overrides(SERVE + " --clusters {token_clusters}", tmp_path))
    with caplog.at_level(logging.INFO, logger="crsp_ops.inference.canary"):
        with open_backend(remote, tiny_model_dir, clusters_dir) as backend:
            assert isinstance(backend, OpenAIServerBackend)
            server = backend.server
            assert server.owns_process and server.is_healthy()
            got = minibatch(remote, backend, examples)
    assert "steering canary passed" in caplog.text  # ran once, before the backend was handed out
    assert [r.token_ids for r in got.records] == [r.token_ids for r in expected.records]
    assert [r.answer for r in got.records] == [r.answer for r in expected.records]
    assert got.scores == expected.scores
    assert not server.is_healthy() and server.pid is None
    assert_no_new_children(before)
    assert "crsp_ops: starting" in (tmp_path / "server.log").read_text()


@pytest.mark.server
def test_server_that_ignores_deltas_fails_the_canary_and_is_stopped(
    settings_for, tiny_model_dir, clusters_dir, tmp_path
):
    before = live_children()
    settings = settings_for(*server_overrides(SERVE, tmp_path))  # no --clusters: cannot steer
    with pytest.raises(SteeringCanaryError, match="did not change"):
        with open_backend(settings, tiny_model_dir, clusters_dir):
            pytest.fail("the backend must not be handed out")
    assert_no_new_children(before)


@pytest.mark.server
def test_server_that_never_gets_healthy_is_a_clear_error(settings_for, tiny_model_dir, tmp_path):
    before = live_children()
    settings = settings_for(
        *server_overrides("{python} -c 'import time; time.sleep(60)'", tmp_path),
        "generation.startup_timeout_s=1.5",
    )
    with pytest.raises(ServerStartupError, match="not healthy .* after 1.5s"):
        with open_backend(settings, tiny_model_dir, None):
            pytest.fail("unreachable")
    assert_no_new_children(before)


def test_steering_with_an_engine_that_cannot_steer_is_refused(
    settings_for, tiny_model_dir, clusters_dir, tmp_path
):
    settings = settings_for(*server_overrides(SERVE, tmp_path), "generation.engine=openai")
    before = live_children()
    with pytest.raises(ConfigError, match="cannot steer"):
        with open_backend(settings, tiny_model_dir, clusters_dir):
            pytest.fail("unreachable")
    assert live_children() == before  # refused before anything started


def test_server_argv_fills_placeholders_per_argument():
    argv = server_argv(
        "vllm serve '{model_dir}' --host {host} --port {port} --x {token_clusters}",
        model_dir="/models/my model", base_url="http://0.0.0.0:8123/v1", token_clusters="/t.npy",
    )
    assert argv == ("vllm", "serve", "/models/my model", "--host", "0.0.0.0", "--port", "8123",
                    "--x", "/t.npy")
    assert server_argv("{python} -V", model_dir="m", base_url="http://h:1/v1",
                       token_clusters=None)[0] == sys.executable
    with pytest.raises(ConfigError, match="no clusters directory"):
        server_argv("srv {token_clusters}", model_dir="m", base_url="http://h:1/v1",
                    token_clusters=None)
    with pytest.raises(ConfigError, match="bad placeholder"):
        server_argv("srv {model}", model_dir="m", base_url="http://h:1/v1", token_clusters=None)
    assert server_root("https://host/v1") == "https://host"


def test_api_key_comes_from_the_named_variable(monkeypatch):
    assert api_key("") == "EMPTY"
    monkeypatch.setenv("CRSP_TEST_KEY", "sk-test")
    assert api_key("CRSP_TEST_KEY") == "sk-test"
    monkeypatch.delenv("CRSP_TEST_KEY")
    with pytest.raises(ConfigError, match="CRSP_TEST_KEY"):
        api_key("CRSP_TEST_KEY")

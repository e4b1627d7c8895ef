"""vLLM runner selection: explicit VLLM_USE_V2_MODEL_RUNNER, the matching processor class,
and clear refusals of combinations vLLM's loaders reject."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from crsp_ops.config import ConfigError, load_settings
from crsp_ops.inference.open_backend import settings_server_manager
from crsp_ops.inference.server_launch import server_launch
from crsp_ops.paths import copy_config_tree
from crsp_ops.steering.table import TOKEN_CLUSTERS_ENV
from crsp_ops.steering.vllm_runner import (
    PROCESSOR_CLASSES,
    VLLM_RUNNER_ENV,
    resolve_runner,
    split_env_assignments,
)

REPO = Path(__file__).resolve().parents[2]
V1, V2 = PROCESSOR_CLASSES["v1"], PROCESSOR_CLASSES["v2"]
SERVE = "vllm serve {model_dir} --port {port} --logits-processors {vllm_processor}"


@pytest.mark.parametrize(("configured", "version", "runner"), [
    ("auto", "0.32.0", "v2"), ("auto", "0.31.0", "v2"), ("auto", "0.33.0+cu130", "v2"),
    ("auto", "0.30.0", "v1"), ("auto", None, "v2"), ("v1", "0.32.0", "v1"),
    ("v1", "0.20.0", "v1"), ("v2", "0.32.0", "v2"),
])
def test_runner_by_setting_and_version(configured, version, runner):
    assert resolve_runner(configured, version) == runner


@pytest.mark.parametrize(("configured", "version", "message"), [
    ("v2", "0.30.0", "cannot run custom logits processors"),
    ("v3", "0.32.0", "expected one of auto, v1, v2"),
])
def test_unknown_combinations_are_refused(configured, version, message):
    with pytest.raises(ConfigError, match=message):
        resolve_runner(configured, version)


def generation(command=SERVE, engine="vllm", runner="auto"):
    return SimpleNamespace(server_command=command, engine=engine, vllm_runner=runner,
                           base_url="http://127.0.0.1:8123/v1", memory_fraction=0.15)


def test_the_cpu_build_runs_v1_and_refuses_v2():
    assert resolve_runner("auto", "0.32.0+cpu") == "v1"
    with pytest.raises(ConfigError, match="CPU build"):
        resolve_runner("v2", "0.32.0+cpu")


def test_memory_fraction_fills_its_placeholder():
    argv, _ = server_launch(generation(SERVE + " --gpu-memory-utilization {memory_fraction}"),
                            model_dir="/m", token_clusters=None, vllm_version="0.32.0+cpu")
    assert argv[-2:] == ("--gpu-memory-utilization", "0.15")


@pytest.mark.parametrize(("runner", "version", "cls", "flag"), [
    ("auto", "0.32.0", V2, "1"), ("auto", "0.30.0", V1, "0"), ("v1", "0.32.0", V1, "0"),
])
def test_launch_sets_the_runner_explicitly_and_names_its_class(runner, version, cls, flag):
    argv, env = server_launch(generation(runner=runner), model_dir="/m", token_clusters="/t.npy",
                              vllm_version=version)
    assert argv == ("vllm", "serve", "/m", "--port", "8123", "--logits-processors", cls)
    assert env == {VLLM_RUNNER_ENV: flag, TOKEN_CLUSTERS_ENV: "/t.npy"}


def test_leading_assignments_become_environment_and_must_agree():
    command = "VLLM_USE_V2_MODEL_RUNNER=0 CUDA_VISIBLE_DEVICES=1 " + SERVE
    argv, env = server_launch(generation(command, runner="v1"), model_dir="/m",
                              token_clusters=None, vllm_version="0.32.0")
    assert argv[0] == "vllm" and argv[-1] == V1
    assert env == {VLLM_RUNNER_ENV: "0", "CUDA_VISIBLE_DEVICES": "1"}
    with pytest.raises(ConfigError, match="sets VLLM_USE_V2_MODEL_RUNNER=0.*resolves to v2"):
        server_launch(generation(command), model_dir="/m", token_clusters=None,
                      vllm_version="0.32.0")


def test_a_v1_class_under_model_runner_v2_is_refused():
    command = f"vllm serve {{model_dir}} --logits-processors {V1}"
    with pytest.raises(ConfigError, match=r"implements the V1 interface.*Model Runner V2") as error:
        server_launch(generation(command), model_dir="/m", token_clusters=None,
                      vllm_version="0.32.0")
    assert V2 in str(error.value) and "generation.vllm_runner=v1" in str(error.value)
    command = f"vllm serve {{model_dir}} --logits-processors {V2}"
    with pytest.raises(ConfigError, match="implements the V2 interface"):
        server_launch(generation(command, runner="v1"), model_dir="/m", token_clusters=None,
                      vllm_version="0.32.0")


def test_other_engines_get_no_runner_and_no_vllm_placeholder():
    argv, env = server_launch(generation("sglang serve --model-path {model_dir}", "sglang"),
                              model_dir="/m", token_clusters="/t.npy", vllm_version=None)
    assert argv == ("sglang", "serve", "--model-path", "/m")
    assert env == {TOKEN_CLUSTERS_ENV: "/t.npy"}
    with pytest.raises(ConfigError, match="only a vLLM server"):
        server_launch(generation(SERVE, "sglang"), model_dir="/m", token_clusters=None,
                      vllm_version=None)


def test_split_env_assignments_stops_at_the_program():
    assert split_env_assignments(["A=1", "prog", "B=2"]) == ({"A": "1"}, ("prog", "B=2"))
    assert split_env_assignments([]) == ({}, ())


def test_configured_server_gets_the_runner_variable(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    copy_config_tree(REPO, root)
    settings = load_settings(root, [
        "generation.backend=openai_server", "generation.engine=vllm",
        "generation.vllm_runner=v1", f"generation.server_command={SERVE}",
    ], env={}).settings
    assert settings.generation.vllm_runner == "v1"
    manager = settings_server_manager(settings, "/models/m", None)
    assert manager.config.command[-1] == V1
    assert manager.config.env == {VLLM_RUNNER_ENV: "0"}
    with pytest.raises(ConfigError, match="generation.vllm_runner"):
        load_settings(root, ["generation.vllm_runner=v9"], env={})

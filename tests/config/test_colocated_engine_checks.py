"""generation.backend=vllm_colocate: what this machine cannot do is refused when settings load.

Each refusal is one ``ConfigError`` line naming the fix; from the CLI it is exit 2 with no
run recorded and nothing written. The machine is faked (vLLM present or not, free memory), so
these run in ``make test`` without vLLM.
"""

from __future__ import annotations

import importlib.util

import pytest

from crsp_ops.cli.main import main
from crsp_ops.config import engine_checks, load_settings
from crsp_ops.config.errors import ConfigError

GIB = 2.0**30


@pytest.fixture
def machine(monkeypatch):
    """A CPU host with vLLM's CPU build and 8 of 16 GiB free (each part can be changed)."""
    state = {"vllm": True, "cpu_build": True, "free": 8 * GIB, "total": 16 * GIB}
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(engine_checks.importlib.util, "find_spec", lambda name, *a: (
        (object() if state["vllm"] else None) if name == "vllm" else real_find_spec(name, *a)))
    monkeypatch.setattr(engine_checks, "_cpu_build", lambda: state["cpu_build"])
    monkeypatch.setattr(engine_checks, "_free_memory",
                        lambda cuda: (state["free"], state["total"]))
    return state


def check(**overrides):
    values = {"memory_fraction": 0.25, "sleep_mode": False, "device": "cpu",
              "temperatures": {"train.temperature": 1.0}, **overrides}
    engine_checks.check_colocated_engine(**values)


def test_a_machine_that_can_host_the_engine_passes(machine):
    check()  # 0.25 x 16 = 4 GiB of 8 free
    check(temperatures={"train.temperature": 0.0, "generation.temperature": 0.01})


@pytest.mark.parametrize(("change", "overrides", "words"), [
    ({"vllm": False}, {}, "needs vLLM installed beside crsp_ops"),
    ({"cpu_build": False}, {}, "needs vLLM's CPU build"),
    ({}, {"sleep_mode": True}, "CPU worker has no sleep mode"),
    ({}, {"memory_fraction": 0.9}, "asks the colocated vLLM engine for 14.4 GiB of host memory, "
                                   "but 8.0 of 16.0 GiB are free: lower it to at most 0.50"),
    ({}, {"temperatures": {"train.temperature": 0.005}}, "train.temperature=0.005 is below 0.01"),
])
def test_what_the_engine_cannot_do_is_one_config_error_line(machine, change, overrides, words):
    machine.update(change)
    with pytest.raises(ConfigError) as error:
        check(**overrides)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_the_settings_refuse_the_colocated_backend_when_they_load(machine, project):
    machine["vllm"] = False
    with pytest.raises(ConfigError, match="needs vLLM installed"):
        load_settings(project, overrides=["generation.backend=vllm_colocate"])
    machine["vllm"] = True
    settings = load_settings(project, overrides=[
        "generation.backend=vllm_colocate", "generation.memory_fraction=0.25"]).settings
    assert settings.generation.backend == "vllm_colocate"
    assert load_settings(project).settings.generation.backend == "transformers"


def test_the_train_cli_exits_2_with_one_line_and_writes_nothing(machine, project,
                                                                  capsys):
    machine["vllm"] = False
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    assert main(["train", "--model", "nowhere", "--out", "models/crsp",
                 "--set", "generation.backend=vllm_colocate"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "generation.backend=vllm_colocate needs vLLM installed" in line
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == before

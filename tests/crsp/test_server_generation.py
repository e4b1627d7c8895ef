"""CRSP generation through a managed server with weight sync.

The trainer's server road is evolve's (``generation.*`` options, ``open_backend``): the server
serves a saved copy of the policy, and after ``sync`` it serves the new weights, so its greedy
outputs equal the in-process policy's before and after an update. The project's own server
(``engine=local``) is restarted on new weights; vLLM and SGLang take them in place, checked
here against a fake engine over real HTTP (``tests/inference/fake_engine.py``) that records the
calls and injects the failures after which the trainer must fall back to a restart.
"""

import json
import logging
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.config.errors import ConfigError
from crsp_ops.crsp.policy.generation import (
    ServerGeneration,
    policy_server_launch,
    write_weights,
)
from crsp_ops.errors import RunFailure
from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.server_manager import free_port
from crsp_ops.inference.transformers_backend import TransformersBackend
from tests.inference.fake_engine import SGLANG_NOT_FLUSHED, FakeEngine, recorded

FAKE_ENGINE = Path(__file__).resolve().parents[1] / "inference" / "fake_engine.py"

PROMPTS = [[{"role": "user", "content": "Context:\nRevenue was $12.5 million.\n\nQuestion: "
                                        "What was revenue?"}],
           [{"role": "user", "content": "What is 3 + 4?"}]]
GREEDY = SamplingParams(max_new_tokens=12, temperature=0.0, top_p=1.0)


def greedy_ids(backend):
    return [c.token_ids for c in backend.generate(PROMPTS, GREEDY)]


@pytest.mark.server
def test_server_generation_serves_the_policy_and_follows_its_updates(
        tiny_model_dir, small_settings, tmp_path):
    port = free_port()
    settings = small_settings("generation.backend=openai_server", "generation.engine=local",
                              f"generation.base_url=http://127.0.0.1:{port}/v1")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True)
    local = TransformersBackend(model, tokenizer, device="cpu", logprob_semantics="processed")
    served = ServerGeneration(model, tokenizer, weights_root=tmp_path / "served",
                              generation=settings.generation, rank=0, reload_interval=2, step=0)
    try:
        assert served.base_url == f"http://127.0.0.1:{port}/v1"
        before = greedy_ids(served.backend)
        assert before == greedy_ids(local)
        with torch.no_grad():  # an "update" that certainly changes greedy choices
            model.lm_head.weight.add_(torch.randn_like(model.lm_head.weight) * 2.0)
        after_local = greedy_ids(local)
        assert after_local != before
        assert served.sync(1, model) is False  # not a reload step: still the old weights
        assert greedy_ids(served.backend) == before
        assert served.sync(2, model) is True
        assert served.policy_step == 2
        assert greedy_ids(served.backend) == after_local
        assert sorted(p.name for p in (tmp_path / "served").iterdir()) == ["current",
                                                                          "step-000002"]
        assert served.stats["restarts"] == 1 and served.stats["in_place_updates"] == 0
    finally:
        served.close()


def test_policy_server_launch_defaults_to_the_local_server_and_names_the_model(small_settings):
    settings = small_settings("generation.backend=openai_server", "generation.engine=local",
                              "generation.base_url=http://127.0.0.1:8123/v1")
    argv, _ = policy_server_launch(settings.generation, model_dir="/w/step-000001",
                                   base_url="http://127.0.0.1:8124/v1",
                                   server_args=("--logprobs-mode", "processed_logprobs"))
    assert argv[1:3] == ("-m", "crsp_ops.inference.local_server")
    assert argv[argv.index("--port") + 1] == "8124"
    assert argv[argv.index("--model") + 1] == "/w/step-000001"
    assert argv[-4:] == ("--logprobs-mode", "processed_logprobs", "--served-model-name",
                         "crsp-policy")
    vllm = small_settings("generation.server_command=vllm serve {model_dir} --port {port}",
                          "generation.vllm_runner=v2")
    argv, env = policy_server_launch(vllm.generation, model_dir="/m", base_url="http://h:9/v1",
                                     server_args=())
    assert argv[:5] == ("vllm", "serve", "/m", "--port", "9")
    assert argv[-2:] == ("--served-model-name", "crsp-policy")
    assert env["VLLM_USE_V2_MODEL_RUNNER"] == "1"
    assert env["VLLM_SERVER_DEV_MODE"] == "1"  # its in-place weight-update routes


# ---- in-place updates against the fake engine --------------------------------------------


class Saved:
    """A stand-in for a model or tokenizer: ``save_pretrained`` writes one marker file."""

    def __init__(self, name):
        self.name = name

    def save_pretrained(self, directory):
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / f"{self.name}.txt").write_text(self.name)


def fake_policy(small_settings, tmp_path, engine, faults=None, **extra):
    calls = tmp_path / "calls.jsonl"
    command = f"{sys.executable} {FAKE_ENGINE} --port {{port}} --model {{model_dir}} --calls {calls}"
    if faults is not None:
        (tmp_path / "faults.json").write_text(json.dumps(faults))
        command += f" --faults {tmp_path / 'faults.json'}"
    settings = small_settings("generation.backend=openai_server", f"generation.engine={engine}",
                              f"generation.base_url=http://127.0.0.1:{free_port()}/v1",
                              f"generation.server_command={command}",
                              "generation.startup_timeout_s=30", "generation.request_timeout_s=2")
    policy = ServerGeneration(Saved("model"), Saved("tokenizer"),
                              weights_root=tmp_path / "served", generation=settings.generation,
                              rank=0, reload_interval=1, step=0, **extra)
    return policy, calls


def starts(calls):
    return [call for call in recorded(calls) if call[0] == "START"]


@pytest.mark.server
def test_vllm_policy_follows_each_step_in_place_without_a_restart(small_settings, tmp_path):
    policy, calls = fake_policy(small_settings, tmp_path, "vllm")
    try:
        pid = policy.manager.pid
        assert policy.sync(1, Saved("model")) and policy.sync(2, Saved("model"))
        assert policy.manager.pid == pid and len(starts(calls)) == 1
        paths = [path for method, path, _ in recorded(calls) if method == "POST"]
        sequence = ["/pause?mode=wait", "/collective_rpc", "/reset_prefix_cache", "/resume"]
        assert paths == sequence * 2
        loaded = [body["kwargs"]["weights_path"] for _, path, body in recorded(calls)
                  if path == "/collective_rpc"]
        assert loaded == [str((tmp_path / "served" / f"step-{s:06d}").resolve()) for s in (1, 2)]
        assert (tmp_path / "served" / "step-000002" / "model.txt").is_file()
        assert not (tmp_path / "served" / "step-000001").exists()  # only the latest is kept
        assert (tmp_path / "served" / "current").resolve().name == "step-000002"
        assert f"--model {tmp_path / 'served' / 'current'} " in starts(calls)[0][1]
        assert policy.stats["in_place_updates"] == 2 and policy.stats["restarts"] == 0
        assert policy.policy_step == 2
    finally:
        policy.close()


@pytest.mark.server
@pytest.mark.parametrize("faults", [{"/pause": {"status": 404}},
                                    {"/collective_rpc": {"status": 400}},
                                    {"/collective_rpc": {"sleep": 4}}],
                         ids=["dev-mode-off-404", "reload-400", "reload-timeout"])
def test_a_failed_vllm_update_falls_back_to_a_restart_and_says_why(small_settings, tmp_path,
                                                                    faults, caplog):
    policy, calls = fake_policy(small_settings, tmp_path, "vllm", faults)
    try:
        pid = policy.manager.pid
        with caplog.at_level(logging.WARNING, logger="crsp_ops.crsp.policy.generation"):
            assert policy.sync(1, Saved("model")) is True
        assert policy.manager.pid != pid and len(starts(calls)) == 2
        assert policy.stats["fallbacks"] == 1 and policy.stats["restarts"] == 1
        assert policy.policy_step == 1
        assert any("restarting the server instead" in r.message for r in caplog.records)
        assert (tmp_path / "served" / "current").resolve().name == "step-000001"
        if "/pause" not in faults:  # paused first: resumed before the restart
            assert "/resume" in [path for _, path, _ in recorded(calls)]
    finally:
        policy.close()


@pytest.mark.server
def test_sglang_cache_not_flushed_counts_as_an_in_place_update(small_settings, tmp_path):
    faults = {"/update_weights_from_disk": {"body": {"success": False,
                                                     "message": SGLANG_NOT_FLUSHED}}}
    policy, calls = fake_policy(small_settings, tmp_path, "sglang", faults)
    try:
        assert policy.sync(1, Saved("model")) is True
        assert [p for m, p, _ in recorded(calls) if m == "POST"] == [
            "/update_weights_from_disk", "/flush_cache"]
        assert policy.stats["in_place_updates"] == 1 and len(starts(calls)) == 1
    finally:
        policy.close()


@pytest.mark.server
def test_in_place_off_restarts_every_reload(small_settings, tmp_path):
    policy, calls = fake_policy(small_settings, tmp_path, "vllm", in_place=False)
    try:
        assert policy.sync(1, Saved("model")) is True
        assert len(starts(calls)) == 2
        assert [p for m, p, _ in recorded(calls) if m == "POST"] == []
    finally:
        policy.close()


def test_a_policy_server_command_loading_the_steering_processor_is_refused(small_settings):
    steered = small_settings("generation.server_command=vllm serve {model_dir} --port {port} "
                             "--logits-processors {vllm_processor}")
    with pytest.raises(ConfigError, match="does not steer"):
        policy_server_launch(steered.generation, model_dir="/m", base_url="http://h:9/v1",
                             server_args=())


def test_vllm_without_a_command_or_a_server_says_what_to_set(small_settings, tmp_path):
    settings = small_settings("generation.backend=openai_server", "generation.engine=vllm",
                              f"generation.base_url=http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(ConfigError, match="set generation.server_command") as error:
        ServerGeneration(Saved("model"), Saved("tokenizer"), weights_root=tmp_path,
                         generation=settings.generation, rank=0, reload_interval=1, step=0)
    assert "\n" not in str(error.value) and "engine=local" in str(error.value)


@pytest.mark.server
def test_a_running_vllm_server_gets_the_policy_in_place_and_is_never_restarted(
        small_settings, tmp_path):
    with FakeEngine({}) as engine:
        settings = small_settings("generation.backend=openai_server", "generation.engine=vllm",
                                  f"generation.base_url={engine.url}/v1")
        policy = ServerGeneration(Saved("model"), Saved("tokenizer"), weights_root=tmp_path,
                                  generation=settings.generation, rank=0, reload_interval=1,
                                  step=0)
        assert [p for m, p, _ in engine.calls if m == "POST"][:2] == ["/pause?mode=wait",
                                                                      "/collective_rpc"]
        engine.faults["/pause"] = {"status": 404}
        with pytest.raises(RunFailure, match="not ours to restart"):
            policy.sync(1, Saved("model"))
        policy.close()


def test_weights_are_written_under_a_temporary_name_then_renamed(tmp_path):
    class Failing(Saved):
        def save_pretrained(self, directory):
            super().save_pretrained(directory)
            raise OSError("disk full")

    with pytest.raises(OSError):
        write_weights(Failing("model"), Saved("tokenizer"), tmp_path, 3)
    assert not (tmp_path / "step-000003").exists()  # never offered half-written
    final = write_weights(Saved("model"), Saved("tokenizer"), tmp_path, 3)
    assert sorted(p.name for p in final.iterdir()) == ["model.txt", "tokenizer.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["step-000003"]

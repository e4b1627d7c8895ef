"""CRSP generation through a managed server (the project's own, on CPU) with weight sync.

The trainer's server road is evolve's (``generation.*`` options, ``open_backend``): the server
serves a saved copy of the policy, and after ``sync`` it serves the new weights, so its greedy
outputs equal the in-process policy's before and after an update.
"""

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.crsp.generation import ServerGeneration, policy_server_launch
from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.server_manager import free_port
from crsp_ops.inference.transformers_backend import TransformersBackend

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
    settings = small_settings("generation.backend=openai_server",
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
        assert [p.name for p in (tmp_path / "served").iterdir()] == ["step-000002"]
    finally:
        served.close()


def test_policy_server_launch_defaults_to_the_local_server_and_names_the_model(small_settings):
    settings = small_settings("generation.backend=openai_server",
                              "generation.base_url=http://127.0.0.1:8123/v1")
    argv, _ = policy_server_launch(settings.generation, model_dir="/w/step-000001",
                                   base_url="http://127.0.0.1:8124/v1",
                                   server_args=("--logprobs-mode", "processed_logprobs"))
    assert argv[1:3] == ("-m", "crsp_ops.inference.local_server")
    assert argv[argv.index("--port") + 1] == "8124"
    assert argv[argv.index("--model") + 1] == "/w/step-000001"
    assert argv[-4:] == ("--logprobs-mode", "processed_logprobs", "--served-model-name",
                         "crsp-policy")
    vllm = small_settings("generation.server_command=vllm serve {model_dir} --port {port} "
                          "--logits-processors {vllm_processor}", "generation.vllm_runner=v2")
    argv, env = policy_server_launch(vllm.generation, model_dir="/m", base_url="http://h:9/v1",
                                     server_args=())
    assert argv[:5] == ("vllm", "serve", "/m", "--port", "9")
    assert argv[-2:] == ("--served-model-name", "crsp-policy")
    assert "ClusterBiasVLLMV2Processor" in argv[6]
    assert env["VLLM_USE_V2_MODEL_RUNNER"] == "1"

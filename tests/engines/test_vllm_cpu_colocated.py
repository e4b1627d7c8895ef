"""vLLM inside the trainer's process on this CPU (``make test-vllm-cpu``): weights in memory.

The trainer with ``generation.backend=vllm_colocate`` on the tiny model (``tiny_model_dir``):
the engine starts on the config and tokenizer alone (no weight file is written) and is handed
the weights in memory at start and after each of two training steps. After every hand-over
its greedy output for a prompt equals ``transformers``' greedy output with the trainer's
weights, and after the steps (the weights moved: a length reward gives every group a
signal, and AdamW's first steps move every weight by about the learning rate) it differs from
step 0's. The update logs the importance-sampling correction of the engine's samples. The
same engine steers through the one bias core: uniform deltas leave greedy output unchanged,
an EOS delta shortens it.

Skipped without vLLM's CPU build, a hard failure when ``make test-vllm-cpu`` says it must be
there.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import numpy as np
import pytest

from tests.engines.engine_testkit import require_vllm_cpu

require_vllm_cpu()

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from crsp_ops.config import load_settings  # noqa: E402
from crsp_ops.crsp.policy.accelerator import make_accelerator  # noqa: E402
from crsp_ops.crsp.policy.generation import ColocatedGeneration  # noqa: E402
from crsp_ops.crsp.trainer.build import build_trainer  # noqa: E402
from crsp_ops.crsp.user_task import load_dataset_tasks  # noqa: E402
from crsp_ops.inference.completions import SamplingParams  # noqa: E402
from crsp_ops.inference.transformers_backend import TransformersBackend  # noqa: E402
from crsp_ops.paths import copy_config_tree, project_root  # noqa: E402

pytestmark = pytest.mark.engines

REWARD = "def longer(completions, **kwargs):\n    return [float(len(c)) for c in completions]\n"
GREEDY = SamplingParams(max_new_tokens=24, temperature=0.0, top_p=1.0, seed=0)
REPORT: dict = {}


def hf_greedy(model, tokenizer, prompt) -> list[tuple[int, ...]]:
    """``transformers``' greedy ids for ``prompt`` with a copy of ``model``'s weights."""
    backend = TransformersBackend(copy.deepcopy(model), tokenizer, device="cpu")
    return [c.token_ids for c in backend.generate(prompt, GREEDY)]


@pytest.fixture(scope="module")
def trainer(tiny_model_dir, tiny_prompt_template, tmp_path_factory):
    """A two-step colocated run on a 4-row dataset with a length reward (not yet stepped)."""
    root = tmp_path_factory.mktemp("colocated")
    copy_config_tree(project_root(), root)
    rows = [{"prompt": tiny_prompt_template.format(evidence=f"Revenue was {n} million.",
                                                    question="What was the revenue?")}
            for n in (12, 30, 45, 77)]
    (root / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (root / "reward.py").write_text(REWARD)
    settings = load_settings(root, [
        "generation.backend=vllm_colocate", "generation.memory_fraction=0.05",
        "train.dataset=rows.jsonl", "train.rewards=reward.py:longer", "train.steps=2",
        "train.tasks_per_type=2", "train.solver_samples=2", "train.max_new_tokens_solve=16",
        "train.learning_rate=0.02", "train.temperature=1.0", "tracking.enabled=n",
        "train.checkpoint_interval=100"]).settings
    tasks = load_dataset_tasks(settings.train, root, settings.crsp.seed)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    started = time.perf_counter()
    trainer = build_trainer(settings, model, tokenizer, out_dir=root / "out", tasks=tasks.train,
                            rewards=tasks.rewards, accelerator=make_accelerator("no", "cpu"))
    REPORT["build_with_engine_s"] = round(time.perf_counter() - started, 1)
    yield trainer, tokenizer, [[{"role": "user", "content": rows[0]["prompt"]}]]
    trainer.close()
    print("\ncolocated vLLM report:", json.dumps(REPORT))


def test_two_steps_hand_the_weights_over_in_memory(trainer):
    trainer, tokenizer, prompt = trainer
    generation = trainer.generation
    assert isinstance(generation, ColocatedGeneration)
    engine_dir = trainer.out_dir / "colocated"
    assert (engine_dir / "config.json").is_file()
    assert not list(engine_dir.glob("*.safetensors")) and not list(engine_dir.glob("*.bin"))
    REPORT["engine_start_s"] = round(generation.stats["engine_start_s"], 1)

    step0 = [c.token_ids for c in generation.backend.generate(prompt, GREEDY)]
    assert step0 == hf_greedy(trainer.unwrapped_model, tokenizer, prompt)
    initial = {n: p.detach().clone() for n, p in trainer.unwrapped_model.named_parameters()}
    outputs = []
    for step in (1, 2):
        metrics, _ = trainer.train_step()
        trainer.step += 1
        assert generation.policy_step == step
        assert generation.stats["in_memory_updates"] == step + 1  # start + each step
        assert metrics["update_skipped"] == 0.0
        # the engine sampled, so the update weighted its loss by π_old / μ and said so
        assert 0 < metrics["is_ratio_mean"] <= 3.0
        assert 0 <= metrics["is_capped_fraction"] <= 1
        REPORT[f"step{step}"] = {key: float(f"{metrics[key]:.4g}") for key in (
            "is_ratio_mean", "is_capped_fraction", "sampling_logp_diff_mean",
            "generation/update_s", "perf/generation_s", "perf/update_s")}
        ours = [c.token_ids for c in generation.backend.generate(prompt, GREEDY)]
        assert ours == hf_greedy(trainer.unwrapped_model, tokenizer, prompt)
        outputs.append(ours)
    moved = [n for n, p in trainer.unwrapped_model.named_parameters()
             if not torch.equal(initial[n], p.detach())]
    assert moved  # the weights moved ...
    assert outputs[-1] != step0  # ... and the engine follows them
    REPORT["greedy_step0_vs_step2"] = [list(step0[0]), list(outputs[-1][0])]


def test_the_engine_steers_through_the_one_bias_core(tiny_model_dir, trainer, tmp_path):
    from crsp_ops.inference.vllm_colocated import ColocatedVLLMBackend
    from crsp_ops.steering.token_rules import eos_token_ids

    _, tokenizer, prompt = trainer
    table = 1 + np.arange(len(tokenizer)) % 3  # cluster 0: EOS/EOT only
    generation_eos = AutoModelForCausalLM.from_pretrained(tiny_model_dir).generation_config
    table[sorted(eos_token_ids(tokenizer, generation_eos.eos_token_id))] = 0
    np.save(tmp_path / "token_clusters.npy", table.astype(np.int64))
    (tmp_path / "clusters_meta.json").write_text(json.dumps({"n_clusters": 4}))
    backend = ColocatedVLLMBackend(Path(tiny_model_dir), tokenizer, memory_fraction=0.15,
                                   dtype="float32", clusters_dir=tmp_path)
    try:
        plain = backend.generate(prompt * 2, GREEDY)
        uniform = backend.generate(prompt * 2, GREEDY, deltas=[2.5] * 4)
        eos_up = backend.generate(prompt * 2, GREEDY, deltas=[8.0, 0.0, 0.0, 0.0])
    finally:
        backend.close()
    assert [c.token_ids for c in uniform] == [c.token_ids for c in plain]
    assert all(len(e.token_ids) < len(p.token_ids) for e, p in zip(eos_up, plain, strict=True))
    REPORT["steered_lengths_plain_vs_eos+8"] = [len(plain[0].token_ids),
                                                len(eos_up[0].token_ids)]

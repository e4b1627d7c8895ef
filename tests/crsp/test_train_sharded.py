"""`crsp-ops train` sharded with FSDP2 over 2 CPU processes (gloo), checkpointed and resumed.

Selected both ways a user would: an accelerate config with ``distributed_type: FSDP`` (which
accelerate 1.15 itself ignores on CPU, docs/scaling.md) and ``train.sharding=fsdp2`` under
``--multi_gpu``. Read back: each rank held about half the parameters, the ranks' generation
replicas (gathered after every update) agree exactly, the checkpoint holds the full weights
and a by-name optimizer state, a sharded resume continues from it, and with LoRA the adapter
and the merged final model are what a replicated run would save.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import torch
from mlflow.tracking import MlflowClient
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from crsp_ops.cli.main import main
from crsp_ops.config import sync_params
from crsp_ops.crsp.trainer.checkpoint import load_trainer_state
from crsp_ops.paths import copy_config_tree
from tests.team.team_testkit import free_port

REPO = Path(__file__).resolve().parents[2]
FAST = ["train.solver_samples=2", "train.tasks_per_type=2", "train.max_new_tokens_solve=6",
        "train.eval_split_size=2", "tracking.flush_seconds=0.0", "train.checkpoint_interval=1",
        "train.keep_checkpoints=5", "reward.alpha_schedule=constant",
        "train.learning_rate=1e-2"]
# a reward that differs between samples, so every step updates the weights
SPREAD_REWARD = """
def spread(prompts, completions, **kwargs):
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [float(len(t) % 5) for t in texts]
"""
FSDP_CONFIG = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_machines: 1
num_processes: 2
machine_rank: 0
main_process_port: {port}
mixed_precision: 'no'
use_cpu: false
fsdp_config:
  fsdp_version: 2
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_reshard_after_forward: true
"""
HOLDS = re.compile(r"rank (\d) holds (\d+) of (\d+) parameters")


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "proj"
    root.mkdir()
    copy_config_tree(REPO, root)
    sync_params(root)
    rows = [{"prompt": f"What is {a} + 1? Reply with the number.", "answer": str(a + 1)}
            for a in range(9)]
    (root / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (root / "rewards.py").write_text(SPREAD_REWARD)
    env = {**os.environ, "CRSP_OPS_ROOT": str(root), "OMP_NUM_THREADS": "1",
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "ACCELERATE_USE_FSDP"):
        env.pop(key, None)
    return root, env


def _train(launch: list[str], model: Path | None, steps: int, extra: list[str], env, log: Path):
    """One launch of ``crsp-ops train``; ``model=None`` resumes from the latest checkpoint."""
    args = ["--out", "models/crsp", "--set", f"train.steps={steps}",
            "--dataset", str(env["CRSP_OPS_ROOT"]) + "/data.jsonl",
            "--reward", str(env["CRSP_OPS_ROOT"]) + "/rewards.py:spread",
            *(["--model", str(model)] if model else ["--resume"])]
    for item in [*FAST, *extra]:
        args += ["--set", item]
    done = subprocess.run([sys.executable, "-m", "accelerate.commands.launch", *launch,
                           "-m", "crsp_ops.cli", "train", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    log.write_text(done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr[done.stderr.find("Traceback"):][:6000]
    return done.stdout + done.stderr


def _history(root: Path, key: str) -> dict[int, float]:
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("crsp-train").experiment_id],
                              order_by=["attributes.start_time ASC"])
    return {m.step: m.value for run in runs for m in client.get_metric_history(
        run.info.run_id, key)}


def test_an_fsdp_accelerate_config_shards_trains_checkpoints_and_resumes(tmp_path,
                                                                          tiny_model_dir):
    root, env = _project(tmp_path)
    config = tmp_path / "fsdp.yaml"
    config.write_text(FSDP_CONFIG.format(port=free_port()))
    launch = ["--config_file", str(config)]
    log = _train(launch, tiny_model_dir, 2, [], env, tmp_path / "first.log")
    holds = {int(r): (int(n), int(total)) for r, n, total in HOLDS.findall(log)}
    assert set(holds) == {0, 1}
    total = holds[0][1]
    assert sum(n for n, _ in holds.values()) == total  # the ranks' shards partition the model
    assert all(n < 0.6 * total for n, _ in holds.values())
    # the ranks' generation replicas, gathered after every update, are identical
    assert _history(root, "ddp/param_sum_spread") == {1: 0.0, 2: 0.0}

    checkpoint = root / "models/crsp/checkpoints/step-000002"
    state = load_trainer_state(checkpoint)
    saved = AutoModelForCausalLM.from_pretrained(checkpoint)
    final = AutoModelForCausalLM.from_pretrained(root / "models/crsp")
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    for name, tensor in final.state_dict().items():  # the checkpoint is the final model
        torch.testing.assert_close(saved.state_dict()[name], tensor)
    changed = [n for n, t in final.state_dict().items()
               if not torch.equal(t, base.state_dict()[n])]
    assert len(changed) > len(final.state_dict()) // 2
    assert state["optimizer_format"] == "fqn-full"  # by parameter name, full tensors
    assert len(state["optimizer"]["state"]) == len(list(base.parameters()))

    config.write_text(FSDP_CONFIG.format(port=free_port()))
    log = _train(launch, None, 3, [], env, tmp_path / "resume.log")
    assert "resumed from" in log and "at step 2" in log
    assert 3 in _history(root, "ddp/param_sum_spread")


def test_lora_with_a_reference_kl_shards_under_train_sharding(tmp_path, tiny_model_dir):
    root, env = _project(tmp_path)
    launch = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no",
              "--main_process_port", str(free_port())]
    _train(launch, tiny_model_dir, 2,
           ["train.sharding=fsdp2", "train.lora_rank=4", "train.lora_alpha=8",
            "train.ref_kl_coef=0.1", "train.gradient_checkpointing=y"],
           env, tmp_path / "lora.log")
    assert _history(root, "ddp/param_sum_spread") == {1: 0.0, 2: 0.0}
    assert _history(root, "ref_kl")  # the reference forward ran (lockstep with idle passes)
    checkpoint = root / "models/crsp/checkpoints/step-000002"
    adapter = load_file(checkpoint / "adapter/adapter_model.safetensors")
    ups = [tensor for name, tensor in adapter.items() if "lora_B" in name]
    assert ups and any(tensor.abs().sum() > 0 for tensor in ups)  # B moved off zero
    merged = AutoModelForCausalLM.from_pretrained(root / "models/crsp")
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    changed = [n for n, t in merged.state_dict().items()
               if not torch.equal(t, base.state_dict()[n])]
    assert changed and all("proj" in name for name in changed)  # only the adapted layers
    # the merged final model is peft's own merge of the saved adapter into the base
    peft_merged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(
        tiny_model_dir), checkpoint / "adapter").merge_and_unload()
    for name, tensor in merged.state_dict().items():
        torch.testing.assert_close(peft_merged.state_dict()[name], tensor)


def test_sharding_in_one_process_is_refused_in_one_line(tmp_path, tiny_model_dir, capsys,
                                                         monkeypatch):
    root, env = _project(tmp_path)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    args = ["train", "--model", str(tiny_model_dir), "--out", "models/crsp",
            "--dataset", str(root / "data.jsonl"), "--reward", f"{root}/rewards.py:spread",
            "--set", "train.sharding=fsdp2", "--set", "tracking.enabled=n"]
    assert main(args) == 2
    errors = [line for line in capsys.readouterr().err.splitlines()
              if line.startswith("crsp-ops ")]
    assert len(errors) == 1 and "train.sharding=fsdp2 needs a distributed launch" in errors[0]

"""``model.dtype``: the loaded weights' dtype per setting, LoRA's bf16 base under an fp32 adapter,
full fine-tuning's fp32 master weights, a dtype the device cannot train in (one line, exit 2, no
run), and bf16-base LoRA training on CPU (tiny model)."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.cli.main import main
from crsp_ops.cli.stage_io import run_record_path
from crsp_ops.config.errors import ConfigError
from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.policy.peft_setup import prepare_policy
from crsp_ops.crsp.policy.precision import training_precision, weights_dtype
from crsp_ops.crsp.trainer.build import build_trainer
from crsp_ops.models.loading import load_causal_lm
from tests.crsp.conftest import ScriptedGeneration

LORA = ("train.lora_rank=4", "train.lora_alpha=8", "train.learning_rate=1e-2")


@pytest.mark.parametrize(("dtype", "lora", "loaded", "mixed"), [
    ("auto", True, "float32", "no"),  # the checkpoint's own dtype (fp32 here): as before
    ("auto", False, "float32", "no"),
    ("fp32", True, "float32", "no"),
    ("bf16", True, "bfloat16", "bf16"),  # LoRA: the frozen base in bf16
    ("bf16", False, "float32", "bf16"),  # full FT: fp32 master weights, bf16 autocast
])
def test_the_loaded_weights_follow_model_dtype(tiny_model_dir, dtype, lora, loaded, mixed):
    precision = training_precision(dtype, "cpu", lora=lora)
    model, _ = load_causal_lm(tiny_model_dir, dtype=precision.load_dtype)
    assert weights_dtype(model) == loaded
    assert precision.mixed_precision == mixed
    assert precision.tags(model) == {"model.weights_dtype": loaded,
                                     "model.mixed_precision": mixed}


def test_auto_keeps_a_half_precision_checkpoint_as_it_is(tiny_model_dir, tmp_path):
    AutoModelForCausalLM.from_pretrained(tiny_model_dir).to(torch.float16).save_pretrained(
        tmp_path)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(tmp_path)
    assert weights_dtype(load_causal_lm(tmp_path)[0]) == "float16"
    assert weights_dtype(load_causal_lm(tmp_path, dtype=torch.float32)[0]) == "float32"


def test_lora_freezes_a_bf16_base_and_trains_an_fp32_adapter(tiny_model_dir, small_settings):
    settings = small_settings(*LORA, "model.dtype=bf16")
    precision = training_precision(settings.model.dtype, "cpu", lora=True)
    model, _ = load_causal_lm(tiny_model_dir, dtype=precision.load_dtype)
    policy = prepare_policy(model, settings.train)
    trainable = {n: p.dtype for n, p in policy.named_parameters() if p.requires_grad}
    frozen = {p.dtype for p in policy.parameters() if not p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)
    assert set(trainable.values()) == {torch.float32} and frozen == {torch.bfloat16}


def test_full_fine_tuning_under_bf16_trains_fp32_weights(tiny_model_dir, small_settings):
    settings = small_settings("model.dtype=bf16")
    precision = training_precision(settings.model.dtype, "cpu", lora=False,
                                   mixed_precision=settings.train.mixed_precision)
    model, _ = load_causal_lm(tiny_model_dir, dtype=precision.load_dtype)
    policy = prepare_policy(model, settings.train)
    assert {p.dtype for p in policy.parameters() if p.requires_grad} == {torch.float32}
    assert precision.mixed_precision == "bf16"  # computes in bf16 (accelerate's autocast)


def test_the_other_half_precision_in_train_mixed_precision_is_refused():
    with pytest.raises(ConfigError, match="model.dtype=bf16 computes in bf16 but "
                                          "train.mixed_precision=fp16"):
        training_precision("bf16", "cpu", mixed_precision="fp16")
    assert training_precision("fp32", "cpu", mixed_precision="bf16").mixed_precision == "bf16"


@pytest.mark.parametrize("stage", ["train", "seed"])
def test_fp16_on_a_cpu_stops_in_one_line_with_exit_2_and_no_run(scratch_project, tiny_model_dir,
                                                                  capsys, stage):
    from mlflow.tracking import MlflowClient

    assert main([stage, "--model", str(tiny_model_dir), "--out", "models/half",
                 "--set", "model.dtype=fp16", "--set", "model.device=cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"crsp-ops {stage}: configuration error: model.dtype=fp16 cannot "
                          "train on cpu"), err
    client = MlflowClient(tracking_uri=f"sqlite:///{scratch_project / 'mlflow.db'}")
    runs = [run for experiment in client.search_experiments()
            for run in client.search_runs([experiment.experiment_id])]
    assert runs == []  # stopped before a run was opened: none left RUNNING


def test_a_bf16_base_lora_step_on_cpu_changes_only_the_adapter(
        tiny_model_dir, small_settings, tmp_path, fresh_accelerator_state):
    settings = small_settings(*LORA, "model.dtype=bf16", "model.device=cpu")
    precision = training_precision(settings.model.dtype, settings.model.device, lora=True,
                                   mixed_precision=settings.train.mixed_precision)
    model, tokenizer = load_causal_lm(tiny_model_dir, dtype=precision.load_dtype)
    trainer = build_trainer(settings, model, tokenizer,
        out_dir=tmp_path, accelerator=make_accelerator(precision.mixed_precision, "cpu"),
        generation=ScriptedGeneration(model, tokenizer))
    policy = trainer.unwrapped_model
    before = {n: p.detach().clone() for n, p in policy.named_parameters()}
    trainer.train()
    assert torch.isfinite(torch.tensor(trainer.run.last_metrics["loss"]))
    changed = {n for n, p in policy.named_parameters() if not torch.equal(before[n], p.detach())}
    assert changed and all("lora_" in name for name in changed)
    assert any("lora_B" in name for name in changed)
    dtypes = {n: p.dtype for n, p in policy.named_parameters()}
    assert {d for n, d in dtypes.items() if "lora_" in n} == {torch.float32}
    assert {d for n, d in dtypes.items() if "lora_" not in n} == {torch.bfloat16}


def test_train_records_the_loaded_dtype_on_its_run(scratch_project, tiny_model_dir,
                                                   fresh_accelerator_state):
    from mlflow.tracking import MlflowClient

    (scratch_project / "data.jsonl").write_text("".join(
        json.dumps({"prompt": f"What is {a} + 1?", "answer": str(a + 1)}) + "\n"
        for a in range(4)))
    (scratch_project / "rewards.py").write_text(
        "def digit(prompts, completions, **kwargs):\n"
        "    return [float(any(c.isdigit() for c in t)) for t in completions]\n")
    args = ["train", "--model", str(tiny_model_dir), "--out", "models/bf16",
            "--dataset", "data.jsonl", "--reward", "rewards.py:digit"]
    for item in (*LORA, "model.dtype=bf16", "model.device=cpu", "train.steps=1",
                 "train.solver_samples=2", "train.tasks_per_type=2",
                 "train.max_new_tokens_solve=4", "train.eval_split_size=0",
                 "tracking.flush_seconds=0.0"):
        args += ["--set", item]
    assert main(args) == 0
    out = scratch_project / "models" / "bf16"
    run_id = json.loads(run_record_path(out).read_text())["run_id"]
    run = MlflowClient(tracking_uri=f"sqlite:///{scratch_project / 'mlflow.db'}").get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["model.dtype"] == "bf16"
    assert run.data.tags["model.weights_dtype"] == "bfloat16"
    assert run.data.tags["model.mixed_precision"] == "bf16"

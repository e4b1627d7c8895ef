"""A TRL GRPO script switches by its import alone; every GRPOConfig field is mapped or refused.

The scripts are TRL's documented GRPO quick-start forms (a bare reward callable, a
``GRPOConfig``, a ``TrainerCallback``, ``peft_config=LoraConfig(...)``), run on the tiny model
with only ``from trl import GRPOTrainer`` changed to ``from crsp_ops import CRSPTrainer``.
"""

import dataclasses
import textwrap

import pytest
from trl import GRPOConfig

from crsp_ops.config import load_settings
from crsp_ops.config.trl_fields import MAPPED, TrlFieldError
from crsp_ops.crsp.api import _text
from crsp_ops.crsp.trainer.arguments import TRL_DEFAULTS, resolve_args
from tests.crsp.conftest import REPO

TRL_SCRIPT = '''
from trl import GRPOConfig, GRPOTrainer
from transformers import TrainerCallback
{peft_import}

def reward_len(completions, **kwargs):
    return [-abs(20 - len(completion[0]["content"])) / 20 for completion in completions]

class StepCounter(TrainerCallback):
    steps = []

    def on_step_end(self, args, state, control, **kwargs):
        StepCounter.steps.append(state.global_step)

dataset = [{{"prompt": [{{"role": "user", "content": f"Write {{n}} words."}}]}} for n in range(8)]
training_args = GRPOConfig(output_dir="GRPO", learning_rate=1e-5, num_generations=2,
                           max_completion_length=8, temperature=0.9, beta=0.0, loss_type="grpo",
                           per_device_train_batch_size=4, max_steps=2, logging_steps=1, seed=3,
                           bf16=False, report_to="none")
trainer = GRPOTrainer(model=MODEL, reward_funcs=reward_len, args=training_args,
                      train_dataset=dataset, eval_dataset=dataset[:2],
                      callbacks=[StepCounter()]{peft_argument})
output = trainer.train()
metrics = trainer.evaluate()
trainer.save_model("saved")
'''


def _switched(peft: bool) -> str:
    script = TRL_SCRIPT.format(
        peft_import="from peft import LoraConfig" if peft else "",
        peft_argument=", peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="
                      "['q_proj', 'v_proj'], task_type='CAUSAL_LM')" if peft else "")
    switched = script.replace("from trl import GRPOConfig, GRPOTrainer",
                              "from trl import GRPOConfig\nfrom crsp_ops import CRSPTrainer")
    return switched.replace("GRPOTrainer(", "CRSPTrainer(")


@pytest.mark.parametrize("peft", [False, True], ids=["plain", "peft"])
def test_trls_quick_start_runs_with_only_its_import_changed(scratch_project, tiny_model_dir,
                                                            peft):
    namespace = {"MODEL": str(tiny_model_dir)}
    exec(compile(textwrap.dedent(_switched(peft)), "grpo_quickstart.py", "exec"), namespace)
    output, trainer = namespace["output"], namespace["trainer"]
    assert type(output).__name__ == "TrainOutput" and output.global_step == 2
    assert namespace["StepCounter"].steps == [1, 2]
    steps = [row for row in trainer.state.log_history if "loss" in row]
    assert [row["step"] for row in steps] == [1, 2]
    assert all("rewards/reward_len/mean" in row and "learning_rate" in row for row in steps)
    assert "eval_reward" in namespace["metrics"]
    saved = {path.name for path in (scratch_project / "saved").iterdir()}
    assert ("adapter_config.json" in saved) == peft and ("config.json" in saved) != peft
    settings = trainer.settings.train
    assert (settings.tasks_per_type, settings.solver_samples, settings.learning_rate,
            settings.lr_schedule, settings.loss_aggregation, settings.lora_rank) == (
        2, 2, 1e-5, "linear", "sequence_mean", 4 if peft else 0)


def _resolved(config: GRPOConfig):
    partners = {"num_generations": 8, "max_steps": 24, "max_completion_length": 48}
    overrides = resolve_args(config, partners).overrides
    return load_settings(REPO, ["train.dataset=rows.jsonl",
                                *(f"{k}={_text(v)}" for k, v in overrides.items())]).settings


def test_every_mapped_field_resolves_as_trl_resolves_it():
    """Each mapped GRPOConfig field, at a value away from its default, lands in its key."""
    changed = {"learning_rate": 2e-5, "weight_decay": 0.1, "max_grad_norm": 0.5, "seed": 7,
               "num_generations": 4, "num_iterations": 2, "beta": 0.04,
               "scale_rewards": "batch", "mask_truncated_completions": True,
               "temperature": 0.6, "top_p": 0.9, "top_k": 20, "min_p": 0.05,
               "repetition_penalty": 1.1, "chat_template_kwargs": {"enable_thinking": False},
               "max_completion_length": 64, "gradient_checkpointing": False,
               "importance_sampling_level": "sequence", "top_entropy_quantile": 0.2,
               "vllm_gpu_memory_utilization": 0.5, "vllm_enable_sleep_mode": True,
               "vllm_importance_sampling_correction": False,
               "vllm_importance_sampling_mode": "token_truncate",
               "vllm_importance_sampling_clip_max": 2.0,
               "vllm_importance_sampling_clip_min": 0.5}
    aliases = {name for name, mapped in MAPPED.items() if mapped.alias_of}
    assert changed.keys() == MAPPED.keys() - aliases
    config = GRPOConfig(output_dir="o", bf16=False, **changed)
    settings = _resolved(config)
    for name, mapped in MAPPED.items():
        if mapped.alias_of:
            continue
        section, key = mapped.key.split(".")
        ours = getattr(getattr(settings, section), key)
        assert ours == mapped.convert(getattr(config, name)), name


def test_the_groups_read_batch_budget_loss_and_schedule_as_trl_does():
    config = GRPOConfig(output_dir="o", bf16=False, per_device_train_batch_size=4,
                        gradient_accumulation_steps=2, num_generations=4, max_steps=12,
                        loss_type="dapo", epsilon=0.2, epsilon_high=0.28,
                        lr_scheduler_type="cosine", warmup_steps=0.25, save_steps=3,
                        save_total_limit=2, eval_strategy="steps", eval_steps=4)
    train = _resolved(config).train
    # TRL: 4 completions a device x 2 accumulation = 8 a step = 2 prompts of 4 generations
    assert (train.tasks_per_type, train.micro_batch_size, train.steps) == (2, 4, 12)
    assert (train.loss_aggregation, train.ratio_clips) == ("token_mean", (0.2, 0.28))
    assert (train.lr_schedule, train.lr_warmup_steps) == ("cosine", 3)  # ceil(0.25 x 12)
    assert (train.checkpoint_interval, train.keep_checkpoints, train.eval_interval) == (3, 2, 4)


def test_an_unset_grpoconfig_means_trls_defaults():
    train = _resolved(GRPOConfig(output_dir="o", bf16=False)).train
    assert (train.learning_rate, train.temperature, train.max_new_tokens_solve,
            train.solver_samples, train.tasks_per_type, train.lr_schedule,
            train.flat_group_advantage, train.num_epochs) == (
        1e-6, 1.0, 512, 8, 1, "linear", "zero", 3)


def test_the_defaults_table_is_trls_own():
    """``TRL_DEFAULTS`` (what the run-time block compares with) equals trl.GRPOConfig's."""
    fields = {f.name: f for f in dataclasses.fields(GRPOConfig)}
    for name, value in TRL_DEFAULTS.items():
        default = fields[name].default
        if default is dataclasses.MISSING:
            default = fields[name].default_factory()
        if name == "report_to":
            default = default or "none"
        assert value == default or (name == "bf16" and default is None), name


@pytest.mark.parametrize("fields, message", [
    ({"delta": 2.0}, "delta=2.0 has no crsp_ops equivalent"),
    ({"loss_type": "bnpo"}, "loss_type='bnpo' has no crsp_ops equivalent"),
    ({"use_vllm": True, "vllm_mode": "server"}, "crsp_ops runs vLLM colocated"),
    ({"report_to": "wandb"}, "crsp_ops tracks runs in MLflow"),
])
def test_a_field_with_no_equivalent_stops_in_one_line(fields, message):
    with pytest.raises(TrlFieldError, match=message) as error:
        resolve_args(GRPOConfig(output_dir="o", bf16=False, **fields), {})
    assert "\n" not in str(error.value)


def test_a_dict_batch_that_splits_a_group_stops_in_one_line():
    with pytest.raises(TrlFieldError, match="is not a multiple of num_generations=8"):
        resolve_args({"per_device_train_batch_size": 3, "num_generations": 8}, {})


def test_the_docs_table_is_the_mapping():
    from crsp_ops.crsp.trainer.arguments import docs_table

    text = (REPO / "docs" / "training.md").read_text()
    table = text.split("<!-- trl-table -->\n", 1)[1].split("<!-- /trl-table -->", 1)[0]
    assert table == docs_table(REPO), "regenerate it: see arguments.docs_table"

"""``CRSPTrainer``'s ``args``: a ``CRSPConfig``, TRL's ``GRPOConfig`` or a dict, read one way.

``CRSPConfig`` is transformers' ``TrainingArguments`` with GRPO's field names and a ``settings``
dict of crsp_ops keys; a field left unset keeps crsp_ops' default. A ``GRPOConfig`` is read
field by field as TRL means it: every field, set or not (``trl_fields.translate``), plus what
TRL does without a field for it (``TRL_BEHAVIOUR``). A dict holds crsp_ops keys (with a dot)
and TRL names, and becomes a ``CRSPConfig``. ``trl_differences`` lists the crsp_ops defaults a
run keeps that TRL would not have.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainingArguments

from crsp_ops.config import load_settings
from crsp_ops.config.trl_fields import TrlFieldError, mapping_table, translate, trl_name_hint

# TRL 1.16's defaults of the fields crsp_ops maps (tests compare them with trl.GRPOConfig)
TRL_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-6, "weight_decay": 0.0, "max_grad_norm": 1.0, "seed": 42,
    "num_generations": 8, "num_iterations": 1, "beta": 0.0, "scale_rewards": "group",
    "mask_truncated_completions": False, "temperature": 1.0, "top_p": 1.0, "top_k": 0,
    "min_p": None, "repetition_penalty": 1.0, "chat_template_kwargs": None,
    "max_completion_length": 512, "gradient_checkpointing": True,
    "importance_sampling_level": "token", "top_entropy_quantile": 1.0,
    "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1,
    "generation_batch_size": None, "steps_per_generation": None, "max_steps": -1,
    "num_train_epochs": 3.0, "loss_type": "dapo", "epsilon": 0.2, "epsilon_high": None,
    "bf16": False, "fp16": False, "use_cpu": False, "lr_scheduler_type": "linear",
    "warmup_steps": 0, "save_strategy": "steps", "save_steps": 500, "save_total_limit": None,
    "eval_strategy": "no", "eval_steps": None, "report_to": "none", "model_init_kwargs": None,
    "optim": "adamw_torch_fused", "logging_steps": 10, "reward_weights": None,
    "use_vllm": False, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
    "vllm_enable_sleep_mode": False, "vllm_importance_sampling_correction": True,
    "vllm_importance_sampling_mode": "sequence_mask", "vllm_importance_sampling_clip_max": 3.0,
    "vllm_importance_sampling_clip_min": None,
}
# What TRL's GRPOTrainer does with no field to say so: one baseline per prompt, a flat group's
# advantage 0, an optimizer step on every batch, no per-role KL.
TRL_BEHAVIOUR: dict[str, Any] = {
    "train.advantage_baseline": "task", "train.flat_group_advantage": "zero",
    "train.step_when_flat": True, "train.algorithm": "trrpg", "train.beta_propose": 0.0,
    "train.beta_solve": 0.0, "train.beta_critique": 0.0, "train.preset": "none",
}


@dataclass
class CRSPConfig(TrainingArguments):
    """``TrainingArguments`` with GRPO's names; unset (``None``) fields keep crsp_ops' defaults.

    ``settings``: any crsp_ops key (``crsp-ops config show`` lists them), e.g.
    ``{"train.flat_group_advantage": "zero"}``.
    """

    settings: dict[str, Any] = field(default_factory=dict)
    num_generations: int | None = None
    max_completion_length: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    beta: float | None = None
    loss_type: str | None = None
    epsilon: float | None = None
    epsilon_high: float | None = None
    scale_rewards: str | None = None
    mask_truncated_completions: bool | None = None
    num_iterations: int | None = None
    importance_sampling_level: str | None = None
    top_entropy_quantile: float | None = None
    reward_weights: list[float] | None = None
    model_init_kwargs: dict[str, Any] | None = None
    use_vllm: bool | None = None
    vllm_mode: str | None = None
    vllm_gpu_memory_utilization: float | None = None
    vllm_enable_sleep_mode: bool | None = None
    vllm_importance_sampling_correction: bool | None = None
    vllm_importance_sampling_mode: str | None = None
    vllm_importance_sampling_clip_max: float | None = None
    vllm_importance_sampling_clip_min: float | None = None


@dataclass(frozen=True)
class ResolvedArgs:
    """``args`` read: what callbacks see, the crsp_ops keys it sets and how it was given."""

    hf: TrainingArguments
    overrides: dict[str, Any]
    set_fields: dict[str, Any]  # the TRL fields honoured (a GRPOConfig: all of them)
    kind: str  # "GRPOConfig" | "CRSPConfig" | "dict"


def _values(args: Any) -> dict[str, Any]:
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(args) if f.init}


def _default_like(args: TrainingArguments) -> dict[str, Any]:
    """A default instance of ``args``' class, built with its output and device choices."""
    return _values(type(args)(output_dir=args.output_dir, bf16=args.bf16, fp16=args.fp16,
                              use_cpu=args.use_cpu))


def config_from_dict(values: Mapping[str, Any], output_dir: str) -> CRSPConfig:
    """A ``CRSPConfig`` from crsp_ops keys (with a dot) and TRL / ``TrainingArguments`` names.

    Raises:
        TrlFieldError: a name that is neither (one line, with the option to use if known).
    """
    names = {f.name for f in dataclasses.fields(CRSPConfig) if f.init}
    settings = {key: value for key, value in values.items() if "." in key}
    fields = {key: value for key, value in values.items() if "." not in key}
    unknown = sorted(set(fields) - names)
    if unknown:
        hint = trl_name_hint(unknown[0])
        raise TrlFieldError(f"args: unknown option {unknown[0]!r}"
                            + (f" ({hint})" if hint else " (no crsp_ops equivalent)"))
    fields.setdefault("output_dir", output_dir)
    return CRSPConfig(**fields, settings={**settings, **fields.pop("settings", {})})


def resolve_args(args: Any, partners: Mapping[str, Any], output_dir: str = "trainer_output"
                 ) -> ResolvedArgs:
    """Read ``args`` (see the module docstring).

    Args:
        args: ``None``, a dict, a ``CRSPConfig`` or a ``GRPOConfig``.
        partners: crsp_ops' values of the TRL fields a group reads when the config leaves them
            unset (``num_generations``, ``max_completion_length``, ``max_steps``).
        output_dir: the output directory when ``args`` names none.

    Raises:
        TrlFieldError: a field with no equivalent set, or a value crsp_ops cannot honour.
        TypeError: ``args`` of another type.
    """
    explicit: set[str] = set()
    if args is None or isinstance(args, Mapping):
        config, kind = config_from_dict(args or {}, output_dir), "dict"
        explicit = {key for key in (args or {}) if "." not in key and key != "settings"}
    elif isinstance(args, CRSPConfig):
        config, kind = args, "CRSPConfig"
    elif isinstance(args, TrainingArguments):
        values = _values(args)
        overrides = {**TRL_BEHAVIOUR, **translate(values, values, _default_like(args))}
        return ResolvedArgs(args, overrides, values, type(args).__name__)
    else:
        raise TypeError(f"args must be a CRSPConfig, a trl.GRPOConfig or a dict, not "
                        f"{type(args).__name__}")
    values, defaults = _values(config), _default_like(config)
    chosen = {name: value for name, value in values.items()
              if name != "settings" and value is not None
              and (value != defaults[name] or name in explicit)}
    known = {**TRL_DEFAULTS, **{k: v for k, v in partners.items() if k not in chosen},
             **{k: v for k, v in values.items() if v is not None and k not in partners},
             **chosen}
    overrides = {**translate(chosen, known, defaults), **config.settings}
    return ResolvedArgs(config, overrides, chosen, kind)


def trl_differences(settings_values: Mapping[str, Any], set_keys: set[str]
                    ) -> dict[str, tuple[Any, Any]]:
    """``{key: (crsp_ops value, TRL's)}`` where a run keeps a crsp_ops default TRL's differs from.

    Keys the user set (``set_keys``) never count: those are the user's choice.

    >>> trl_differences({"train.learning_rate": 3e-5, "crsp.seed": 42}, set())
    {'train.learning_rate': (3e-05, 1e-06)}
    """
    trl = {**TRL_BEHAVIOUR, **translate(TRL_DEFAULTS, TRL_DEFAULTS, TRL_DEFAULTS)}
    trl.pop("train.preset")
    return {key: (settings_values[key], value) for key, value in trl.items()
            if key in settings_values and key not in set_keys
            and settings_values[key] != value}


def docs_table(root: Any) -> str:
    """The TRL-field table of docs/training.md, with the crsp_ops defaults of a dataset run.

    Regenerate: ``python -c "from crsp_ops.crsp.trainer.arguments import docs_table;
    print(docs_table('.'), end='')"`` between its ``trl-table`` markers.
    """
    settings = load_settings(root, ["train.dataset=rows.jsonl"]).settings
    values = {f"{section}.{key}": value for section in ("train", "generation", "crsp")
              for key, value in vars(getattr(settings, section)).items()}
    return mapping_table(TRL_DEFAULTS, values)


__all__ = ["CRSPConfig", "ResolvedArgs", "TrlFieldError", "config_from_dict", "resolve_args",
           "trl_differences"]

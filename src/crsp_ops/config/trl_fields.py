"""TRL's ``GRPOConfig`` fields, each mapped onto crsp_ops keys or refused: never ignored.

``translate`` turns the fields a script set into crsp_ops ``key: value`` pairs. A field is
*mapped* (``MAPPED``: one key, converted), part of a *group* read together (the batch, the
budget, the loss, precision, warmup, reporting), *honoured by the trainer face* itself
(``FACE``: output, logging cadence, saving, the Hub, best-metric tracking), or refused with one
line when it differs from TRL's default (``TrlFieldError``). docs/training.md's table is
``mapping_rows``' output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from crsp_ops.config.errors import ConfigError


class TrlFieldError(ConfigError):
    """A TRL field with no crsp_ops equivalent, or a value crsp_ops cannot honour."""


def _same(value: Any) -> Any:
    return value


def _min_p(value: Any) -> float:
    return 0.0 if value is None else float(value)


def _template(value: Any) -> str:
    return json.dumps(value) if value else ""


def _scale(value: Any) -> str:
    if value is True or value == "group":
        return "group"
    if value is False or value == "none":
        return "none"
    if value == "batch":
        return "batch"
    raise TrlFieldError(f"scale_rewards={value!r}: crsp_ops scales by group, batch or none")


@dataclass(frozen=True)
class Mapped:
    """A TRL field that sets one crsp_ops key."""

    key: str
    convert: Callable[[Any], Any] = _same
    alias_of: str = ""  # another field's new name: it yields to that field when both are given


MAPPED: dict[str, Mapped] = {
    "learning_rate": Mapped("train.learning_rate", float),
    "weight_decay": Mapped("train.weight_decay", float),
    "max_grad_norm": Mapped("train.max_grad_norm", float),
    "seed": Mapped("crsp.seed", int),
    "num_generations": Mapped("train.solver_samples", int),
    "num_iterations": Mapped("train.update_epochs", int),
    "beta": Mapped("train.ref_kl_coef", float),
    "scale_rewards": Mapped("train.scale_rewards", _scale),
    "mask_truncated_completions": Mapped("train.mask_truncated", bool),
    "temperature": Mapped("train.temperature", float),
    "top_p": Mapped("generation.top_p", float),
    "top_k": Mapped("generation.top_k", lambda v: int(v or 0)),
    "min_p": Mapped("generation.min_p", _min_p),
    "repetition_penalty": Mapped("generation.repetition_penalty", float),
    "chat_template_kwargs": Mapped("generation.chat_template_kwargs", _template),
    "max_completion_length": Mapped("train.max_new_tokens_solve", int),
    "gradient_checkpointing": Mapped("train.gradient_checkpointing", bool),
    "activation_checkpointing": Mapped("train.gradient_checkpointing", bool,
                                       alias_of="gradient_checkpointing"),
    "importance_sampling_level": Mapped("train.importance_sampling_level", str),
    "top_entropy_quantile": Mapped("train.top_entropy_quantile", float),
    "vllm_gpu_memory_utilization": Mapped("generation.memory_fraction", float),
    "vllm_enable_sleep_mode": Mapped("generation.vllm_sleep_mode", bool),
    "vllm_importance_sampling_correction": Mapped("train.sampling_correction", bool),
    "vllm_importance_sampling_mode": Mapped("train.sampling_correction_mode", str),
    "vllm_importance_sampling_clip_max": Mapped("train.sampling_correction_clip_max", float),
    "vllm_importance_sampling_cap": Mapped("train.sampling_correction_clip_max", float,
                                           alias_of="vllm_importance_sampling_clip_max"),
    "vllm_importance_sampling_clip_min": Mapped("train.sampling_correction_clip_min",
                                                lambda v: float(v or 0.0)),
}

# Read together by one function each (below); the table shows their keys.
GROUPS: dict[str, tuple[str, ...]] = {
    "batch": ("per_device_train_batch_size", "gradient_accumulation_steps",
              "generation_batch_size", "steps_per_generation"),
    "budget": ("max_steps", "num_train_epochs"),
    "loss": ("loss_type", "epsilon", "epsilon_high"),
    "precision": ("bf16", "fp16", "use_cpu"),
    "schedule": ("lr_scheduler_type", "warmup_steps"),
    "saving": ("save_strategy", "save_steps", "save_total_limit"),
    "evaluation": ("eval_strategy", "eval_steps", "do_eval"),
    "reporting": ("report_to",),
    "model": ("model_init_kwargs",),
    "optimizer": ("optim",),
    "engine": ("use_vllm", "vllm_mode"),
}
GROUP_KEYS: dict[str, str] = {
    "per_device_train_batch_size": "train.micro_batch_size; with gradient_accumulation_steps "
                                   "and num_generations: train.tasks_per_type",
    "gradient_accumulation_steps": "train.tasks_per_type (x per_device_train_batch_size / "
                                   "num_generations)",
    "generation_batch_size": "must equal per_device_train_batch_size x "
                             "gradient_accumulation_steps (one update per generation)",
    "steps_per_generation": "must equal gradient_accumulation_steps",
    "max_steps": "train.steps (when > 0)",
    "num_train_epochs": "train.num_epochs (when max_steps <= 0; whole epochs)",
    "loss_type": "train.loss_aggregation (grpo: sequence_mean, dapo: token_mean, dr_grpo: "
                 "constant_normalizer)",
    "epsilon": "train.ratio_clip (and train.ratio_clip_low with epsilon_high)",
    "epsilon_high": "train.ratio_clip_high",
    "bf16": "train.mixed_precision=bf16",
    "fp16": "train.mixed_precision=fp16",
    "use_cpu": "model.device=cpu",
    "lr_scheduler_type": "train.lr_schedule (linear, cosine, constant, constant_with_warmup)",
    "warmup_steps": "train.lr_warmup_steps (a value below 1: that share of the steps)",
    "save_strategy": "train.checkpoint_interval (no: only the final checkpoint)",
    "save_steps": "train.checkpoint_interval",
    "save_total_limit": "train.keep_checkpoints (None: all, up to 1000)",
    "eval_strategy": "train.eval_interval (no: the start and the end only)",
    "eval_steps": "train.eval_interval",
    "do_eval": "follows eval_strategy (transformers sets it)",
    "report_to": "tracking.enabled (mlflow/all: on, none: off)",
    "model_init_kwargs": "model.dtype (its dtype / torch_dtype)",
    "optim": "AdamW (adamw_torch, adamw_torch_fused)",
    "use_vllm": "generation.backend (False: transformers; True: vllm_colocate)",
    "vllm_mode": "colocate only (TRL's vllm-serve protocol: use generation.backend="
                 "openai_server)",
}

# Honoured by CRSPTrainer itself, through transformers' own TrainingArguments and callbacks.
FACE: dict[str, str] = {
    "output_dir": "the output directory",
    "logging_steps": "state.log_history and on_log every N steps (MLflow gets every step)",
    "logging_strategy": "as transformers' DefaultFlowCallback reads it",
    "logging_first_step": "as transformers' DefaultFlowCallback reads it",
    "run_name": "the MLflow run name",
    "push_to_hub": "push_to_hub() at the end of train()",
    "hub_model_id": "push_to_hub()'s repository",
    "hub_token": "push_to_hub()'s token",
    "hub_private_repo": "push_to_hub()'s visibility",
    "metric_for_best_model": "state.best_metric after each evaluation (EarlyStoppingCallback)",
    "greater_is_better": "state.best_metric's direction",
    "disable_tqdm": "the progress bar",
    "log_level": "the trainer's logging level",
    "reward_weights": "each reward function's weight",
}
# The fields whose crsp_ops behaviour differs from TRL's whatever their value.
ALWAYS: dict[str, str] = {
    "eval_on_start": "crsp_ops evaluates at step 0 and at the end of every run (the "
                     "learning curve's first and last points)",
}


def translate(fields: Mapping[str, Any], known: Mapping[str, Any],
              defaults: Mapping[str, Any]) -> dict[str, Any]:
    """crsp_ops ``key: value`` pairs for ``fields`` (the TRL fields to honour).

    Args:
        fields: the fields to translate (a ``GRPOConfig``'s every field, or those set).
        known: every field's value (groups read their partners from it).
        defaults: TRL's default of every field (unmapped fields must equal it).

    Raises:
        TrlFieldError: a field with no equivalent set away from TRL's default, or a value
            crsp_ops cannot honour (one line naming the field).
    """
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name in MAPPED:
            mapped = MAPPED[name]
            if not (mapped.alias_of in fields and (value is None or mapped.key in out)):
                out[mapped.key] = mapped.convert(value)
        elif not any(name in group for group in GROUPS.values()) and name not in FACE \
                and name not in ALWAYS and name in defaults and value != defaults[name]:
            raise TrlFieldError(f"{name}={value!r} has no crsp_ops equivalent; leave it at "
                                f"TRL's default ({defaults[name]!r}) or remove it "
                                f"(docs/training.md: TRL's fields)")
    for group, names in GROUPS.items():
        if any(name in fields for name in names):
            out.update(_GROUP_READERS[group](known))
    return out


def _batch(known: Mapping[str, Any]) -> dict[str, Any]:
    per_device = int(known.get("per_device_train_batch_size", 8))
    accumulation = int(known.get("gradient_accumulation_steps", 1))
    generations = int(known.get("num_generations", 8))
    completions = per_device * accumulation
    generation_batch = known.get("generation_batch_size") or completions
    steps_per_generation = known.get("steps_per_generation") or accumulation
    if generation_batch != completions or steps_per_generation != accumulation:
        raise TrlFieldError(
            f"generation_batch_size={generation_batch} / steps_per_generation="
            f"{steps_per_generation}: crsp_ops makes one update per generation batch; leave "
            f"them unset (per_device_train_batch_size x gradient_accumulation_steps)")
    if completions % generations:
        raise TrlFieldError(
            f"per_device_train_batch_size x gradient_accumulation_steps = {completions} is "
            f"not a multiple of num_generations={generations}")
    return {"train.tasks_per_type": completions // generations,
            "train.micro_batch_size": per_device}


def _budget(known: Mapping[str, Any]) -> dict[str, Any]:
    steps = int(known.get("max_steps", -1))
    if steps > 0:
        return {"train.steps": steps, "train.num_epochs": 0}
    epochs = float(known.get("num_train_epochs", 3.0))
    if epochs != int(epochs) or epochs < 1:
        raise TrlFieldError(f"num_train_epochs={epochs}: crsp_ops counts whole epochs; set a "
                            f"whole number or max_steps")
    return {"train.num_epochs": int(epochs)}  # its steps: config.resolve's apply_epochs


_LOSS_TYPES = {"grpo": "sequence_mean", "dapo": "token_mean", "dr_grpo": "constant_normalizer"}


def _loss(known: Mapping[str, Any]) -> dict[str, Any]:
    loss_type = str(known.get("loss_type", "dapo"))
    if loss_type not in _LOSS_TYPES:
        raise TrlFieldError(f"loss_type={loss_type!r} has no crsp_ops equivalent; choose one of "
                            f"{', '.join(_LOSS_TYPES)}")
    epsilon = float(known.get("epsilon", 0.2))
    high = known.get("epsilon_high")
    out = {"train.loss_aggregation": _LOSS_TYPES[loss_type], "train.ratio_clip": epsilon,
           "train.ratio_clip_low": 0.0 if high is None else epsilon,
           "train.ratio_clip_high": 0.0 if high is None else float(high)}
    if loss_type == "dr_grpo":
        out["train.loss_constant_normalizer"] = int(known.get("max_completion_length", 512))
    return out


def _precision(known: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"train.mixed_precision": "bf16" if known.get("bf16") else
                           "fp16" if known.get("fp16") else "no"}
    if known.get("use_cpu"):
        out["model.device"] = "cpu"
    return out


_SCHEDULES = {"linear": "linear", "cosine": "cosine", "constant": "constant",
              "constant_with_warmup": "constant"}


def _schedule(known: Mapping[str, Any]) -> dict[str, Any]:
    name = str(getattr(known.get("lr_scheduler_type", "linear"), "value",
                       known.get("lr_scheduler_type", "linear")))
    if name not in _SCHEDULES:
        raise TrlFieldError(f"lr_scheduler_type={name!r} has no crsp_ops equivalent; choose "
                            f"one of {', '.join(_SCHEDULES)}")
    warmup = float(known.get("warmup_steps", 0) or 0)
    if 0 < warmup < 1:  # transformers reads a value below 1 as a share of the steps
        steps = int(known.get("max_steps", -1))
        if steps <= 0:
            raise TrlFieldError(f"warmup_steps={warmup} (a share of the steps) needs max_steps")
        warmup = math.ceil(warmup * steps)
    return {"train.lr_schedule": _SCHEDULES[name], "train.lr_warmup_steps": int(warmup)}


def _saving(known: Mapping[str, Any]) -> dict[str, Any]:
    strategy = str(getattr(known.get("save_strategy"), "value", known.get("save_strategy")))
    if strategy not in ("steps", "no", "None"):
        raise TrlFieldError(f"save_strategy={strategy!r}: crsp_ops saves every N steps (steps) "
                            f"or only at the end (no)")
    limit = known.get("save_total_limit")
    steps = int(known.get("save_steps", 500) or 500)
    return {"train.checkpoint_interval": 10_000_000 if strategy == "no" else max(steps, 1),
            "train.keep_checkpoints": 1000 if limit is None else max(int(limit), 1)}


def _evaluation(known: Mapping[str, Any]) -> dict[str, Any]:
    strategy = str(getattr(known.get("eval_strategy"), "value", known.get("eval_strategy")))
    if strategy not in ("steps", "no", "None"):
        raise TrlFieldError(f"eval_strategy={strategy!r}: crsp_ops evaluates every N steps "
                            f"(steps) or at the start and end only (no)")
    if strategy != "steps":
        return {"train.eval_interval": 0}
    steps = known.get("eval_steps") or known.get("logging_steps") or 500
    return {"train.eval_interval": int(steps)}


def _reporting(known: Mapping[str, Any]) -> dict[str, Any]:
    value = known.get("report_to")
    names = [value] if isinstance(value, str) else list(value or [])
    names = [name for name in names if name != "none"]
    others = [name for name in names if name not in ("mlflow", "all")]
    if others:
        raise TrlFieldError(f"report_to={value!r}: crsp_ops tracks runs in MLflow "
                            f"(report_to='mlflow' or 'none')")
    return {"tracking.enabled": bool(names)}


def _model(known: Mapping[str, Any]) -> dict[str, Any]:
    kwargs = dict(known.get("model_init_kwargs") or {})
    dtype = kwargs.pop("dtype", None) or kwargs.pop("torch_dtype", None)
    if kwargs:
        raise TrlFieldError(f"model_init_kwargs keys {sorted(kwargs)} have no crsp_ops "
                            f"equivalent (dtype maps to model.dtype)")
    if dtype is None:
        return {}
    name = str(dtype).removeprefix("torch.")
    return {"model.dtype": {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(
        name, name)}


def _optimizer(known: Mapping[str, Any]) -> dict[str, Any]:
    name = str(getattr(known.get("optim"), "value", known.get("optim", "adamw_torch_fused")))
    if name not in ("adamw_torch", "adamw_torch_fused"):
        raise TrlFieldError(f"optim={name!r}: crsp_ops trains with AdamW (adamw_torch_fused)")
    return {}


def _engine(known: Mapping[str, Any]) -> dict[str, Any]:
    if not known.get("use_vllm"):
        return {"generation.backend": "transformers"}
    if known.get("vllm_mode", "colocate") != "colocate":
        raise TrlFieldError(f"vllm_mode={known.get('vllm_mode')!r}: crsp_ops runs vLLM colocated "
                            f"(TRL's vllm-serve protocol is not spoken; for a served engine set "
                            f"generation.backend=openai_server)")
    return {"generation.backend": "vllm_colocate"}


_GROUP_READERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "batch": _batch, "budget": _budget, "loss": _loss, "precision": _precision,
    "schedule": _schedule, "saving": _saving, "evaluation": _evaluation,
    "reporting": _reporting, "model": _model, "optimizer": _optimizer, "engine": _engine}


def target(name: str) -> str | None:
    """What a TRL field sets (its crsp_ops key, group keys or face role), else ``None``.

    >>> target("beta"), target("no_such_field")
    ('train.ref_kl_coef', None)
    """
    if name in MAPPED:
        return MAPPED[name].key
    return GROUP_KEYS.get(name) or FACE.get(name)


def trl_name_hint(key: str) -> str | None:
    """What to set instead of ``key`` when its last part is a TRL name, else ``None``.

    >>> trl_name_hint("num_generations")
    "TRL's num_generations: use train.solver_samples"
    >>> trl_name_hint("train.lora_ranks") is None
    True
    """
    name = key.rsplit(".", 1)[-1]
    found = target(name)
    return f"TRL's {name}: use {found}" if found is not None else None


def mapping_table(trl_defaults: Mapping[str, Any], crsp_values: Mapping[str, Any]) -> str:
    """docs/training.md's table of ``mapping_rows`` (Markdown)."""
    lines = ["| TRL field | crsp_ops key | TRL default | crsp_ops default (a dataset run) |",
             "| --- | --- | --- | --- |"]
    lines += [f"| `{name}` | {where} | `{theirs}` | `{ours}` |"
              for name, where, theirs, ours in mapping_rows(trl_defaults, crsp_values)]
    return "\n".join(lines) + "\n"


def mapping_rows(trl_defaults: Mapping[str, Any], crsp_values: Mapping[str, Any]
                 ) -> list[tuple[str, str, str, str]]:
    """``(TRL field, crsp_ops key, TRL default, crsp_ops default)`` for every mapped field."""
    rows = []
    for name in [*MAPPED, *(n for names in GROUPS.values() for n in names), *FACE, *ALWAYS]:
        where = target(name) or ALWAYS[name]
        key = MAPPED[name].key if name in MAPPED else None
        ours = repr(crsp_values[key]) if key in crsp_values else "—"
        rows.append((name, where, repr(trl_defaults.get(name, "—")), ours))
    return rows

"""TRL's ``GRPOConfig`` / ``TrainingArguments`` names and the crsp_ops option that does each job.

A TRL user types the names they know (``--set num_generations=8``, ``args={"beta": 0.04}``);
an unknown key that is one of them is answered with the option to use instead of a near
spelling. The table of docs/training.md ("GRPO, DAPO, Dr. GRPO: presets in TRL's words") is
the same mapping for the loss knobs.
"""

from __future__ import annotations

_BATCH = "train.tasks_per_type (prompts a step) with train.solver_samples (samples a prompt)"
TRL_NAMES: dict[str, str] = {
    # the loss (train.preset sets these together: grpo, dapo, dr_grpo)
    "beta": "train.ref_kl_coef",
    "num_generations": "train.solver_samples",
    "scale_rewards": "train.scale_rewards",
    "loss_type": "train.loss_aggregation (grpo: sequence_mean, dapo: token_mean, dr_grpo: "
                 "constant_normalizer), or train.preset=grpo|dapo|dr_grpo for all the knobs",
    "epsilon": "train.ratio_clip (train.ratio_clip_low for the lower side alone)",
    "epsilon_high": "train.ratio_clip_high",
    "mask_truncated_completions": "train.mask_truncated",
    "num_iterations": "train.update_epochs",
    "reward_weights": "train.rewards (SPEC=WEIGHT, or --reward SPEC=WEIGHT)",
    # sampling
    "temperature": "train.temperature",
    "top_p": "generation.top_p",
    "top_k": "generation.top_k",
    "min_p": "generation.min_p",
    "repetition_penalty": "generation.repetition_penalty",
    "chat_template_kwargs": "generation.chat_template_kwargs",
    "max_completion_length": "train.max_new_tokens_solve",
    "use_vllm": "generation.backend=openai_server with generation.engine (docs/engines.md)",
    # the budget and the optimizer
    "max_steps": "train.steps",
    "num_train_epochs": "train.num_epochs",
    "per_device_train_batch_size": _BATCH,
    "generation_batch_size": _BATCH,
    "gradient_accumulation_steps": "train.micro_batch_size (rollouts a forward pass; a step "
                                   "accumulates over all its rollouts)",
    "learning_rate": "train.learning_rate",
    "lr_scheduler_type": "train.lr_schedule",
    "warmup_steps": "train.lr_warmup_steps",
    "warmup_ratio": "train.lr_warmup_steps (in steps)",
    "weight_decay": "train.weight_decay",
    "max_grad_norm": "train.max_grad_norm",
    "seed": "crsp.seed",
    # precision, memory, adapters
    "bf16": "train.mixed_precision=bf16 (and model.dtype for the weights)",
    "fp16": "train.mixed_precision=fp16 (and model.dtype for the weights)",
    "model_init_kwargs": "model.dtype (the weights' dtype)",
    "torch_dtype": "model.dtype",
    "gradient_checkpointing": "train.gradient_checkpointing",
    "r": "train.lora_rank",
    "lora_r": "train.lora_rank",
    "target_modules": "train.lora_target_modules",
    # saving, evaluation, logging
    "output_dir": "--out (crsp-ops train) or output_dir= (CRSPTrainer)",
    "save_steps": "train.checkpoint_interval",
    "save_total_limit": "train.keep_checkpoints",
    "eval_steps": "train.eval_interval",
    "report_to": "tracking.enabled (MLflow) and tracking.uri",
}


def trl_name_hint(key: str) -> str | None:
    """What to set instead of ``key`` when its last part is a TRL name, else ``None``.

    >>> trl_name_hint("num_generations")
    "TRL's num_generations: use train.solver_samples"
    >>> trl_name_hint("train.beta"), trl_name_hint("train.lora_ranks")
    ("TRL's beta: use train.ref_kl_coef", None)
    """
    name = key.rsplit(".", 1)[-1]
    target = TRL_NAMES.get(name)
    return f"TRL's {name}: use {target}" if target is not None else None

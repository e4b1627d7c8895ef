"""Settings of CRSP self-play training and LIMO trajectory seeding (defaults/kconfig/train.kconfig).

Kconfig is the one home of every default and help text; these frozen dataclasses carry the
types, float bounds and the cross-field checks, which raise ``ValueError`` naming the fix.
The seed's schema sections map as ``crsp`` → ``crsp``, ``trajectory_seeding`` → ``seeding``,
``reward_structure`` → ``reward``; ``train`` holds what the optimisation loop needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crsp_ops.config.fields import bounded

ROLES = ("propose", "solve", "critique")
KNOWN_PROBLEM_TYPES = ("code_i", "code_o", "code_f", "math")
KNOWN_DIMENSIONS = ("diversity", "depth", "creativity", "rigor")
ALGORITHM_NAMES = {"trrpg": "trrpg", "trrpp": "trr++"}  # config value -> algorithms.py name


@dataclass(frozen=True)
class CrspSettings:
    """The ``crsp`` section: self-play tasks and the sandboxed executor."""

    seed: int
    problem_types: tuple[str, ...]
    executor_max_workers: int
    executor_cleanup_frequency: int
    executor_determinism_runs: int
    sandbox_timeout_s: float = bounded(0.0, 3600.0, open_low=True)
    sandbox_memory_mb: int
    sandbox_max_file_size_mb: float = bounded(0.0, 1e6, open_low=True)
    sandbox_max_processes: int
    sandbox_max_output_chars: int
    min_inputs_code_f: int
    buffer_size: int
    propose_references: int
    heldout_math: int
    math_source: str  # "limo" (the limo stage's rows) | "edge" (data/edge_math.py)
    edge_difficulty: int
    edge_tasks: int

    def __post_init__(self) -> None:
        unknown = sorted(set(self.problem_types) - set(KNOWN_PROBLEM_TYPES))
        if unknown or not self.problem_types:
            raise ValueError(f"crsp.problem_types={','.join(self.problem_types)!r}: unknown "
                             f"{unknown or 'empty list'}; use some of {list(KNOWN_PROBLEM_TYPES)}")
        if len(set(self.problem_types)) != len(self.problem_types):
            raise ValueError(f"crsp.problem_types lists a type twice: {self.problem_types}")


@dataclass(frozen=True)
class SeedingSettings:
    """The ``seeding`` section: optional LIMO trajectory seeding (SFT) before self-play."""

    enabled: bool
    dataset_source: str  # "stage" (the limo stage's rows) | any crsp_ops.data.limo source
    steps: int  # 0: from num_epochs (apply_epochs)
    learning_rate: float = bounded(0.0, 1.0, open_low=True)
    batch_size: int
    alpha: float = bounded(0.0, 100.0)
    max_seq_len: int


@dataclass(frozen=True)
class RewardSettings:
    """The ``reward`` section: reward structure and alpha schedule."""

    alpha_decay_enabled: bool
    alpha_schedule: str  # "rlsp_coupled" | "linear" | "constant"
    alpha_s_start: float = bounded(0.0, 1.0)
    alpha_c_start: float = bounded(0.0, 1.0)
    alpha_s_end: float = bounded(0.0, 1.0)
    alpha_c_end: float = bounded(0.0, 1.0)
    creativity_enabled: bool
    creativity_dimensions: tuple[str, ...]
    length_max_length: int
    length_penalty_threshold: int
    advantage_eps: float = bounded(0.0, 1.0, open_low=True)

    def __post_init__(self) -> None:
        if self.length_penalty_threshold < self.length_max_length:
            raise ValueError(
                f"reward.length_penalty_threshold={self.length_penalty_threshold} must be >= "
                f"reward.length_max_length={self.length_max_length}; raise the threshold")
        unknown = sorted(set(self.creativity_dimensions) - set(KNOWN_DIMENSIONS))
        if unknown:
            raise ValueError(f"reward.creativity_dimensions: unknown {unknown}; use some of "
                             f"{list(KNOWN_DIMENSIONS)}")
        if self.alpha_decay_enabled and self.alpha_schedule != "constant" and (
                self.alpha_s_start > self.alpha_s_end or self.alpha_c_start > self.alpha_c_end):
            raise ValueError("reward.alpha_*_start must not exceed reward.alpha_*_end for the "
                             "linear and rlsp_coupled schedules (the weights only rise)")


@dataclass(frozen=True)
class TrainSettings:
    """The ``train`` section: the TR-RPG / TRR++ optimisation loop."""

    algorithm: str  # "trrpg" | "trrpp" (TRR++)
    advantage_baseline: str  # "task_type" | "task" (crsp.rl.advantages.baseline_group)
    steps: int
    learning_rate: float = bounded(0.0, 1.0, open_low=True)
    weight_decay: float = bounded(0.0, 10.0)
    max_grad_norm: float = bounded(0.0, 1e6)
    beta_propose: float = bounded(0.0, 100.0)
    beta_solve: float = bounded(0.0, 100.0)
    beta_critique: float = bounded(0.0, 100.0)
    log_ratio_clamp: float = bounded(0.0, 100.0, open_low=True)
    ratio_clip: float = bounded(0.0, 0.999)
    update_epochs: int
    micro_batch_size: int
    solver_samples: int
    proposals_per_step: int
    tasks_per_type: int
    critiques_per_task: int
    max_new_tokens_propose: int
    max_new_tokens_solve: int
    max_new_tokens_critique: int
    propose_scaffold: bool  # prefill the proposer's turn up to its program block
    temperature: float = bounded(0.0, 10.0, open_low=True)
    checkpoint_interval: int
    keep_checkpoints: int
    resume_exact_schedules: bool  # refuse a resume that would change the schedules
    eval_interval: int
    eval_math_tasks: int
    sample_table_interval: int
    server_reload_interval: int  # generation.backend=openai_server: restart on new weights
    mixed_precision: str  # "no" | "fp16" | "bf16"
    # your own task (docs/training.md): rows with a prompt, scored by reward functions
    dataset: str  # "": the built-in tasks; else a JSONL/CSV/Parquet file or folder
    eval_dataset: str  # "": held out from train.dataset (eval_split_size rows)
    eval_split_size: int
    num_epochs: int  # passes over the dataset; 0: train.steps sets the budget
    rewards: tuple[str, ...]  # SPEC[=WEIGHT] of each reward function
    success_threshold: float = bounded(-1e9, 1e9)
    reward_timeout_s: float = bounded(0.0, 1e6)
    # defaults/kconfig/train_scaling.kconfig (docs/scaling.md)
    lora_rank: int  # 0: full fine-tuning
    lora_alpha: float = bounded(0.0, 1e6, open_low=True)
    lora_dropout: float = bounded(0.0, 0.999)
    lora_target_modules: tuple[str, ...]  # ("all-linear",) or module names
    lora_save_merged: bool
    gradient_checkpointing: bool
    ref_kl_coef: float = bounded(0.0, 100.0)
    ref_kl_estimator: str  # "k1" | "k3"
    ratio_clip_low: float = bounded(0.0, 0.999)  # 0: ratio_clip
    ratio_clip_high: float = bounded(0.0, 100.0)  # 0: ratio_clip
    loss_aggregation: str  # "token_mean" | "sequence_mean" | "constant_normalizer"
    loss_constant_normalizer: int  # 0: the largest max_new_tokens_*
    importance_sampling_level: str  # "token" | "sequence" (GSPO; rl.trrpg)
    top_entropy_quantile: float = bounded(0.0, 1.0, open_low=True)  # 1: every token
    sampling_correction: bool  # an engine that samples: weight the loss by pi_old / mu
    sampling_correction_mode: str  # rl.sampling_correction.CORRECTION_MODES
    sampling_correction_clip_max: float = bounded(0.0, 1e9, open_low=True)
    sampling_correction_clip_min: float = bounded(0.0, 1e9)  # 0: no lower bound
    mask_truncated: bool
    step_when_flat: bool
    flat_group_advantage: str  # "zero" | "step" (rl.advantages)
    dynamic_sampling: bool
    dynamic_sampling_max_rounds: int
    lr_schedule: str  # "constant" | "linear" | "cosine"
    lr_warmup_steps: int
    sharding: str  # "none" | "fsdp2" (crsp.policy.sharding)
    preset: str  # "auto" | "dataset" | "none" | "crsp" | "grpo" | "dapo" | "dr_grpo"
    scale_rewards: str  # "auto" | "group" | "batch" | "none" (rl.advantages)

    def __post_init__(self) -> None:
        if self.steps == 0 and self.num_epochs == 0:
            raise ValueError("train.steps is 0 and train.num_epochs is 0: set one of them")
        if self.proposals_per_step == 0 and self.tasks_per_type == 0:
            raise ValueError("train.proposals_per_step and train.tasks_per_type are both 0: "
                             "nothing would be solved; raise one of them")
        if self.sampling_correction_clip_min >= self.sampling_correction_clip_max:
            raise ValueError(
                f"train.sampling_correction_clip_min={self.sampling_correction_clip_min} must be "
                f"below train.sampling_correction_clip_max={self.sampling_correction_clip_max}")
        if self.dynamic_sampling and self.solver_samples < 2:
            raise ValueError("train.dynamic_sampling needs train.solver_samples >= 2 (one "
                             "sample per task is always a flat group)")

    @property
    def algorithm_name(self) -> str:
        """The name ``crsp.rl.algorithms.get_algorithm`` knows (``trrpg`` or ``trr++``)."""
        return ALGORITHM_NAMES[self.algorithm]

    @property
    def ratio_clips(self) -> tuple[float, float]:
        """``(low, high)`` epsilons of the advantage clip; ``0`` on a side: no clip there."""
        return (self.ratio_clip_low or self.ratio_clip, self.ratio_clip_high or self.ratio_clip)

    @property
    def constant_normalizer(self) -> int:
        """Tokens per response of ``loss_aggregation=constant_normalizer``."""
        return self.loss_constant_normalizer or max(
            self.max_new_tokens_propose, self.max_new_tokens_solve, self.max_new_tokens_critique)

    @property
    def betas(self) -> dict[str, float]:
        """KL beta per role."""
        return {"propose": self.beta_propose, "solve": self.beta_solve,
                "critique": self.beta_critique}


def apply_epochs(values: dict[str, Any], sources: dict[str, str]) -> None:
    """``train.num_epochs`` sets the budget unless ``train.steps`` was set (TRL's max_steps wins).

    The budget in steps needs the dataset's size, so ``train.steps`` becomes 0 here
    ("from the epochs") and the trainer counts the steps (``trainer.options.epoch_budget``).

    >>> values = {"train.num_epochs": 2, "train.steps": 24}
    >>> sources = {"train.num_epochs": "--set", "train.steps": "Kconfig"}
    >>> apply_epochs(values, sources)
    >>> values["train.steps"], sources["train.steps"]
    (0, 'train.num_epochs')
    """
    if values.get("train.num_epochs") and sources.get("train.steps") == "Kconfig":
        values["train.steps"] = 0
        sources["train.steps"] = "train.num_epochs"

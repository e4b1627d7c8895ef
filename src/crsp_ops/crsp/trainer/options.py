"""The trainer's options, read from the config sections in one place.

Every setting the loop, the episode, the update and the checkpoint need is translated here
once: the episode's sizes and reward settings (``EpisodeOptions``), the loss and optimisation
(``UpdateOptions``), the alpha schedule, the sandbox, the task buffers, the record that fixes a
run's schedules, the budget in steps of a run counted in epochs, and the seed of each step's
sampling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.selfplay_config import CrspSettings, RewardSettings, TrainSettings
from crsp_ops.config.steering_config import GenerationSettings
from crsp_ops.crsp.executor import SandboxExecutor, SandboxLimits
from crsp_ops.crsp.rewards.alpha_schedule import Alphas, AlphaSchedule, make_alpha_schedule
from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.sampling_correction import SamplingCorrection
from crsp_ops.crsp.rl.update import UpdateOptions
from crsp_ops.crsp.selfplay.episode import EpisodeOptions
from crsp_ops.crsp.selfplay.epochs import EpochBuffer, steps_per_epoch
from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
from crsp_ops.crsp.tasks import starter_tasks
from crsp_ops.crsp.tasks.task_types import MathTask, PromptTask, Task, TaskType


@dataclass(frozen=True)
class SelfPlaySettings:
    """The config sections the trainer reads."""

    crsp: CrspSettings
    reward: RewardSettings
    train: TrainSettings
    generation: GenerationSettings  # backend, engine and server options, shared with evolve


def make_alpha_schedule_from(reward: RewardSettings) -> AlphaSchedule:
    """The configured schedule; a constant one at the end values when decay is off."""
    end = Alphas(reward.alpha_s_end, reward.alpha_c_end)
    if not reward.alpha_decay_enabled or reward.alpha_schedule == "constant":
        return make_alpha_schedule("constant", alpha_s=end.alpha_s, alpha_c=end.alpha_c)
    start = Alphas(reward.alpha_s_start, reward.alpha_c_start)
    return make_alpha_schedule(reward.alpha_schedule, start=start, end=end)


def episode_options(settings: SelfPlaySettings, *, dataset: bool = False) -> EpisodeOptions:
    """Episode sizes, sampling and reward settings; ``dataset``: only solve the rows.

    The roles sample at ``train.temperature`` with ``generation``'s top-p, top-k, min-p and
    repetition penalty.
    """
    crsp, reward, train, generation = (settings.crsp, settings.reward, settings.train,
                                       settings.generation)
    options = EpisodeOptions(
        problem_types=tuple(TaskType(name) for name in crsp.problem_types),
        proposals=train.proposals_per_step, references=crsp.propose_references,
        tasks_per_type=train.tasks_per_type, solver_samples=train.solver_samples,
        critiques_per_task=train.critiques_per_task,
        max_new_tokens={"propose": train.max_new_tokens_propose,
                        "solve": train.max_new_tokens_solve,
                        "critique": train.max_new_tokens_critique},
        temperature=train.temperature, min_inputs_code_f=crsp.min_inputs_code_f,
        length_max_length=reward.length_max_length,
        length_penalty_threshold=reward.length_penalty_threshold,
        creativity_enabled=reward.creativity_enabled,
        creativity_dimensions=reward.creativity_dimensions,
        propose_scaffold=train.propose_scaffold, top_p=generation.top_p,
        top_k=generation.top_k, min_p=generation.min_p,
        repetition_penalty=generation.repetition_penalty)
    if dataset:
        return replace(options, proposals=0, critiques_per_task=0,
                       problem_types=(TaskType.DATASET,))
    return options


def update_options(settings: SelfPlaySettings, *, lockstep: bool = False,
                   on_policy: bool = False) -> UpdateOptions:
    """Loss and optimisation settings; ``lockstep`` when sharded, ``on_policy`` in process."""
    train = settings.train
    low, high = train.ratio_clips
    ratio_clip = (low, high) if (low, high) != (train.ratio_clip,) * 2 else train.ratio_clip
    return UpdateOptions(
        algorithm=get_algorithm(train.algorithm_name), betas=train.betas,
        log_ratio_clamp=train.log_ratio_clamp, ratio_clip=ratio_clip if low or high else None,
        advantage_eps=settings.reward.advantage_eps, micro_batch_size=train.micro_batch_size,
        update_epochs=train.update_epochs, max_grad_norm=train.max_grad_norm,
        loss_aggregation=train.loss_aggregation, constant_normalizer=train.constant_normalizer,
        ref_kl_coef=train.ref_kl_coef, ref_kl_estimator=train.ref_kl_estimator,
        scale_rewards=train.scale_rewards, step_when_flat=train.step_when_flat,
        flat_group_advantage=train.flat_group_advantage,
        importance_sampling_level=train.importance_sampling_level,
        top_entropy_quantile=train.top_entropy_quantile,
        sampling_correction=sampling_correction(train),
        lockstep=lockstep, on_policy=on_policy)


def sampling_correction(train: TrainSettings) -> SamplingCorrection | None:
    """The importance-sampling correction of an engine's samples, ``None`` when off."""
    if not train.sampling_correction:
        return None
    return SamplingCorrection(train.sampling_correction_mode,
                              clip_max=train.sampling_correction_clip_max,
                              clip_min=train.sampling_correction_clip_min)


def schedule_record(settings: SelfPlaySettings, *, reads_alpha: bool = True) -> dict[str, Any]:
    """What fixes a run's alpha and learning-rate schedules (checkpointed, compared on resume).

    ``steps`` is recorded only where a schedule depends on it, the alpha schedule only where a
    reward reads it (``reads_alpha``: CRSP's own solve reward, or critiques).
    """
    reward, train = settings.reward, settings.train
    alpha_moves = reads_alpha and reward.alpha_decay_enabled \
        and reward.alpha_schedule != "constant"
    record: dict[str, Any] = {
        "lr_schedule": train.lr_schedule, "lr_warmup_steps": train.lr_warmup_steps,
        "steps": train.steps if alpha_moves or train.lr_schedule != "constant" else None}
    if reads_alpha:
        record["alpha_schedule"] = reward.alpha_schedule if alpha_moves else "constant"
        record["alpha_end"] = [reward.alpha_s_end, reward.alpha_c_end]
    if alpha_moves:
        record["alpha_start"] = [reward.alpha_s_start, reward.alpha_c_start]
    return record


def schedule_changes(recorded: dict[str, Any], now: dict[str, Any]
                     ) -> dict[str, tuple[Any, Any]]:
    """``{key: (recorded, now)}`` of what changed; a key nothing reads now never counts.

    >>> schedule_changes({"steps": 2, "alpha_end": [1, 1]}, {"steps": 4})
    {'steps': (2, 4)}
    >>> schedule_changes({"steps": 2}, {"steps": None})
    {}
    """
    return {key: (recorded.get(key), value) for key, value in now.items()
            if value is not None and recorded.get(key) != value}


def make_executor(crsp: CrspSettings) -> SandboxExecutor:
    """The sandbox pool with the configured limits."""
    limits = SandboxLimits(timeout_s=crsp.sandbox_timeout_s, memory_mb=crsp.sandbox_memory_mb,
                           max_file_size_mb=crsp.sandbox_max_file_size_mb,
                           max_processes=crsp.sandbox_max_processes,
                           max_output_chars=crsp.sandbox_max_output_chars)
    return SandboxExecutor(limits, max_workers=crsp.executor_max_workers,
                           cleanup_every=crsp.executor_cleanup_frequency,
                           determinism_runs=crsp.executor_determinism_runs)


def make_buffers(crsp: CrspSettings, tasks: Sequence[Task], *, rank: int = 0,
                 processes: int = 1) -> TaskBuffers:
    """Buffers of the configured types: built-in seeds plus the math rows in ``tasks``.

    A dataset's rows (``PromptTask``) replace the built-in tasks: one ``EpochBuffer`` holds
    them all, drawn in epochs (``rank`` of ``processes`` take their shares of each step's).
    """
    rows = [task for task in tasks if isinstance(task, PromptTask)]
    if rows:
        return EpochBuffer(rows, seed=crsp.seed, rank=rank, processes=processes)
    math_tasks = [task for task in tasks if isinstance(task, MathTask)]
    seeds: dict[TaskType, list[Task]] = {}
    for name in crsp.problem_types:
        task_type = TaskType(name)
        seeds[task_type] = list(starter_tasks(task_type))
        if task_type is TaskType.MATH:
            seeds[task_type] += list(math_tasks)
    capacity = max([crsp.buffer_size, *(len(tasks) for tasks in seeds.values())])
    return TaskBuffers(seeds, capacity=capacity)


def epoch_budget(train: TrainSettings, tasks: Sequence[Task], processes: int = 1
                 ) -> TrainSettings:
    """``train`` with ``steps`` counted from ``num_epochs`` where it is 0 (``apply_epochs``).

    Raises:
        ConfigError: epochs without a dataset (self-play tasks have none).
    """
    if train.steps:
        return train
    rows = sum(isinstance(task, PromptTask) for task in tasks)
    if not rows:
        raise ConfigError("train.num_epochs counts passes over a dataset (train.dataset); "
                          "self-play tasks have no epochs: set train.steps instead")
    per_epoch = steps_per_epoch(rows, train.tasks_per_type * processes)
    return replace(train, steps=train.num_epochs * per_epoch)


def sampling_seed(seed: int, step: int, rank: int) -> int:
    """The seed of step ``step``'s sampling on process ``rank`` (``crsp.seed``-derived)."""
    return seed * 1_000_003 + step * 7 + rank

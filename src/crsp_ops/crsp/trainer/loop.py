"""CRSP self-play trainer: propose → validate → solve → critique → rewards → TR-RPG / TRR++.

One step (``SelfPlayTrainer.train_step``):

1. alphas from the schedule at this step (logged);
2. ``episode.run_episode``: the policy proposes code tasks (validated in the sandbox), solves
   new and buffered tasks n times, critiques some solutions; every response is scored;
3. ``rollout_building``: responses → rollouts through the ``InferenceContext``;
4. ``policy_update``: task-relative advantages per (task type, role), one optimizer step
   (per ``train.update_epochs``) on the TR-RPG or TRR++ loss;
5. valid proposals join the task buffers; a server backend reloads weights every N steps.

Device placement, mixed precision and multi-GPU come from ``accelerate``: under
``accelerate launch`` every process samples its own episode (seed + rank) and DDP averages the
gradients; advantages are per process; step metrics are reduced over the ranks before logging
(``rank_metrics``: global means, summed counts, the replicas' parameter sums compared); only the
main process writes checkpoints, tables and metrics (the driver gives the other ranks a
``NullTracker``). The trainer process never runs
proposed code: the sandbox executor does.
"""

from __future__ import annotations

import json
import logging
import random
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from crsp_ops.atomic_io import atomic_write_json
from crsp_ops.config.errors import ConfigError
from crsp_ops.config.selfplay_config import CrspSettings, RewardSettings, TrainSettings
from crsp_ops.config.steering_config import GenerationSettings
from crsp_ops.crsp.executor import SandboxExecutor, SandboxLimits
from crsp_ops.crsp.policy.accelerator import make_accelerator, require_replicated
from crsp_ops.crsp.policy.generation import InProcessGeneration, PolicyGeneration, ServerGeneration
from crsp_ops.crsp.policy.peft_setup import (
    exported,
    load_adapter,
    parameter_counts,
    prepare_policy,
    save_adapter,
    save_hf_model,
)
from crsp_ops.crsp.policy.rank_metrics import global_metrics
from crsp_ops.crsp.policy.sharding import (
    OPTIMIZER_FORMAT,
    GenerationReplica,
    full_optimizer_state,
    full_state,
    load_full_optimizer_state,
    load_full_weights,
    local_parameters,
    require_distributed,
    shard_policy,
    sharding_requested,
)
from crsp_ops.crsp.rewards.alpha_schedule import Alphas, AlphaSchedule, make_alpha_schedule
from crsp_ops.crsp.rewards.functions import RewardError, RewardState
from crsp_ops.crsp.rewards.solve import RewardSet, at_alphas, builtin_solve_rewards
from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.lr_schedule import lr_factor, set_learning_rate
from crsp_ops.crsp.rl.reference_kl import ReferencePolicy
from crsp_ops.crsp.rl.update import (
    UpdateOptions,
    mask_rows,
    policy_temperature,
    policy_update,
    truncated_rows,
)
from crsp_ops.crsp.selfplay.dynamic_sampling import refill
from crsp_ops.crsp.selfplay.episode import Episode, EpisodeOptions, run_episode, solve
from crsp_ops.crsp.selfplay.rollout_building import build_rollouts
from crsp_ops.crsp.selfplay.step_metrics import (
    episode_metrics,
    family_solve_counts,
    flat_families,
    sample_table,
)
from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
from crsp_ops.crsp.tasks import starter_tasks
from crsp_ops.crsp.tasks.task_types import (
    CODE_TASK_TYPES,
    MathTask,
    PromptTask,
    Task,
    TaskType,
)
from crsp_ops.crsp.trainer.checkpoint import (
    latest_checkpoint,
    load_trainer_state,
    restore_rng,
    rng_state,
    save_checkpoint,
)
from crsp_ops.crsp.trainer.evaluation import heldout_code_tasks, score_heldout
from crsp_ops.crsp.trainer.learning_curve import CurvePoint, curve_point, save_curve_figure
from crsp_ops.inference.context import InferenceContext
from crsp_ops.inference.rollouts import TrainingBatch
from crsp_ops.tracking import NullTracker, Tracker

logger = logging.getLogger(__name__)
RANK_SUMMARY = ("rollouts/count", "response_tokens", "loss")  # each rank's own, in the log
REWARD_TRACEBACK = "errors/reward_traceback.txt"  # the run's artifact when a reward fails
CURVE_FILE = "learning_curve.json"  # held-out evaluations of the run (and .png beside it)


@dataclass(frozen=True)
class SelfPlaySettings:
    """The config sections the trainer reads."""

    crsp: CrspSettings
    reward: RewardSettings
    train: TrainSettings
    generation: GenerationSettings  # backend, engine and server options, shared with evolve


@dataclass(frozen=True)
class TrainResult:
    """What ``SelfPlayTrainer.train`` did."""

    steps_done: int  # completed steps, resumed ones included
    last_metrics: dict[str, float]
    eval_metrics: dict[str, float]
    model_dir: Path  # the final HF model directory


def make_alpha_schedule_from(reward: RewardSettings) -> AlphaSchedule:
    """The configured schedule; a constant one at the end values when decay is off."""
    end = Alphas(reward.alpha_s_end, reward.alpha_c_end)
    if not reward.alpha_decay_enabled or reward.alpha_schedule == "constant":
        return make_alpha_schedule("constant", alpha_s=end.alpha_s, alpha_c=end.alpha_c)
    start = Alphas(reward.alpha_s_start, reward.alpha_c_start)
    return make_alpha_schedule(reward.alpha_schedule, start=start, end=end)


def episode_options(settings: SelfPlaySettings) -> EpisodeOptions:
    """Episode sizes and reward settings from the config sections."""
    crsp, reward, train = settings.crsp, settings.reward, settings.train
    return EpisodeOptions(
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
        propose_scaffold=train.propose_scaffold)


def update_options(settings: SelfPlaySettings) -> UpdateOptions:
    """Loss and optimisation settings from the config sections."""
    train = settings.train
    low, high = train.ratio_clips
    ratio_clip = (low, high) if (low, high) != (train.ratio_clip,) * 2 else train.ratio_clip
    return UpdateOptions(
        algorithm=get_algorithm(train.algorithm_name), betas=train.betas,
        log_ratio_clamp=train.log_ratio_clamp, ratio_clip=ratio_clip if low or high else None,
        advantage_eps=settings.reward.advantage_eps, micro_batch_size=train.micro_batch_size,
        update_epochs=train.update_epochs, max_grad_norm=train.max_grad_norm,
        loss_aggregation=train.loss_aggregation, constant_normalizer=train.constant_normalizer,
        ref_kl_coef=train.ref_kl_coef, ref_kl_estimator=train.ref_kl_estimator)


def schedule_record(settings: SelfPlaySettings) -> dict[str, Any]:
    """What fixes a run's alpha and learning-rate schedules (checkpointed, checked on resume).

    ``steps`` is recorded only where a schedule depends on it.
    """
    reward, train = settings.reward, settings.train
    alpha_moves = reward.alpha_decay_enabled and reward.alpha_schedule != "constant"
    record: dict[str, Any] = {
        "alpha_schedule": reward.alpha_schedule if alpha_moves else "constant",
        "alpha_end": [reward.alpha_s_end, reward.alpha_c_end],
        "lr_schedule": train.lr_schedule, "lr_warmup_steps": train.lr_warmup_steps,
        "steps": train.steps if alpha_moves or train.lr_schedule != "constant" else None}
    if alpha_moves:
        record["alpha_start"] = [reward.alpha_s_start, reward.alpha_c_start]
    return record



def make_executor(crsp: CrspSettings) -> SandboxExecutor:
    """The sandbox pool with the configured limits."""
    limits = SandboxLimits(timeout_s=crsp.sandbox_timeout_s, memory_mb=crsp.sandbox_memory_mb,
                           max_file_size_mb=crsp.sandbox_max_file_size_mb,
                           max_processes=crsp.sandbox_max_processes,
                           max_output_chars=crsp.sandbox_max_output_chars)
    return SandboxExecutor(limits, max_workers=crsp.executor_max_workers,
                           cleanup_every=crsp.executor_cleanup_frequency,
                           determinism_runs=crsp.executor_determinism_runs)


def make_buffers(crsp: CrspSettings, tasks: Sequence[Task]) -> TaskBuffers:
    """Buffers of the configured types: built-in seeds plus the math rows in ``tasks``.

    A dataset's rows (``PromptTask``) replace the built-in tasks: one buffer holds them all.
    """
    rows = [task for task in tasks if isinstance(task, PromptTask)]
    if rows:
        return TaskBuffers({TaskType.DATASET: rows}, capacity=len(rows))
    math_tasks = [task for task in tasks if isinstance(task, MathTask)]
    seeds: dict[TaskType, list[Task]] = {}
    for name in crsp.problem_types:
        task_type = TaskType(name)
        seeds[task_type] = list(starter_tasks(task_type))
        if task_type is TaskType.MATH:
            seeds[task_type] += list(math_tasks)
    capacity = max([crsp.buffer_size, *(len(tasks) for tasks in seeds.values())])
    return TaskBuffers(seeds, capacity=capacity)


class SelfPlayTrainer:
    """The CRSP self-play loop over one policy model (see the module docstring).

    Args:
        model: a causal LM (HF ``PreTrainedModel``), trained in place.
        tokenizer: its tokenizer with a chat template.
        settings: the ``crsp``, ``reward`` and ``train`` config sections.
        out_dir: final model, checkpoints and summaries go here.
        tasks: math rows (LIMO or edge; training split) added to the math buffer, or a
            dataset's rows (``PromptTask``), which replace the built-in tasks: the steps then
            only solve them (no proposals, no critiques).
        heldout_tasks: held-out math or dataset rows for evaluation.
        rewards: the solve step's reward functions; default CRSP's own
            (``solve_rewards.builtin_solve_rewards``). A dataset needs its own.
        tracker: where metrics go (``NullTracker`` when tracking is off or rank != 0).
        accelerator: default ``make_accelerator(train.mixed_precision, "auto")``.
        generation: default from ``generation.backend`` (in-process or a managed server).
    """

    def __init__(self, model: Any, tokenizer: Any, settings: SelfPlaySettings, *,
                 out_dir: str | Path, tasks: Sequence[Task] = (),
                 heldout_tasks: Sequence[Task] = (), rewards: RewardSet | None = None,
                 tracker: Tracker | None = None,
                 accelerator: Any | None = None,
                 generation: PolicyGeneration | None = None) -> None:
        self.settings = settings
        self.out_dir = Path(out_dir)
        self.tokenizer = tokenizer
        self.tracker = tracker or NullTracker()
        self.accelerator = accelerator or make_accelerator(settings.train.mixed_precision,
                                                           "auto")
        # FSDP2 (crsp.sharding): generation from a gathered replica, made before LoRA
        self.sharded = sharding_requested(settings.train.sharding)
        if self.sharded:
            require_distributed()  # before the replica's copy: one line, exit 2
        else:
            require_replicated(self.accelerator)  # DeepSpeed: one line, exit 2
        self.replica = GenerationReplica(model, self.accelerator.device) \
            if self.sharded else None
        model = prepare_policy(model, settings.train)  # LoRA / activation checkpointing
        self.trainable_params, self.total_params = parameter_counts(model)
        # the initial policy: the adapter switched off, or a frozen copy (before any update)
        self.reference = ReferencePolicy(model).to(self.accelerator.device) \
            if settings.train.ref_kl_coef > 0 else None
        if self.sharded:
            model = shard_policy(model.to(self.accelerator.device), self.accelerator.device)
            logger.info("rank %d holds %d of %d parameters (FSDP2)",
                        self.accelerator.process_index, local_parameters(model),
                        self.total_params)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                      lr=settings.train.learning_rate,
                                      weight_decay=settings.train.weight_decay)
        self.model, self.optimizer = (model, optimizer) if self.sharded else \
            self.accelerator.prepare(model, optimizer)
        self._own_generation = generation is None
        self.step = 0
        self.rng = random.Random(settings.crsp.seed + self.accelerator.process_index)
        self.schedule = make_alpha_schedule_from(settings.reward)
        self.episode_options = episode_options(settings)
        if any(isinstance(task, PromptTask) for task in tasks):  # a dataset: solve its rows
            self.episode_options = replace(self.episode_options, proposals=0,
                                           critiques_per_task=0,
                                           problem_types=(TaskType.DATASET,))
        self.update_options = replace(update_options(settings), lockstep=self.sharded)
        self.executor = make_executor(settings.crsp)
        self.buffers = make_buffers(settings.crsp, tasks)
        self.solve_rewards = rewards or builtin_solve_rewards(
            self.executor, length_max_length=settings.reward.length_max_length,
            length_penalty_threshold=settings.reward.length_penalty_threshold,
            timeout_s=settings.train.reward_timeout_s)
        self.heldout_tasks = [task for task in heldout_tasks if isinstance(task, PromptTask)] \
            or [task for task in heldout_tasks if isinstance(task, MathTask)][
                : settings.train.eval_math_tasks]
        self.context = InferenceContext(tokenizer, logprob_semantics="processed")
        self.generation = generation or self._default_generation()
        # in-process samples come from the very weights being trained: ratio exactly 1
        self.update_options = replace(
            self.update_options, on_policy=isinstance(self.generation, InProcessGeneration))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.solve_samples = 0  # solve responses generated for training (the curve's x axis)
        self.curve: list[CurvePoint] = []
        self.heldout_verdicts: list[list[bool]] = []  # per evaluation: each held-out task

    # ---- setup ---------------------------------------------------------------------------

    @property
    def unwrapped_model(self) -> Any:
        """The model without accelerate/DDP wrappers (sharded: the FSDP module itself)."""
        return self.accelerator.unwrap_model(self.model)

    @property
    def generation_model(self) -> Any:
        """What generates: the trained model, or its gathered replica when sharded."""
        return self.replica.model if self.sharded else self.unwrapped_model

    def exported_policy(self) -> Any:
        """What a generation server loads (``save_pretrained``): merged, gathered weights."""
        return self.replica if self.sharded else exported(self.unwrapped_model)

    def _default_generation(self) -> PolicyGeneration:
        generation = self.settings.generation
        if generation.backend == "openai_server":
            served = self.out_dir / "served"  # one directory per rank: no two writers
            if self.accelerator.num_processes > 1:
                served = served / f"rank-{self.accelerator.process_index}"
            return ServerGeneration(
                self.exported_policy(), self.tokenizer, weights_root=served,
                generation=generation, rank=self.accelerator.process_index,
                reload_interval=self.settings.train.server_reload_interval, step=self.step)
        device = self.accelerator.device  # cpu:N under a multi-CPU (gloo) launch: just "cpu"
        return InProcessGeneration(self.generation_model, self.tokenizer,
                                   device="cpu" if device.type == "cpu" else str(device),
                                   batch_size=generation.batch_size)

    def resume(self, checkpoint: str | Path | None = None) -> int:
        """Restore optimizer, step, buffers, RNG and a LoRA adapter from ``checkpoint``.

        ``checkpoint`` defaults to the latest. The model's base weights are loaded by whoever
        built the model (from the same directory); a LoRA adapter from its ``adapter/``.

        Returns:
            The step to continue after (0 when there is no checkpoint).

        Raises:
            ConfigError: ``train.steps`` (or the alpha schedule) differs from the checkpoint's
                run, which would shift the schedule; or ``train.lora_rank`` does not match.
        """
        checkpoint = Path(checkpoint) if checkpoint else latest_checkpoint(self.out_dir)
        if checkpoint is None:
            return 0
        state = load_trainer_state(checkpoint)
        recorded, now = state.get("schedules"), schedule_record(self.settings)
        if recorded is not None and recorded != now:
            changed = {k: (recorded.get(k), now.get(k)) for k in {*recorded, *now}
                       if recorded.get(k) != now.get(k)}
            raise ConfigError(f"{checkpoint}: resuming with other schedule settings would shift "
                              f"the alpha/lr schedules (checkpoint vs now: {changed}); resume "
                              f"with the run's train.steps, reward.alpha_* and train.lr_*")
        if self.sharded != (state.get("optimizer_format") == OPTIMIZER_FORMAT):
            raise ConfigError(f"{checkpoint} was written by a "
                              f"{'sharded' if not self.sharded else 'replicated'} run: resume "
                              f"with the run's train.sharding (and accelerate config)")
        load_adapter(self.unwrapped_model, checkpoint,
                     load_full=load_full_weights if self.sharded else None)
        if self.sharded:
            load_full_optimizer_state(self.model, self.optimizer, state["optimizer"])
            self.replica.refresh(self.model)  # the restored adapter, merged
        else:
            self.optimizer.load_state_dict(state["optimizer"])
        self.buffers.load_state(state["buffers"])
        restore_rng(state["rng"], self.rng)
        self.step = int(state["step"])
        self.solve_samples = int(state.get("solve_samples", 0))
        self.curve = [CurvePoint(**{**row, "solve_rate_ci": tuple(row["solve_rate_ci"]),
                                    "well_formed_ci": tuple(row["well_formed_ci"])})
                      for row in state.get("curve", [])]
        if self.accelerator.process_index:  # the checkpoint holds rank 0's RNG: others derive
            self.rng.seed(f"{self.settings.crsp.seed}:{self.step}:{self.accelerator.process_index}")
        if self._own_generation and isinstance(self.generation, ServerGeneration):
            self.generation.close()  # it serves the weights before the adapter was restored
            self.generation = self._default_generation()  # labelled with the resumed step
        self.generation.policy_step = self.step  # policy_lag continues from the resumed step
        logger.info("resumed from %s at step %d", checkpoint, self.step)
        return self.step

    # ---- the loop ------------------------------------------------------------------------

    def alphas(self, step: int) -> Alphas:
        """Schedule value at ``step`` (1-based): the first step gets the start, the last the end."""
        total = self.settings.train.steps
        return self.schedule(step - 1, max(total - 1, 1)) if total > 1 else self.schedule(1, 1)

    def train(self) -> TrainResult:
        """Run until ``train.steps``; checkpoint on schedule, at the end and on Ctrl+C/SIGTERM."""
        metrics: dict[str, float] = {}
        evaluation: dict[str, float] = {}
        try:
            if self.step == 0:  # a fresh run: the curve starts at the base model
                self._log(self.evaluate())
            while self.step < self.settings.train.steps:
                metrics, episode = self.train_step()
                self.step += 1
                self._after_step(metrics, episode)
            evaluation = self.evaluate()
            self._log(evaluation)
            self.save_curve()
        except BaseException as error:
            if not isinstance(error, Exception):  # KeyboardInterrupt, SIGTERM's Terminated
                logger.warning("interrupted after step %d: saving a checkpoint", self.step)
                self.save_checkpoint()
            if isinstance(error, RewardError):  # the run ends FAILED: keep the traceback with it
                self.tracker.log_text("".join(traceback.format_exception(error)),
                                      REWARD_TRACEBACK)
            raise
        finally:
            self.close()
        self.save_checkpoint()
        model_dir = self.save_model(self.out_dir)
        return TrainResult(self.step, metrics, evaluation, model_dir)

    def train_step(self) -> tuple[dict[str, float], Episode]:
        """One step at ``self.step + 1`` (see the module docstring); returns metrics + episode."""
        step = self.step + 1
        started = time.perf_counter()
        alphas = self.alphas(step)
        self.unwrapped_model.eval()
        episode = run_episode(
            self.generation.backend, self.executor, self.buffers, self.episode_options,
            rewards=self.solve_rewards, state=RewardState(step, self.settings.train.steps),
            step=step, alphas=alphas, rng=self.rng,
            seed=self.settings.crsp.seed * 1_000_003 + step * 7 + self.accelerator.process_index)
        if self.settings.train.dynamic_sampling:
            episode = self._dynamic_sampling(episode, step, alphas)
        generated = time.perf_counter()
        update = self._update(episode)
        updated = time.perf_counter()
        self.buffers.add(episode.new_tasks)
        self.solve_samples += sum(sample.role == "solve" for sample in episode.samples)
        self.solve_samples += int(episode.counters.get("dynamic_sampling/dropped_samples", 0))
        if self.sharded:
            self.replica.refresh(self.model)  # a collective: every rank, once per step
        reloaded = self.generation.sync(step, self.exported_policy())
        elapsed = time.perf_counter() - started
        metrics = {
            **episode_metrics(episode, [t.value for t in self.episode_options.problem_types]),
            **update,
            "alpha_s": alphas.alpha_s, "alpha_c": alphas.alpha_c,
            "perf/step_time_s": elapsed, "perf/generation_s": generated - started,
            "perf/update_s": updated - generated, "generation/reloaded": float(reloaded),
            **{f"generation/{name}": float(value)
               for name, value in getattr(self.generation, "stats", {}).items()},
            **{f"buffer/{name}": float(size) for name, size in self.buffers.sizes().items()},
        }
        metrics["perf/tokens_per_s"] = (metrics["response_tokens"] + update.get("trained_tokens", 0)
                                        ) / max(elapsed, 1e-9)
        return metrics, episode

    def _dynamic_sampling(self, episode: Episode, step: int, alphas: Alphas) -> Episode:
        """Drop the flat solve groups and refill them from more buffer tasks (dynamic_sampling)."""
        seed = self.settings.crsp.seed * 1_000_003 + step * 7 + self.accelerator.process_index

        def solve_more(task_types: list[str], round_index: int):
            tasks = [self.buffers.sample(TaskType(name), 1, self.rng)[0] for name in task_types]
            samples, _ = solve(self.generation.backend, tasks, self.episode_options,
                               at_alphas(self.solve_rewards, alphas),
                               RewardState(step, self.settings.train.steps),
                               seed + 1_000 * (round_index + 1))
            return samples

        samples, counters = refill(episode.samples, solve_more,
                                   max_rounds=self.settings.train.dynamic_sampling_max_rounds)
        return replace(episode, samples=tuple(samples), counters={**episode.counters, **counters})

    def _update(self, episode: Episode) -> dict[str, float]:
        train = self.settings.train
        step_rollouts = build_rollouts(episode.samples, self.context,
                                       baseline=self.settings.train.advantage_baseline)
        context_stats = {f"context/{k}": float(v) for k, v in self.context.stats().items()}
        self.context.reset_stats()
        truncated = truncated_rows(episode.samples, [(r.env_name, r.env_example_id)
                                                     for r in step_rollouts.rollouts])
        lr = set_learning_rate(self.optimizer, train.learning_rate, lr_factor(
            self.step + 1, total=train.steps, warmup=train.lr_warmup_steps,
            schedule=train.lr_schedule))
        base = {"rollouts/count": float(len(step_rollouts.rollouts)),
                "rollouts/skipped": float(step_rollouts.skipped), **context_stats,
                "rollouts/truncated": float(len(truncated)), "lr": lr,
                "model/trainable_params": float(self.trainable_params),
                "generation/policy_lag": float(self.step - self.generation.policy_step)}
        batch = None
        if step_rollouts.rollouts:
            batch = TrainingBatch.from_rollouts(step_rollouts.rollouts, pad_token_id=self.pad_id)
            if train.mask_truncated:  # they keep their reward in the baseline, train nothing
                batch = mask_rows(batch, truncated)
        elif self.accelerator.num_processes > 1:  # the other ranks' update needs this one
            logger.warning("rank %d: step %d produced no trainable rollout; joining the update "
                           "with a zero loss", self.accelerator.process_index, self.step + 1)
        self.model.train()
        update = {}
        if batch is not None or self.accelerator.num_processes > 1:
            update = policy_update(
                self.model, self.optimizer, self.accelerator, batch, step_rollouts.roles,
                step_rollouts.baseline_groups, self.update_options,
                temperature=policy_temperature(
                    "raw" if batch is None else batch.logprob_semantics,
                    self.settings.train.temperature), reference=self.reference)
        if not update:
            logger.warning("step %d produced no trainable rollout; no update", self.step + 1)
            return base
        trained = 0.0 if batch is None else float(batch.loss_mask.sum())
        return {**base, **update, "trained_tokens": trained}

    def _after_step(self, metrics: dict[str, float], episode: Episode) -> None:
        train = self.settings.train
        self._log(metrics, model=self.generation_model)  # ranks' replicas: equal sums
        if self.step == 1:  # the first episode samples the base policy: its per-family rates
            for warning in flat_families(family_solve_counts(episode)):
                logger.warning("step 1 (base policy): %s", warning)
        if self.step % train.sample_table_interval == 0 and self.accelerator.is_main_process:
            self.tracker.log_dict(sample_table(episode, self.step),
                                  f"samples/step_{self.step:06d}.json")
        if self.step % train.checkpoint_interval == 0:
            self.save_checkpoint()
        if train.eval_interval and self.step % train.eval_interval == 0 \
                and self.step < train.steps:
            self._log(self.evaluate())

    def _log(self, metrics: dict[str, float], model: Any = None) -> None:
        # every rank takes part in the reduction; only the main process logs the result
        own = " ".join(f"{k}={metrics[k]:.6g}" for k in RANK_SUMMARY if k in metrics)
        if own and self.accelerator.num_processes > 1:
            logger.info("rank %d step %d local: %s", self.accelerator.process_index, self.step,
                        own)
        metrics = global_metrics(self.accelerator, metrics, model)
        if metrics and self.accelerator.is_main_process:
            self.tracker.log_metrics(metrics, step=self.step)
            logger.info("step %d: %s", self.step, _summary(metrics))

    # ---- evaluation, checkpoints, output -------------------------------------------------

    def evaluate(self) -> dict[str, float]:
        """Greedy held-out scores: ``eval/solve_rate/<type>`` and ``eval/reward/<name>``.

        Each with its 95% interval; each evaluation is also a point of the run's learning
        curve (``save_curve``), and its per-task verdicts are kept in ``heldout_verdicts``.
        """
        types = [t for t in self.episode_options.problem_types if t in CODE_TASK_TYPES]
        tasks: list[Task] = [*heldout_code_tasks(self.executor, types), *self.heldout_tasks]
        self.unwrapped_model.eval()
        step = max(self.step, 1)
        scores = score_heldout(
            self.generation.backend, tasks, at_alphas(self.solve_rewards, self.alphas(step)),
            RewardState(self.step, self.settings.train.steps),
            max_new_tokens=self.settings.train.max_new_tokens_solve)
        if "all" in scores.metrics:
            self.curve.append(curve_point(self.step, self.solve_samples, scores.metrics))
            self.heldout_verdicts.append([check.correct for check in scores.checks])
        return {f"eval/{name}" if name.startswith("reward/") else f"eval/solve_rate/{name}": value
                for name, value in scores.metrics.items()}

    def save_curve(self) -> Path | None:
        """Write ``learning_curve.json`` and its figure to the output dir and the run."""
        if not self.curve or not self.accelerator.is_main_process:
            return None
        rows = [point.to_row() for point in self.curve]
        self.tracker.log_dict({"points": rows}, CURVE_FILE)
        figure = save_curve_figure({self.settings.train.algorithm_name: self.curve},
                                   self.out_dir / "learning_curve.png")
        self.tracker.log_artifact(figure)
        return atomic_write_json(self.out_dir / CURVE_FILE, {"points": rows})

    def save_checkpoint(self) -> Path | None:
        """Write the checkpoint of the completed steps (main process; every rank calls it).

        Sharded: the full model and optimizer state are gathered to rank 0 first.
        """
        self.accelerator.wait_for_everyone()
        if self.step == 0:
            return None
        weights, optimizer_state = None, None
        if self.sharded:
            weights = full_state(self.model, rank0_only=True)
            optimizer_state = full_optimizer_state(self.model, self.optimizer)
        if not self.accelerator.is_main_process:
            return None
        state = {"step": self.step,
                 "optimizer": optimizer_state if self.sharded else self.optimizer.state_dict(),
                 "optimizer_format": OPTIMIZER_FORMAT if self.sharded else "torch",
                 "buffers": self.buffers.state(), "rng": rng_state(self.rng),
                 "solve_samples": self.solve_samples,
                 "curve": [point.to_row() for point in self.curve],
                 "schedules": schedule_record(self.settings)}
        model = self.unwrapped_model
        return save_checkpoint(self.out_dir, self.step, model, self.tokenizer, state,
                               keep=self.settings.train.keep_checkpoints,
                               save_model=lambda staging: (
                                   save_hf_model(model, staging, merged=False, state=weights),
                                   save_adapter(model, staging, state=weights,
                                                merged=self.settings.train.lora_save_merged)))

    def save_model(self, out_dir: Path) -> Path:
        """Save the final HF model dir (LoRA merged in) and ``train_summary.json``.

        Every rank calls it (sharded: the weights are gathered to rank 0 first).
        """
        weights = full_state(self.model, rank0_only=True) if self.sharded else None
        if self.accelerator.is_main_process:
            save_hf_model(self.unwrapped_model, Path(out_dir), merged=True, state=weights)
            self.tokenizer.save_pretrained(out_dir)
            summary = {"steps": self.step, "algorithm": self.settings.train.algorithm_name}
            (Path(out_dir) / "train_summary.json").write_text(json.dumps(summary, indent=2))
        return Path(out_dir)

    def close(self) -> None:
        """Stop the generation backend (and server) and the sandbox pool."""
        self.generation.close()
        self.executor.close()


def _summary(metrics: dict[str, float]) -> str:
    keys = ("loss", "kl", "reward/solve/mean", "reward/propose/mean", "reward/critique/mean",
            "perf/step_time_s")
    return " ".join(f"{k}={metrics[k]:.4g}" for k in keys if k in metrics) or \
        " ".join(f"{k}={v:.4g}" for k, v in metrics.items())

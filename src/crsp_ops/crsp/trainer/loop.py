"""CRSP self-play trainer: propose → validate → solve → critique → rewards → TR-RPG / TRR++.

A step (``train_step``) runs two hooks: ``generate_and_score`` (the episode: proposals validated
in the sandbox, solves of new and buffered tasks, critiques, every response scored, flat solve
groups optionally refilled) and ``update`` (rollouts through the ``InferenceContext``, then
``rl.update.policy_update``). ``_after_step`` logs, calls the callbacks (``trainer.callbacks``),
checkpoints (``trainer.checkpoint``: the last step's once, after the final evaluation) and
evaluates (``trainer.evaluation``). Settings are translated once in ``trainer.options``; the
policy and its generation are built in ``trainer.setup``. Under ``accelerate launch`` each
process samples its own episode and DDP averages the gradients; only the main process writes.
Proposed code runs only in the sandbox executor.
"""

from __future__ import annotations

import logging
import random
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.policy.generation import InProcessGeneration, PolicyGeneration
from crsp_ops.crsp.policy.peft_setup import exported
from crsp_ops.crsp.policy.rank_metrics import log_over_ranks
from crsp_ops.crsp.rewards.alpha_schedule import Alphas
from crsp_ops.crsp.rewards.functions import RewardError, RewardState
from crsp_ops.crsp.rewards.solve import RewardSet, at_alphas, builtin_solve_rewards
from crsp_ops.crsp.rl.lr_schedule import lr_factor, set_learning_rate
from crsp_ops.crsp.rl.update import policy_temperature, policy_update
from crsp_ops.crsp.selfplay.dynamic_sampling import refill_episode
from crsp_ops.crsp.selfplay.episode import Episode, run_episode
from crsp_ops.crsp.selfplay.rollout_building import training_batch
from crsp_ops.crsp.selfplay.step_metrics import (
    episode_metrics,
    flat_family_warnings,
    sample_table,
)
from crsp_ops.crsp.tasks.task_types import MathTask, PromptTask, Task
from crsp_ops.crsp.trainer.callbacks import Callbacks
from crsp_ops.crsp.trainer.checkpoint import TrainerCheckpoints
from crsp_ops.crsp.trainer.evaluation import HeldoutEvaluation
from crsp_ops.crsp.trainer.export import save_final_model
from crsp_ops.crsp.trainer.options import (
    SelfPlaySettings,
    episode_options,
    epoch_budget,
    make_alpha_schedule_from,
    make_buffers,
    make_executor,
    sampling_seed,
    update_options,
)
from crsp_ops.crsp.trainer.setup import make_generation, prepare_policy_parts
from crsp_ops.inference.context import InferenceContext
from crsp_ops.tracking import NullTracker, Tracker

logger = logging.getLogger(__name__)
REWARD_TRACEBACK = "errors/reward_traceback.txt"  # the run's artifact when a reward fails


@dataclass(frozen=True)
class TrainResult:
    """What ``SelfPlayTrainer.train`` did."""

    steps_done: int  # completed steps, resumed ones included
    last_metrics: dict[str, float]
    eval_metrics: dict[str, float]
    model_dir: Path  # the final HF model directory


class SelfPlayTrainer(TrainerCheckpoints, HeldoutEvaluation):
    """The CRSP self-play loop over one policy model (see the module docstring).

    Args:
        model: a causal LM (HF ``PreTrainedModel``), trained in place.
        tokenizer: its tokenizer with a chat template.
        settings: the ``crsp``, ``reward``, ``train`` and ``generation`` config sections.
        out_dir: final model, checkpoints and summaries go here.
        tasks: math rows (LIMO or edge; training split) added to the math buffer, or a
            dataset's rows (``PromptTask``), which replace the built-in tasks: the steps then
            only solve them (no proposals, no critiques).
        heldout_tasks: held-out math or dataset rows for evaluation.
        rewards: the solve step's reward functions; default CRSP's own
            (``rewards.solve.builtin_solve_rewards``). A dataset needs its own.
        tracker: where metrics go (``NullTracker`` when tracking is off or rank != 0).
        accelerator: default ``make_accelerator(train.mixed_precision, "auto")``.
        generation: default from ``generation.backend`` (in-process or a managed server).
        callbacks: ``trainer.callbacks.TrainerCallback``s (or objects with some of its hooks).
    """

    def __init__(self, model: Any, tokenizer: Any, settings: SelfPlaySettings, *,
                 out_dir: str | Path, tasks: Sequence[Task] = (),
                 heldout_tasks: Sequence[Task] = (), rewards: RewardSet | None = None,
                 tracker: Tracker | None = None, accelerator: Any | None = None,
                 generation: PolicyGeneration | None = None, callbacks: Sequence = ()) -> None:
        self.accelerator = accelerator or make_accelerator(settings.train.mixed_precision, "auto")
        processes, rank = self.accelerator.num_processes, self.accelerator.process_index
        train = epoch_budget(settings.train, tasks, processes)  # train.num_epochs: its steps
        settings = replace(settings, train=train)
        self.settings, self.out_dir, self.tokenizer = settings, Path(out_dir), tokenizer
        self.tracker, self.callbacks = tracker or NullTracker(), Callbacks(callbacks)
        parts = prepare_policy_parts(model, train, self.accelerator)
        self.model, self.optimizer, self.reference = parts.model, parts.optimizer, parts.reference
        self.replica, self.sharded = parts.replica, parts.sharded
        self.trainable_params, self.total_params = parts.trainable_params, parts.total_params
        self._own_generation, self.step = generation is None, 0
        self.rng = random.Random(settings.crsp.seed + rank)
        self.schedule = make_alpha_schedule_from(settings.reward)
        self.episode_options = episode_options(
            settings, dataset=any(isinstance(task, PromptTask) for task in tasks))
        self.executor = make_executor(settings.crsp)
        self.buffers = make_buffers(settings.crsp, tasks, rank=rank, processes=processes)
        self.solve_rewards = rewards or builtin_solve_rewards(
            self.executor, length_max_length=settings.reward.length_max_length,
            length_penalty_threshold=settings.reward.length_penalty_threshold,
            timeout_s=train.reward_timeout_s)
        self.heldout_tasks = [task for task in heldout_tasks if isinstance(task, PromptTask)] \
            or [task for task in heldout_tasks if isinstance(task, MathTask)][
                : train.eval_math_tasks]
        self.context = InferenceContext(tokenizer, logprob_semantics="processed",  # as generated
                                        chat_template_kwargs=settings.generation.template_kwargs)
        self.generation = generation or self._default_generation()
        # in-process samples come from the very weights being trained: ratio exactly 1
        self.update_options = update_options(
            settings, lockstep=self.sharded,
            on_policy=isinstance(self.generation, InProcessGeneration))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.solve_samples = 0  # solve responses generated for training (the curve's x axis)
        self.curve = []  # learning_curve.CurvePoint per evaluation
        self.heldout_verdicts: list[list[bool]] = []  # per evaluation: each held-out task

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
        return make_generation(self.settings.generation, self.settings.train, self.accelerator,
                               policy=self.generation_model, exported=self.exported_policy(),
                               tokenizer=self.tokenizer, out_dir=self.out_dir, step=self.step)

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
            self.callbacks.train_end(self.step, evaluation)
        except BaseException as error:
            if not isinstance(error, Exception) or self.step == self.settings.train.steps:
                logger.warning("stopped after step %d: saving a checkpoint", self.step)
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
        episode = self.generate_and_score(step, alphas)
        generated = time.perf_counter()
        update = self.update(episode)
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

    def generate_and_score(self, step: int, alphas: Alphas) -> Episode:
        """The step's episode from the current policy, every response scored."""
        self.unwrapped_model.eval()
        seed = sampling_seed(self.settings.crsp.seed, step, self.accelerator.process_index)
        state = RewardState(step, self.settings.train.steps, self.buffers.epoch)
        episode = run_episode(
            self.generation.backend, self.executor, self.buffers, self.episode_options,
            rewards=self.solve_rewards, state=state, step=step, alphas=alphas, rng=self.rng,
            seed=seed)
        if not self.settings.train.dynamic_sampling:
            return episode
        return refill_episode(
            episode, self.generation.backend, self.buffers, self.episode_options,
            at_alphas(self.solve_rewards, alphas), state, seed=seed, rng=self.rng,
            max_rounds=self.settings.train.dynamic_sampling_max_rounds)

    def update(self, episode: Episode) -> dict[str, float]:
        """One policy update from the episode's rollouts (every rank joins it)."""
        train = self.settings.train
        rollouts, batch, counts = training_batch(
            episode.samples, self.context, baseline=train.advantage_baseline,
            pad_id=self.pad_id, mask_truncated=train.mask_truncated)
        lr = set_learning_rate(self.optimizer, train.learning_rate, lr_factor(
            self.step + 1, total=train.steps, warmup=train.lr_warmup_steps,
            schedule=train.lr_schedule))
        base = {**counts, "lr": lr, "model/trainable_params": float(self.trainable_params),
                "generation/policy_lag": float(self.step - self.generation.policy_step)}
        if batch is None and self.accelerator.num_processes > 1:  # the others need this rank
            logger.warning("rank %d: step %d produced no trainable rollout; joining the update "
                           "with a zero loss", self.accelerator.process_index, self.step + 1)
        self.model.train()
        update = {}
        if batch is not None or self.accelerator.num_processes > 1:
            semantics = "raw" if batch is None else batch.logprob_semantics
            update = policy_update(
                self.model, self.optimizer, self.accelerator, batch, rollouts.roles,
                rollouts.baseline_groups, self.update_options,
                temperature=policy_temperature(semantics, train.temperature),
                reference=self.reference)
        if not update:
            logger.warning("step %d produced no trainable rollout; no update", self.step + 1)
            return base
        trained = 0.0 if batch is None else float(batch.loss_mask.sum())
        return {**base, **update, "trained_tokens": trained}

    def _after_step(self, metrics: dict[str, float], episode: Episode) -> None:
        train = self.settings.train
        self._log(metrics, model=self.generation_model)  # ranks' replicas: equal sums
        self.callbacks.step_end(self.step, metrics)
        if self.step == 1:  # the first episode samples the base policy: its per-family rates
            for warning in flat_family_warnings(episode):
                logger.warning("step 1 (base policy): %s", warning)
        if self.step % train.sample_table_interval == 0 and self.accelerator.is_main_process:
            self.tracker.log_dict(sample_table(episode, self.step),
                                  f"samples/step_{self.step:06d}.json")
        if self.step % train.checkpoint_interval == 0 and self.step < train.steps:
            self.save_checkpoint()
        if train.eval_interval and self.step % train.eval_interval == 0 \
                and self.step < train.steps:
            self._log(self.evaluate())

    def _log(self, metrics: dict[str, float], model: Any = None) -> None:
        log_over_ranks(self.accelerator, self.tracker, self.step, metrics, model)

    def save_model(self, out_dir: Path) -> Path:
        """Save the final HF model dir (LoRA merged in) and ``train_summary.json``.

        Every rank calls it (sharded: the weights are gathered to rank 0 first).
        """
        weights = self.gathered_weights()
        if self.accelerator.is_main_process:
            save_final_model(self.unwrapped_model, self.tokenizer, Path(out_dir),
                             steps=self.step, algorithm=self.settings.train.algorithm_name,
                             weights=weights)
        return Path(out_dir)

    def close(self) -> None:
        """Stop the generation backend (and server) and the sandbox pool."""
        self.generation.close()
        self.executor.close()


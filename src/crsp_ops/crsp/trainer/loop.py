"""CRSP self-play trainer: propose → validate → solve → critique → rewards → TR-RPG / TRR++.

A step runs two hooks, ``generate_and_score`` and ``update``; transformers' callbacks decide
when to evaluate, checkpoint or stop. Proposed code runs only in the sandbox executor.

Design: docs/design/trainer.md#loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from transformers import TrainerControl, set_seed
from transformers.trainer_utils import TrainOutput

from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.policy.generation import (
    InProcessGeneration,
    PolicyGeneration,
)
from crsp_ops.crsp.policy.rank_metrics import log_over_ranks
from crsp_ops.crsp.rewards.alpha_schedule import Alphas
from crsp_ops.crsp.rewards.functions import RewardState
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
from crsp_ops.crsp.trainer import hooks
from crsp_ops.crsp.trainer.hf_flow import (
    callback_handler,
    loop_args,
    new_state,
    trl_log_row,
)
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
from crsp_ops.crsp.trainer.setup import prepare_policy_parts
from crsp_ops.inference.context import InferenceContext
from crsp_ops.tracking import NullTracker, Tracker

logger = logging.getLogger(__name__)


class SelfPlayTrainer:
    """The CRSP self-play loop over one policy model (design: docs/design/trainer.md#loop).

    Args:
        model: a causal LM (HF ``PreTrainedModel``), trained in place.
        tokenizer: its tokenizer with a chat template.
        settings: the ``crsp``, ``reward``, ``train`` and ``generation`` config sections.
        out_dir: final model, checkpoints and summaries go here.
        tasks: math rows added to the math buffer, or a dataset's rows (``PromptTask``),
            which replace the built-in tasks (the steps then only solve them).
        heldout_tasks: held-out math or dataset rows for evaluation.
        rewards: the solve step's reward functions; default CRSP's own.
        tracker: where metrics go (``NullTracker`` when tracking is off or rank != 0).
        accelerator, generation: default from the settings (``trainer.setup``).
        callbacks: ``transformers.TrainerCallback``s (classes or instances).
        args: the ``TrainingArguments`` callbacks see (``hf_flow.loop_args``).
        buffers: the task buffers the steps draw from; default built from ``tasks``.
    """

    def __init__(self, model: Any, tokenizer: Any, settings: SelfPlaySettings, *,
                 out_dir: str | Path, tasks: Sequence[Task] = (),
                 heldout_tasks: Sequence[Task] = (), rewards: RewardSet | None = None,
                 tracker: Tracker | None = None, accelerator: Any | None = None,
                 generation: PolicyGeneration | None = None, callbacks: Sequence = (),
                 args: Any = None, buffers: Any = None) -> None:
        self.accelerator = accelerator or make_accelerator(settings.train.mixed_precision, "auto")
        processes, rank = self.accelerator.num_processes, self.accelerator.process_index
        set_seed(settings.crsp.seed)  # as Trainer does, every rank alike: LoRA init, saved RNG
        train = epoch_budget(settings.train, tasks, processes)  # train.num_epochs: its steps
        settings = replace(settings, train=train)
        self.settings, self.out_dir, self.tokenizer = settings, Path(out_dir), tokenizer
        self.tracker = tracker or NullTracker()
        self.parts = prepare_policy_parts(model, train, self.accelerator)
        self.args = loop_args(args, train, str(out_dir))
        self.run = new_state(self.args, train.steps, seed=settings.crsp.seed, rank=rank,
                             is_main=self.accelerator.is_main_process)
        self._own_generation, self.closed = generation is None, False
        self.schedule = make_alpha_schedule_from(settings.reward)
        self.episode_options = episode_options(
            settings, dataset=any(isinstance(task, PromptTask) for task in tasks))
        self.executor = make_executor(settings.crsp)
        self.buffers = buffers if buffers is not None else make_buffers(
            settings.crsp, tasks, rank=rank, processes=processes)
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
            settings, lockstep=self.parts.sharded,
            on_policy=isinstance(self.generation, InProcessGeneration))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.final_evaluation: dict[str, float] = {}  # the end's held-out scores
        self.callbacks = callback_handler(self.args, callbacks, self.parts.unwrapped, tokenizer,
                                          self.parts.optimizer)
        self.control = self.callbacks.on_init_end(self.args, self.run.hf, TrainerControl())

    # the parts and the run's progress, by the names the loop and its users read
    model, optimizer = (property(lambda self: self.parts.model),
                        property(lambda self: self.parts.optimizer))
    unwrapped_model = property(lambda self: self.parts.unwrapped)
    total_params = property(lambda self: self.parts.total_params)
    state = property(lambda self: self.run.hf)  # transformers' TrainerState
    curve, heldout_verdicts, solve_samples = (property(lambda self: self.run.curve),
                                              property(lambda self: self.run.heldout_verdicts),
                                              property(lambda self: self.run.solve_samples))

    @property
    def step(self) -> int:
        """Completed optimizer steps (``state.global_step``)."""
        return self.run.hf.global_step

    @step.setter
    def step(self, value: int) -> None:
        self.run.hf.global_step = value

    def train(self) -> TrainOutput:
        """Run until ``train.steps`` or a callback stops it.

        Checkpoints on schedule, at the end and on Ctrl+C/SIGTERM (saying what was kept).
        """
        started = time.perf_counter()
        self.control = self.callbacks.on_train_begin(self.args, self.run.hf, self.control)
        try:
            if self.step == 0:  # a fresh run: the curve starts at the base model
                self._log(self.evaluate())
            while self.step < self.settings.train.steps and not self.control.should_training_stop:
                self.control = self.callbacks.on_step_begin(self.args, self.run.hf, self.control)
                metrics, episode = self.train_step()
                self.step += 1
                self._after_step(metrics, episode)
            self.final_evaluation = self.evaluate()
            self._log(self.final_evaluation)
            self.save_curve()
            self.save_checkpoint()
            self.save_model(self.out_dir)
            self.control = self.callbacks.on_train_end(self.args, self.run.hf, self.control)
        except BaseException as error:
            self._keep_after(error)
            raise
        finally:
            self.close()
        return hooks.train_output(self.run, time.perf_counter() - started)

    def train_step(self) -> tuple[dict[str, float], Episode]:
        """One step at ``self.step + 1``: metrics + episode (docs/design/trainer.md#loop)."""
        step = self.step + 1
        started = time.perf_counter()
        alphas = self.alphas(step)
        episode = self.generate_and_score(step, alphas)
        generated = time.perf_counter()
        update = self.update(episode)
        updated = time.perf_counter()
        self.buffers.add(episode.new_tasks)
        self.run.solve_samples += sum(sample.role == "solve" for sample in episode.samples)
        self.run.solve_samples += int(episode.counters.get("dynamic_sampling/dropped_samples",
                                                           0))
        if self.parts.sharded:
            self.parts.replica.refresh(self.model)  # a collective: every rank, once per step
        reloaded = self.generation.sync(step, self.parts.exported())
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
        self.parts.unwrapped.eval()
        seed = sampling_seed(self.settings.crsp.seed, step, self.accelerator.process_index)
        state = RewardState(step, self.settings.train.steps, self.buffers.epoch)
        episode = run_episode(
            self.generation.backend, self.executor, self.buffers, self.episode_options,
            rewards=self.solve_rewards, state=state, step=step, alphas=alphas, rng=self.run.rng,
            seed=seed)
        if not self.settings.train.dynamic_sampling:
            return episode
        return refill_episode(
            episode, self.generation.backend, self.buffers, self.episode_options,
            at_alphas(self.solve_rewards, alphas), state, seed=seed, rng=self.run.rng,
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
        base = {**counts, "lr": lr, "model/trainable_params": float(self.parts.trainable_params),
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
                reference=self.parts.reference)
        if not update:
            logger.warning("step %d produced no trainable rollout; no update", self.step + 1)
            return base
        trained = 0.0 if batch is None else float(batch.loss_mask.sum())
        return {**base, **update, "trained_tokens": trained}

    def _after_step(self, metrics: dict[str, float], episode: Episode) -> None:
        train, run = self.settings.train, self.run
        self._log(metrics, model=self.parts.generation_model)  # ranks' replicas: equal sums
        run.last_metrics = dict(metrics)
        if "loss" in metrics:
            run.losses.append(float(metrics["loss"]))
        run.hf.epoch = float(self.buffers.epoch)
        self.control = self.callbacks.on_step_end(self.args, run.hf, self.control)
        if self.step == 1:  # the first episode samples the base policy: its per-family rates
            for warning in flat_family_warnings(episode):
                logger.warning("step 1 (base policy): %s", warning)
        if self.step % train.sample_table_interval == 0 and self.accelerator.is_main_process:
            self.tracker.log_dict(sample_table(episode, self.step),
                                  f"samples/step_{self.step:06d}.json")
        if self.control.should_log:
            self.log(trl_log_row(metrics, self.solve_rewards.names, run.hf.epoch))
        last = self.step >= train.steps or self.control.should_training_stop
        if self.control.should_evaluate and not last:  # the last step's comes after the loop
            self._log(self.evaluate())
        if self.control.should_save and not last:
            self.save_checkpoint()

    def _log(self, metrics: dict[str, float], model: Any = None) -> None:
        log_over_ranks(self.accelerator, self.tracker, self.step, metrics, model)

    # evaluation, checkpoints and the run's end (trainer.hooks)
    evaluate, log, alphas = hooks.evaluate, hooks.log, hooks.alphas
    _default_generation = hooks.default_generation
    evaluate_tasks = hooks.evaluate_tasks
    save_checkpoint = hooks.save_checkpoint
    resume = hooks.resume
    save_curve = hooks.save_curve
    save_model = hooks.save_model
    _keep_after = hooks.keep_after

    def close(self) -> None:
        """Stop the generation backend (and server) and the sandbox pool."""
        self.generation.close()
        self.executor.close()
        self.closed = True


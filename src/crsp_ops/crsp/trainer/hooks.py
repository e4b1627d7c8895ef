"""The loop's evaluation, checkpoint and run-end steps, as plain functions of the trainer.

``SelfPlayTrainer`` binds them as its methods (``evaluate``, ``save_checkpoint``, ``resume``,
...); each reads the trainer's parts and its one ``RunState`` (``trainer.run``).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers.trainer_utils import TrainOutput

from crsp_ops.crsp.policy.generation import ServerGeneration
from crsp_ops.crsp.rewards.alpha_schedule import Alphas
from crsp_ops.crsp.rewards.functions import RewardError, RewardState
from crsp_ops.crsp.rewards.solve import at_alphas
from crsp_ops.crsp.tasks.task_types import CODE_TASK_TYPES, Task
from crsp_ops.crsp.trainer.checkpoint import (
    latest_checkpoint,
    restore_checkpoint,
    write_checkpoint,
)
from crsp_ops.crsp.trainer.evaluation import (
    crsp_eval_names,
    evaluate_into,
    heldout_code_tasks,
    score_heldout,
)
from crsp_ops.crsp.trainer.export import save_curve as write_curve
from crsp_ops.crsp.trainer.export import save_final_model
from crsp_ops.crsp.trainer.hf_flow import RunState, eval_metrics, update_best
from crsp_ops.crsp.trainer.options import schedule_record
from crsp_ops.crsp.trainer.setup import make_generation

logger = logging.getLogger(__name__)
REWARD_TRACEBACK = "errors/reward_traceback.txt"  # the run's artifact when a reward fails


def keep_after(trainer, error: BaseException) -> None:
    """On an interrupt (or an error after the last step): checkpoint, and say what was kept."""
    if isinstance(error, RewardError):  # the run ends FAILED: keep the traceback with it
        trainer.tracker.log_text("".join(traceback.format_exception(error)), REWARD_TRACEBACK)
    if isinstance(error, Exception) and trainer.step < trainer.settings.train.steps:
        return
    if trainer.run.saved_step == trainer.step and trainer.step:
        logger.warning("stopped after step %d: its checkpoint was already written",
                       trainer.step)
        return
    path = trainer.save_checkpoint()
    if trainer.step == 0:
        logger.warning("stopped before step 1 finished: nothing trained, no checkpoint "
                       "written (a resume starts from the model)")
    elif path is not None:
        logger.warning("stopped after step %d: checkpoint %s written (resume continues "
                       "from it)", trainer.step, path)


def evaluate(trainer) -> dict[str, float]:
    """Greedy held-out scores (``evaluation.evaluate_into``), then ``on_evaluate``.

    Callbacks get transformers' names (``eval_reward``, ``eval_solve_rate``, ...); the
    returned dict and MLflow keep crsp_ops' (``eval/solve_rate/<type>``, ...).
    """
    types = [t for t in trainer.episode_options.problem_types if t in CODE_TASK_TYPES]
    tasks: list[Task] = [*heldout_code_tasks(trainer.executor, types), *trainer.heldout_tasks]
    trainer.parts.unwrapped.eval()
    metrics = evaluate_into(
        trainer.run, trainer.generation.backend, tasks,
        at_alphas(trainer.solve_rewards, trainer.alphas(max(trainer.step, 1))),
        RewardState(trainer.step, trainer.settings.train.steps, trainer.buffers.epoch),
        max_new_tokens=trainer.settings.train.max_new_tokens_solve)
    named = eval_metrics(metrics)
    if named:  # as Trainer: on_log, on_evaluate, then the best metric is updated
        trainer.log({**named, "epoch": trainer.run.hf.epoch})
        trainer.control = trainer.callbacks.on_evaluate(
            trainer.args, trainer.run.hf, trainer.control, metrics=named)
        update_best(trainer.args, trainer.run.hf, named)
    return metrics


def evaluate_tasks(trainer, tasks: Sequence[Task]) -> dict[str, float]:
    """Greedy scores of ``tasks`` on the current policy, outside the learning curve.

    After ``train()`` closed its engine, a fresh one serves the trained weights meanwhile.
    """
    reopened = trainer.closed and trainer._own_generation
    generation = trainer._default_generation() if reopened else trainer.generation
    trainer.parts.unwrapped.eval()
    try:
        scores = score_heldout(
            generation.backend, tasks,
            at_alphas(trainer.solve_rewards, trainer.alphas(max(trainer.step, 1))),
            RewardState(trainer.step, trainer.settings.train.steps, trainer.buffers.epoch),
            max_new_tokens=trainer.settings.train.max_new_tokens_solve)
    finally:
        if reopened:
            generation.close()
    return crsp_eval_names(scores.metrics)


def schedules(trainer) -> dict[str, Any]:
    """``options.schedule_record`` of the run: alpha counts where a reward reads it."""
    reads_alpha = trainer.solve_rewards.rule == "format_rule" \
        or trainer.episode_options.critiques_per_task > 0
    return schedule_record(trainer.settings, reads_alpha=reads_alpha)


def save_checkpoint(trainer) -> Path | None:
    """The checkpoint of the completed steps (``checkpoint.write_checkpoint``), ``on_save``."""
    path = write_checkpoint(trainer.run, trainer.parts, trainer.tokenizer, trainer.buffers,
                            trainer.out_dir, trainer.settings.train, schedules(trainer))
    if trainer.step and trainer.run.saved_step == trainer.step:
        trainer.control = trainer.callbacks.on_save(trainer.args, trainer.run.hf, trainer.control)
    return path


def resume(trainer, checkpoint: str | Path | None = None) -> int:
    """Continue from ``checkpoint`` (default: the latest under ``out_dir``).

    Returns:
        The step to continue after (0 when there is no checkpoint).

    Raises:
        ConfigError: the sharding differs, or the schedules would change under
            ``train.resume_exact_schedules`` (``checkpoint.check_resumable``).
    """
    checkpoint = Path(checkpoint) if checkpoint else latest_checkpoint(trainer.out_dir)
    if checkpoint is None:
        return 0
    changes = restore_checkpoint(
        checkpoint, trainer.run, trainer.parts, trainer.buffers,
        schedules=schedules(trainer),
        exact=trainer.settings.train.resume_exact_schedules, seed=trainer.settings.crsp.seed)
    if changes:
        change = ", ".join(f"{key} {old} -> {new}" for key, (old, new) in changes.items())
        logger.warning("resumed with other schedule settings (%s): the alpha and lr "
                       "schedules are recomputed for them", change)
        trainer.tracker.set_tags({"crsp.resume.schedule_change": change})
    if trainer._own_generation and isinstance(trainer.generation, ServerGeneration):
        trainer.generation.close()  # it serves the weights before the adapter was restored
        trainer.generation = trainer._default_generation()  # labelled with the resumed step
    trainer.generation.policy_step = trainer.step  # policy_lag continues from the resumed step
    logger.info("resumed from %s at step %d", checkpoint, trainer.step)
    return trainer.step


def save_curve(trainer) -> Path | None:
    """Write ``learning_curve.json`` and its figure to the output dir and the run."""
    if not trainer.run.curve or not trainer.accelerator.is_main_process:
        return None
    return write_curve(trainer.run.curve, trainer.tracker, trainer.out_dir,
                      label=trainer.settings.train.algorithm_name)


def save_model(trainer, out_dir: Path) -> Path:
    """Save the final HF model dir (LoRA merged in) and ``train_summary.json``.

    Every rank calls it (sharded: the weights are gathered to rank 0 first).
    """
    weights = trainer.parts.gathered_weights()
    if trainer.accelerator.is_main_process:
        save_final_model(trainer.parts.unwrapped, trainer.tokenizer, Path(out_dir),
                         steps=trainer.step, algorithm=trainer.settings.train.algorithm_name,
                         weights=weights)
    return Path(out_dir)

def alphas(trainer, step: int) -> Alphas:
    """Schedule value at ``step`` (1-based): the first step gets the start, the last the end."""
    total = trainer.settings.train.steps
    return trainer.schedule(step - 1, max(total - 1, 1)) if total > 1 \
        else trainer.schedule(1, 1)


def log(trainer, logs: dict[str, float]) -> None:
    """Append ``logs`` to ``state.log_history`` and call ``on_log``, as ``Trainer.log``."""
    trainer.run.hf.log_history.append({**logs, "step": trainer.step})
    trainer.control = trainer.callbacks.on_log(trainer.args, trainer.run.hf, trainer.control,
                                               logs=logs)


def default_generation(trainer) -> Any:
    """The generation ``generation.backend`` names, over the trainer's policy."""
    return make_generation(trainer.settings.generation, trainer.settings.train,
                           trainer.accelerator, policy=trainer.parts.generation_model,
                           exported=trainer.parts.exported(), tokenizer=trainer.tokenizer,
                           out_dir=trainer.out_dir, step=trainer.step)


def train_output(run: RunState, seconds: float) -> TrainOutput:
    """Transformers' ``TrainOutput`` of a run: its step, mean loss and run-time metrics."""
    loss = sum(run.losses) / len(run.losses) if run.losses else 0.0
    metrics = {"train_runtime": seconds, "train_steps_per_second": run.step / max(seconds, 1e-9),
               "train_loss": loss, "epoch": run.hf.epoch, "total_flos": 0.0}
    return TrainOutput(run.step, loss, metrics)

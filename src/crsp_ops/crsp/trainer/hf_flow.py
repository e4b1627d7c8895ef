"""The loop's run state and events on transformers' own primitives.

``TrainerState`` holds the step, ``log_history`` and the best metric; ``TrainerControl`` and
``DefaultFlowCallback`` decide when to log, evaluate, save and stop, exactly as in a
``transformers.Trainer``, so any ``TrainerCallback`` (early stopping, a logger) works unchanged.
``RunState`` adds what only CRSP keeps (the RNG, solve samples, the learning curve). Metrics
reach callbacks under TRL's names (``trl_log_row``, ``eval_metrics``); MLflow keeps crsp_ops'.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from accelerate.state import PartialState
from transformers import TrainerCallback, TrainerState, TrainingArguments
from transformers.trainer_callback import CallbackHandler, DefaultFlowCallback
from transformers.trainer_utils import IntervalStrategy, SaveStrategy

from crsp_ops.config.selfplay_config import TrainSettings
from crsp_ops.crsp.trainer.arguments import CRSPConfig
from crsp_ops.crsp.trainer.learning_curve import CurvePoint
from crsp_ops.errors import DataError


class CallbackError(DataError):
    """A callback raised; the message names it, the event and the step in one line."""


@dataclass
class RunState:
    """Everything a run changes as it goes: one object, checkpointed and restored whole."""

    hf: TrainerState
    rng: random.Random
    solve_samples: int = 0  # solve responses generated for training (the curve's x axis)
    curve: list[CurvePoint] = field(default_factory=list)  # one point per evaluation
    heldout_verdicts: list[list[bool]] = field(default_factory=list)  # per evaluation
    last_metrics: dict[str, float] = field(default_factory=dict)  # the last step's
    losses: list[float] = field(default_factory=list)  # each step's loss (train_loss)
    saved_step: int = 0  # the step of the newest checkpoint written by this process

    @property
    def step(self) -> int:
        """Completed optimizer steps."""
        return self.hf.global_step


class GuardedCallbackHandler(CallbackHandler):
    """transformers' handler; a callback that raises fails the run in one line."""

    def call_event(self, event: str, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """Call ``event`` on every callback (``CallbackError`` when one raises)."""
        for callback in self.callbacks:
            try:
                result = getattr(callback, event)(
                    args, state, control, model=self.model,
                    processing_class=self.processing_class, optimizer=self.optimizer,
                    lr_scheduler=self.lr_scheduler, train_dataloader=self.train_dataloader,
                    eval_dataloader=self.eval_dataloader, **kwargs)
            except Exception as error:
                reason = str(error).splitlines()[0] if str(error) else ""
                raise CallbackError(
                    f"callback {type(callback).__name__}.{event} raised at step "
                    f"{state.global_step}: {type(error).__name__}: {reason}") from error
            if result is not None:
                control = result
        return control


def loop_args(args: TrainingArguments | None, train: TrainSettings, out_dir: str
              ) -> TrainingArguments:
    """What the loop and callbacks read: ``args`` agreeing with the resolved settings (a copy).

    Evaluation every ``train.eval_interval`` steps (0: none between the start and the end), a
    checkpoint every ``train.checkpoint_interval``; no ``args`` (the CLI): logging every step.
    """
    # an accelerator exists already: TrainingArguments would reset its state otherwise
    configured = {"use_configured_state": PartialState._shared_state != {}}
    args = copy.copy(args) if args is not None else CRSPConfig(
        output_dir=str(out_dir), logging_steps=1, report_to="none",
        accelerator_config=configured)
    args.eval_strategy = IntervalStrategy.STEPS if train.eval_interval else IntervalStrategy.NO
    args.eval_steps = train.eval_interval or None
    args.save_strategy, args.save_steps = SaveStrategy.STEPS, train.checkpoint_interval
    return args


def callback_handler(args: TrainingArguments, callbacks: Sequence[Any], model: Any,
                     tokenizer: Any, optimizer: Any) -> GuardedCallbackHandler:
    """``DefaultFlowCallback`` first, then the user's (classes are instantiated, as HF does).

    Raises:
        TypeError: a callback that is not a ``transformers.TrainerCallback``.
    """
    for callback in callbacks:
        kind = callback if isinstance(callback, type) else type(callback)
        if not issubclass(kind, TrainerCallback):
            raise TypeError(f"callbacks: {kind.__name__} is not a transformers.TrainerCallback")
    return GuardedCallbackHandler([DefaultFlowCallback, *callbacks], model, tokenizer,
                                  optimizer, None)


def new_state(args: TrainingArguments, max_steps: int, *, is_main: bool, seed: int,
              rank: int) -> RunState:
    """A fresh run's state, with ``args``' logging, evaluation and save intervals."""
    hf = TrainerState(max_steps=max_steps, logging_steps=_every(args.logging_steps, max_steps),
                      eval_steps=_every(args.eval_steps, max_steps),
                      save_steps=_every(args.save_steps, max_steps),
                      is_local_process_zero=is_main, is_world_process_zero=is_main)
    return RunState(hf, random.Random(seed + rank))


def _every(value: float | None, max_steps: int) -> int:
    """An interval as transformers reads it: below 1, a share of ``max_steps``."""
    if value is None:
        return 500
    return max(1, int(-(-value * max_steps // 1))) if 0 < value < 1 else int(value)


_TRL_NAMES = {"loss": "loss", "grad_norm": "grad_norm", "lr": "learning_rate", "kl": "kl",
              "reward/solve/mean": "reward", "reward/solve/std": "reward_std",
              "response_length/solve": "completions/mean_length",
              "clip_fraction": "clip_ratio/region_mean", "entropy": "entropy"}


def trl_log_row(metrics: Mapping[str, float], reward_names: Sequence[str],
                epoch: float) -> dict[str, float]:
    """A step's metrics under TRL's log names (``rewards/<name>/mean``, ``reward``, ...).

    >>> trl_log_row({"loss": 0.5, "lr": 1e-5, "reward/acc/mean": 1.0}, ["acc"], 0.5)
    {'loss': 0.5, 'learning_rate': 1e-05, 'rewards/acc/mean': 1.0, 'epoch': 0.5}
    """
    row = {trl: float(metrics[ours]) for ours, trl in _TRL_NAMES.items() if ours in metrics}
    for name in reward_names:
        for stat in ("mean", "std"):
            if f"reward/{name}/{stat}" in metrics:
                row[f"rewards/{name}/{stat}"] = float(metrics[f"reward/{name}/{stat}"])
    row["epoch"] = epoch
    return row


def eval_metrics(metrics: Mapping[str, float], prefix: str = "eval") -> dict[str, float]:
    """A held-out evaluation's metrics as transformers names them (``eval_reward``, ...).

    >>> eval_metrics({"eval/solve_rate/all": 0.5, "eval/reward/total": 0.7,
    ...               "eval/reward/acc": 0.7, "eval/reward/acc_ci_low": 0.1})
    {'eval_solve_rate': 0.5, 'eval_reward': 0.7, 'eval_rewards/acc/mean': 0.7}
    """
    out = {}
    for name, value in metrics.items():
        if name.endswith(("_ci_low", "_ci_high")):
            continue
        if name == "eval/solve_rate/all":
            out[f"{prefix}_solve_rate"] = float(value)
        elif name == "eval/reward/total":
            out[f"{prefix}_reward"] = float(value)
        elif name.startswith("eval/reward/"):
            out[f"{prefix}_rewards/{name.removeprefix('eval/reward/')}/mean"] = float(value)
    return out


def update_best(args: TrainingArguments, state: TrainerState, metrics: Mapping[str, float]
                ) -> None:
    """``state.best_metric`` / ``best_global_step`` from ``args.metric_for_best_model``."""
    name = args.metric_for_best_model
    if not name:
        return
    value = metrics.get(name if name.startswith("eval_") else f"eval_{name}")
    if value is None:
        return
    greater = args.greater_is_better if args.greater_is_better is not None \
        else not name.endswith("loss")
    if state.best_metric is None or (value > state.best_metric if greater
                                     else value < state.best_metric):
        state.best_metric, state.best_global_step = value, state.global_step

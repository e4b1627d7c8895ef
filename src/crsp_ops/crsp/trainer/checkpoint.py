"""Checkpoints of a self-play run: HF model dir + ``trainer_state.pt``, newest N kept.

``TrainerCheckpoints`` is the loop's checkpoint hook (save, resume); the functions below it
write and read one checkpoint.

With LoRA the HF directory holds the frozen base weights and ``adapter/`` the PEFT adapter
(``peft_setup``); ``--resume`` loads the first as the model and restores the second.

A checkpoint is written into a temporary folder and renamed into place, so a crash mid-save
never leaves a half checkpoint that ``latest_checkpoint`` would pick. ``trainer_state.pt``
holds only tensors and plain Python values (loaded with ``weights_only=True``): optimizer
state, step, task buffers, and the Python and torch RNG states.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from crsp_ops.config.errors import ConfigError
from crsp_ops.crsp.policy.generation import ServerGeneration
from crsp_ops.crsp.policy.peft_setup import load_adapter, save_adapter, save_hf_model
from crsp_ops.crsp.policy.sharding import (
    OPTIMIZER_FORMAT,
    full_optimizer_state,
    full_state,
    load_full_optimizer_state,
    load_full_weights,
)
from crsp_ops.crsp.trainer.learning_curve import CurvePoint
from crsp_ops.crsp.trainer.options import schedule_changes, schedule_record
from crsp_ops.errors import DataError

CHECKPOINTS = "checkpoints"
STATE_FILE = "trainer_state.pt"
logger = logging.getLogger(__name__)


class TrainerCheckpoints:
    """The loop's checkpoint hook: save and resume ``SelfPlayTrainer``.

    A mixin: it reads and restores the loop's ``model``, ``optimizer``, ``buffers`` (with a
    dataset's epoch position), ``rng``, ``step``, ``solve_samples``, ``curve`` and
    ``generation``, and calls its ``callbacks``' ``on_save``.
    """

    def gathered_weights(self) -> dict[str, torch.Tensor] | None:
        """Sharded: the full state dict on rank 0 (a collective); otherwise ``None``."""
        return full_state(self.model, rank0_only=True) if self.sharded else None

    def save_checkpoint(self) -> Path | None:
        """Write the checkpoint of the completed steps (main process; every rank calls it).

        Sharded: the full model and optimizer state are gathered to rank 0 first.
        """
        self.accelerator.wait_for_everyone()
        if self.step == 0:
            return None
        weights = self.gathered_weights()
        optimizer_state = full_optimizer_state(self.model, self.optimizer) \
            if self.sharded else None
        if not self.accelerator.is_main_process:
            return None
        state = {"step": self.step,
                 "optimizer": optimizer_state if self.sharded else self.optimizer.state_dict(),
                 "optimizer_format": OPTIMIZER_FORMAT if self.sharded else "torch",
                 "buffers": self.buffers.state(), "rng": rng_state(self.rng),
                 "solve_samples": self.solve_samples,
                 "curve": [point.to_row() for point in self.curve],
                 "schedules": self.schedule_record()}
        model = self.unwrapped_model
        path = save_checkpoint(self.out_dir, self.step, model, self.tokenizer, state,
                               keep=self.settings.train.keep_checkpoints,
                               save_model=lambda staging: (
                                   save_hf_model(model, staging, merged=False, state=weights),
                                   save_adapter(model, staging, state=weights,
                                                merged=self.settings.train.lora_save_merged)))
        self.callbacks.save(self.step)
        return path

    def schedule_record(self) -> dict[str, Any]:
        """``options.schedule_record`` of this run: alpha counts where a reward reads it."""
        reads_alpha = self.solve_rewards.rule == "format_rule" \
            or self.episode_options.critiques_per_task > 0
        return schedule_record(self.settings, reads_alpha=reads_alpha)

    def resume(self, checkpoint: str | Path | None = None) -> int:
        """Restore optimizer, step, buffers, RNG and a LoRA adapter from ``checkpoint``.

        ``checkpoint`` defaults to the latest. The model's base weights are loaded by whoever
        built the model (from the same directory); a LoRA adapter from its ``adapter/``.
        Other schedule settings (a longer ``train.steps``: the run is extended) recompute the
        schedules for them, as Hugging Face's ``Trainer`` does; the change is logged and
        tagged ``crsp.resume.schedule_change``.

        Returns:
            The step to continue after (0 when there is no checkpoint).

        Raises:
            ConfigError: the sharding differs from the checkpoint's run, or the schedules
                would change under ``train.resume_exact_schedules`` (``check_resumable``).
        """
        checkpoint = Path(checkpoint) if checkpoint else latest_checkpoint(self.out_dir)
        if checkpoint is None:
            return 0
        state = load_trainer_state(checkpoint)
        changes = check_resumable(checkpoint, state, self.schedule_record(),
                                  sharded=self.sharded, sharded_format=OPTIMIZER_FORMAT,
                                  exact=self.settings.train.resume_exact_schedules)
        if changes:
            change = ", ".join(f"{key} {old} -> {new}" for key, (old, new) in changes.items())
            logger.warning("resumed with other schedule settings (%s): the alpha and lr "
                           "schedules are recomputed for them", change)
            self.tracker.set_tags({"crsp.resume.schedule_change": change})
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
        self.curve = [CurvePoint.from_row(row) for row in state.get("curve", [])]
        if self.accelerator.process_index:  # the checkpoint holds rank 0's RNG: others derive
            self.rng.seed(f"{self.settings.crsp.seed}:{self.step}:{self.accelerator.process_index}")
        if self._own_generation and isinstance(self.generation, ServerGeneration):
            self.generation.close()  # it serves the weights before the adapter was restored
            self.generation = self._default_generation()  # labelled with the resumed step
        self.generation.policy_step = self.step  # policy_lag continues from the resumed step
        logger.info("resumed from %s at step %d", checkpoint, self.step)
        return self.step


def checkpoint_path(out_dir: Path, step: int) -> Path:
    """``<out_dir>/checkpoints/step-000010``."""
    return Path(out_dir) / CHECKPOINTS / f"step-{step:06d}"


def list_checkpoints(out_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    root = Path(out_dir) / CHECKPOINTS
    found = [p for p in root.glob("step-*") if (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def latest_checkpoint(out_dir: Path) -> Path | None:
    """The newest complete checkpoint, or ``None``."""
    found = list_checkpoints(out_dir)
    return found[-1] if found else None


def resume_target(out_dir: Path, resume: bool | str | Path | None) -> Path | None:
    """The checkpoint ``resume`` names: ``True`` the latest under ``out_dir``, or a path.

    ``True`` with no checkpoint under ``out_dir`` gives ``None``.

    Raises:
        DataError: a path that is not a complete checkpoint (one line, before any run).
    """
    if resume is None or resume is False:
        return None
    if resume is True:
        return latest_checkpoint(out_dir)
    path = Path(resume)
    if not (path / STATE_FILE).is_file():
        raise DataError(f"{path} is not a checkpoint (no {STATE_FILE}); a run's checkpoints are "
                        f"<out>/{CHECKPOINTS}/step-NNNNNN")
    return path


def rng_state(rng: random.Random) -> dict[str, Any]:
    """RNG states to restore on resume (the trainer's ``random.Random`` and torch's)."""
    version, internal, gauss = rng.getstate()
    state = {"python": [version, list(internal), gauss], "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: Mapping[str, Any], rng: random.Random) -> None:
    """Inverse of ``rng_state``."""
    version, internal, gauss = state["python"]
    rng.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(out_dir: Path, step: int, model: Any, tokenizer: Any,
                    state: Mapping[str, Any], *, keep: int,
                    save_model: Callable[[Path], Any] | None = None) -> Path:
    """Write the checkpoint of ``step`` and delete all but the newest ``keep``.

    Args:
        out_dir: the run's output directory.
        step: completed training steps.
        model: the unwrapped model (``save_pretrained``).
        tokenizer: its tokenizer.
        state: ``trainer_state.pt`` content (tensors and plain values only).
        keep: checkpoints to keep (>= 1).
        save_model: writes the model into the staging directory instead of
            ``model.save_pretrained`` (a LoRA model: base weights plus ``adapter/``).
    """
    final = checkpoint_path(out_dir, step)
    staging = final.with_name(f".staging-{final.name}")
    shutil.rmtree(staging, ignore_errors=True)
    if save_model is None:
        model.save_pretrained(staging)
    else:
        save_model(staging)
    tokenizer.save_pretrained(staging)
    torch.save(dict(state), staging / STATE_FILE)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(staging, final)
    for old in list_checkpoints(out_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_trainer_state(checkpoint: Path) -> dict[str, Any]:
    """Read ``trainer_state.pt`` of a checkpoint.

    Raises:
        FileNotFoundError: not a complete checkpoint.
    """
    path = Path(checkpoint) / STATE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{checkpoint} is not a complete checkpoint (no {STATE_FILE})")
    return torch.load(path, weights_only=True)


def check_resumable(checkpoint: Path, state: Mapping[str, Any], schedules: Mapping[str, Any],
                    *, sharded: bool, sharded_format: str, exact: bool = False
                    ) -> dict[str, tuple[Any, Any]]:
    """The schedule settings a resume changes; refuse a changed sharding (and, ``exact``, those).

    Args:
        checkpoint: the checkpoint directory (for the message).
        state: its ``trainer_state.pt``.
        schedules: ``schedule_record`` of the settings resumed with.
        sharded: whether this run shards its policy.
        sharded_format: the ``optimizer_format`` a sharded run writes.
        exact: ``train.resume_exact_schedules``: a schedule change is an error.

    Returns:
        ``{key: (checkpoint's, now)}`` of the changed schedule settings.

    Raises:
        ConfigError: the sharding differs, or ``exact`` and a schedule setting differs.
    """
    recorded = state.get("schedules")
    changed = schedule_changes(recorded, dict(schedules)) if recorded is not None else {}
    if changed and exact:
        raise ConfigError(f"{checkpoint}: train.resume_exact_schedules is on and resuming would "
                          f"change the alpha/lr schedules (checkpoint vs now: {changed}); "
                          f"resume with the run's train.steps, reward.alpha_* and train.lr_*, "
                          f"or set train.resume_exact_schedules=n to recompute them")
    if sharded != (state.get("optimizer_format") == sharded_format):
        raise ConfigError(f"{checkpoint} was written by a "
                          f"{'sharded' if not sharded else 'replicated'} run: resume "
                          f"with the run's train.sharding (and accelerate config)")
    return changed

"""Checkpoints of a self-play run: HF model dir + ``trainer_state.pt``, newest N kept.

Written to a temporary folder and renamed into place, so a crash never leaves a half checkpoint;
``trainer_state.pt`` holds only tensors and plain values (``weights_only=True``).

Design: docs/design/trainer.md#checkpoint.
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
from crsp_ops.config.selfplay_config import TrainSettings
from crsp_ops.crsp.policy.peft_setup import load_adapter, save_adapter, save_hf_model
from crsp_ops.crsp.policy.sharding import (
    OPTIMIZER_FORMAT,
    full_optimizer_state,
    load_full_optimizer_state,
    load_full_weights,
)
from crsp_ops.crsp.trainer.hf_flow import RunState
from crsp_ops.crsp.trainer.learning_curve import CurvePoint
from crsp_ops.crsp.trainer.options import schedule_changes
from crsp_ops.crsp.trainer.setup import PolicyParts
from crsp_ops.errors import DataError

CHECKPOINTS = "checkpoints"
STATE_FILE = "trainer_state.pt"
logger = logging.getLogger(__name__)


def write_checkpoint(run: RunState, parts: PolicyParts, tokenizer: Any, buffers: Any,
                     out_dir: Path, train: TrainSettings, schedules: dict[str, Any]
                     ) -> Path | None:
    """Write the checkpoint of ``run``'s completed steps (every rank calls it).

    Sharded: the full model and optimizer state are gathered to rank 0 first. Returns the
    checkpoint (main process), ``None`` elsewhere or before the first step.
    """
    accelerator = parts.accelerator
    accelerator.wait_for_everyone()
    if run.step == 0:
        return None
    weights = parts.gathered_weights()
    optimizer_state = full_optimizer_state(parts.model, parts.optimizer) \
        if parts.sharded else None
    if not accelerator.is_main_process:
        return None
    state = {"step": run.step,
             "optimizer": optimizer_state if parts.sharded else parts.optimizer.state_dict(),
             "optimizer_format": OPTIMIZER_FORMAT if parts.sharded else "torch",
             "buffers": buffers.state(), "rng": rng_state(run.rng),
             "solve_samples": run.solve_samples,
             "curve": [point.to_row() for point in run.curve],
             "schedules": schedules}
    model = parts.unwrapped
    path = save_checkpoint(out_dir, run.step, model, tokenizer, state,
                           keep=train.keep_checkpoints,
                           save_model=lambda staging: (
                               save_hf_model(model, staging, merged=False, state=weights),
                               save_adapter(model, staging, state=weights,
                                            merged=train.lora_save_merged)))
    run.saved_step = run.step
    return path


def restore_checkpoint(checkpoint: Path, run: RunState, parts: PolicyParts, buffers: Any, *,
                       schedules: dict[str, Any], exact: bool, seed: int
                       ) -> dict[str, tuple[Any, Any]]:
    """Restore optimizer, step, buffers, RNG, the curve and a LoRA adapter into ``run``.

    The model's base weights are loaded by whoever built the model (from the same
    directory); a LoRA adapter from its ``adapter/``. Returns the schedule settings that
    differ from the checkpoint's (a longer ``train.steps`` extends the run: the schedules are
    recomputed for it, as Hugging Face's ``Trainer`` does).

    Raises:
        ConfigError: the sharding differs from the checkpoint's run, or the schedules would
            change under ``exact`` (``train.resume_exact_schedules``).
    """
    state = load_trainer_state(checkpoint)
    changes = check_resumable(checkpoint, state, schedules, sharded=parts.sharded,
                              sharded_format=OPTIMIZER_FORMAT, exact=exact)
    load_adapter(parts.unwrapped, checkpoint,
                 load_full=load_full_weights if parts.sharded else None)
    if parts.sharded:
        load_full_optimizer_state(parts.model, parts.optimizer, state["optimizer"])
        parts.replica.refresh(parts.model)  # the restored adapter, merged
    else:
        parts.optimizer.load_state_dict(state["optimizer"])
    buffers.load_state(state["buffers"])
    restore_rng(state["rng"], run.rng)
    run.hf.global_step = run.saved_step = int(state["step"])
    run.solve_samples = int(state.get("solve_samples", 0))
    run.curve = [CurvePoint.from_row(row) for row in state.get("curve", [])]
    rank = parts.accelerator.process_index
    if rank:  # the checkpoint holds rank 0's RNG: the others derive theirs
        run.rng.seed(f"{seed}:{run.step}:{rank}")
    return changes


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
